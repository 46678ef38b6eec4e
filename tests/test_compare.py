"""backtest compare on the imported reference release: the paper's contrasts and the refusal of invalid runs."""

import json
import shutil

import pytest

from backtest.analysis.compare import compare_runs
from backtest.core.errors import CheckFailed
from backtest.core.fileio import read_json, write_json

from .conftest import SQB
from .sqb_common import RUNS, imported_release, needs_sqb

pytestmark = needs_sqb

V1L = ("random_claim", "citation_leader", "direct_llm", "review_future_work")


@pytest.fixture(scope="module")
def comparison():
    root = imported_release()
    return compare_runs([root / RUNS[n] for n in V1L])


def _test(comparison, metric, a, b):
    for t in comparison.tests:
        if t.metric == metric and {t.a, t.b} == {a, b}:
            return t
    raise AssertionError(f"no test {metric} {a} {b}")


def test_release_contrasts_reproduced(comparison):
    """All five contrasts of comparison.json, two-sided Fisher p to 5 decimals."""
    ref = read_json(SQB / "results/astronomy_v1L/comparison.json")["contrasts"]
    metric_of = {"engaged": "coverage", "answered": "answered_rate", "refuted": "premise_refutation_rate"}
    for name, contrast in ref.items():
        a, b = [k for k in contrast if k not in ("metric", "fisher_p_two_sided")]
        t = _test(comparison, metric_of[contrast["metric"]], a, b)
        assert {t.a_count, t.b_count} == {contrast[a], contrast[b]}, name
        assert round(t.p_value, 5) == contrast["fisher_p_two_sided"], name
    # the paper's text: engagement random vs direct LLM p < 1e-4; random vs citation leaders p = 0.007;
    # answered, citation leaders vs random p = 0.005
    assert _test(comparison, "coverage", "random_claim", "direct_llm").p_value < 1e-4
    assert round(_test(comparison, "coverage", "random_claim", "citation_leader").p_value, 3) == 0.007
    assert round(_test(comparison, "answered_rate", "random_claim", "citation_leader").p_value, 3) == 0.005


def test_corrections_and_bands(comparison):
    family = [t for t in comparison.tests if t.metric == "coverage"]
    assert len(family) == 6  # 4 systems -> 6 pairs per metric
    for t in comparison.tests:
        assert t.p_value <= t.p_holm <= t.p_bonferroni <= 1.0
    t = _test(comparison, "coverage", "citation_leader", "direct_llm")
    assert 0.01 <= t.p_value < 0.05 and t.band == "suggestive"
    assert t.p_bonferroni == pytest.approx(min(1.0, 6 * t.p_value))
    assert _test(comparison, "coverage", "random_claim", "direct_llm").band == "significant"
    assert [e.label for e in comparison.leaderboard][:1] == ["direct_llm"]
    row = {r.label: r for r in comparison.systems}["random_claim"]
    assert row.coverage.k == 91 and row.first_engagement_lag_years_release == 2.8
    assert comparison.warnings == [] and comparison.any_invalid is False


def test_outputs_and_invalid_runs(tmp_path, cli):
    root = imported_release()
    runs = [str(root / RUNS[n]) for n in V1L]
    code, out, _ = cli(["compare", *runs, "--out", str(tmp_path / "cmp")])
    assert code == 0 and "| rank | system |" in out
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert "data:image/png;base64,iVBOR" in html  # an embedded PNG forest plot
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert len(data["systems"]) == 4 and len(data["tests"]) == 18
    first = {p.name: p.read_bytes() for p in (tmp_path / "cmp").iterdir()}
    assert cli(["compare", *runs, "--out", str(tmp_path / "cmp")])[0] == 0
    assert first == {p.name: p.read_bytes() for p in (tmp_path / "cmp").iterdir()}  # byte-identical rerun

    bad = tmp_path / "bad" / "results" / "x" / "random_claim" / "r1"
    shutil.copytree(root / RUNS["random_claim"], bad)
    run = read_json(bad / "RUN.json")
    run["valid"] = False
    write_json(bad / "RUN.json", run)
    with pytest.raises(CheckFailed, match="allow-invalid"):
        compare_runs([bad, root / RUNS["direct_llm"]])
    code, _, err = cli(["compare", str(bad), runs[2]])
    assert code == 1 and "refusing invalid" in err
    code, out, _ = cli(["compare", str(bad), runs[2], "--allow-invalid", "--out", str(tmp_path / "inv")])
    assert code == 0 and "INVALID" in out
    assert "INVALID" in (tmp_path / "inv" / "compare.html").read_text()
    assert "INVALID" in (tmp_path / "inv" / "compare.md").read_text()
    data = json.loads((tmp_path / "inv" / "compare.json").read_text())
    assert data["any_invalid"] and any("INVALID" in w for w in data["warnings"])
    assert cli(["compare", str(tmp_path / "nothing")])[0] == 2
