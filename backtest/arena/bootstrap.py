"""Seeded case-level bootstrap of the BTD leaderboard.

A *case* is one folded comparison (two systems on one context). Each replicate
draws cases with replacement (or, with ``cluster=True``, whole contexts with
replacement, keeping every case of a drawn context), refits BTD, and records the
ratings. Reported: percentile intervals of each rating and of θ, the share of
replicates whose full ordering equals the point estimate's (None when the point
estimate itself ties two systems: there is no strict ordering to recover), and for every pair of
systems the share of replicates ranking one above the other.

Speed: replicate counts come from one multinomial draw per block, outcomes are
aggregated with one matrix product, and each block of replicates is fitted in a
single scipy call warm-started at the full-sample estimate
(:func:`backtest.arena.btd.fit_btd_batch`). The result depends only on the data,
``seed``, ``n_boot`` and ``block``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, TypedDict

import numpy as np

from backtest.arena.btd import DEFAULT_RIDGE, BTDFit, PairTable, fit_btd_batch, order_of, share_to_weights, to_elo

DEFAULT_REPLICATES = 10_000
BLOCK = 500
TIE_EPS = 1e-6  # log-strength gap below which two systems count as tied


class BootstrapSummary(TypedDict):
    """:meth:`BootstrapResult.to_dict`: the bootstrap as ``arena.json`` holds it under ``bootstrap``."""

    n_boot: int
    seed: int
    level: float
    resampling: str
    n_units: int
    intervals: dict[str, list[float]]
    theta_interval: list[float]
    ordering: list[str]
    full_ordering_recovery: float | None
    prob_above: dict[str, dict[str, float]]
    converged: bool


@dataclass
class BootstrapResult:
    """Bootstrap summary for one fit."""

    systems: list[str]
    n_boot: int
    seed: int
    level: float
    cluster: bool
    n_units: int
    intervals: dict[str, tuple[float, float]]
    theta_interval: tuple[float, float]
    ordering: list[str]
    full_ordering_recovery: float | None
    prob_above: dict[str, dict[str, float]]
    converged: bool

    def to_dict(self) -> BootstrapSummary:
        """JSON-ready summary (ratings rounded to 0.01)."""
        return {
            "n_boot": self.n_boot,
            "seed": self.seed,
            "level": self.level,
            "resampling": "contexts (cluster)" if self.cluster else "cases",
            "n_units": self.n_units,
            "intervals": {s: [round(lo, 2), round(hi, 2)] for s, (lo, hi) in self.intervals.items()},
            "theta_interval": [round(self.theta_interval[0], 6), round(self.theta_interval[1], 6)],
            "ordering": self.ordering,
            "full_ordering_recovery": None
            if self.full_ordering_recovery is None
            else round(self.full_ordering_recovery, 6),
            "prob_above": {a: {b: round(p, 6) for b, p in row.items()} for a, row in self.prob_above.items()},
            "converged": self.converged,
        }


def case_weights(
    systems: Sequence[str], outcomes: Sequence[tuple[str, str, float]]
) -> tuple[PairTable, np.ndarray, np.ndarray, np.ndarray]:
    """Per-case (win, loss, tie) weights laid out on the pair columns: three (C, P) arrays."""
    table = PairTable.empty(systems)
    pos = {s: k for k, s in enumerate(table.systems)}
    col = table.pair_index()
    C, P = len(outcomes), len(table.I)
    W, L, T = np.zeros((C, P)), np.zeros((C, P)), np.zeros((C, P))
    for c, (a, b, share) in enumerate(outcomes):
        i, j = pos[a], pos[b]
        if i > j:
            i, j, share = j, i, 1.0 - share
        w, l, t = share_to_weights(share)
        p = col[(i, j)]
        W[c, p], L[c, p], T[c, p] = w, l, t
    return table, W, L, T


def bootstrap_btd(
    systems: Sequence[str],
    outcomes: Sequence[tuple[str, str, float]],
    point: BTDFit,
    clusters: Sequence[str] | None = None,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    level: float = 0.95,
    ridge: float = DEFAULT_RIDGE,
    block: int = BLOCK,
) -> BootstrapResult:
    """Bootstrap the BTD fit of ``outcomes`` (``(system_a, system_b, share_of_a)`` rows).

    ``clusters``: one label per outcome (its context id) to resample contexts instead
    of cases. ``point`` is the full-sample fit (its ordering is the one to recover
    and its estimate the warm start).
    """
    systems = list(systems)
    n = len(systems)
    rng = np.random.default_rng(seed)
    table, Wc, Lc, Tc = case_weights(systems, outcomes)
    C = len(outcomes)
    if clusters is not None:
        labels = sorted(set(clusters))
        unit_of = np.array([labels.index(c) for c in clusters]) if C else np.zeros(0, dtype=int)
        n_units = len(labels)
    else:
        unit_of = np.arange(C)
        n_units = C
    betas = np.zeros((n_boot, n))
    thetas = np.zeros(n_boot)
    converged = True
    init = (point.beta, float(np.log(max(point.theta, 1e-13))))
    for lo in range(0, n_boot, block):
        hi = min(n_boot, lo + block)
        if n_units == 0:
            continue
        draws = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=hi - lo)
        counts = draws[:, unit_of].astype(float)
        W, L, T = counts @ Wc, counts @ Lc, counts @ Tc
        b, th, _, ok = fit_btd_batch(table, W, L, T, ridge=ridge, init=init, block=block)
        betas[lo:hi], thetas[lo:hi] = b, th
        converged = converged and ok
    ratings = to_elo(betas)
    alpha = (1.0 - level) / 2.0
    lo_q, hi_q = np.quantile(ratings, [alpha, 1.0 - alpha], axis=0)
    order = order_of(point.beta, systems)
    gaps = np.diff(point.beta[order]) if n > 1 else np.zeros(0)
    if n > 1 and np.all(gaps < -TIE_EPS):
        recovered = np.all(betas[:, order[:-1]] > betas[:, order[1:]], axis=1)
        recovery: float | None = float(recovered.mean())
    else:
        recovery = None if n > 1 else 1.0  # tied point estimate: no strict ordering to recover
    prob_above = {
        a: {b: float(np.mean(betas[:, i] > betas[:, j])) for j, b in enumerate(systems) if j != i}
        for i, a in enumerate(systems)
    }
    t_lo, t_hi = np.quantile(thetas, [alpha, 1.0 - alpha])
    return BootstrapResult(
        systems=systems,
        n_boot=n_boot,
        seed=seed,
        level=level,
        cluster=clusters is not None,
        n_units=n_units,
        intervals={s: (float(lo_q[k]), float(hi_q[k])) for k, s in enumerate(systems)},
        theta_interval=(float(t_lo), float(t_hi)),
        ordering=[systems[k] for k in order],
        full_ordering_recovery=recovery,
        prob_above=prob_above,
        converged=converged,
    )
