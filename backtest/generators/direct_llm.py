"""``direct_llm`` — bare prompting: an LLM asked for research questions about the domain and cutoff.

The model sees no corpus evidence: only the instance's short domain description
(``Instance.domain``) and its cutoff date, plus an "angle" per batch (observations,
theory, instruments, methods, tensions...) so that batches differ. It answers a
JSON schema ``{"questions": [string, ...]}`` at temperature 0; answers are cached
(``.cache/generators/llm-generators.sqlite``), so a rerun with the same endpoint,
model and seed is byte-identical.

Questions that are not one sentence ending in a single '?' are dropped, as are
near-duplicates (the freeze rule, :func:`.select.select_diverse`). Then
``source_evidence_ids`` are attached *after* generation by dense retrieval of the
``k`` nearest PAST papers (``backtest.embed`` MiniLM over title + abstract of the
past corpus, embedded once and cached under the corpus seal). The model, its role
and its stated training cutoff go into ``llm_components``. Without an endpoint the
generator is skipped with a one-line message (exit 2) and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import CheckFailed
from .llm import clean_llm_question, component, llm_client, llm_settings
from .protocol import Draft, GenerationContext, GenerationResult
from .select import select_diverse

ANGLES = (
    "open observational questions", "theoretical and modelling questions", "questions about instruments and data quality",
    "questions about analysis methods and statistics", "apparent tensions between published results",
    "questions about specific named objects or systems", "questions that upcoming facilities or datasets could settle",
    "questions about physical mechanisms and their relative importance",
)
PER_CALL = 10
EVIDENCE_K = 3
MAX_EVIDENCE_CHARS = 1200
SCHEMA = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": PER_CALL}},
    "required": ["questions"],
    "additionalProperties": False,
}
SYSTEM = ("You are an expert researcher. You propose specific, falsifiable, open research questions. "
          "Answer with JSON only.")
PROMPT = (
    "Research domain: {domain}.\n"
    "Today is {cutoff}; you know only what was published on or before this date.\n"
    "Propose {k} distinct open research questions in this domain, focusing on {angle}. "
    "Each question is one sentence that ends with a single question mark, names concrete objects, quantities or "
    "methods where possible, and could be settled by work published after {cutoff}.\n"
    'Return {{"questions": [...]}}.'
)


def past_embeddings(ctx: GenerationContext) -> tuple[list[str], np.ndarray]:
    """(ids, unit vectors) of the past corpus (title + abstract), cached under the corpus seal."""
    from ..embed import DEFAULT_MODEL, cached_embeddings, model_fingerprint

    records = sorted(ctx.past.records(), key=lambda r: r.id)
    texts = [(r.title + ". " + r.abstract)[:MAX_EVIDENCE_CHARS] for r in records]
    fingerprint = model_fingerprint(DEFAULT_MODEL).replace(":", "-")
    cache_dir = Path(ctx.cache_dir or ctx.past.ws.cache / "generators")
    cache = cache_dir / f"past-{ctx.past.seal[:24]}-{fingerprint}-{MAX_EVIDENCE_CHARS}.npy"
    return [r.id for r in records], cached_embeddings(texts, cache)


def nearest_past(questions: list[str], ctx: GenerationContext, k: int = EVIDENCE_K) -> list[list[str]]:
    """For each question, the ids of the ``k`` nearest past papers (cosine, ties by id)."""
    from ..embed import embed_texts

    ids, vectors = past_embeddings(ctx)
    if not ids:
        raise CheckFailed(f"past corpus {ctx.past.corpus_id} is empty: no evidence to attach")
    q = embed_texts(questions)
    sims = q @ vectors.T
    out = []
    for row in sims:
        order = sorted(range(len(ids)), key=lambda j: (-round(float(row[j]), 6), ids[j]))[:k]
        out.append([ids[j] for j in order])
    return out


class DirectLLM:
    """Questions from a bare prompt (domain + cutoff); evidence attached afterwards by retrieval."""

    name = "direct_llm"
    version = "1"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Prompt in batches until ``ctx.n`` clean, distinct questions (or the call budget is spent)."""
        settings = llm_settings(ctx.options, self.name, max_tokens=int(ctx.options.get("llm_max_tokens", 1024)),
                                seed=ctx.seed)
        client = llm_client(settings, ctx.cache_dir)
        seen: dict[str, None] = {}
        max_calls = max(3, 3 * -(-ctx.n // PER_CALL))
        calls = 0
        try:
            while len(seen) < ctx.n + ctx.n // 4 and calls < max_calls:
                angle = ANGLES[calls % len(ANGLES)]
                round_ = calls // len(ANGLES)
                prompt = PROMPT.format(domain=ctx.domain, cutoff=ctx.cutoff.isoformat(), k=PER_CALL, angle=angle)
                if round_:
                    prompt += f"\nThis is request {round_ + 1} on this focus: avoid the most obvious questions."
                messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
                calls += 1
                try:
                    answer = client.chat(messages, schema=SCHEMA, schema_name="questions")
                except Exception as exc:  # noqa: BLE001 - one bad batch must not sink the run
                    from ..llm_client import LLMError

                    if isinstance(exc, LLMError):
                        continue
                    raise
                for text in (answer.parsed or {}).get("questions", []):
                    cleaned = clean_llm_question(text)
                    if cleaned and cleaned.lower() not in {s.lower() for s in seen}:
                        seen[cleaned] = None
        finally:
            client.close()
        questions = list(seen)
        drafts = [Draft(question=q, source_evidence_ids=["pending"], signal_type="direct_prompt") for q in questions]
        chosen = select_diverse(drafts, ctx.n, embedding=True, cache_dir=ctx.cache_dir)
        if not chosen:
            raise CheckFailed(f"{self.name}: {settings.model} gave no usable question in {calls} call(s) "
                              "(each must be one sentence ending in a single '?')")
        if chosen:
            for draft, evidence in zip(chosen, nearest_past([d.question for d in chosen], ctx)):
                draft.source_evidence_ids = evidence
        return GenerationResult(
            drafts=chosen,
            description=(f"Bare prompting: the LLM {settings.model} was asked for open research questions about the "
                         f"domain and cutoff only (no corpus evidence); the {EVIDENCE_K} nearest past papers "
                         "(dense MiniLM retrieval over the past corpus) were attached as evidence afterwards."),
            llm_components=[component(settings, ctx.options, "question generation")],
            generated_at_meaning=("as-of date: the cutoff day, the date the model was asked to answer as of; the model's "
                                  "own training cutoff is declared in llm_components. Answers are cached, so reruns "
                                  "against the same endpoint and model are byte-identical."),
            notes={"llm_calls": calls, "distinct_questions": len(questions), "llm_stats": client.stats.as_dict()},
        )
