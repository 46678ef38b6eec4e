"""Choosing a diverse top-n from ranked drafts, so a set has no near-duplicates at freeze.

Freeze calls two questions near-duplicates when their TF-IDF cosine (fitted on the
submitted set) is >= 0.25 AND their sentence-embedding cosine is >= 0.77
(:mod:`backtest.equivalence`). :func:`select_diverse` keeps the TF-IDF cosine of
every kept pair below the TF-IDF threshold, which is sufficient for "no
near-duplicates" whatever the embeddings say, and needs no model weights:

1. greedy, best first: a draft is kept unless its TF-IDF cosine (vectorizer fitted
   on the whole candidate pool) with an already kept draft reaches ``threshold``;
2. exact check with the freeze rule (vectorizer fitted on the kept set itself): the
   later draft of any pair at or above the threshold is dropped and the next
   candidates fill in; repeated until the set is clean or the pool runs out.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..equivalence import TfidfRule
from .protocol import Draft

TFIDF_THRESHOLD = 0.25


def select_diverse(ranked: Sequence[Draft], n: int, threshold: float = TFIDF_THRESHOLD,
                   accept: Callable[[Draft, list[Draft]], bool] | None = None) -> list[Draft]:
    """The first ``n`` drafts of ``ranked`` (best first) whose pairwise TF-IDF cosine stays below
    ``threshold``; ``accept(draft, kept)`` may add other constraints (e.g. one per object)."""
    if not ranked:
        return []
    rule = TfidfRule(threshold=threshold)
    pool = rule.vectors([d.question for d in ranked])
    kept_idx: list[int] = []
    rejected: set[int] = set()
    start = 0
    while True:
        kept_idx, start = _greedy(ranked, pool, n, threshold, kept_idx, rejected, start, accept)
        texts = [ranked[i].question for i in kept_idx]
        sims = rule.similarity_matrix(texts)
        np.fill_diagonal(sims, 0.0)
        bad = sorted({int(j) for i, j in zip(*np.nonzero(np.triu(sims >= threshold, k=1)))})
        if not bad:
            return [ranked[i] for i in sorted(kept_idx)]
        rejected.update(kept_idx[j] for j in bad)  # each round drops >= 1, so the loop ends
        kept_idx = [i for k, i in enumerate(kept_idx) if k not in set(bad)]


def _greedy(ranked, pool, n, threshold, kept_idx, rejected, start, accept):
    kept = list(kept_idx)
    i = start
    while len(kept) < n and i < len(ranked):
        if i not in rejected and i not in kept:
            ok = True
            if kept:
                sims = (pool[kept] @ pool[i].T)
                sims = sims.toarray().ravel() if hasattr(sims, "toarray") else np.asarray(sims).ravel()
                ok = bool(sims.max() < threshold)
            if ok and accept is not None:
                ok = accept(ranked[i], [ranked[k] for k in kept])
            if ok:
                kept.append(i)
        i += 1
    return kept, i
