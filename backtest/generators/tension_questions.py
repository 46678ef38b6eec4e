"""The words of ``evidence_graph``'s questions: one self-contained question and the six-field falsifiable contract
for each typed tension (templates; the LLM verbalizer of ``evidence_graph_llm`` rephrases them)."""

from __future__ import annotations

import random
import re

from backtest.generators.extract import PaperClaims, claim_clause
from backtest.generators.outputs import Candidate, ClaimNote, ClaimSide, GatedTension, TensionRecord
from backtest.generators.protocol import MAX_QUESTION_CHARS, Draft
from backtest.generators.tensions import PARAMETER_PHRASE, ClaimTension, Tension
from backtest.generators.wording import paper_subject, reads_clearly, self_contained_clause

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
        extra=contract(t),
        tension=TensionRecord(
            subject=t.subject,
            subject_kind=t.subject_kind,
            topic=t.topic,
            key=list(t.key),
            evidence=t.evidence,
            claims=[t.a.claim.claim_id, t.b.claim.claim_id],
            findings=[t.a.shown, t.b.shown],
            sigma=t.sigma,
            score=t.score,
            components=t.components,
        ),
    )


def record_of(draft: Draft) -> TensionRecord:
    """The tension record of a draft of the sentence-rule graph."""
    if not isinstance(draft.tension, TensionRecord):
        raise TypeError(f"not a sentence-rule evidence_graph draft: {draft.question[:60]!r}")
    return draft.tension


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
        extra=claim_contract(t),
        tension=claim_record(t),
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


def claim_record(t: ClaimTension) -> TensionRecord:
    """The ``tension`` record a question carries: type, node, claims, why they were paired, score."""
    return TensionRecord(
        subject=t.node,
        subject_kind="data set" if t.kind == "single_dataset_conclusion" else "node",
        topic=t.detail or t.node,
        key=[t.kind, t.node],
        evidence=t.kind,
        claims=[t.a.claim_id] + ([t.b.claim_id] if t.b else []),
        findings=[t.clause] + ([t.b.text] if t.b else []),
        similarity=t.similarity,
        why=t.why,
        score=t.score,
        components=t.components,
    )


# --------------------------------------------------------------------------- gated candidates (issue 40)

# The cue that sets a result against earlier work, and the authorial lead-in, taken off a sentence before it is
# quoted as a finding ("In contrast to earlier findings, we observe a rise ..." -> "a rise ...").
_AGAINST_PRIOR_LEAD = re.compile(
    r"^(?:(?:in contrast (?:to|with)|contrary to|unlike|at odds with|in tension with)[^,]{0,90},\s*)", re.I
)
_WE_LEAD = re.compile(
    r"^(?:here,?\s+|finally,?\s+|moreover,?\s+|furthermore,?\s+|however,?\s+)?we\s+(?:also\s+|further\s+)?"
    r"(?:find|found|observe|observed|measure|measured|detect|detected|obtain|obtained|derive|derived|show|showed|"
    r"report|reported|infer|inferred|determine|determined|conclude|concluded|confirm|confirmed|demonstrate|"
    r"demonstrated|identify|identified)\s+(?:that\s+)?",
    re.I,
)


_THAT_TAIL = re.compile(
    r"\b(?:show|shows|showed|find|finds|found|demonstrate|demonstrates|reveal|reveals|revealed|suggest|suggests|"
    r"indicate|indicates|conclude|concludes|argue|argues|confirm|confirms|imply|implies) that (?P<tail>.{40,})$",
    re.I,
)


# What a lifted clause cannot stand on outside its abstract, beyond the clarity checks (evidence-graph-v2's readers:
# "these preliminary data", "the preferred models", "the seven stars", "in both cases", "is presented").
_LEANS_ON_ABSTRACT = re.compile(
    r"^(?:these|this|those|such|it|its|they|their|the (?:available|preferred|present|observed|derived|inferred|"
    r"resulting|new|above|latter|former|same))\b"
    r"|\bthe (?:two|three|four|five|six|seven|eight|nine|ten|\d+) (?:stars|sources|objects|galaxies|systems|targets|"
    r"clusters|planets|events|candidates|samples)\b|\bin both cases\b|\b(?:is|are) presented\b",
    re.I,
)


def finding_of(side: ClaimSide, max_chars: int) -> tuple[str, bool]:
    """A claim sentence as a finding clause, and whether it stands on its own: the contrast lead-in and the
    authorial lead-in taken off (or what follows "we show that"), then :func:`self_contained_clause`, else the
    plain clause (not self-contained)."""
    text = _AGAINST_PRIOR_LEAD.sub("", side.sentence.strip())
    text = _WE_LEAD.sub("", text)
    tail = _THAT_TAIL.search(text)
    for candidate in ([tail.group("tail")] if tail else []) + [text]:
        clause = self_contained_clause(candidate, max_chars)
        if clause and not _LEANS_ON_ABSTRACT.search(clause):
            return clause, True
    return claim_clause(text, max_chars), False


def _about(side: ClaimSide, clause: str, papers: dict[str, PaperClaims]) -> str:
    paper = papers.get(side.paper_id)
    subject = paper_subject(paper, clause) if paper is not None else None
    if not subject:
        return ""
    return f" (reported in {subject})" if subject.startswith('"') else f" (reported for {subject})"


def _one_claim(kind: str, clause: str, node: str, later: bool) -> str:
    """The question about one claim (``later``: the claim that sets itself against earlier work)."""
    if kind == "single_dataset_conclusion":
        data = node or "the one data set it rests on"
        return f"Will data independent of {data} confirm the finding, so far from {data} alone, that {clause}?"
    if not later:
        return f"Will the finding that {clause} hold up against a later study by other authors that reports otherwise?"
    if kind == "methodological_challenge":
        return f"Will an independent analysis confirm that {clause}, against the earlier results it challenges?"
    if kind == "independent_qualification":
        return f"Will independent data confirm the qualification that {clause}?"
    return f"Will independent data confirm the finding that {clause}, which its authors set against earlier results?"


def _two_claims(kind: str, a: str, b: str) -> str:
    if kind == "methodological_challenge":
        return f"Does the finding that {a} hold once the problem a later study raises, that {b}, is accounted for?"
    if kind == "independent_qualification":
        return f"Does the finding that {a} hold in general, or only as a later study qualifies it, that {b}?"
    return f"Will independent data side with the later finding that {b}, or with the earlier finding that {a}?"


def gated_questions(c: Candidate, kind: str, papers: dict[str, PaperClaims], max_chars: int = 200) -> list[str]:
    """The phrasings of an accepted candidate for the type its reader gave it, best first: both claims when both
    stand on their own, else the later claim alone, else the earlier one; none when no claim stands on its own
    (evidence-graph-v2's readers found most questions quoting such a clause unintelligible)."""
    later = c.claims[-1]
    b, b_ok = finding_of(later, max_chars)
    b_about = f"{b}{_about(later, b, papers)}"
    if len(c.claims) == 1:
        return [_one_claim(kind, b_about, c.node, later=True)] if b_ok else []
    earlier = c.claims[0]
    a, a_ok = finding_of(earlier, max_chars)
    a_about = f"{a}{_about(earlier, a, papers)}"
    out = []
    if a_ok and b_ok and kind != "single_dataset_conclusion":
        out.append(_two_claims(kind, a_about, b))
    if b_ok:
        out.append(_one_claim(kind, b_about, c.node, later=True))
    if a_ok:
        out.append(_one_claim(kind, a_about, c.node, later=False))
    return out


def stated_questions(kind: str, note: ClaimNote) -> list[str]:
    """The phrasings of an accepted tension from its annotator's stated findings, best first: both findings when the
    earlier one is stated, else (observational, single-dataset) the later one alone."""
    if kind == "single_dataset_conclusion":
        data = note.data_set
        return [f"Will independent data confirm the finding that {note.later}, so far drawn from {data} alone?"]
    out = [_two_claims(kind, note.earlier, note.later)] if note.earlier else []
    if kind == "observational_tension":
        out.append(_one_claim(kind, note.later, "", later=True))
    return out


def gated_contract(c: Candidate, kind: str, note: ClaimNote | None = None) -> dict[str, str]:
    """The six-field falsifiable contract of an accepted candidate (quoting its stated findings when noted)."""
    later = c.claims[-1]
    b = note.later if note else finding_of(later, 300)[0]
    earlier = c.claims[0] if len(c.claims) == 2 else None
    a = (note.earlier or None) if note else finding_of(earlier, 300)[0] if earlier else None
    if earlier is None and a:
        against = f"earlier work (outside the past corpus) reported that {a}"
    elif earlier is not None:
        against = f"{earlier.paper_id} reported that {a}"
    else:
        against = "earlier work (outside the past corpus) differs"
    return {
        "literature_gap": f"{later.paper_id} reports that {b}; {against}.",
        "hypothesis": f"The later finding holds: {b}.",
        "minimal_test": "One determination from data, a sample or a method independent of "
        + (f"{later.paper_id} and {earlier.paper_id}" if earlier else later.paper_id)
        + ", sensitive enough to tell the two results apart.",
        "decisive_metric": "The independent result's distance, in combined uncertainties, from each of the two "
        "results.",
        "supporting_result": f"The independent result agrees with {later.paper_id} and not with the earlier result.",
        "falsifying_result": f"The independent result agrees with the earlier result and not with {later.paper_id}.",
    }


def gated_draft(
    c: Candidate,
    kind: str,
    papers: dict[str, PaperClaims],
    tension: Tension | None,
    rng: random.Random,
    note: ClaimNote | None = None,
) -> Draft | None:
    """The draft of an accepted candidate, with the type its reader gave it; None when no phrasing reads clearly
    within :data:`MAX_QUESTION_CHARS`. With its annotator's ``note``: phrased from the stated findings
    (:func:`stated_questions`). Without: from lifted clauses (:func:`gated_questions` with clauses of 200, then
    140 characters), and a numeric or stance conflict accepted as an observational tension keeps the
    observational wording (both values, the test)."""
    if note is None and tension is not None and kind == "observational_tension":
        draft = to_draft(tension, realise(tension, rng))
    else:
        phrasings = (
            stated_questions(kind, note)
            if note is not None
            else [q for max_chars in (200, 140) for q in gated_questions(c, kind, papers, max_chars)]
        )
        # stated findings were written by a reader to stand on their own: only the length limit applies to them
        # (the clarity heuristic's symbol and length rules misfire on a stated value, "S8 = 0.769 ± 0.020"; the
        # freeze gate still reports every question's clarity, and held-out reading measures intelligibility)
        question = next(
            (q for q in phrasings if len(q) <= MAX_QUESTION_CHARS and (note is not None or reads_clearly(q))), None
        )
        if question is None:
            return None
        # the stated finding of each claim, earlier first ("" where none is stated: the lifted clause stands in)
        stated = ([note.earlier] if len(c.claims) == 2 else []) + [note.later] if note else [""] * len(c.claims)
        draft = Draft(
            question=question,
            source_evidence_ids=list(dict.fromkeys(s.paper_id for s in c.claims)),
            objects=None,
            signal_type=kind,
            premise=" / ".join(
                f"{s.paper_id}: {text or claim_clause(s.sentence, 300)}" for s, text in zip(c.claims, stated)
            ),
            extra=gated_contract(c, kind, note),
        )
    draft.signal_type = kind
    draft.tension = GatedTension(
        candidate_id=c.candidate_id,
        channel=c.channel,
        rule=c.rule,
        proposed_type=c.proposed_type,
        accepted_type=kind,
        claims=[f"{s.paper_id}#s{s.sentence_index}" for s in c.claims],
        earlier_outside_corpus=c.earlier_outside_corpus,
        why=c.why,
        subject=c.node,
        stated_by=note.reader if note else None,
    )
    return draft
