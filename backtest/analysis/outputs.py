"""The typed output of ``backtest compare``: ``compare.json`` (:class:`Comparison`)."""

from __future__ import annotations

from typing import Any

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
