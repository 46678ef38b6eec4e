"""Filled sheets back into labels: ``annotate import``.

``import_sheet`` validates a filled sheet (``sheet.csv`` as the export wrote it, or Label Studio's JSON export)
against its items -- labels in the taxonomy, cited ids among the item's documents, every item present exactly
once, engaged outcomes cite something and ``not_addressed`` cites nothing -- and writes ``labels/<rater>.jsonl``.
Every problem is reported, one line each. A reader already imported is replaced only when asked, under a lock on
the labels folder; ``adjudicated`` is no reader's name (:mod:`~backtest.analysis.reading.adjudication`).
:func:`row_label` holds the rules for one answer, which the reading desk applies to each answer it saves.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Sequence, TypedDict

from backtest.analysis.reading.adjudication import ADJUDICATED, LABELS_LOCK
from backtest.analysis.reading.items import (
    BETTER,
    AnnotationItem,
    Label,
    PairItem,
    PairLabel,
    citation_problems,
    read_records,
)
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import read_text_file, write_jsonl
from backtest.core.lock import file_lock
from backtest.core.records import OUTCOMES, PREMISE_STATUSES, check_safe_name
from backtest.core.text import CONTROL_CHARS

SHEET_COLUMNS = ("item_id", "outcome", "premise_status", "confidence", "cited", "notes")
PAIR_SHEET_COLUMNS = ("item_id", "better", "confidence", "notes")


def _read_sheet(sheet: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """The sheet's rows (line number, the needed columns' values). BadInput, one line, for a header that lacks a
    column or repeats one, a row with more fields than the header (an unquoted comma in the notes), and a
    control character anywhere (NUL, ANSI escape, bidirectional override)."""
    text = read_text_file(sheet).lstrip("\ufeff")
    bad = CONTROL_CHARS.search(text)  # never in a sheet
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise BadInput(
            f"{sheet}:{line}: control character U+{ord(bad.group()):04X} (NUL, an ANSI escape or a bidirectional "
            "override); remove it and import again"
        )
    reader = csv.DictReader(io.StringIO(text))
    header = list(reader.fieldnames or [])
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise BadInput(f"{sheet}: column(s) {', '.join(repeated)} appear twice in the header; keep one of each")
    missing = [c for c in columns if c not in header]
    if missing:
        raise BadInput(f"{sheet}: missing column(s) {', '.join(missing)} (need {', '.join(columns)})")
    rows = []
    try:
        for k, row in enumerate(reader, start=2):
            extra = row.get(None)
            if extra:
                raise BadInput(
                    f"{sheet}:{k}: {len(header) + len(extra)} fields where the header has {len(header)} "
                    "(an unquoted comma in the notes? quote the field)"
                )
            rows.append((k, {c: (row.get(c) or "").strip() for c in columns}))
    except csv.Error as exc:
        raise BadInput(f"{sheet}: bad CSV ({exc})") from None
    return rows


def _split_ids(value: str) -> list[str]:
    return [p for p in value.replace(";", " ").replace(",", " ").split() if p]


class ImportSummary(TypedDict):
    """:func:`import_sheet`: the labels file written, how many, whether pair verdicts, and whether the
    adjudicated labels were made from this reader's earlier ones (adjudicate again)."""

    labels: str
    n: int
    pairwise: bool
    adjudication_stale: bool


def import_sheet(
    sheet: str | Path,
    items_dir: str | Path,
    rater: str,
    out: str | Path | None = None,
    replace: bool = False,
    completed_by: str | None = None,
) -> ImportSummary:
    """Validate a filled sheet against its items; write ``labels/<rater>.jsonl``. CheckFailed lists every problem.

    A ``.json`` SHEET is Label Studio's JSON export of the tasks ``annotate export --format label-studio`` wrote
    (:mod:`~backtest.analysis.reading.labelstudio`; ``completed_by`` picks one annotator): its answers are checked
    as a sheet's rows are, and each annotation's ``lead_time`` becomes its label's seconds.

    A reader's file that exists is replaced only with ``replace``; the check and the write hold a lock on the
    labels folder (:data:`LABELS_LOCK`), so concurrent imports of one reader write once and refuse the rest.
    ``adjudicated`` is no reader's name: ``labels/adjudicated.jsonl`` is what :func:`adjudicate` derives."""
    sheet, items_dir = Path(sheet), Path(items_dir)
    target = _labels_target(rater, items_dir, out)
    pairwise = (items_dir / "pairs.jsonl").is_file()
    source = items_dir / ("pairs.jsonl" if pairwise else "items.jsonl")
    if not source.is_file():
        raise BadInput(f"{items_dir}: no items.jsonl or pairs.jsonl (give the folder annotate export wrote)")
    records = read_records(source, PairItem if pairwise else AnnotationItem)
    shown = {r.item_id: ([d.id for d in r.documents] if not pairwise else []) for r in records}
    rows, seconds = _answers(sheet, PAIR_SHEET_COLUMNS if pairwise else SHEET_COLUMNS, completed_by)
    labels, problems = _row_labels(sheet.name, rows, shown, pairwise, seconds)
    if problems:
        raise CheckFailed(f"{sheet}: {len(problems)} problem(s), nothing written: {problems[0]}", details=problems)
    with file_lock(target.parent / LABELS_LOCK):
        replaced = target.exists()
        if replaced and not replace:
            raise BadInput(
                f"{target}: exists (reader {rater!r} was imported before); pass --replace to replace their labels, "
                "or import this sheet under another --rater"
            )
        write_labels(target, labels, [r.item_id for r in records])
        stale = replaced and (target.parent / f"{ADJUDICATED}.jsonl").is_file()
    return ImportSummary(labels=str(target), n=len(labels), pairwise=pairwise, adjudication_stale=stale)


def _labels_target(rater: str, items_dir: Path, out: str | Path | None) -> Path:
    """Where a reader's labels go (``out``, else ``labels/<rater>.jsonl``); BadInput, one line, for an unsafe
    reader name or the reserved ``adjudicated``."""
    try:
        check_safe_name(rater, "rater name")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    target = Path(out) if out else items_dir / "labels" / f"{rater}.jsonl"
    if ADJUDICATED in (rater, target.stem):
        raise BadInput(
            f"{ADJUDICATED!r} is reserved: labels/{ADJUDICATED}.jsonl is written by `backtest annotate adjudicate` "
            "from two readers' labels and a decision per disagreement; import each reader under their own name"
        )
    return target


def _answers(
    sheet: Path, columns: Sequence[str], completed_by: str | None
) -> tuple[list[tuple[int, dict[str, str]]], dict[str, float]]:
    """The answers of a filled sheet as rows (line or task number, the columns' values) and, from a Label Studio
    export (a ``.json`` SHEET), each item's seconds; BadInput, one line, for a control character in an answer."""
    if sheet.suffix.lower() != ".json":
        if completed_by is not None:
            raise BadInput("--completed-by picks an annotator of a Label Studio export (a .json SHEET)")
        return _read_sheet(sheet, columns), {}
    from backtest.analysis.reading.labelstudio import read_export

    rows, seconds = read_export(sheet, columns, completed_by)
    for k, row in rows:
        if any(CONTROL_CHARS.search(v) for v in row.values()):
            raise BadInput(
                f"{sheet}: task {k}: a control character (NUL, an ANSI escape or a bidirectional "
                "override) in an answer; remove it and import again"
            )
    return rows, seconds


def _row_labels(
    name: str,
    rows: Sequence[tuple[int, dict[str, str]]],
    shown: dict[str, list[str]],
    pairwise: bool,
    seconds: dict[str, float],
) -> tuple[list[Any], list[str]]:
    """Every row's label (with its item's ``seconds`` when known) and every problem with the rows (``name``: the
    sheet's, to name each row): an unknown item, an item twice, one without a row, and what :func:`row_label`
    finds."""
    problems: list[str] = []
    labels: list[Any] = []
    seen: set[str] = set()
    for line, row in rows:
        where = f"{name}:{line}"
        item_id = row["item_id"]
        if item_id not in shown:
            problems.append(f"{where}: unknown item {item_id!r}")
            continue
        if item_id in seen:
            problems.append(f"{where}: {item_id} appears twice")
            continue
        seen.add(item_id)
        label, wrong = row_label(row, f"{where}: {item_id}", shown[item_id], pairwise)
        problems += wrong
        if label is not None:
            labels.append(label.model_copy(update={"seconds": seconds[item_id]}) if item_id in seconds else label)
    missing = [i for i in shown if i not in seen]
    if missing:
        problems.append(
            f"{name}: {len(missing)} item(s) have no row: "
            f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}"
        )
    return labels, problems


def write_labels(target: Path, labels: Sequence[Any], order: Sequence[str]) -> None:
    """A reader's labels file, atomically, in item order: one canonical JSON line a label (the only writer of that
    format: ``annotate import`` and the reading desk both call it, under the labels folder's lock)."""
    rank = {item: k for k, item in enumerate(order)}
    ordered = sorted(labels, key=lambda lab: rank[lab.item_id])
    write_jsonl(target, [lab.model_dump(mode="json", exclude_none=True) for lab in ordered])


def row_label(row: dict[str, str], where: str, shown: list[str], pairwise: bool) -> tuple[Any, list[str]]:
    """One answer, as a sheet row (the sheet's columns, values stripped), as its label or None and every reason it
    is not one (``where`` names the row): the rules of ``annotate import``, which the reading desk applies to each
    answer it saves."""
    conf, problems = row["confidence"], []
    if conf and conf not in ("1", "2", "3"):
        problems.append(f"{where}: confidence {conf!r} must be 1, 2 or 3")
        conf = ""
    label, wrong = (_pair_label if pairwise else _item_label)(row, where, conf, shown)
    return (None if problems else label), problems + wrong


def _pair_label(row: dict[str, str], where: str, conf: str, shown: list[str]) -> tuple[PairLabel | None, list[str]]:
    """A sheet row of a pair as its label, or None and why not (``where``: sheet, line and item)."""
    if row["better"] not in BETTER:
        return None, [f"{where}: better {row['better']!r} must be one of {', '.join(BETTER)}"]
    label = PairLabel(
        item_id=row["item_id"], better=row["better"], confidence=int(conf) if conf else None, notes=row["notes"]
    )
    return label, []


def _item_label(row: dict[str, str], where: str, conf: str, shown: list[str]) -> tuple[Label | None, list[str]]:
    """A sheet row of an item as its label, or None and every reason it is not one: labels outside the taxonomy,
    citations of documents the item did not show or cited twice, an engaged outcome citing nothing, a
    not_addressed one citing something (the last two only when the rest is sound)."""
    problems = []
    if row["outcome"] not in OUTCOMES:
        problems.append(f"{where}: outcome {row['outcome']!r} is not one of {', '.join(OUTCOMES)}")
    if row["premise_status"] not in PREMISE_STATUSES:
        problems.append(
            f"{where}: premise_status {row['premise_status']!r} is not one of {', '.join(PREMISE_STATUSES)}"
        )
    cited = _split_ids(row["cited"])
    problems += [f"{where}: {p}" for p in citation_problems(row["outcome"], cited, shown)]
    if problems:
        return None, problems
    label = Label(
        item_id=row["item_id"],
        outcome=row["outcome"],
        premise_status=row["premise_status"],
        confidence=int(conf) if conf else None,
        cited=cited,
        notes=row["notes"],
    )
    return label, []
