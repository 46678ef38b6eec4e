"""Freezing real hand-made submissions against astro-2025: the gates, versioning, the ledger,
and refusals that name the question and the evidence id."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from backtest.core.fileio import write_json
from backtest.core.seal import compute_seal, sha256_file, with_seal
from backtest.corpus.instance import load_instance
from backtest.submit.freeze import FROZEN_FILE, is_frozen_and_intact, load_frozen
from backtest.submit.ledger import GENESIS, entry_hash
from backtest.submit.loading import parse_metadata, parse_questions

from .conftest import SQB
from .submission_helpers import (
    make_submission,
    metadata,
    past_records,
    question_rows,
    snapshot,
    writable_ws,
    write_submission,
)


@pytest.fixture
def ws(astro_ws, tmp_path):
    return writable_ws(astro_ws, tmp_path / "ws")


def gates_of(folder: Path) -> dict[str, dict]:
    return {g["name"]: g for g in json.loads((folder / FROZEN_FILE).read_text())["gates"]}


@pytest.mark.skipif(not (SQB / "submissions").is_dir(), reason="reference release not found")
def test_reference_release_submissions_parse_unchanged():
    files = sorted((SQB / "submissions").rglob("questions.jsonl"))
    assert len(files) >= 8
    for path in files:
        data = path.read_bytes()
        questions, lines, raws = parse_questions(data, path)
        assert len(questions) == sum(1 for line in data.splitlines() if line.strip())
        assert b"".join(raws) == data  # every byte accounted for: nothing dropped or rewritten
        assert all(q.question_id and q.source_evidence_ids for q in questions)
    for path in sorted((SQB / "submissions").rglob("metadata.json")):
        meta, _ = parse_metadata(path.read_bytes(), path)
        assert meta.system_name == path.parent.name


def test_hand_made_submission_freezes_and_versions(ws, tmp_path, cli):
    sub = make_submission(ws, tmp_path / "sub")
    code, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    v1 = ws.frozen / "astro-2025" / "hand_v1" / "v1"
    assert "frozen hand_v1 v1 for astro-2025: 12 questions" in out
    for name in ("questions.jsonl", "metadata.json"):
        assert (v1 / name).read_bytes() == (sub / name).read_bytes()
    frozen = json.loads((v1 / FROZEN_FILE).read_text())
    assert frozen["seal"] == compute_seal(frozen)
    assert frozen["files"]["questions.jsonl"] == sha256_file(sub / "questions.jsonl")
    assert frozen["instance_seal"] == load_instance("astro-2025", ws).seal
    assert frozen["frozen_at"].endswith("Z")
    gates = gates_of(v1)
    assert gates["evidence_in_past"]["status"] == "passed"
    assert gates["near_duplicates"]["status"] == "passed"
    assert gates["falsifiable_contract"]["status"] == "skipped" and gates["falsifiable_contract"]["reason"]
    assert all(g["status"] != "failed" for g in gates.values())

    ok, reason = is_frozen_and_intact(v1, ws)
    assert ok, reason
    bundle = load_frozen(v1)
    assert [q.question_id for q in bundle.questions] == [f"q_{k:03d}" for k in range(1, 13)]
    assert bundle.metadata.system_name == "hand_v1" and bundle.frozen.version == 1

    # A second freeze of the same system with --new-version mints v2; v1 is untouched.
    # (A plain freeze of identical content reuses v1: tests/test_freeze_reuse.py.)
    before = snapshot(v1)
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025", "--new-version"], root=ws.root)
    assert code == 0, err
    assert snapshot(v1) == before
    assert (ws.frozen / "astro-2025" / "hand_v1" / "v2" / FROZEN_FILE).is_file()
    lines = [json.loads(line) for line in ws.ledger.read_text().splitlines()]
    assert [e["seq"] for e in lines] == [0, 1]
    assert lines[0]["prev_hash"] == GENESIS and lines[1]["prev_hash"] == lines[0]["hash"]
    assert all(entry_hash(e) == e["hash"] for e in lines)
    assert [e["path"] for e in lines] == ["frozen/astro-2025/hand_v1/v1", "frozen/astro-2025/hand_v1/v2"]

    code, out, err = cli(["verify", v1], root=ws.root)
    assert code == 0 and out.startswith("OK frozen set"), err
    code, out, err = cli(["verify", ws.frozen], root=ws.root)
    assert code == 0 and "OK ledger" in out, err


def test_future_corpus_evidence_is_refused_naming_question_and_id(ws, tmp_path, cli, astro_ws):
    rows = question_rows(past_records(ws))
    future_id = sorted(load_future_ids(astro_ws))[0]
    rows[4]["source_evidence_ids"].append(future_id)
    sub = write_submission(tmp_path / "sub", rows, metadata(len(rows)))
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 1
    first = err.splitlines()[0]
    assert "q_005" in first and future_id in first and "not in the past corpus" in first
    assert not ws.frozen.exists()


def load_future_ids(ws) -> set[str]:
    from backtest.corpus.store import CorpusStore

    return set(CorpusStore.open("astro-2025-future", ws).dates)


def early_cutoff_instance(ws, cutoff: dt.date) -> str:
    """A variant of astro-2025 with an earlier cutoff, sealed by hand: its past corpus then holds
    papers dated after the cutoff (what a stale or tampered past corpus would look like)."""
    data = load_instance("astro-2025", ws).model_dump(mode="json")
    data.update(instance_id="astro-2025-early", cutoff=cutoff.isoformat())
    write_json(ws.instance_path("astro-2025-early"), with_seal(data))
    return "astro-2025-early"


def test_past_paper_dated_after_the_cutoff_is_refused(ws, tmp_path, cli):
    cutoff = dt.date(2025, 9, 30)
    instance_id = early_cutoff_instance(ws, cutoff)
    records = past_records(ws, n=40, seed=3)
    early = [r for r in records if r.published <= cutoff][:5]
    late = next(r for r in records if r.published > cutoff)
    rows = question_rows(early, cutoff=cutoff.isoformat())
    rows[2]["source_evidence_ids"] = [rows[2]["source_evidence_ids"][0], late.id]
    sub = write_submission(tmp_path / "sub", rows, metadata(len(rows), cutoff=cutoff.isoformat()))
    code, _, err = cli(["freeze", sub, "--instance", instance_id], root=ws.root)
    assert code == 1
    first = err.splitlines()[0]
    assert "q_003" in first and late.id in first and f"dated {late.published}, after the cutoff {cutoff}" in first
    assert not ws.frozen.exists()
    # The same questions without the late paper freeze under the early instance.
    rows[2]["source_evidence_ids"] = rows[2]["source_evidence_ids"][:1]
    write_submission(sub, rows, metadata(len(rows), cutoff=cutoff.isoformat()))
    code, _, err = cli(["freeze", sub, "--instance", instance_id], root=ws.root)
    assert code == 0, err


def test_versioned_arxiv_ids_and_foreign_id_schemes(ws, tmp_path, cli):
    rows = question_rows(past_records(ws, n=4))
    rows[0]["source_evidence_ids"] = [f"arXiv:{rows[0]['source_evidence_ids'][0]}v2"]
    sub = write_submission(tmp_path / "sub", rows, metadata(len(rows)))
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    # ADS bibcodes cannot be checked against an arXiv corpus: skipped with a reason, never passed.
    for row in rows:
        row["source_evidence_ids"] = ["2019MNRAS.482.1485P"]
    write_submission(sub, rows, metadata(len(rows)))
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    gate = gates_of(ws.frozen / "astro-2025" / "hand_v1" / "v2")["evidence_in_past"]
    assert gate["status"] == "skipped" and "ads-bibcode" in gate["reason"]
    before = snapshot(ws.frozen)
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025", "--strict"], root=ws.root)
    assert code == 1 and "evidence_in_past skipped" in err
    assert snapshot(ws.frozen) == before
