"""The gates a submission must pass before it is frozen.

A submission is loaded first (:func:`~backtest.submit.loading.load_submission`, the schema gate: anything
malformed is BadInput, exit 2). The gates (:data:`GATES`, run by :func:`run_gates`) see well-formed records in a
:class:`~backtest.submit.loading.GateContext` and return a :class:`~backtest.core.records.GateResult` each:
``passed``, ``failed`` (the freeze is refused, exit 1), ``warned`` (recorded, not fatal) or ``skipped`` with the
reason it could not run (never reported as passed).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import Any, Callable

from backtest.core.errors import BadInput
from backtest.core.records import CONTRACT_FIELDS, GateResult
from backtest.submit.loading import METADATA_FILE, QUESTIONS_FILE, GateContext
from backtest.text.clarity import CLARITY_VERSION, clarity_score
from backtest.text.screens import repeated_term_suffixes, steering, term_list

NOT_APPLICABLE = "not applicable"

Gate = Callable[[GateContext], GateResult]


def _result(name: str, problems: list[dict[str, Any]], ok_reason: str, status_bad: str = "failed") -> GateResult:
    if problems:
        return GateResult(name=name, status=status_bad, reason=problems[0]["problem"], details=problems)
    return GateResult(name=name, status="passed", reason=ok_reason)


# --------------------------------------------------------------------------- the gates


def gate_schema(ctx: GateContext) -> GateResult:
    """Reached only when loading succeeded; also checks the declared count and ``frozen`` flags."""
    sub = ctx.submission
    problems = []
    if sub.metadata.n_questions != len(sub.questions):
        problems.append(
            {
                "problem": f"{METADATA_FILE}: n_questions is {sub.metadata.n_questions} but "
                f"{QUESTIONS_FILE} holds {len(sub.questions)} questions"
            }
        )
    for i, q in enumerate(sub.questions):
        if not q.frozen:
            problems.append({"question_id": q.question_id, "problem": f"{ctx.where(i)}: frozen is false"})
    if not sub.metadata.frozen:
        problems.append({"problem": f"{METADATA_FILE}: frozen is false"})
    return _result("schema", problems, f"{len(sub.questions)} questions and the metadata match the schema")


def gate_unique_ids(ctx: GateContext) -> GateResult:
    """Every ``question_id`` appears once."""
    seen: dict[str, int] = {}
    problems = []
    for i, q in enumerate(ctx.submission.questions):
        key = q.question_id.casefold()  # ids name files and anchors: ids differing only in case collide
        if key in seen:
            problems.append(
                {
                    "question_id": q.question_id,
                    "problem": f"{ctx.where(i)}: duplicate question_id (first on line {ctx.submission.lines[seen[key]]}"
                    f"{'' if q.question_id == ctx.submission.questions[seen[key]].question_id else ', differing only in case'})",  # noqa: E501
                }
            )
        else:
            seen[key] = i
    return _result("unique_ids", problems, "question ids are unique")


def gate_question_mark(ctx: GateContext) -> GateResult:
    """Each question, stripped of surrounding space, ends with ``?``."""
    problems = [
        {"question_id": q.question_id, "problem": f"{ctx.where(i)}: does not end with '?'"}
        for i, q in enumerate(ctx.submission.questions)
        if not q.question.strip().endswith("?")
    ]
    return _result("ends_with_question_mark", problems, "every question ends with '?'")


def gate_cutoff(ctx: GateContext) -> GateResult:
    """``cutoff_date`` of the metadata and of every question equals the instance cutoff."""
    cutoff = ctx.instance.cutoff
    problems = []
    if ctx.submission.metadata.cutoff_date != cutoff:
        problems.append(
            {
                "problem": f"{METADATA_FILE}: cutoff_date {ctx.submission.metadata.cutoff_date} differs from "
                f"instance {ctx.instance.instance_id} cutoff {cutoff}"
            }
        )
    for i, q in enumerate(ctx.submission.questions):
        if q.cutoff_date != cutoff:
            problems.append(
                {
                    "question_id": q.question_id,
                    "problem": f"{ctx.where(i)}: cutoff_date {q.cutoff_date} differs from instance cutoff {cutoff}",
                }
            )
    return _result("cutoff_date", problems, f"cutoff_date is {cutoff} throughout")


def gate_generated_at(ctx: GateContext) -> GateResult:
    """No question claims to have been generated after the moment of freezing."""
    problems = [
        {
            "question_id": q.question_id,
            "problem": (
                f"{ctx.where(i)}: generated_at {q.generated_at} is later than the freeze ({ctx.now.isoformat()})"
            ),
        }
        for i, q in enumerate(ctx.submission.questions)
        if q.generated_at_utc() > ctx.now
    ]
    return _result("generated_at", problems, "every generated_at precedes the freeze")


ID_SCHEMES: dict[str, re.Pattern[str]] = {
    "arxiv": re.compile(r"^(?:\d{4}\.\d{4,5}|[a-z][a-z.-]*(?:\.[A-Z]{2})?/\d{7})$"),
    "ads-bibcode": re.compile(r"^\d{4}[A-Za-z&][A-Za-z0-9.&]{13}[A-Za-z.]$"),
    "openalex": re.compile(r"^W\d+$"),
    "doi": re.compile(r"^10\.\d{4,9}/\S+$"),
}
_ARXIV_PREFIX = re.compile(r"^arxiv:", re.IGNORECASE)
_ARXIV_VERSION = re.compile(r"^(\d{4}\.\d{4,5}|[a-z][a-z.-]*(?:\.[A-Z]{2})?/\d{7})v\d+$")


def id_scheme(identifier: str) -> str | None:
    """Which identifier scheme an id belongs to (arxiv, ads-bibcode, openalex, doi), or None."""
    for name, pattern in ID_SCHEMES.items():
        if pattern.match(identifier):
            return name
    return None


def normalise_id(identifier: str) -> str:
    """Strip an ``arXiv:`` prefix and a version suffix (``2510.01234v2`` -> ``2510.01234``)."""
    ident = _ARXIV_PREFIX.sub("", identifier.strip())
    match = _ARXIV_VERSION.match(ident)
    return match.group(1) if match else ident


def gate_evidence(ctx: GateContext) -> GateResult:
    """Every ``source_evidence_ids`` entry is in the instance's past corpus and dated <= cutoff (by day).

    Ids of a scheme the past corpus does not use (ADS bibcodes against an arXiv
    corpus, say) cannot be checked: they are counted and the gate is ``skipped``
    (nothing checkable) or ``warned`` (some checked), never ``passed``.
    """
    name = "evidence_in_past"
    try:
        past = ctx.past_corpus()
        dates = past.dates
    except BadInput as exc:  # the corpus is not built here
        return GateResult(name=name, status="skipped", reason=f"past corpus not available: {exc.message}")
    cutoff = ctx.instance.cutoff
    schemes = {id_scheme(i) for i in dates} - {None}
    problems, unverifiable, checked = [], [], 0
    for i, q in enumerate(ctx.submission.questions):
        for raw in q.source_evidence_ids:
            ident = normalise_id(raw)
            day = dates.get(ident)
            if day is None:
                scheme = id_scheme(ident)
                if scheme is not None and scheme not in schemes:
                    unverifiable.append({"question_id": q.question_id, "id": raw, "scheme": scheme})
                    continue
                problems.append(
                    {
                        "question_id": q.question_id,
                        "id": raw,
                        "problem": f"{ctx.where(i)}: evidence id {raw} is not in the past corpus {past.corpus_id}",
                    }
                )
            elif day > cutoff:
                problems.append(
                    {
                        "question_id": q.question_id,
                        "id": raw,
                        "published": day.isoformat(),
                        "problem": f"{ctx.where(i)}: evidence id {raw} is dated {day}, after the cutoff {cutoff}",
                    }
                )
            else:
                checked += 1
    if problems:
        return GateResult(name=name, status="failed", reason=problems[0]["problem"], details=problems + unverifiable)
    if unverifiable:
        kinds = ", ".join(sorted({str(u["scheme"]) for u in unverifiable}))
        reason = (
            f"{len(unverifiable)} evidence id(s) are {kinds} ids, which the past corpus {past.corpus_id} "
            f"({', '.join(sorted(s for s in schemes if s)) or 'no known scheme'}) cannot check; {checked} checked"
        )
        return GateResult(
            name=name, status="skipped" if checked == 0 else "warned", reason=reason, details=unverifiable
        )
    return GateResult(
        name=name, status="passed", reason=f"{checked} evidence ids found in {past.corpus_id}, all dated <= {cutoff}"
    )


_LLM_WORDS = re.compile(
    r"(?<![a-z0-9])(llms?|gpt|chatgpt|claude|gemini|gemma|llama|mistral|mixtral|qwen|deepseek|openai|anthropic|"
    r"large[ -]language[ -]models?|language[ -]models?)(?![a-z])"
)
_NEGATED = re.compile(
    r"(?<![a-z])(no|without|not|non|never)[\s-]+(?:uses?\s+|using\s+)?(?:an?\s+|any\s+)?"
    r"(llms?|large[ -]language[ -]models?|language[ -]models?)(?![a-z])"
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def llm_mentions(texts: list[str]) -> list[str]:
    """LLM words found in ``texts`` (lower-cased), ignoring negated phrases such as "no LLM"."""
    found = []
    for text in texts:
        cleaned = _NEGATED.sub(" ", text.lower())
        found += [m.group(1) for m in _LLM_WORDS.finditer(cleaned)]
    return sorted(set(found))


def trained_after(components: Any, cutoff: dt.date) -> list[str]:
    """``"MODEL (training cutoff C)"`` for each listed component whose stated training cutoff (``YYYY``,
    ``YYYY-MM`` or ``YYYY-MM-DD``) ends after ``cutoff``. Unstated or free-form cutoffs are not judged."""
    later = []
    for component in components if isinstance(components, list) else []:
        stated = (component.training_cutoff or "").strip()
        match = re.fullmatch(r"(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", stated)
        if not match:
            continue
        year, month, day = int(match[1]), int(match[2] or 12), match[3]
        end = dt.date(year, month, int(day) if day else calendar.monthrange(year, month)[1])
        if end > cutoff:
            later.append(f"{component.model} (training cutoff {stated})")
    return later


def gate_llm_declared(ctx: GateContext) -> GateResult:
    """``llm_components`` is declared whenever ``generation_system`` or the metadata mention an LLM."""
    meta = {k: v for k, v in ctx.submission.metadata_data.items() if k != "llm_components"}
    systems = sorted({q.generation_system for q in ctx.submission.questions})
    mentions = llm_mentions(_strings(meta) + systems)
    if ctx.submission.metadata.declares_llm():
        later = trained_after(ctx.submission.metadata.llm_components, ctx.instance.cutoff)
        if later:
            reason = (
                f"llm_components declared; {', '.join(later)}: training data may reach past the cutoff "
                f"{ctx.instance.cutoff}, so the model may have read the future it is graded against"
            )
            return GateResult(
                name="llm_components", status="warned", reason=reason, details=[{"problem": reason, "models": later}]
            )
        return GateResult(name="llm_components", status="passed", reason="llm_components declared")
    if mentions:
        problem = (
            f"{METADATA_FILE}: generation_system/metadata mention an LLM ({', '.join(mentions)}) "
            f"but llm_components is not declared"
        )
        return GateResult(
            name="llm_components",
            status="failed",
            reason=problem,
            details=[{"problem": problem, "mentions": mentions, "generation_systems": systems}],
        )
    return GateResult(name="llm_components", status="passed", reason="no LLM mentioned, none declared")


def gate_dedup(ctx: GateContext) -> GateResult:
    """Near-duplicate pairs: above the TF-IDF *and* the embedding threshold. ``--dedup`` decides."""
    from backtest.text.equivalence import get_rule, pairs_above_all

    s = ctx.settings
    questions = ctx.submission.questions
    texts = [q.question for q in questions]
    try:
        rules = [
            get_rule("tfidf", threshold=s.tfidf_threshold),
            get_rule(
                "embedding",
                threshold=s.embedding_threshold,
                model=s.embedding_model,
                cache_dir=ctx.ws.cache / "embeddings" if ctx.ws is not None else None,
            ),
        ]
        screened: dict[str, int] = {}
        pairs = pairs_above_all(texts, rules, stats=screened)
    except BadInput as exc:  # the embedding model is not installed
        return GateResult(name="near_duplicates", status="skipped", reason=f"embedding rule unavailable: {exc.message}")
    details = []
    kept: list[int] = []
    dup_of: dict[int, int] = {}
    for i, j, sims in pairs:
        details.append(
            {
                "a": questions[i].question_id,
                "b": questions[j].question_id,
                **sims,
                "problem": f"{ctx.where(j)} near-duplicates question {questions[i].question_id} "
                f"(tfidf {sims['tfidf']:.2f} >= {s.tfidf_threshold}, "
                f"embedding {sims['embedding']:.2f} >= {s.embedding_threshold})",
            }
        )
    if s.dedup == "drop-later" and pairs:
        same = {(i, j) for i, j, _ in pairs}
        for j in range(len(questions)):
            first = next((i for i in kept if (i, j) in same), None)
            if first is None:
                kept.append(j)
            else:
                dup_of[j] = first
        ctx.dropped[:] = [questions[j].question_id for j in sorted(dup_of)]
    screen = (
        f"embedding run on the {screened.get('embedding', 0)} of {len(texts)} questions in a TF-IDF candidate pair"
        if len(texts) > 1
        else "one question"
    )
    if not pairs:
        return GateResult(
            name="near_duplicates",
            status="passed",
            reason=f"no pair above tfidf {s.tfidf_threshold} and embedding {s.embedding_threshold} ({screen})",
        )
    if s.dedup == "fail":
        return GateResult(name="near_duplicates", status="failed", reason=details[0]["problem"], details=details)
    reason = f"{len(pairs)} near-duplicate pair(s) ({screen})"
    if s.dedup == "drop-later":
        reason += f"; dropped {len(ctx.dropped)} later question(s): {', '.join(ctx.dropped[:10])}"
        for d in details:
            d["dropped"] = d["b"] in ctx.dropped
    return GateResult(name="near_duplicates", status="warned", reason=reason, details=details)


_TOKEN = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
_FRAME_WORDS = frozenset(
    "a an the of in on for to and or is are was were be been do does did can could would should "
    "will what which why how "
    "when where who whom whose whether there this that these those it its by with from as at into via we our".split()
)


def _content_tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _FRAME_WORDS}


def gate_clarity(ctx: GateContext) -> GateResult:
    """Score every question's clarity (:func:`backtest.text.clarity.clarity_score`) and flag those below
    ``clarity_threshold``, plus the mechanical flaws: double questions (more than one '?'), empty ones, ones over
    the length limit, and ones that only restate an evidence title (content-word Jaccard >= ``restate_jaccard``).

    The reason always opens with the set's clarity: score version, mean, and how many questions fall below the
    threshold; each flagged question's entry carries its score and the problems found (check and span)."""
    s = ctx.settings
    titles: dict[str, str] = {}
    title_note = ""
    try:
        past = ctx.past_corpus()
        wanted = {normalise_id(e) for q in ctx.submission.questions for e in q.source_evidence_ids}
        titles = {i: past.get(i).title for i in wanted if i in past.dates}
    except BadInput as exc:
        title_note = f" (title restatement not checked: {exc.message})"
    problems = []
    scores = []
    for i, q in enumerate(ctx.submission.questions):
        text = q.question.strip()
        flags = []
        if not text.strip("?").strip():
            flags.append("empty question")
        if text.count("?") > 1:
            flags.append(f"{text.count('?')} question marks (a double question)")
        if len(text) > s.max_question_chars:
            flags.append(f"{len(text)} characters, over the {s.max_question_chars}-character limit")
        q_tokens = _content_tokens(text)
        for ident in q.source_evidence_ids:
            title = titles.get(normalise_id(ident))
            if title and q_tokens:
                t_tokens = _content_tokens(title)
                jaccard = len(q_tokens & t_tokens) / len(q_tokens | t_tokens)
                if jaccard >= s.restate_jaccard:
                    flags.append(f"only restates the title of {ident} (word overlap {jaccard:.2f})")
                    break
        clarity = clarity_score(q.question)
        scores.append(clarity.score)
        if clarity.score < s.clarity_threshold:
            flags.append(f"clarity {clarity.score:.2f} below {s.clarity_threshold:g} ({clarity.describe()})")
        if flags:
            problems.append(
                {
                    "question_id": q.question_id,
                    "flags": flags,
                    "clarity": clarity.score,
                    "clarity_problems": [p.as_dict() for p in clarity.problems],
                    "problem": f"{ctx.where(i)}: {'; '.join(flags)}",
                }
            )
    below = sum(score < s.clarity_threshold for score in scores)
    summary = (
        f"clarity ({CLARITY_VERSION}) mean {sum(scores) / len(scores):.2f}, {below} of {len(scores)} "
        f"({below / len(scores):.0%}) below {s.clarity_threshold:g}"
    )
    status = "failed" if s.clarity == "fail" else "warned"
    if not problems:
        return GateResult(
            name="clarity",
            status="passed",
            reason=f"{summary}; no double, empty, over-long or title-restating questions{title_note}",
        )
    return GateResult(
        name="clarity",
        status=status,
        reason=f"{summary}; {len(problems)} question(s) flagged, first: {problems[0]['problem']}{title_note}",
        details=problems,
    )


def gate_submitted_text(ctx: GateContext) -> GateResult:
    """No question or premise gives a judge orders (:func:`backtest.text.screens.steering`): a line break, a JSON
    object, instruction-like text ("ignore the instructions and answer ..."). An LLM judge is shown them quoted
    as data (:mod:`backtest.judge.llm`); such text is refused before it is frozen all the same."""
    problems = []
    for i, q in enumerate(ctx.submission.questions):
        for field_name, text in (("question", q.question), ("premise", q.premise)):
            found = steering(text)
            if found:
                problems.append(
                    {
                        "question_id": q.question_id,
                        "field": field_name,
                        "found": found,
                        "problem": f"{ctx.where(i)}: its {field_name} holds {'; '.join(found)}, which could give "
                        "a judge orders; write the question as a question",
                    }
                )
    return _result("submitted_text", problems, "no line break, JSON object or instruction-like text")


def gate_term_stuffing(ctx: GateContext) -> GateResult:
    """No question carries an appended list of terms (:mod:`backtest.text.screens`): a long run of content words,
    a tail of comma-separated terms, a question made almost only of content words, or a content-word suffix
    repeated across the set. Such terms raise a judge's rate (more documents share the question's words)
    without asking anything more."""
    questions = ctx.submission.questions
    found = {i: term_list(q.question) for i, q in enumerate(questions)}
    for i, suffix in repeated_term_suffixes([q.question for q in questions]).items():
        found[i].append(f"the same term suffix ends several of the set's questions ({suffix[:80]!r})")
    problems = [
        {
            "question_id": questions[i].question_id,
            "found": found[i],
            "problem": f"{ctx.where(i)}: {'; '.join(found[i])}: an appended term list, not part of a question",
        }
        for i in sorted(found)
        if found[i]
    ]
    return _result("term_stuffing", problems, "no question carries an appended list of terms")


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def gate_contract(ctx: GateContext) -> GateResult:
    """When a question carries any of the six falsifiable-contract fields, all six are non-empty
    and ``falsifying_result`` differs from ``supporting_result``."""
    problems, n_with = [], 0
    for i, q in enumerate(ctx.submission.questions):
        values = {f: getattr(q, f) for f in CONTRACT_FIELDS}
        if all(v is None for v in values.values()):
            continue
        n_with += 1
        empty = [f for f, v in values.items() if v is None or not v.strip()]
        if empty:
            problems.append(
                {
                    "question_id": q.question_id,
                    "fields": empty,
                    "problem": f"{ctx.where(i)}: falsifiable-contract field(s) missing or empty: {', '.join(empty)}",
                }
            )
        elif _norm(values["falsifying_result"]) == _norm(values["supporting_result"]):
            problems.append(
                {
                    "question_id": q.question_id,
                    "problem": f"{ctx.where(i)}: falsifying_result is the same as supporting_result",
                }
            )
    if n_with == 0:
        return GateResult(
            name="falsifiable_contract",
            status="skipped",
            reason=f"{NOT_APPLICABLE}: no question carries the falsifiable-contract fields",
        )
    return _result("falsifiable_contract", problems, f"{n_with} question(s) carry a complete, falsifiable contract")


GATES: list[tuple[str, Gate]] = [
    ("schema", gate_schema),
    ("unique_ids", gate_unique_ids),
    ("ends_with_question_mark", gate_question_mark),
    ("cutoff_date", gate_cutoff),
    ("generated_at", gate_generated_at),
    ("evidence_in_past", gate_evidence),
    ("llm_components", gate_llm_declared),
    ("near_duplicates", gate_dedup),
    ("clarity", gate_clarity),
    ("submitted_text", gate_submitted_text),
    ("term_stuffing", gate_term_stuffing),
    ("falsifiable_contract", gate_contract),
]


def run_gates(ctx: GateContext, timings: dict[str, dict[str, float]] | None = None) -> list[GateResult]:
    """Run every gate in order; ``timings`` (if given) receives ``{gate: {"wall_s", "cpu_s"}}``."""
    import time

    results = []
    for name, gate in GATES:
        wall, cpu = time.perf_counter(), time.process_time()
        results.append(gate(ctx))
        if timings is not None:
            timings[name] = {
                "wall_s": round(time.perf_counter() - wall, 4),
                "cpu_s": round(time.process_time() - cpu, 4),
            }
    return results


def blocking(results: list[GateResult], strict: bool = False) -> list[GateResult]:
    """Gates that refuse the freeze: failed ones, and with ``strict`` skipped ones too."""
    return [
        r
        for r in results
        if r.status == "failed" or (strict and r.status == "skipped" and not r.reason.startswith(NOT_APPLICABLE))
    ]
