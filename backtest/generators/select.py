"""Choosing a diverse top-n from ranked drafts, so a set has no near-duplicates at freeze.

Freeze calls two questions near-duplicates when their TF-IDF cosine (fitted on the
submitted set) is >= 0.25 AND their sentence-embedding cosine is >= 0.77
(:mod:`backtest.text.equivalence`). :func:`select_diverse` keeps the TF-IDF cosine of
every kept pair below the TF-IDF threshold, which is sufficient for "no
near-duplicates" whatever the embeddings say, and needs no model weights:

1. greedy, best first: a draft is kept unless its TF-IDF cosine (vectorizer fitted
   on the whole candidate pool) with an already kept draft reaches ``threshold``;
2. exact check with the freeze rule (vectorizer fitted on the kept set itself): the
   later draft of any pair at or above the threshold is dropped and the next
   candidates fill in; repeated until the set is clean or the pool runs out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from backtest.generators.protocol import Draft
from backtest.text.equivalence import TfidfRule

TFIDF_THRESHOLD = 0.25
EMBEDDING_THRESHOLD = 0.77


class _Embeddings:
    """All candidate texts embedded in one batch (offline MiniLM), cached on disk under
    ``cache_dir`` keyed by the model fingerprint and the sha256 of the texts."""

    def __init__(self, texts: Sequence[str], cache_dir=None):
        from backtest.core.seal import sha256_json
        from backtest.text.embed import DEFAULT_MODEL, cached_embeddings, embed_texts, model_fingerprint

        if cache_dir is not None:
            key = sha256_json({"model": model_fingerprint(DEFAULT_MODEL), "texts": list(texts)})
            self.vectors = cached_embeddings(list(texts), Path(cache_dir) / f"select-{key[:32]}.npy")
        else:
            self.vectors = embed_texts(list(texts))

    def sims(self, i: int, others: Sequence[int]) -> np.ndarray:
        return self.vectors[list(others)] @ self.vectors[i]


def select_diverse(
    ranked: Sequence[Draft],
    n: int,
    threshold: float = TFIDF_THRESHOLD,
    accept: Callable[[Draft, list[Draft]], bool] | None = None,
    embedding: bool = False,
    embedding_threshold: float = EMBEDDING_THRESHOLD,
    margin: float = 0.03,
    cache_dir=None,
) -> list[Draft]:
    """The first ``n`` drafts of ``ranked`` (best first) with no near-duplicate pair.

    Without ``embedding`` a pair counts as too close when its TF-IDF cosine reaches
    ``threshold`` (sufficient for the freeze rule, no model needed). With ``embedding``
    such a pair is only too close when its embedding cosine also reaches
    ``embedding_threshold - margin`` in the greedy pass (``embedding_threshold`` in the
    exact check): the freeze rule itself, for template-phrased sets whose TF-IDF
    similarity is high by construction. ``accept(draft, kept)`` may add constraints."""
    if not ranked:
        return []
    texts = [d.question for d in ranked]
    emb = _Embeddings(texts, cache_dir) if embedding else None
    rule = TfidfRule(threshold=threshold)
    pool = rule.vectors(texts)
    kept_idx: list[int] = []
    rejected: set[int] = set()
    start = 0
    while True:
        kept_idx, start = _greedy(
            ranked, pool, n, threshold, kept_idx, rejected, start, accept, emb, embedding_threshold - margin
        )
        sims = rule.similarity_matrix([texts[i] for i in kept_idx])
        np.fill_diagonal(sims, 0.0)
        bad = set()
        for a, b in zip(*np.nonzero(np.triu(sims >= threshold, k=1))):
            if emb is None or emb.sims(kept_idx[a], [kept_idx[b]])[0] >= embedding_threshold:
                bad.add(int(b))
        if not bad:
            return [ranked[i] for i in sorted(kept_idx)]
        rejected.update(kept_idx[j] for j in bad)  # each round drops >= 1, so the loop ends
        kept_idx = [i for k, i in enumerate(kept_idx) if k not in bad]


def _greedy(ranked, pool, n, threshold, kept_idx, rejected, start, accept, emb, emb_threshold):
    kept = list(kept_idx)
    i = start
    while len(kept) < n and i < len(ranked):
        if i not in rejected and i not in kept:
            ok = accept is None or accept(ranked[i], [ranked[k] for k in kept])
            if ok and kept:
                sims = pool[kept] @ pool[i].T
                sims = sims.toarray().ravel() if hasattr(sims, "toarray") else np.asarray(sims).ravel()
                close = [kept[k] for k in np.nonzero(sims >= threshold)[0]]
                if close:
                    ok = emb is not None and bool(emb.sims(i, close).max() < emb_threshold)
            if ok:
                kept.append(i)
        i += 1
    return kept, i
