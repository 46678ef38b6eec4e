"""The typed outputs of the analyses: ``compare.json`` (:class:`Comparison`), ``diversity.json``
(:class:`DiversityReport`) and a judge validation's ``validation.json`` (:class:`ValidationReport`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output


class LeaderboardRow(BaseModel):
    """One system's place: ranked by coverage, then answered, then refutation rate."""

    model_config = ConfigDict(extra="forbid")

    rank: int
    label: str
    valid: bool
    coverage: float | None
    answered_rate: float | None
    premise_refutation_rate: float | None
    n: int


class Comparison(Output):
    """``compare.json``: systems x metrics with 95% intervals, pairwise Fisher tests, the leaderboard."""

    allow_invalid: bool
    any_invalid: bool
    systems: list[dict[str, Any]]
    tests: dict[str, Any] | list[dict[str, Any]]
    leaderboard: list[LeaderboardRow]
    warnings: list[str]
    notes: list[str]


class DiversityReport(Output):
    """``diversity.json``: distinct questions per set under each equivalence rule, and the rules' audit."""

    distinct: dict[str, Any]
    audit: dict[str, Any] | None = None


class ValidationReport(Output):
    """``validation.json``: a judge against readers' labels (kappa with intervals, confusions, label use)."""

    kind: Literal["judge-validation", "pairwise-judge-validation"]
    judge: dict[str, Any]
    evaluation: str
    items: dict[str, Any]
    labels: dict[str, Any]
    seed: int
    n_boot: int
