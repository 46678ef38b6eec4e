"""Statistics used by metrics, comparisons and agreement studies.

Everything here is a thin, documented layer over scipy, statsmodels, scikit-learn
and the ``krippendorff`` package; no distribution is hand-rolled.

* ``clopper_pearson(k, n)`` — exact binomial interval (statsmodels ``proportion_confint``,
  ``method="beta"``).
* ``fisher_exact(k1, n1, k2, n2)`` — two-sided Fisher exact test on the 2x2 table
  ``[[k1, n1-k1], [k2, n2-k2]]`` (scipy).
* ``adjust_pvalues(p, method)`` — Bonferroni / Holm (statsmodels ``multipletests``);
  ``significance_band(p)`` — the paper's bands on the *uncorrected* p-value:
  ``significant`` (p < 0.01), ``suggestive`` (0.01 <= p < 0.05), ``none``.
* ``sample_size_two_proportions(p1, p2)`` — n per arm, classical normal approximation:
  ``n = [z_{1-a/2} sqrt(2 pbar qbar) + z_{1-b} sqrt(p1 q1 + p2 q2)]^2 / (p1 - p2)^2`` with
  ``pbar = (p1 + p2) / 2`` (pooled variance under H0, unpooled under H1; Fleiss, without
  continuity correction), computed by statsmodels
  ``samplesize_proportions_2indep_onetail(..., alternative="two-sided")`` and rounded up.
  For 10% vs 3.2%, alpha 0.05, power 0.8 it is 208.09 -> **209** per arm, the paper's
  number. (Pooled variance under both hypotheses gives 209.27 -> 210; unpooled under
  both gives 205.3 -> 206; Cohen's arcsine h gives 194.9 -> 195. None of those is 209.)
* ``bootstrap(values, statistic, ...)`` — seeded percentile bootstrap, resampling cases
  or whole clusters.
* ``cohen_kappa``, ``fleiss_kappa``, ``krippendorff_alpha`` — nominal agreement on string
  labels (scikit-learn, statsmodels, krippendorff); ``raw_agreement``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from backtest.core.records import Rate

SUGGESTIVE_BAND = (0.01, 0.05)


# --------------------------------------------------------------------------- proportions


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided ``1 - alpha`` interval for ``k`` successes in ``n``.

    ``n == 0`` gives ``(0.0, 1.0)``: nothing was observed, nothing is excluded.
    """
    from statsmodels.stats.proportion import proportion_confint

    _check_count(k, n)
    if n == 0:
        return (0.0, 1.0)
    lo, hi = proportion_confint(k, n, alpha=alpha, method="beta")
    lo = 0.0 if k == 0 or math.isnan(lo) else float(lo)
    hi = 1.0 if k == n or math.isnan(hi) else float(hi)
    return (lo, hi)


def proportion(k: int, n: int, alpha: float = 0.05) -> Rate:
    """``k`` of ``n`` with its Clopper-Pearson interval (``rate`` None when n = 0)."""
    lo, hi = clopper_pearson(k, n, alpha)
    return Rate(k=int(k), n=int(n), rate=(k / n) if n else None, ci95=(lo, hi))


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> dict[str, float]:
    """Two-sided Fisher exact test of ``k1/n1`` against ``k2/n2``.

    Returns ``{"p_value", "odds_ratio"}`` for the table ``[[k1, n1-k1], [k2, n2-k2]]``.
    """
    from scipy.stats import fisher_exact as _fisher

    _check_count(k1, n1)
    _check_count(k2, n2)
    result = _fisher([[k1, n1 - k1], [k2, n2 - k2]], alternative="two-sided")
    return {"p_value": float(result.pvalue), "odds_ratio": float(result.statistic)}


def adjust_pvalues(p_values: Sequence[float], method: str = "holm") -> list[float]:
    """Family-wise corrected p-values: ``method`` is ``"holm"`` or ``"bonferroni"``."""
    from statsmodels.stats.multitest import multipletests

    if method not in ("holm", "bonferroni"):
        raise ValueError(f"unknown correction {method!r} (use holm or bonferroni)")
    if len(p_values) == 0:
        return []
    return [float(p) for p in multipletests(list(p_values), method=method)[1]]


def significance_band(p_uncorrected: float) -> str:
    """The paper's reading of an uncorrected p-value: ``significant`` (p < 0.01),
    ``suggestive`` (0.01 <= p < 0.05) or ``none``."""
    low, high = SUGGESTIVE_BAND
    if p_uncorrected < low:
        return "significant"
    if p_uncorrected < high:
        return "suggestive"
    return "none"


def sample_size_two_proportions(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8) -> dict[str, Any]:
    """Questions per arm to detect ``p1`` vs ``p2`` with a two-sided test (module docstring).

    Returns ``{"n_exact": float, "n_per_arm": int (rounded up), "formula": str}``.
    """
    from statsmodels.stats.proportion import samplesize_proportions_2indep_onetail

    if not (0 < p1 < 1 and 0 < p2 < 1) or p1 == p2:
        raise ValueError("p1 and p2 must be distinct proportions strictly between 0 and 1")
    n = float(
        samplesize_proportions_2indep_onetail(
            p1 - p2, p2, power, ratio=1, alpha=alpha, value=0, alternative="two-sided"
        )
    )
    return {
        "n_exact": n,
        "n_per_arm": int(math.ceil(n - 1e-9)),
        "formula": (
            "normal approximation, pooled variance under H0, unpooled under H1 (Fleiss, no continuity correction)"
        ),
    }


# --------------------------------------------------------------------------- bootstrap


def bootstrap(
    values: Sequence[Any],
    statistic: Callable[[list[Any]], float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Seeded percentile bootstrap of ``statistic(list_of_values)``.

    Case level (default): resample the values with replacement. Cluster level
    (``clusters`` given, one key per value): resample whole clusters with replacement
    and keep every value of each drawn cluster, so correlated cases (the same source
    paper, the same pair order) move together. The same seed gives the same result.
    Returns ``{"estimate", "ci": [lo, hi], "se", "n_boot", "seed", "level"}``.
    """
    items = list(values)
    if not items:
        raise ValueError("bootstrap needs at least one value")
    rng = np.random.default_rng(seed)
    estimate = float(statistic(items))
    if clusters is None:
        groups = [[i] for i in range(len(items))]
        level = "case"
    else:
        if len(clusters) != len(items):
            raise ValueError("clusters must have one key per value")
        order: dict[Hashable, list[int]] = {}
        for i, key in enumerate(clusters):
            order.setdefault(key, []).append(i)
        groups = list(order.values())
        level = "cluster"
    draws = np.empty(n_boot, dtype=float)
    for b in range(n_boot):
        picks = rng.integers(0, len(groups), size=len(groups))
        sample = [items[i] for g in picks for i in groups[g]]
        draws[b] = statistic(sample)
    tail = (1 - confidence) / 2
    lo, hi = np.nanquantile(draws, [tail, 1 - tail])
    return {
        "estimate": estimate,
        "ci": [float(lo), float(hi)],
        "se": float(np.nanstd(draws, ddof=1)),
        "n_boot": n_boot,
        "seed": seed,
        "level": level,
    }


# --------------------------------------------------------------------------- agreement


def raw_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items on which two raters give the same label."""
    _same_length(a, b)
    if not a:
        return float("nan")
    return sum(x == y for x, y in zip(a, b)) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' nominal labels (scikit-learn ``cohen_kappa_score``).

    When both raters use one and the same label on every item, chance agreement is 1 and
    kappa is undefined: NaN is returned.
    """
    from sklearn.metrics import cohen_kappa_score

    _same_length(a, b)
    if not a or (len(set(a)) == 1 and set(a) == set(b)):
        return float("nan")
    return float(cohen_kappa_score([str(x) for x in a], [str(y) for y in b]))


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa; ``ratings[i]`` are the labels of item ``i`` by every rater
    (statsmodels ``aggregate_raters`` + ``fleiss_kappa``). NaN when undefined."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    if not ratings:
        return float("nan")
    codes, _ = _encode(ratings)
    table, _cats = aggregate_raters(np.asarray(codes, dtype=int))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = _fleiss(table, method="fleiss")
    return float(value)


def krippendorff_alpha(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha, nominal; ``ratings[i][r]`` is rater r's label of item i,
    ``None`` when missing (the ``krippendorff`` package). NaN when undefined."""
    try:
        import krippendorff
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise ImportError("Krippendorff's alpha needs the 'krippendorff' package: pip install krippendorff") from exc

    if not ratings:
        return float("nan")
    codes, _ = _encode(ratings)
    data = np.array([[np.nan if c is None else c for c in row] for row in codes], dtype=float).T
    values = data[~np.isnan(data)]
    if len(set(values.tolist())) < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def _encode(ratings: Sequence[Sequence[Hashable | None]]) -> tuple[list[list[int | None]], list[str]]:
    labels = sorted({str(x) for row in ratings for x in row if x is not None})
    index = {lab: i for i, lab in enumerate(labels)}
    return [[None if x is None else index[str(x)] for x in row] for row in ratings], labels


def _same_length(a: Sequence[Any], b: Sequence[Any]) -> None:
    if len(a) != len(b):
        raise ValueError(f"raters label different numbers of items ({len(a)} vs {len(b)})")


def _check_count(k: int, n: int) -> None:
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"invalid count {k} of {n}")
