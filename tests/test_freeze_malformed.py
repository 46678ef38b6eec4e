"""A corpus of malformed submissions: each exits 2 (bad input) or 1 (a failed gate) with a
one-line message, and leaves ``frozen/`` and the ledger byte-identical."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from backtest.submit.freeze import freeze_submission

from .submission_helpers import make_submission, snapshot, writable_ws


def _rows(sub: Path) -> list[dict]:
    return [json.loads(line) for line in (sub / "questions.jsonl").read_text().splitlines()]


def _write_rows(sub: Path, rows: list[dict]) -> None:
    (sub / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _meta(sub: Path) -> dict:
    return json.loads((sub / "metadata.json").read_text())


def _write_meta(sub: Path, meta) -> None:
    (sub / "metadata.json").write_text(json.dumps(meta))


def edit_row(index: int, **changes):
    def apply(sub: Path) -> None:
        rows = _rows(sub)
        rows[index].update(changes)
        _write_rows(sub, rows)

    return apply


def drop_field(name: str, index: int = 1):
    def apply(sub: Path) -> None:
        rows = _rows(sub)
        del rows[index][name]
        _write_rows(sub, rows)

    return apply


def edit_meta(**changes):
    def apply(sub: Path) -> None:
        meta = _meta(sub)
        meta.update(changes)
        _write_meta(sub, meta)

    return apply


def drop_meta(name: str):
    def apply(sub: Path) -> None:
        meta = _meta(sub)
        del meta[name]
        _write_meta(sub, meta)

    return apply


def raw_questions(data: bytes):
    def apply(sub: Path) -> None:
        (sub / "questions.jsonl").write_bytes(data)

    return apply


def append_raw(data: bytes):
    def apply(sub: Path) -> None:
        with open(sub / "questions.jsonl", "ab") as handle:
            handle.write(data)

    return apply


def duplicate_id(sub: Path) -> None:
    rows = _rows(sub)
    rows[3]["question_id"] = rows[1]["question_id"]
    _write_rows(sub, rows)


def truncate_last_line(sub: Path) -> None:
    data = (sub / "questions.jsonl").read_bytes()
    (sub / "questions.jsonl").write_bytes(data[:-40])


def symlinked_questions(sub: Path) -> None:
    target = sub.parent / "elsewhere.jsonl"
    shutil.move(sub / "questions.jsonl", target)
    os.symlink(target, sub / "questions.jsonl")


def questions_is_a_folder(sub: Path) -> None:
    (sub / "questions.jsonl").unlink()
    (sub / "questions.jsonl").mkdir()


def remove(name: str):
    def apply(sub: Path) -> None:
        (sub / name).unlink()

    return apply


def contract(**fields):
    base = {
        "literature_gap": "gap",
        "hypothesis": "h",
        "minimal_test": "t",
        "decisive_metric": "m",
        "supporting_result": "rises",
        "falsifying_result": "falls",
    }
    base.update(fields)
    return edit_row(0, **{k: v for k, v in base.items() if v is not None})


# (case id, mutation, expected exit code, a fragment the one-line message must contain)
CASES = [
    ("bad-json", append_raw(b"{not json}\n"), 2, "bad JSON"),
    ("truncated-last-line", truncate_last_line, 2, "bad JSON"),
    ("array-line", append_raw(b"[1, 2, 3]\n"), 2, "expected a JSON object"),
    ("string-line", append_raw(b'"a question?"\n'), 2, "expected a JSON object"),
    ("missing-question_id", drop_field("question_id"), 2, "question_id"),
    ("missing-question", drop_field("question"), 2, "question"),
    ("missing-evidence", drop_field("source_evidence_ids"), 2, "source_evidence_ids"),
    ("missing-cutoff_date", drop_field("cutoff_date"), 2, "cutoff_date"),
    ("missing-rank", drop_field("rank"), 2, "rank"),
    ("empty-evidence-list", edit_row(2, source_evidence_ids=[]), 2, "source_evidence_ids"),
    ("rank-as-string", edit_row(2, rank="3"), 2, "rank"),
    ("frozen-as-string", edit_row(2, frozen="yes"), 2, "frozen"),
    ("evidence-as-string", edit_row(2, source_evidence_ids="2510.00001"), 2, "source_evidence_ids"),
    ("question-as-number", edit_row(2, question=42), 2, "question"),
    ("evidence-id-as-number", edit_row(2, source_evidence_ids=[2510.00001]), 2, "source_evidence_ids"),
    ("bad-cutoff-format", edit_row(2, cutoff_date="31/10/2025"), 2, "cutoff_date"),
    ("bad-generated_at", edit_row(2, generated_at="yesterday"), 2, "generated_at"),
    ("empty-question_id", edit_row(2, question_id=""), 2, "question_id"),
    ("duplicate-json-key", append_raw(b'{"question_id": "a", "question_id": "b"}\n'), 2, "duplicate key"),
    ("nan-constant", append_raw(b'{"question_id": "q", "rank": NaN}\n'), 2, "NaN"),
    ("empty-file", raw_questions(b""), 2, "no questions"),
    ("blank-lines-only", raw_questions(b"\n  \n\n"), 2, "no questions"),
    ("huge-line", append_raw(b'{"question": "' + b"x" * 300_000 + b'?"}\n'), 2, "over the"),
    ("non-utf8-questions", append_raw(b'{"question": "caf\xe9?"}\n'), 2, "not valid UTF-8"),
    (
        "byte-order-mark",
        lambda s: raw_questions(b"\xef\xbb\xbf" + (s / "questions.jsonl").read_bytes())(s),
        2,
        "byte-order mark",
    ),
    ("questions-missing", remove("questions.jsonl"), 2, "no such file"),
    ("metadata-missing", remove("metadata.json"), 2, "no such file"),
    ("questions-is-a-link", symlinked_questions, 2, "not a link"),
    ("questions-is-a-folder", questions_is_a_folder, 2, "not a regular file"),
    ("metadata-bad-json", lambda s: (s / "metadata.json").write_text('{"system_name": '), 2, "bad JSON"),
    ("metadata-is-a-list", lambda s: _write_meta(s, [1, 2]), 2, "expected a JSON object"),
    ("metadata-empty", lambda s: (s / "metadata.json").write_text(""), 2, "empty file"),
    (
        "metadata-non-utf8",
        lambda s: (s / "metadata.json").write_bytes(b'{"system_name": "\xff"}'),
        2,
        "not valid UTF-8",
    ),
    ("metadata-missing-system_name", drop_meta("system_name"), 2, "system_name"),
    ("metadata-missing-cutoff", drop_meta("cutoff_date"), 2, "cutoff_date"),
    ("system-name-dotdot", edit_meta(system_name="../x"), 2, "system_name"),
    ("system-name-absolute", edit_meta(system_name="/etc/passwd"), 2, "system_name"),
    ("system-name-slash", edit_meta(system_name="a/b"), 2, "system_name"),
    ("system-name-hidden", edit_meta(system_name=".hidden"), 2, "system_name"),
    ("system-name-empty", edit_meta(system_name=""), 2, "system_name"),
    ("n_questions-negative", edit_meta(n_questions=-1), 2, "n_questions"),
    ("n_questions-as-string", edit_meta(n_questions="6"), 2, "n_questions"),
    # well-formed but failing a gate: exit 1, naming the question
    ("duplicate-ids", duplicate_id, 1, "duplicate question_id"),
    ("wrong-cutoff-question", edit_row(4, cutoff_date="2025-10-30"), 1, "q_005"),
    ("wrong-cutoff-metadata", edit_meta(cutoff_date="2024-12-31"), 1, "cutoff_date 2024-12-31"),
    ("n_questions-mismatch", edit_meta(n_questions=99), 1, "n_questions is 99"),
    ("no-question-mark", edit_row(1, question="State the main result."), 1, "q_002"),
    ("generated-in-the-future", edit_row(2, generated_at="2999-01-01T00:00:00Z"), 1, "later than the freeze"),
    ("unknown-evidence-id", edit_row(0, source_evidence_ids=["2510.99999"]), 1, "2510.99999"),
    (
        "llm-not-declared",
        lambda s: _write_rows(s, [dict(r, generation_system="direct_gpt-4.1_v1") for r in _rows(s)]),
        1,
        "llm_components",
    ),
    ("contract-field-empty", contract(minimal_test="  "), 1, "minimal_test"),
    ("contract-field-missing", contract(decisive_metric=None), 1, "decisive_metric"),
    ("contract-same-results", contract(falsifying_result="Rises."), 1, "falsifying_result is the same"),
    ("question-frozen-false", edit_row(3, frozen=False), 1, "frozen is false"),
]


@pytest.fixture(scope="module")
def base(astro_ws, tmp_path_factory):
    """A workspace holding one frozen set already, and a valid 6-question submission to mutate."""
    root = tmp_path_factory.mktemp("malformed")
    ws = writable_ws(astro_ws, root / "ws")
    valid = make_submission(ws, root / "valid", n=6, seed=7, system="hand_m")
    freeze_submission(valid, "astro-2025", ws)
    return ws, valid


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,mutate,code,fragment", CASES, ids=[c[0] for c in CASES])
def test_malformed_submission_is_refused_and_nothing_changes(base, tmp_path, cli, name, mutate, code, fragment):
    ws, valid = base
    sub = tmp_path / "sub"
    shutil.copytree(valid, sub)
    mutate(sub)
    before = snapshot(ws.frozen)
    got, out, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert got == code, (name, err)
    assert len(errors) == 1 and fragment in errors[0], (name, err)
    assert "Traceback" not in err and out == ""
    assert snapshot(ws.frozen) == before


def test_unknown_instance_is_bad_input(base, cli):
    ws, valid = base
    code, _, err = cli(["freeze", valid, "--instance", "no-such-instance"], root=ws.root)
    assert code == 2 and "unknown instance" in err


def test_valid_submission_still_freezes(base, cli, tmp_path):
    ws, valid = base
    code, _, err = cli(["freeze", valid, "--instance", "astro-2025", "--new-version"], root=ws.root)
    assert code == 0, err
    assert (ws.frozen / "astro-2025" / "hand_m" / "v2").is_dir()
