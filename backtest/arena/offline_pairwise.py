"""The built-in offline pairwise judges: the surface-rubric comparison (``offline-rubric-v1``, kept so old
arena runs replay) and the ``position-a`` control that always prefers the output shown first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backtest.arena.contexts import ArenaContext, ArenaOutput
from backtest.arena.pairwise import PairVerdict, PairwiseJudge, PairwiseJudgeInfo


class OfflinePairwiseJudge(PairwiseJudge):
    """Deterministic, no network: compares the two outputs' offline rubric scores.

    The per-output score is ``(g + ℓ + j) / 3`` from :class:`backtest.arena.rubric.OfflineRubric`
    (grounding in the context, specificity, justification cues). A difference under
    ``tie_margin`` is A≈B, under ``strong_margin`` a plain preference, else a strong
    one. It never looks at the position, so it is order-stable by construction.
    Documented as weak: it rewards overlap and specificity, not insight.
    """

    name = "offline-rubric-v1"

    def __init__(self, tie_margin: float = 0.15, strong_margin: float = 0.75):
        from backtest.arena.rubric import OfflineRubric

        self.rubric = OfflineRubric()
        self.tie_margin = tie_margin
        self.strong_margin = strong_margin

    def info(self) -> PairwiseJudgeInfo:
        """Name and margins."""
        return {
            "name": self.name,
            "kind": "offline-rubric-v1",
            "protocol": "offline-rubric-v1",
            "tie_margin": self.tie_margin,
            "strong_margin": self.strong_margin,
            "rubric": self.rubric.name,
        }

    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """Compare the outputs' offline pair-quality scores."""
        sa = self.rubric.score_output(context, a).q_pair
        sb = self.rubric.score_output(context, b).q_pair
        diff = sa - sb
        if abs(diff) < self.tie_margin:
            verdict = "A=B"
        elif diff > 0:
            verdict = "A>>B" if diff >= self.strong_margin else "A>B"
        else:
            verdict = "B>>A" if -diff >= self.strong_margin else "B>A"
        return PairVerdict(verdict=verdict, rationale=f"offline rubric score A={sa:.2f}, B={sb:.2f}")


class PositionAJudge(PairwiseJudge):
    """A deliberately biased control: always answers A>B, whatever it is shown."""

    name = "position-a"

    def info(self) -> PairwiseJudgeInfo:
        """Name only."""
        return {"name": self.name, "kind": "control", "note": "always prefers position A"}

    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """Always A>B."""
        return PairVerdict(verdict="A>B", rationale="position-A control")


def make_offline_rubric(config: dict[str, Any], path: Path | None) -> OfflinePairwiseJudge:
    """Factory for ``offline-rubric-v1`` (no settings)."""
    return OfflinePairwiseJudge()


def make_position_a(config: dict[str, Any], path: Path | None) -> PositionAJudge:
    """Factory for the ``position-a`` control (no settings)."""
    return PositionAJudge()
