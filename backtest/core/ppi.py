"""Prediction-powered inference (PPI++) for a rate: a judge's labels on every question, careful reading's on a
simple random sample of them, combined into an estimate that is unbiased whatever the judge's quality.

The setting (Angelopoulos et al., Science 2023; PPI++, Angelopoulos, Duchi & Zrnic, arXiv 2311.01453): a run
has ``N`` questions; a simple random sample of ``n`` of them was read (``y``: 1 when the readers gave the label,
a fraction when readers split), and the judge labelled all ``N`` (``f``: 1 when the judge gave it). With
``f_l`` the judge's labels on the read questions and ``f_u`` those on the ``N - n`` others,

    theta(lam) = lam * mean(f_u) + mean(y - lam * f_l)

is unbiased for the rate for every fixed ``lam``; ``lam = 0`` is the readers' rate alone, ``lam = 1`` the
original PPI. **Power tuning** picks the ``lam`` that minimises the estimated variance,

    lam = Cov(y, f_l) / ((1 + n / (N - n)) * Var(f_l and f_u together)),   clipped to [0, 1],

and the normal interval is ``theta +- z * se`` with ``se^2 = lam^2 Var(f_u) / (N - n) + Var(y - lam f_l) / n``
(population variances). These are the formulas of ``ppi_py`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``
with ``lam=None``), which ``tests/test_ppi.py`` checks this module against to 1e-9.

**The interval published** is not that normal interval, which collapses to a point when the readers' labels
are all 0 or all 1 (a rate near 0 or 1 read on 40 items often is) and undercovers near the boundary. It is
the Clopper–Pearson interval at the **effective sample size** (Korn & Graubard, Survey Methodology 1998,
for proportions under complex designs): ``n_eff = Var(y) / se^2`` labels alone would give the PPI++ variance,
and the exact binomial interval is taken for ``theta * n_eff`` successes in ``n_eff`` trials (the beta
quantiles need no integers). When ``Var(y)`` or ``se`` is 0 there is no information on the judge's worth and
``n_eff = n``. If that interval would be wider than the labels-only Clopper–Pearson interval, ``lam = 0``
is used: the estimate and interval are then the readers' alone. So the published interval is never wider
than what the labels alone give, and is exact-binomial at the boundary; its coverage is checked by a seeded
simulation (``tests/test_ppi.py``: judges of kappa 0, 0.3 and 0.6, rates 0.02, 0.2 and 0.5, 1,000 draws each).

The target is the system's rate (the questions of a run are a sample of what the system writes, as for
every other interval in backtest), not the rate of these ``N`` questions alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta, norm

from backtest.core.stats import clopper_pearson


@dataclass(frozen=True)
class PPIRate:
    """One label-grounded rate: the published estimate and interval and what they rest on."""

    estimate: float  # the published estimate, clipped to [0, 1]
    ci95: tuple[float, float]  # the published interval (module docstring)
    theta: float  # the unclipped PPI++ estimate at ``lam`` (what ppi_py computes)
    se: float  # its standard error (normal approximation)
    ci95_normal: tuple[float, float]  # theta +- z se, unclipped (ppi_py's ppi_mean_ci)
    n: int  # questions in the run (judged)
    n_labelled: int
    effective_n: float  # labels alone that would give this precision
    lam: float  # the power-tuning weight used (0: labels only)
    lam_tuned: float  # the power-tuned weight before the width rule
    judge_only: float  # the judge's rate over all n questions
    labels_only: float  # the readers' rate on the sample
    labels_only_ci95: tuple[float, float]  # Clopper–Pearson on the readers' labels
    method: str  # "ppi++" or "labels-only" (and why)


def tuned_lambda(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """The power-tuned PPI++ weight for a mean (module docstring), clipped to [0, 1]; 0 without unlabelled
    questions or when the judge's labels do not vary."""
    n, n_u = len(y), len(f_unlabelled)
    if n < 1 or n_u < 1:
        return 0.0
    var_f = float(np.var(np.concatenate([f_labelled, f_unlabelled]), ddof=1)) if n + n_u > 1 else 0.0
    if var_f <= 0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f_labelled - f_labelled.mean())))
    return float(np.clip(cov / ((1 + n / n_u) * var_f), 0.0, 1.0))


def ppi_theta(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray, lam: float) -> float:
    """The PPI++ estimate of the mean at weight ``lam``."""
    imputed = lam * float(np.mean(f_unlabelled)) if len(f_unlabelled) else 0.0
    return imputed + float(np.mean(y - lam * f_labelled))


def ppi_se(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray, lam: float) -> float:
    """The standard error of :func:`ppi_theta` (normal approximation, population variances)."""
    imputed = lam**2 * float(np.var(f_unlabelled)) / len(f_unlabelled) if len(f_unlabelled) else 0.0
    return math.sqrt(imputed + float(np.var(y - lam * f_labelled)) / len(y))


def fractional_clopper_pearson(x: float, n: float, alpha: float = 0.05) -> tuple[float, float]:
    """The Clopper–Pearson interval for ``x`` successes in ``n`` trials where either may be fractional (an
    effective count): beta quantiles, as the exact interval is for whole numbers; ``x`` is clipped to [0, n]."""
    if n <= 0:
        return (0.0, 1.0)
    x = min(max(x, 0.0), n)
    lo = 0.0 if x <= 0 else float(beta.ppf(alpha / 2, x, n - x + 1))
    hi = 1.0 if x >= n else float(beta.ppf(1 - alpha / 2, x + 1, n - x))
    return (lo, hi)


def ppi_rate(
    y: Sequence[float] | np.ndarray,
    f_labelled: Sequence[float] | np.ndarray,
    f_unlabelled: Sequence[float] | np.ndarray,
    alpha: float = 0.05,
    judge_excluded: str | None = None,
) -> PPIRate:
    """The label-grounded rate of one run (module docstring).

    ``y``: the readers' label (0/1, or the share of readers when they split) of each read question;
    ``f_labelled``: the judge's label (0/1) of the same questions, in the same order; ``f_unlabelled``: the
    judge's labels of the run's other questions. ``judge_excluded``: a reason the judge's labels must not be used
    (a judge fitted on the sample): lambda 0, and the method names the reason."""
    y_, fl, fu = (np.asarray(v, dtype=float) for v in (y, f_labelled, f_unlabelled))
    n = len(y_)
    if n < 1:
        raise ValueError("a label-grounded rate needs at least one read question")
    if len(fl) != n:
        raise ValueError(f"{n} readers' labels but {len(fl)} judge labels for them")
    if np.any((y_ < 0) | (y_ > 1)) or np.any((fl != 0) & (fl != 1)) or np.any((fu != 0) & (fu != 1)):
        raise ValueError("labels must lie in [0, 1] (readers) and be 0 or 1 (judge)")
    z = float(norm.ppf(1 - alpha / 2))
    labels_only = float(y_.mean())
    # readers' shares (split readings) count fractionally; the exact interval takes the (possibly
    # fractional) count as it is
    labels_ci = (
        clopper_pearson(int(round(y_.sum())), n, alpha)
        if np.allclose(y_, np.round(y_))
        else fractional_clopper_pearson(float(y_.sum()), n, alpha)
    )
    judge_only = float(np.concatenate([fl, fu]).mean())
    lam_tuned = tuned_lambda(y_, fl, fu)
    theta = ppi_theta(y_, fl, fu, lam_tuned)
    se = ppi_se(y_, fl, fu, lam_tuned)
    var_y = float(np.var(y_))
    n_eff = var_y / se**2 if var_y > 0 and se > 0 else float(n)
    ci = fractional_clopper_pearson(min(max(theta, 0.0), 1.0) * n_eff, n_eff, alpha)
    lam, method = lam_tuned, "ppi++"
    if judge_excluded or lam_tuned == 0.0 or ci[1] - ci[0] > labels_ci[1] - labels_ci[0] + 1e-12:
        why = judge_excluded or (
            "the judge's labels do not help" if lam_tuned == 0.0 else "the judge did not narrow the interval"
        )
        lam, method = 0.0, f"labels-only ({why})"
        theta, se, n_eff, ci = labels_only, ppi_se(y_, fl, fu, 0.0), float(n), labels_ci
    return PPIRate(
        estimate=min(max(theta, 0.0), 1.0),
        ci95=(float(ci[0]), float(ci[1])),
        theta=theta,
        se=se,
        ci95_normal=(theta - z * se, theta + z * se),
        n=n + len(fu),
        n_labelled=n,
        effective_n=n_eff,
        lam=lam,
        lam_tuned=lam_tuned,
        judge_only=judge_only,
        labels_only=labels_only,
        labels_only_ci95=(float(labels_ci[0]), float(labels_ci[1])),
        method=method,
    )


@dataclass(frozen=True)
class RateDifference:
    """The difference of two runs' label-grounded rates, a - b."""

    difference: float
    ci95: tuple[float, float]
    se: float
    p_value: float


def rate_difference(
    a: tuple[float, tuple[float, float]],
    b: tuple[float, tuple[float, float]],
    alpha: float = 0.05,
    counts: tuple[tuple[int, int], tuple[int, int]] | None = None,
) -> RateDifference:
    """``a - b`` for two runs' (estimate, 95% interval) read on independent samples.

    ``counts`` ((k_a, n_a), (k_b, n_b)): both estimates are the readers' labels alone (lambda 0, whole counts),
    and the difference is the two samples' proportions: Fisher's exact test and Newcombe's hybrid score interval
    (statsmodels), exact where the samples are small. Otherwise a two-sided z-test whose standard error combines
    each run's published interval half-width over z in quadrature (the PPI++ standard error for interior rates;
    near 0 or 1 the exact interval's, which never collapses to zero); the interval is clipped to [-1, 1]."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    from backtest.core.stats import fisher_exact

    (est_a, ci_a), (est_b, ci_b) = a, b
    diff = est_a - est_b
    z = float(norm.ppf(1 - alpha / 2))
    se = math.hypot((ci_a[1] - ci_a[0]) / (2 * z), (ci_b[1] - ci_b[0]) / (2 * z))
    if counts is not None:
        (ka, na), (kb, nb) = counts
        lo, hi = confint_proportions_2indep(ka, na, kb, nb, method="newcomb", compare="diff", alpha=alpha)
        p = fisher_exact(ka, na, kb, nb)["p_value"]
        return RateDifference(ka / na - kb / nb, (float(lo), float(hi)), se, min(float(p), 1.0))
    p = 1.0 if se == 0 else float(2 * norm.sf(abs(diff) / se))
    return RateDifference(diff, (max(diff - z * se, -1.0), min(diff + z * se, 1.0)), se, min(p, 1.0))


def _zero_count_halfwidth(n: int, alpha: float) -> float:
    """Half the Clopper–Pearson interval for 0 of ``n``: the narrowest an exact interval gets near 0."""
    return float((1 - (alpha / 2) ** (1 / n)) / 2)


def halfwidth_for_samples(rate: float, rho: float, n: int, alpha: float = 0.05) -> float:
    """The 95% interval half-width that reading ``n`` questions buys for a rate near ``rate`` when the judge's
    labels correlate with the readers' at ``rho``: the normal one, ``z sqrt(p (1 - p) (1 - rho^2) / n)`` (the
    PPI++ variance with the tuned weight when the run is much larger than the sample), but never less than
    half the exact interval for 0 of ``n`` (near 0 or 1 the published interval is exact, and no judge makes it
    narrower than that)."""
    if n < 1:
        raise ValueError("read at least one question")
    z = float(norm.ppf(1 - alpha / 2))
    p = min(max(rate, 0.0), 1.0)
    normal = z * math.sqrt(p * (1 - p) * (1 - min(rho**2, 1.0)) / n)
    return max(normal, _zero_count_halfwidth(n, alpha))


def samples_for_halfwidth(rate: float, rho: float, halfwidth: float, population: int, alpha: float = 0.05) -> int:
    """The fewest questions of a run of ``population`` to read for :func:`halfwidth_for_samples` to reach
    ``halfwidth`` (all of the run when even that does not)."""
    if not 0 < halfwidth < 1:
        raise ValueError("the half-width must lie strictly between 0 and 1")
    z = float(norm.ppf(1 - alpha / 2))
    p = min(max(rate, 0.0), 1.0)
    n = max(1, math.ceil(z**2 * p * (1 - p) * (1 - min(rho**2, 1.0)) / halfwidth**2))
    while _zero_count_halfwidth(n, alpha) > halfwidth:
        n += 1
    return min(n, population)


# --------------------------------------------------------------------------- the interval's coverage, simulated


def judge_agreement(p: float, q: float, s: float) -> float:
    """Cohen's kappa, in the population, of a judge that copies the truth with probability ``s`` and otherwise
    says yes with probability ``q``, against a truth that is yes with probability ``p``."""
    r = s * p + (1 - s) * q
    agree = s + (1 - s) * (p * q + (1 - p) * (1 - q))
    chance = p * r + (1 - p) * (1 - r)
    return (agree - chance) / (1 - chance)


@dataclass(frozen=True)
class Coverage:
    """How one cell of the simulation went."""

    rate: float
    kappa: float
    bias: float  # the judge's own yes-rate when it does not copy the truth, minus the true rate
    draws: int
    covered: float  # share of draws whose published interval holds the true rate
    covered_normal: float  # the same for the plain normal PPI++ interval
    covered_labels_only: float
    mean_width: float
    mean_width_labels_only: float
    wider_than_labels_only: int  # draws where the published interval is wider than labels-only (by > 1e-9)
    mean_effective_n: float


def simulate_coverage(
    rate: float,
    kappa: float,
    n_labelled: int = 40,
    n_total: int = 125,
    draws: int = 1000,
    seed: int = 0,
    bias: float = 0.15,
) -> Coverage:
    """Seeded simulation of :func:`ppi_rate`'s 95% interval: each draw makes a run of ``n_total`` questions whose
    true labels are yes with probability ``rate``, a judge of population kappa ``kappa`` against them (it copies
    the truth with the probability that gives that kappa, else says yes with probability ``rate + bias``: a
    biased judge), and reads a simple random sample of ``n_labelled``."""
    from scipy.optimize import brentq

    q = min(max(rate + bias, 0.0), 1.0)
    s = 0.0 if kappa <= judge_agreement(rate, q, 0.0) else brentq(lambda x: judge_agreement(rate, q, x) - kappa, 0, 1)
    rng = np.random.default_rng(seed)
    hit = hit_normal = hit_labels = wider = 0
    widths, widths_labels, neffs = [], [], []
    for _ in range(draws):
        truth = (rng.random(n_total) < rate).astype(float)
        judge = np.where(rng.random(n_total) < s, truth, (rng.random(n_total) < q).astype(float))
        read = np.zeros(n_total, dtype=bool)
        read[rng.choice(n_total, n_labelled, replace=False)] = True
        est = ppi_rate(truth[read], judge[read], judge[~read])
        hit += est.ci95[0] <= rate <= est.ci95[1]
        hit_normal += est.ci95_normal[0] <= rate <= est.ci95_normal[1]
        hit_labels += est.labels_only_ci95[0] <= rate <= est.labels_only_ci95[1]
        width, width_labels = est.ci95[1] - est.ci95[0], est.labels_only_ci95[1] - est.labels_only_ci95[0]
        wider += width > width_labels + 1e-9
        widths.append(width)
        widths_labels.append(width_labels)
        neffs.append(est.effective_n)
    return Coverage(
        rate=rate,
        kappa=kappa,
        bias=bias,
        draws=draws,
        covered=hit / draws,
        covered_normal=hit_normal / draws,
        covered_labels_only=hit_labels / draws,
        mean_width=float(np.mean(widths)),
        mean_width_labels_only=float(np.mean(widths_labels)),
        wider_than_labels_only=wider,
        mean_effective_n=float(np.mean(neffs)),
    )
