"""Question generators that read only an instance's past corpus.

Registered: ``random_claims`` (chance floor), ``citation_leaders`` (prominence),
``review_future_work`` (community-posed questions), ``direct_llm`` (bare prompting)
and ``evidence_graph`` (claims -> objects -> typed tensions -> ranked questions).
Generators receive a :class:`~backtest.corpus.store.PastCorpus` and nothing else;
no module here imports the future corpus or the retrievers.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, TypedDict

from backtest.core.workspace import Workspace
from backtest.generators.protocol import (
    GENERATED_AT_MEANING,
    Draft,
    GenerationContext,
    GenerationResult,
    Generator,
    available_generators,
    build_submission,
    get_generator,
    register_generator,
    resolve_generated_at,
    write_submission,
)

__all__ = [
    "Draft",
    "GenerationContext",
    "GenerationResult",
    "GeneratorSummary",
    "Generator",
    "available_generators",
    "get_generator",
    "register_generator",
    "REFERENCE_SYSTEMS",
    "run_generator",
    "run_system",
    "system_names",
]

# The reference systems, in the order tables list them. A system is a generator, or a generator run with fixed
# options (VARIANTS); the LLM ones (NEEDS_ENDPOINT) need an OpenAI-compatible endpoint in the options.
REFERENCE_SYSTEMS = (
    "random_claims",
    "citation_leaders",
    "review_future_work",
    "direct_llm",
    "evidence_graph",
    "evidence_graph_llm",
)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {"evidence_graph_llm": ("evidence_graph", {"verbalizer": "llm"})}
NEEDS_ENDPOINT = {"direct_llm", "evidence_graph_llm"}


class GeneratorSummary(TypedDict):
    """:func:`run_generator`'s summary of the submission it wrote (``backtest generate --json`` prints it)."""

    system_name: str
    n_questions: int
    out: str
    llm_components: list[dict[str, Any]] | None
    notes: dict[str, Any]
    cutoff: str


def lacks_endpoint(name: str, options: dict[str, Any]) -> bool:
    """True when system ``name`` needs an LLM endpoint and ``options`` name none (it cannot run)."""
    return name in NEEDS_ENDPOINT and not options.get("llm_base_url")


def system_names() -> list[str]:
    """Every name :func:`run_system` accepts: the installed generators and the variants."""
    return [*available_generators(), *VARIANTS]


def generation_context(
    instance_id: str, ws: Workspace, n: int = 125, seed: int = 0, options: dict[str, Any] | None = None
) -> GenerationContext:
    """What a generator reads: the instance, its past corpus (nothing later) and the run's settings."""
    from backtest.corpus.instance import load_instance, open_past_corpus

    instance = load_instance(instance_id, ws)
    past = open_past_corpus(instance, ws)
    return GenerationContext(
        instance=instance, past=past, n=n, seed=seed, options=dict(options or {}), cache_dir=ws.cache / "generators"
    )


def run_generator(
    name: str,
    instance_id: str,
    ws: Workspace,
    n: int = 125,
    seed: int = 0,
    out: Path | None = None,
    generated_at: str | None = None,
    options: dict[str, Any] | None = None,
) -> GeneratorSummary:
    """Load the instance, open its past corpus, run generator ``name`` and write the submission.

    Returns a summary: system name, number of questions, output folder, llm_components."""
    generator = get_generator(name)
    ctx = generation_context(instance_id, ws, n=n, seed=seed, options=options)
    instance = ctx.instance
    result = generator.generate(ctx)
    system_name = getattr(generator, "system_name", None) or name
    if callable(system_name):
        system_name = system_name(ctx)
    stamp = resolve_generated_at(generated_at, instance.cutoff)
    meaning = (
        (result.generated_at_meaning or GENERATED_AT_MEANING)
        if generated_at is None
        else (
            "wall-clock UTC time of the run" if generated_at == "now" else "a time given by the user (--generated-at)"
        )
    )
    questions, metadata = build_submission(result, ctx, system_name, stamp, meaning)
    out_dir = Path(out) if out else ws.root / "submissions" / instance.instance_id / system_name
    write_submission(out_dir, questions, metadata)
    return GeneratorSummary(
        system_name=system_name,
        n_questions=len(questions),
        out=str(out_dir),
        llm_components=result.llm_components,
        notes=result.notes,
        cutoff=dt.date.isoformat(instance.cutoff),
    )


def run_system(
    name: str,
    instance_id: str,
    ws: Workspace,
    n: int = 125,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    generated_at: str | None = None,
) -> GeneratorSummary:
    """:func:`run_generator` for a system name (a generator or a variant). Only an LLM system gets the endpoint
    options: they are recorded in metadata.json, and the freeze gate rightly refuses a set whose metadata names
    a model that llm_components does not declare."""
    generator, fixed = VARIANTS.get(name, (name, {}))
    endpoint = (options or {}) if name in NEEDS_ENDPOINT else {}
    given = {**endpoint, **fixed}  # a variant's own options always apply, LLM or not
    return run_generator(generator, instance_id, ws, n=n, seed=seed, generated_at=generated_at, options=given)
