"""The Retriever protocol, its registry, and the verified future-corpus view retrievers read.

Every retriever is built from a :class:`FutureDocs`: the documents of a *future*
corpus whose manifest seal and record hashes were verified just before. A past
corpus, a bare manifest or record, or a corpus that does not verify is refused
with :class:`~backtest.core.errors.CheckFailed` (exit 1) — retrieval never reads the
past side, and never trusts files it has not checked.

Documents are addressed by their row in the corpus file (``records.jsonl`` order,
fixed by the sealed build). Rankings break score ties by row, so every method is
deterministic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, TypedDict, runtime_checkable

import numpy as np

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.records import CorpusManifest
from backtest.core.registry import Registry
from backtest.core.seal import compute_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import RECORDS_FILE, verify_corpus
from backtest.corpus.store import CorpusStore, PastCorpus

# One ranked hit: (row in the corpus, score). Higher scores rank first.
Hit = tuple[int, float]


@dataclass
class FutureDocs:
    """The documents of one verified future corpus, in file order."""

    corpus_id: str
    seal: str
    manifest: CorpusManifest
    ws: Workspace
    ids: list[str]
    published: list[str]
    titles: list[str]
    abstracts: list[str]
    _row: dict[str, int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def row_of(self, identifier: str) -> int | None:
        """The row of a document id, or None."""
        if not self._row:
            self._row = {i: n for n, i in enumerate(self.ids)}
        return self._row.get(identifier)

    def text(self, row: int, fields: Sequence[str] = ("title", "abstract")) -> str:
        """The text a retriever indexes for ``row``: the chosen fields joined by a newline."""
        parts = {"title": self.titles[row], "abstract": self.abstracts[row]}
        return "\n".join(parts[f] for f in fields if parts.get(f))

    def texts(self, fields: Sequence[str] = ("title", "abstract")) -> list[str]:
        """:meth:`text` for every row."""
        return [self.text(r, fields) for r in range(len(self.ids))]


def check_future(corpus: Any, ws: Workspace | None = None, verify: bool = True) -> CorpusStore:
    """Return ``corpus`` if it is a future corpus whose seal and records verify; else CheckFailed.

    Accepts a :class:`CorpusStore` (as returned by ``open_future_corpus``) or a
    future :class:`CorpusManifest` together with ``ws``.
    """
    if isinstance(corpus, CorpusManifest):
        if corpus.role != "future":
            raise CheckFailed(
                f"corpus {corpus.corpus_id} has role {corpus.role!r}; retrievers read only a future corpus"
            )
        if ws is None:
            raise BadInput("a manifest needs its workspace to be opened")
        if compute_seal(corpus.model_dump(mode="json")) != corpus.seal:
            raise CheckFailed(f"corpus {corpus.corpus_id}: manifest seal does not verify; refusing to retrieve from it")
        corpus = CorpusStore(corpus, ws)
    if isinstance(corpus, PastCorpus) or not isinstance(corpus, CorpusStore):
        what = getattr(getattr(corpus, "manifest", None), "corpus_id", type(corpus).__name__)
        raise CheckFailed(f"{what}: retrievers read only a verified future corpus, not {type(corpus).__name__}")
    manifest = corpus.manifest
    if manifest.role != "future":
        raise CheckFailed(
            f"corpus {manifest.corpus_id} has role {manifest.role!r}; retrievers read only a future corpus"
        )
    if compute_seal(manifest.model_dump(mode="json")) != manifest.seal:
        raise CheckFailed(f"corpus {manifest.corpus_id}: manifest seal does not verify; refusing to retrieve from it")
    if verify:
        verify_corpus(manifest, corpus.ws).raise_if_failed()
    return corpus


def load_future_docs(corpus: Any, ws: Workspace | None = None, verify: bool = True) -> FutureDocs:
    """Check ``corpus`` with :func:`check_future` (seal and records verified), then read its documents."""
    store = check_future(corpus, ws, verify=verify)
    ids, dates, titles, abstracts = [], [], [], []
    with open(store.dir / RECORDS_FILE, encoding="utf-8") as handle:
        for line in handle:
            rec = json.loads(line)
            ids.append(rec["id"])
            dates.append(rec["published"])
            titles.append(rec.get("title", ""))
            abstracts.append(rec.get("abstract", ""))
    if len(ids) != store.manifest.n_records:
        raise CheckFailed(
            f"corpus {store.corpus_id}: {len(ids)} records on disk, manifest says {store.manifest.n_records}"
        )
    return FutureDocs(store.corpus_id, store.seal, store.manifest, store.ws, ids, dates, titles, abstracts)


def top_k(scores: np.ndarray, k: int, positive_only: bool = False) -> list[Hit]:
    """The ``k`` best rows of a score vector, score descending, ties broken by row ascending.

    ``positive_only`` drops rows scoring <= 0 (BM25: no query term in common).
    """
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return []
    k = min(k, n)
    threshold = scores[np.argpartition(scores, n - k)[n - k :]].min() if k < n else scores.min()
    candidates = np.flatnonzero(scores >= threshold)  # every row tied at the threshold, in row order
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    rows = candidates[order]
    return [(int(r), float(scores[r])) for r in rows if not positive_only or scores[r] > 0]


class RetrieverSpec(TypedDict):
    """:meth:`Retriever.spec`: what a retrieval record says about its retriever (``params`` are the method's)."""

    method: str
    model: str | None
    params: dict[str, Any]
    index_key: str


@runtime_checkable
class Retriever(Protocol):
    """A ranked search over one verified future corpus."""

    name: str

    def spec(self) -> RetrieverSpec:
        """The retriever's identity for records: method, model, parameters, index key."""
        ...

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The top ``k`` (row, score) hits of each query, best first."""
        ...


# name -> factory(docs, **settings) -> Retriever. Plugins: entry-point group ``backtest.retrievers``.
RETRIEVERS: Registry[Callable[..., Retriever]] = Registry(
    "retriever",
    "retrievers",
    {
        "bm25": "backtest.retrieve.bm25:BM25Retriever",
        "dense": "backtest.retrieve.dense:DenseRetriever",
        "hybrid": "backtest.retrieve.hybrid:HybridRetriever",
    },
)


def get_retriever(
    method: str, corpus: Any, ws: Workspace | None = None, verify: bool = True, **settings: Any
) -> Retriever:
    """Build (or load from the index cache) the retriever ``method`` over a verified future corpus.

    ``corpus`` may be a :class:`FutureDocs` already checked, a :class:`CorpusStore`
    or a future manifest; anything else, a past corpus or a corpus that does not
    verify raises CheckFailed. ``settings`` are the method's parameters (``model``,
    ``text_fields``, ``k1``, ``index``...).
    """
    factory = RETRIEVERS.get(method)
    docs = corpus if isinstance(corpus, FutureDocs) else load_future_docs(corpus, ws, verify=verify)
    if docs.manifest.role != "future":
        raise CheckFailed(
            f"corpus {docs.corpus_id} has role {docs.manifest.role!r}; retrievers read only a future corpus"
        )
    return factory(docs, **settings)
