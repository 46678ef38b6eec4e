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
``kind = "llm"`` (the shared OpenAI-compatible client, :mod:`backtest.llm.client`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Iterable, Required, Sequence, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from backtest.arena.contexts import ArenaContext, ArenaOutput
from backtest.core.errors import BadInput
from backtest.core.fileio import read_toml
from backtest.core.records import Versioned
from backtest.core.registry import Registry
from backtest.judge.protocol import factory_of_config, find_config, not_refittable

VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
SHARES = {"A>>B": 1.0, "A>B": 0.75, "A=B": 0.5, "B>A": 0.25, "B>>A": 0.0}
DISPLAY = {"A>>B": "A≫B", "A>B": "A>B", "A=B": "A≈B", "B>A": "B>A", "B>>A": "B≫A"}
_ALIASES = {
    "A≫B": "A>>B",
    "A≈B": "A=B",
    "B≫A": "B>>A",
    "A~B": "A=B",
    "tie": "A=B",
    "A==B": "A=B",
    "A<B": "B>A",
    "A<<B": "B>>A",
    "B<A": "A>B",
    "B<<A": "A>>B",
}
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


class PairwiseJudgeInfo(TypedDict, total=False):
    """:meth:`PairwiseJudge.info`: a pairwise judge's identity (its fingerprint hashes exactly these keys, so
    each judge gives only the ones it has)."""

    name: Required[str]
    kind: Required[str]
    protocol: str
    model: str
    prompt_sha256: str
    config_sha256: str | None
    temperature: float
    tie_margin: float
    strong_margin: float
    rubric: str
    note: str


class PairVerdict(BaseModel):
    """One judge answer for one ordering."""

    model_config = ConfigDict(extra="forbid")

    verdict: str
    rationale: str = ""
    tokens: dict[str, int] = Field(default_factory=dict)


Call = tuple[ArenaContext, ArenaOutput, ArenaOutput]


class PairwiseJudge(ABC):
    """Compares two outputs for one context; ``a`` is shown first (position A). Every pairwise judge subclasses
    it; the optional capabilities have the defaults of a judge that lacks them (no ``getattr`` probing)."""

    name: str
    #: True when comparing calls an endpoint (``judge verify-card`` then calls it only when told to)
    calls_endpoint: bool = False

    @abstractmethod
    def info(self) -> PairwiseJudgeInfo:
        """Name, model, prompt and config hashes: everything that identifies the judge."""

    @abstractmethod
    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """The verdict with ``a`` in position A and ``b`` in position B."""

    def compare_many(self, calls: Sequence[Call], done: Callable[[int], None] | None = None) -> list[PairVerdict]:
        """The verdicts of many ``(context, a, b)`` calls, in order; ``done(k)`` as k more are made. One at a time
        here; a judge with an endpoint overrides it to run them concurrently."""
        verdicts = []
        for call in calls:
            verdicts.append(self.compare(*call))
            if done:
                done(1)
        return verdicts

    def trained_on(self, pairs: Sequence[Any]) -> list[bool]:
        """For each annotated pair, whether the judge was fitted on it (a validation sets those aside)."""
        return [False] * len(pairs)

    def cross_validate(self, pairs: Sequence[Any], truth: dict[str, str], folds: int = 5, seed: int = 0) -> list[tuple]:
        """(better, share_a, verdicts) per pair, each from the judge refitted without the pair's fold."""
        raise not_refittable(self.name)


PairwiseFactory = Callable[[dict[str, Any], "Path | None"], PairwiseJudge]

# Pairwise judge kinds (``--judge NAME`` or a config's ``kind``). Plugins: entry-point group
# ``backtest.pairwise_judges``, each a factory ``(config, config_path) -> PairwiseJudge``.
PAIRWISE_JUDGES: Registry[PairwiseFactory] = Registry(
    "pairwise judge",
    "pairwise_judges",
    {
        "offline": "backtest.arena.fitted_pairwise:make_fitted",
        "offline-rubric-v1": "backtest.arena.offline_pairwise:make_offline_rubric",
        "position-a": "backtest.arena.offline_pairwise:make_position_a",
        "llm": "backtest.arena.llm_pairwise:make_llm",
    },
    makes=PairwiseJudge,
)


def get_pairwise_judge(name_or_config: str | Path | None = None, root: Path | None = None) -> PairwiseJudge:
    """A registered judge (``offline``, ``position-a``) or one built from a TOML config (``kind = "llm"``).

    A bare name also finds ``judges/<name>.toml`` under ``root``.
    """
    value = str(name_or_config or "offline")
    config_path = find_config(value, root)
    if config_path is None and value in PAIRWISE_JUDGES:
        kind, made = value, PAIRWISE_JUDGES.get(value)({}, None)
    elif config_path is None:
        raise BadInput(f"{PAIRWISE_JUDGES.unknown(value).message}: or give a judges/NAME.toml config")
    else:
        config = read_toml(config_path, "pairwise judge config")
        kind = str(config.get("kind", "llm"))
        made = factory_of_config(PAIRWISE_JUDGES, config, config_path)(config, config_path.resolve())
    PAIRWISE_JUDGES.check(made, kind, what="pairwise judge kind")  # a plugin's factory may make anything
    return made


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
    return ArenaCase(
        context_id=context_id,
        system_a=system_a,
        system_b=system_b,
        verdict_ab=va,
        verdict_ba=vb,
        share_ab=share_ab,
        share_ba=share_ba,
        share=(share_ab + share_ba) / 2.0,
        consistent=polarity(share_ab) == polarity(share_ba),
        rationale_ab=first.rationale,
        rationale_ba=second.rationale,
    )


def context_pairs(contexts: Sequence[ArenaContext]) -> list[tuple[ArenaContext, str, str]]:
    """Every (context, system_a, system_b) with ``system_a < system_b``, in context order."""
    out = []
    for ctx in contexts:
        names = ctx.systems()
        out += [(ctx, a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return out


def judge_contexts(
    contexts: Sequence[ArenaContext], judge: PairwiseJudge, progress: Callable[[int], None] | None = None
) -> list[ArenaCase]:
    """Judge every pair in every context in both orders; cases in context-then-pair order.

    The judge's ``compare_many`` gets every ordering at once (the LLM judge runs them concurrently);
    ``progress(k)`` is told as k more pairs have both orders judged.
    """
    pairs = context_pairs(contexts)
    calls: list[Call] = []
    for ctx, a, b in pairs:
        calls += [(ctx, ctx.outputs[a], ctx.outputs[b]), (ctx, ctx.outputs[b], ctx.outputs[a])]
    made = 0

    def done(k: int) -> None:  # two orderings make a pair
        nonlocal made
        before, made = made // 2, made + k
        if progress and made // 2 > before:
            progress(made // 2 - before)

    verdicts = judge.compare_many(calls, done)
    return [
        make_case(ctx.context_id, a, b, verdicts[2 * k], verdicts[2 * k + 1]) for k, (ctx, a, b) in enumerate(pairs)
    ]


def fold_cases(cases: Iterable[ArenaCase], fold: str = "average") -> tuple[list[ArenaCase], list[ArenaCase]]:
    """Split cases into (entering the fit, order-sensitive set aside) under ``fold``."""
    if fold not in FOLDS:
        raise BadInput(f"unknown fold {fold!r}; known: {', '.join(FOLDS)}")
    cases = list(cases)
    if fold == "average":
        return cases, []
    return [c for c in cases if c.consistent], [c for c in cases if not c.consistent]
