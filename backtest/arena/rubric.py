"""Rubric diagnostics: per-output and per-set scores on a 1–5 scale.

Per output (a context–output *pair*): contextual grounding ``g``, inferential
insight ``ℓ``, evidential justification ``j``. Per set of outputs (size > 1):
breadth ``b``, distinctness ``d``, utility ``u``. Aggregates::

    Q_pair = mean over the set's pairs of (g + ℓ + j) / 3
    Q_set  = (b + d + u) / 3,   or (b + u) / 2 when the set has one member

These are diagnostics beside the pairwise leaderboard, not the ranking itself.

Scorers (registry :func:`get_rubric`): ``offline`` — deterministic text features,
documented as weak (below); ``llm`` — the shared OpenAI-compatible client asked
for the integer scores with a JSON schema (:mod:`backtest.arena.llm_pairwise`).

The offline features (each mapped linearly onto 1–5 and clipped):

* ``g``: the share of the output's content words (≥ 3 letters, not stop words)
  that occur in the context text (0 → 1, ≥ 0.6 → 5);
* ``ℓ``: specificity — catalogued objects named (:func:`backtest.text.objects.find_objects`),
  molecules and quantities, plus a contrast/relation cue (whether, versus, than,
  tension, discrepancy...), minus generic robustness templates;
* ``j``: justification cues — a stated hypothesis/premise or a causal/conditional
  cue (because, if, due to, predict...), two or more evidence ids, a well-formed
  single question of 8–60 words;
* ``b``: 1 + 4 × the share of distinct evidence papers among all cited ones;
* ``d``: 1 + 4 × (distinct clusters − 1)/(n − 1) under the ``tfidf`` equivalence rule;
* ``u``: the mean over outputs of 1 + 2·(well formed) + 2·(specific).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, TypedDict, runtime_checkable

from backtest.arena.contexts import ArenaContext, ArenaOutput
from backtest.core.registry import Registry
from backtest.text.clarity import _MOLECULE, _QUANTITY

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+-]{2,}")
_CONTRAST = re.compile(
    r"\b(?:whether|versus|vs\.?|than|tension|discrepan\w*|disagree\w*|inconsistent|contradict\w*|"
    r"compared|differ\w*|instead|rather)\b",
    re.I,
)
_CAUSAL = re.compile(
    r"\b(?:because|if|due to|caused?|drives?|driven|predicts?|implies|would|mechanism|explain\w*|"
    r"given that|since|leads? to|depends? on|as a result)\b",
    re.I,
)
_GENERIC = re.compile(
    r"\b(?:robust to independent|main result reported|central conclusion of the highly cited|"
    r"hold under independent datasets|how can this be resolved)\b",
    re.I,
)


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def content_words(text: str) -> list[str]:
    """Lower-cased words of three or more characters that are not English stop words."""
    stop = _stop_words()
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in stop]


def _scale(x: float, lo: float, hi: float) -> float:
    """Map ``x`` from [lo, hi] onto [1, 5], clipped."""
    return float(min(5.0, max(1.0, 1.0 + 4.0 * (x - lo) / (hi - lo))))


@dataclass(frozen=True)
class OutputScores:
    """Per-output rubric scores (1–5)."""

    grounding: float
    insight: float
    justification: float

    @property
    def q_pair(self) -> float:
        """(g + ℓ + j) / 3."""
        return (self.grounding + self.insight + self.justification) / 3.0

    def to_dict(self) -> dict[str, float]:
        """JSON-ready scores plus ``q_pair``."""
        return {
            "grounding": round(self.grounding, 4),
            "insight": round(self.insight, 4),
            "justification": round(self.justification, 4),
            "q_pair": round(self.q_pair, 4),
        }


class SetScoresDict(TypedDict):
    """:meth:`SetScores.to_dict`."""

    breadth: float
    distinctness: float | None
    utility: float
    size: int
    q_set: float


class SystemRubric(TypedDict):
    """One system's line of :func:`rubric_report`: mean per-output scores and its set's scores."""

    n_outputs: int
    grounding: float
    insight: float
    justification: float
    q_pair: float
    set: SetScoresDict
    q_set: float


class RubricReport(TypedDict):
    """:func:`rubric_report`: the scorer's name and each system's rubric line."""

    scorer: str
    systems: dict[str, SystemRubric]


@dataclass(frozen=True)
class SetScores:
    """Per-set rubric scores (1–5); ``distinctness`` is None for a one-member set."""

    breadth: float
    distinctness: float | None
    utility: float
    size: int

    @property
    def q_set(self) -> float:
        """(b + d + u) / 3, or (b + u) / 2 for a one-member set."""
        if self.size <= 1 or self.distinctness is None:
            return (self.breadth + self.utility) / 2.0
        return (self.breadth + self.distinctness + self.utility) / 3.0

    def to_dict(self) -> SetScoresDict:
        """JSON-ready scores plus ``q_set``."""
        return {
            "breadth": round(self.breadth, 4),
            "distinctness": None if self.distinctness is None else round(self.distinctness, 4),
            "utility": round(self.utility, 4),
            "size": self.size,
            "q_set": round(self.q_set, 4),
        }


def q_pair(scores: Sequence[OutputScores]) -> float | None:
    """Mean over pairs of (g + ℓ + j)/3; None for no pairs."""
    return sum(s.q_pair for s in scores) / len(scores) if scores else None


def _well_formed(text: str) -> bool:
    question = text.split("\n", 1)[0]
    return question.count("?") == 1 and 8 <= len(question.split()) <= 60


def _specific(text: str) -> bool:
    from backtest.text.objects import find_objects

    return bool(find_objects(text)) or bool(_MOLECULE.search(text))


class OfflineRubric:
    """Deterministic text-feature rubric (weak; see the module docstring)."""

    name = "offline-rubric-v1"

    def score_output(self, context: ArenaContext, output: ArenaOutput) -> OutputScores:
        """g, ℓ, j for one output in its context."""
        from backtest.text.objects import find_objects

        text = output.output
        words = content_words(text)
        ctx_words = set(content_words(context.text))
        overlap = sum(w in ctx_words for w in words) / len(words) if words else 0.0
        grounding = _scale(overlap, 0.0, 0.6)
        n_specific = len(find_objects(text)) + len(set(_MOLECULE.findall(text))) + len(_QUANTITY.findall(text))
        raw_insight = min(2, n_specific) + (1 if _CONTRAST.search(text) else 0) - (2 if _GENERIC.search(text) else 0)
        insight = _scale(raw_insight, -1.0, 3.0)
        cues = 1 if ("\nHypothesis:" in text or "\nPremise:" in text or _CAUSAL.search(text)) else 0
        cues += 1 if len(output.evidence_ids) >= 2 else 0
        cues += 1 if _well_formed(text) else 0
        justification = _scale(cues, 0.0, 3.0)
        return OutputScores(grounding, insight, justification)

    def score_set(self, outputs: Sequence[ArenaOutput]) -> SetScores:
        """b, d, u for a set of outputs (one system's outputs)."""
        from backtest.text.equivalence import get_rule, n_distinct

        n = len(outputs)
        if n == 0:
            raise ValueError("an empty set has no rubric scores")
        cited = [i for o in outputs for i in o.evidence_ids]
        breadth = _scale(len(set(cited)) / len(cited), 0.0, 1.0) if cited else 1.0
        distinct = None
        if n > 1:
            k = n_distinct([o.output for o in outputs], get_rule("tfidf"))
            distinct = 1.0 + 4.0 * (k - 1) / (n - 1)
        utility = sum(1.0 + 2.0 * _well_formed(o.output) + 2.0 * _specific(o.output) for o in outputs) / n
        return SetScores(breadth, distinct, utility, n)


@runtime_checkable
class RubricScorer(Protocol):
    """What a rubric factory makes: scores for one output in its context, and for one system's set of outputs."""

    name: str

    def score_output(self, context: ArenaContext, output: ArenaOutput) -> OutputScores:
        """g, ℓ, j for one output in its context."""
        ...

    def score_set(self, outputs: Sequence[ArenaOutput]) -> SetScores:
        """b, d, u for a set of outputs (one system's outputs)."""
        ...


RubricFactory = Callable[..., RubricScorer]


def make_offline_rubric(**_: Any) -> OfflineRubric:
    """Factory for the ``offline`` rubric scorer (no settings)."""
    return OfflineRubric()


# Rubric scorers (``--rubric NAME``). Plugins: entry-point group ``backtest.rubrics``, each a factory
# taking keyword options (``config=...`` for configured ones).
RUBRICS: Registry[RubricFactory] = Registry(
    "rubric",
    "rubrics",
    {
        "offline": "backtest.arena.rubric:make_offline_rubric",
        "llm": "backtest.arena.llm_pairwise:make_rubric",
    },
    makes=RubricScorer,
)


def get_rubric(name: str = "offline", **options: Any) -> RubricScorer:
    """A rubric scorer by name (``offline``; ``llm`` needs ``config=...``); BadInput, one line, when what its
    factory makes is no :class:`RubricScorer`."""
    made: RubricScorer = RUBRICS.make(name, **options)
    return made


def rubric_report(contexts: Sequence[ArenaContext], scorer=None) -> RubricReport:
    """Per-system diagnostics: mean g/ℓ/j and Q_pair over its outputs, and set scores over all its outputs."""
    scorer = scorer or OfflineRubric()
    per_system: dict[str, list[tuple[ArenaContext, ArenaOutput]]] = {}
    for ctx in contexts:
        for name, out in ctx.outputs.items():
            per_system.setdefault(name, []).append((ctx, out))
    report = RubricReport(scorer=getattr(scorer, "name", "rubric"), systems={})
    for name in sorted(per_system):
        scores = [scorer.score_output(ctx, out) for ctx, out in per_system[name]]
        set_scores = scorer.score_set([out for _, out in per_system[name]])
        n = len(scores)
        report["systems"][name] = SystemRubric(
            n_outputs=n,
            grounding=round(sum(s.grounding for s in scores) / n, 4),
            insight=round(sum(s.insight for s in scores) / n, 4),
            justification=round(sum(s.justification for s in scores) / n, 4),
            q_pair=round(q_pair(scores) or 0.0, 4),
            set=set_scores.to_dict(),
            q_set=round(set_scores.q_set, 4),
        )
    return report
