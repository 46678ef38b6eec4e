"""A plain ``backtest freeze`` of content already frozen reuses that set (the rule of ``freeze_once``, which the
studies use); ``--new-version`` seals a fresh one. Unsafe question ids are refused at freeze."""

from __future__ import annotations

import json

import pytest

from backtest.submit.freeze import FROZEN_FILE, freeze_once, freeze_submission
from backtest.submit.loading import FreezeSettings

from .submission_helpers import make_submission, snapshot, writable_ws


@pytest.fixture
def ws(astro_ws, tmp_path):
    return writable_ws(astro_ws, tmp_path / "ws")


def ledger_lines(ws) -> list[dict]:
    return [json.loads(line) for line in ws.ledger.read_text().splitlines()]


def test_identical_content_is_reused_and_nothing_is_written(ws, tmp_path, cli):
    sub = make_submission(ws, tmp_path / "sub", n=6, seed=3)
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    v1 = ws.frozen / "astro-2025" / "hand_v1" / "v1"
    before = snapshot(ws.frozen)

    code, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    assert out.splitlines()[0].startswith("reused frozen hand_v1 v1 for astro-2025: identical")
    assert "nothing written" in out.splitlines()[0] and f"folder: {v1}" in out
    assert snapshot(ws.frozen) == before  # no v2, no ledger line, not even a lock file touched

    # a copy of the submission in another folder is the same content
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("questions.jsonl", "metadata.json"):
        (copy / name).write_bytes((sub / name).read_bytes())
    code, out, err = cli(["freeze", copy, "--instance", "astro-2025", "--json"], root=ws.root)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["reused"] is True and doc["path"] == str(v1) and doc["version"] == 1
    assert snapshot(ws.frozen) == before

    # --new-version forces a fresh seal: v2 and a second ledger line
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025", "--new-version"], root=ws.root)
    assert code == 0, err
    assert out.startswith("frozen hand_v1 v2 for astro-2025")
    assert [e["path"] for e in ledger_lines(ws)] == ["frozen/astro-2025/hand_v1/v1", "frozen/astro-2025/hand_v1/v2"]
    # and a plain freeze after it still reuses the first set
    code, out, _ = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0 and "reused frozen hand_v1 v1" in out and len(ledger_lines(ws)) == 2


def test_changed_metadata_settings_or_tampering_freeze_anew(ws, tmp_path, cli):
    sub = make_submission(ws, tmp_path / "sub", n=6, seed=4)
    assert cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)[0] == 0
    # the same questions under other gate settings: the gates run again, a new version
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025", "--max-question-chars", "700"], root=ws.root)
    assert code == 0 and out.startswith("frozen hand_v1 v2"), err
    # metadata is part of the content: a changed description is a new version
    meta = json.loads((sub / "metadata.json").read_text())
    (sub / "metadata.json").write_text(json.dumps({**meta, "description": meta["description"] + " Revised."}))
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0 and out.startswith("frozen hand_v1 v3"), err
    # a tampered frozen set is never reused
    v3 = ws.frozen / "astro-2025" / "hand_v1" / "v3"
    frozen = v3 / FROZEN_FILE
    frozen.write_text(frozen.read_text().replace('"n_questions": 6', '"n_questions": 7'))
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0 and out.startswith("frozen hand_v1 v4"), err
    assert len(ledger_lines(ws)) == 4


def test_the_library_rule_is_the_cli_rule(ws, tmp_path):
    """``freeze_once`` (the studies' rule) and the plain CLI freeze agree; ``freeze_submission`` always seals."""
    sub = make_submission(ws, tmp_path / "sub", n=5, seed=5, system="hand_lib")
    first, reused = freeze_once(sub, "astro-2025", ws)
    assert not reused and first.name == "v1"
    again, reused = freeze_once(sub, "astro-2025", ws, settings=FreezeSettings())
    assert reused and again == first
    assert freeze_submission(sub, "astro-2025", ws).name == "v2"
    other, reused = freeze_once(sub, "astro-2025", ws, dedup="fail")
    assert not reused and other.name == "v3"


@pytest.mark.parametrize("qid", ["../../q", "q/../../x", "/etc/passwd"])
def test_path_like_question_ids_are_refused_at_freeze(ws, tmp_path, cli, qid):
    """Question ids name files, anchors and URLs in reports and sites: ``../../q`` is one line and exit 2."""
    sub = make_submission(ws, tmp_path / "sub", n=4, seed=6)
    rows = [json.loads(line) for line in (sub / "questions.jsonl").read_text().splitlines()]
    rows[1]["question_id"] = qid
    (sub / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = snapshot(ws.frozen)
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "question id" in err and qid in err
    assert "Traceback" not in err
    assert snapshot(ws.frozen) == before
