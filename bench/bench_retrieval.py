"""Retrieval cost: BM25 at scale (arxiv-archive-2020, up to 311k papers) and dense search on real vectors.

BM25, on the 100 files of arxiv-archive-2020 sealed as one *future* corpus (310,938 papers):

- the cost curve (``cost_curve``): at 30k, 100k and all 311k papers (nested deterministic
  subsamples), three builds, each in a fresh process so that its peak resident memory is its own:
  ``ours`` (``build_okapi_index``, streaming: bounded batches of token ids straight into
  (document, term, tf) arrays), ``bm25s`` (bare bm25s with its defaults: ``bm25s.tokenize`` +
  ``BM25().index``, float32 Lucene scores) and ``ours_lists`` (our previous build, which held
  every document's token list: ``build_okapi_index_in_memory``). Each reports build wall and CPU
  seconds, the process's peak RSS and the peak added by the build, and top-8 q/s over the
  reference questions. A least-squares straight line in N per quantity is extrapolated to 2.6M
  papers, and the ratio ours / bm25s of peak RSS at the largest size is the memory goal (<= 1.3);
- the end-to-end ``BM25Retriever`` build over the whole corpus (tokenise + index + save + hash
  into the cache) in the bench process, with the peak memory it added (VmHWM after resetting it);
- top-8 queries per second side by side over the reference release's 424 frozen questions:
  ``ours`` (``BM25Retriever.search``) vs ``bm25s_same_index`` (``bm25s.tokenize`` +
  ``BM25.retrieve`` on the very same index: what our layer costs); ``bm25s_defaults`` is the
  cost curve's bare-bm25s figure at full size; ``rank_bm25`` (``BM25Okapi.get_scores`` + top 8)
  is measured on random 10k and 30k subsamples and extrapolated linearly in N (it scores every
  document per query token in Python), and ``ours`` on the same 30k subsample gives a speedup
  with no extrapolation.

Dense: embedding throughput of ``all-MiniLM-L6-v2`` on astro-2025 abstracts, and faiss exact
(``IndexFlatIP``) vs HNSW (the dense retriever's parameters above its ``exact_max_docs``
threshold) vs IVF: build and query time and recall@8 against exact, with 1,000 held-out real
embeddings as queries, on every real title + abstract embedding the caches hold (astro-2025's
8,223 and space-2016's 3,358; embedding more here runs at ~16 abstracts/s), then on those
vectors replicated ten times with small noise (synthetic, labelled as such: how the costs scale).

The machine is shared: CPU seconds are the steadier figure, wall seconds are given too, with
the load average at the start of each part and of each child process.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.timing import Timer

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "bench"
REPEATS = 3


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _questions(shared: Path, n: int) -> list[str]:
    texts = []
    for path in sorted((shared / "reference" / "sqb" / "submissions").rglob("questions.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(json.loads(line)["question"])
    return texts[:n]


def _rate(n: int, t: Timer) -> dict:
    return {
        "queries": n,
        "wall_s": round(t.wall, 3),
        "cpu_s": round(t.cpu, 3),
        "qps_wall": round(n / t.wall, 2),
        "qps_cpu": round(n / max(t.cpu, 1e-9), 2),
    }


def _arxiv_docs(shared: Path, quick: bool):
    from backtest.core.workspace import Workspace
    from backtest.corpus.build import BuildOptions, build_corpus
    from backtest.corpus.store import CorpusStore
    from backtest.retrieve import load_future_docs

    archive = shared / "corpora" / "arxiv-archive-2020"
    files = sorted(archive.glob("*.tsv.xz"))[: 10 if quick else None]
    corpus_id = "arxiv-2020-first10" if quick else "arxiv-2020-all"
    ws = Workspace(CACHE / f"arxiv-ws-{_builder_stamp()}")
    ws.root.mkdir(parents=True, exist_ok=True)
    if not ws.manifest_path(corpus_id).is_file():
        for stale in CACHE.glob("arxiv-ws-*"):  # built by an older builder (hundreds of MB each)
            if stale != ws.root:
                shutil.rmtree(stale)
        build_corpus(BuildOptions("arxiv-archive", files, corpus_id, "future"), ws)
    with Timer() as t:
        docs = load_future_docs(CorpusStore.open(corpus_id, ws))
    return docs, len(files), t


SIZES = (30_000, 100_000, None)  # None: the whole corpus (310,938 papers)
QUICK_SIZES = (2_000, 5_000, None)
EXTRAPOLATE_TO = 2_600_000
BUILDS = ("ours", "bm25s", "ours_lists")
"""The builds measured at each size, each in its own process (see ``_child``)."""


def _child(kind: str, texts_path: str, queries_path: str) -> dict:
    """One build of ``kind`` over the texts in ``texts_path`` (JSON lines), then top-8 over the queries.

    Runs in a fresh process, so its peak resident memory (VmHWM) is this build's alone:
    ``peak_rss_mb`` is the process's peak (interpreter, libraries and the texts included, the
    same for every kind), ``peak_added_mb`` the peak minus the resident memory once the texts
    were loaded. ``ours``: ``build_okapi_index`` streaming ``tokenize`` over the texts + save
    (what ``BM25Retriever`` does); ``ours_lists``: the previous build, every token list held
    (``build_okapi_index_in_memory``); ``bm25s``: bare bm25s with its defaults
    (``bm25s.tokenize(stopwords="en")`` + ``BM25().index`` + save).
    """
    import tempfile

    import bm25s

    from backtest.retrieve.bm25 import build_okapi_index, build_okapi_index_in_memory, okapi_scores, tokenize
    from backtest.retrieve.protocol import top_k

    load = [round(x, 1) for x in os.getloadavg()]
    with open(texts_path, encoding="utf-8") as handle:
        texts = [json.loads(line) for line in handle]
    queries = json.loads(Path(queries_path).read_text(encoding="utf-8"))
    gc.collect()
    rss0 = _status_kb("VmRSS")
    hwm_before = _status_kb("VmHWM")  # the peak while loading the texts (VmHWM is this process's own)
    peak_ok = _reset_peak()
    with tempfile.TemporaryDirectory(dir=CACHE) as folder, Timer() as build_t:
        if kind == "ours":
            model = build_okapi_index(tokenize(t) for t in texts)
        elif kind == "ours_lists":
            model = build_okapi_index_in_memory([tokenize(t) for t in texts])
        elif kind == "bm25s":
            model = bm25s.BM25()
            model.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        else:
            raise SystemExit(f"bench retrieval child: unknown build {kind!r}")
        model.save(folder, show_progress=False)
        index_bytes = sum(p.stat().st_size for p in Path(folder).iterdir())
    peak = _status_kb("VmHWM")
    # Not getrusage's ru_maxrss: on Linux an exec'd child inherits its parent's high-water mark from
    # the fork (here the bench process holding the whole corpus). VmHWM belongs to this process alone.
    process_peak_kb = max(hwm_before, peak)
    del texts
    gc.collect()
    runs = []
    for _ in range(REPEATS):
        with Timer() as t:
            if kind == "bm25s":
                model.retrieve(bm25s.tokenize(queries, stopwords="en", show_progress=False), k=8, show_progress=False)
            else:
                for q in queries:
                    top_k(okapi_scores(model, tokenize(q)), 8, positive_only=True)
        runs.append(t)
    return {
        "build_wall_s": round(build_t.wall, 2),
        "build_cpu_s": round(build_t.cpu, 2),
        "peak_rss_mb": round(process_peak_kb / 1024, 1),
        "peak_added_mb": round((peak - rss0) / 1024, 1) if peak_ok else None,
        "rss_with_texts_mb": round(rss0 / 1024, 1),
        "index_mb": round(index_bytes / 2**20, 1),
        "nnz": int(model.scores["data"].shape[0]),
        "top8": dict(_rate(len(queries), min(runs, key=lambda x: x.cpu)), best_of=REPEATS),
        "load_average_at_start": load,
    }


def _run_child(kind: str, texts_path: Path, queries_path: Path) -> dict:
    """``_child`` in a fresh Python process (its result is the last line of its output)."""
    code = (
        "import json, sys; from bench.bench_retrieval import _child; "
        "print(json.dumps(_child(sys.argv[1], sys.argv[2], sys.argv[3])))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", code, kind, str(texts_path), str(queries_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench retrieval: the {kind} build on {texts_path.name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def linear_fit(xs: list[float], ys: list[float]) -> dict:
    """Least-squares line ``y = a + b*x`` through the points, and its value at ``EXTRAPOLATE_TO``."""
    b, a = np.polyfit(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), 1)
    return {
        "intercept": round(float(a), 4),
        "slope_per_1k_docs": round(float(b) * 1000, 6),
        "at_target": round(float(a + b * EXTRAPOLATE_TO), 2),
    }


def cost_curve(docs, shared: Path, quick: bool, queries: list[str]) -> dict:
    """Build wall/CPU seconds, peak RSS and top-8 q/s of each build in ``BUILDS`` at each size,
    on nested deterministic subsamples (a seeded permutation's first n rows, in corpus order),
    each measurement in its own process; then a straight-line fit per quantity, extrapolated to
    ``EXTRAPOLATE_TO`` papers."""
    n_all = len(docs)
    sizes = [min(s, n_all) if s else n_all for s in (QUICK_SIZES if quick else SIZES)]
    permutation = random.Random(0).sample(range(n_all), n_all)
    CACHE.mkdir(parents=True, exist_ok=True)
    queries_path = CACHE / "bm25-queries.json"
    queries_path.write_text(json.dumps(queries), encoding="utf-8")
    points: dict = {}
    for size in sizes:
        rows = range(n_all) if size == n_all else sorted(permutation[:size])
        texts_path = CACHE / f"bm25-texts-{size}.jsonl"
        with open(texts_path, "w", encoding="utf-8") as handle:
            for r in rows:
                handle.write(json.dumps(docs.text(r)) + "\n")
        try:
            points[str(size)] = {kind: _run_child(kind, texts_path, queries_path) for kind in BUILDS}
        finally:
            texts_path.unlink()
        row = points[str(size)]
        print(
            f"  bm25 n={size:>7}: peak RSS ours {row['ours']['peak_rss_mb']:.0f} MB, bm25s "
            f"{row['bm25s']['peak_rss_mb']:.0f} MB, lists {row['ours_lists']['peak_rss_mb']:.0f} MB; build CPU-s "
            f"{row['ours']['build_cpu_s']} / {row['bm25s']['build_cpu_s']} / {row['ours_lists']['build_cpu_s']}",
            flush=True,
        )
    xs = [float(s) for s in sizes]
    fits: dict = {}
    for kind in BUILDS:
        per = [points[str(s)][kind] for s in sizes]
        fits[kind] = {
            "build_cpu_s": linear_fit(xs, [p["build_cpu_s"] for p in per]),
            "build_wall_s": linear_fit(xs, [p["build_wall_s"] for p in per]),
            "peak_rss_mb": linear_fit(xs, [p["peak_rss_mb"] for p in per]),
            "peak_added_mb": linear_fit(xs, [p["peak_added_mb"] or 0.0 for p in per]),
            "query_ms_cpu": linear_fit(xs, [1000 / p["top8"]["qps_cpu"] for p in per]),
        }
    largest = points[str(sizes[-1])]
    return {
        "sizes": sizes,
        "subsample": "nested: the first n rows of random.Random(0).sample(range(N), N), in corpus order",
        "queries": len(queries),
        "points": points,
        "extrapolation": {
            "to_documents": EXTRAPOLATE_TO,
            "fit": "least-squares straight line y = a + b*N through the three sizes (numpy.polyfit, degree 1)",
            "by_build": fits,
        },
        "ratios_at_largest": {
            "documents": sizes[-1],
            "peak_rss_ours_over_bm25s": round(largest["ours"]["peak_rss_mb"] / largest["bm25s"]["peak_rss_mb"], 3),
            "peak_added_ours_over_bm25s": round(
                (largest["ours"]["peak_added_mb"] or 0) / max(largest["bm25s"]["peak_added_mb"] or 1e-9, 1e-9), 3
            ),
            "peak_rss_ours_over_lists": round(largest["ours"]["peak_rss_mb"] / largest["ours_lists"]["peak_rss_mb"], 3),
            "build_cpu_ours_over_bm25s": round(largest["ours"]["build_cpu_s"] / largest["bm25s"]["build_cpu_s"], 3),
            "qps_cpu_ours_over_bm25s": round(
                largest["ours"]["top8"]["qps_cpu"] / largest["bm25s"]["top8"]["qps_cpu"], 3
            ),
        },
    }


def bench_bm25(shared: Path, quick: bool) -> dict:
    """The cost curve (see ``cost_curve``), the end-to-end ``BM25Retriever`` build over the whole corpus,
    top-8 q/s of ours vs bm25s on the very same index, and rank-bm25 on subsamples (see module doc)."""
    import bm25s
    from rank_bm25 import BM25Okapi

    from backtest.retrieve.bm25 import BM25Retriever, okapi_scores, tokenize
    from backtest.retrieve.index_store import index_dir
    from backtest.retrieve.protocol import top_k

    os.environ.pop("BACKTEST_INDEX_CACHE", None)
    docs, n_files, load_t = _arxiv_docs(shared, quick)
    out: dict = {
        "corpus": {
            "id": docs.corpus_id,
            "files": n_files,
            "documents": len(docs),
            "verify_and_load_wall_s": round(load_t.wall, 2),
        }
    }
    queries = _questions(shared, 100 if quick else 424)
    out["cost_curve"] = cost_curve(docs, shared, quick, queries)

    stale = index_dir(docs, "bm25", "x").parent
    if stale.exists():
        shutil.rmtree(stale)
    gc.collect()
    rss0 = _status_kb("VmRSS")
    peak_ok = _reset_peak()
    with Timer() as t:
        ours = BM25Retriever(docs)
    peak = _status_kb("VmHWM")
    assert ours.built
    index_bytes = sum(p.stat().st_size for p in ours.folder.iterdir())
    out["build"] = {
        "what": "BM25Retriever(docs) in the bench process: streamed tokenise + index + save + hash into the cache",
        "wall_s": round(t.wall, 2),
        "cpu_s": round(t.cpu, 2),
        "peak_added_mb": round((peak - rss0) / 1024, 1) if peak_ok else None,
        "rss_before_mb": round(rss0 / 1024, 1),
        "index_mb": round(index_bytes / 2**20, 1),
        "nnz": int(ours.model.scores["data"].shape[0]),
        "vocabulary": len(ours.model.vocab_dict),
    }
    with Timer() as t:
        BM25Retriever(docs)
    out["reopen_cached_index_wall_s"] = round(t.wall, 2)

    tokenized_once = bm25s.tokenize(queries, stopwords="en", return_ids=False, show_progress=False)
    hits_ours = ours.search(queries, 8)
    res = ours.model.retrieve(tokenized_once, k=8, show_progress=False)
    same = np.mean([[r for r, _ in h] == list(map(int, d)) for h, d in zip(hits_ours, res.documents)])
    best: dict[str, Timer] = {}
    for _ in range(REPEATS):  # interleaved, best of REPEATS: the machine is shared
        with Timer() as t:
            ours.search(queries, 8)
        best["ours"] = min(best.get("ours", t), t, key=lambda x: x.cpu)
        with Timer() as t:
            ours.model.retrieve(
                bm25s.tokenize(queries, stopwords="en", return_ids=False, show_progress=False), k=8, show_progress=False
            )
        best["bm25s_same_index"] = min(best.get("bm25s_same_index", t), t, key=lambda x: x.cpu)
    speed = {name: dict(_rate(len(queries), t), best_of=REPEATS) for name, t in best.items()}
    full = out["cost_curve"]["points"][str(len(docs))]
    speed["bm25s_defaults"] = dict(
        full["bm25s"]["top8"],
        build={"wall_s": full["bm25s"]["build_wall_s"], "cpu_s": full["bm25s"]["build_cpu_s"]},
        measured="in the cost curve's child process at the full size",
    )
    del ours
    gc.collect()

    rng = random.Random(0)
    n_ref_queries = 10 if quick else 20
    ref_queries = [tokenize(q) for q in queries[:n_ref_queries]]
    sizes = [2000, 5000] if quick else [10000, 30000]
    sub_rows = rng.sample(range(len(docs)), max(sizes))
    ref = {}
    for size in sizes:
        tokens = [tokenize(docs.text(r)) for r in sub_rows[:size]]
        model = BM25Okapi(tokens)
        with Timer() as t:
            for q in ref_queries:
                np.argsort(-model.get_scores(q), kind="stable")[:8]
        ref[str(size)] = _rate(len(ref_queries), t)
        del model
    biggest = str(max(sizes))
    per_query_cpu = ref[biggest]["cpu_s"] / len(ref_queries) * len(docs) / max(sizes)
    per_query_wall = ref[biggest]["wall_s"] / len(ref_queries) * len(docs) / max(sizes)
    speed["rank_bm25"] = {
        "measured_on_subsamples": ref,
        "extrapolated_to_full": {
            "method": (
                f"per-query time at {biggest} docs x {len(docs)}/{biggest} "
                "(rank-bm25 scores every document per query token)"
            ),
            "qps_cpu": round(1 / per_query_cpu, 3),
            "qps_wall": round(1 / per_query_wall, 3),
        },
    }
    # Ours on the same subsample: a speedup with no extrapolation.
    from backtest.retrieve.bm25 import build_okapi_index

    sub_index = build_okapi_index(tokenize(docs.text(r)) for r in sub_rows)
    with Timer() as t:
        for q in queries:
            top_k(okapi_scores(sub_index, tokenize(q)), 8, positive_only=True)
    speed["ours_on_subsample"] = dict(_rate(len(queries), t), documents=max(sizes))
    out["top8"] = speed
    o = speed["ours"]
    curve = out["cost_curve"]["ratios_at_largest"]
    out["ratios"] = {
        "ours_vs_rank_bm25_full_cpu_x": round(o["qps_cpu"] / speed["rank_bm25"]["extrapolated_to_full"]["qps_cpu"], 1),
        "ours_vs_rank_bm25_full_wall_x": round(
            o["qps_wall"] / speed["rank_bm25"]["extrapolated_to_full"]["qps_wall"], 1
        ),
        "ours_vs_rank_bm25_same_subsample_cpu_x": round(
            speed["ours_on_subsample"]["qps_cpu"] / ref[biggest]["qps_cpu"], 1
        ),
        "ours_slowdown_vs_bm25s_same_index_cpu": round(speed["bm25s_same_index"]["qps_cpu"] / o["qps_cpu"] - 1, 3),
        "ours_slowdown_vs_bm25s_defaults_cpu": round(speed["bm25s_defaults"]["qps_cpu"] / o["qps_cpu"] - 1, 3),
        "same_top8_as_bm25s_same_index": round(float(same), 3),
        "build_peak_rss_ours_over_bm25s": curve["peak_rss_ours_over_bm25s"],
        "build_peak_added_ours_over_bm25s": curve["peak_added_ours_over_bm25s"],
    }
    out["goals"] = {
        "at_least_300x_rank_bm25": out["ratios"]["ours_vs_rank_bm25_full_cpu_x"] >= 300,
        "at_most_20pct_slower_than_bare_bm25s": out["ratios"]["ours_slowdown_vs_bm25s_same_index_cpu"] <= 0.20,
        "build_peak_rss_at_most_1.3x_bm25s": curve["peak_rss_ours_over_bm25s"] <= 1.3
        and curve["peak_added_ours_over_bm25s"] <= 1.3,
    }
    return out


def _builder_stamp() -> str:
    """A short hash of the corpus builder's code: a cached bench corpus is rebuilt when the builder changes."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "backtest" / "corpus").rglob("*.py")):
        digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _astro_docs():
    """The repository's own astro-2025 future corpus (built and reproduced by ``make instances``).

    Using it, not a copy built here, keeps its seal the committed one, so its embeddings are
    the ones ``make demo`` and the tests cache, and a stale copy cannot be measured.
    """
    from backtest.core.workspace import Workspace
    from backtest.corpus.store import CorpusStore
    from backtest.retrieve import load_future_docs

    ws = Workspace(REPO)
    if not ws.corpus_dir("astro-2025-future").joinpath("records.jsonl").is_file():
        raise SystemExit("bench retrieval: corpora/astro-2025-future is not built; run `make instances` first")
    return load_future_docs(CorpusStore.open("astro-2025-future", ws))


def bench_dense(shared: Path, quick: bool) -> dict:
    """Embedding throughput and faiss exact vs approximate on astro-2025 (see module doc)."""
    from backtest.retrieve.dense import corpus_embeddings, embeddings_cached
    from backtest.text.embed import embed_texts, load_model

    os.environ["BACKTEST_INDEX_CACHE"] = str(REPO / ".cache" / "index-cache")
    docs = _astro_docs()
    load_model()
    sample = [docs.text(r) for r in random.Random(1).sample(range(len(docs)), 32 if quick else 128)]
    embed_texts(sample[:4])  # warm-up
    with Timer() as t:
        embed_texts(sample)
    out: dict = {
        "corpus": {"id": docs.corpus_id, "documents": len(docs)},
        "embedding": {
            "model": "all-MiniLM-L6-v2",
            "docs": len(sample),
            "wall_s": round(t.wall, 2),
            "cpu_s": round(t.cpu, 2),
            "docs_per_s_wall": round(len(sample) / t.wall, 2),
            "docs_per_cpu_s": round(len(sample) / max(t.cpu, 1e-9), 2),
            "torch_threads": __import__("torch").get_num_threads(),
        },
    }
    if embeddings_cached(docs) or os.environ.get("BENCH_RETRIEVAL_EMBED_ALL"):
        with Timer() as t:
            vectors, _, _ = corpus_embeddings(docs)
        out["faiss_vectors"] = {
            "text": "title + abstract (the dense retriever's own index)",
            "wall_s": round(t.wall, 2),
        }
    else:
        with Timer() as t:
            vectors = embed_texts(docs.titles)
        out["faiss_vectors"] = {
            "text": "titles only: the title + abstract embeddings were not in the cache "
            "(BENCH_RETRIEVAL_EMBED_ALL=1 computes them: ~30 CPU-minutes)",
            "wall_s": round(t.wall, 2),
            "cpu_s": round(t.cpu, 2),
        }
    out["faiss"] = faiss_recall(vectors, quick, more_real=out["faiss_vectors"]["text"].startswith("title + abstract"))
    return out


def _real_vectors(astro_vectors: np.ndarray, more_real: bool) -> tuple[np.ndarray, list[dict]]:
    """Every real title + abstract embedding the caches hold: astro-2025's, plus (``more_real``) space-2016's
    when cached."""
    from backtest.core.workspace import Workspace
    from backtest.corpus.store import CorpusStore
    from backtest.retrieve import load_future_docs
    from backtest.retrieve.dense import corpus_embeddings, embeddings_cached

    parts, sources = [astro_vectors], [{"corpus": "astro-2025-future", "vectors": len(astro_vectors)}]
    ws = Workspace(REPO)
    if more_real and ws.corpus_dir("space-2016-future").joinpath("records.jsonl").is_file():
        docs = load_future_docs(CorpusStore.open("space-2016-future", ws))
        if embeddings_cached(docs):
            vectors, _, _ = corpus_embeddings(docs)
            parts.append(vectors)
            sources.append({"corpus": "space-2016-future", "vectors": len(vectors)})
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32), sources


def _replicated(base: np.ndarray, copies: int, sigma: float) -> np.ndarray:
    """``copies`` noisy copies of ``base`` (the first exact): each row + N(0, sigma^2) per dimension, renormalised."""
    rng = np.random.default_rng(3)
    out = [base]
    for _ in range(copies - 1):
        noisy = base + rng.normal(0.0, sigma, size=base.shape).astype(np.float32)
        out.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
    return np.ascontiguousarray(np.concatenate(out), dtype=np.float32)


def _search_set(vectors: np.ndarray, queries: np.ndarray) -> dict:
    """Exact flat vs HNSW (the dense retriever's defaults above its threshold) vs IVF on one vector set."""
    import faiss

    from backtest.retrieve.dense import HNSW_DEFAULTS

    n, dim = vectors.shape
    m, efc, efs = HNSW_DEFAULTS["hnsw_m"], HNSW_DEFAULTS["ef_construction"], HNSW_DEFAULTS["ef_search"]
    nlist = max(1, min(n // 39, int(4 * np.sqrt(n))))
    indexes = {}
    with Timer() as t:
        flat = faiss.IndexFlatIP(dim)
        flat.add(vectors)
    indexes["flat"] = (flat, t)
    with Timer() as t:
        hnsw = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = efc
        hnsw.add(vectors)
        hnsw.hnsw.efSearch = efs
    indexes[f"hnsw_M{m}_efc{efc}_efs{efs}"] = (hnsw, t)
    with Timer() as t:
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.train(vectors)
        ivf.add(vectors)
    for nprobe in (16, 64):
        indexes[f"ivf_nlist{nlist}_nprobe{nprobe}"] = (ivf, t)
    truth = None
    results = {}
    for name, (index, build_t) in indexes.items():
        if name.startswith("ivf"):
            index.nprobe = int(name.rsplit("nprobe", 1)[1])
        index.search(queries[:10], 8)  # warm-up
        with Timer() as t:
            _, found = index.search(queries, 8)
        if truth is None:
            truth = found
        recall = float(np.mean([len(set(a) & set(b)) / 8 for a, b in zip(found, truth)]))
        results[name] = {
            "build_wall_s": round(build_t.wall, 3),
            "build_cpu_s": round(build_t.cpu, 3),
            "query_ms_wall": round(1000 * t.wall / len(queries), 4),
            "query_ms_cpu": round(1000 * t.cpu / len(queries), 4),
            "recall_at_8": round(recall, 4),
        }
    return {"vectors": n, "indexes": results}


def faiss_recall(astro_vectors: np.ndarray, quick: bool, more_real: bool = True) -> dict:
    """Recall@8 of the approximate indexes against exact, on held-out real queries.

    The index holds every real embedding the caches have except 1,000 held-out rows, which are
    the queries (so no query finds itself). Then the same on those vectors replicated with small
    Gaussian noise (synthetic, labelled: how exact and approximate search scale, not real recall).
    """
    import faiss

    from backtest.retrieve.dense import DEFAULT_ANN, EXACT_MAX_DOCS, HNSW_DEFAULTS

    vectors, sources = _real_vectors(astro_vectors, more_real)
    n_queries = min(200 if quick else 1000, len(vectors) // 5)
    held = np.zeros(len(vectors), dtype=bool)
    held[random.Random(2).sample(range(len(vectors)), n_queries)] = True
    queries, base = np.ascontiguousarray(vectors[held]), np.ascontiguousarray(vectors[~held])
    sets = {"real": dict(_search_set(base, queries), text="real title + abstract embeddings", sources=sources)}
    copies, sigma = (3 if quick else 10), 0.02
    synthetic = _replicated(base, copies, sigma)
    sets[f"replicated_x{copies}"] = dict(
        _search_set(synthetic, queries),
        text=f"SYNTHETIC: the real index vectors and {copies - 1} noisy copies of each (N(0, {sigma}^2) per "
        f"dimension, renormalised; a copy's cosine to its original is ~{1 / np.sqrt(1 + sigma**2 * 384):.2f})",
    )
    hnsw_name = next(k for k in sets["real"]["indexes"] if k.startswith("hnsw"))
    flat_ms = [(s["vectors"], s["indexes"]["flat"]["query_ms_cpu"]) for s in sets.values()]
    slope = (flat_ms[-1][1] - flat_ms[0][1]) / max(flat_ms[-1][0] - flat_ms[0][0], 1)
    return {
        "queries": n_queries,
        "queries_are": "held-out real embeddings, not in the index",
        "dim": int(vectors.shape[1]),
        "threads": faiss.omp_get_max_threads(),
        "sets": sets,
        "auto": {
            "exact_max_docs": EXACT_MAX_DOCS,
            "ann": DEFAULT_ANN,
            "ann_params": HNSW_DEFAULTS,
            "ann_index": hnsw_name,
            "recall_at_8_real": sets["real"]["indexes"][hnsw_name]["recall_at_8"],
            "recall_at_8_min_over_sets": min(s["indexes"][hnsw_name]["recall_at_8"] for s in sets.values()),
            "flat_query_ms_cpu_at_threshold": round(flat_ms[0][1] + slope * (EXACT_MAX_DOCS - flat_ms[0][0]), 2),
            "flat_query_ms_cpu_at_2.6M": round(flat_ms[0][1] + slope * (EXTRAPOLATE_TO - flat_ms[0][0]), 2),
            "extrapolation": "linear in N through the real and the replicated set's exact query times",
        },
        "goals": {
            "ann_recall_at_8_at_least_0.98": min(s["indexes"][hnsw_name]["recall_at_8"] for s in sets.values()) >= 0.98
        },
    }


def run(args) -> dict:
    """Run both parts; ``args.quick`` shrinks them (10 archive files, fewer queries).

    ``BENCH_RETRIEVAL_PARTS=bm25`` (or ``dense``) runs one part and keeps the other
    part's figures from the previous ``bench/results/retrieval.json``; each part
    carries its own ``measured_at`` and load average.
    """
    shared = Path(args.shared)
    parts = [p for p in os.environ.get("BENCH_RETRIEVAL_PARTS", "bm25,dense").split(",") if p]
    previous_path = REPO / "bench" / "results" / "retrieval.json"
    previous = json.loads(previous_path.read_text()) if previous_path.is_file() else {}
    result: dict = {"cpus": os.cpu_count()}
    for part, key, fn in (("bm25", "bm25_arxiv_2020", bench_bm25), ("dense", "dense_astro_2025", bench_dense)):
        if part in parts:
            load = [round(x, 1) for x in os.getloadavg()]
            result[key] = fn(shared, args.quick)
            result[key]["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            result[key]["load_average_at_start"] = load
        elif key in previous:
            result[key] = previous[key]
    try:
        print(summary(result), flush=True)
    except (KeyError, TypeError, ValueError) as exc:  # a part kept from an older result may lack a figure
        print(f"bench retrieval: no summary ({type(exc).__name__}: {exc})", flush=True)
    return result


LABELS = {"ours": "ours (streamed)", "bm25s": "bare bm25s", "ours_lists": "ours, token lists (before)"}


def _order(kind: str) -> int:
    return BUILDS.index(kind) if kind in BUILDS else len(BUILDS)


def _mb(value: float) -> str:
    return f"{value / 1024:.1f} GB" if value >= 10240 else f"{value:,.0f} MB"


def summary(results: dict) -> str:
    """Markdown (sentences + tables) of a ``retrieval.json``: the Speed section of ``docs/retrieve.md``
    (filled by ``scripts/gen_docs.py``)."""
    bm, dense = results["bm25_arxiv_2020"], results["dense_astro_2025"]
    curve, top8, ratios = bm["cost_curve"], bm["top8"], bm["ratios"]
    n = bm["corpus"]["documents"]
    largest = curve["points"][str(curve["sizes"][-1])]
    fits = curve["extrapolation"]["by_build"]
    target = curve["extrapolation"]["to_documents"]
    rows = [
        "| papers | build | build CPU-s | build wall-s | peak RSS | added by the build | index on disk "
        "| top-8 q/CPU-s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in curve["sizes"]:
        point = curve["points"][str(size)]
        for kind, p in sorted(point.items(), key=lambda item: _order(item[0])):
            rows.append(
                f"| {size:,} | {LABELS.get(kind, kind)} | {p['build_cpu_s']:.1f} | {p['build_wall_s']:.1f} "
                f"| {_mb(p['peak_rss_mb'])} | {_mb(p['peak_added_mb'] or 0)} | {p['index_mb']:.0f} MB "
                f"| {p['top8']['qps_cpu']:,.0f} |"
            )
    for kind, f in sorted(fits.items(), key=lambda item: _order(item[0])):
        rows.append(
            f"| {target / 1e6:.1f}M (fit) | {LABELS.get(kind, kind)} | {f['build_cpu_s']['at_target']:,.0f} "
            f"| {f['build_wall_s']['at_target']:,.0f} | {_mb(f['peak_rss_mb']['at_target'])} "
            f"| {_mb(f['peak_added_mb']['at_target'])} | | {1000 / f['query_ms_cpu']['at_target']:,.0f} |"
        )
    r = curve["ratios_at_largest"]
    load = bm["load_average_at_start"][0]
    build = bm["build"]
    slow = ratios["ours_slowdown_vs_bm25s_same_index_cpu"]
    rank = top8["rank_bm25"]
    text = [
        f"Measured {bm['measured_at'][:10]} on {results['cpus']} shared cores (load {load} at the start): "
        f"arxiv-archive-2020 as one future corpus of {n:,} papers, and nested random subsamples of it; "
        f"top-8 over the reference release's {curve['queries']} frozen questions. Each build runs in a "
        f"process of its own, so its peak RSS (VmHWM: interpreter, libraries and the texts included, "
        f"{_mb(largest['ours']['rss_with_texts_mb'])} before the build at full size) is its alone.",
        "",
        *rows,
        "",
        f"At {curve['sizes'][-1]:,} papers our streamed build peaks at {_mb(largest['ours']['peak_rss_mb'])}, "
        f"{r['peak_rss_ours_over_bm25s']:.2f}× bare bm25s's {_mb(largest['bm25s']['peak_rss_mb'])} "
        f"(goal ≤ 1.3×; {r['peak_added_ours_over_bm25s']:.2f}× on the memory the builds add), and "
        f"{r['peak_rss_ours_over_lists']:.2f}× the build that held every token list. The {target / 1e6:.1f}M rows "
        f"are a least-squares straight line in the number of papers through the three sizes, extrapolated "
        f"(`python -m bench retrieval` prints them).",
        "",
        f"`BM25Retriever` over all {n:,} papers (streamed tokenise + index + save + hash into the cache): "
        f"{build['cpu_s']:.0f} CPU-s, {build['nnz'] / 1e6:.0f} M postings, {build['index_mb']:.0f} MB on disk, "
        f"{_mb(build['peak_added_mb'] or 0)} peak added. Top-8 runs at {top8['ours']['qps_cpu']:.0f} q/CPU-s, "
        f"{abs(slow):.1%} {'below' if slow >= 0 else 'above'} bare bm25s on the same index "
        f"({top8['bm25s_same_index']['qps_cpu']:.0f}), and "
        f"{ratios['ours_vs_rank_bm25_full_cpu_x']:,.0f}× rank-bm25 "
        f"({rank['extrapolated_to_full']['qps_cpu']} q/CPU-s, measured on "
        f"{'/'.join(f'{int(k) // 1000}k' for k in rank['measured_on_subsamples'])}-paper subsamples and "
        f"extrapolated linearly; {ratios['ours_vs_rank_bm25_same_subsample_cpu_x']:,.0f}× on the same "
        f"{top8['ours_on_subsample']['documents'] // 1000}k subsample, no extrapolation). bm25s with its own "
        f"defaults (float32 Lucene scoring) runs at {top8['bm25s_defaults']['qps_cpu']:.0f} q/CPU-s: our scores "
        f"are float64 Okapi, kept equal to rank-bm25 to 1e-6.",
    ]
    emb, fa = dense["embedding"], dense["faiss"]
    auto = fa["auto"]
    real = fa["sets"]["real"]
    drows = ["| vectors | index | build wall-s | query ms (CPU) | recall@8 vs exact |", "|---|---|---|---|---|"]
    for name, st in fa["sets"].items():
        label = f"{st['vectors']:,} real" if name == "real" else f"{st['vectors']:,} synthetic ({name})"
        for index, v in st["indexes"].items():
            drows.append(
                f"| {label} | `{index}` | {v['build_wall_s']:.2f} | {v['query_ms_cpu']:.3f} | {v['recall_at_8']:.4f} |"
            )
    sources = " + ".join(f"{s['corpus']} {s['vectors']:,}" for s in real["sources"])
    synthetic = [st["text"] for name, st in fa["sets"].items() if name != "real"]
    text += [
        "",
        f"Dense (measured {dense['measured_at'][:10]}, load {dense['load_average_at_start'][0]}): MiniLM embeds "
        f"{emb['docs_per_cpu_s']:.0f} abstracts per CPU-second ({emb['docs_per_s_wall']:.0f} per wall-second on "
        f"{emb['torch_threads']} threads). faiss on every real title + abstract embedding the caches hold "
        f"({sources}), {fa['queries']:,} of them held out as queries"
        + (f", then on a synthetic set: {synthetic[0].removeprefix('SYNTHETIC: ')}" if synthetic else "")
        + ":",
        "",
        *drows,
        "",
        f'`index="auto"` (the default) searches exactly up to {auto["exact_max_docs"]:,} documents and with '
        f"`{auto['ann_index']}` above: recall@8 against exact {auto['recall_at_8_real']:.4f} on the real vectors, "
        f"{auto['recall_at_8_min_over_sets']:.4f} at worst over the sets (goal ≥ 0.98). Exact search, extrapolated "
        f"linearly, would cost {auto['flat_query_ms_cpu_at_threshold']:.0f} ms CPU per query at the threshold and "
        f"{auto['flat_query_ms_cpu_at_2.6M']:.0f} ms at 2.6M papers.",
    ]
    return "\n".join(text)
