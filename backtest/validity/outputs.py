"""The typed output of ``backtest control mismatch|rerun|prompt``: ``control.json`` (:class:`ControlReport`)."""

from __future__ import annotations

from typing import Any, Literal

from backtest.core.records import Output, Rate


class ControlReport(Output):
    """One judge-validation control: the judge, how many questions, and what the control measured."""

    kind: Literal["mismatch", "rerun", "prompt"]
    judge: dict[str, Any]
    n: int | None = None  # mismatch: questions paired
    seed: int | None = None
    true: Rate | None = None  # mismatch: engaged rate on the true evidence
    mismatched: Rate | None = None  # mismatch: engaged rate on another question's evidence
    fisher: dict[str, float] | None = None
    separated: bool | None = None
    agreement: dict[str, Any] | None = None  # rerun / prompt: agreement with the original judgments
