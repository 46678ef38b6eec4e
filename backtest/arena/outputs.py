"""The typed output of ``backtest arena``: ``arena.json`` (:class:`ArenaReport`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output


class ArenaRating(BaseModel):
    """One system's place on the leaderboard: its rating with a bootstrap interval."""

    model_config = ConfigDict(extra="allow")

    rank: int
    system: str
    rating: float
    ci_low: float | None = None
    ci_high: float | None = None


class ArenaReport(Output):
    """``arena.json``: blind pairwise comparisons in both orders, the Bradley-Terry-Davidson fit, the
    leaderboard with bootstrap intervals, and the judge (with its validity line) every number depends on."""

    kind: Literal["arena"]
    systems: list[str]
    judge: dict[str, Any]
    judge_validity: str | None = None
    fold: str
    n_contexts: int
    n_cases: int
    n_judgments: int
    leaderboard: list[ArenaRating]
    btd: dict[str, Any]
    bootstrap: dict[str, Any] | None = None
