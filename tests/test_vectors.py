"""Vectors computed once: corpora that share papers share their vectors (the store in backtest.text.vectors).

Two real future corpora from the astro-ph daily listings (astro-ph.EP), the second a later window of the
first, so every paper of the second is in the first: embedding the second embeds none of them. Then the
store's guarantees: a damaged shard is not trusted, a half-written one (a killed writer) is ignored, and
two writers at once both land.
"""

from __future__ import annotations

import datetime as dt
import threading

import numpy as np
import pytest

from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions
from backtest.retrieve.dense import corpus_embeddings
from backtest.retrieve.protocol import load_future_docs
from backtest.text import vectors
from backtest.text.embed import model_fingerprint
from backtest.text.vectors import VectorStore, embed_cached, store_root, text_key
from tests.conftest import DAILY, build_from_repo

pytestmark = pytest.mark.slow


@pytest.fixture
def private_store(tmp_path, monkeypatch):
    """An empty vector store for this test (the suite's shared one would already hold these papers)."""
    monkeypatch.setenv("BACKTEST_INDEX_CACHE", str(tmp_path / "shared-cache"))
    return store_root()


def future_corpus(ws: Workspace, corpus_id: str, start: dt.date):
    if not DAILY.is_dir():
        pytest.skip(f"astro-ph daily listings not found at {DAILY}")
    manifest = build_from_repo(
        BuildOptions(
            "arxiv-daily",
            [DAILY],
            corpus_id,
            "future",
            start=start,
            end=dt.date(2026, 7, 1),
            categories=["astro-ph.EP"],
        ),
        ws,
    )
    return load_future_docs(manifest, ws)


def test_a_second_corpus_sharing_papers_embeds_none_of_them(tmp_path, private_store):
    ws = Workspace(tmp_path / "ws")
    first = future_corpus(ws, "ep-from-november", dt.date(2025, 11, 1))
    later = future_corpus(ws, "ep-from-january", dt.date(2026, 1, 1))
    shared = set(later.ids) & set(first.ids)
    assert shared == set(later.ids) and 0 < len(later) < len(first)

    before = vectors.COUNT.embedded, vectors.COUNT.reused
    first_vectors, _, _ = corpus_embeddings(first)
    assert vectors.COUNT.embedded - before[0] == len(first)  # an empty store: every paper embedded once
    before = vectors.COUNT.embedded, vectors.COUNT.reused
    later_vectors, _, _ = corpus_embeddings(later)
    assert vectors.COUNT.embedded - before[0] == 0, "a paper the store has was embedded again"
    assert vectors.COUNT.reused - before[1] == len(later)
    rows = [first.row_of(i) for i in later.ids]
    assert np.array_equal(later_vectors, first_vectors[rows])  # the same vectors, not merely close ones
    print(f"vector store: {len(first)} papers embedded for the first corpus, 0 of {len(later)} for the second")


def test_damaged_and_half_written_shards_are_not_trusted(tmp_path, private_store, capsys):
    fp = model_fingerprint()
    texts = [f"A spectrum of planet {i} shows sodium absorption." for i in range(5)]
    vecs, count = embed_cached(texts, "all-MiniLM-L6-v2", fp, progress=False)
    assert count.embedded == 5
    store = VectorStore(private_store, fp)
    (shard,) = list(store.dir.glob("*.npz"))
    (store.dir / f".{shard.name}.x.tmp").write_bytes(b"a writer killed half way")  # ignored
    again, count = embed_cached(texts, "all-MiniLM-L6-v2", fp)
    assert count.embedded == 0 and np.array_equal(again, vecs)
    data = bytearray(shard.read_bytes())
    data[-40] ^= 0xFF  # one flipped byte inside the vectors
    shard.write_bytes(bytes(data))
    _, count = embed_cached(texts, "all-MiniLM-L6-v2", fp)
    assert count.embedded == 5 and "damaged" in capsys.readouterr().err


def test_two_writers_at_once_both_land(tmp_path, private_store):
    store = VectorStore(private_store, "test-fingerprint")
    batches = [[text_key(f"writer {w} text {i}") for i in range(50)] for w in range(2)]
    threads = [
        threading.Thread(target=store.add, args=(keys, np.full((50, 4), w, dtype=np.float32)))
        for w, keys in enumerate(batches)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loaded = store.load()
    assert len(loaded) == 100
    assert all(loaded[k][0] == w for w, keys in enumerate(batches) for k in keys)
