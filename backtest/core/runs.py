"""The typed files of a scored run: ``RUN.json`` (:class:`Run`), ``metrics.json`` (:class:`Metrics`) and
``SEAL.json`` (:class:`RunSeal`), with the blocks inside them typed too.

They live in ``core/`` because every stage that reads a run folder needs them, and the lowest of those
(``validity/``, the leakage checks) sits below ``scoring/``, which writes them;
:class:`~backtest.validity.runfolder.RunFolder` is the one reader and writer of a run folder.
``judgments.jsonl`` and ``retrieval.jsonl`` are :class:`~backtest.core.records.Judgment` and
:class:`~backtest.core.records.Retrieval` lines. ``backtest schema run`` / ``backtest schema metrics`` print them.

**Unknown fields are refused** (``extra="forbid"``) in every record and block backtest writes here, so a
misspelt key (``judge_stat_last_invocation``) stops the write instead of landing in ``RUN.json``. Reading old
files still works because no committed file has a field these models do not name: ``tests/test_runfolder.py``
parses every committed run record under ``results/`` (and writes each back to the same bytes), so a field
added to the files without its model fails there first. Two blocks keep what they do not name, on purpose:
:class:`RunRetriever` (a retriever's own ``spec()``, which a plugin retriever may extend) and
:class:`JudgeStats` (a judge's counters, which a plugin judge may extend).

A run is changed only through :meth:`~backtest.core.records.Output.updated` (the typed helper: the changed
fields are validated, a misspelt one is refused), never ``model_copy(update={...})``, which pydantic does not
check.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import JudgeInfo, Output, Rate


class Block(BaseModel):
    """A typed block inside a run record: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- RUN.json blocks


class RunJudge(Block):
    """``RUN.json``'s ``judge``: the judge's :class:`~backtest.core.records.JudgeInfo` and the spec it was made
    from (``spec``); a control run adds its ``settings``; an imported release names its ``models``,
    ``protocols`` and ``provenance`` instead of one model."""

    name: str
    model: str | None = None
    protocol: str | None = None
    prompt_sha256: str | None = None
    config_sha256: str | None = None
    spec: str | None = None
    settings: dict[str, Any] | None = None
    models: list[str] | None = None
    protocols: list[str] | None = None
    provenance: str | None = None

    def info(self) -> JudgeInfo:
        """The judge as its judgments name it (what its validity card is found by)."""
        return JudgeInfo(**{k: getattr(self, k) for k in JudgeInfo.model_fields})


class RunRetriever(BaseModel):
    """``RUN.json``'s ``retriever``: the retriever's ``spec()`` (method, model, params, index key), ``k``, the
    query and shown-text rules and the similarity model; an imported release adds its ``corpus_id``,
    ``text_available`` and a ``note``. A plugin retriever's own spec keys are kept (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow")

    method: str | None = None
    model: str | None = None
    k: int | None = None
    params: dict[str, Any] | None = None
    index_key: str | None = None
    query: str | None = None
    shown: dict[str, Any] | None = None
    similarity: dict[str, Any] | None = None
    text_fields: list[str] | None = None
    max_chars: int | None = None
    source: str | None = None
    corpus_id: str | None = None
    text_available: bool | None = None
    note: str | None = None


class JudgeStats(BaseModel):
    """A judge's counters (``Judge.stats()``): questions judged, HTTP calls, cache hits, retries, tokens; what
    Ray lost. Summable like inspect_ai's ``ModelUsage``: ``a + b`` adds every counter either has (what only one
    has is kept; ``retry_reasons`` is added by reason), ``a - b`` is what happened between two readings. A
    plugin judge's own counters are kept (``extra="allow"``) and added the same way."""

    model_config = ConfigDict(extra="allow")

    judged: int | None = None
    http_calls: int | None = None
    cache_hits: int | None = None
    retries: int | None = None
    failures: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    cached_completion_tokens: int | None = None
    retry_reasons: dict[str, int] | None = None
    ray_attempts_lost: int | None = None

    def counters(self) -> dict[str, Any]:
        """The counters this reading has (as given: nothing added)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def get(self, name: str) -> int:
        """One counter, 0 when this reading has none."""
        value = self.counters().get(name)
        return value if isinstance(value, int) else 0

    def _combine(self, other: JudgeStats, sign: int) -> JudgeStats:
        out = self.counters()
        for key, value in other.counters().items():
            if isinstance(value, dict):
                merged = dict(out.get(key) or {})
                for k, v in value.items():
                    merged[k] = merged.get(k, 0) + sign * v
                out[key] = merged
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = out.get(key, 0) + sign * value
        return JudgeStats.model_validate(out)

    def __add__(self, other: JudgeStats) -> JudgeStats:
        return self._combine(other, 1)

    def __sub__(self, other: JudgeStats) -> JudgeStats:
        return self._combine(other, -1)


class TokensTotal(Block):
    """``RUN.json``'s ``tokens_total``: the judge's tokens over every judgment of the run."""

    prompt_tokens: int
    completion_tokens: int


class LeakageCheck(Block):
    """One leakage check as ``RUN.json`` and ``metrics.json`` carry it
    (:meth:`backtest.validity.leakage.CheckResult.as_dict`); an imported release's skipped check has a
    ``reason``."""

    name: str
    status: Literal["passed", "failed", "skipped"]
    summary: str
    n_offenders: int
    offenders: list[str]
    reason: str | None = None


class ContaminationSummary(Block):
    """``RUN.json``'s ``contamination``: the probe's rate, by kind, and flagged terms per question
    (:func:`backtest.validity.contamination.summary`), or ``{"not_run": why}`` when it could not run."""

    not_run: str | None = None
    rate: Rate | None = None
    by_kind: dict[str, Rate] | None = None
    min_future_docs: dict[str, int] | None = None
    definition_version: str | None = None
    past: str | None = None
    future: str | None = None
    flagged: dict[str, list[str]] | None = None
    file: str | None = None


class ControlOf(Block):
    """A control run's ``control``: which control, and of which run."""

    kind: str
    of_run: str
    of_run_id: str | None = None


class ImportedFrom(Block):
    """An imported run's ``imported_from``: the release and the sha256 of each of its files it was made from."""

    release: str
    files: dict[str, str]


class QuestionCost(Block):
    """One question's judge tokens, and their cost when the judge is priced."""

    question_id: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None


class Pricing(Block):
    """The judge config's price table as a cost record carries it (all prices None and ``priced`` false when
    the config has none): :func:`backtest.scoring.cost.pricing`."""

    priced: bool
    currency: str | None
    input_per_mtok: float | None
    output_per_mtok: float | None
    batch_factor: float


class RunCost(Pricing):
    """``RUN.json``'s ``cost``: the judge's tokens per question and in total, priced by the config's table.
    ``spent_last_invocation``: what the last ``backtest score`` spent on new calls (left out of a committed,
    compact run)."""

    prompt_tokens: int
    completion_tokens: int
    total: float | None
    spent_last_invocation: float | None = None
    per_question: list[QuestionCost]


class Run(Output):
    """``RUN.json``: what was scored, with which retriever and judge, and how it ended. Unknown fields are
    refused (module docstring); change a run with :meth:`~backtest.core.records.Output.updated`."""

    model_config = ConfigDict(extra="forbid")

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
    created_at: str | None = None  # a control run
    settings_sha256: str | None = None
    run_settings: dict[str, Any] | None = None
    retriever: RunRetriever | None = None  # None while the run has not retrieved yet
    judge: RunJudge
    judge_settings: dict[str, Any] | None = None
    judge_stats_last_invocation: JudgeStats | None = None
    judged_last_invocation: int | None = None
    tokens_total: TokensTotal | None = None
    cost: RunCost | None = None  # backtest.scoring.cost.run_cost
    n_questions: int | None = None
    n_needs_review: int | None = None
    n_judge_failed: int | None = None  # an incomplete run: judgments that failed and are retried on a rerun
    leakage: list[LeakageCheck] | None = None
    valid: bool | None = None
    contamination: ContaminationSummary | None = None  # backtest.validity.contamination.summary
    control: ControlOf | None = None  # a control run (backtest.validity.controls)
    imported_from: ImportedFrom | None = None  # a run imported from the reference release (backtest.interop.sqb)
    compact: str | None = None  # a committed run's form (backtest.studies.release.COMPACT); None: a full run folder


# --------------------------------------------------------------------------- metrics.json


class LagSummary(Block):
    """Years from the cutoff to the earliest cited paper, over engaged questions."""

    n: int
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    n_undated_citations: int
    convention: str
    note: str


class NeedsReview(Block):
    """How many judgments carry a ``needs_review`` reason, and which reasons."""

    n: int
    reasons: dict[str, int]


class UnknownLabels(Block):
    """Labels outside the taxonomy, counted (they are flagged, never mapped)."""

    outcome: dict[str, int]
    premise_status: dict[str, int]


class ReleaseLag(Block):
    """The reference release's ``first_engagement_lag_years``: whole years, from judge-cited evidence only."""

    mean: float | None
    min: int | None
    max: int | None
    note: str


class ReleaseMetrics(Block):
    """``metrics.json``'s ``release``: the metric fields of the reference release's ``metrics.json``, by its
    conventions (:func:`backtest.scoring.metrics.release_metrics`)."""

    cutoff_date: str
    n_questions: int
    future_attention_rate: float | None
    answered_rate: float | None
    partial_rate: float | None
    posed_but_open_rate: float | None
    not_addressed_rate: float | None
    premise_refutation_rate: float | None
    premise_status_counts: dict[str, int]
    mean_retrieval_support_count: float | None
    multi_source_rate: float | None
    mean_top1_retrieval_similarity: float | None
    first_engagement_lag_years: ReleaseLag
    mean_lead_time_years: float | None


class Metrics(Output):
    """``metrics.json``: every rate with k, n and its 95% interval, and the release's own metric fields. An
    imported run adds its ``instance_id``, ``system`` and the release's own ``reference_metrics`` with which of
    them ours match. Unknown fields are refused (module docstring); change them with
    :meth:`~backtest.core.records.Output.updated`."""

    model_config = ConfigDict(extra="forbid")

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
    release: ReleaseMetrics
    run_id: str | None = None
    instance_id: str | None = None
    system: str | None = None
    leakage: list[LeakageCheck] | None = None
    valid: bool | None = None
    reference_metrics: dict[str, Any] | None = None  # an imported run: the release's own metrics.json
    reference_match: dict[str, bool] | None = None


class RunSeal(Output):
    """``SEAL.json``: the sha256 of each file of a finished run (:mod:`backtest.scoring.runseal`), written when
    the run completes and again when it is compacted; ``backtest verify RUN_DIR`` and the readers check it."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    files: dict[str, str]
