"""Dense retrieval: sentence-transformers embeddings searched with faiss.

Documents are embedded once per (corpus seal, model fingerprint, text fields) and cached
under ``corpora/<id>/index/embeddings/<key>/embeddings.npy`` (unit vectors, so inner
product = cosine); the texts themselves go through the vector store
(:func:`backtest.text.vectors.embed_cached`), so a paper another corpus already embedded
is not embedded again. The model is a
setting: the packaged ``all-MiniLM-L6-v2`` by default, or any sentence-transformers
folder on disk.

Index kinds (``index=``):

- ``auto`` (default): ``flat`` up to ``exact_max_docs`` documents (``EXACT_MAX_DOCS``,
  1,000,000: every corpus of today, 311k papers at most, is searched exactly), the
  approximate ``ann`` kind (``hnsw``) above it. The spec's ``params.index`` names the
  search actually used, and ``params.selected`` says when the threshold chose it.
  ``bench/bench_retrieval.py`` measures HNSW's recall@8 against exact (goal >= 0.98).
- ``flat``: ``faiss.IndexFlatIP``, exact; built in memory from the
  cached embeddings (it *is* the embeddings, nothing more to store).
- ``hnsw``: ``faiss.IndexHNSWFlat`` (inner product), approximate, for large
  corpora; ``hnsw_m`` and ``ef_construction`` are part of the cache key
  (``index/dense/<key>/faiss.index``), ``ef_search`` is a query-time setting.
- ``ivf``: ``faiss.IndexIVFFlat`` (inner product) trained with faiss's k-means
  (fixed seed); ``nlist`` in the key, ``nprobe`` at query time.

Hits are re-sorted by (score descending, row ascending) so ties are deterministic.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence, TypedDict

import numpy as np

from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_writer
from backtest.retrieve.index_store import has_valid, open_or_build
from backtest.retrieve.protocol import FutureDocs, Hit, RetrieverSpec
from backtest.text.embed import DEFAULT_MODEL, embed_texts, model_fingerprint
from backtest.text.vectors import embed_cached

INDEX_KINDS = ("auto", "flat", "hnsw", "ivf")
EXACT_MAX_DOCS = 1_000_000
"""Above this many documents ``index="auto"`` searches an approximate index instead of exact flat."""
ANN_KINDS = ("hnsw", "ivf")
DEFAULT_ANN = "hnsw"
HNSW_DEFAULTS = {"hnsw_m": 32, "ef_construction": 200, "ef_search": 128}
"""HNSW parameters (recall@8 against exact measured by ``bench/bench_retrieval.py``)."""


def resolve_index(index: str, n_docs: int, exact_max_docs: int = EXACT_MAX_DOCS, ann: str = DEFAULT_ANN) -> str:
    """The faiss index kind searched for ``n_docs`` documents: ``index`` itself, or for ``auto`` flat
    up to ``exact_max_docs`` documents and ``ann`` above."""
    if index not in INDEX_KINDS:
        raise BadInput(f"dense index {index!r}: choose one of {', '.join(INDEX_KINDS)}")
    if ann not in ANN_KINDS:
        raise BadInput(f"dense ann {ann!r}: choose one of {', '.join(ANN_KINDS)}")
    if isinstance(exact_max_docs, bool) or not isinstance(exact_max_docs, int) or exact_max_docs < 0:
        raise BadInput(f"dense exact_max_docs must be a whole number >= 0, not {exact_max_docs!r}")
    if index != "auto":
        return index
    return "flat" if n_docs <= exact_max_docs else ann


def _faiss():
    try:
        import faiss
    except ImportError:
        raise BadInput("dense retrieval needs faiss (pip install 'faiss-cpu>=1.8,<2')") from None
    return faiss


class EmbeddingParams(TypedDict):
    """:func:`embedding_params`: the parameters an embedding cache key hashes."""

    model: str
    model_fingerprint: str
    text_fields: list[str]
    normalized: bool


def embedding_params(model: str = DEFAULT_MODEL, text_fields: Sequence[str] = ("title", "abstract")) -> EmbeddingParams:
    """What identifies a corpus embedding (the cache key's parameters)."""
    return {
        "model": model,
        "model_fingerprint": model_fingerprint(model),
        "text_fields": list(text_fields),
        "normalized": True,
    }


def corpus_embeddings(
    docs: FutureDocs,
    model: str = DEFAULT_MODEL,
    text_fields: Sequence[str] = ("title", "abstract"),
    progress: bool = False,
) -> tuple[np.ndarray, str, EmbeddingParams]:
    """The (n, d) unit vectors of every document, from the cache or freshly embedded; also the cache key and params."""
    params = embedding_params(model, text_fields)

    def build(folder: Path) -> None:
        texts = docs.texts(text_fields)
        vectors, _ = embed_cached(texts, model, params["model_fingerprint"], docs.ws, progress=progress)
        with atomic_writer(folder / "embeddings.npy", "wb") as handle:
            np.save(handle, vectors, allow_pickle=False)

    folder, key, _ = open_or_build(docs, "embeddings", params, build)
    vectors = np.load(folder / "embeddings.npy", allow_pickle=False)
    return np.ascontiguousarray(vectors, dtype=np.float32), key, params


def embeddings_cached(
    docs: FutureDocs, model: str = DEFAULT_MODEL, text_fields: Sequence[str] = ("title", "abstract")
) -> bool:
    """True when valid embeddings of ``docs`` are cached (workspace or ``BACKTEST_INDEX_CACHE``)."""
    return has_valid(docs, "embeddings", embedding_params(model, text_fields))


class DenseRetriever:
    """Cosine search over sentence embeddings of a verified future corpus."""

    name = "dense"

    def __init__(
        self,
        docs: FutureDocs,
        model: str = DEFAULT_MODEL,
        text_fields: Sequence[str] = ("title", "abstract"),
        index: str = "auto",
        exact_max_docs: int = EXACT_MAX_DOCS,
        ann: str = DEFAULT_ANN,
        hnsw_m: int = HNSW_DEFAULTS["hnsw_m"],
        ef_construction: int = HNSW_DEFAULTS["ef_construction"],
        ef_search: int = HNSW_DEFAULTS["ef_search"],
        nlist: int | None = None,
        nprobe: int = 16,
        progress: bool = False,
        **_: Any,
    ):
        requested = index
        index = resolve_index(index, len(docs), exact_max_docs, ann)
        faiss = _faiss()
        self.docs = docs
        self.model = model
        self.vectors, self.embedding_key, emb_params = corpus_embeddings(docs, model, text_fields, progress)
        n, dim = self.vectors.shape
        self.kind = index
        self.params: dict[str, Any] = {
            "index": index,
            "text_fields": list(text_fields),
            "model_fingerprint": emb_params["model_fingerprint"],
            "embedding_key": self.embedding_key,
        }
        if requested == "auto" and index != "flat":
            self.params["selected"] = f"auto: {n} documents > exact_max_docs {exact_max_docs}"
        if index == "flat":
            self.key = self.embedding_key
            self.index = faiss.IndexFlatIP(dim)
            self.index.add(self.vectors)
            return
        if index == "hnsw":
            self.params.update(hnsw_m=hnsw_m, ef_construction=ef_construction)
        else:
            nlist = nlist or max(1, min(n // 39, int(4 * math.sqrt(n))))
            self.params.update(nlist=nlist)
        key_params: dict[str, Any] = dict(self.params, faiss=faiss.__version__)
        key_params.pop("selected", None)  # the same index whether chosen by name or by the threshold

        def build(folder: Path) -> None:
            if index == "hnsw":
                built = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
                built.hnsw.efConstruction = ef_construction
            else:
                built = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
                built.train(self.vectors)
            built.add(self.vectors)
            faiss.write_index(built, str(folder / "faiss.index"))

        folder, self.key, _built = open_or_build(docs, "dense", key_params, build)
        self.index = faiss.read_index(str(folder / "faiss.index"))
        if index == "hnsw":
            self.index.hnsw.efSearch = ef_search
            self.params["ef_search"] = ef_search
        else:
            self.index.nprobe = nprobe
            self.params["nprobe"] = nprobe

    def spec(self) -> RetrieverSpec:
        """Method, model, parameters and the index key."""
        return {"method": self.name, "model": self.model, "params": self.params, "index_key": self.key}

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``queries`` with this retriever's model."""
        return embed_texts(list(queries), model=self.model)

    def search_vectors(self, qvecs: np.ndarray, k: int) -> list[list[Hit]]:
        """Top ``k`` rows by inner product for each query vector, ties broken by row."""
        n = self.index.ntotal
        if n == 0 or len(qvecs) == 0:
            return [[] for _ in range(len(qvecs))]
        depth = min(n, k + 8)  # a little slack so equal scores at the cut are ordered by row
        scores, rows = self.index.search(np.ascontiguousarray(qvecs, dtype=np.float32), depth)
        out = []
        for srow, rrow in zip(scores, rows):
            pairs = sorted(((float(s), int(r)) for s, r in zip(srow, rrow) if r >= 0), key=lambda p: (-p[0], p[1]))
            out.append([(r, s) for s, r in pairs[:k]])
        return out

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top ``k`` documents by cosine similarity to each query."""
        return self.search_vectors(self.embed_queries(queries), k)
