"""Bradley–Terry–Davidson fit: golden cases, recovery of known strengths and θ, agreement with choix."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from backtest.arena.btd import (
    ELO_SCALE,
    PairTable,
    condorcet,
    fit_btd,
    fit_btd_batch,
    share_to_weights,
    table_from_counts,
    table_from_outcomes,
    win_rates,
)

GOLDEN = json.loads((Path(__file__).parent / "golden" / "arena_btd.json").read_text())["cases"]


def simulate(beta, theta, per_pair, seed):
    """Draw BTD outcomes (share 1 / 0.5 / 0 for the first system) for every pair, seeded."""
    rng = np.random.default_rng(seed)
    systems = [f"s{k}" for k in range(len(beta))]
    rows = []
    for i in range(len(beta)):
        for j in range(i + 1, len(beta)):
            pi, pj = math.exp(beta[i]), math.exp(beta[j])
            tie = theta * math.sqrt(pi * pj)
            d = pi + pj + tie
            draws = rng.choice(3, size=per_pair, p=[pi / d, pj / d, tie / d])
            rows += [(systems[i], systems[j], (1.0, 0.0, 0.5)[k]) for k in draws]
    return systems, rows


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden_cases(case):
    table = table_from_counts(case["systems"], [tuple(r) for r in case["outcomes"]])
    fit = fit_btd(table, ridge=0.0)
    exp, tol = case["expected"], case["tolerance"]
    assert fit.converged
    for system, rating in exp["ratings"].items():
        assert fit.rating_of()[system] == pytest.approx(rating, abs=tol["rating"])
    assert fit.theta == pytest.approx(exp["theta"], abs=tol["theta"])
    if "ordering" in exp:
        assert fit.ordering() == exp["ordering"]
    relations = condorcet(table)
    assert relations["winner"] == exp["condorcet_winner"]
    assert len(relations["cycles"]) == exp["n_cycles"]
    assert np.mean(fit.ratings) == pytest.approx(1500.0, abs=1e-6)


def test_recovers_known_strengths_and_theta():
    true_beta, true_theta = [-0.9, -0.3, 0.25, 0.95], 0.8
    systems, rows = simulate(true_beta, true_theta, per_pair=400, seed=11)
    fit = fit_btd(table_from_outcomes(systems, rows), ridge=0.0)
    assert fit.ordering() == ["s3", "s2", "s1", "s0"]
    assert fit.theta == pytest.approx(true_theta, abs=0.12)
    centred = np.array(true_beta) - np.mean(true_beta)
    assert np.max(np.abs(fit.beta - centred)) < 0.12
    gaps = np.diff(fit.ratings)
    assert np.allclose(gaps, ELO_SCALE * np.diff(fit.beta))


def test_bt_part_agrees_with_choix_without_ties():
    choix = pytest.importorskip("choix")
    systems, rows = simulate([-1.0, -0.2, 0.4, 1.1, 0.0], 0.0, per_pair=60, seed=5)
    assert all(s != 0.5 for _, _, s in rows)
    ridge = 1e-3
    fit = fit_btd(table_from_outcomes(systems, rows), ridge=ridge)
    index = {s: k for k, s in enumerate(systems)}
    data = [(index[a], index[b]) if s == 1.0 else (index[b], index[a]) for a, b, s in rows]
    params = choix.opt_pairwise(len(systems), data, alpha=ridge)
    assert np.max(np.abs(fit.beta - (params - params.mean()))) < 1e-4
    assert fit.theta < 1e-3


def test_share_weights_keep_the_expected_share():
    shares = np.array([0.0, 0.125, 0.25, 0.5, 0.625, 0.75, 1.0])
    win, loss, tie = share_to_weights(shares)
    assert np.allclose(win + loss + tie, 1.0)
    assert np.allclose(win + tie / 2, shares)
    assert np.all((win == 0) | (loss == 0))
    table = table_from_outcomes(["x", "y"], [("y", "x", 0.75)])  # y's 0.75 is x's 0.25
    assert (table.wins[0], table.losses[0], table.ties[0]) == (0.0, 0.5, 0.5)


def test_batched_fit_matches_single_fits():
    systems, rows = simulate([-0.5, 0.0, 0.7], 0.6, per_pair=50, seed=3)
    base = table_from_outcomes(systems, rows)
    rng = np.random.default_rng(0)
    scale = rng.uniform(0.5, 1.5, size=(12, len(base.I)))
    W, L, T = base.wins * scale, base.losses * scale[::-1], base.ties * scale
    together, theta_t, _, ok = fit_btd_batch(base, W, L, T, block=12)
    assert ok
    for r in range(12):
        single = PairTable(base.systems, base.I, base.J, W[r], L[r], T[r])
        fit = fit_btd(single)
        assert np.max(np.abs(together[r] - fit.beta)) < 1e-5
        assert theta_t[r] == pytest.approx(fit.theta, rel=1e-4)


def test_win_rates_and_empty_table():
    table = table_from_counts(["a", "b", "c"], [("a", "b", 3, 1, 0)])
    rates = win_rates(table)
    assert rates["matrix"]["a"]["b"] == 0.75 and rates["matrix"]["b"]["a"] == 0.25
    assert rates["matrix"]["a"]["c"] is None and rates["overall"]["c"] is None
    empty = fit_btd(PairTable.empty(["a", "b"]))
    assert np.allclose(empty.ratings, 1500.0) and empty.n_comparisons == 0
