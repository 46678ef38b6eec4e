"""Adjudication: two readers' disagreements, settled one decision each, and the check that the adjudicated labels
still follow from them.

``adjudicated`` is no reader's name: :func:`adjudicate` writes ``labels/adjudicated.jsonl`` from two readers'
labels and a decision per disagreement (each decision one of the two readings, with its reason), and
``adjudication.jsonl`` with every decision; :func:`check_adjudicated` checks that the first still follows from
the readers' labels and the decisions as they are now. Imports (:mod:`~backtest.analysis.reading.sheets`) and
adjudication hold the labels folder's lock (:data:`LABELS_LOCK`) while they check and write.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import ConfigDict, Field, field_validator

from backtest.analysis.reading.items import Label, read_labels
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import iter_jsonl, write_jsonl
from backtest.core.lock import file_lock
from backtest.core.records import ENGAGED_OUTCOMES, Versioned, check_safe_name, parse_record
from backtest.core.text import CONTROL_CHARS

#: an ANSI escape sequence (colour, cursor), taken out of adjudication reasons whole
ANSI_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
#: the lock file, in a labels folder, that imports and adjudication hold while they check and write
LABELS_LOCK = ".labels.lock"
#: the labels adjudication derives (no reader may be imported under this name)
ADJUDICATED = "adjudicated"
#: the two readers adjudication settles unless told others
READERS = ("reader_a", "reader_b")


class Dispute(TypedDict):
    """One (item, field) two readers read differently, with both readings (what every kind of set's adjudication
    lists; a reading is a label value, or a whole reading for a generated question)."""

    item_id: str
    field: str
    reader_a: Any
    reader_b: Any


class Disagreement(Dispute):
    """:func:`disagreements`: a dispute as a decision to fill in (``annotate adjudicate`` prints one a line)."""

    adjudicated: str
    reason: str


class AdjudicationCounts(TypedDict):
    """What an adjudication wrote: ``n`` labels (or lines), ``decided`` decisions."""

    n: int
    decided: int


class Decision(Versioned):
    """One adjudicated disagreement: the field, both readings, the label decided and why (control characters,
    ANSI escapes and bidirectional overrides are taken out of the reason: it is printed and published)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    field: Literal["outcome", "premise_status"]
    reader_a: str
    reader_b: str
    adjudicated: str
    reason: str = Field(min_length=1)
    readers: tuple[str, str] | None = None  # whose readings, when not reader_a's and reader_b's
    seconds: float | None = Field(default=None, ge=0)  # time spent deciding (``annotate serve --adjudicate``)

    @field_validator("reason")
    @classmethod
    def _printable(cls, value: str) -> str:
        cleaned = CONTROL_CHARS.sub("", ANSI_SEQUENCE.sub("", value)).strip()
        if not cleaned:
            raise ValueError("reason is empty once control characters are taken out")
        return cleaned


def disagreements(items_dir: str | Path, readers: tuple[str, str] = READERS) -> list[Disagreement]:
    """Every (item, field) on which the two readers' labels differ, as a decision to fill in (``adjudicated`` and
    ``reason`` empty)."""
    a, b = (_reader(Path(items_dir), r) for r in readers)
    return _disagreements(a, b, f"{items_dir}: {readers[0]} and {readers[1]} labelled different items")


def _disagreements(a: dict[str, Label], b: dict[str, Label], mismatch: str) -> list[Disagreement]:
    if set(a) != set(b):
        raise BadInput(mismatch)
    out: list[Disagreement] = []
    for item in sorted(a):
        for field in ("outcome", "premise_status"):
            va, vb = getattr(a[item], field), getattr(b[item], field)
            if va != vb:
                out.append(
                    {"item_id": item, "field": field, "reader_a": va, "reader_b": vb, "adjudicated": "", "reason": ""}
                )
    return out


def _reader(items_dir: Path, name: str) -> dict[str, Label]:
    path = items_dir / "labels" / f"{name}.jsonl"
    if not path.is_file():
        raise BadInput(f"{path}: no such reader's labels (import the sheet with `backtest annotate import`)")
    return {lab.item_id: lab for lab in read_labels(path)}


def _decide(
    items_dir: Path, decisions_path: Path, readers: tuple[str, str] = READERS
) -> tuple[list[Label], list[Decision], list[str]]:
    """The adjudicated labels of ``items_dir`` from the two readers' labels (reader_a's and reader_b's unless
    ``readers`` names others) and the decisions (in item order), the decisions kept (:func:`adjudicate`), and every
    problem with the decisions (none: all is sound)."""
    a, b = _reader(items_dir, readers[0]), _reader(items_dir, readers[1])
    mismatch = f"{items_dir}: {readers[0]} and {readers[1]} labelled different items"
    wanted = {(d["item_id"], d["field"]): d for d in _disagreements(a, b, mismatch)}
    decided: dict[tuple[str, str], Decision] = {}
    problems = []
    for lineno, obj in iter_jsonl(decisions_path):
        try:
            d = parse_record(Decision, obj, f"{decisions_path}:{lineno}")
        except BadInput as exc:
            problems.append(str(exc))
            continue
        key = (d.item_id, d.field)
        if key not in wanted:
            problems.append(
                f"{decisions_path}:{lineno}: {d.item_id} {d.field}: the readers agree there (or no such item)"
            )
        elif d.adjudicated not in (d.reader_a, d.reader_b) or (d.reader_a, d.reader_b) != (
            wanted[key]["reader_a"],
            wanted[key]["reader_b"],
        ):
            problems.append(f"{decisions_path}:{lineno}: {d.item_id} {d.field}: decide one of the two readings as read")
        elif key in decided:
            problems.append(f"{decisions_path}:{lineno}: {d.item_id} {d.field}: decided twice")
        else:
            decided[key] = d
    missing = sorted(set(wanted) - set(decided))
    problems += [f"{item} {field}: no decision" for item, field in missing]
    labels = []
    for item in sorted(a):
        value = {
            f: decided[(item, f)].adjudicated if (item, f) in decided else getattr(a[item], f)
            for f in ("outcome", "premise_status")
        }
        engaged = value["outcome"] in ENGAGED_OUTCOMES
        cited = (
            sorted({c for r in (a[item], b[item]) if r.outcome in ENGAGED_OUTCOMES for c in r.cited}) if engaged else []
        )
        reasons = [decided[(item, f)].reason for f in ("outcome", "premise_status") if (item, f) in decided]
        labels.append(Label(item_id=item, cited=cited, notes="; ".join(reasons), **value))
    return labels, [decided[k] for k in sorted(decided)], problems


def adjudicate(
    items_dir: str | Path, decisions_path: str | Path, readers: tuple[str, str] = READERS
) -> AdjudicationCounts:
    """Write ``labels/adjudicated.jsonl`` and ``adjudication.jsonl`` from two readers' labels (``readers``) and a
    decision for each of their disagreements (each decision one of the two readings, with its reason). An item's
    label is the readers' where they agree; the cited documents of an engaged item are those either reader cited
    who found it engaged. Refuses (nothing written) a missing, extra or invalid decision. Readers other than
    reader_a and reader_b are named on every decision written (``readers``), so :func:`check_adjudicated` knows
    whose labels the adjudicated ones follow from."""
    items_dir = Path(items_dir)
    check_readers(readers)
    with file_lock(items_dir / "labels" / LABELS_LOCK):
        labels, decided, problems = _decide(items_dir, Path(decisions_path), readers)
        if readers != READERS:
            decided = [d.model_copy(update={"readers": readers}) for d in decided]
        if problems:
            raise CheckFailed(f"{decisions_path}: {len(problems)} problem(s), nothing written: {problems[0]}", problems)
        write_jsonl(
            items_dir / "labels" / f"{ADJUDICATED}.jsonl",
            [lab.model_dump(mode="json", exclude_none=True) for lab in labels],
        )
        write_jsonl(
            items_dir / "adjudication.jsonl",
            [d.model_dump(mode="json", exclude={"schema_version"}, exclude_none=True) for d in decided],
        )
    return AdjudicationCounts(n=len(labels), decided=len(decided))


def adjudicated_readers(items_dir: Path) -> tuple[str, str]:
    """Whose labels ``adjudication.jsonl`` settled: the ``readers`` its decisions name, else reader_a and reader_b."""
    path = items_dir / "adjudication.jsonl"
    for _, row in iter_jsonl(path) if path.is_file() else ():
        named = row.get("readers")
        if named is not None:
            try:
                return check_readers(tuple(named) if isinstance(named, list) else named)
            except BadInput as exc:
                raise CheckFailed(f"{path}:1: readers {named!r}: {exc}") from None
        break
    return READERS


def check_readers(readers: Any) -> tuple[str, str]:
    """Two different readers' safe names, neither ``adjudicated`` (BadInput, one line, otherwise)."""
    if not isinstance(readers, tuple) or len(readers) != 2 or not all(isinstance(r, str) for r in readers):
        raise BadInput("name two readers")
    try:
        for r in readers:
            check_safe_name(r, "reader name")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if readers[0] == readers[1] or ADJUDICATED in readers:
        raise BadInput(f"adjudicate two different readers, neither {ADJUDICATED!r} (got {readers[0]}, {readers[1]})")
    return readers


def check_adjudicated(items_dir: str | Path) -> None:
    """CheckFailed, one line, unless ``labels/adjudicated.jsonl`` (when there is one) is exactly what
    :func:`adjudicate` derives from ``labels/reader_a.jsonl``, ``labels/reader_b.jsonl`` and
    ``adjudication.jsonl`` as they are now: a hand-written file, one left stale by a reader imported again, or
    decisions edited since, would override every reader."""
    items_dir = Path(items_dir)
    written = items_dir / "labels" / f"{ADJUDICATED}.jsonl"
    if not written.is_file():
        return
    again = f"`backtest annotate adjudicate {items_dir} --decisions DECISIONS`"
    readers = adjudicated_readers(items_dir)
    needed = [items_dir / "labels" / f"{readers[0]}.jsonl", items_dir / "labels" / f"{readers[1]}.jsonl"]
    needed.append(items_dir / "adjudication.jsonl")
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        raise CheckFailed(
            f"{written}: {', '.join(missing)} missing, so the adjudicated labels cannot be checked to follow from "
            f"the readers' labels and the decisions; they are written only by {again}"
        )
    derived, _, problems = _decide(items_dir, items_dir / "adjudication.jsonl", readers)
    if problems:
        raise CheckFailed(
            f"{written}: adjudication.jsonl no longer settles the readers' disagreements ({problems[0]}); a reader "
            f"was imported again since, or the decisions were edited: decide again with {again}"
        )
    have = {lab.item_id: lab for lab in read_labels(written)}
    derived_ids = {lab.item_id for lab in derived}
    differ = sorted({lab.item_id for lab in derived if have.get(lab.item_id) != lab} | (set(have) - derived_ids))
    if differ:
        raise CheckFailed(
            f"{written}: {differ[0]} is not what the readers' labels and adjudication.jsonl give "
            f"({len(differ)} item(s) differ): a stale or hand-written file; write it with {again}"
        )
