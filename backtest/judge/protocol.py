"""The Judge protocol, the answer every judge gives, and the registry of judge kinds.

A judge reads one frozen question and the documents retrieval showed it, and answers
with two independent labels (``outcome`` and ``premise_status``), the evidence it
cites and a rationale. The answer is checked by :mod:`backtest.judge.constraints`
before it becomes a :class:`~backtest.records.Judgment`.

Judges are named either by a registered kind that needs no configuration
(``offline``) or by a TOML config file (``judges/NAME.toml``, ``kind = "llm"``);
``get_judge("NAME")`` also finds ``judges/NAME.toml`` in the workspace.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BadInput
from ..records import OUTCOMES, PREMISE_STATUSES, EvidenceItem, Judgment, JudgeInfo, Question, RetrievedDocument
from ..workspace import Workspace


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


def answer_schema(shown_ids: list[str] | None = None, max_rationale_chars: int = 400,
                  max_relevance_chars: int = 160) -> dict[str, Any]:
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
                    "properties": {"id": id_schema,
                                   "relevance": {"type": "string", "maxLength": max_relevance_chars}},
                    "required": ["id", "relevance"],
                    "additionalProperties": False,
                },
            },
            "rationale": {"type": "string", "maxLength": max_rationale_chars},
        },
        "required": ["outcome", "premise_status", "evidence", "rationale"],
        "additionalProperties": False,
    }


@runtime_checkable
class Judge(Protocol):
    """What the scorer needs from a judge."""

    name: str
    #: how many questions the scorer may judge at once (1 for CPU-bound judges)
    concurrency: int

    def info(self) -> JudgeInfo:
        """Who labels: name, model, protocol, prompt and config sha256 (goes into every Judgment)."""

    def settings(self) -> dict[str, Any]:
        """Everything that changes this judge's labels (a run id is derived from it); no secrets."""

    def judge(self, question: Question, documents: list[RetrievedDocument]) -> Judgment:
        """Label one question from the documents shown; constraints already applied."""

    def stats(self) -> dict[str, Any]:
        """Counters since creation: calls, cache hits, tokens (for progress and RUN.json)."""


JudgeFactory = Callable[[dict[str, Any], "Path | None", "Workspace | None"], Judge]
_REGISTRY: dict[str, tuple[JudgeFactory, bool]] = {}


def register_judge(kind: str, needs_config: bool = False) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register a factory ``(config, config_path, ws) -> Judge`` under ``kind``."""

    def deco(factory: JudgeFactory) -> JudgeFactory:
        _REGISTRY[kind] = (factory, needs_config)
        return factory

    return deco


def _load_builtin() -> None:
    from . import fitted, llm, offline  # noqa: F401 - registration side effect


def judge_names() -> list[str]:
    """The registered judge kinds."""
    _load_builtin()
    return sorted(_REGISTRY)


def load_config(path: Path) -> dict[str, Any]:
    """Read a judge TOML config, with BadInput naming the file on any problem."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such judge config") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: bad TOML ({exc})") from None
    return data


def get_judge(name_or_config_path: str | Path | None = None, ws: Workspace | None = None) -> Judge:
    """The judge named by a config file path, a registered kind (``offline``), or ``judges/<name>.toml``.

    ``None`` means the default, ``offline``.
    """
    _load_builtin()
    value = str(name_or_config_path or "offline")
    path = Path(value)
    candidates = [path]
    if ws is not None and not path.is_absolute():
        candidates += [ws.root / path, ws.judges / path, ws.judges / f"{value}.toml"]
    config_path = next((p for p in candidates if p.suffix == ".toml" and p.is_file()), None)
    if config_path is None and value in _REGISTRY and not _REGISTRY[value][1]:
        return _REGISTRY[value][0]({}, None, ws)
    if config_path is None:
        if value.endswith(".toml"):
            raise BadInput(f"{value}: no such judge config")
        raise BadInput(f"unknown judge {value!r}: give a judges/NAME.toml config or one of {', '.join(k for k, (_, c) in sorted(_REGISTRY.items()) if not c)}")
    config = load_config(config_path)
    kind = config.get("kind", "llm")
    if kind not in _REGISTRY:
        raise BadInput(f"{config_path}: unknown judge kind {kind!r} (known: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[kind][0](config, config_path.resolve(), ws)
