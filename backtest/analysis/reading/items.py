"""The records of judge validation: blinded items, pairs, and the labels readers give them.

An **item** is one (question, documents shown) case exactly as a judge saw it: the frozen
question (blinded: its id is the item id and its system is ``blinded``) and the documents
retrieval showed the judge, in rank order. A **label** is one reader's reading of an item
per the codebook. A **pair** is one arena comparison: a shared context and two questions;
its label says which is the better research question.

Files are JSON Lines, one record per line; every record carries a ``schema_version`` and
an unknown version is rejected.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl
from backtest.core.records import (
    ENGAGED_OUTCOMES,
    OUTCOMES,
    PREMISE_STATUSES,
    Question,
    RetrievedDocument,
    Versioned,
    parse_record,
)

ITEM_ID = re.compile(r"item\d{3,6}")
BLINDED_SYSTEM = "blinded"


def _check_item_id(value: str) -> str:
    if not ITEM_ID.fullmatch(value):
        raise ValueError(f"item id {value!r} must look like item001")
    return value


#: the answers to "which is the better research question?" of a pairwise item
BETTER = ("a", "b", "tie")


class ShownDocument(BaseModel):
    """A document as the judge was shown it (text already clipped by retrieval)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = ""
    abstract: str = ""
    published: dt.date | None = None

    def as_retrieved(self, rank: int) -> RetrievedDocument:
        """The document as a judge receives it (rank from 1; no retrieval score)."""
        return RetrievedDocument(
            rank=rank, id=self.id, score=0.0, published=self.published, title=self.title, abstract=self.abstract
        )


class AnnotationItem(Versioned):
    """One blinded item: the question and the documents shown, in rank order."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    question: Question
    documents: list[ShownDocument]

    _id = field_validator("item_id")(classmethod(lambda cls, v: _check_item_id(v)))

    def retrieved(self) -> list[RetrievedDocument]:
        """The documents as a judge receives them."""
        return [d.as_retrieved(i) for i, d in enumerate(self.documents, start=1)]


class Label(Versioned):
    """One reader's labels for one item."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    outcome: Literal["answered", "partially_addressed", "posed_but_open", "not_addressed"]
    premise_status: Literal["supported", "refuted", "weakened", "still_plausible", "not_applicable"]
    confidence: int | None = Field(default=None, ge=1, le=3)
    cited: list[str] = Field(default_factory=list)
    notes: str = ""
    seconds: float | None = Field(default=None, ge=0)  # reading time (``annotate serve``); None from a sheet

    _id = field_validator("item_id")(classmethod(lambda cls, v: _check_item_id(v)))


class PairQuestion(BaseModel):
    """One side of a pair: the question, its premise, the past papers it rests on."""

    model_config = ConfigDict(extra="forbid")

    question: str
    premise: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)


class PairItem(Versioned):
    """One blinded arena comparison: a shared context and two questions."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    context: list[ShownDocument]
    a: PairQuestion
    b: PairQuestion

    _id = field_validator("item_id")(classmethod(lambda cls, v: _check_item_id(v)))


class PairLabel(Versioned):
    """One reader's verdict on one pair: which is the better research question."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    better: Literal["a", "b", "tie"]
    confidence: int | None = Field(default=None, ge=1, le=3)
    notes: str = ""
    seconds: float | None = Field(default=None, ge=0)  # reading time (``annotate serve``); None from a sheet

    _id = field_validator("item_id")(classmethod(lambda cls, v: _check_item_id(v)))


assert tuple(Label.model_fields["outcome"].annotation.__args__) == OUTCOMES  # type: ignore[union-attr]
assert tuple(Label.model_fields["premise_status"].annotation.__args__) == PREMISE_STATUSES  # type: ignore[union-attr]


def citation_problems(outcome: str, cited: list[str], shown: list[str]) -> list[str]:
    """What is wrong with a label's citations, given the ids of the documents its item showed: ids never shown,
    an id cited twice, an engaged outcome citing nothing, ``not_addressed`` citing something (the last two only
    when the rest is sound). The rules ``annotate import`` applies to a sheet and ``estimate`` to every label."""
    problems = []
    foreign = [c for c in cited if c not in shown]
    if foreign:
        problems.append(f"cited id(s) {', '.join(foreign)} are not among the item's documents")
    if len(set(cited)) != len(cited):
        problems.append("a document is cited twice")
    if not problems and outcome in ENGAGED_OUTCOMES and not cited:
        problems.append(f"outcome {outcome} needs at least one cited document")
    if not problems and outcome == "not_addressed" and cited:
        problems.append("outcome not_addressed cites nothing")
    return problems


def read_records(path: str | Path, model: type[Versioned]) -> list:
    """Every line of a JSONL file as ``model``; BadInput naming file:line on the first bad one, or a repeated id."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    out, seen = [], set()
    for lineno, obj in iter_jsonl(path):
        record = parse_record(model, obj, f"{path}:{lineno}")
        item_id = record.item_id
        if item_id in seen:
            raise BadInput(f"{path}:{lineno}: item {item_id} appears twice")
        seen.add(item_id)
        out.append(record)
    if not out:
        raise BadInput(f"{path}: no records")
    return out


def read_items(path: str | Path) -> list[AnnotationItem]:
    """The items of an ``items.jsonl`` file."""
    return read_records(path, AnnotationItem)


def read_pairs(path: str | Path) -> list[PairItem]:
    """The pairs of a ``pairs.jsonl`` file."""
    return read_records(path, PairItem)


def read_labels(path: str | Path, pairwise: bool = False) -> list:
    """The labels of one reader's ``labels/<rater>.jsonl``."""
    return read_records(path, PairLabel if pairwise else Label)
