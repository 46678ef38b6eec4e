"""``evidence_graph --verbalizer llm``: the same selected tensions, phrased by an LLM.

The structure (claims, objects, typed and ranked tensions, the selection) is the
template run's; only the wording changes. Each tension is sent with its type, subject,
topic and the two claim sentences; the model must return one neutral, falsifiable
question that names the subject. An unusable answer (not one '?'-terminated
sentence, or not naming the subject) keeps the template question, and the draft
records which wording it carries (``verbalizer``: ``llm`` or ``template``).
"""

from __future__ import annotations

from typing import Any

from backtest.generators.llm import clean_llm_question, component, llm_client, llm_settings
from backtest.generators.protocol import Draft, GenerationContext
from backtest.generators.tension_questions import record_of

SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
    "additionalProperties": False,
}
SYSTEM = (
    "You turn a documented tension between two papers into one neutral, falsifiable research question. "
    "Do not presume the answer, do not lead. Answer with JSON only."
)
PROMPT = (
    "Tension type: {kind}\nSubject: {subject}\nTopic: {topic}\n"
    "Earlier paper ({a_id}) says: {a}\nLater paper ({b_id}) says: {b}\n"
    "Write one question (one sentence, ending with a single '?') that names {subject} and could be settled by "
    'future observations or analyses. Return {{"question": "..."}}.'
)


def verbalize_with_llm(drafts: list[Draft], ctx: GenerationContext) -> tuple[list[Draft], list[dict[str, Any]]]:
    """Rephrase each draft's tension with the configured LLM; return the drafts and llm_components."""
    from backtest.llm.client import ChatRequest

    settings = llm_settings(ctx.options, "evidence_graph --verbalizer llm", max_tokens=200, seed=ctx.seed)
    client = llm_client(settings, ctx.cache_dir)
    requests_ = []
    for d in drafts:
        t = record_of(d)
        a, b = (d.premise or " / ").split(" / ", 1)
        prompt = PROMPT.format(
            kind=d.signal_type,
            subject=t.subject,
            topic=t.topic,
            a_id=d.source_evidence_ids[0],
            b_id=d.source_evidence_ids[-1],
            a=a.split(": ", 1)[-1],
            b=b.split(": ", 1)[-1],
        )
        requests_.append(
            ChatRequest(
                messages=({"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}),
                schema=SCHEMA,
                schema_name="question",
            )
        )
    try:
        answers = client.chat_many(requests_)
    finally:
        client.close()
    out = []
    for d, answer in zip(drafts, answers):
        t = record_of(d)
        parsed = getattr(answer, "parsed", None) or {}
        text = clean_llm_question(parsed.get("question"))
        if text and t.subject.lower() in text.lower():
            d.extra = {**d.extra, "template_question": d.question, "verbalizer": "llm"}
            d.question = text
        else:
            d.extra = {**d.extra, "verbalizer": "template"}
        out.append(d)
    return out, [component(settings, ctx.options, "verbalizer: phrases the detected tensions as questions")]
