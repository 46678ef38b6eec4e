"""backtest agree on the reference release's human annotation (issue 7): kappa 0.17 / 0.17."""

import json

import pytest

from backtest.analysis.agreement import agreement, load_rater
from backtest.core.errors import BadInput
from backtest.core.fileio import write_jsonl

from .conftest import SQB
from .sqb_common import RUNS, imported_release, needs_sqb

pytestmark = needs_sqb


def humans():
    labels = imported_release() / "labels" / "sqb-annotation"
    return [load_rater(str(labels / "annotator_1.jsonl")), load_rater(str(labels / "annotator_2.jsonl"))]


def test_annotation_decoded_into_rater_files():
    a1, a2 = humans()
    assert (a1.name, a2.name) == ("annotator_1", "annotator_2")
    assert len(a1.labels) == len(a2.labels) == 90
    row = json.loads((imported_release() / "labels/sqb-annotation/annotator_1.jsonl").read_text().splitlines()[0])
    assert row["provenance"] == "human" and row["item_id"].startswith("item_") and row["system_code"].startswith("sys_")
    # decode.json's evidence_graph is our evidence_graph_v1; the release's name is kept
    systems = {k[0] for k in a1.labels}
    assert "evidence_graph_v1" in systems and "evidence_graph" not in systems


def test_human_human_agreement_matches_paper():
    """Paper: Cohen's kappa 0.17 (outcome) and 0.17 (premise), raw agreement 41% and 44%."""
    outcome = agreement(humans(), "outcome")
    premise = agreement(humans(), "premise_status")
    assert outcome["n_shared_items"] == premise["n_shared_items"] == 90
    assert round(outcome["pairs"][0]["cohen_kappa"], 2) == 0.17
    assert round(premise["pairs"][0]["cohen_kappa"], 2) == 0.17
    assert round(100 * outcome["pairs"][0]["raw_agreement"]) == 41
    assert round(100 * premise["pairs"][0]["raw_agreement"]) == 44
    d1, d2 = (r["distribution"] for r in outcome["per_rater"])
    assert (d1["answered"], d1["not_addressed"]) == (33, 9)
    assert (d2["answered"], d2["not_addressed"]) == (33, 24)
    # with two raters and no missing labels, Fleiss and Krippendorff are defined and close to Cohen
    assert outcome["fleiss_kappa"] == pytest.approx(0.161, abs=1e-3)
    assert outcome["krippendorff_alpha"] == pytest.approx(0.166, abs=1e-3)


def test_judge_against_humans_and_label_space_flags(cli, tmp_path):
    """The release judge (4 files, one rater) vs the humans on the items all three share."""
    ann = SQB / "data" / "annotations"
    judge = "judge=" + ",".join(
        str(ann / f"outcomes_{s}_L.jsonl") for s in ("random_claim", "citation_leader", "direct_llm")
    )
    judge += "," + str(ann / "outcomes_v1.jsonl")
    labels = imported_release() / "labels" / "sqb-annotation"
    code, out, _ = cli(
        [
            "agree",
            judge,
            str(labels / "annotator_1.jsonl"),
            str(labels / "annotator_2.jsonl"),
            "--field",
            "premise_status",
            "--json",
            "--html",
            str(tmp_path / "heat.html"),
        ]
    )
    assert code == 0
    result = json.loads(out)
    assert result["n_shared_items"] == 58  # 16 x 3 baselines + the 10 pilot items; tension_* have no judge labels here
    assert len(result["pairs"]) == 3
    flags = {r["rater"]: r["flags"] for r in result["per_rater"]}
    assert flags["annotator_2"] == ["never uses refuted"]  # on the shared items
    assert "data:image/png;base64," in (tmp_path / "heat.html").read_text()
    # our imported run folder is a rater too (system from RUN.json)
    run = load_rater(str(imported_release() / RUNS["direct_llm"]))
    assert run.name == "direct_llm/sqb-release" and len(run.labels) == 125


def test_unknown_labels_flagged_and_bad_input(tmp_path):
    rows = [
        {"system": "s", "question_id": f"q{i}", "outcome": o, "premise_status": "supported"}
        for i, o in enumerate(["answered", "not_addressed", "resolved"])
    ]
    write_jsonl(tmp_path / "a.jsonl", rows)
    write_jsonl(tmp_path / "b.jsonl", [dict(r, outcome="answered") for r in rows])
    result = agreement([load_rater(str(tmp_path / "a.jsonl")), load_rater(str(tmp_path / "b.jsonl"))], "premise_status")
    assert result["per_rater"][0]["flags"] == ["never uses refuted", "never uses weakened"]
    result = agreement([load_rater(str(tmp_path / "a.jsonl")), load_rater(str(tmp_path / "b.jsonl"))], "outcome")
    assert "unknown label 'resolved'" in result["per_rater"][0]["flags"]
    assert result["per_rater"][0]["distribution"]["resolved"] == 1  # kept as written, not mapped
    write_jsonl(tmp_path / "c.jsonl", [dict(r, system="other") for r in rows])
    with pytest.raises(BadInput, match="share no"):
        agreement([load_rater(str(tmp_path / "a.jsonl")), load_rater(str(tmp_path / "c.jsonl"))])
    with pytest.raises(BadInput, match="at least two"):
        agreement([load_rater(str(tmp_path / "a.jsonl"))])
