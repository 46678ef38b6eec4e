"""The streamed BM25 build (``build_okapi_index``) is the very index the in-memory bm25s build made.

On real papers (three arxiv-archive-2020 files built as a sealed future corpus, and the
astro-2025-ep future corpus through ``BM25Retriever``): the same CSC arrays bit for bit, the same
vocabulary, the same saved files, for batch sizes down to one document; and the streamed build
never holds more than the current document's token list.
"""

from __future__ import annotations

import random
import weakref
from pathlib import Path

import numpy as np
import pytest

from backtest.core.errors import BadInput
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus
from backtest.corpus.future import open_future_corpus
from backtest.corpus.instance import load_instance
from backtest.corpus.store import CorpusStore
from backtest.retrieve import get_retriever, load_future_docs
from backtest.retrieve.bm25 import build_okapi_index, build_okapi_index_in_memory, okapi_scores, tokenize
from backtest.retrieve.protocol import top_k

from .conftest import ARCHIVE, needs_shared


def assert_same_index(streamed, reference) -> None:
    for name in ("data", "indices", "indptr"):
        got, want = streamed.scores[name], reference.scores[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), name
    assert streamed.scores["num_docs"] == reference.scores["num_docs"]
    assert list(streamed.vocab_dict.items()) == list(reference.vocab_dict.items())


@pytest.fixture(scope="module")
def archive_docs(tmp_path_factory):
    """Three real arxiv-archive-2020 files (about 2,000 papers) as a sealed future corpus."""
    if not ARCHIVE.is_dir():
        pytest.skip(f"arxiv-archive-2020 not found at {ARCHIVE}")
    ws = Workspace(tmp_path_factory.mktemp("archive3"))
    files = sorted(ARCHIVE.glob("*.tsv.xz"))[:3]
    build_corpus(BuildOptions("arxiv-archive", files, "arxiv-first3", "future"), ws)
    return load_future_docs(CorpusStore.open("arxiv-first3", ws))


@needs_shared
@pytest.mark.parametrize("batch_docs", [4096, 97, 1])
def test_streamed_build_equals_the_in_memory_build_on_real_papers(archive_docs, batch_docs, tmp_path):
    tokens = [tokenize(archive_docs.text(r)) for r in range(len(archive_docs))]
    assert len(tokens) > 1500
    tokens.insert(7, [])  # an empty document in the middle (a batch of only it when batch_docs is 1)
    reference = build_okapi_index_in_memory(tokens)
    streamed = build_okapi_index(iter(tokens), batch_docs=batch_docs)
    assert_same_index(streamed, reference)
    # the epsilon floor is exercised: some term is in over half of the documents
    assert (np.diff(reference.scores["indptr"]) > len(tokens) / 2).any()
    for text in [archive_docs.titles[r] for r in random.Random(3).sample(range(len(archive_docs)), 20)]:
        q = tokenize(text)
        want = okapi_scores(reference, q)
        assert np.array_equal(okapi_scores(streamed, q), want)
        assert top_k(okapi_scores(streamed, q), 8, positive_only=True) == top_k(want, 8, positive_only=True)
    if batch_docs == 4096:
        reference.save(str(tmp_path / "a"), show_progress=False)
        streamed.save(str(tmp_path / "b"), show_progress=False)
        names = sorted(p.name for p in (tmp_path / "a").iterdir())
        assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
        for name in names:
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@needs_shared
def test_the_retriever_builds_by_streaming_the_same_index_files(astro_ep_ws, copy_ws, monkeypatch, tmp_path):
    monkeypatch.delenv("BACKTEST_INDEX_CACHE", raising=False)
    ws = copy_ws(astro_ep_ws)
    docs = load_future_docs(open_future_corpus(load_instance("astro-2025-ep", ws), ws))
    retriever = get_retriever("bm25", docs)
    assert retriever.built
    reference = build_okapi_index_in_memory([tokenize(docs.text(r)) for r in range(len(docs))])
    reference.save(str(tmp_path / "ref"), show_progress=False)
    for path in sorted((tmp_path / "ref").iterdir()):
        assert (Path(retriever.folder) / path.name).read_bytes() == path.read_bytes(), path.name


class Tokens(list):
    """A token list that can be watched with a weak reference."""


def test_the_streamed_build_holds_no_token_list_but_the_current_one():
    alive: list[weakref.ref] = []
    most = 0
    rng = random.Random(5)
    words = [f"w{i}" for i in range(300)]

    def documents():
        nonlocal most
        for _ in range(500):
            doc = Tokens(rng.choices(words, k=rng.randint(0, 40)))
            alive.append(weakref.ref(doc))
            most = max(most, sum(r() is not None for r in alive))
            yield doc
            del doc

    streamed = build_okapi_index(documents(), batch_docs=50)
    assert streamed.scores["num_docs"] == 500
    assert most <= 2, most  # the one being consumed and the one just made
    most = 0
    alive.clear()
    rng.seed(5)
    build_okapi_index_in_memory(list(documents()))
    assert most == 500  # the reference holds them all: the count above can tell the difference


def test_bad_input_is_one_line():
    with pytest.raises(BadInput, match="no indexable token"):
        build_okapi_index(iter([[], []]))
    with pytest.raises(BadInput, match="batch_docs must be at least 1"):
        build_okapi_index([["alpha"]], batch_docs=0)
