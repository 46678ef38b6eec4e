"""Sparse BM25 retrieval on ``bm25s``, scoring exactly like rank-bm25's ``BM25Okapi``.

Tokenisation (``TOKENIZER``): lower-case, tokens are runs of two or more word
characters (regex ``(?u)\\b\\w\\w+\\b``, bm25s's and scikit-learn's default),
bm25s's English stopword list removed, no stemming. Queries are tokenised the
same way; a repeated query token counts once per occurrence, tokens unknown to the
corpus are ignored.

Scoring is Okapi BM25 as in ``rank_bm25.BM25Okapi`` (the reference the tests
compare against to 1e-6): ``idf(t) = ln((N - df + 0.5) / (df + 0.5))``, negative
idfs (terms in more than half of the documents) replaced by ``epsilon`` × the mean
idf over the vocabulary, and term weight ``idf · tf·(k1+1) / (tf + k1·(1 - b + b·|d|/avgdl))``.
No single bm25s ``method`` is this: ``atire`` has the right term-frequency part but
idf ``ln(N/df)``; ``robertson`` has the right idf but clamps negatives to 0 and
drops the ``(k1+1)`` factor. So the index is built with ``method="atire"`` and the
always-positive ``idf_method="bm25l"`` (``ln((N+1)/(df+0.5))``), and each term's
column of the sparse score matrix is then rescaled by ``okapi_idf / bm25l_idf``
(a column's stored entries are its document frequency). Scores are float64.
Documents scoring 0 (no query term in common) are never returned.
"""

from __future__ import annotations

import math
import re
from array import array
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from backtest.core.errors import BadInput
from backtest.retrieve.index_store import open_or_build
from backtest.retrieve.protocol import FutureDocs, Hit, RetrieverSpec, top_k

TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
TOKENIZER = "lower+regex(?u)\\b\\w\\w+\\b+bm25s-stopwords-en+no-stem"
DTYPE = "float64"


def _bm25s():
    try:
        import bm25s
    except ImportError:
        raise BadInput("bm25 retrieval needs bm25s (pip install 'bm25s>=0.2.6,<0.4')") from None
    return bm25s


_STOPWORDS: frozenset[str] | None = None


def tokenize(text: str) -> list[str]:
    """The BM25 tokens of ``text`` (see the module docstring for the rule)."""
    global _STOPWORDS
    if _STOPWORDS is None:
        from bm25s.stopwords import STOPWORDS_EN

        _STOPWORDS = frozenset(STOPWORDS_EN)
    return [t for t in TOKEN_RE.findall(text.lower()) if t not in _STOPWORDS]


STREAM_BATCH_DOCS = 4096


def _okapi_factor(indptr: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """Per term: Okapi's idf over the ``bm25l`` idf the ``atire`` index was built with (epsilon floor applied)."""
    df = np.diff(indptr).astype(np.float64)
    bm25l_idf = np.log((n_docs + 1) / (df + 0.5))
    okapi_idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    okapi_idf[okapi_idf < 0] = epsilon * okapi_idf.mean()
    return okapi_idf / bm25l_idf


def build_okapi_index_in_memory(
    token_lists: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
):
    """The same index as :func:`build_okapi_index`, built by ``bm25s.BM25.index`` from every document's
    token-id list held at once (the reference the streamed build is tested against; ~10 bytes of Python
    objects per token, so it needs several GB at 300k papers)."""
    bm25s = _bm25s()
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in tokens] for tokens in token_lists]
    if not vocab:
        raise BadInput("bm25: the corpus has no indexable token")
    model = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="bm25l", dtype=DTYPE)
    model.index((ids, vocab), create_empty_token=False, show_progress=False)
    indptr = model.scores["indptr"]
    factor = _okapi_factor(indptr, model.scores["num_docs"], epsilon)
    model.scores["data"] = model.scores["data"] * np.repeat(factor, np.diff(indptr))
    return model


def _batch_postings(ids: array, lengths: array, first_doc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc, term, tf) of one batch's distinct (document, term) pairs, sorted by document then term."""
    terms = np.frombuffer(ids, dtype=np.int32).astype(np.int64)
    docs = np.repeat(np.arange(len(lengths), dtype=np.int64), np.frombuffer(lengths, dtype=np.int64))
    pairs, tf = np.unique((docs << 32) | terms, return_counts=True)
    return (
        ((pairs >> 32) + first_doc).astype(np.int32),
        (pairs & 0xFFFFFFFF).astype(np.int32),
        tf.astype(np.uint16 if tf.max(initial=0) <= np.iinfo(np.uint16).max else np.int32),
    )


def build_okapi_index(
    token_lists: Iterable[Sequence[str]],
    k1: float = 1.5,
    b: float = 0.75,
    epsilon: float = 0.25,
    batch_docs: int = STREAM_BATCH_DOCS,
):
    """A bm25s index over tokenised documents whose scores equal ``BM25Okapi(k1, b, epsilon)``'s.

    ``token_lists`` is consumed one document at a time (a generator keeps memory bounded): each
    batch of ``batch_docs`` documents becomes (document, term, term frequency) arrays of its distinct
    pairs (int32, int32, uint16: 10 bytes per posting instead of every document's token list), which
    a counting sort then places batch by batch into the CSC columns, freeing each batch as it goes.
    The scores are computed in bm25s's CSC layout with bm25s's own ``atire`` /
    ``bm25l`` arithmetic, operation for operation, and rescaled to Okapi's idf: the arrays, the
    vocabulary and the saved files are bit-identical to :func:`build_okapi_index_in_memory`'s
    (tested). The vocabulary numbers tokens in order of first appearance, so the index is the same
    on every run.
    """
    bm25s = _bm25s()
    if batch_docs < 1:
        raise BadInput(f"bm25: batch_docs must be at least 1, not {batch_docs}")
    vocab: dict[str, int] = {}
    setdefault = vocab.setdefault
    pieces: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] = ([], [], [])  # doc, term, tf
    doc_lengths = array("q")
    ids, lengths = array("i"), array("q")
    for tokens in token_lists:
        ids.extend([setdefault(t, len(vocab)) for t in tokens])
        lengths.append(len(tokens))
        if len(lengths) == batch_docs:
            for part, values in zip(pieces, _batch_postings(ids, lengths, len(doc_lengths))):
                part.append(values)
            doc_lengths.extend(lengths)
            ids, lengths = array("i"), array("q")
    if lengths:
        for part, values in zip(pieces, _batch_postings(ids, lengths, len(doc_lengths))):
            part.append(values)
        doc_lengths.extend(lengths)
    del ids, lengths
    if not vocab:
        raise BadInput("bm25: the corpus has no indexable token")
    n_docs, n_vocab = len(doc_lengths), len(vocab)

    doc_parts, term_parts, tf_parts = pieces
    df = np.zeros(n_vocab, dtype=np.int64)
    for batch_terms in term_parts:
        df += np.bincount(batch_terms, minlength=n_vocab)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    # CSC order is (term, document): a counting sort, batch by batch, freeing each batch once placed.
    # Postings come in document order and a stable sort within a batch keeps it, so every column
    # ends up with its documents ascending, as bm25s's sort of (term, document) pairs leaves them.
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    tf_sorted = np.empty(len(indices), dtype=np.result_type(*tf_parts))
    heads = indptr[:-1].copy()
    empty = np.empty(0, dtype=np.int32)
    for i, terms in enumerate(term_parts):
        docs_b, tf_b = doc_parts[i], tf_parts[i]
        term_parts[i] = doc_parts[i] = tf_parts[i] = empty
        if not len(terms):  # a batch of empty documents
            continue
        order = np.argsort(terms, kind="stable")
        ts = terms[order]
        starts = np.flatnonzero(np.concatenate(([True], ts[1:] != ts[:-1])))
        counts = np.diff(np.append(starts, len(ts)))
        dest = heads[ts] + (np.arange(len(ts)) - np.repeat(starts, counts))
        indices[dest] = docs_b[order]
        tf_sorted[dest] = tf_b[order]
        heads[ts[starts]] += counts
    del pieces, doc_parts, term_parts, tf_parts, heads
    # bm25s (scoring._build_scores_and_indices_for_matrix, method "atire", idf "bm25l", float64):
    #   idf = log((N + 1) / (df + 0.5)) with math.log; tfc = tf*(k1+1) / (tf + k1*(1 - b + b*|d|/avgdl))
    lengths_all = np.frombuffer(doc_lengths, dtype=np.int64)
    avg_doc_len = lengths_all.mean()
    doc_norm = k1 * ((1 - b) + b * lengths_all.astype(np.float64) / avg_doc_len)
    del doc_lengths, lengths_all
    idf = np.array([math.log((n_docs + 1) / (int(d) + 0.5)) for d in df], dtype=np.float64)
    factor = _okapi_factor(indptr, n_docs, epsilon)
    data = np.empty(len(indices), dtype=np.float64)
    step = 1 << 20
    for start in range(0, len(data), step):
        sl = slice(start, start + step)
        tf = tf_sorted[sl].astype(np.float64)
        t = np.searchsorted(indptr, np.arange(start, start + len(tf)), side="right") - 1  # each posting's term
        data[sl] = (idf[t] * ((tf * (k1 + 1)) / (tf + doc_norm[indices[sl]]))) * factor[t]
    del tf_sorted
    model = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="bm25l", dtype=DTYPE)
    model.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
    model.vocab_dict = vocab
    model.nonoccurrence_array = None
    model.unique_token_ids_set = set(vocab.values())
    return model


def okapi_scores(model, query_tokens: Sequence[str]) -> np.ndarray:
    """The score of every document for a tokenised query (unknown tokens ignored)."""
    vocab = model.vocab_dict
    ids = [vocab[t] for t in query_tokens if t in vocab]
    if not ids:
        return np.zeros(model.scores["num_docs"], dtype=DTYPE)
    return model.get_scores_from_ids(ids)


class BM25Retriever:
    """Okapi BM25 over the title and abstract of a verified future corpus, cached on disk."""

    name = "bm25"

    def __init__(
        self,
        docs: FutureDocs,
        text_fields: Sequence[str] = ("title", "abstract"),
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        model: str | None = None,
        **_: Any,
    ):
        bm25s = _bm25s()
        self.docs = docs
        self.text_fields = list(text_fields)
        self.params = {
            "k1": k1,
            "b": b,
            "epsilon": epsilon,
            "variant": "okapi (= rank_bm25.BM25Okapi)",
            "tokenizer": TOKENIZER,
            "text_fields": self.text_fields,
            "dtype": DTYPE,
            "bm25s": bm25s.__version__,
        }

        def build(folder: Path) -> None:
            tokens = (tokenize(docs.text(r, self.text_fields)) for r in range(len(docs)))  # streamed
            build_okapi_index(tokens, k1, b, epsilon).save(str(folder), show_progress=False)

        self.folder, self.key, self.built = open_or_build(docs, "bm25", self.params, build)
        self.model = bm25s.BM25.load(str(self.folder), mmap=False, show_progress=False)

    def spec(self) -> RetrieverSpec:
        """Method, model (none), parameters and the index key."""
        return {"method": self.name, "model": None, "params": self.params, "index_key": self.key}

    def scores(self, query: str) -> np.ndarray:
        """BM25 scores of every document for ``query``."""
        return okapi_scores(self.model, tokenize(query))

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top ``k`` documents with a positive score, ties broken by row."""
        return [top_k(self.scores(q), k, positive_only=True) for q in queries]
