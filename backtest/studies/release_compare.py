"""What a replayed run must reproduce: what readers and judges are shown exactly, the stored scores within
:data:`SCORE_TOLERANCE`.

A committed compact run (:mod:`backtest.studies.release`) holds two kinds of content:

* **what readers and judges are shown, and what they said**: each question's ranked documents (ids, ranks,
  dates and ``shown_sha256``, the hash of the exact text shown), the retriever spec, the judgments, the
  metrics computed from them, the contamination probe and ``RUN.json``. A replay must give these byte for byte.
* **scores** (:data:`SCORE_FIELDS`): each document's retrieval ``score``, the question's ``top1_similarity``
  and the two means of it in ``metrics.json``. These are float32 inner products of embeddings, stored at 6
  decimals, and another machine's float kernels move them: an H200 GPU and this repository's 2-core CPU,
  with the same weights in fp32, gave vectors that differ by at most 2.5e-7 in any component and scores
  that differ in the 6th decimal for 67% of the questions, with every document and rank the same (issue 42);
  a cold replay on this CPU moved some by 1e-6 (issue 30). So scores are compared within an absolute
  tolerance, :data:`SCORE_TOLERANCE` = 1e-4.

Why 1e-4: two unit vectors of 384 components, each component moved by at most e = 2.5e-7, move their inner
product by at most |dq| + |dd| <= 2 * sqrt(384) * e = 9.8e-6 (Cauchy-Schwarz, every component at the
measured worst at once), and rounding to 6 decimals adds at most 1e-6: 1.1e-5 in all, against 1e-6 seen.
1e-4 leaves a margin of 9 over that worst case. Storing fewer decimals instead would not hold: any rounding
has a boundary that a 1e-7 move can cross. The tolerance hides no change a reader or judge would see: ranks,
documents, the shown text and every judgment are compared exactly, so two documents whose scores lie within
float noise and swap places are reported, as they must be.

:func:`compare_run_files` is the whole comparison, kept apart from the replay's loop (which scores the runs)
so that each can change without the other.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any

SCORE_TOLERANCE = 1e-4
# file -> the dotted paths of its scores ("documents[].score": every document's score of each line)
SCORE_FIELDS: dict[str, tuple[str, ...]] = {
    "retrieval.jsonl": ("documents[].score", "top1_similarity"),
    "metrics.json": ("mean_top1_similarity", "release.mean_top1_retrieval_similarity"),
}
_MOVED = "__score__"  # stands for a score within tolerance when two lines are compared without their scores


@dataclass(frozen=True)
class Difference:
    """One thing a replay changed: the file, where in it (a question, a document, a key) and what."""

    file: str
    where: str
    what: str

    def line(self) -> str:
        """``file: where: what`` for messages."""
        return ": ".join(part for part in (self.file, self.where, self.what) if part)


@dataclass
class FileComparison:
    """A file's comparison: its differences (none: the replay reproduced it) and the largest score move."""

    name: str
    differences: list[Difference]
    max_score_move: float = 0.0


def compare_run_files(
    committed: dict[str, bytes], fresh: dict[str, bytes], tolerance: float = SCORE_TOLERANCE
) -> list[FileComparison]:
    """Each file of either run (name order) compared: bytes, or for files with :data:`SCORE_FIELDS` their
    content with scores within ``tolerance`` and everything else exactly."""
    out = []
    for name in sorted(set(committed) | set(fresh)):
        old, new = committed.get(name), fresh.get(name)
        if old is None or new is None:
            what = "new in the replay" if old is None else "missing from the replay"
            out.append(FileComparison(name, [Difference(name, "", what)]))
        elif old == new:
            out.append(FileComparison(name, []))
        elif name in SCORE_FIELDS:
            out.append(_compare_scored(name, old, new, tolerance))
        else:
            out.append(FileComparison(name, _first_lines_that_differ(name, old, new)))
    return out


def changed_files(comparisons: list[FileComparison]) -> list[str]:
    """The names of the files a replay changed (beyond score noise)."""
    return [c.name for c in comparisons if c.differences]


def _compare_scored(name: str, old: bytes, new: bytes, tolerance: float) -> FileComparison:
    paths = SCORE_FIELDS[name]
    try:
        if name.endswith(".jsonl"):
            old_rows = [json.loads(line) for line in old.splitlines() if line.strip()]
            new_rows = [json.loads(line) for line in new.splitlines() if line.strip()]
        else:
            old_rows, new_rows = [json.loads(old)], [json.loads(new)]
    except ValueError as exc:
        return FileComparison(name, [Difference(name, "", f"not JSON ({exc})")])
    differences: list[Difference] = []
    largest = 0.0
    if len(old_rows) != len(new_rows):
        differences.append(Difference(name, "", f"{len(new_rows)} lines, committed {len(old_rows)}"))
    for n, (a, b) in enumerate(zip(old_rows, new_rows), start=1):
        where = _where(a, n) if name.endswith(".jsonl") else ""
        moves: list[tuple[str, str, float]] = []
        a_rest, b_rest = _without_scores(a, paths, moves, "old"), _without_scores(b, paths, moves, "new")
        exact = _describe(a_rest, b_rest, where, name) if a_rest != b_rest else []
        differences += exact
        for path, x, y in _pair_moves(moves):
            if abs(x - y) <= tolerance:
                largest = max(largest, abs(x - y))
            elif not exact:  # a line that changed otherwise is reported by what changed
                differences.append(Difference(name, where, f"{path} {y} (committed {x}), beyond {tolerance:g}"))
    return FileComparison(name, differences, round(largest, 9))


def _finite(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def _where(row: Any, n: int) -> str:
    return f"question {row['question_id']}" if isinstance(row, dict) and "question_id" in row else f"line {n}"


def _without_scores(row: Any, paths: tuple[str, ...], moves: list, side: str) -> Any:
    """A copy of ``row`` with each score path's numbers set aside into ``moves`` (``(side, path, value)``) and
    replaced by a marker, so what remains compares exactly. A score that is not a number stays in place."""
    row = json.loads(json.dumps(row))
    for path in paths:
        head, _, field = path.rpartition(".")
        for i, holder in enumerate(_holders(row, head)):
            if isinstance(holder, dict) and _finite(holder.get(field)):
                moves.append((side, f"{path.replace('[]', f'[{i}]')}", float(holder[field])))
                holder[field] = _MOVED
    return row


def _holders(row: Any, head: str) -> list[Any]:
    """The objects that hold a path's last field: the row itself, a nested object, or each item of a list."""
    if not head:
        return [row]
    holders = [row]
    for part in head.split("."):
        key, many = (part[:-2], True) if part.endswith("[]") else (part, False)
        step = []
        for h in holders:
            value = h.get(key) if isinstance(h, dict) else None
            if many and isinstance(value, list):
                step += value
            elif not many and value is not None:
                step.append(value)
        holders = step
    return holders


def _pair_moves(moves: list[tuple[str, str, float]]) -> list[tuple[str, float, float]]:
    """(path, committed, replayed) for each score both sides hold."""
    old = {path: value for side, path, value in moves if side == "old"}
    new = {path: value for side, path, value in moves if side == "new"}
    return [(path, old[path], new[path]) for path in old if path in new]


def _describe(a: Any, b: Any, where: str, name: str) -> list[Difference]:
    """What differs between two lines whose scores were set aside (:func:`_without_scores`): for a retrieval
    line, each rank whose document changed, then the other top-level keys that differ."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return [Difference(name, where, "differs")]
    out = []
    docs_a, docs_b = a.get("documents"), b.get("documents")
    if isinstance(docs_a, list) and isinstance(docs_b, list):
        for i in range(max(len(docs_a), len(docs_b))):
            da = docs_a[i] if i < len(docs_a) else None
            db = docs_b[i] if i < len(docs_b) else None
            if _doc_key(da) != _doc_key(db):
                out.append(Difference(name, where, f"rank {i + 1} is {_doc_name(db)} (committed {_doc_name(da)})"))
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key) and not (key == "documents" and out):
            out.append(Difference(name, where, f"{key} differs"))
    return out or [Difference(name, where, "differs")]


def _doc_key(doc: Any) -> Any:
    return {k: v for k, v in doc.items() if k != "score"} if isinstance(doc, dict) else doc


def _doc_name(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "nothing"
    return f"{doc.get('id')} (rank {doc.get('rank')}, shown_sha256 {str(doc.get('shown_sha256', ''))[:12]})"


def _first_lines_that_differ(name: str, old: bytes, new: bytes, limit: int = 5) -> list[Difference]:
    """A file compared byte for byte: the lines that differ (named by question where a line has one)."""
    a, b = old.splitlines(), new.splitlines()
    out = []
    for n in range(max(len(a), len(b))):
        la, lb = (a[n] if n < len(a) else None), (b[n] if n < len(b) else None)
        if la != lb:
            row = None
            with contextlib.suppress(ValueError):
                row = json.loads(lb if lb is not None else la or b"null")
            out.append(Difference(name, _where(row, n + 1), "differs"))
            if len(out) == limit:
                break
    return out or [Difference(name, "", "differs")]


__all__ = ["SCORE_FIELDS", "SCORE_TOLERANCE", "Difference", "FileComparison", "changed_files", "compare_run_files"]
