"""Dense search above a threshold: ``index="auto"`` is exact flat up to ``exact_max_docs`` documents and
HNSW above it, and the record says which search ran (real astro-2025-ep embeddings)."""

from __future__ import annotations

import numpy as np
import pytest

from backtest.core.errors import BadInput
from backtest.corpus.future import open_future_corpus
from backtest.corpus.instance import load_instance
from backtest.retrieve import get_retriever, load_future_docs
from backtest.retrieve.dense import EXACT_MAX_DOCS, resolve_index


def test_resolve_index_switches_at_the_threshold():
    assert resolve_index("auto", 100, exact_max_docs=100) == "flat"
    assert resolve_index("auto", 101, exact_max_docs=100) == "hnsw"
    assert resolve_index("auto", 101, exact_max_docs=100, ann="ivf") == "ivf"
    assert resolve_index("flat", 10**9, exact_max_docs=100) == "flat"  # a named kind is kept
    assert resolve_index("auto", 310_938) == "flat"  # today's largest corpus is searched exactly
    assert resolve_index("auto", 2_600_000) == "hnsw" and EXACT_MAX_DOCS < 2_600_000
    for bad, match in (
        ({"index": "exact"}, "dense index 'exact': choose one of auto, flat, hnsw, ivf"),
        ({"index": "auto", "ann": "flat"}, "dense ann 'flat': choose one of hnsw, ivf"),
        ({"index": "auto", "exact_max_docs": -1}, "exact_max_docs must be a whole number"),
        ({"index": "auto", "exact_max_docs": 1.5}, "exact_max_docs must be a whole number"),
    ):
        with pytest.raises(BadInput, match=match) as info:
            resolve_index(n_docs=10, **bad)
        assert "\n" not in str(info.value)


def test_auto_is_exact_below_the_threshold_and_hnsw_above_it(astro_ep_ws, monkeypatch):
    from .conftest import REPO

    monkeypatch.setenv("BACKTEST_INDEX_CACHE", str(REPO / ".cache" / "index-cache"))
    docs = load_future_docs(open_future_corpus(load_instance("astro-2025-ep", astro_ep_ws), astro_ep_ws))
    exact = get_retriever("dense", docs)
    assert exact.spec()["params"]["index"] == "flat" and "selected" not in exact.spec()["params"]
    assert exact.key == exact.embedding_key  # flat is the embeddings themselves
    auto = get_retriever("dense", docs, exact_max_docs=len(docs) - 1)
    params = auto.spec()["params"]
    assert params["index"] == "hnsw" and params["hnsw_m"] == 32 and params["ef_search"] == 128
    assert params["selected"] == f"auto: {len(docs)} documents > exact_max_docs {len(docs) - 1}"
    named = get_retriever("dense", docs, index="hnsw")
    assert auto.key == named.key != exact.key  # the same HNSW index, whoever chose it
    assert "selected" not in named.spec()["params"]
    rows = list(range(0, len(docs), 7))
    queries = exact.vectors[rows] + 0.05 * np.random.default_rng(0).standard_normal((len(rows), exact.vectors.shape[1]))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    truth, got = exact.search_vectors(queries, 8), auto.search_vectors(queries, 8)
    recall = np.mean([len({r for r, _ in a} & {r for r, _ in t}) / 8 for a, t in zip(got, truth)])
    assert recall >= 0.98, recall
