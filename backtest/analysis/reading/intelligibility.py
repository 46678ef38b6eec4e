"""The records of intelligibility reading sets: blinded questions, read for whether they can be understood.

Two families, each a ``decode.json`` kind the reading desk serves.

**Tension questions** (kind ``intelligibility``; ``judges/validation/evidence-graph-v*``, written by
``scripts/evidence_graph_reading.py``), a folder of:

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

**Generated questions** (kind ``question_intelligibility``; ``judges/validation/intelligibility-v*``, written by
``scripts/intelligibility_items.py``, read by ``scripts/intelligibility_study.py``): ``items.jsonl`` (a
:class:`QuestionItem` a line: the question and its premise), ``guide.md``, ``key.json`` and ``decode.json``
(:class:`QuestionDecode`: item -> instance, generator, question id), ``labels/<reader>.jsonl`` (a
:class:`QuestionLabel` a line: ``intelligible`` yes/no, a ``reason`` code when no, ``real_conflict`` yes/no/na,
a ``note``), and, adjudicated, ``adjudication.jsonl`` (per item the passes read differently: both readings, the
one decided, ``why``) and ``labels/adjudicated.jsonl`` (every item's final reading).

Every record carries a ``schema_version`` (absent in the files written before it: version 1); an unknown version is
rejected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from backtest.analysis.reading.adjudication import AdjudicationCounts, Dispute
from backtest.analysis.reading.annotate import LABELS_LOCK, Decision
from backtest.analysis.reading.items import read_records
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_json
from backtest.core.lock import file_lock
from backtest.core.records import Output, Versioned, parse_record, write_output

KIND = "intelligibility"
QUESTIONS_KIND = "question_intelligibility"
#: the decode.json kinds of reading sets (not exports of runs: nothing in them grounds an estimate)
READING_KINDS = (KIND, QUESTIONS_KIND)
#: the yes/no judgements a set asks of every item, in the order its labels write them
JUDGEMENTS = ("intelligible", "real")
SET_ITEM_ID = re.compile(r"[a-z]{1,4}-\d{3,6}")
QUESTION_ITEM_ID = re.compile(r"i[0-9a-f]{8}")
#: why a generated question is not intelligible (the guide's codes, first that applies)
REASON_CODES = ("unresolved_reference", "garbled", "no_subject", "not_a_question", "other")
REAL_CONFLICT = ("yes", "no", "na")
#: a generated question's reading (what adjudication settles; the note is free text)
READING = ("intelligible", "real_conflict", "reason")


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
    sources = _key_sources(folder, [i.id for i in read_items(folder)], ItemSource, "id")
    return IntelligibilityDecode(
        schema_version=IntelligibilityDecode.SCHEMA_VERSION, kind=KIND, judgements=list(JUDGEMENTS), items=sources
    )


def _key_sources(folder: Path, ids: list[str], model: type[BaseModel], id_field: str) -> list[Any]:
    """``key.json``'s entry of each item (in ``ids`` order) as ``model``; BadInput when the key and the items do
    not hold the same ids or an entry is not one."""
    key = read_json(folder / "key.json")
    if not isinstance(key, dict) or sorted(key) != sorted(ids):
        raise BadInput(f"{folder}: key.json and items.jsonl do not hold the same items")
    return [parse_record(model, {id_field: i, **key[i]}, f"{folder}/key.json: {i}") for i in ids]


def write_decode(folder: Path, decode: IntelligibilityDecode) -> Path:
    """``decode.json`` (atomic, checked as its model)."""
    return write_output(folder / "decode.json", IntelligibilityDecode, decode)


def read_decode(folder: Path) -> IntelligibilityDecode:
    from backtest.core.records import read_output

    return read_output(IntelligibilityDecode, folder / "decode.json")


# --------------------------------------------------------------------------- two passes and their adjudication


def _pass(folder: Path, name: str, ids: set[str], read: Callable[[Path], dict[str, Any]] | None = None) -> Any:
    """One reader's whole pass (``read``: the set's label reader); BadInput, one line, when it is not whole."""
    path = folder / "labels" / f"{name}.jsonl"
    if not path.is_file():
        raise BadInput(f"{path}: no such file (reader {name} has labelled nothing)")
    labels = (read or read_labels)(path)
    if set(labels) != ids:
        raise BadInput(f"{path}: {name} has labelled {len(labels)} of the {len(ids)} items; adjudicate a whole pass")
    return labels


def disagreements(folder: Path, readers: tuple[str, str]) -> list[Dispute]:
    """Every (item, judgement) on which the two passes differ, in item order, with both readings."""
    order = [i.id for i in read_items(folder)]
    a, b = (_pass(folder, r, set(order)) for r in readers)
    return [
        Dispute(item_id=i, field=f, reader_a=getattr(a[i], f), reader_b=getattr(b[i], f))
        for i in order
        for f in JUDGEMENTS
        if getattr(a[i], f) != getattr(b[i], f)
    ]


def _decisions(path: Path, model: type[Decision], disputes: Sequence[Dispute]) -> dict[tuple[str, str], Any]:
    """The decisions of ``path`` by (item, field): CheckFailed, nothing written, unless there is exactly one for each
    dispute, made on the readings the passes give now."""
    decided = {}
    for lineno, obj in iter_jsonl(path):
        d = parse_record(model, obj, f"{path}:{lineno}")
        decided[(d.item_id, d.field)] = d
    wanted = {(d["item_id"], d["field"]): d for d in disputes}
    stale = sorted(
        k
        for k, d in decided.items()
        if k not in wanted or (d.reader_a, d.reader_b) != (wanted[k]["reader_a"], wanted[k]["reader_b"])
    )
    missing = sorted(set(wanted) - set(decided))
    if stale or missing:
        what = (
            f"no decision on {missing[0]}"
            if missing
            else f"the decision on {stale[0]} is not of the passes' readings there (read again since?)"
        )
        raise CheckFailed(f"{path}: {what}; nothing written")
    return decided


def adjudicate(folder: Path, decisions_path: Path, readers: tuple[str, str]) -> AdjudicationCounts:
    """Write ``adjudication.jsonl`` from the two passes and one decision for each of their disagreements: a line
    for each item they differ on (in item order), each judgement the agreed one or the reading decided, the reason
    the decisions give (their distinct reasons joined by " / "). The format of the committed sets' files (the
    fields ``id``, ``intelligible``, ``real``, ``reason``), which the results script reads. Refuses (CheckFailed,
    nothing written) a disagreement without a decision, or a decision of none."""
    folder = Path(folder)
    with file_lock(folder / "labels" / LABELS_LOCK):
        disputes = disagreements(folder, readers)
        a = read_labels(folder / "labels" / f"{readers[0]}.jsonl")
        decided = _decisions(decisions_path, IntelligibilityDecision, disputes)
        rows = []
        for item_id in dict.fromkeys(d["item_id"] for d in disputes):
            mine = [decided[(item_id, f)] for f in JUDGEMENTS if (item_id, f) in decided]
            values = {f: getattr(a[item_id], f) for f in JUDGEMENTS} | {d.field: d.adjudicated for d in mine}
            reason = " / ".join(dict.fromkeys(d.reason for d in mine))
            rows.append(IntelligibilityLabel(id=item_id, reason=reason, **values))
        text = "".join(json.dumps(r.model_dump(include={"id", *JUDGEMENTS, "reason"})) + "\n" for r in rows)
        atomic_write_text(folder / "adjudication.jsonl", text)
    return AdjudicationCounts(n=len(rows), decided=len(decided))


# --------------------------------------------------------------------------- generated questions (intelligibility-v*)


def _check_question_id(value: str) -> str:
    if not QUESTION_ITEM_ID.fullmatch(value):
        raise ValueError(f"item id {value!r} must look like i0123abcd")
    return value


class QuestionItem(Versioned):
    """One blinded generated question and its premise (a line of ``items.jsonl``)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    question: str
    premise: str | None = None

    _id = field_validator("item_id")(classmethod(lambda cls, v: _check_question_id(v)))


class QuestionSource(BaseModel):
    """Which generated question an item is (never shown to readers)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    instance: str
    generator: str
    question_id: str


class QuestionDecode(Output):
    """A generated-question set's private ``decode.json``: each item's source, in item order."""

    kind: Literal["question_intelligibility"]
    items: list[QuestionSource]

    @model_validator(mode="after")
    def _unique(self) -> QuestionDecode:
        if len({i.item_id for i in self.items}) != len(self.items):
            raise ValueError("items: an item id appears twice")
        return self


class QuestionLabel(Versioned):
    """One reader's reading of one generated question (the guide's fields), and the seconds spent (desk)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    intelligible: Literal["yes", "no"]
    reason: Literal["unresolved_reference", "garbled", "no_subject", "not_a_question", "other"] | None = None
    real_conflict: Literal["yes", "no", "na"]
    note: str = ""
    seconds: float | None = Field(default=None, ge=0)

    _id = field_validator("item_id")(classmethod(lambda cls, v: _check_question_id(v)))

    @model_validator(mode="after")
    def _reason_when_no(self) -> QuestionLabel:
        if (self.reason is None) != (self.intelligible == "yes"):
            raise ValueError("reason: give the first that applies when intelligible is no, none when it is yes")
        return self

    def reading(self) -> dict[str, str | None]:
        return {f: getattr(self, f) for f in READING}


def _reading(value: Any) -> dict[str, str | None]:
    """A reading (intelligible, real_conflict, reason) checked as a label's, as a plain dict."""
    label = QuestionLabel.model_validate({"item_id": "i00000000", **value})
    return label.reading()


class QuestionDecision(Decision):
    """The adjudication of one generated question the two passes read differently: one of their two readings."""

    field: Literal["reading"]  # type: ignore[assignment]
    reader_a: dict[str, str | None]  # type: ignore[assignment]
    reader_b: dict[str, str | None]  # type: ignore[assignment]
    adjudicated: dict[str, str | None]  # type: ignore[assignment]

    _readings = field_validator("reader_a", "reader_b", "adjudicated")(classmethod(lambda cls, v: _reading(v)))


def read_question_items(folder: Path) -> list[QuestionItem]:
    return read_records(folder / "items.jsonl", QuestionItem)


def read_question_labels(path: str | Path) -> dict[str, QuestionLabel]:
    """One reader's labels (or ``labels/adjudicated.jsonl``) by item id; BadInput naming file:line for a line that
    is not one (an unknown schema_version, a value outside the guide's, a reason with yes or none with no)."""
    return {lab.item_id: lab for lab in read_records(path, QuestionLabel)}


def question_decode_from_key(folder: Path) -> QuestionDecode:
    """The ``decode.json`` of a generated-question set from its ``key.json``, items in ``items.jsonl`` order."""
    sources = _key_sources(folder, [i.item_id for i in read_question_items(folder)], QuestionSource, "item_id")
    return QuestionDecode(schema_version=QuestionDecode.SCHEMA_VERSION, kind=QUESTIONS_KIND, items=sources)


def read_question_decode(folder: Path) -> QuestionDecode:
    from backtest.core.records import read_output

    return read_output(QuestionDecode, folder / "decode.json")


class ReadingDispute(Dispute):
    """A generated question the two passes read differently: ``fields`` are the parts of the readings that differ."""

    fields: list[str]


def question_disagreements(folder: Path, readers: tuple[str, str]) -> list[ReadingDispute]:
    """Every generated question the two passes read differently (intelligible, real_conflict or reason), in item
    id order, with both readings and the fields that differ."""
    ids = {i.item_id for i in read_question_items(folder)}
    a, b = (_pass(folder, r, ids, read_question_labels) for r in readers)
    out: list[ReadingDispute] = []
    for i in sorted(ids):
        ra, rb = a[i].reading(), b[i].reading()
        if ra != rb:
            fields = [f for f in READING if ra[f] != rb[f]]
            out.append({"item_id": i, "field": "reading", "fields": fields, "reader_a": ra, "reader_b": rb})
    return out


def adjudicate_questions(folder: Path, decisions_path: Path, readers: tuple[str, str]) -> AdjudicationCounts:
    """Write ``adjudication.jsonl`` (per disputed item: both readings, the one decided, ``why``) and
    ``labels/adjudicated.jsonl`` (every item's reading: the passes' where they agree, else the decided one), as the
    committed sets have them; refuses (CheckFailed, nothing written) a missing or stale decision."""
    folder = Path(folder)
    with file_lock(folder / "labels" / LABELS_LOCK):
        disputes = question_disagreements(folder, readers)
        decided = _decisions(decisions_path, QuestionDecision, disputes)
        a = read_question_labels(folder / "labels" / f"{readers[0]}.jsonl")
        rows = [
            {"decision": d.adjudicated, "item_id": d.item_id, "reader_a": d.reader_a, "reader_b": d.reader_b}
            | {"why": d.reason}
            for d in (decided[(x["item_id"], x["field"])] for x in disputes)
        ]
        final = {i: lab.reading() for i, lab in a.items()} | {r["item_id"]: r["decision"] for r in rows}
        atomic_write_text(folder / "adjudication.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
        atomic_write_text(
            folder / "labels" / "adjudicated.jsonl",
            "".join(json.dumps({"item_id": i, **final[i]}, sort_keys=True) + "\n" for i in sorted(final)),
        )
    return AdjudicationCounts(n=len(final), decided=len(rows))
