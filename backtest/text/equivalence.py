"""Equivalence rules: when are two questions (or hypotheses) "the same"?

A rule turns a list of texts into a symmetric similarity matrix and says two texts
are the same when their similarity is at or above its ``threshold``. Rules live in
one registry (:func:`register_rule` / :func:`get_rule`) so other modules can add
their own (an LLM same/different judge, say) without touching this file.

Registered here:

- ``tfidf``: scikit-learn ``TfidfVectorizer`` (sublinear tf, English stop words)
  fitted on the texts being compared; cosine; same if >= 0.25.
- ``embedding``: sentence embeddings from :mod:`backtest.text.embed` (offline
  all-MiniLM-L6-v2 by default); cosine; same if >= 0.77. Vectors are cached on
  disk, keyed by the model fingerprint and the exact texts, when a cache folder is
  given.

Grouping (:func:`clusters`):

- ``components`` (default): connected components of the "same" graph. Transitive:
  A~B and B~C put A and C together even when A and C are not the same.
- ``complete``: complete-linkage agglomerative clustering cut at the threshold, so
  every pair inside a cluster is "same". Never merges more than ``components``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from backtest.core.errors import BadInput
from backtest.core.registry import Registry
from backtest.core.seal import sha256_json

CLUSTER_METHODS = ("components", "complete")


@runtime_checkable
class EquivalenceRule(Protocol):
    """A same/different rule over texts: a similarity matrix and a threshold."""

    @property
    def name(self) -> str:
        """The rule's name in reports."""
        ...

    @property
    def threshold(self) -> float:
        """Similarity at or above which two texts are the same."""
        ...

    def similarity_matrix(self, texts: Sequence[str]) -> np.ndarray:
        """Symmetric (n, n) similarities; two texts are the same when >= ``threshold``."""
        ...


RuleFactory = Callable[..., EquivalenceRule]
# Rules (``--rule NAME``). Plugins: entry-point group ``backtest.equivalence_rules``.
RULES: Registry[RuleFactory] = Registry(
    "equivalence rule",
    "equivalence_rules",
    {
        "tfidf": "backtest.text.equivalence:TfidfRule",
        "embedding": "backtest.text.equivalence:EmbeddingRule",
        "llm": "backtest.text.equivalence_llm:LLMEquivalenceRule",
    },
    makes=EquivalenceRule,
)


def register_rule(name: str, factory: RuleFactory, replace: bool = False) -> None:
    """Register ``factory(**options) -> EquivalenceRule`` under ``name``."""
    RULES.add(name, factory, replace=replace)


def available_rules() -> list[str]:
    """Names of the registered rules, sorted."""
    return RULES.names()


def get_rule(name: str, **options: Any) -> EquivalenceRule:
    """Build the rule registered as ``name`` with ``options`` (e.g. ``threshold=0.3``); BadInput, one line, when
    what its factory makes is no :class:`EquivalenceRule`."""
    made: EquivalenceRule = RULES.make(name, **options)
    return made


# --------------------------------------------------------------------------- rules


@dataclass
class TfidfRule:
    """TF-IDF cosine (sublinear tf, English stop words), fitted on the compared texts."""

    threshold: float = 0.25
    name: str = "tfidf"

    def vectors(self, texts: Sequence[str]):
        """Sparse L2-normalised TF-IDF rows (an all-stop-word text gives a zero row)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not texts:
            return np.zeros((0, 0), dtype=np.float64)
        vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
        try:
            return vectorizer.fit_transform(list(texts))
        except ValueError:  # empty vocabulary: nothing but stop words
            return np.zeros((len(texts), 1), dtype=np.float64)

    def row_vectors(self, texts: Sequence[str]):
        """The TF-IDF rows and the clip range of their inner products (for blocked comparison)."""
        return self.vectors(texts), (0.0, 1.0)

    def similarity_matrix(self, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarities of the TF-IDF rows."""
        matrix = self.vectors(texts)
        sims = matrix @ matrix.T
        sims = sims.toarray() if hasattr(sims, "toarray") else np.asarray(sims)
        return np.clip(sims.astype(np.float64), 0.0, 1.0)


@lru_cache(maxsize=4)
def _fingerprint(model: str) -> str:
    from backtest.text.embed import model_fingerprint

    return model_fingerprint(model)


@dataclass
class EmbeddingRule:
    """Sentence-embedding cosine with a sentence-transformers model (offline MiniLM by default).

    ``cache_dir``: when set, the vectors of a text list are stored there as ``.npy``
    under a key made of the model fingerprint and the sha256 of the texts.
    """

    threshold: float = 0.77
    model: str = ""
    cache_dir: Path | None = None
    name: str = "embedding"
    _memo: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def embeddings(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) unit vectors for ``texts``, from the in-memory memo, the disk cache or the model."""
        from backtest.text.embed import DEFAULT_MODEL, cached_embeddings, embed_texts

        model = self.model or DEFAULT_MODEL
        key = sha256_json({"model": _fingerprint(model), "texts": list(texts)})
        if key in self._memo:
            return self._memo[key]
        if self.cache_dir is not None:
            vectors = cached_embeddings(list(texts), Path(self.cache_dir) / f"equiv-{key[:32]}.npy", model=model)
        else:
            vectors = embed_texts(list(texts), model=model)
        self._memo[key] = vectors
        return vectors

    def row_vectors(self, texts: Sequence[str]):
        """The unit vectors and the clip range of their inner products (for blocked comparison)."""
        return self.embeddings(texts), (-1.0, 1.0)

    def similarity_matrix(self, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarities (inner products of unit vectors)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float64)
        vectors = self.embeddings(texts)
        return np.clip((vectors @ vectors.T).astype(np.float64), -1.0, 1.0)


# --------------------------------------------------------------------------- helpers


def pairs_above(
    texts: Sequence[str], rule: EquivalenceRule, sims: np.ndarray | None = None
) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, similarity)`` with ``i < j`` that the rule calls the same, in (i, j) order.

    Pass ``sims`` to reuse an already computed similarity matrix.
    """
    matrix = np.asarray(rule.similarity_matrix(texts) if sims is None else sims, dtype=np.float64)
    rows, cols = np.nonzero(np.triu(matrix >= rule.threshold, k=1))
    return [(int(i), int(j), float(matrix[i, j])) for i, j in zip(rows, cols)]


def pairs_above_all(
    texts: Sequence[str], rules: Sequence[EquivalenceRule], prefilter: bool = True, stats: dict[str, Any] | None = None
) -> list[tuple[int, int, dict[str, float]]]:
    """Pairs that *every* rule calls the same, with each rule's similarity: ``(i, j, {rule: sim})``.

    With ``prefilter`` (default) the rules run in the order given and each later rule
    only sees the texts that still belong to a candidate pair, so put the cheap rule
    (``tfidf``) first and the costly one (``embedding``) last. The result is the
    same as without it: a pair must pass every rule anyway. ``stats`` (if given)
    receives how many texts each rule was run on.

    Memory stays bounded: a rule with row vectors (``row_vectors``) is compared in
    blocks of rows and only pairs at or above its threshold are kept, so no n×n matrix
    is ever built (:func:`similar_pairs`).
    """
    n = len(texts)
    if not rules or n < 2:
        return []
    alive: list[tuple[int, int]] | None = None  # pairs (i < j) every rule so far calls the same; None: all pairs
    found: dict[str, dict[tuple[int, int], float]] = {}
    for rule in rules:
        subset = sorted({k for pair in alive for k in pair}) if (prefilter and alive is not None) else list(range(n))
        if stats is not None:
            stats[rule.name] = len(subset)
        local = {g: k for k, g in enumerate(subset)}
        wanted = None if alive is None else [(local[i], local[j]) for i, j in alive]
        sims = {
            (subset[a], subset[b]): v for (a, b), v in similar_pairs([texts[i] for i in subset], rule, wanted).items()
        }
        alive = sorted(p for p in (sims if alive is None else alive) if sims.get(p, -np.inf) >= rule.threshold)
        found[rule.name] = sims
    return [
        (i, j, {name: round(float(sims.get((i, j), 0.0)), 6) for name, sims in found.items()}) for i, j in alive or []
    ]


def similar_pairs(
    texts: Sequence[str], rule: EquivalenceRule, wanted: Sequence[tuple[int, int]] | None = None, block: int = 512
) -> dict[tuple[int, int], float]:
    """``{(i, j): similarity}`` for ``i < j``: every pair at or above the rule's threshold,
    or just the ``wanted`` pairs.

    A rule with ``row_vectors(texts) -> (matrix, (lo, hi))`` (rows whose inner products are
    its similarities, clipped to [lo, hi]) is computed ``block`` rows at a time; any other
    rule through its full ``similarity_matrix``.
    """
    m = len(texts)
    if m < 2 or (wanted is not None and not wanted):
        return {}
    row_vectors = getattr(rule, "row_vectors", None)
    if row_vectors is None:
        full = np.asarray(rule.similarity_matrix(texts), dtype=np.float64)
        if wanted is None:
            rows, cols = np.nonzero(np.triu(full >= rule.threshold, k=1))
            wanted = list(zip(rows.tolist(), cols.tolist()))
        return {(i, j): float(full[i, j]) for i, j in wanted}
    vectors, (lo, hi) = row_vectors(texts)
    by_row: dict[int, list[int]] = {}
    for i, j in wanted or []:
        by_row.setdefault(i, []).append(j)
    out: dict[tuple[int, int], float] = {}
    for start in range(0, m, block):
        stop = min(m, start + block)
        if wanted is not None and not any(i in by_row for i in range(start, stop)):
            continue
        chunk = vectors[start:stop] @ vectors.T
        chunk = np.clip(
            (chunk.toarray() if hasattr(chunk, "toarray") else np.asarray(chunk)).astype(np.float64), lo, hi
        )
        if wanted is None:
            rows, cols = np.nonzero(chunk >= rule.threshold)
            out.update(
                ((start + a, b), float(chunk[a, b])) for a, b in zip(rows.tolist(), cols.tolist()) if b > start + a
            )
        else:
            out.update(((i, j), float(chunk[i - start, j])) for i in range(start, stop) for j in by_row.get(i, ()))
    return out


def clusters(texts: Sequence[str], rule: EquivalenceRule, method: str = "components") -> list[list[int]]:
    """Group texts into distinct clusters under ``rule``; each cluster is a sorted index list.

    Clusters are ordered by their smallest index, so results are deterministic.
    ``components``: connected components of the same-graph (networkx).
    ``complete``: complete-linkage clustering (scipy) cut at distance ``1 - threshold``,
    so every pair within a cluster is the same.
    """
    n = len(texts)
    if n == 0:
        return []
    if method not in CLUSTER_METHODS:
        raise BadInput(f"unknown clustering method {method!r}; known: {', '.join(CLUSTER_METHODS)}")
    sims = np.asarray(rule.similarity_matrix(texts), dtype=np.float64)
    if method == "components":
        import networkx as nx

        graph = nx.Graph()
        graph.add_nodes_from(range(n))
        graph.add_edges_from((i, j) for i, j, _ in pairs_above(texts, rule, sims=sims))
        groups = [sorted(c) for c in nx.connected_components(graph)]
    else:
        groups = _complete_linkage(sims, rule.threshold)
    return sorted(groups, key=lambda g: g[0])


def _complete_linkage(sims: np.ndarray, threshold: float) -> list[list[int]]:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    n = sims.shape[0]
    if n == 1:
        return [[0]]
    distance = np.clip(1.0 - sims, 0.0, None)
    distance = (distance + distance.T) / 2.0
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="complete")
    # same iff sim >= threshold, i.e. distance <= 1 - threshold; a tiny epsilon keeps ties "same".
    labels = fcluster(tree, t=1.0 - threshold + 1e-12, criterion="distance")
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        groups.setdefault(int(label), []).append(index)
    return [sorted(g) for g in groups.values()]


def n_distinct(texts: Sequence[str], rule: EquivalenceRule, method: str = "components") -> int:
    """The number of distinct questions: how many clusters ``texts`` fall into."""
    return len(clusters(texts, rule, method=method))
