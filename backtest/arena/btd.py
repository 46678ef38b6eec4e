"""Bradley–Terry–Davidson (BTD) maximum-likelihood fit with the tie parameter estimated.

Davidson's (1970) model for a comparison of systems *i* and *j* with strengths
``π = exp(β)`` and tie parameter ``θ ≥ 0``::

    P(i wins) = π_i / D,   P(j wins) = π_j / D,   P(tie) = θ·sqrt(π_i π_j) / D,
    D = π_i + π_j + θ·sqrt(π_i π_j).

With ``θ = 0`` this is the Bradley–Terry model. The negative log-likelihood is
minimised with :func:`scipy.optimize.minimize` over
``β`` and ``log θ`` (trust-region Newton-CG with the analytic gradient and
Hessian-vector product); a Gaussian prior ``ridge·Σβ²`` (the same penalty form as
``choix``) keeps the estimate finite when a system wins or loses every
comparison, and a very weak prior ``½·10⁻⁴·(log θ)²`` does the same for θ when
there are no ties (or only ties). ``β`` is identified only up to a shift: the fit is centred (mean 0).

Ratings are reported on an Elo-like scale anchored at 1500:
``rating = 1500 + 400/ln(10) · (β − mean β)``, so a 400-point gap means 10:1 odds
of winning (ignoring ties).

Fractional outcomes. A folded arena case gives one system a *win share*
``s ∈ [0, 1]``. It enters the likelihood as weighted counts that keep the
expected share: ``s ≥ ½`` → win weight ``2s−1`` and tie weight ``2−2s``;
``s < ½`` → loss weight ``1−2s`` and tie weight ``2s``. So A>B (0.75) counts as
half a win and half a tie, A≈B (0.5) as a tie.

Replicates (the bootstrap) are fitted together: :func:`fit_btd_batch` stacks
independent problems into one separable objective for one scipy call per block,
with the gradient and Hessian-vector products computed for all of them at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, TypedDict

import numpy as np
from scipy.optimize import minimize

ELO_ANCHOR = 1500.0
ELO_SCALE = 400.0 / math.log(10.0)
THETA_PRIOR = 1e-4
DEFAULT_RIDGE = 1e-3


class EloScale(TypedDict):
    anchor: float
    scale: str


class BTDSummary(TypedDict):
    """:meth:`BTDFit.to_dict`: the fit as ``arena.json`` holds it under ``btd``."""

    model: str
    systems: list[str]
    ratings: dict[str, float]
    beta: dict[str, float]
    theta: float
    tie_probability_equal: float
    loglik: float
    n_comparisons: float
    ridge: float
    converged: bool
    ordering: list[str]
    elo: EloScale


class WinRates(TypedDict):
    """:func:`win_rates`: per-system mean share, and ``matrix[a][b]`` (None: never compared)."""

    overall: dict[str, float | None]
    matrix: dict[str, dict[str, float | None]]


class Relation(TypedDict):
    a: str
    b: str
    relation: str
    share_a: float | None


class Condorcet(TypedDict):
    """:func:`condorcet`: the pairwise-majority relations, winner, loser and cycles."""

    relations: list[Relation]
    winner: str | None
    loser: str | None
    cycles: list[list[str]]


def share_to_weights(share: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split a win share ``s`` into (win, loss, tie) weights summing to 1 with ``win + tie/2 = s``."""
    s = np.clip(np.asarray(share, dtype=float), 0.0, 1.0)
    win = np.maximum(0.0, 2.0 * s - 1.0)
    loss = np.maximum(0.0, 1.0 - 2.0 * s)
    return win, loss, 1.0 - win - loss


@dataclass
class PairTable:
    """Aggregated outcomes per unordered pair ``(I[p], J[p])`` with ``I[p] < J[p]``.

    ``wins[..., p]``: weight of *I* beating *J*; ``losses``: *J* beating *I*; ``ties``.
    A leading axis (replicates) is allowed on the three weight arrays.
    """

    systems: list[str]
    I: np.ndarray
    J: np.ndarray
    wins: np.ndarray
    losses: np.ndarray
    ties: np.ndarray

    @classmethod
    def empty(cls, systems: Sequence[str]) -> "PairTable":
        """A table with every unordered pair of ``systems`` and zero counts."""
        n = len(systems)
        I, J = np.triu_indices(n, k=1)
        zeros = np.zeros(len(I))
        return cls(list(systems), I, J, zeros.copy(), zeros.copy(), zeros.copy())

    def pair_index(self) -> dict[tuple[int, int], int]:
        """Map ``(i, j)`` with ``i < j`` to its column."""
        return {(int(i), int(j)): p for p, (i, j) in enumerate(zip(self.I, self.J))}

    @property
    def n_comparisons(self) -> float:
        """Total weight of all comparisons (for one replicate)."""
        return float(np.sum(self.wins + self.losses + self.ties))


def table_from_outcomes(systems: Sequence[str], outcomes: Iterable[tuple[str, str, float]]) -> PairTable:
    """Build a :class:`PairTable` from ``(system_a, system_b, share_of_a)`` rows."""
    table = PairTable.empty(systems)
    pos = {s: k for k, s in enumerate(table.systems)}
    col = table.pair_index()
    for a, b, share in outcomes:
        i, j = pos[a], pos[b]
        if i == j:
            continue
        if i > j:
            i, j, share = j, i, 1.0 - share
        w, l, t = share_to_weights(share)
        p = col[(i, j)]
        table.wins[p] += w
        table.losses[p] += l
        table.ties[p] += t
    return table


def table_from_counts(systems: Sequence[str], rows: Iterable[tuple[str, str, float, float, float]]) -> PairTable:
    """Build a :class:`PairTable` from ``(a, b, wins_of_a, wins_of_b, ties)`` rows (counts add up)."""
    table = PairTable.empty(systems)
    pos = {s: k for k, s in enumerate(table.systems)}
    col = table.pair_index()
    for a, b, w, l, t in rows:
        i, j = pos[a], pos[b]
        if i > j:
            i, j, w, l = j, i, l, w
        p = col[(i, j)]
        table.wins[p] += w
        table.losses[p] += l
        table.ties[p] += t
    return table


@dataclass
class BTDFit:
    """A fitted BTD model."""

    systems: list[str]
    beta: np.ndarray
    theta: float
    loglik: float
    n_comparisons: float
    ridge: float
    converged: bool
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratings(self) -> np.ndarray:
        """Elo-like ratings anchored at 1500 (mean rating 1500)."""
        return to_elo(self.beta)

    def rating_of(self) -> dict[str, float]:
        """``{system: rating}``."""
        return {s: float(r) for s, r in zip(self.systems, self.ratings)}

    def ordering(self) -> list[str]:
        """Systems from the highest to the lowest rating (ties broken by name)."""
        return [self.systems[k] for k in order_of(self.beta, self.systems)]

    def tie_probability_equal(self) -> float:
        """P(tie) between two equally strong systems: θ / (2 + θ)."""
        return self.theta / (2.0 + self.theta)

    def to_dict(self) -> BTDSummary:
        """JSON-ready summary (ratings rounded to 0.01, θ to 1e-6)."""
        return {
            "model": "bradley-terry-davidson",
            "systems": self.systems,
            "ratings": {s: round(float(r), 2) for s, r in zip(self.systems, self.ratings)},
            "beta": {s: round(float(b), 6) for s, b in zip(self.systems, self.beta)},
            "theta": round(self.theta, 6),
            "tie_probability_equal": round(self.tie_probability_equal(), 6),
            "loglik": round(self.loglik, 6),
            "n_comparisons": round(self.n_comparisons, 6),
            "ridge": self.ridge,
            "converged": self.converged,
            "ordering": self.ordering(),
            "elo": {"anchor": ELO_ANCHOR, "scale": "400/ln(10) per unit of log-strength"},
        }


def to_elo(beta: np.ndarray) -> np.ndarray:
    """Centre log-strengths (last axis) and map them onto the Elo-like scale anchored at 1500."""
    beta = np.asarray(beta, dtype=float)
    return ELO_ANCHOR + ELO_SCALE * (beta - beta.mean(axis=-1, keepdims=True))


def order_of(beta: np.ndarray, systems: Sequence[str]) -> list[int]:
    """Indices of systems by decreasing strength; equal strengths (within 1e-9) ordered by name."""
    beta = np.asarray(beta, dtype=float)
    return sorted(range(len(systems)), key=lambda k: (-round(float(beta[k]), 9), systems[k]))


class _BatchObjective:
    """The summed negative penalised log-likelihood of R independent BTD problems.

    Variables per problem: ``β`` (n) and ``log θ``. Penalty: ``ridge·Σβ²`` (choix's
    form), a gauge term ``½(Σβ)²`` that is zero at the centred optimum, and a weak
    ``½·κ·(log θ)²`` prior (κ = ``THETA_PRIOR``) that keeps θ finite when no
    comparison (or every comparison) is a tie.
    """

    def __init__(self, table: PairTable, wins: np.ndarray, losses: np.ndarray, ties: np.ndarray, ridge: float):
        n = len(table.systems)
        self.n = n
        self.W, self.L, self.T = wins, losses, ties
        self.N = wins + losses + ties
        self.ridge = ridge
        self.MI = np.zeros((len(table.I), n))
        self.MJ = np.zeros((len(table.J), n))
        self.MI[np.arange(len(table.I)), table.I] = 1.0
        self.MJ[np.arange(len(table.J)), table.J] = 1.0
        self.I, self.J = table.I, table.J
        self._x: np.ndarray | None = None
        self._p: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X = x.reshape(self.W.shape[0], self.n + 1)
        return X, X[:, : self.n], X[:, self.n]

    def _probs(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        X, beta, log_theta = self._split(x)
        a, b = beta[:, self.I], beta[:, self.J]
        c = log_theta[:, None] + 0.5 * (a + b)
        log_d = np.logaddexp(np.logaddexp(a, b), c)
        self._x = x.copy()
        self._p = (np.exp(a - log_d), np.exp(b - log_d), np.exp(c - log_d))
        return X, beta, log_theta, a, b, c, log_d

    def fun(self, x: np.ndarray) -> float:
        """Objective value."""
        _, beta, log_theta, a, b, c, log_d = self._probs(x)
        ll = np.sum(self.W * a + self.L * b + self.T * c - self.N * log_d)
        total = beta.sum(axis=1)
        penalty = self.ridge * np.sum(beta**2) + 0.5 * np.sum(total**2) + 0.5 * THETA_PRIOR * np.sum(log_theta**2)
        return float(-ll + penalty)

    def jac(self, x: np.ndarray) -> np.ndarray:
        """Gradient."""
        p = self._p if self._x is not None and np.array_equal(x, self._x) else None
        if p is None:
            self._probs(x)
            p = self._p
        assert p is not None
        X, beta, log_theta = self._split(x)
        pa, pb, pc = p
        da = self.W + 0.5 * self.T - self.N * (pa + 0.5 * pc)
        db = self.L + 0.5 * self.T - self.N * (pb + 0.5 * pc)
        grad = np.empty_like(X)
        grad[:, : self.n] = -(da @ self.MI + db @ self.MJ) + 2.0 * self.ridge * beta + beta.sum(axis=1, keepdims=True)
        grad[:, self.n] = -np.sum(self.T - self.N * pc, axis=1) + THETA_PRIOR * log_theta
        return grad.ravel()

    def hessp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Hessian-vector product: per pair N·Jᵀ(diag p − p pᵀ)J·v, plus the penalty's."""
        p = self._p if self._x is not None and np.array_equal(x, self._x) else None
        if p is None:
            self._probs(x)
            p = self._p
        assert p is not None
        pa, pb, pc = p
        V = v.reshape(self.W.shape[0], self.n + 1)
        vb, vt = V[:, : self.n], V[:, self.n]
        d1, d2 = vb[:, self.I], vb[:, self.J]
        d3 = vt[:, None] + 0.5 * (d1 + d2)
        dot = pa * d1 + pb * d2 + pc * d3
        y1, y2, y3 = self.N * pa * (d1 - dot), self.N * pb * (d2 - dot), self.N * pc * (d3 - dot)
        out = np.empty_like(V)
        out[:, : self.n] = (
            (y1 + 0.5 * y3) @ self.MI
            + (y2 + 0.5 * y3) @ self.MJ
            + 2.0 * self.ridge * vb
            + vb.sum(axis=1, keepdims=True)
        )
        out[:, self.n] = y3.sum(axis=1) + THETA_PRIOR * vt
        return out.ravel()

    def loglik(self, beta: np.ndarray, log_theta: np.ndarray) -> np.ndarray:
        """Per-replicate log-likelihood (no penalty)."""
        a, b = beta[:, self.I], beta[:, self.J]
        c = log_theta[:, None] + 0.5 * (a + b)
        log_d = np.logaddexp(np.logaddexp(a, b), c)
        return np.sum(self.W * a + self.L * b + self.T * c - self.N * log_d, axis=1)


def fit_btd_batch(
    table: PairTable,
    wins: np.ndarray,
    losses: np.ndarray,
    ties: np.ndarray,
    ridge: float = DEFAULT_RIDGE,
    init: tuple[np.ndarray, float] | None = None,
    block: int = 500,
    gtol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Fit R independent BTD problems (rows of ``wins``/``losses``/``ties``, shape (R, P)).

    Problems are stacked ``block`` at a time into one separable objective and
    minimised by scipy's trust-region Newton-CG (``trust-ncg``) with the analytic
    gradient and Hessian-vector product; ``init`` = (β, log θ) warm-starts every row.
    Returns centred β (R, n), θ (R,), the log-likelihoods (R,) and whether every
    block converged (gradient norm per problem ≤ ``gtol`` × (1 + comparisons)).
    """
    wins, losses, ties = (np.atleast_2d(np.asarray(m, dtype=float)) for m in (wins, losses, ties))
    R, n = wins.shape[0], len(table.systems)
    betas = np.zeros((R, n))
    log_thetas = np.zeros(R)
    logliks = np.zeros(R)
    converged = True
    start = np.zeros(n + 1)
    if init is not None:
        start[:n] = np.asarray(init[0], dtype=float) - np.mean(init[0])
        start[n] = float(np.clip(init[1], -20.0, 20.0))
    for lo in range(0, R, block):
        hi = min(R, lo + block)
        obj = _BatchObjective(table, wins[lo:hi], losses[lo:hi], ties[lo:hi], ridge)
        x0 = np.tile(start, hi - lo)
        scale = 1.0 + float(obj.N.sum(axis=1).max())
        res = minimize(
            obj.fun,
            x0,
            jac=obj.jac,
            hessp=obj.hessp,
            method="trust-ncg",
            options={"gtol": gtol * scale, "maxiter": 1000},
        )
        X = res.x.reshape(hi - lo, n + 1)
        G = obj.jac(res.x).reshape(hi - lo, n + 1)
        per_problem = np.abs(G).max(axis=1) <= 1e-6 * (1.0 + obj.N.sum(axis=1))
        converged = converged and (bool(res.success) or bool(per_problem.all()))
        beta = X[:, :n] - X[:, :n].mean(axis=1, keepdims=True)
        betas[lo:hi] = beta
        log_thetas[lo:hi] = X[:, n]
        logliks[lo:hi] = obj.loglik(beta, X[:, n])
    return betas, np.exp(log_thetas), logliks, converged


def fit_btd(table: PairTable, ridge: float = DEFAULT_RIDGE) -> BTDFit:
    """Maximum-likelihood (MAP with ``ridge`` > 0) BTD fit of one table of outcomes."""
    if table.n_comparisons <= 0:
        n = len(table.systems)
        return BTDFit(list(table.systems), np.zeros(n), 0.0, 0.0, 0.0, ridge, True, "no comparisons: all systems equal")
    beta, theta, ll, ok = fit_btd_batch(table, table.wins, table.losses, table.ties, ridge=ridge)
    return BTDFit(
        list(table.systems),
        beta[0],
        float(theta[0]),
        float(ll[0]),
        table.n_comparisons,
        ridge,
        ok,
        "" if ok else "optimiser did not report convergence",
    )


def win_rates(table: PairTable) -> WinRates:
    """Per-system mean win share over all its comparisons, and the pairwise share matrix.

    ``matrix[a][b]`` is a's mean share against b (ties count ½); ``None`` when the
    pair was never compared.
    """
    n = len(table.systems)
    share_sum = np.zeros((n, n))
    count = np.zeros((n, n))
    for p, (i, j) in enumerate(zip(table.I, table.J)):
        tot = table.wins[p] + table.losses[p] + table.ties[p]
        share_i = table.wins[p] + 0.5 * table.ties[p]
        share_sum[i, j] += share_i
        share_sum[j, i] += tot - share_i
        count[i, j] += tot
        count[j, i] += tot
    overall: dict[str, float | None] = {}
    matrix: dict[str, dict[str, float | None]] = {}
    for i, a in enumerate(table.systems):
        tot = count[i].sum()
        overall[a] = round(float(share_sum[i].sum() / tot), 6) if tot > 0 else None
        matrix[a] = {
            b: (round(float(share_sum[i, j] / count[i, j]), 6) if count[i, j] > 0 else None)
            for j, b in enumerate(table.systems)
            if j != i
        }
    return {"overall": overall, "matrix": matrix}


def condorcet(table: PairTable) -> Condorcet:
    """Pairwise-majority relations: who beats whom (mean share > ½), the Condorcet winner and
    loser if any, and the majority cycles (via networkx)."""
    import networkx as nx

    rates = win_rates(table)["matrix"]
    graph = nx.DiGraph()
    graph.add_nodes_from(table.systems)
    relations: list[Relation] = []
    for i, j in zip(table.I, table.J):
        a, b = table.systems[i], table.systems[j]
        share = rates[a][b]
        if share is None:
            relation = "not compared"
        elif share > 0.5 + 1e-12:
            relation = ">"
            graph.add_edge(a, b)
        elif share < 0.5 - 1e-12:
            relation = "<"
            graph.add_edge(b, a)
        else:
            relation = "="
        relations.append(Relation(a=a, b=b, relation=relation, share_a=share))
    n = len(table.systems)
    winner = [s for s in table.systems if graph.out_degree(s) == n - 1]
    loser = [s for s in table.systems if graph.in_degree(s) == n - 1]
    cycles = sorted(sorted(c) for c in nx.simple_cycles(graph))
    return {
        "relations": relations,
        "winner": winner[0] if winner else None,
        "loser": loser[0] if loser else None,
        "cycles": cycles,
    }
