"""The clarity gate at freeze time (per-set clarity in the report, report or refuse, the threshold option) and
``backtest clarity score`` on submissions and frozen sets, over the real astro-2025-ep instance."""

from __future__ import annotations

import json

import pytest

from backtest.core.errors import BadInput
from backtest.submit.freeze import FROZEN_FILE
from backtest.submit.loading import FreezeSettings
from backtest.text.clarity import CLARITY_THRESHOLD, CLARITY_VERSION, clarity_score

from .submission_helpers import metadata, past_records, question_rows, snapshot, writable_ws, write_submission

INSTANCE = "astro-2025-ep"


@pytest.fixture(scope="module")
def ws(astro_ep_ws, tmp_path_factory):
    return writable_ws(astro_ep_ws, tmp_path_factory.mktemp("clarity") / "ws")


@pytest.fixture(scope="module")
def records(ws):
    return past_records(ws, instance_id=INSTANCE, n=6, seed=3)


def unclear_submission(records, folder, system):
    """Six real-evidence questions: two with a major clarity problem, one with a minor one, three clean."""
    rows = question_rows(records, system=system)
    title = " ".join(records[1].title.replace("?", "").split())
    rows[1]["question"] = f"Does the finding that we detect this signal in '{title}' survive an independent reanalysis?"
    rows[2]["question"] = "What is the origin of these bars?"
    rows[3]["question"] = "How do hazes form on hot Jupiters, and what sets their particle sizes?"
    return write_submission(folder, rows, metadata(len(rows), system=system)), rows


def gate(folder):
    data = json.loads((folder / FROZEN_FILE).read_text())
    return next(g for g in data["gates"] if g["name"] == "clarity"), data["settings"]


def test_report_mode_records_the_set_and_the_flagged_questions(ws, records, tmp_path, cli):
    sub, rows = unclear_submission(records, tmp_path / "sub", "clarity_report")
    scores = [clarity_score(r["question"]).score for r in rows]
    assert [s < CLARITY_THRESHOLD for s in scores] == [False, True, True, False, False, False], scores
    code, out, err = cli(["freeze", sub, "--instance", INSTANCE], root=ws.root)
    assert code == 0, err
    mean = sum(scores) / len(scores)
    line = next(x for x in out.splitlines() if " clarity: " in x)
    assert line.split()[0] == "warned"
    assert f"clarity ({CLARITY_VERSION}) mean {mean:.2f}, 2 of 6 (33%) below 0.5" in line
    result, settings = gate(ws.frozen / INSTANCE / "clarity_report" / "v1")
    assert result["status"] == "warned" and result["reason"].startswith(f"clarity ({CLARITY_VERSION}) mean {mean:.2f}")
    assert [d["question_id"] for d in result["details"]] == ["q_002", "q_003"]
    we, bars = result["details"]
    assert (
        we["clarity"] == 0.4
        and {"check": "unresolved_reference", "span": "we"}.items() <= we["clarity_problems"][0].items()
    )
    assert bars["clarity_problems"][0]["span"] == "these bars" and "below 0.5" in bars["problem"]
    assert settings["clarity_threshold"] == CLARITY_THRESHOLD and settings["clarity_version"] == CLARITY_VERSION


def test_fail_mode_refuses_with_one_line_per_question_and_writes_nothing(ws, records, tmp_path, cli):
    sub, _ = unclear_submission(records, tmp_path / "sub", "clarity_fail")
    before = snapshot(ws.frozen)
    code, _, err = cli(["freeze", sub, "--instance", INSTANCE, "--clarity", "fail"], root=ws.root)
    assert code == 1
    lines = err.strip().splitlines()
    assert (
        "gate clarity failed: question q_002 (line 2): clarity 0.40 below 0.5 (unresolved_reference: 'we'" in lines[0]
    )
    assert any("q_003" in x and "these bars" in x for x in lines) and not any("q_004" in x for x in lines)
    assert snapshot(ws.frozen) == before


def test_the_threshold_is_an_option_and_is_checked(ws, records, tmp_path, cli):
    sub, _ = unclear_submission(records, tmp_path / "sub", "clarity_low")
    code, out, err = cli(
        ["freeze", sub, "--instance", INSTANCE, "--clarity", "fail", "--clarity-threshold", "0.3"], root=ws.root
    )
    assert code == 0, err
    result, settings = gate(ws.frozen / INSTANCE / "clarity_low" / "v1")
    assert result["status"] == "passed" and "0 of 6 (0%) below 0.3" in result["reason"]
    assert settings["clarity_threshold"] == 0.3
    code, _, err = cli(["freeze", sub, "--instance", INSTANCE, "--clarity-threshold", "1.5"], root=ws.root)
    assert code == 2 and "clarity-threshold" in err
    with pytest.raises(BadInput, match="clarity score version"):
        FreezeSettings(clarity_version="clarity-v0").check()


def test_clarity_score_command_on_a_submission_and_a_frozen_set(ws, records, tmp_path, cli):
    sub, rows = unclear_submission(records, tmp_path / "sub", "clarity_cmd")
    code, out, err = cli(["clarity", "score", sub, "--json", "--out", tmp_path / "scores.jsonl"], root=ws.root)
    assert code == 0, err
    report = json.loads(out)
    assert report["summary"]["below"] == 2 and report["summary"]["n"] == 6
    assert [q["score"] for q in report["questions"]] == [clarity_score(r["question"]).score for r in rows]
    written = [json.loads(x) for x in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert [w["question_id"] for w in written] == [r["question_id"] for r in rows]
    assert written[2]["checks"] == ["unresolved_reference"] and written[2]["version"] == CLARITY_VERSION
    code, _, err = cli(["freeze", sub, "--instance", INSTANCE], root=ws.root)
    assert code == 0, err
    frozen = ws.frozen / INSTANCE / "clarity_cmd" / "v1"
    code, out, err = cli(["clarity", "score", frozen], root=ws.root)
    assert code == 0, err
    assert out.splitlines()[-1].startswith(f"frozen set clarity_cmd v1: clarity ({CLARITY_VERSION}) mean")
    assert "0.40  q_003  unresolved_reference: 'these bars'" in out
    (frozen / "questions.jsonl").chmod(0o644)
    (frozen / "questions.jsonl").write_text((frozen / "questions.jsonl").read_text() + "\n ")
    code, _, err = cli(["clarity", "score", frozen], root=ws.root)
    assert code == 1 and len(err.strip().splitlines()) >= 1 and "sha256" in err
    code, _, err = cli(["clarity", "score", tmp_path / "nowhere"], root=ws.root)
    assert code == 2 and err.strip().count("\n") == 0 and "no such file" in err
    code, _, err = cli(["clarity", "score", sub, "--out", ws.frozen / "x.jsonl"], root=ws.root)
    assert code == 2
