"""Label Studio for teams that already use it: tasks and a labelling configuration out, its JSON export back in.

``annotate export --format label-studio`` writes, beside the usual export, ``label-studio/tasks.json`` (one task
a blinded item or pair: ``{"data": {...}}``, the format Label Studio imports) and ``label-studio/config.xml``
(the labelling configuration: plain ``Text`` objects, never HTML, and one control a codebook field, named as the
sheet's columns). ``annotate import EXPORT.json`` reads Label Studio's JSON export (a list of tasks, each with
``data`` and ``annotations``; an annotation's ``result`` holds one region a control, ``{"from_name", "to_name",
"type", "value": {"choices": [...]}|{"text": [...]}}``, and its ``lead_time`` the seconds spent) back to the
sheet's rows, which the sheet's rules then check: the same answers give the same labels, with ``lead_time`` as the
label's seconds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence, TypedDict
from xml.sax.saxutils import quoteattr

from backtest.analysis.reading.items import AnnotationItem, PairItem
from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text, read_json
from backtest.core.records import OUTCOMES, PREMISE_STATUSES

TASKS = "tasks.json"
CONFIG = "config.xml"
CONFIDENCES = ("1", "2", "3")


def _documents_text(docs: Sequence[Any]) -> str:
    return "\n\n".join(f"[{k}] {d.id} ({d.published}) {d.title}\n{d.abstract}" for k, d in enumerate(docs, 1))


class Task(TypedDict):
    """One Label Studio task: the item's text fields under ``data`` (an item's or a pair's)."""

    data: dict[str, Any]


def task(record: AnnotationItem | PairItem) -> Task:
    """One Label Studio task (``{"data": ...}``) for a blinded item or pair: text fields only."""
    if isinstance(record, PairItem):
        data: dict[str, Any] = {
            "item_id": record.item_id,
            "context": _documents_text(record.context),
            "a": record.a.question + (f"\nPremise: {record.a.premise}" if record.a.premise else ""),
            "b": record.b.question + (f"\nPremise: {record.b.premise}" if record.b.premise else ""),
        }
    else:
        q = record.question
        details = [f"{f}: {getattr(q, f)}" for f in ("premise", "hypothesis") if getattr(q, f, None)]
        data = {
            "item_id": record.item_id,
            "question": q.question,
            "details": "\n".join(details) or "(no premise or hypothesis)",
            "documents": _documents_text(record.documents),
            "cited_options": [{"value": d.id} for d in record.documents],
        }
    return Task(data=data)


def _choices(name: str, to: str, values: Sequence[str], required: bool = True) -> str:
    options = "".join(f"\n    <Choice value={quoteattr(v)}/>" for v in values)
    req = ' required="true"' if required else ""
    head = f'  <Header value="{name}"/>\n  <Choices name="{name}" toName="{to}" choice="single"{req}>'
    return f"{head}{options}\n  </Choices>"


def config(pairwise: bool) -> str:
    """The labelling configuration: the item's text, then one control a sheet column."""
    from backtest.analysis.reading.items import BETTER

    if pairwise:
        body = [
            '  <Header value="$item_id"/>',
            '  <Header value="Context (past papers)"/>\n  <Text name="context" value="$context"/>',
            '  <Header value="a"/>\n  <Text name="a" value="$a"/>',
            '  <Header value="b"/>\n  <Text name="b" value="$b"/>',
            _choices("better", "a", BETTER),
            _choices("confidence", "a", CONFIDENCES, required=False),
            '  <Header value="notes"/>\n  <TextArea name="notes" toName="a" maxSubmissions="1"/>',
        ]
    else:
        body = [
            '  <Header value="$item_id"/>',
            '  <Text name="question" value="$question"/>\n  <Text name="details" value="$details"/>',
            '  <Header value="Documents shown"/>\n  <Text name="documents" value="$documents"/>',
            _choices("outcome", "question", OUTCOMES),
            _choices("premise_status", "question", PREMISE_STATUSES),
            _choices("confidence", "question", CONFIDENCES, required=False),
            '  <Header value="cited (the documents an engaged outcome rests on)"/>\n'
            '  <Choices name="cited" toName="documents" choice="multiple" value="$cited_options"/>',
            '  <Header value="notes"/>\n  <TextArea name="notes" toName="question" maxSubmissions="1"/>',
        ]
    return "<View>\n" + "\n".join(body) + "\n</View>\n"


def write_label_studio(out: Path, records: Sequence[AnnotationItem | PairItem]) -> None:
    """``out/label-studio/tasks.json`` and ``config.xml`` for the export's records."""
    folder = out / "label-studio"
    pairwise = bool(records) and isinstance(records[0], PairItem)
    tasks = json.dumps([task(r) for r in records], ensure_ascii=False, indent=1) + "\n"
    atomic_write_text(folder / TASKS, tasks)
    atomic_write_text(folder / CONFIG, config(pairwise))


def _completed_by(annotation: dict[str, Any]) -> set[str]:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return {str(v) for k, v in who.items() if k in ("id", "email") and v is not None}
    return set() if who is None else {str(who)}


def _value(region: dict[str, Any]) -> str:
    raw = region.get("value")
    value: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for key in ("choices", "text"):
        if isinstance(value.get(key), list):
            sep = " " if key == "choices" else "\n"
            return sep.join(str(v) for v in value[key])
    if "number" in value:
        return str(value["number"])
    return ""


def read_export(
    path: Path, columns: Sequence[str], completed_by: str | None = None
) -> tuple[list[tuple[int, dict[str, str]]], dict[str, float]]:
    """Label Studio's JSON export as the sheet's rows (task number, row) and each item's seconds (the
    annotation's ``lead_time``). BadInput, one line, for a file that is not such an export, a task without an
    item id, or a task with several annotations when no ``completed_by`` picks one."""
    data = read_json(path)
    if not isinstance(data, list):
        raise BadInput(f"{path}: not a Label Studio JSON export (a list of tasks)")
    rows, seconds = [], {}
    for k, t in enumerate(data, start=1):
        where = f"{path}: task {k}"
        if not isinstance(t, dict) or not isinstance(t.get("data"), dict):
            raise BadInput(f"{where}: not a task (an object with data)")
        item = t["data"].get("item_id")
        if not isinstance(item, str):
            raise BadInput(f"{where}: its data has no item_id (tasks of `annotate export --format label-studio`)")
        annotations = [
            a
            for a in t.get("annotations") or []
            if isinstance(a, dict)
            and not a.get("was_cancelled")
            and (completed_by is None or completed_by in _completed_by(a))
        ]
        if not annotations:
            continue  # an item with no row: the import names it
        if len(annotations) > 1:
            raise BadInput(
                f"{where} ({item}): {len(annotations)} annotations; import one annotator at a time (--completed-by)"
            )
        a = annotations[0]
        row = {c: "" for c in columns} | {"item_id": item}
        for region in a.get("result") or []:
            if isinstance(region, dict) and region.get("from_name") in row and region["from_name"] != "item_id":
                row[region["from_name"]] = _value(region).strip()
        lead = a.get("lead_time")
        if lead is not None:
            if isinstance(lead, bool) or not isinstance(lead, (int, float)) or not math.isfinite(lead) or lead < 0:
                raise BadInput(f"{where} ({item}): lead_time {lead!r} is not a number of seconds")
            seconds[item] = round(float(lead), 1)
        rows.append((k, row))
    return rows, seconds
