"""The typed validity card of a judge (``judges/cards/<fingerprint>.json``, :class:`ValidityCard`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output


class ValidityCard(Output):
    """How one judge (pinned by its fingerprint) agrees with careful reading, one entry per labelled set."""

    kind: Literal["validity-card", "pairwise-validity-card"]
    fingerprint: str
    judge: dict[str, Any]
    validations: list[dict[str, Any]]


class RunValidity(BaseModel):
    """What a run's judge is worth (:func:`backtest.judge.cards.run_validity`): its card's path (None when it
    has none), the one-line summary reports print, the card's validations (none when it is invalid) and why it
    cannot be trusted."""

    model_config = ConfigDict(extra="forbid")

    card: str | None
    line: str
    validations: list[dict[str, Any]]
    problems: list[str]
