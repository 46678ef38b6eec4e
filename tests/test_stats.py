"""Golden tests of backtest/stats.py against hand-worked values and the packages' documented examples."""

import json
from pathlib import Path

import pytest

from backtest.core import stats

GOLDEN = json.loads((Path(__file__).parent / "golden" / "stats.json").read_text())


@pytest.mark.parametrize("case", GOLDEN["clopper_pearson"], ids=lambda c: f"{c['k']}/{c['n']}")
def test_clopper_pearson_golden(case):
    lo, hi = stats.clopper_pearson(case["k"], case["n"])
    assert lo == pytest.approx(case["lo"], abs=case["tol"])
    assert hi == pytest.approx(case["hi"], abs=case["tol"])


def test_pilot_interval_paper_precision():
    lo, hi = stats.clopper_pearson(10, 10)
    assert (round(lo, 2), round(hi, 2)) == (0.69, 1.0)


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError):
        stats.clopper_pearson(5, 3)
    assert stats.clopper_pearson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("case", GOLDEN["fisher_exact"], ids=lambda c: str(c["table"]))
def test_fisher_golden(case):
    k1, n1, k2, n2 = case["table"]
    assert stats.fisher_exact(k1, n1, k2, n2)["p_value"] == pytest.approx(case["p_value"], abs=case["tol"])


def test_adjust_golden():
    g = GOLDEN["adjust"]
    assert stats.adjust_pvalues(g["p"], "holm") == pytest.approx(g["holm"], abs=g["tol"])
    assert stats.adjust_pvalues(g["p"], "bonferroni") == pytest.approx(g["bonferroni"], abs=g["tol"])
    with pytest.raises(ValueError):
        stats.adjust_pvalues(g["p"], "sidak-ish")


def test_significance_bands():
    assert stats.significance_band(0.007) == "significant"
    assert stats.significance_band(0.01) == "suggestive"
    assert stats.significance_band(0.0499) == "suggestive"
    assert stats.significance_band(0.05) == "none"


def test_sample_size_paper_209():
    g = GOLDEN["sample_size"]
    out = stats.sample_size_two_proportions(g["p1"], g["p2"], g["alpha"], g["power"])
    assert out["n_exact"] == pytest.approx(g["n_exact"], abs=g["tol"])
    assert out["n_per_arm"] == g["n_per_arm"] == 209


def test_cohen_kappa_golden():
    g = GOLDEN["cohen_kappa"]
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert stats.cohen_kappa(a, b) == pytest.approx(g["kappa"], abs=g["tol"])
    assert stats.raw_agreement(a, b) == pytest.approx(g["raw"], abs=g["tol"])


def test_fleiss_kappa_golden():
    g = GOLDEN["fleiss_kappa"]
    ratings = [[f"c{c}" for c, count in enumerate(row) for _ in range(count)] for row in g["counts"]]
    assert stats.fleiss_kappa(ratings) == pytest.approx(g["kappa"], abs=g["tol"])


def test_krippendorff_golden():
    g = GOLDEN["krippendorff_alpha"]
    items = [list(col) for col in zip(*g["reliability_data"])]
    assert stats.krippendorff_alpha(items) == pytest.approx(g["alpha_nominal"], abs=g["tol"])


def test_bootstrap_seeded_and_cluster_level():
    values = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    mean = lambda s: sum(s) / len(s)  # noqa: E731
    a = stats.bootstrap(values, mean, n_boot=300, seed=7)
    b = stats.bootstrap(values, mean, n_boot=300, seed=7)
    c = stats.bootstrap(values, mean, n_boot=300, seed=8)
    assert a == b and a != c
    assert a["estimate"] == pytest.approx(0.6) and a["ci"][0] < 0.6 < a["ci"][1]
    # clusters of two identical values: resampling whole clusters keeps pairs intact, so the
    # number of 1s in every draw is even; resampling cases breaks pairs
    odd = lambda s: s.count(1) % 2  # noqa: E731
    data, keys = [1, 1, 0, 0, 1, 1], ["a", "a", "b", "b", "c", "c"]
    clustered = stats.bootstrap(data, odd, n_boot=200, seed=1, clusters=keys)
    cases = stats.bootstrap(data, odd, n_boot=200, seed=1)
    assert clustered["level"] == "cluster" and clustered["se"] == pytest.approx(0.0)
    assert cases["level"] == "case" and cases["se"] > 0.3
