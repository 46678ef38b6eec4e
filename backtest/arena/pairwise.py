"""Pairwise judges, A/B position swapping and order folding.

A pairwise judge sees one context and two outputs, shown as *A* and *B*, and
returns one of five verdicts::

    A>>B (A≫B)  A>B  A=B (A≈B)  B>A  B>>A (B≫A)   →   win share of A: 1, 0.75, 0.5, 0.25, 0

Every pair is judged twice, once in each order. The two shares (both expressed
for the same system) are averaged. A case is *consistent* only when both orders
agree in polarity (both favour the same system, or both say ≈). Folding:

* ``average`` (default): every case enters the fit with its averaged share.
  A judge that always prefers position A yields 0.75 and 0.25, i.e. exactly ½.
* ``strict``: only consistent (order-stable) cases enter the fit; the
  order-sensitive ones are reported separately (see :func:`backtest.arena.run.sensitivity`
  for the sensitivity refits).

Registry (:func:`get_pairwise_judge`): ``offline`` (deterministic rubric-feature
comparison, no network), ``position-a`` (a deliberately biased control that always
prefers position A, for checking the folding), and ``llm`` via a TOML config with
``kind = "llm"`` (the shared OpenAI-compatible client, :mod:`backtest.llm_client`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BadInput
from ..records import Versioned
from .contexts import ArenaContext, ArenaOutput

VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
SHARES = {"A>>B": 1.0, "A>B": 0.75, "A=B": 0.5, "B>A": 0.25, "B>>A": 0.0}
DISPLAY = {"A>>B": "A≫B", "A>B": "A>B", "A=B": "A≈B", "B>A": "B>A", "B>>A": "B≫A"}
_ALIASES = {"A≫B": "A>>B", "A≈B": "A=B", "B≫A": "B>>A", "A~B": "A=B", "tie": "A=B", "A==B": "A=B",
            "A<B": "B>A", "A<<B": "B>>A", "B<A": "A>B", "B<<A": "A>>B"}
FOLDS = ("average", "strict")


def normalise_verdict(value: str) -> str:
    """Map a verdict spelling (``A≫B``, ``A>>B``, ``A≈B``, ``tie``...) to its ASCII form; BadInput if unknown."""
    v = "".join(str(value).split())
    v = _ALIASES.get(v, v)
    if v not in SHARES:
        raise BadInput(f"unknown pairwise verdict {value!r}; expected one of {', '.join(DISPLAY.values())}")
    return v


def polarity(share: float) -> int:
    """+1 when a share favours the system, −1 when it favours the other, 0 for a tie."""
    return 0 if abs(share - 0.5) < 1e-12 else (1 if share > 0.5 else -1)


class PairVerdict(BaseModel):
    """One judge answer for one ordering."""

    model_config = ConfigDict(extra="forbid")

    verdict: str
    rationale: str = ""
    tokens: dict[str, int] = Field(default_factory=dict)


@runtime_checkable
class PairwiseJudge(Protocol):
    """Compares two outputs for one context; ``a`` is shown first (position A)."""

    name: str

    def info(self) -> dict[str, Any]:
        """Name, model, prompt and config hashes: everything that identifies the judge."""
        ...

    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """The verdict with ``a`` in position A and ``b`` in position B."""
        ...


PairwiseFactory = Callable[[dict[str, Any], Path | None], PairwiseJudge]
_REGISTRY: dict[str, tuple[PairwiseFactory, bool]] = {}


def register_pairwise_judge(kind: str, needs_config: bool = False) -> Callable[[PairwiseFactory], PairwiseFactory]:
    """Decorator: register ``factory(config, config_path) -> PairwiseJudge`` under ``kind``."""

    def deco(factory: PairwiseFactory) -> PairwiseFactory:
        _REGISTRY[kind] = (factory, needs_config)
        return factory

    return deco


def pairwise_judge_names() -> list[str]:
    """Registered pairwise-judge kinds."""
    return sorted(_REGISTRY)


def get_pairwise_judge(name_or_config: str | Path | None = None, root: Path | None = None) -> PairwiseJudge:
    """A registered judge (``offline``, ``position-a``) or one built from a TOML config (``kind = "llm"``).

    A bare name also finds ``judges/<name>.toml`` under ``root``.
    """
    value = str(name_or_config or "offline")
    if value in _REGISTRY and not _REGISTRY[value][1]:
        return _REGISTRY[value][0]({}, None)
    path = Path(value)
    candidates = [path] + ([root / path, root / "judges" / path, root / "judges" / f"{value}.toml"] if root else [])
    config_path = next((p for p in candidates if p.suffix == ".toml" and p.is_file()), None)
    if config_path is None:
        raise BadInput(f"unknown pairwise judge {value!r}: give a judges/NAME.toml config or one of "
                       f"{', '.join(k for k, (_, c) in sorted(_REGISTRY.items()) if not c)}")
    config = load_config(config_path)
    kind = str(config.get("kind", "llm"))
    if kind not in _REGISTRY:
        raise BadInput(f"{config_path}: unknown pairwise judge kind {kind!r} (known: {', '.join(pairwise_judge_names())})")
    return _REGISTRY[kind][0](config, config_path.resolve())


def load_config(path: Path) -> dict[str, Any]:
    """Read a TOML judge config, with BadInput naming the file on any problem."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such config") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: bad TOML ({exc})") from None


# --------------------------------------------------------------------------- built-in judges


class OfflinePairwiseJudge:
    """Deterministic, no network: compares the two outputs' offline rubric scores.

    The per-output score is ``(g + ℓ + j) / 3`` from :class:`backtest.arena.rubric.OfflineRubric`
    (grounding in the context, specificity, justification cues). A difference under
    ``tie_margin`` is A≈B, under ``strong_margin`` a plain preference, else a strong
    one. It never looks at the position, so it is order-stable by construction.
    Documented as weak: it rewards overlap and specificity, not insight.
    """

    name = "offline-rubric-v1"

    def __init__(self, tie_margin: float = 0.15, strong_margin: float = 0.75):
        from .rubric import OfflineRubric

        self.rubric = OfflineRubric()
        self.tie_margin = tie_margin
        self.strong_margin = strong_margin

    def info(self) -> dict[str, Any]:
        """Name and margins."""
        return {"name": self.name, "kind": "offline-rubric-v1", "protocol": "offline-rubric-v1", "tie_margin": self.tie_margin,
                "strong_margin": self.strong_margin, "rubric": self.rubric.name}

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


class PositionAJudge:
    """A deliberately biased control: always answers A>B, whatever it is shown."""

    name = "position-a"

    def info(self) -> dict[str, Any]:
        """Name only."""
        return {"name": self.name, "kind": "control", "note": "always prefers position A"}

    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """Always A>B."""
        return PairVerdict(verdict="A>B", rationale="position-A control")


register_pairwise_judge("offline-rubric-v1")(lambda config, path: OfflinePairwiseJudge())


def _make_fitted(config: dict[str, Any], path: Path | None) -> PairwiseJudge:
    from .fitted_pairwise import DEFAULT_WEIGHTS, FittedPairwiseJudge

    weights = Path(config["weights"]) if config.get("weights") else DEFAULT_WEIGHTS
    if path is not None and not weights.is_absolute():
        weights = path.parent / weights
    return FittedPairwiseJudge.from_file(weights)


register_pairwise_judge("offline")(_make_fitted)
register_pairwise_judge("position-a")(lambda config, path: PositionAJudge())


def _make_llm(config: dict[str, Any], path: Path | None) -> PairwiseJudge:
    from .llm_pairwise import LLMPairwiseJudge

    return LLMPairwiseJudge(config, path)


register_pairwise_judge("llm", needs_config=True)(_make_llm)


# --------------------------------------------------------------------------- judging both orders


class ArenaCase(Versioned):
    """One pair of systems on one context, judged in both orders (shares are ``system_a``'s)."""

    model_config = ConfigDict(extra="forbid")

    context_id: str
    system_a: str
    system_b: str
    verdict_ab: str
    verdict_ba: str
    share_ab: float
    share_ba: float
    share: float
    consistent: bool
    rationale_ab: str = ""
    rationale_ba: str = ""


def make_case(context_id: str, system_a: str, system_b: str, first: PairVerdict, second: PairVerdict) -> ArenaCase:
    """Fold two verdicts: ``first`` showed ``system_a`` as A, ``second`` showed ``system_b`` as A."""
    va, vb = normalise_verdict(first.verdict), normalise_verdict(second.verdict)
    share_ab = SHARES[va]
    share_ba = 1.0 - SHARES[vb]
    return ArenaCase(context_id=context_id, system_a=system_a, system_b=system_b, verdict_ab=va, verdict_ba=vb,
                     share_ab=share_ab, share_ba=share_ba, share=(share_ab + share_ba) / 2.0,
                     consistent=polarity(share_ab) == polarity(share_ba),
                     rationale_ab=first.rationale, rationale_ba=second.rationale)


def context_pairs(contexts: Sequence[ArenaContext]) -> list[tuple[ArenaContext, str, str]]:
    """Every (context, system_a, system_b) with ``system_a < system_b``, in context order."""
    out = []
    for ctx in contexts:
        names = ctx.systems()
        out += [(ctx, a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    return out


def judge_contexts(contexts: Sequence[ArenaContext], judge: PairwiseJudge,
                   progress: Callable[[int], None] | None = None) -> list[ArenaCase]:
    """Judge every pair in every context in both orders; cases in context-then-pair order.

    A judge with a ``compare_many(list of (context, a, b))`` method (the LLM judge) gets all
    orderings in one call so it can run them concurrently.
    """
    pairs = context_pairs(contexts)
    calls = []
    for ctx, a, b in pairs:
        calls += [(ctx, ctx.outputs[a], ctx.outputs[b]), (ctx, ctx.outputs[b], ctx.outputs[a])]
    many = getattr(judge, "compare_many", None)
    if many is not None:
        verdicts = many(calls)
        if progress:
            progress(len(pairs))
    else:
        verdicts = []
        for k, call in enumerate(calls):
            verdicts.append(judge.compare(*call))
            if progress and k % 2 == 1:
                progress(1)
    return [make_case(ctx.context_id, a, b, verdicts[2 * k], verdicts[2 * k + 1]) for k, (ctx, a, b) in enumerate(pairs)]


def fold_cases(cases: Iterable[ArenaCase], fold: str = "average") -> tuple[list[ArenaCase], list[ArenaCase]]:
    """Split cases into (entering the fit, order-sensitive set aside) under ``fold``."""
    if fold not in FOLDS:
        raise BadInput(f"unknown fold {fold!r}; known: {', '.join(FOLDS)}")
    cases = list(cases)
    if fold == "average":
        return cases, []
    return [c for c in cases if c.consistent], [c for c in cases if not c.consistent]
