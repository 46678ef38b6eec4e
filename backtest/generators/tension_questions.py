"""The words of ``evidence_graph``'s questions: one self-contained question and the six-field falsifiable contract
for each typed tension (templates; the LLM verbalizer of ``evidence_graph_llm`` rephrases them)."""

from __future__ import annotations

import random
from typing import Any

from backtest.generators.extract import claim_clause
from backtest.generators.protocol import Draft
from backtest.generators.tensions import PARAMETER_PHRASE, ClaimTension, Tension
from backtest.generators.wording import paper_subject

NUMERIC_TEMPLATES = (
    "Does an independent measurement of {np} agree with {va} or with {vb}, the two conflicting published values "
    "({gap})?",
    "Is {np} {va}, as one study reports, or {vb}, as a later study reports ({gap}), when it is measured again "
    "with independent data?",
    "Will an independent determination of {np} resolve the conflict between the published values {va} and {vb} "
    "({gap}) in favour of one of them?",
)
STANCE_TEMPLATES = (
    "Does a deeper, independent observation of {subject} detect {feature}, which an earlier study reports "
    "{first} in {subject} and a later one {second}?",
    "Is {feature} present in {subject}, given that one study reports it {first} and a later one {second}, "
    "when {subject} is observed again with independent, more sensitive data?",
    "Will an independent observation of {subject} sensitive to {feature} settle whether it is present, after one "
    "study reported it {first} and a later one {second}?",
)
TEMPLATES = {"numeric": NUMERIC_TEMPLATES, "stance": STANCE_TEMPLATES}


def noun_phrase(t: Tension) -> str:
    """The quantity of the subject: "the mass of GW231123", or "the Hubble constant" for a parameter."""
    if t.subject_kind == "parameter":
        return PARAMETER_PHRASE.get(t.topic, f"the {t.topic}")
    return f"the {t.topic} of {t.subject}"


def gap_phrase(t: Tension) -> str:
    """How far apart the two values are: "3.3 sigma apart", or "a factor of 2.4 apart" without uncertainties."""
    if t.sigma is not None:
        return f"{t.sigma:.1f} sigma apart"
    va, vb = (abs(float(f.value["value"])) if f.value else 1.0 for f in (t.a, t.b))
    return f"a factor of {max(va, vb) / min(va, vb):.1f} apart"


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def realise(t: Tension, rng: random.Random) -> str:
    """One self-contained question for tension ``t`` (template choice seeded): the subject, the quantity
    or feature, both findings in brief and the decisive test."""
    options = TEMPLATES[t.evidence]
    template = options[rng.randrange(len(options))]
    return template.format(
        np=noun_phrase(t),
        va=t.a.shown,
        vb=t.b.shown,
        gap=gap_phrase(t),
        feature=t.topic,
        subject=t.subject,
        first=t.a.shown,
        second=t.b.shown,
    )


def contract(t: Tension) -> dict[str, str]:
    """The six-field falsifiable contract of a tension (both findings named, the decisive test stated)."""
    ida, idb = t.ids
    if t.evidence == "numeric":
        np_ = noun_phrase(t)
        assert t.a.value is not None and t.b.value is not None
        gap = abs(t.a.value["value"] - t.b.value["value"])
        unit = f" {t.a.value['unit']}" if t.a.value["unit"] else ""
        return {
            "literature_gap": f"{ida} reports {np_} = {t.a.shown}; {idb} reports {t.b.shown}; the two values are "
            f"{gap_phrase(t)}, so at most one of them is right.",
            "hypothesis": f"{_upper(np_)} is consistent with the later value, {t.b.shown}.",
            "minimal_test": f"One new determination of {np_}, from data or a method independent of both studies, "
            f"with an uncertainty below {gap / 2:.3g}{unit}.",
            "decisive_metric": f"The distance, in units of its combined uncertainty, of the new value of {np_} "
            f"from {t.a.shown} and from {t.b.shown}.",
            "supporting_result": f"The new value lies within 2 sigma of {t.b.shown} and more than 2 sigma from "
            f"{t.a.shown}.",
            "falsifying_result": f"The new value lies within 2 sigma of {t.a.shown} and more than 2 sigma from "
            f"{t.b.shown}.",
        }
    return {
        "literature_gap": f"{ida} reports {t.topic} {t.a.shown} in {t.subject}; {idb} reports it {t.b.shown}.",
        "hypothesis": f"{_upper(t.topic)} is present in {t.subject}.",
        "minimal_test": f"An independent observation of {t.subject} at least as sensitive to {t.topic} as the "
        "study that did not detect it.",
        "decisive_metric": f"The detection significance of {t.topic} in {t.subject} in the new data.",
        "supporting_result": f"{_upper(t.topic)} is detected in {t.subject} at 3 sigma or more in independent data.",
        "falsifying_result": f"No {t.topic} is detected in {t.subject} above 3 sigma at a sensitivity that would "
        "have detected the reported signal.",
    }


def to_draft(t: Tension, question: str) -> Draft:
    """The draft for a tension: both papers as evidence, the subject, the two claims, the contract and the score."""
    objects = [t.subject] if t.subject_kind == "object" else []
    objects += [o for o in dict.fromkeys(t.a.claim.detected.objects + t.b.claim.detected.objects) if o not in objects]
    return Draft(
        question=question,
        source_evidence_ids=t.ids,
        objects=objects or [t.subject],
        signal_type=t.kind,
        premise=(
            f"{t.paper_a.record.id}: {claim_clause(t.a.claim.text, 300)} / "
            f"{t.paper_b.record.id}: {claim_clause(t.b.claim.text, 300)}"
        ),
        extra={
            **contract(t),
            "tension": {
                "subject": t.subject,
                "subject_kind": t.subject_kind,
                "topic": t.topic,
                "key": list(t.key),
                "evidence": t.evidence,
                "claims": [t.a.claim.claim_id, t.b.claim.claim_id],
                "findings": [t.a.shown, t.b.shown],
                **({"sigma": t.sigma} if t.sigma is not None else {}),
                "score": t.score,
                "components": t.components,
            },
        },
    )


def claim_draft(t: ClaimTension) -> Draft:
    """The draft for a methodological challenge, single-dataset conclusion or independent qualification."""
    premise = f"{t.paper_a.record.id}: {claim_clause(t.a.text, 300)}"
    if t.b is not None and t.paper_b is not None:
        premise += f" / {t.paper_b.record.id}: {claim_clause(t.b.text, 300)}"
    objects = list(dict.fromkeys(t.a.detected.objects + (t.b.detected.objects if t.b else ())))
    return Draft(
        question=realise_claim_tension(t),
        source_evidence_ids=t.ids,
        objects=objects or [t.node],
        signal_type=t.kind,
        premise=premise,
        extra={**claim_contract(t), "tension": claim_record(t)},
    )


def _context(t: ClaimTension) -> str:
    subject = paper_subject(t.paper_a, t.clause)
    if not subject:
        return ""
    return f" (reported in {subject})" if subject.startswith('"') else f" (reported for {subject})"


def realise_claim_tension(t: ClaimTension) -> str:
    """One self-contained question: the finding quoted, the data set, challenge or condition named, the test."""
    finding = f"{t.clause}{_context(t)}"
    if t.kind == "single_dataset_conclusion":
        return f"Will data independent of {t.node} confirm the finding, so far from {t.node} alone, that {finding}?"
    if t.kind == "methodological_challenge":
        return (
            f"Does the finding that {finding} survive a test of the {t.detail} in {t.node} that a later study reports?"
        )
    return f"Does the finding that {finding} hold in general, or only {t.detail}, as a later study finds?"


def claim_contract(t: ClaimTension) -> dict[str, str]:
    """The six-field falsifiable contract of a claim tension."""
    ida = t.paper_a.record.id
    idb = t.paper_b.record.id if t.paper_b else ""
    if t.kind == "single_dataset_conclusion":
        return {
            "literature_gap": f"{ida} reports, from {t.node} alone, that {t.clause}; no other past paper tested it "
            "with independent data.",
            "hypothesis": f"The finding that {t.clause} holds in data independent of {t.node}.",
            "minimal_test": f"One analysis of a data set, instrument or sample other than {t.node} that measures "
            "the same quantity or effect.",
            "decisive_metric": f"Agreement, within the combined uncertainties, between the independent result and "
            f"the {t.node} result.",
            "supporting_result": "The independent data reproduce the finding within their uncertainties.",
            "falsifying_result": "The independent data contradict the finding at a sensitivity that would have "
            "reproduced it.",
        }
    if t.kind == "methodological_challenge":
        return {
            "literature_gap": f"{ida} finds, with {t.node}, that {t.clause}; {idb} later reports {t.detail} in "
            f"{t.node}.",
            "hypothesis": f"The finding that {t.clause} holds once the {t.detail} in {t.node} are accounted for.",
            "minimal_test": f"The analysis behind the finding repeated with the {t.detail} in {t.node} modelled or "
            f"removed, or with a method other than {t.node}.",
            "decisive_metric": "The change in the finding's central value or significance after the correction.",
            "supporting_result": "The corrected analysis reproduces the finding within its uncertainties.",
            "falsifying_result": "The corrected analysis loses the finding or moves it beyond its uncertainties.",
        }
    return {
        "literature_gap": f"{ida} finds that {t.clause}; {idb} later finds a related result holds only {t.detail}.",
        "hypothesis": f"The finding that {t.clause} holds outside the condition {t.detail}.",
        "minimal_test": f"One test of the finding in cases that do not meet the condition {t.detail}.",
        "decisive_metric": "Whether the finding is reproduced, at comparable significance, outside the condition.",
        "supporting_result": "The finding holds outside the condition.",
        "falsifying_result": "The finding fails outside the condition and holds inside it.",
    }


def claim_record(t: ClaimTension) -> dict[str, Any]:
    """The ``tension`` record a question carries: type, node, claims, why they were paired, score."""
    return {
        "subject": t.node,
        "subject_kind": "data set" if t.kind == "single_dataset_conclusion" else "node",
        "topic": t.detail or t.node,
        "key": [t.kind, t.node],
        "evidence": t.kind,
        "claims": [t.a.claim_id] + ([t.b.claim_id] if t.b else []),
        "findings": [t.clause] + ([t.b.text] if t.b else []),
        **({"similarity": t.similarity} if t.similarity is not None else {}),
        "why": t.why,
        "score": t.score,
        "components": t.components,
    }
