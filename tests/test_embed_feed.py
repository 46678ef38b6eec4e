"""The host pipeline that feeds a GPU (backtest.text.feed) against the plain path (``encode`` per chunk), on
300 real title + abstract texts of ``astro-2025-ep`` with the packaged MiniLM.

On the CPU the pipeline must give the plain path's vectors byte for byte, in the input order; on a CUDA GPU
(the same test, when torch sees one) the same documents within float rounding. Speed is the benchmark's
(``bench/bench_feed.py``), never asserted here.
"""

from __future__ import annotations

import numpy as np
import pytest

from backtest.corpus.future import open_future_corpus
from backtest.corpus.instance import load_instance
from backtest.retrieve.protocol import load_future_docs
from backtest.text import device, embed, feed
from backtest.text.embed import BATCH, CHUNK, DEFAULT_MODEL, embed_texts, load_model

GPU = pytest.param("cuda", marks=pytest.mark.skipif(not device.cuda_available(), reason="no CUDA GPU here"))


@pytest.fixture(scope="module")
def abstracts(astro_ep_ws) -> list[str]:
    """300 real title + abstract texts (two chunks: 256 + 44), as the dense retriever embeds them."""
    ws = astro_ep_ws
    docs = load_future_docs(open_future_corpus(load_instance("astro-2025-ep", ws), ws), ws)
    return docs.texts(("title", "abstract"))[:300]


@pytest.fixture(scope="module")
def plain(abstracts) -> np.ndarray:
    with device.use("cpu"):
        return embed_texts(abstracts)


def test_the_batches_are_encodes_within_each_chunk(abstracts):
    plan = feed.batch_plan(abstracts, CHUNK, BATCH)
    assert [len(rows) for rows in plan] == [64, 64, 64, 64, 44]
    assert sorted(np.concatenate(plan).tolist()) == list(range(len(abstracts)))  # every text once
    for rows in plan:
        assert len({int(r) // CHUNK for r in rows}) == 1  # never across a chunk
        lengths = [len(abstracts[r]) for r in rows]
        assert lengths == sorted(lengths, reverse=True)  # longest first, as encode sorts
    assert feed.batch_plan([], CHUNK, BATCH) == []


@pytest.mark.slow
@pytest.mark.parametrize("where", ["cpu", GPU])
def test_the_pipeline_gives_the_plain_vectors_in_the_input_order(abstracts, plain, where):
    st = load_model(DEFAULT_MODEL, where)
    batch = BATCH if where == "cpu" else embed.GPU_BATCH
    done: list[int] = []
    fed = feed.encode(st, abstracts, CHUNK, batch, device=where, workers=2, ahead=3, done=done.append)
    assert fed.shape == plain.shape == (300, 384) and fed.dtype == np.float32 and sum(done) == 300
    if where == "cpu":
        assert np.array_equal(fed, plain)  # the same batches through the same modules: the same bytes
    else:
        assert np.abs(fed - plain).max() < 1e-5  # float rounding only (2.5e-7 measured on an H200, issue 42)
        queries = plain[:20]
        assert (np.argsort(-(fed @ queries.T), axis=0)[:8] == np.argsort(-(plain @ queries.T), axis=0)[:8]).all()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["auto", GPU])
def test_embed_texts_on_a_device(abstracts, plain, where):
    """``embed_texts`` under ``--device``: ``auto`` without a GPU is the plain CPU path, byte for byte (nothing
    changes there); on CUDA the pipeline, one batch per chunk, within float rounding of the CPU."""
    with device.use(where):
        on = embed.model_device(DEFAULT_MODEL)
        vectors = embed_texts(abstracts[:100])
    with device.use("cpu"):
        reference = embed_texts(abstracts[:100])
    if on == "cpu":
        assert np.array_equal(vectors, reference)
    else:
        assert np.abs(vectors - reference).max() < 1e-5
