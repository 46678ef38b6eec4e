"""PPI++ for a rate (backtest.core.ppi): the same numbers as the independent ``ppi_py`` implementation, and an
interval whose coverage a seeded simulation checks where the normal one fails (rates near 0).

Fast: pure numpy/scipy, no corpus. ``ppi_py`` is the dev extra's ``ppi-python``.
"""

from __future__ import annotations

import numpy as np
import pytest

from backtest.core.ppi import (
    fractional_clopper_pearson,
    halfwidth_for_samples,
    judge_agreement,
    ppi_rate,
    ppi_se,
    ppi_theta,
    rate_difference,
    samples_for_halfwidth,
    simulate_coverage,
    tuned_lambda,
)
from backtest.core.stats import clopper_pearson

ppi_py = pytest.importorskip("ppi_py", reason="the ppi_py check needs the dev extra (pip install -e '.[dev]')")


def _draw(seed: int, n: int, n_u: int, p: float, copy: float, fractional: bool = False):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n + n_u) < p).astype(float)
    judge = np.where(rng.random(n + n_u) < copy, truth, (rng.random(n + n_u) < p + 0.2).astype(float))
    y = truth[:n].copy()
    if fractional:  # two readers who split on some items
        y[rng.random(n) < 0.15] = 0.5
    return y, judge[:n], judge[n:]


@pytest.mark.parametrize(
    "seed,n,n_u,p,copy,fractional",
    [
        (0, 40, 85, 0.2, 0.6, False),
        (1, 40, 10, 0.5, 0.3, False),
        (2, 12, 400, 0.1, 0.8, False),
        (3, 40, 47, 0.35, 0.5, True),
        (4, 200, 2000, 0.05, 0.9, False),
        (5, 30, 30, 0.6, 0.0, False),
    ],
)
def test_estimate_and_normal_interval_match_ppi_py(seed, n, n_u, p, copy, fractional):
    y, f_l, f_u = _draw(seed, n, n_u, p, copy, fractional)
    lam = tuned_lambda(y, f_l, f_u)
    theirs = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f_l, f_u))[0])  # lam=None: power-tuned
    assert ppi_theta(y, f_l, f_u, lam) == pytest.approx(theirs, abs=1e-9)
    lo, hi = ppi_py.ppi_mean_ci(y, f_l, f_u, alpha=0.05)
    se = ppi_se(y, f_l, f_u, lam)
    theta = ppi_theta(y, f_l, f_u, lam)
    assert (theta - 1.959963984540054 * se, theta + 1.959963984540054 * se) == pytest.approx(
        (float(np.ravel(lo)[0]), float(np.ravel(hi)[0])), abs=1e-9
    )
    for fixed in (0.0, 0.37, 1.0):  # and at a given weight
        assert ppi_theta(y, f_l, f_u, fixed) == pytest.approx(
            float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f_l, f_u, lam=fixed))[0]), abs=1e-9
        )
    est = ppi_rate(y, f_l, f_u)
    if est.method == "ppi++":
        assert est.theta == pytest.approx(theirs, abs=1e-9)
        assert est.ci95_normal == pytest.approx((float(np.ravel(lo)[0]), float(np.ravel(hi)[0])), abs=1e-9)


def test_the_judge_only_and_labels_only_rates_stand_beside_it():
    y, f_l, f_u = _draw(7, 40, 85, 0.3, 0.5)
    est = ppi_rate(y, f_l, f_u)
    assert est.n == 125 and est.n_labelled == 40
    assert est.labels_only == pytest.approx(y.mean())
    assert est.judge_only == pytest.approx(np.concatenate([f_l, f_u]).mean())
    assert est.labels_only_ci95 == pytest.approx(clopper_pearson(int(y.sum()), 40))
    assert est.ci95[0] <= est.estimate <= est.ci95[1]


def test_all_zero_labels_give_the_exact_interval_not_a_point():
    """40 items read, none engaged, a judge that says yes on a fifth of the run: the normal interval is the
    point 0; the published one is Clopper–Pearson for 0 of 40 and the judge's 20% does not leak in."""
    y = np.zeros(40)
    f_l = np.array([1.0] * 8 + [0.0] * 32)
    f_u = np.array([1.0] * 17 + [0.0] * 68)
    est = ppi_rate(y, f_l, f_u)
    assert est.ci95_normal[1] - est.ci95_normal[0] == 0.0
    assert est.estimate == 0.0 and est.lam == 0.0 and est.method.startswith("labels-only")
    assert est.ci95 == pytest.approx(clopper_pearson(0, 40))
    assert est.judge_only == pytest.approx(0.2)


def test_a_judge_that_agrees_narrows_the_interval_and_raises_effective_n():
    y, f_l, f_u = _draw(11, 40, 400, 0.4, 0.95)
    est = ppi_rate(y, f_l, f_u)
    assert est.method == "ppi++" and est.lam > 0.5
    assert est.effective_n > 2 * est.n_labelled
    assert est.ci95[1] - est.ci95[0] < 0.75 * (est.labels_only_ci95[1] - est.labels_only_ci95[0])


def test_fractional_clopper_pearson_agrees_with_the_exact_interval_on_whole_numbers():
    for k, n in ((0, 10), (3, 10), (10, 10), (7, 40)):
        assert fractional_clopper_pearson(k, n) == pytest.approx(clopper_pearson(k, n), abs=1e-12)
    lo, hi = fractional_clopper_pearson(3.5, 10)
    assert clopper_pearson(3, 10)[0] < lo < clopper_pearson(4, 10)[0]
    assert clopper_pearson(3, 10)[1] < hi < clopper_pearson(4, 10)[1]


def test_bad_labels_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        ppi_rate([], [], [1.0])
    with pytest.raises(ValueError, match="judge labels"):
        ppi_rate([1.0, 0.0], [1.0], [])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ppi_rate([2.0], [1.0], [])


def test_rate_difference_is_two_sided_and_never_divides_by_zero():
    same = rate_difference((0.0, (0.0, 0.088)), (0.0, (0.0, 0.088)))
    assert same.difference == 0.0 and same.p_value == 1.0 and same.se > 0
    far = rate_difference((0.5, (0.35, 0.65)), (0.05, (0.0, 0.12)))
    assert far.p_value < 0.001 and far.ci95[0] > 0


def test_the_plan_inverts_the_halfwidth_and_keeps_the_exact_floor():
    n = samples_for_halfwidth(0.3, 0.5, 0.1, 10_000)
    assert halfwidth_for_samples(0.3, 0.5, n) <= 0.1 < halfwidth_for_samples(0.3, 0.5, n - 1)
    assert samples_for_halfwidth(0.3, 0.9, 0.1, 10_000) < samples_for_halfwidth(0.3, 0.0, 0.1, 10_000)
    # near 0 the exact interval for 0 of n sets the floor: half of 1 - 0.025^(1/n) <= 0.1 first at n = 17
    assert samples_for_halfwidth(0.0, 0.99, 0.1, 10_000) == 17
    assert samples_for_halfwidth(0.5, 0.0, 0.05, 50) == 50  # never more than the run


def test_judge_agreement_is_cohens_kappa_of_the_mixture():
    rng = np.random.default_rng(0)
    p, q, s = 0.2, 0.35, 0.5
    truth = rng.random(200_000) < p
    judge = np.where(rng.random(truth.size) < s, truth, rng.random(truth.size) < q)
    from sklearn.metrics import cohen_kappa_score

    assert judge_agreement(p, q, s) == pytest.approx(cohen_kappa_score(truth, judge), abs=0.01)
    assert judge_agreement(p, p, 0.3) == pytest.approx(0.3)


@pytest.mark.parametrize("rate", [0.02, 0.2, 0.5])
@pytest.mark.parametrize("kappa", [0.0, 0.3, 0.6])
def test_the_published_interval_covers_and_is_never_wider_than_labels_alone(rate, kappa):
    """1,000 seeded draws per cell: runs of 125 questions, 40 read, a judge biased by +15 points that agrees with
    the truth at the given kappa. The 95% interval holds the true rate in at least 93% of draws, and in no
    draw is it wider than the labels-only Clopper–Pearson interval."""
    cell = simulate_coverage(rate, kappa, n_labelled=40, n_total=125, draws=1000, seed=2)
    assert cell.covered >= 0.93, cell
    assert cell.wider_than_labels_only == 0, cell
    if rate == 0.02:  # why the published interval is not the normal one: that one misses half the time here
        assert cell.covered_normal < 0.8, cell
    if kappa >= 0.6 and rate >= 0.2:  # a judge worth something buys precision
        assert cell.mean_width < 0.95 * cell.mean_width_labels_only, cell
