"""The typed outputs of the validity stage: ``control.json`` of ``backtest control mismatch|rerun|prompt``
(:class:`ControlReport`) and ``contamination.json`` of the contamination probe (:class:`ContaminationReport`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output, Rate

Kind = Literal["object", "name", "ngram"]


class ControlReport(Output):
    """One judge-validation control: the judge, how many questions, and what the control measured."""

    kind: Literal["mismatch", "rerun", "prompt"]
    judge: dict[str, Any]
    n: int | None = None  # mismatch: questions paired
    seed: int | None = None
    true: Rate | None = None  # mismatch: engaged rate on the true evidence
    mismatched: Rate | None = None  # mismatch: engaged rate on another question's evidence
    fisher: dict[str, float] | None = None
    separated: bool | None = None
    agreement: dict[str, Any] | None = None  # rerun / prompt: agreement with the original judgments


class FlaggedTerm(BaseModel):
    """A question term found in the future corpus and never in the past corpus."""

    model_config = ConfigDict(extra="forbid")

    term: str
    kind: Kind
    future_docs: int
    first_future_id: str | None = None
    first_future_date: str | None = None
    fields: list[str]


class QuestionProbe(BaseModel):
    """One question: its flagged terms, how many terms it has, and how many of them the past never has."""

    model_config = ConfigDict(extra="forbid")

    question_id: str
    flagged: list[FlaggedTerm]
    n_terms: int
    n_outside_past: int  # terms in no past record (flagged, or in neither corpus, or under the n-gram threshold)
    n_unseen: int  # terms in neither corpus


class ContaminationReport(Output):
    """``contamination.json``: the probe's per-question flags and per-set rate for one frozen set. Unknown
    fields are refused, as in every file of a run folder (:mod:`backtest.core.runs`)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["contamination"] = "contamination"
    instance_id: str
    instance_seal: str
    cutoff: str
    system: str | None = None
    frozen_path: str | None = None
    frozen_seal: str | None = None
    past: dict[str, Any]
    future: dict[str, Any]
    definition: dict[str, Any]
    n_questions: int
    rate: Rate
    by_kind: dict[str, Rate]
    mean_outside_past_share: float | None
    top_terms: list[dict[str, Any]]
    questions: list[QuestionProbe]
    note: str
