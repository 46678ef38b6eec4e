"""The Judge protocol, the answer every judge gives, and the registry of judge kinds.

A judge reads one frozen question and the documents retrieval showed it, and answers
with two independent labels (``outcome`` and ``premise_status``), the evidence it
cites and a rationale. The answer is checked by :mod:`backtest.judge.constraints`
before it becomes a :class:`~backtest.core.records.Judgment`.

Judges are named either by a registered kind that needs no configuration
(``offline``) or by a TOML config file (``judges/NAME.toml``, ``kind = "llm"``);
``get_judge("NAME")`` also finds ``judges/NAME.toml`` in the workspace.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from backtest.core.errors import BadInput
from backtest.core.fileio import read_toml
from backtest.core.records import (
    OUTCOMES,
    PREMISE_STATUSES,
    EvidenceItem,
    JudgeInfo,
    Judgment,
    Question,
    RetrievedDocument,
)
from backtest.core.registry import Registry
from backtest.core.workspace import Workspace
from backtest.llm.pricing import CallEstimate, Price


class AnswerEvidence(EvidenceItem):
    """One cited document in a judge's raw answer: an :class:`EvidenceItem` whose unknown keys are dropped."""

    model_config = ConfigDict(extra="ignore")


class JudgeAnswer(BaseModel):
    """A judge's raw answer, before constraints. Labels are free strings so unknown ones can be flagged."""

    model_config = ConfigDict(extra="ignore")

    outcome: str
    premise_status: str
    evidence: list[AnswerEvidence] = Field(default_factory=list)
    rationale: str = ""


def answer_schema(
    shown_ids: list[str] | None = None, max_rationale_chars: int = 400, max_relevance_chars: int = 160
) -> dict[str, Any]:
    """The JSON schema an LLM answer must follow (labels and, when given, cited ids as enums).

    String lengths and the number of citations are bounded so a small model cannot run
    past ``max_tokens`` and return truncated JSON.
    """
    id_schema: dict[str, Any] = {"type": "string"}
    if shown_ids:
        id_schema = {"type": "string", "enum": list(shown_ids)}
    return {
        "type": "object",
        "properties": {
            "outcome": {"type": "string", "enum": list(OUTCOMES)},
            "premise_status": {"type": "string", "enum": list(PREMISE_STATUSES)},
            "evidence": {
                "type": "array",
                "maxItems": max(1, len(shown_ids or []) or 8),
                "items": {
                    "type": "object",
                    "properties": {"id": id_schema, "relevance": {"type": "string", "maxLength": max_relevance_chars}},
                    "required": ["id", "relevance"],
                    "additionalProperties": False,
                },
            },
            "rationale": {"type": "string", "maxLength": max_rationale_chars},
        },
        "required": ["outcome", "premise_status", "evidence", "rationale"],
        "additionalProperties": False,
    }


#: what a question costs a judge that calls no endpoint: nothing, as if cached
NO_CALL = CallEstimate(0, 0, exact=True, cached=True)


class Judge(ABC):
    """The base every judge subclasses: the three methods the scorer needs, and each optional capability with
    the default of a judge that lacks it, so callers ask the judge instead of probing it with ``getattr``.

    Endpoint judges (``calls_endpoint``) override ``is_cached``, ``estimate``, ``worst_case`` and
    ``disable_cache``, and set ``price`` when their config has a price table; fitted judges override
    ``trained_on`` and ``cross_validate``.
    """

    name: str
    #: how many questions the scorer may judge at once (1 for CPU-bound judges)
    concurrency: int = 1
    #: the TOML config the judge was made from; None for a registered kind used bare (a run records it)
    config_path: Path | None = None
    #: the config's price table; None: unpriced, so ``score --max-cost`` is refused
    price: Price | None = None
    #: True when judging calls an endpoint: the judge keeps its own limit on calls in flight, and
    #: ``--max-cost`` admits each question on its :meth:`worst_case`
    calls_endpoint: bool = False

    @abstractmethod
    def info(self) -> JudgeInfo:
        """Who labels: name, model, protocol, prompt and config sha256 (goes into every Judgment)."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """Everything that changes this judge's labels (a run id is derived from it); no secrets."""

    @abstractmethod
    def judge(self, question: Question, documents: list[RetrievedDocument]) -> Judgment:
        """Label one question from the documents shown; constraints already applied."""

    def stats(self) -> dict[str, Any]:
        """Counters since creation: calls, cache hits, tokens (for progress and RUN.json)."""
        return {}

    def is_cached(self, question: Question, documents: Sequence[RetrievedDocument]) -> bool:
        """True when the question's answer would come from the judge's cache (no call, no cost)."""
        return False

    def estimate(self, question: Question, documents: Sequence[RetrievedDocument]) -> CallEstimate:
        """The first call's prompt tokens and completion bound, before it is made (``score --dry-run``)."""
        return NO_CALL

    def worst_case(self, question: Question, documents: Sequence[RetrievedDocument]) -> CallEstimate:
        """The most one question can cost, every retry included (what ``score --max-cost`` admits it on)."""
        return NO_CALL

    def disable_cache(self) -> bool:
        """Switch off the judge's response cache, reads and writes; True when it had one."""
        return False

    def trained_on(self, items: Sequence[Any]) -> list[bool]:
        """For each annotation item, whether the judge was fitted on it (a validation sets those aside)."""
        return [False] * len(items)

    def cross_validate(
        self, items: Sequence[Any], truth: dict[str, Any], folds: int = 5, seed: int = 0
    ) -> list[Judgment]:
        """The items' judgments, each from the judge refitted without the fold that holds it."""
        raise not_refittable(self.name)


F = TypeVar("F")

JudgeFactory = Callable[[dict[str, Any], "Path | None", "Workspace | None"], Judge]

# Judge kinds: a bare ``--judge NAME`` or a config's ``kind = "NAME"``. Plugins: entry-point group
# ``backtest.judges``, each a factory ``(config, config_path, ws) -> Judge``; a factory that needs a
# config file says so itself (BadInput) when ``config_path`` is None.
JUDGES: Registry[JudgeFactory] = Registry(
    "judge",
    "judges",
    {
        "offline": "backtest.judge.fitted:make_fitted",
        "offline-cues-v1": "backtest.judge.offline:make_offline",
        "llm": "backtest.judge.llm:make_llm",
    },
    makes=Judge,
)


def register_judge(kind: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Decorator registering a factory ``(config, config_path, ws) -> Judge`` under ``kind`` (in-process)."""
    return JUDGES.register(kind)


def judge_names() -> list[str]:
    """The registered judge kinds."""
    return JUDGES.names()


def load_config(path: Path) -> dict[str, Any]:
    """Read a judge TOML config, with BadInput naming the file on any problem."""
    return read_toml(path, "judge config")


def get_judge(name_or_config_path: str | Path | None = None, ws: Workspace | None = None) -> Judge:
    """The judge named by a config file path, a registered kind (``offline``), or ``judges/<name>.toml``.

    ``None`` means the default, ``offline``.
    """
    value = str(name_or_config_path or "offline")
    config_path = find_config(value, ws.root if ws is not None else None)
    if config_path is None and value in JUDGES:
        kind, made = value, JUDGES.get(value)({}, None, ws)
    elif config_path is None:
        if value.endswith(".toml"):
            raise BadInput(f"{value}: no such judge config")
        raise BadInput(f"{JUDGES.unknown(value).message}: or give a judges/NAME.toml config")
    else:
        config = load_config(config_path)
        # absolute, links not followed: the judge is named by where the workspace has its config (judge_spec_of)
        kind = str(config.get("kind", "llm"))
        made = factory_of_config(JUDGES, config, config_path)(config, Path(os.path.abspath(config_path)), ws)
    JUDGES.check(made, kind, what="judge kind")  # a plugin's factory may make anything
    return made


def not_refittable(name: str) -> BadInput:
    """What ``--cross-validate`` says of a judge (or pairwise judge) that has no weights to refit."""
    return BadInput(f"--cross-validate needs a fitted judge; {name!r} has no weights to refit")


def find_config(value: str, root: Path | None) -> Path | None:
    """The TOML config ``value`` names: the path itself, or under ``root``: the path, ``judges/<path>`` or
    ``judges/<value>.toml``; None when there is none (``value`` may then be a registered kind)."""
    path = Path(value)
    # inside the workspace first: a run records its judge as judges/NAME.toml, which must name the workspace's
    # config when another workspace (a replay's scratch one) scores from the same working directory
    inside = (
        [root / path, root / "judges" / path, root / "judges" / f"{value}.toml"]
        if root and not path.is_absolute()
        else []
    )
    candidates = inside + [path]
    return next((p for p in candidates if p.suffix == ".toml" and p.is_file()), None)


def factory_of_config(registry: Registry[F], config: dict[str, Any], config_path: Path) -> F:
    """The factory of a config's ``kind`` (default ``llm``) in ``registry``; BadInput naming the file otherwise."""
    kind = str(config.get("kind", "llm"))
    if kind not in registry:
        raise BadInput(f"{config_path}: {registry.unknown(kind, what=f'{registry.family} kind').message}")
    return registry.get(kind)
