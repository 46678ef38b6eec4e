"""The reading desk (``backtest annotate serve``): one blinded item a screen, keyboard answers, each saved at once.

A :class:`Desk` opens an export folder and serves its items to one reader. The kind of set comes from the
folder's ``decode.json``:

* ``items`` (``annotate export``): a question with the documents shown; the codebook's labels (outcome, premise
  status, confidence, cited documents, notes), saved as :class:`~backtest.analysis.reading.items.Label`;
* ``pairs`` (``annotate export --pairwise``): two questions over a context; saved as
  :class:`~backtest.analysis.reading.items.PairLabel`;
* ``evidence_graph_review`` (``gate export``): a candidate tension; saved as
  :class:`~backtest.generators.outputs.GateLabel`, which ``gate import`` takes as the batch's sheet;
* ``intelligibility`` (``scripts/evidence_graph_reading.py``, the sets under ``judges/validation/evidence-graph-v*``):
  a question about a tension, read yes/no (intelligible, real) with a reason; saved as
  :class:`~backtest.analysis.reading.intelligibility.IntelligibilityLabel`, which the results script reads;
* ``question_intelligibility`` (``scripts/intelligibility_items.py``, ``judges/validation/intelligibility-v*``): a
  generated question and its premise, read intelligible yes (or no, with the reason code) and real_conflict; saved
  as :class:`~backtest.analysis.reading.intelligibility.QuestionLabel`, which ``intelligibility_study.py`` reads.

Every answer arrives as a sheet row (the columns the export's ``sheet.csv`` has) and is checked by the rules the
sheet's import applies (:func:`~backtest.analysis.reading.annotate.row_label`,
:func:`~backtest.generators.gate.row_decision`), then written with the seconds the reader spent on the item to
``labels/<reader>.jsonl`` by :func:`~backtest.analysis.reading.annotate.write_labels` under the labels folder's
lock: the file ``annotate import`` writes for the same answers, plus ``seconds``. Two tabs or two processes
writing one reader's file each read, change one item and write the whole file atomically under the lock, so no
label is lost and no line is interleaved.

What the page gets is the item as its reader may see it (:meth:`Desk.view`): never ``decode.json`` (system, run,
the judge's labels), never another reader's labels. Control characters and bidirectional overrides in item text
are shown as their escapes; the page puts every string in the document as text, never as markup.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TypedDict

from pydantic import BaseModel

from backtest.analysis.reading import intelligibility
from backtest.analysis.reading.adjudication import Dispute
from backtest.analysis.reading.annotate import (
    ADJUDICATED,
    BETTER,
    LABELS_LOCK,
    PAIR_SHEET_COLUMNS,
    SHEET_COLUMNS,
    Decision,
    adjudicate,
    check_readers,
    disagreements,
    row_label,
    write_labels,
)
from backtest.analysis.reading.items import AnnotationItem, Label, PairItem, PairLabel, read_records
from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl, read_json, read_text_file, write_jsonl
from backtest.core.lock import file_lock
from backtest.core.records import OUTCOMES, PREMISE_STATUSES, check_safe_name, parse_record
from backtest.core.text import CONTROL_CHARS, visible

#: the longest an item may be read in one go, in seconds (a longer time is a tab left open, not reading)
MAX_SECONDS = 24 * 3600.0
#: the question's contract fields the page shows under it, when the submission has them
CONTRACT_FIELDS = (
    "premise",
    "hypothesis",
    "literature_gap",
    "minimal_test",
    "decisive_metric",
    "supporting_result",
    "falsifying_result",
    "sub_questions",
    "objects",
)
CONFIDENCE_KEYS = {"z": "1", "x": "2", "c": "3"}
PREMISE_KEYS = dict(zip("qwert", PREMISE_STATUSES))
REASON_KEYS = "qwerty"
#: an intelligibility set's yes/no keys: (judgement, key for yes, key for no)
JUDGEMENT_KEYS = (("intelligible", "1", "2"), ("real", "3", "4"))
YES_NO = {"true": True, "false": False}
#: a generated question's keys: 1 intelligible, q..t not intelligible for that reason; z/x/c real_conflict
REAL_CONFLICT_KEYS = dict(zip("zxc", ("yes", "no", "na")))


class KeyGroup(TypedDict):
    """A group of keys on the page: its title and ``[key, text, {column: value}]`` for each key."""

    title: str
    keys: list[list[Any]]


class DocView(TypedDict):
    """A document as the page shows it (``n``: its number in the list)."""

    n: int
    id: str
    title: str
    published: str
    abstract: str


class Decided(TypedDict):
    """:meth:`Desk.decide`: decisions saved of the disputes, and what the kind's adjudication wrote once all are."""

    decided: int
    of: int
    written: Any


class Progress(TypedDict):
    """:func:`progress`: done, the median seconds an item and the seconds left at it (None before any timing)."""

    done: int
    median_seconds: float | None
    seconds_left: int | None


class AdjudicationState(TypedDict):
    """The page's state when adjudicating: both readers, each dispute with both labels (and its decision, once
    made), the first undecided, and whether the adjudication is written."""

    mode: str
    readers: list[str]
    disputes: list[dict[str, Any]]
    first_undecided: int
    written: bool


@dataclass(frozen=True)
class Adjudication:
    """How a kind's two readers are settled: what each disagreement is, its decision record, and what is written
    once every one is decided."""

    disputes: Callable[[Path, tuple[str, str]], Sequence[Dispute]]
    decision_model: type[Decision]
    finish: Callable[[Path, Path, tuple[str, str]], Any]  # (folder, decisions file, readers) -> written
    written: str  # the file, relative to the folder, that finish writes last


@dataclass(frozen=True)
class Kind:
    """One kind of labelled set: where its items are, how they are read, which answers it takes and how."""

    name: str
    items_file: str
    guide_files: tuple[str, ...]
    columns: tuple[str, ...]  # the sheet's columns (item_id first)
    required: tuple[str, ...]  # the columns an answer needs before it can be saved
    label_model: type[BaseModel]
    keys: list[KeyGroup]  # groups of keys for the page
    read_items: Callable[[Path], list[Any]]
    to_label: Callable[[dict[str, str], str, Any], tuple[Any, list[str]]]
    decode_ids: Callable[[Path], list[str]]  # the item ids the folder's decode.json maps back
    notes: str = "notes"  # the column the page's free-text box writes
    adjudication: Adjudication | None = None


def _shown(item: Any) -> list[str]:
    return [d.id for d in item.documents] if isinstance(item, AnnotationItem) else []


def _item_answer(row: dict[str, str], where: str, item: Any) -> tuple[Any, list[str]]:
    return row_label(row, where, _shown(item), pairwise=isinstance(item, PairItem))


def _gate_answer(row: dict[str, str], where: str, item: Any) -> tuple[Any, list[str]]:
    from backtest.generators.gate import row_decision
    from backtest.generators.outputs import GateLabel

    try:
        decision, kind, reason, notes = row_decision(row, where)
    except BadInput as exc:
        return None, [str(exc)]
    return GateLabel(item_id=row["item_id"], decision=decision, type=kind, reason=reason, notes=notes), []


def _intelligibility_answer(row: dict[str, str], where: str, item: Any) -> tuple[Any, list[str]]:
    problems = [
        f"{where}: {name} {row[name]!r} must be true or false"
        for name in intelligibility.JUDGEMENTS
        if row[name].lower() not in YES_NO
    ]
    if not row["reason"]:
        problems.append(f"{where}: give the reason (one short sentence)")
    if problems:
        return None, problems
    judged = {name: YES_NO[row[name].lower()] for name in intelligibility.JUDGEMENTS}
    return intelligibility.IntelligibilityLabel(id=row["item_id"], reason=row["reason"], **judged), []


def _question_answer(row: dict[str, str], where: str, item: Any) -> tuple[Any, list[str]]:
    fields = {"item_id": row["item_id"], "intelligible": row["intelligible"], "reason": row["reason"] or None}
    fields |= {"real_conflict": row["real_conflict"], "note": row["note"]}
    try:
        return parse_record(intelligibility.QuestionLabel, fields, where), []
    except BadInput as exc:
        return None, [str(exc)]


def _review_items(folder: Path) -> list[Any]:
    from backtest.generators.outputs import ReviewItem

    return read_records(folder / "items.jsonl", ReviewItem)  # type: ignore[arg-type]


def _confidence_group() -> KeyGroup:
    return {"title": "confidence", "keys": [[k, v, {"confidence": v}] for k, v in CONFIDENCE_KEYS.items()]}


def _decode_ids(folder: Path) -> list[str]:
    """The item ids of an export's ``decode.json`` (read as its model: a malformed one is refused here too)."""
    from backtest.analysis.outputs import Decode
    from backtest.core.records import read_output

    return list(read_output(Decode, folder / "decode.json").items)


def _review_ids(folder: Path) -> list[str]:
    from backtest.core.records import read_output
    from backtest.generators.outputs import ReviewDecode

    return [i.item_id for i in read_output(ReviewDecode, folder / "decode.json").items]


def _kinds() -> dict[str, Kind]:
    from backtest.generators.outputs import REJECT_REASONS, TENSION_TYPES, GateLabel

    gate_keys: list[KeyGroup] = [
        {
            "title": "accept as",
            "keys": [
                [str(k), t, {"decision": "accept", "type": t, "reason": ""}] for k, t in enumerate(TENSION_TYPES, 1)
            ],
        },
        {
            "title": "reject because",
            "keys": [
                [k, r, {"decision": "reject", "reason": r, "type": ""}] for k, r in zip(REASON_KEYS, REJECT_REASONS)
            ],
        },
    ]
    return {
        "items": Kind(
            "items",
            "items.jsonl",
            ("codebook.md",),
            SHEET_COLUMNS,
            ("outcome", "premise_status"),
            Label,
            [
                {"title": "outcome", "keys": [[str(k), o, {"outcome": o}] for k, o in enumerate(OUTCOMES, 1)]},
                {"title": "premise status", "keys": [[k, p, {"premise_status": p}] for k, p in PREMISE_KEYS.items()]},
                _confidence_group(),
            ],
            lambda folder: read_records(folder / "items.jsonl", AnnotationItem),
            _item_answer,
            _decode_ids,
            adjudication=Adjudication(
                lambda folder, readers: disagreements(folder, readers),
                Decision,
                lambda folder, decisions, readers: adjudicate(folder, decisions, readers),
                f"labels/{ADJUDICATED}.jsonl",
            ),
        ),
        "pairs": Kind(
            "pairs",
            "pairs.jsonl",
            ("guide.md",),
            PAIR_SHEET_COLUMNS,
            ("better",),
            PairLabel,
            [
                {"title": "better question", "keys": [[str(k), b, {"better": b}] for k, b in enumerate(BETTER, 1)]},
                _confidence_group(),
            ],
            lambda folder: read_records(folder / "pairs.jsonl", PairItem),
            _item_answer,
            _decode_ids,
        ),
        "evidence_graph_review": Kind(
            "evidence_graph_review",
            "items.jsonl",
            ("guide.md",),
            ("item_id", "decision", "type", "reason", "notes"),
            ("decision",),
            GateLabel,
            gate_keys,
            _review_items,
            _gate_answer,
            _review_ids,
        ),
        intelligibility.KIND: Kind(
            intelligibility.KIND,
            "items.jsonl",
            ("guide.md",),
            ("item_id", *intelligibility.JUDGEMENTS, "reason"),
            (*intelligibility.JUDGEMENTS, "reason"),
            intelligibility.IntelligibilityLabel,
            [
                {"title": name, "keys": [[yes, "yes", {name: "true"}], [no, "no", {name: "false"}]]}
                for name, yes, no in JUDGEMENT_KEYS
            ],
            intelligibility.read_items,
            _intelligibility_answer,
            lambda folder: [i.id for i in intelligibility.read_decode(folder).items],
            notes="reason",
            adjudication=Adjudication(
                intelligibility.disagreements,
                intelligibility.IntelligibilityDecision,
                intelligibility.adjudicate,
                "adjudication.jsonl",
            ),
        ),
        intelligibility.QUESTIONS_KIND: Kind(
            intelligibility.QUESTIONS_KIND,
            "items.jsonl",
            ("guide.md",),
            ("item_id", "intelligible", "reason", "real_conflict", "note"),
            ("intelligible", "real_conflict"),
            intelligibility.QuestionLabel,
            [
                {"title": "intelligible", "keys": [["1", "yes", {"intelligible": "yes", "reason": ""}]]},
                {
                    "title": "not intelligible because",
                    "keys": [
                        [k, r, {"intelligible": "no", "reason": r}]
                        for k, r in zip(REASON_KEYS, intelligibility.REASON_CODES)
                    ],
                },
                {
                    "title": "real conflict",
                    "keys": [[k, v, {"real_conflict": v}] for k, v in REAL_CONFLICT_KEYS.items()],
                },
            ],
            intelligibility.read_question_items,
            _question_answer,
            lambda folder: [i.item_id for i in intelligibility.read_question_decode(folder).items],
            notes="note",
            adjudication=Adjudication(
                intelligibility.question_disagreements,
                intelligibility.QuestionDecision,
                intelligibility.adjudicate_questions,
                f"labels/{ADJUDICATED}.jsonl",
            ),
        ),
    }


def open_kind(folder: Path) -> tuple[Kind, list[Any]]:
    """The kind of the export ``folder`` and its items; BadInput, one line, for a folder that is not an export,
    of a kind the desk does not serve, or whose items no longer match its ``decode.json``."""
    decode_path = folder / "decode.json"
    if not folder.is_dir():
        raise BadInput(f"{folder}: no such folder")
    if not decode_path.is_file():
        raise BadInput(
            f"{folder}: no decode.json, so not a folder `annotate export`, `gate export` or an intelligibility "
            "reading script wrote (the desk serves those)"
        )
    raw = read_json(decode_path)
    name = raw.get("kind") if isinstance(raw, dict) else None
    kinds = _kinds()
    if name not in kinds:
        raise BadInput(f"{decode_path}: kind {name!r} is not one the desk serves ({', '.join(kinds)})")
    kind = kinds[name]
    if not (folder / kind.items_file).is_file():
        raise BadInput(f"{folder}: no {kind.items_file} beside its decode.json (kind {name})")
    records = kind.read_items(folder)
    ids, decoded = [r.item_id for r in records], kind.decode_ids(folder)
    if sorted(ids) != sorted(decoded):
        odd = sorted(set(ids) ^ set(decoded)) or ["(the same ids, a different count)"]
        raise BadInput(
            f"{folder}: {kind.items_file} ({len(ids)} items) no longer matches decode.json ({len(decoded)}; first "
            f"difference {odd[0]}): the export was changed after it was written; export it again"
        )
    return kind, records


def _inert(value: Any) -> Any:
    """Every string in ``value`` with its control characters and bidirectional overrides written as escapes."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, list):
        return [_inert(v) for v in value]
    if isinstance(value, dict):
        return {k: _inert(v) for k, v in value.items()}
    return value


def _terms(*texts: str | None) -> list[str]:
    """The content words of ``texts`` (lower case, longest first), which the page marks in the documents."""
    from backtest.arena.rubric import content_words

    words = {w for t in texts if t for w in content_words(t) if len(w) >= 4}
    return sorted(words, key=lambda w: (-len(w), w))


def _docs(documents: list[Any]) -> list[DocView]:
    return [
        DocView(n=k, id=d.id, title=d.title, published=str(d.published or ""), abstract=d.abstract)
        for k, d in enumerate(documents, 1)
    ]


def item_view(item: Any) -> dict[str, Any]:
    """What the page shows of one item (blinded: no system, run or judge label is in an item), text inert."""
    view: dict[str, Any]
    if isinstance(item, AnnotationItem):
        q = item.question
        fields = [[f, getattr(q, f, None)] for f in CONTRACT_FIELDS if getattr(q, f, None)]
        view = {
            "question": q.question,
            "fields": [[f, "; ".join(v) if isinstance(v, list) else str(v)] for f, v in fields],
            "cutoff": str(q.cutoff_date),
            "documents": _docs(item.documents),
            "terms": _terms(q.question, q.premise, q.hypothesis),
        }
    elif isinstance(item, PairItem):
        view = {
            "context": _docs(item.context),
            "a": {"question": item.a.question, "premise": item.a.premise or ""},
            "b": {"question": item.b.question, "premise": item.b.premise or ""},
            "terms": _terms(item.a.question, item.b.question),
        }
    elif isinstance(item, intelligibility.QuestionItem):
        view = {"question": item.question, "premise": item.premise or ""}
    elif isinstance(item, intelligibility.IntelligibilityItem):
        sentences = [c.sentence for c in item.claims]
        view = {
            "type": item.type,
            "type_definition": item.definition,
            "question": item.question,
            "claims": [{"date": c.date, "title": c.title, "sentence": c.sentence} for c in item.claims],
            "check": item.check,
            "terms": _terms(item.question),
        }
    else:
        sentences = [c.get("sentence", "") for c in item.claims]
        shared = set(_terms(sentences[0])) & set(_terms(*sentences[1:])) if len(sentences) > 1 else set()
        view = {
            "proposed_type": item.proposed_type,
            "type_definition": item.type_definition,
            "why": item.why,
            "claims": [{k: c.get(k, "") for k in ("role", "date", "title", "sentence")} for c in item.claims],
            "earlier_outside_corpus": item.earlier_outside_corpus,
            "terms": sorted(shared, key=lambda w: (-len(w), w)),
        }
    return _inert({"item_id": item.item_id, **view})


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput("seconds must be a number")
    if not 0 <= value <= MAX_SECONDS:
        raise BadInput(f"seconds {value} must lie between 0 and {MAX_SECONDS:.0f}")
    return round(float(value), 1)


@dataclass
class Desk:
    """One reader (or one adjudicator of two readers) at one export folder."""

    folder: Path
    reader: str
    kind: Kind
    items: list[Any]
    adjudicate: tuple[str, str] | None = None
    by_id: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, folder: str | Path, reader: str | None, adjudicate: tuple[str, str] | None = None) -> Desk:
        """The desk at ``folder`` for ``reader`` (or adjudicating the readers ``adjudicate``); BadInput, one line,
        for a folder the desk cannot serve or a labels file that is not of its items."""
        folder = Path(folder)
        kind, items = open_kind(folder)
        if adjudicate is not None:
            if kind.adjudication is None:
                served = ", ".join(name for name, k in _kinds().items() if k.adjudication is not None)
                raise BadInput(f"{folder}: --adjudicate settles sets of kind {served}; this is a {kind.name} set")
            check_readers(tuple(adjudicate))
            reader = reader or "adjudicator"
        if not reader:
            raise BadInput("give --reader NAME (whose labels these are) or --adjudicate A B")
        try:
            check_safe_name(reader, "reader name")
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        if reader == ADJUDICATED and adjudicate is None:
            raise BadInput(
                f"{ADJUDICATED!r} is reserved for the labels adjudication derives; read under your own name, or "
                "settle two readers with --adjudicate A B"
            )
        desk = cls(folder, reader, kind, items, (adjudicate[0], adjudicate[1]) if adjudicate else None)
        desk.by_id = {i.item_id: i for i in items}
        item_view(items[0])  # loads the word lists the views use, before the first page asks
        if adjudicate is None:
            desk.labels()  # a labels file of another export is refused before the page opens
        else:
            desk.disputes()
        return desk

    # ------------------------------------------------------------------ a reader's labels

    @property
    def path(self) -> Path:
        return self.folder / "labels" / f"{self.reader}.jsonl"

    def labels(self) -> dict[str, Any]:
        """The reader's saved labels by item id; BadInput naming file:line for one that is not of these items
        (a labels file of another export) or that the item's rules refuse."""
        if not self.path.is_file():
            return {}
        out: dict[str, Any] = {}
        for lineno, obj in iter_jsonl(self.path):
            where = f"{self.path}:{lineno}"
            label = parse_record(self.kind.label_model, obj, where)
            item = self.by_id.get(label.item_id)
            if item is None:
                raise BadInput(
                    f"{where}: item {label.item_id!r} is not in this export: a labels file of another export? "
                    "move it away or read under another --reader"
                )
            row = {c: _cell(getattr(label, c, "")) for c in self.kind.columns}
            _, wrong = self.kind.to_label(row, where, item)
            if wrong:
                raise BadInput(f"{wrong[0]} (in the saved labels: a labels file of another export?)")
            out[label.item_id] = label
        return out

    def answer(self, item_id: str, row: dict[str, Any], seconds: Any) -> tuple[Any, list[str]]:
        """Check one answer (a sheet row) as ``annotate import`` (or ``gate import``) would; the label with its
        seconds, or None and why not."""
        if item_id not in self.by_id:
            raise BadInput(f"no item {item_id!r} in this export")
        if not isinstance(row, dict) or not all(isinstance(v, str) for v in row.values()):
            raise BadInput("an answer is an object of the sheet's columns, each a string")
        unknown = sorted(set(row) - set(self.kind.columns))
        if unknown:
            raise BadInput(f"unknown column(s) {', '.join(unknown)} (the sheet has {', '.join(self.kind.columns)})")
        full = {c: (row.get(c) or "").strip() for c in self.kind.columns} | {"item_id": item_id}
        if any(CONTROL_CHARS.search(v) for v in full.values()):
            return None, ["a control character (NUL, an ANSI escape or a bidirectional override) is in the answer"]
        label, problems = self.kind.to_label(full, item_id, self.by_id[item_id])
        if label is None:
            return None, problems
        return label.model_copy(update={"seconds": _seconds(seconds)}), []

    def save(self, label: Any) -> dict[str, Any]:
        """Write ``label`` into the reader's file (replacing the item's earlier one), under the labels lock."""
        with file_lock(self.folder / "labels" / LABELS_LOCK):
            current = self.labels()
            current[label.item_id] = label
            write_labels(self.path, list(current.values()), [i.item_id for i in self.items])
        return current

    def remove(self, item_id: str) -> dict[str, Any]:
        """Take the item's label out of the reader's file (undo), under the labels lock."""
        with file_lock(self.folder / "labels" / LABELS_LOCK):
            current = self.labels()
            if current.pop(item_id, None) is not None:
                if current:
                    write_labels(self.path, list(current.values()), [i.item_id for i in self.items])
                else:
                    self.path.unlink()
        return current

    # ------------------------------------------------------------------ adjudication

    @property
    def decisions_path(self) -> Path:
        a, b = self.adjudicate or ("", "")
        return self.folder / f"decisions-{a}-{b}.jsonl"

    def disputes(self) -> Sequence[Dispute]:
        """The readers' disagreements (item, field, both readings), in item order."""
        assert self.adjudicate is not None and self.kind.adjudication is not None
        return self.kind.adjudication.disputes(self.folder, self.adjudicate)

    def decisions(self) -> dict[tuple[str, str], Decision]:
        """The decisions saved so far that still settle a current disagreement (a reader who read again since
        may have made one moot)."""
        assert self.kind.adjudication is not None
        if not self.decisions_path.is_file():
            return {}
        wanted = {(d["item_id"], d["field"]): d for d in self.disputes()}
        out = {}
        for lineno, obj in iter_jsonl(self.decisions_path):
            d = parse_record(self.kind.adjudication.decision_model, obj, f"{self.decisions_path}:{lineno}")
            w = wanted.get((d.item_id, d.field))
            if w is not None and (d.reader_a, d.reader_b) == (w["reader_a"], w["reader_b"]):
                out[(d.item_id, d.field)] = d
        return out

    def decide(self, item_id: str, field_name: str, pick: str, reason: str, seconds: Any) -> Decided:
        """Save one decision (``pick``: "a" or "b", the reading taken); when every disagreement is decided, write
        what the kind's adjudication writes (outcome items: ``labels/adjudicated.jsonl`` and ``adjudication.jsonl``
        as ``annotate adjudicate`` does; an intelligibility set: its ``adjudication.jsonl``)."""
        assert self.adjudicate is not None and self.kind.adjudication is not None
        wanted = {(d["item_id"], d["field"]): d for d in self.disputes()}
        w = wanted.get((item_id, field_name))
        if w is None:
            raise BadInput(f"{item_id} {field_name}: the readers agree there (or no such item)")
        if pick not in ("a", "b"):
            raise BadInput("decide one of the two readings: a or b")
        decision = self.kind.adjudication.decision_model(
            item_id=item_id,
            field=field_name,
            reader_a=w["reader_a"],
            reader_b=w["reader_b"],
            adjudicated=w["reader_a"] if pick == "a" else w["reader_b"],
            reason=reason,
            seconds=_seconds(seconds),
        )
        with file_lock(self.folder / "labels" / LABELS_LOCK):
            current = self.decisions()
            current[(item_id, field_name)] = decision
            ordered = [current[k] for k in sorted(current)]
            write_jsonl(self.decisions_path, [d.model_dump(mode="json", exclude_none=True) for d in ordered])
        written = None
        if len(current) == len(wanted):
            written = self.kind.adjudication.finish(self.folder, self.decisions_path, self.adjudicate)
        return Decided(decided=len(current), of=len(wanted), written=written)

    # ------------------------------------------------------------------ the page's data

    def guide(self) -> str:
        for name in self.kind.guide_files:
            if (self.folder / name).is_file():
                return read_text_file(self.folder / name)
        return "(no codebook or guide beside this export)"

    def state(self) -> dict[str, Any]:
        """What the page needs to start or resume: the kind, the keys, the reader's own labels, progress."""
        base = {
            "kind": self.kind.name,
            "reader": self.reader,
            "total": len(self.items),
            "order": [i.item_id for i in self.items],
            "keys": self.kind.keys,
            "required": list(self.kind.required),
            "notes": self.kind.notes,
            "columns": [c for c in self.kind.columns if c != "item_id"],
        }
        if self.adjudicate is not None:
            return base | self._adjudication_state()
        labels = self.labels()
        rows = {
            k: {c: _cell(getattr(lab, c, "")) for c in self.kind.columns if c != "item_id"} | {"seconds": lab.seconds}
            for k, lab in labels.items()
        }
        first = next((k for k, i in enumerate(self.items) if i.item_id not in labels), len(self.items))
        return base | {
            "mode": "read",
            "labels": _inert(rows),
            "first_unlabelled": first,
            **progress(labels, self.items),
        }

    def _adjudication_state(self) -> AdjudicationState:
        assert self.adjudicate is not None and self.kind.adjudication is not None
        a, b = self.adjudicate
        readings = {name: self._reader_rows(name) for name in (a, b)}
        disputes = self.disputes()
        done = self.decisions()
        return {
            "mode": "adjudicate",
            "readers": [a, b],
            "disputes": _inert(
                [
                    d
                    | {"label_a": readings[a][d["item_id"]], "label_b": readings[b][d["item_id"]]}
                    | (
                        {"decided": "a" if done[k].adjudicated == d["reader_a"] else "b", "reason": done[k].reason}
                        if (k := (d["item_id"], d["field"])) in done
                        else {}
                    )
                    for d in disputes
                ]
            ),
            "first_undecided": next(
                (k for k, d in enumerate(disputes) if (d["item_id"], d["field"]) not in done), len(disputes)
            ),
            "written": (self.folder / self.kind.adjudication.written).is_file() and len(done) == len(disputes),
        }

    def _reader_rows(self, name: str) -> dict[str, dict[str, str]]:
        return {
            lab.item_id: {c: _cell(getattr(lab, c, "")) for c in self.kind.columns if c != "item_id"}
            for lab in read_records(self.folder / "labels" / f"{name}.jsonl", self.kind.label_model)  # type: ignore[arg-type]
        }


def _cell(value: Any) -> str:
    """A label's field as the sheet writes it (cited ids joined by spaces; None as empty; a yes/no as JSON's
    true or false)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(value)
    return str(value)


def progress(labels: dict[str, Any], items: list[Any]) -> Progress:
    """Done of total, the median seconds an item (of the labels that carry them) and the time left at it."""
    times = [lab.seconds for lab in labels.values() if getattr(lab, "seconds", None) is not None]
    median = statistics.median(times) if times else None
    left = len(items) - len(labels)
    return Progress(
        done=len(labels),
        median_seconds=None if median is None else round(median, 1),
        seconds_left=None if median is None else round(median * left),
    )
