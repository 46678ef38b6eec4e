"""Constraints applied to every judge's answer before it becomes a Judgment.

The rules (DESIGN.md, "Conservatism" and "Isolation"):

1. **A judge may cite only what it was shown.** Cited ids outside the documents
   shown are a violation; the judge is asked once more with the error message
   (:func:`retry_message`); if it persists the foreign ids are dropped and the
   judgment is flagged ``needs_review``. A document cited twice is handled the same
   way: asked again once, then kept once (its first citation) and flagged.
2. **Engaged outcomes need evidence.** ``answered``, ``partially_addressed`` and
   ``posed_but_open`` need at least one valid citation. Without one the label cannot
   stand: it is counted as ``not_addressed``, the judge's own label is kept in
   ``raw_answer`` and the judgment is flagged.
3. **``not_addressed`` carries no citations.** Citations on it are dropped and flagged.
4. **Unknown labels are flagged, never mapped.** An outcome or premise status outside
   the label set stays exactly as the judge wrote it and is flagged ``needs_review``.

Nothing here is silent: every change leaves a ``needs_review`` reason and the
unchanged answer in ``raw_answer``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from pydantic import ValidationError

from backtest.core.records import ENGAGED_OUTCOMES, OUTCOMES, PREMISE_STATUSES, EvidenceItem, JudgeInfo, Judgment
from backtest.judge.protocol import JudgeAnswer


def parse_answer(answer: dict[str, Any] | JudgeAnswer) -> JudgeAnswer:
    """Validate a raw answer's shape (labels are free strings here); raise ValueError if malformed."""
    if isinstance(answer, JudgeAnswer):
        return answer
    try:
        return JudgeAnswer.model_validate(answer)
    except ValidationError as exc:
        raise ValueError(
            f"answer does not match the judge schema: {exc.errors()[0].get('msg', 'invalid')} at "
            f"{'.'.join(str(p) for p in exc.errors()[0].get('loc', ())) or 'answer'}"
        ) from None


def check_answer(answer: dict[str, Any] | JudgeAnswer, shown_ids: Iterable[str]) -> list[str]:
    """Every constraint the answer breaks, as one line each (empty when it is clean)."""
    ans = parse_answer(answer)
    shown = set(shown_ids)
    problems = []
    if ans.outcome not in OUTCOMES:
        problems.append(f"unknown outcome label {ans.outcome!r} (allowed: {', '.join(OUTCOMES)})")
    if ans.premise_status not in PREMISE_STATUSES:
        problems.append(f"unknown premise_status label {ans.premise_status!r} (allowed: {', '.join(PREMISE_STATUSES)})")
    cited = [e.id for e in ans.evidence]
    foreign = [i for i in dict.fromkeys(cited) if i not in shown]
    if foreign:
        problems.append(f"cited ids not among the documents shown: {', '.join(foreign)}")
    repeated = [i for i, n in Counter(cited).items() if n > 1]
    if repeated:
        problems.append(f"cited more than once (cite each document once): {', '.join(repeated)}")
    valid = [i for i in cited if i in shown]
    if ans.outcome in ENGAGED_OUTCOMES and not valid:
        problems.append(f"outcome {ans.outcome!r} needs at least one cited document from those shown")
    if ans.outcome == "not_addressed" and cited:
        problems.append("outcome 'not_addressed' must cite no documents")
    return problems


def stored_problems(judgment: Judgment, shown_ids: Iterable[str]) -> list[str]:
    """The rules a judgment read back from a run breaks, against the documents its retrieval holds: what
    :func:`to_judgment` never writes (a citation of no retrieved document or twice, an engaged outcome without
    one, citations on ``not_addressed``, ``supporting_ids`` other than the cited ids). An unknown label is a
    problem only when it is not flagged as :func:`to_judgment` flags it."""
    if judgment.provenance != "judge":
        return []
    answer = JudgeAnswer(
        outcome=judgment.outcome,
        premise_status=judgment.premise_status,
        evidence=[e.model_dump() for e in judgment.evidence],
        rationale=judgment.rationale,
    )
    problems = [
        p
        for p in check_answer(answer, shown_ids)
        if not (p.startswith("unknown ") and f"constraint: {p}" in judgment.needs_review)
    ]
    if judgment.supporting_ids != [e.id for e in judgment.evidence]:
        problems.append("supporting_ids are not the cited ids")
    return problems


def retry_message(problems: list[str], shown_ids: Iterable[str]) -> str:
    """The message sent back to an LLM judge when its answer broke a constraint."""
    lines = ["Your answer broke these rules:"] + [f"- {p}" for p in problems]
    lines.append(f"Cite only these document ids: {', '.join(shown_ids) or '(none)'}.")
    lines.append("Answer again with the corrected JSON object only.")
    return "\n".join(lines)


def to_judgment(
    question_id: str,
    answer: dict[str, Any] | JudgeAnswer,
    shown_ids: Iterable[str],
    info: JudgeInfo,
    tokens: dict[str, int] | None = None,
    extra_reasons: Iterable[str] = (),
    extra_fields: dict[str, Any] | None = None,
) -> Judgment:
    """Apply the constraints and build the Judgment; violations become ``needs_review`` reasons.

    ``extra_fields`` are kept on the Judgment as they are (e.g. ``constraint_retry``).
    """
    shown_list = list(shown_ids)
    shown = set(shown_list)
    ans = parse_answer(answer)
    problems = check_answer(ans, shown_list)
    reasons = list(extra_reasons) + [f"constraint: {p}" for p in problems]
    evidence: list[EvidenceItem] = []
    seen: set[str] = set()
    for item in ans.evidence:
        if item.id in shown and item.id not in seen:
            seen.add(item.id)
            evidence.append(EvidenceItem(id=item.id, relevance=item.relevance))
    outcome = ans.outcome
    if outcome in ENGAGED_OUTCOMES and not evidence:
        outcome = "not_addressed"
        reasons.append(f"counted as not_addressed: the judge said {ans.outcome!r} without a valid citation")
    if outcome == "not_addressed" and evidence:
        evidence = []
        reasons.append("citations dropped: not_addressed carries none")
    extra: dict[str, Any] = dict(extra_fields or {})
    changed = outcome != ans.outcome or [e.id for e in evidence] != [e.id for e in ans.evidence]
    if changed or problems:
        extra["raw_answer"] = ans.model_dump(mode="json")
    return Judgment(
        question_id=question_id,
        outcome=outcome,
        premise_status=ans.premise_status,
        evidence=evidence,
        supporting_ids=[e.id for e in evidence],
        rationale=ans.rationale,
        judge=info,
        provenance="judge",
        needs_review=reasons,
        tokens=dict(tokens or {}),
        **extra,
    )


def failed_judgment(question_id: str, info: JudgeInfo, reason: str, tokens: dict[str, int] | None = None) -> Judgment:
    """A judgment for a question the judge gave no usable answer to: counted as not_addressed, flagged."""
    return Judgment(
        question_id=question_id,
        outcome="not_addressed",
        premise_status="not_applicable",
        evidence=[],
        supporting_ids=[],
        rationale="",
        judge=info,
        provenance="judge",
        needs_review=[f"judge_failed: {reason}", "counted as not_addressed: no usable answer from the judge"],
        tokens=dict(tokens or {}),
        judge_failed=True,
    )
