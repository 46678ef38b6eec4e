"""The typed records of the scoring stage.

The files of a scored run (``RUN.json``: :class:`~backtest.core.runs.Run`, ``metrics.json``:
:class:`~backtest.core.runs.Metrics`, ``SEAL.json``: :class:`~backtest.core.runs.RunSeal`) are defined in
:mod:`backtest.core.runs`, so that ``validity/`` can read a run folder too, and named here as well. What
``score --dry-run`` estimates is :class:`DryRun` (:func:`backtest.scoring.cost.estimate_questions`).
"""

from __future__ import annotations

from backtest.core.runs import (
    Block,
    LagSummary,
    Metrics,
    NeedsReview,
    Pricing,
    QuestionCost,
    Run,
    RunCost,
    RunSeal,
    UnknownLabels,
)

__all__ = [
    "CostEstimate",
    "DryRun",
    "LagSummary",
    "Metrics",
    "NeedsReview",
    "QuestionCost",
    "QuestionEstimate",
    "Run",
    "RunCost",
    "RunSeal",
    "UnknownLabels",
]


class QuestionEstimate(Block):
    """One question's first call, estimated before it is made: cached (no call), its prompt tokens (``exact``:
    counted by the endpoint's tokenizer, else from characters) and its cost bounds when the judge is priced."""

    question_id: str
    cached: bool
    prompt_tokens: int
    exact: bool
    cost_at_most: float | None
    cost_worst_case: float | None


class CostEstimate(Pricing):
    """What judging a frozen set would call and cost (:func:`backtest.scoring.cost.estimate_questions`):
    ``cost_at_most`` is one call per question with the longest answers, ``cost_worst_case`` what ``--max-cost``
    admits a question on (every retry, the constraint retry), ``cost_at_most_batch`` billed through provider
    batch files; every cost None when the judge config has no price."""

    n_questions: int
    n_cached: int
    n_calls: int
    prompt_tokens: int
    prompt_tokens_exact: bool
    max_completion_tokens: int
    cost_prompt: float | None
    cost_at_most: float | None
    cost_at_most_batch: float | None
    cost_worst_case: float | None
    per_question: list[QuestionEstimate]
    note: str


class DryRun(CostEstimate):
    """``score --dry-run``: the estimate of one frozen set, with what it would be scored as."""

    frozen_path: str
    instance_id: str
    system: str
    judge: str
    run_id: str
