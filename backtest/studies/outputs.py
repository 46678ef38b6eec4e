"""The typed outputs of the studies: ``BASELINES.json``, ``STRESS.json``, and a prospective ``GRADE.json`` with
the ``GRADE_NOTE.json`` beside each graded run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output, Rate


class StudyRates(BaseModel):
    """The three headline rates of one scored set, read from its run's metrics.json."""

    model_config = ConfigDict(extra="allow")

    n: int
    coverage: Rate
    answered: Rate
    refuted: Rate


class Baselines(Output):
    """``BASELINES.json``: the reference systems generated, frozen and scored on one instance."""

    kind: Literal["baselines"]
    instance: str
    n: int
    seed: int
    judge: str
    arena_judge: str | None
    systems: list[dict[str, Any]]
    compare: str | None = None
    diversity: str | None = None
    arena: str | None = None


class StressRow(BaseModel):
    """One generator at one cutoff: scored (with its rates) or skipped (with the reason)."""

    model_config = ConfigDict(extra="allow")

    generator: str
    cutoff: str
    instance_id: str
    status: Literal["scored", "skipped"]
    reason: str | None = None
    coverage: Rate | None = None
    answered: Rate | None = None
    refuted: Rate | None = None


class Stress(Output):
    """``STRESS.json``: the same generators at several cutoffs."""

    kind: Literal["stress"]
    stress_id: str
    source: dict[str, Any]
    years_before: float
    years_after: float
    n: int
    seed: int
    retrieval: dict[str, Any]
    judge: str
    interval: str
    rates: dict[str, str]
    rows: list[StressRow]


class GradeRow(StudyRates):
    """One committed system graded."""

    system: str
    graded_run: str
    run: str
    frozen: str
    valid: bool | None


class GradeStatus(Output):
    """Where a grading of a prospective commitment stands on its as-of day (``GRADE.json`` and each
    ``GRADE_NOTE.json`` carry it): provisional or scheduled, and the share of the future window graded."""

    commitment_id: str
    root: str
    as_of: str
    provisional: bool
    scheduled: str | None
    window: dict[str, Any]
    window_end_graded: str
    window_fraction: float
    status: str


class GradeNote(GradeStatus):
    """``GRADE_NOTE.json`` beside each graded run of a prospective commitment: the grading's status, the
    system and the scored run it was copied from."""

    system: str
    run: str


class Grade(GradeStatus):
    """``GRADE.json`` of a prospective commitment as of a day (sealed)."""

    future_corpus: dict[str, Any]
    graded_instance: dict[str, Any]
    judge: dict[str, Any]
    retrieval: dict[str, Any]
    systems: list[GradeRow]
    seal: str
