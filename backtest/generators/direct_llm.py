"""``direct_llm`` — bare prompting: an LLM asked for research questions about the domain and cutoff.

The model sees no corpus evidence: only the instance's short domain description
(``Instance.domain``) and its cutoff date, plus, per call, one subfield and one
"angle". The subfields are the *names* of the arXiv categories that make up at least
2% of the past corpus (a topic list, like the domain line: no titles, abstracts or
counts reach the model); the angles (observations, theory, instruments, methods,
tensions...) come from a fixed list. Every (subfield, angle) pair is asked once, in
a seeded order, before any pair is asked again, so that a small model does not
repeat one batch of generic questions. Calls go out in waves of the client's
concurrency, and answers are used in call order. The model answers a JSON schema
``{"questions": [string, ...]}``, sampled at temperature 0.8 with a seed per call
(derived from ``--seed`` and the call number, sent to the server), because at
temperature 0 a small model gives nearly the same five questions to every prompt
(Gemma 3 270M: 27 distinct questions in 41 calls). Answers are cached
(``.cache/generators/llm-generators.sqlite``) under a key that includes the seed, so a
rerun with the same endpoint, model and seed is byte-identical; against a fresh
cache, a server that honours ``seed`` (llama.cpp does) gives the same answers again.

Questions that are not one sentence ending in a single '?' are dropped, as are
near-duplicates (the freeze rule, :func:`.select.select_diverse`). Then
``source_evidence_ids`` are attached *after* generation by dense retrieval of the
``k`` nearest PAST papers (``backtest.text.embed`` MiniLM over title + abstract of the
past corpus, embedded once and cached under the corpus seal). The model, its role
and its stated training cutoff go into ``llm_components``. Without an endpoint the
generator is skipped with a one-line message (exit 2) and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from backtest.core.errors import CheckFailed
from backtest.generators.llm import clean_llm_question, component, llm_client, llm_settings
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult
from backtest.generators.select import select_diverse

# Names of the arXiv categories the reference instances are built from (arxiv.org/category_taxonomy).
CATEGORY_NAMES = {
    "astro-ph.CO": "cosmology and nongalactic astrophysics",
    "astro-ph.EP": "earth and planetary astrophysics (exoplanets)",
    "astro-ph.GA": "astrophysics of galaxies",
    "astro-ph.HE": "high energy astrophysical phenomena",
    "astro-ph.IM": "instrumentation and methods for astrophysics",
    "astro-ph.SR": "solar and stellar astrophysics",
    "physics.space-ph": "space physics",
    "physics.ao-ph": "atmospheric and oceanic physics",
    "physics.geo-ph": "geophysics",
    "physics.plasm-ph": "plasma physics",
    "physics.flu-dyn": "fluid dynamics",
    "gr-qc": "general relativity and quantum cosmology",
    "hep-ph": "high energy physics phenomenology",
    "hep-ex": "high energy physics experiment",
    "nucl-th": "nuclear theory",
}
MIN_TOPIC_SHARE = 0.02
ANGLES = (
    "open observational questions",
    "theoretical and modelling questions",
    "questions about instruments and data quality",
    "questions about analysis methods and statistics",
    "apparent tensions between published results",
    "questions about specific named objects or systems",
    "questions that upcoming facilities or datasets could settle",
    "questions about physical mechanisms and their relative importance",
)
PER_CALL = 5
TEMPERATURE = 0.8
EVIDENCE_K = 3
MAX_EVIDENCE_CHARS = 1200
SCHEMA = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": PER_CALL}},
    "required": ["questions"],
    "additionalProperties": False,
}
SYSTEM = (
    "You are an expert researcher. You propose specific, falsifiable, open research questions. Answer with JSON only."
)
PROMPT = (
    "Research domain: {domain}.\n"
    "Today is {cutoff}; you know only what was published on or before this date.\n"
    "Subfield: {topic}.\n"
    "Propose {k} distinct open research questions in this subfield, focusing on {angle}. "
    "Each question is one sentence that ends with a single question mark, names concrete objects, quantities or "
    "methods where possible, and could be settled by work published after {cutoff}.\n"
    'Return {{"questions": [...]}}.'
)


def past_embeddings(ctx: GenerationContext) -> tuple[list[str], np.ndarray]:
    """(ids, unit vectors) of the past corpus (title + abstract), cached under the corpus seal."""
    from backtest.text.embed import DEFAULT_MODEL, cached_embeddings, model_fingerprint

    records = sorted(ctx.past.records(), key=lambda r: r.id)
    texts = [(r.title + ". " + r.abstract)[:MAX_EVIDENCE_CHARS] for r in records]
    fingerprint = model_fingerprint(DEFAULT_MODEL).replace(":", "-")
    cache_dir = Path(ctx.cache_dir or ctx.past.ws.cache / "generators")
    cache = cache_dir / f"past-{ctx.past.seal[:24]}-{fingerprint}-{MAX_EVIDENCE_CHARS}.npy"
    return [r.id for r in records], cached_embeddings(texts, cache)


def nearest_past(questions: list[str], ctx: GenerationContext, k: int = EVIDENCE_K) -> list[list[str]]:
    """For each question, the ids of the ``k`` nearest past papers (cosine, ties by id)."""
    from backtest.text.embed import embed_texts

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


def topic_names(past) -> list[str]:
    """Names of the arXiv categories holding at least 2% of the past corpus's primary categories, most common first."""
    from collections import Counter

    counts = Counter(r.categories[0] for r in past.iter_records() if r.categories)
    total = sum(counts.values())
    kept = sorted((c for c, k in counts.items() if k >= MIN_TOPIC_SHARE * total), key=lambda c: (-counts[c], c))
    return [CATEGORY_NAMES.get(c, c) for c in kept]


def prompt_plan(topics: list[str], seed: int) -> list[tuple[str | None, str]]:
    """Every (topic, angle) pair once, in a seeded order (topic None when the corpus names none)."""
    import random

    names: list[str | None] = list(topics) if topics else [None]
    pairs = [(t, a) for t in names for a in ANGLES]
    random.Random(seed).shuffle(pairs)
    return pairs


def prompt_messages(ctx: GenerationContext, plan: list[tuple[str | None, str]], call: int) -> list[dict[str, str]]:
    """The chat messages of call number ``call`` (0-based): its plan pair, and the round once the plan repeats."""
    topic, angle = plan[call % len(plan)]
    prompt = PROMPT.format(
        domain=ctx.domain, cutoff=ctx.cutoff.isoformat(), k=PER_CALL, angle=angle, topic=topic or ctx.domain
    )
    round_ = call // len(plan)
    if round_:
        prompt += f"\nThis is request {round_ + 1} on this focus: avoid the most obvious questions."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]


class DirectLLM:
    """Questions from a bare prompt (domain + cutoff); evidence attached afterwards by retrieval."""

    name = "direct_llm"
    version = "3"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Prompt in waves until ``ctx.n`` clean, distinct questions (or the call budget is spent)."""
        from backtest.llm.client import ChatRequest, LLMError

        settings = llm_settings(
            ctx.options,
            self.name,
            max_tokens=int(ctx.options.get("llm_max_tokens", 512)),
            seed=ctx.seed,
            temperature=TEMPERATURE,
        )
        client = llm_client(settings, ctx.cache_dir)
        plan = prompt_plan(topic_names(ctx.past), ctx.seed)
        seen: dict[str, str] = {}  # lower-cased question -> its first spelling, in call order
        max_calls = max(3, 3 * -(-ctx.n // PER_CALL))
        calls = 0
        try:
            while len(seen) < ctx.n + ctx.n // 4 and calls < max_calls:
                wave = [
                    ChatRequest(
                        messages=tuple(prompt_messages(ctx, plan, i)),
                        schema=SCHEMA,
                        schema_name="questions",
                        seed=ctx.seed * 100_003 + i,
                    )
                    for i in range(calls, min(max_calls, calls + settings.concurrency))
                ]
                calls += len(wave)
                for answer in client.chat_many(wave):
                    if isinstance(answer, LLMError):  # one bad batch must not sink the run
                        continue
                    for text in (answer.parsed or {}).get("questions", []):
                        cleaned = clean_llm_question(text)
                        if cleaned:
                            seen.setdefault(cleaned.lower(), cleaned)  # the first spelling of a question wins
        finally:
            client.close()
        questions = list(seen.values())
        drafts = [Draft(question=q, source_evidence_ids=["pending"], signal_type="direct_prompt") for q in questions]
        chosen = select_diverse(drafts, ctx.n, embedding=True, cache_dir=ctx.cache_dir)
        if not chosen:
            raise CheckFailed(
                f"{self.name}: {settings.model} gave no usable question in {calls} call(s) "
                "(each must be one sentence ending in a single '?')"
            )
        for draft, evidence in zip(chosen, nearest_past([d.question for d in chosen], ctx)):
            draft.source_evidence_ids = evidence
        return GenerationResult(
            drafts=chosen,
            description=(
                f"Bare prompting: the LLM {settings.model} was asked for open research questions given only the "
                "domain, the cutoff and the names of the past corpus's main arXiv categories (no corpus evidence); "
                f"the {EVIDENCE_K} nearest past papers (dense MiniLM retrieval over the past corpus) were attached "
                "as evidence afterwards."
            ),
            llm_components=[component(settings, ctx.options, "question generation")],
            generated_at_meaning=(
                "as-of date: the cutoff day, the date the model was asked to answer as of; the model's "
                "own training cutoff is declared in llm_components. Answers are cached, so reruns "
                "against the same endpoint and model are byte-identical."
            ),
            # The client's cache hits and token counts stay out: they differ between a cold and a warm cache, and a
            # rerun's metadata.json must be byte-identical for its frozen set to be reused.
            notes={"llm_calls": calls, "distinct_questions": len(questions)},
        )
