"""What a replay compares (backtest.studies.release_compare), on a committed compact run of the repository's
release (results/astro-2025/random_claims): what readers and judges are shown exactly, scores within 1e-4.

No scoring here: the committed files are compared with edited copies of themselves, the way a replay on
another machine would hand them back (tests/test_release.py replays a real run end to end).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backtest.studies.release import KEPT, compared
from backtest.studies.release_compare import SCORE_TOLERANCE, changed_files, compare_run_files

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "results" / "astro-2025" / "random_claims" / "offline-daf5934a7369"


@pytest.fixture(scope="module")
def committed() -> dict[str, bytes]:
    files = {name: (RUN / name).read_bytes() for name in KEPT if (RUN / name).is_file()}
    assert set(files) == set(KEPT), "the committed run lost a file"
    return files


def lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines()]


def jsonl(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(r, sort_keys=True, ensure_ascii=False).encode() + b"\n" for r in rows)


def nudged(files: dict[str, bytes], by: float) -> dict[str, bytes]:
    """``files`` with every stored score moved by ``by``: each document's score, each top1_similarity and the
    two means of it in metrics.json, rounded to 6 decimals as the run stores them."""
    rows = lines(files["retrieval.jsonl"])
    for row in rows:
        for doc in row["documents"]:
            doc["score"] = round(doc["score"] + by, 6)
        if row["top1_similarity"] is not None:
            row["top1_similarity"] = round(row["top1_similarity"] + by, 6)
    metrics = json.loads(files["metrics.json"])
    metrics["mean_top1_similarity"] = round(metrics["mean_top1_similarity"] + by, 6)
    metrics["release"]["mean_top1_retrieval_similarity"] += by
    return {
        **files,
        "retrieval.jsonl": jsonl(rows),
        "metrics.json": (json.dumps(metrics, indent=2, sort_keys=True) + "\n").encode(),
    }


def test_every_score_moved_by_1e_6_is_no_change(committed):
    fresh = nudged(committed, 1e-6)
    assert fresh["retrieval.jsonl"] != committed["retrieval.jsonl"]
    assert fresh["metrics.json"] != committed["metrics.json"]
    comparisons = compare_run_files(committed, fresh)
    assert changed_files(comparisons) == []
    moved = {c.name: c.max_score_move for c in comparisons}
    assert 0.9e-6 <= moved["retrieval.jsonl"] <= 1.1e-6 and 0.9e-6 <= moved["metrics.json"] <= 1.1e-6
    assert moved["judgments.jsonl"] == 0.0


def test_a_score_beyond_the_tolerance_is_a_change(committed):
    rows = lines(committed["retrieval.jsonl"])
    rows[4]["documents"][2]["score"] = round(rows[4]["documents"][2]["score"] + 3 * SCORE_TOLERANCE, 6)
    replayed = compared(RUN, committed, {**committed, "retrieval.jsonl": jsonl(rows)})
    assert replayed.changed == ["retrieval.jsonl"]
    [difference] = replayed.differences
    assert difference.where == f"question {rows[4]['question_id']}"
    assert "documents[2].score" in difference.what and "beyond 0.0001" in difference.what


def test_two_swapped_ranks_are_a_change_named_by_question(committed):
    """Scores within noise, but two documents trade places: what the judge was shown changed."""
    rows = lines(nudged(committed, 1e-6)["retrieval.jsonl"])
    docs = rows[7]["documents"]
    first, second = docs[0], docs[1]
    docs[0] = {**second, "rank": 1, "score": first["score"]}
    docs[1] = {**first, "rank": 2, "score": second["score"]}
    replayed = compared(RUN, committed, {**committed, "retrieval.jsonl": jsonl(rows)})
    assert replayed.changed == ["retrieval.jsonl"]
    where = {d.where for d in replayed.differences}
    assert where == {f"question {rows[7]['question_id']}"}
    whats = [d.what for d in replayed.differences]
    assert whats[0].startswith(f"rank 1 is {docs[0]['id']}") and whats[1].startswith(f"rank 2 is {docs[1]['id']}")


def test_shown_text_dates_and_the_retriever_spec_are_compared_exactly(committed):
    for edit in (
        lambda row: row["documents"][3].update(shown_sha256="0" * 64),
        lambda row: row["documents"][3].update(published="2026-01-01"),
        lambda row: row["retriever"]["params"].update(index="hnsw"),
        lambda row: row.update(k=7),
    ):
        rows = lines(committed["retrieval.jsonl"])
        edit(rows[0])
        comparisons = compare_run_files(committed, {**committed, "retrieval.jsonl": jsonl(rows)})
        assert changed_files(comparisons) == ["retrieval.jsonl"]


def test_a_changed_judgment_is_a_change_named_by_question(committed):
    raw = committed["judgments.jsonl"].splitlines(keepends=True)
    assert b'"outcome":"not_addressed"' in raw[10]
    raw[10] = raw[10].replace(b'"outcome":"not_addressed"', b'"outcome":"posed_but_open"')
    replayed = compared(RUN, committed, {**committed, "judgments.jsonl": b"".join(raw)})
    assert replayed.changed == ["judgments.jsonl"]
    question = json.loads(raw[10])["question_id"]
    assert [d.line() for d in replayed.differences] == [f"judgments.jsonl: question {question}: differs"]


def test_a_metric_that_is_not_a_score_is_compared_exactly(committed):
    metrics = json.loads(committed["metrics.json"])
    metrics["coverage"]["rate"] += 1e-9
    fresh = {**committed, "metrics.json": (json.dumps(metrics, indent=2, sort_keys=True) + "\n").encode()}
    assert changed_files(compare_run_files(committed, fresh)) == ["metrics.json"]


def test_a_missing_or_new_file_is_a_change(committed):
    fewer = {k: v for k, v in committed.items() if k != "contamination.json"}
    assert changed_files(compare_run_files(committed, fewer)) == ["contamination.json"]
    assert changed_files(compare_run_files(fewer, committed)) == ["contamination.json"]


def test_the_seal_is_derived_and_must_seal_the_committed_files(committed):
    """SEAL.json is not compared byte for byte (a replay's seal of bytes moved within the tolerance differs),
    but a committed seal that no longer seals the committed files is a change."""
    fresh = nudged(committed, 1e-6)
    fresh["SEAL.json"] = b'{"moved": true}\n'
    assert compared(RUN, committed, fresh).changed == []
    forged = {**committed, "SEAL.json": committed["SEAL.json"].replace(b'"run_id"', b'"run_id" ', 1)}
    replayed = compared(RUN, forged, committed)
    assert replayed.changed == ["SEAL.json"] and "does not seal" in replayed.differences[0].line()
