"""The files of a commitment folder and its records: the future declaration, the committed systems and
``COMMITMENT.json`` (:class:`Commitment`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from backtest.core.records import JudgeSettings, RetrievalSettings, Versioned, Window
from backtest.studies.prospective.merkle import LEAF_RULE

SUMS_FILE = "SHA256SUMS"
COMMITMENT_FILE = "COMMITMENT.json"
INSTANCE_FILE = "instance.json"
PAST_MANIFEST_FILE = "past_manifest.json"
GRADED_DIR = "graded"
NOT_COMMITTED = (COMMITMENT_FILE, SUMS_FILE)


class FutureDeclaration(BaseModel):
    """The future corpus as declared at commit time: how it will be built, and when graded."""

    model_config = ConfigDict(extra="forbid")

    source: str
    inputs: list[str] = Field(min_length=1)
    categories: list[str] = Field(default_factory=list)
    query: str | None = None
    window: Window
    schedule: list[dt.date] = Field(min_length=1)
    corpus_prefix: str
    retrieval_model_fingerprint: str | None = None
    judge_info: dict[str, Any] | None = None
    rule: str = "built with backtest.corpus.build (role future) from the inputs, window clipped to the as-of day"

    @field_validator("schedule")
    @classmethod
    def _sorted(cls, value: list[dt.date]) -> list[dt.date]:
        if value != sorted(set(value)):
            raise ValueError("grading dates must be distinct and in increasing order")
        return value


class CommittedSystem(BaseModel):
    """One frozen submission inside a commitment."""

    model_config = ConfigDict(extra="forbid")

    system: str
    path: str
    frozen_version: int
    frozen_seal: str
    n_questions: int
    questions_sha256: str


class Commitment(Versioned):
    """``COMMITMENT.json``: what was committed, how it will be graded, and the Merkle root."""

    model_config = ConfigDict(extra="forbid")

    commitment_id: str
    committed_at: str
    instance_id: str
    instance_seal: str
    cutoff: dt.date
    window: Window
    schedule: list[dt.date]
    future_declaration: dict[str, Any]
    retrieval: RetrievalSettings
    judge: JudgeSettings
    past_corpus: dict[str, str]
    systems: list[CommittedSystem]
    n_files: int
    sums_sha256: str
    leaf_rule: str = LEAF_RULE
    root: str
    seal: str = ""
