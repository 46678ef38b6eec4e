"""Sanity on real data: a paper's own title retrieves it from the whole astro-2025 future corpus.

For 200 future papers (seeded sample), the query is the paper's title; the paper must
be in the top 8 for at least 95% of them, with ``bm25`` and with ``dense``. The dense
side embeds ~8,300 abstracts (minutes on a CPU), so it is ``slow`` and its embeddings
are kept in ``.cache/index-cache`` (checked by sha256 before reuse).
"""

from __future__ import annotations

import random

import pytest

from backtest.corpus.future import open_future_corpus
from backtest.corpus.instance import load_instance
from backtest.retrieve import get_retriever, load_future_docs

from .conftest import REPO

N_PAPERS = 200


@pytest.fixture
def astro_docs(astro_ws, monkeypatch):
    monkeypatch.setenv("BACKTEST_INDEX_CACHE", str(REPO / ".cache" / "index-cache"))
    return load_future_docs(open_future_corpus(load_instance("astro-2025", astro_ws), astro_ws))


def own_paper_rate(retriever, docs) -> float:
    rows = random.Random(2025).sample(range(len(docs)), N_PAPERS)
    hits = retriever.search([docs.titles[r] for r in rows], 8)
    return sum(r in {row for row, _ in h} for r, h in zip(rows, hits)) / N_PAPERS


@pytest.mark.slow
def test_title_finds_its_paper_with_bm25(astro_docs):
    assert len(astro_docs) > 8000
    assert own_paper_rate(get_retriever("bm25", astro_docs), astro_docs) >= 0.95


@pytest.mark.slow
def test_title_finds_its_paper_with_dense(astro_docs):
    retriever = get_retriever("dense", astro_docs, progress=True)
    assert retriever.vectors.shape == (len(astro_docs), 384)
    assert own_paper_rate(retriever, astro_docs) >= 0.95
