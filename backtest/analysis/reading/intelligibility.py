"""The records of an intelligibility reading set: blinded questions about tensions, read yes/no.

A set (``judges/validation/evidence-graph-v*``, written by ``scripts/evidence_graph_reading.py``) is a folder:

* ``items.jsonl``: what readers see, one :class:`IntelligibilityItem` a line (the tension's type and its
  definition, the question, the claim sentences with their papers' titles and dates, the check the generator made);
* ``guide.md``: the reading guide;
* ``decode.json`` (private): an :class:`IntelligibilityDecode`, the kind of set (``intelligibility``), the
  judgements it asks and which instance and type each item came from; the reading desk serves the set by it;
* ``key.json`` (private): the same mapping as a plain object, which the results scripts read (kept as written);
* ``labels/<reader>.jsonl``: one :class:`IntelligibilityLabel` a line (``{"id", "intelligible", "real",
  "reason"}``, plus ``seconds`` when read at the desk);
* ``adjudication.jsonl``: for each item on which the two passes differ, the label decided (the same record,
  without seconds), each judgement one of the two passes' readings.

Every record carries a ``schema_version`` (absent in the files written before it: version 1); an unknown version is
rejected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from backtest.analysis.reading.annotate import LABELS_LOCK, Decision
from backtest.analysis.reading.items import read_records
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_json
from backtest.core.lock import file_lock
from backtest.core.records import Output, Versioned, parse_record, write_output

KIND = "intelligibility"
#: the yes/no judgements a set asks of every item, in the order its labels write them
JUDGEMENTS = ("intelligible", "real")
SET_ITEM_ID = re.compile(r"[a-z]{1,4}-\d{3,6}")


def _check_id(value: str) -> str:
    if not SET_ITEM_ID.fullmatch(value):
        raise ValueError(f"item id {value!r} must look like eh-001")
    return value


class Claim(BaseModel):
    """One claim sentence as readers see it, with its paper's title and date (and id, in the first set)."""

    model_config = ConfigDict(extra="forbid")

    date: str
    title: str
    sentence: str
    paper: str | None = None


class _Keyed(Versioned):
    """A record of one item of a set, keyed by its opaque ``id`` (``item_id``, as the desk calls every kind's)."""

    model_config = ConfigDict(extra="forbid")

    id: str

    _id = field_validator("id")(classmethod(lambda cls, v: _check_id(v)))

    @property
    def item_id(self) -> str:
        return self.id


class IntelligibilityItem(_Keyed):
    """One blinded question about a tension (a line of ``items.jsonl``)."""

    type: str
    definition: str
    question: str
    claims: list[Claim] = Field(min_length=1)
    check: str = ""


class ItemSource(BaseModel):
    """Where one item came from (never shown to readers)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    instance: str
    type: str
    asked: bool | None = None  # in the set as asked after the reading (evidence-graph-v3)


class IntelligibilityDecode(Output):
    """A set's private ``decode.json``: its kind, the judgements it asks, each item's source (in item order)."""

    kind: Literal["intelligibility"]
    judgements: list[Literal["intelligible", "real"]]
    items: list[ItemSource]

    @model_validator(mode="after")
    def _unique(self) -> IntelligibilityDecode:
        ids = [i.id for i in self.items]
        if len(set(ids)) != len(ids):
            raise ValueError("items: an item id appears twice")
        if tuple(self.judgements) != JUDGEMENTS:
            raise ValueError(f"judgements: this build reads sets that ask {', '.join(JUDGEMENTS)}")
        return self


class IntelligibilityLabel(_Keyed):
    """One reader's reading of one item: the two yes/no judgements, a short reason, the seconds spent (desk)."""

    intelligible: StrictBool
    real: StrictBool
    reason: str = Field(min_length=1)
    seconds: float | None = Field(default=None, ge=0)  # reading time (``annotate serve``); None when hand-written


class IntelligibilityDecision(Decision):
    """One adjudicated disagreement of two passes on one judgement of one item (a line of the desk's
    ``decisions-A-B.jsonl``): both readings, the one taken, why."""

    field: Literal["intelligible", "real"]  # type: ignore[assignment]
    reader_a: StrictBool  # type: ignore[assignment]
    reader_b: StrictBool  # type: ignore[assignment]
    adjudicated: StrictBool  # type: ignore[assignment]


def read_items(folder: Path) -> list[IntelligibilityItem]:
    """The items of a set's ``items.jsonl``."""
    return read_records(folder / "items.jsonl", IntelligibilityItem)


def read_labels(path: str | Path) -> dict[str, IntelligibilityLabel]:
    """One reader's labels (or an ``adjudication.jsonl``) by item id, in file order; BadInput naming file:line
    for a line that is not a label (an unknown schema_version, a judgement not true or false, no reason)."""
    return {lab.id: lab for lab in read_records(path, IntelligibilityLabel)}


def decode_from_key(folder: Path) -> IntelligibilityDecode:
    """The ``decode.json`` of a set written with only ``key.json`` (item -> instance, type[, asked]), items in
    the order of its ``items.jsonl``; BadInput when the two do not hold the same items."""
    items = read_items(folder)
    key = read_json(folder / "key.json")
    if not isinstance(key, dict) or sorted(key) != sorted(i.id for i in items):
        raise BadInput(f"{folder}: key.json and items.jsonl do not hold the same items")
    sources = [parse_record(ItemSource, {"id": i.id, **key[i.id]}, f"{folder}/key.json: {i.id}") for i in items]
    return IntelligibilityDecode(
        schema_version=IntelligibilityDecode.SCHEMA_VERSION, kind=KIND, judgements=list(JUDGEMENTS), items=sources
    )


def write_decode(folder: Path, decode: IntelligibilityDecode) -> Path:
    """``decode.json`` (atomic, checked as its model)."""
    return write_output(folder / "decode.json", IntelligibilityDecode, decode)


def read_decode(folder: Path) -> IntelligibilityDecode:
    from backtest.core.records import read_output

    return read_output(IntelligibilityDecode, folder / "decode.json")


# --------------------------------------------------------------------------- two passes and their adjudication


def _pass(folder: Path, name: str, ids: set[str]) -> dict[str, IntelligibilityLabel]:
    path = folder / "labels" / f"{name}.jsonl"
    if not path.is_file():
        raise BadInput(f"{path}: no such file (reader {name} has labelled nothing)")
    labels = read_labels(path)
    if set(labels) != ids:
        raise BadInput(f"{path}: {name} has labelled {len(labels)} of the {len(ids)} items; adjudicate a whole pass")
    return labels


def disagreements(folder: Path, readers: tuple[str, str]) -> list[dict[str, Any]]:
    """Every (item, judgement) on which the two passes differ, in item order, with both readings."""
    order = [i.id for i in read_items(folder)]
    a, b = (_pass(folder, r, set(order)) for r in readers)
    return [
        {"item_id": i, "field": f, "reader_a": getattr(a[i], f), "reader_b": getattr(b[i], f)}
        for i in order
        for f in JUDGEMENTS
        if getattr(a[i], f) != getattr(b[i], f)
    ]


def _readings(dispute: dict[str, Any]) -> tuple[bool, bool]:
    return dispute["reader_a"], dispute["reader_b"]


def adjudicate(folder: Path, decisions_path: Path, readers: tuple[str, str]) -> dict[str, Any]:
    """Write ``adjudication.jsonl`` from the two passes and one decision for each of their disagreements: a line
    for each item they differ on (in item order), each judgement the agreed one or the reading decided, the reason
    the decisions give (their distinct reasons joined by " / "). The format of the committed sets' files (the
    fields ``id``, ``intelligible``, ``real``, ``reason``), which the results script reads. Refuses (CheckFailed,
    nothing written) a disagreement without a decision, or a decision of none."""
    folder = Path(folder)
    with file_lock(folder / "labels" / LABELS_LOCK):
        disputes = disagreements(folder, readers)
        a = read_labels(folder / "labels" / f"{readers[0]}.jsonl")
        decided: dict[tuple[str, str], IntelligibilityDecision] = {}
        for lineno, obj in iter_jsonl(decisions_path):
            d = parse_record(IntelligibilityDecision, obj, f"{decisions_path}:{lineno}")
            decided[(d.item_id, d.field)] = d
        wanted = {(d["item_id"], d["field"]): d for d in disputes}
        stale = sorted(
            k for k, d in decided.items() if k not in wanted or (d.reader_a, d.reader_b) != _readings(wanted[k])
        )
        missing = sorted(set(wanted) - set(decided))
        if stale or missing:
            what = (
                f"no decision on {missing[0]}"
                if missing
                else f"the decision on {stale[0]} is not of the passes' readings there (read again since?)"
            )
            raise CheckFailed(f"{decisions_path}: {what}; nothing written")
        rows = []
        for item_id in dict.fromkeys(d["item_id"] for d in disputes):
            mine = [decided[(item_id, f)] for f in JUDGEMENTS if (item_id, f) in decided]
            values = {f: getattr(a[item_id], f) for f in JUDGEMENTS} | {d.field: d.adjudicated for d in mine}
            reason = " / ".join(dict.fromkeys(d.reason for d in mine))
            rows.append(IntelligibilityLabel(id=item_id, reason=reason, **values))
        text = "".join(json.dumps(r.model_dump(include={"id", *JUDGEMENTS, "reason"})) + "\n" for r in rows)
        atomic_write_text(folder / "adjudication.jsonl", text)
    return {"n": len(rows), "decided": len(decided)}
