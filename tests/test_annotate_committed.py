"""The committed label sets (judges/validation/) go through ``annotate import`` and ``annotate adjudicate`` again to
the same bytes: a sheet written from each reader's committed labels imports to that reader's committed file, and the
release sets' committed decisions adjudicate to their committed adjudicated labels. Guards the reading modules'
split by job (export, sheets, merge, adjudication) and any later change to them."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from backtest.analysis.reading.annotate import PAIR_SHEET_COLUMNS, SHEET_COLUMNS, adjudicate, import_sheet
from backtest.analysis.reading.intelligibility import QUESTIONS_KIND, adjudicate_questions

VALIDATION = Path(__file__).resolve().parents[1] / "judges" / "validation"


def _kind(folder: Path) -> str | None:
    decode = folder / "decode.json"
    return json.loads(decode.read_text()).get("kind") if decode.is_file() else None


# outcome items and pairs (``annotate export``'s sets); the intelligibility sets' readers label other fields
SETS = sorted(
    d.name
    for d in VALIDATION.iterdir()
    if _kind(d) in ("items", "pairs") and (d / "labels" / "reader_a.jsonl").is_file()
)
#: the generated-question intelligibility sets (``scripts/intelligibility_items.py``), adjudicated by the desk
QUESTION_SETS = sorted(d.name for d in VALIDATION.iterdir() if _kind(d) == QUESTIONS_KIND)


def sheet_of(labels: Path, pairwise: bool) -> str:
    """A filled sheet holding exactly the answers of a labels file."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PAIR_SHEET_COLUMNS if pairwise else SHEET_COLUMNS)
    for line in labels.read_text().splitlines():
        lab = json.loads(line)
        confidence = lab.get("confidence") or ""
        if pairwise:
            writer.writerow([lab["item_id"], lab["better"], confidence, lab.get("notes", "")])
        else:
            cited = ";".join(lab.get("cited", []))
            writer.writerow(
                [lab["item_id"], lab["outcome"], lab["premise_status"], confidence, cited, lab.get("notes", "")]
            )
    return buf.getvalue()


def test_there_are_committed_sets():
    assert {"outcomes-v1", "pairs-v1", "release-astro-2025-v1", "release-space-2016-v1"} <= set(SETS)


@pytest.mark.parametrize("name", SETS)
def test_a_committed_set_imports_and_adjudicates_to_the_same_bytes(name, tmp_path):
    committed = VALIDATION / name
    pairwise = (committed / "pairs.jsonl").is_file()
    records = "pairs.jsonl" if pairwise else "items.jsonl"
    shutil.copy(committed / records, tmp_path / records)
    for reader in ("reader_a", "reader_b"):
        sheet = tmp_path / f"{reader}.csv"
        sheet.write_text(sheet_of(committed / "labels" / f"{reader}.jsonl", pairwise))
        result = import_sheet(sheet, tmp_path, reader)
        assert result["pairwise"] == pairwise and not result["adjudication_stale"]
        assert (tmp_path / "labels" / f"{reader}.jsonl").read_bytes() == (
            committed / "labels" / f"{reader}.jsonl"
        ).read_bytes()
    if name.startswith("release-"):  # adjudicated by `annotate adjudicate` (the older sets' notes predate it)
        adjudicate(tmp_path, committed / "adjudication.jsonl")
        for written in ("labels/adjudicated.jsonl", "adjudication.jsonl"):
            assert (tmp_path / written).read_bytes() == (committed / written).read_bytes()


def test_there_are_committed_question_sets():
    assert {"intelligibility-v1", "intelligibility-v6"} <= set(QUESTION_SETS)


@pytest.mark.parametrize("name", QUESTION_SETS)
def test_a_committed_question_set_adjudicates_to_the_same_bytes(name, tmp_path):
    """The committed adjudication, given back as the desk's decisions, writes the committed adjudication.jsonl and
    labels/adjudicated.jsonl byte for byte (the desk's disputes, decisions and counts on real readings)."""
    committed = VALIDATION / name
    shutil.copy(committed / "items.jsonl", tmp_path / "items.jsonl")
    (tmp_path / "labels").mkdir()
    for reader in ("reader_a", "reader_b"):
        shutil.copy(committed / "labels" / f"{reader}.jsonl", tmp_path / "labels" / f"{reader}.jsonl")
    rows = [json.loads(line) for line in (committed / "adjudication.jsonl").read_text().splitlines()]
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(
        "".join(
            json.dumps(
                {
                    "item_id": r["item_id"],
                    "field": "reading",
                    "reader_a": r["reader_a"],
                    "reader_b": r["reader_b"],
                    "adjudicated": r["decision"],
                    "reason": r["why"],
                }
            )
            + "\n"
            for r in rows
        )
    )
    result = adjudicate_questions(tmp_path, decisions, ("reader_a", "reader_b"))
    assert result == {"n": len(read_lines(committed / "labels" / "adjudicated.jsonl")), "decided": len(rows)}
    for written in ("labels/adjudicated.jsonl", "adjudication.jsonl"):
        assert (tmp_path / written).read_bytes() == (committed / written).read_bytes()


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()
