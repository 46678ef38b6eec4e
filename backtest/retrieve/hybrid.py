"""Hybrid retrieval: reciprocal-rank fusion (RRF) of BM25 and dense rankings.

Each member ranks ``depth`` documents (default 100, at least k); a document's fused
score is ``sum over members of 1 / (rrf_k + rank)`` with ranks from 1 and
``rrf_k = 60`` (Cormack et al., 2009). Ties are broken by row.
"""

from __future__ import annotations

from typing import Any, Sequence

from backtest.retrieve.bm25 import BM25Retriever
from backtest.retrieve.dense import DenseRetriever
from backtest.retrieve.protocol import FutureDocs, Hit, RetrieverSpec
from backtest.text.embed import DEFAULT_MODEL


def rrf_fuse(rankings: Sequence[Sequence[Hit]], k: int, rrf_k: int = 60) -> list[Hit]:
    """Fuse ranked hit lists by reciprocal rank; return the top ``k`` (row, fused score)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (row, _) in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


class HybridRetriever:
    """RRF of :class:`BM25Retriever` and :class:`DenseRetriever` over the same corpus."""

    name = "hybrid"

    def __init__(
        self,
        docs: FutureDocs,
        model: str = DEFAULT_MODEL,
        text_fields: Sequence[str] = ("title", "abstract"),
        rrf_k: int = 60,
        depth: int = 100,
        progress: bool = False,
        **dense_settings: Any,
    ):
        self.bm25 = BM25Retriever(docs, text_fields=text_fields)
        self.dense = DenseRetriever(docs, model=model, text_fields=text_fields, progress=progress, **dense_settings)
        self.model = model
        self.rrf_k = rrf_k
        self.depth = depth

    def spec(self) -> RetrieverSpec:
        """Both members' specs plus the fusion parameters."""
        return {
            "method": self.name,
            "model": self.model,
            "params": {
                "fusion": "reciprocal-rank",
                "rrf_k": self.rrf_k,
                "depth": self.depth,
                "bm25": self.bm25.spec(),
                "dense": self.dense.spec(),
            },
            "index_key": f"{self.bm25.key}+{self.dense.key}",
        }

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top ``k`` by fused reciprocal rank."""
        depth = max(k, self.depth)
        sparse = self.bm25.search(queries, depth)
        dense = self.dense.search(queries, depth)
        return [rrf_fuse([a, b], k, self.rrf_k) for a, b in zip(sparse, dense)]
