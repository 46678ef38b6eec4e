"""The ``Generator`` protocol, its registry, and the code that turns drafts into a submission.

A generator reads ONE thing: the instance's :class:`~backtest.corpus.store.PastCorpus`
(plus the instance record for its cutoff and domain). It never imports the future
corpus or the retrievers; ``tests/test_generators_isolation.py`` scans the imports.

A generator returns :class:`Draft` questions, best first. :func:`build_submission`
numbers them, stamps the shared fields (domain, cutoff, ``generated_at``, system
name) and :func:`write_submission` writes ``questions.jsonl`` + ``metadata.json``
in the submission format (``records.Question`` / ``records.SubmissionMetadata``).

Determinism: every generator takes ``seed`` and sorts before it samples, so the
same past corpus, seed and options give byte-identical files. ``generated_at`` is
not the wall clock by default (see :func:`resolve_generated_at`).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

from backtest.core.errors import BadInput
from backtest.core.fileio import write_json, write_jsonl
from backtest.core.records import Instance, Question, SubmissionMetadata
from backtest.core.registry import Registry
from backtest.corpus.store import PastCorpus
from backtest.generators.outputs import GatedTension, TensionRecord

MAX_QUESTION_CHARS = 400  # our own limit, below any sensible clarity-gate limit

GENERATED_AT_MEANING = (
    "as-of date: the questions are a pure function of the past corpus (records dated on or before the cutoff), "
    "the seed and the generator's code, so generated_at is the cutoff day; reruns are byte-identical. "
    "Pass --generated-at now to stamp the wall-clock time instead."
)


class NothingToAsk(BadInput):
    """A generator found nothing it may ask about in this past corpus (exit 2 on its own; ``backtest baselines``
    records the generator as skipped, with this message, and goes on)."""


@dataclass
class Draft:
    """One question before numbering: its text, the past ids it came from, and optional fields."""

    question: str
    source_evidence_ids: list[str]
    objects: list[str] | None = None
    signal_type: str | None = None
    premise: str | None = None
    sub_questions: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    tension: TensionRecord | GatedTension | None = None  # evidence_graph's: written into the question as "tension"


@dataclass
class GenerationContext:
    """Everything a generator may read: the instance, its past corpus and the run's settings."""

    instance: Instance
    past: PastCorpus
    n: int = 125
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    cache_dir: Path | None = None

    @property
    def cutoff(self) -> dt.date:
        return self.instance.cutoff

    @property
    def domain(self) -> str:
        return self.instance.domain or self.instance.instance_id


@dataclass
class GenerationResult:
    """A generator's output: drafts (best first), a description, and any LLMs it used."""

    drafts: list[Draft]
    description: str
    llm_components: list[dict[str, Any]] | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    generated_at_meaning: str | None = None  # overrides GENERATED_AT_MEANING for the default stamp


@runtime_checkable
class Generator(Protocol):
    """A question generator that reads only the past corpus."""

    name: str
    version: str

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Return up to ``ctx.n`` drafts, best first, deterministically for ``ctx.seed``."""
        ...


# Name -> "module:Class", imported on first use. Plugins: entry-point group ``backtest.generators``.
GENERATORS: Registry[Callable[..., Generator]] = Registry(
    "generator",
    "generators",
    {
        "random_claims": "backtest.generators.random_claims:RandomClaims",
        "citation_leaders": "backtest.generators.citation_leaders:CitationLeaders",
        "review_future_work": "backtest.generators.review_future_work:ReviewFutureWork",
        "direct_llm": "backtest.generators.direct_llm:DirectLLM",
        "evidence_graph": "backtest.generators.evidence_graph:EvidenceGraph",
    },
    makes=Generator,
)


def register_generator(name: str, target: str, replace: bool = False) -> None:
    """Register ``target`` (``"package.module:Class"``) under ``name``."""
    GENERATORS.add(name, target, replace=replace)


def available_generators() -> list[str]:
    """Names of the registered generators, sorted."""
    return GENERATORS.names()


def get_generator(name: str, **options: Any) -> Generator:
    """Instantiate the generator registered as ``name`` with ``options`` (BadInput, one line, when what its
    factory makes is no :class:`Generator`)."""
    made: Generator = GENERATORS.make(name, **options)
    return made


# --------------------------------------------------------------------------- output


def resolve_generated_at(value: str | None, cutoff: dt.date) -> str:
    """The ``generated_at`` stamp for a run.

    * ``None`` (default): ``$SOURCE_DATE_EPOCH`` when set (the reproducible-builds
      convention), else the cutoff day ``YYYY-MM-DD`` — an *as-of* date. Generators
      are pure functions of the past corpus, seed and code, so reruns are
      byte-identical, and the stamp is never after "now" for any instance whose
      cutoff has passed. ``metadata.json`` says so in ``generated_at_meaning``.
    * ``"now"``: the wall-clock UTC time (truthful to the second, not reproducible).
    * an ISO date or datetime: used as given (it must not lie in the future).
    """
    now = dt.datetime.now(dt.timezone.utc)
    if value is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        if epoch:
            try:
                stamp = dt.datetime.fromtimestamp(int(epoch), tz=dt.timezone.utc)
            except ValueError:
                raise BadInput(f"SOURCE_DATE_EPOCH={epoch!r} is not an integer number of seconds") from None
            return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
        return min(cutoff, now.date()).isoformat()
    if value == "now":
        return now.strftime("%Y-%m-%dT%H:%M:%SZ")
    from backtest.core.records import parse_timestamp

    try:
        stamp = parse_timestamp(value)
    except ValueError as exc:
        raise BadInput(f"--generated-at: {exc}") from None
    if stamp > now:
        raise BadInput(f"--generated-at {value} lies in the future")
    return value


def clean_question(text: str) -> str:
    """Collapse whitespace and make sure the question ends with exactly one '?'."""
    text = " ".join(text.split()).strip()
    text = text.rstrip(" .;:,!?")
    text = text.replace("?", "")
    return text + "?"


def build_submission(
    result: GenerationResult,
    ctx: GenerationContext,
    system_name: str,
    generated_at: str,
    generated_at_meaning: str = GENERATED_AT_MEANING,
) -> tuple[list[Question], SubmissionMetadata]:
    """Number the drafts (``q_001``...), stamp the shared fields, and validate both records."""
    questions = []
    for rank, draft in enumerate(result.drafts[: ctx.n], start=1):
        missing = [i for i in draft.source_evidence_ids if i not in ctx.past]
        if missing:  # a generator bug, never the user's: refuse loudly
            raise BadInput(f"{system_name}: draft {rank} cites {missing[0]!r}, which is not in the past corpus")
        data: dict[str, Any] = {
            "question_id": f"q_{rank:03d}",
            "question": clean_question(draft.question),
            "domain": ctx.domain,
            "cutoff_date": ctx.cutoff.isoformat(),
            "generated_at": generated_at,
            "generation_system": system_name,
            "source_evidence_ids": list(dict.fromkeys(draft.source_evidence_ids)),
            "rank": rank,
            "frozen": True,  # the submission format: true means "this is the set to freeze"
        }
        for key in ("objects", "signal_type", "premise", "sub_questions"):
            value = getattr(draft, key)
            if value:
                data[key] = value
        data.update(draft.extra)
        if draft.tension is not None:
            data["tension"] = draft.tension.model_dump(exclude_none=True)
        questions.append(Question.model_validate(data))
    metadata = SubmissionMetadata.model_validate(
        {
            "system_name": system_name,
            "description": result.description,
            "repository": "backtest (this repository), backtest/generators",
            "cutoff_date": ctx.cutoff.isoformat(),
            "domain": ctx.domain,
            "n_questions": len(questions),
            "frozen": True,
            "llm_components": result.llm_components or None,
            "instance_id": ctx.instance.instance_id,
            "instance_seal": ctx.instance.seal,
            "seed": ctx.seed,
            "generated_at_meaning": generated_at_meaning,
            "generator_options": {k: v for k, v in sorted(ctx.options.items()) if v is not None and k != "explain"},
            "generator_notes": result.notes or None,
        }
    )
    return questions, metadata


def write_submission(out_dir: Path, questions: list[Question], metadata: SubmissionMetadata) -> Path:
    """Write ``questions.jsonl`` (canonical JSON lines) and ``metadata.json`` atomically."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "questions.jsonl", [q.model_dump(mode="json", exclude_none=True) for q in questions])
    write_json(out_dir / "metadata.json", metadata.model_dump(mode="json", exclude_none=True))
    return out_dir
