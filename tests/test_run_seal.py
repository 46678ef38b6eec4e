"""Judgments are checked where they are read, and a finished run is sealed (issue 39, item 10, the judgments part).

Every line of a committed run's ``judgments.jsonl`` rewritten to ``answered`` was read as it was written: the
judge-only rate became 100%. Now such a judgment (an engaged outcome that cites nothing, unflagged) is refused
wherever a Judgment is parsed, each finished run carries ``SEAL.json`` (the sha256 of its files; report and
compare check it), and ``backtest verify RUN_DIR`` checks the seal and every judgment against the constraint
rules and its question's retrieved documents. On copies of the committed space-2016 runs.
"""

from __future__ import annotations

import json
import shutil

import pytest

from backtest.core.fileio import iter_jsonl
from backtest.scoring.runseal import SEAL_FILE, seal_bytes
from backtest.studies.release import compact_files
from tests.conftest import REPO, run_cli

COMMITTED = sorted(p.parent for p in REPO.glob("results/*/*/*/RUN.json"))
RUN = REPO / "results" / "space-2016" / "random_claims" / "offline-b589c41cf9ca"
LABELS = REPO / "judges" / "validation" / "release-space-2016-v1"


@pytest.fixture
def ws(tmp_path):
    """A workspace with the committed corpora, manifests, judges and frozen sets (links) and a copy of space-2016's
    committed runs (RUN and the others its label set sampled: an estimate re-derives the whole sample)."""
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("corpora", "manifests", "judges", "frozen"):
        (root / name).symlink_to((REPO / name).resolve())
    shutil.copytree(REPO / "results" / "space-2016", root / "results" / "space-2016")
    return root


def _rewrite(run_dir, edit) -> None:
    rows = [row for _, row in iter_jsonl(run_dir / "judgments.jsonl")]
    for row in rows:
        edit(row)
    (run_dir / "judgments.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def test_every_committed_run_is_sealed_and_verifies(capsys):
    assert len(COMMITTED) == 14  # the reference release's 10 and the gated evidence_graph's four (issue 40)
    for run_dir in COMMITTED:
        code, out, err = run_cli(["verify", run_dir], root=REPO, capsys=capsys)
        assert code == 0 and out.startswith("OK run "), err


def test_the_committed_seals_are_what_compaction_and_replay_write():
    """``release replay`` compares the compact files it makes with the committed ones: the seal is made from
    those files alone, so it reproduces whenever they do."""
    for run_dir in COMMITTED:
        files = compact_files(run_dir)
        assert files[SEAL_FILE] == (run_dir / SEAL_FILE).read_bytes()
        assert files[SEAL_FILE] == seal_bytes(run_dir.name, {n: b for n, b in files.items() if n != SEAL_FILE})


def test_judgments_rewritten_to_answered_are_refused_where_read(ws, capsys):
    run_dir = ws / RUN.relative_to(REPO)
    _rewrite(run_dir, lambda row: row.update(outcome="answered"))
    code, _, err = run_cli(["verify", run_dir], root=ws, capsys=capsys)
    assert code == 1 and "judgments.jsonl differs from its seal" in err
    assert "judgments.jsonl:1: record: Value error, outcome 'answered' cites no document" in err
    code, _, err = run_cli(["report", run_dir], root=ws, capsys=capsys)
    assert code == 1 and "judgments.jsonl differs from its seal" in err and len(err.splitlines()) <= 2
    code, _, err = run_cli(["compare", run_dir], root=ws, capsys=capsys)
    assert code == 1 and "judgments.jsonl differs from its seal" in err

    (run_dir / SEAL_FILE).unlink()  # unsealed: the judgments themselves are refused where they are parsed
    code, out, err = run_cli(["estimate", run_dir, "--labels", LABELS], root=ws, capsys=capsys)
    assert code == 2 and "cites no document" in err and "100.0%" not in out
    code, _, err = run_cli(["verify", run_dir], root=ws, capsys=capsys)
    assert code == 1 and "SEAL.json is missing" in err


def test_a_citation_of_a_document_never_retrieved_is_named(ws, capsys):
    """Rewritten consistently (a citation, the seal made again), the judgments still break the rules if they
    cite what the judge was not shown."""
    run_dir = ws / RUN.relative_to(REPO)

    def forge(row):
        row.update(outcome="answered", evidence=[{"id": "9999.99999", "relevance": "x"}], supporting_ids=["9999.99999"])

    _rewrite(run_dir, forge)
    files = {n: (run_dir / n).read_bytes() for n in ("RUN.json", "judgments.jsonl", "retrieval.jsonl", "metrics.json")}
    (run_dir / SEAL_FILE).write_bytes(seal_bytes(run_dir.name, files))
    code, _, err = run_cli(["verify", run_dir], root=ws, capsys=capsys)
    assert code == 1 and "contamination.json is not in its seal" in err
    assert "judgments.jsonl:1: cited ids not among the documents shown: 9999.99999" in err
