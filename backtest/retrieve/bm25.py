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

import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backtest.core.errors import BadInput
from backtest.retrieve.index_store import open_or_build
from backtest.retrieve.protocol import FutureDocs, Hit, top_k

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


def build_okapi_index(token_lists: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
    """A bm25s index over tokenised documents whose scores equal ``BM25Okapi(k1, b, epsilon)``'s.

    The vocabulary numbers tokens in order of first appearance, so the index is
    the same on every run.
    """
    bm25s = _bm25s()
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in tokens] for tokens in token_lists]
    if not vocab:
        raise BadInput("bm25: the corpus has no indexable token")
    model = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="bm25l", dtype=DTYPE)
    model.index((ids, vocab), create_empty_token=False, show_progress=False)
    indptr = model.scores["indptr"]
    n_docs = model.scores["num_docs"]
    df = np.diff(indptr).astype(np.float64)
    bm25l_idf = np.log((n_docs + 1) / (df + 0.5))
    okapi_idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    okapi_idf[okapi_idf < 0] = epsilon * okapi_idf.mean()
    factor = okapi_idf / bm25l_idf
    model.scores["data"] = model.scores["data"] * np.repeat(factor, np.diff(indptr))
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
            tokens = [tokenize(docs.text(r, self.text_fields)) for r in range(len(docs))]
            build_okapi_index(tokens, k1, b, epsilon).save(str(folder), show_progress=False)

        self.folder, self.key, self.built = open_or_build(docs, "bm25", self.params, build)
        self.model = bm25s.BM25.load(str(self.folder), mmap=False, show_progress=False)

    def spec(self) -> dict[str, Any]:
        """Method, model (none), parameters and the index key."""
        return {"method": self.name, "model": None, "params": self.params, "index_key": self.key}

    def scores(self, query: str) -> np.ndarray:
        """BM25 scores of every document for ``query``."""
        return okapi_scores(self.model, tokenize(query))

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top ``k`` documents with a positive score, ties broken by row."""
        return [top_k(self.scores(q), k, positive_only=True) for q in queries]
