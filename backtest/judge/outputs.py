"""The typed validity card of a judge (``judges/cards/<fingerprint>.json``, :class:`ValidityCard`)."""

from __future__ import annotations

from typing import Any, Literal

from backtest.core.records import Output


class ValidityCard(Output):
    """How one judge (pinned by its fingerprint) agrees with careful reading, one entry per labelled set."""

    kind: Literal["validity-card", "pairwise-validity-card"]
    fingerprint: str
    judge: dict[str, Any]
    validations: list[dict[str, Any]]
