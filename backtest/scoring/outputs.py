"""The typed files of a scored run: ``RUN.json`` (:class:`Run`), ``metrics.json`` (:class:`Metrics`) and
``SEAL.json`` (:class:`RunSeal`).

``judgments.jsonl`` and ``retrieval.jsonl`` are :class:`~backtest.core.records.Judgment` and
:class:`~backtest.core.records.Retrieval` lines. Writers check what they write against these models;
readers go through :func:`~backtest.core.records.read_output`, which refuses an unknown
``schema_version``. ``backtest schema run`` / ``backtest schema metrics`` print them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output, Rate


class QuestionCost(BaseModel):
    """One question's judge tokens, and their cost when the judge is priced."""

    model_config = ConfigDict(extra="forbid")

    question_id: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None


class RunCost(BaseModel):
    """``RUN.json``'s ``cost``: the judge's tokens per question and in total, priced by the config's table (all
    prices None and ``priced`` false when it has none). ``spent_last_invocation``: what the last ``backtest
    score`` spent on new calls (left out of a committed, compact run)."""

    model_config = ConfigDict(extra="forbid")

    priced: bool
    currency: str | None
    input_per_mtok: float | None
    output_per_mtok: float | None
    batch_factor: float
    prompt_tokens: int
    completion_tokens: int
    total: float | None
    spent_last_invocation: float | None = None
    per_question: list[QuestionCost]


class Run(Output):
    """``RUN.json``: what was scored, with which retriever and judge, and how it ended."""

    run_id: str
    instance_id: str
    instance_seal: str
    system: str
    frozen_path: str
    frozen_seal: str
    frozen_version: int | None = None
    status: Literal["running", "incomplete", "complete"] | None = None  # None: imported or control runs
    backtest_version: str | None = None
    cutoff: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    settings_sha256: str | None = None
    run_settings: dict[str, Any] | None = None
    retriever: dict[str, Any] | None = None  # None while the run has not retrieved yet
    judge: dict[str, Any]
    judge_settings: dict[str, Any] | None = None
    judge_stats_last_invocation: dict[str, Any] | None = None
    judged_last_invocation: int | None = None
    tokens_total: dict[str, int] | None = None
    cost: RunCost | None = None  # backtest.scoring.cost.run_cost
    n_questions: int | None = None
    n_needs_review: int | None = None
    n_judge_failed: int | None = None  # an incomplete run: judgments that failed and are retried on a rerun
    leakage: list[dict[str, Any]] | None = None
    valid: bool | None = None
    contamination: dict[str, Any] | None = None  # backtest.validity.contamination.summary (or {"not_run": why})
    compact: str | None = None  # a committed run's form (backtest.studies.release.COMPACT); None: a full run folder


class LagSummary(BaseModel):
    """Years from the cutoff to the earliest cited paper, over engaged questions."""

    model_config = ConfigDict(extra="forbid")

    n: int
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    n_undated_citations: int
    convention: str
    note: str


class NeedsReview(BaseModel):
    """How many judgments carry a ``needs_review`` reason, and which reasons."""

    model_config = ConfigDict(extra="forbid")

    n: int
    reasons: dict[str, int]


class UnknownLabels(BaseModel):
    """Labels outside the taxonomy, counted (they are flagged, never mapped)."""

    model_config = ConfigDict(extra="forbid")

    outcome: dict[str, int]
    premise_status: dict[str, int]


class Metrics(Output):
    """``metrics.json``: every rate with k, n and its 95% interval, and the release's own metric fields."""

    n_questions: int
    cutoff: str
    outcomes: dict[str, Rate]
    unresolved: Rate
    coverage: Rate
    answered_rate: Rate
    premise: dict[str, Rate]
    premise_refutation_rate: Rate
    mean_supporting_papers: float | None
    multi_source_rate: Rate
    first_engagement_lag_years: LagSummary
    mean_top1_similarity: float | None
    specificity_rate: Rate
    mean_lead_time_years: float | None
    mean_lead_time_reason: str
    needs_review: NeedsReview
    unknown_labels: UnknownLabels
    missing_judgments: list[str]
    extra_judgments: list[str]
    release: dict[str, Any]
    run_id: str | None = None
    leakage: list[dict[str, Any]] | None = None
    valid: bool | None = None


class RunSeal(Output):
    """``SEAL.json``: the sha256 of each file of a finished run (:mod:`backtest.scoring.runseal`), written when
    the run completes and again when it is compacted; ``backtest verify RUN_DIR`` and the readers check it."""

    run_id: str
    files: dict[str, str]
