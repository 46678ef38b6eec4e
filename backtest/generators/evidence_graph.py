"""``evidence_graph`` — structure first: claims -> objects -> typed cross-paper tensions -> questions.

Pipeline (no model weights needed; an LLM may optionally phrase the result):

1. **Claims with provenance** (:mod:`.extract`): every past abstract is split into
   sentences; claim sentences (a result, a non-detection, a tension, a caveat) keep
   ``(paper id, sentence index)`` and their cue flags.
2. **Objects**: what each claim is about — catalogued designations
   (:func:`backtest.text.objects.find_objects`), molecules, instruments, methods,
   systematics, properties, and key quantities (a number with an error or unit tied
   to the property before it). A claim of a paper whose title names one catalogued
   object is also about that object.
3. **Graph** (``networkx``): paper nodes, claim nodes (paper -makes-> claim) and
   object nodes (claim -about-> object). Two claims from different papers that are
   about the same *subject* (an object; for corpora without catalogued objects, a
   molecule, instrument or method) and the same *topic* (a property or molecule, or
   "*" for the subject as a whole) are candidate pairs; the earlier paper is A, the
   later is B (both dated on or before the cutoff).
4. **Typed tensions** (first match wins):

   * ``observational_tension`` — A and B quantify the same property of the same
     subject with values more than 2 sigma apart (or a factor 1.5 without errors),
     or one reports a detection and the other a non-detection, or B's claim
     explicitly disagrees ("in tension with", "inconsistent", "contrary to"...);
   * ``methodological_challenge`` — a claim names a systematic or an analysis choice
     (stellar contamination, retrieval assumptions, calibration, degeneracies...) as
     affecting the result;
   * ``independent_qualification`` — B, by other authors, limits A's result
     ("only if", "however", "cannot rule out", "tentative"...);
   * ``single_dataset_conclusion`` — A's result rests on one instrument or dataset
     and B observed the same subject with another one (the natural independent test).

5. **Ranking**: specificity first — tensions whose subject is a catalogued object
   come before those about a molecule, then a named phenomenon or region (the solar
   wind, the ionosphere, sea ice...), then an instrument, then a method — and,
   within a tier, by a documented score in [0, 1]::

       score = 0.50 * specificity + 0.20 * independence + 0.10 * recency + 0.20 * evidence

   * specificity: subject kind (catalogued object 1.0, molecule 0.6, instrument 0.5,
     method 0.4) x topic (a named property or molecule 1.0, the subject as a whole 0.8)
     x rarity ``1/sqrt(1 + papers_naming_subject/25)``;
   * independence: author-disjoint groups among the papers making claims on this
     subject and topic, ``min(1, (groups - 1) / 3)``, halved when A and B share an author;
   * recency: ``1 - (cutoff - date_B) / (cutoff - first past date)`` (recent tensions
     are the ones most likely still open at the cutoff);
   * evidence: numeric conflict 1.0, detection vs non-detection 0.9, explicit
     disagreement 0.8, methodological 0.7, qualification 0.6, single dataset 0.5.

6. **Questions** from neutral, falsifiable templates (several per type, chosen by the
   seeded generator; none presumes the answer), naming the subject and topic, and
   carrying both papers as ``source_evidence_ids``, the subject in ``objects`` and the
   type in ``signal_type``. Selection is greedy by score with at most two questions
   per subject and per paper and no near-duplicates under the freeze rule
   (TF-IDF >= 0.25 and embedding >= 0.77).

``--verbalizer llm`` keeps steps 1-5 and the selection, and asks an LLM to phrase
each selected tension as one neutral question (falling back to the template when
its answer is unusable), so the structure's and the language model's contributions
can be separated.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from backtest.generators.extract import Claim, PaperClaims, analyse_corpus, claim_clause
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult
from backtest.generators.select import select_diverse

TENSION_TYPES = (
    "observational_tension",
    "methodological_challenge",
    "single_dataset_conclusion",
    "independent_qualification",
)
SUBJECT_WEIGHT = {"object": 1.0, "molecule": 0.6, "phenomenon": 0.55, "instrument": 0.5, "method": 0.4}
EVIDENCE_WEIGHT = {
    "numeric": 1.0,
    "polarity": 0.9,
    "explicit": 0.8,
    "methodological": 0.7,
    "qualification": 0.6,
    "single_dataset": 0.5,
}
WEIGHTS = {"specificity": 0.50, "independence": 0.20, "recency": 0.10, "evidence": 0.20}
MAX_PAIRS_PER_KEY = 12
MAX_PER_SUBJECT = 4
MAX_PER_OBJECT = 5  # catalogued objects may carry one more (distinct topics/types keep them apart)
MAX_IMPLICIT = 5  # a paper naming at most this many designations is about each of them
MAX_PER_PAPER = 3
GENERIC_TOPIC = "*"


@dataclass
class Tension:
    """A typed cross-paper tension about one subject and topic, with both claims as provenance."""

    kind: str
    evidence: str
    subject: str
    subject_kind: str
    topic: str
    a: Claim
    b: Claim
    paper_a: PaperClaims
    paper_b: PaperClaims
    detail: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0
    components: dict[str, float] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [self.paper_a.record.id, self.paper_b.record.id]


# --------------------------------------------------------------------------- graph


def build_graph(papers: list[PaperClaims]):
    """The evidence graph: paper, claim and object nodes; ``makes`` and ``about`` edges."""
    import networkx as nx

    graph = nx.DiGraph()
    for paper in papers:
        pid = ("paper", paper.record.id)
        graph.add_node(pid, kind="paper", date=paper.record.published, authors=tuple(paper.record.authors))
        # A paper that names few catalogued objects is about them: its claims are too,
        # even when a sentence says "the planet" instead of the designation.
        implicit = paper.title_objects or (
            paper.detected.objects if len(paper.detected.objects) <= MAX_IMPLICIT else ()
        )
        for claim in paper.claims:
            cid = ("claim", claim.claim_id)
            graph.add_node(cid, kind="claim", claim=claim)
            graph.add_edge(pid, cid, rel="makes")
            d = claim.detected
            about = [("object", o) for o in dict.fromkeys(d.objects + tuple(implicit))]
            about += [("molecule", m) for m in d.molecules] + [("instrument", i) for i in d.instruments]
            about += [("method", m) for m in d.methods] + [("property", p) for p in d.properties]
            about += [("systematic", s) for s in d.systematics] + [("phenomenon", x) for x in d.phenomena]
            for node in about:
                graph.add_node(node, kind=node[0])
                graph.add_edge(cid, node, rel="about")
    return graph


def _claims_by_key(graph, papers_by_id: dict[str, PaperClaims]) -> dict[tuple[str, str, str], list[Claim]]:
    """Index claims by (subject kind, subject, topic) using the graph's ``about`` edges."""
    index: dict[tuple[str, str, str], list[Claim]] = defaultdict(list)
    for node, data in graph.nodes(data=True):
        if data.get("kind") != "claim":
            continue
        claim: Claim = data["claim"]
        about = [n for n in graph.successors(node)]
        subjects = [n for n in about if n[0] in SUBJECT_WEIGHT]
        topics = [n[1] for n in about if n[0] in ("property", "molecule")]
        properties = [n[1] for n in about if n[0] == "property"]
        for skind, subject in subjects:
            # a molecule's topics are its properties (never another molecule: "the CO of H2O")
            own_topics = properties if skind == "molecule" else [t for t in topics if t != subject]
            for topic in own_topics + [GENERIC_TOPIC]:
                index[(skind, subject, topic)].append(claim)
    return index


# --------------------------------------------------------------------------- tensions


def _quantities(claim: Claim, topic: str) -> list[dict]:
    return [dict(q) for q in claim.quantities if dict(q)["property"] == topic]


def _numeric_conflict(a: Claim, b: Claim, topic: str) -> dict | None:
    for qa in _quantities(a, topic):
        for qb in _quantities(b, topic):
            if qa["unit"] != qb["unit"] or qa["value"] == 0 or qb["value"] == 0:
                continue
            if qa["err"] and qb["err"]:
                sigma = math.hypot(qa["err"], qb["err"])
                if sigma > 0 and abs(qa["value"] - qb["value"]) > 2 * sigma:
                    return {"a": qa["text"], "b": qb["text"]}
            elif (
                max(qa["value"], qb["value"]) / min(abs(qa["value"]), abs(qb["value"])) > 1.5
                and qa["value"] * qb["value"] > 0
            ):
                return {"a": qa["text"], "b": qb["text"]}
    return None


def _disjoint_authors(a: PaperClaims, b: PaperClaims) -> bool:
    return not ({x.strip().lower() for x in a.record.authors} & {x.strip().lower() for x in b.record.authors})


FACILITY = {
    "NIRSpec": "JWST",
    "NIRISS": "JWST",
    "NIRCam": "JWST",
    "MIRI": "JWST",
    "WFC3": "HST",
    "STIS": "HST",
    "VLTI/GRAVITY": "VLT",
    "ESPRESSO": "VLT",
    "CRIRES+": "VLT",
    "SPHERE": "VLT",
    "MUSE": "VLT",
    "X-shooter": "VLT",
}


def _independent_instruments(a: str, b: str) -> bool:
    """False when one instrument is part of the other's facility (NIRSpec and JWST are one dataset family)."""
    return FACILITY.get(a, a) != FACILITY.get(b, b)


def classify(
    a: Claim, b: Claim, pa: PaperClaims, pb: PaperClaims, topic: str, subject: str = ""
) -> tuple[str, str, dict] | None:
    """The tension type of claim ``a`` (earlier paper) vs claim ``b`` (later paper), or None."""
    if topic != GENERIC_TOPIC:
        numeric = _numeric_conflict(a, b, topic)
        if numeric:
            return "observational_tension", "numeric", numeric
        if (a.negative and b.result and not b.negative) or (b.negative and a.result and not a.negative):
            return "observational_tension", "polarity", {}
        if b.tension:
            return "observational_tension", "explicit", {}
    issues = [s for s in b.detected.systematics] or [s for s in a.detected.systematics]
    if (b.method_issue or a.method_issue) and issues:
        return "methodological_challenge", "methodological", {"issue": issues[0]}
    if b.qualify and a.result and _disjoint_authors(pa, pb):
        return "independent_qualification", "qualification", {}
    inst_a = a.detected.instruments or pa.detected.instruments
    inst_b = [
        i
        for i in (b.detected.instruments or pb.detected.instruments)
        if all(_independent_instruments(i, x) for x in inst_a)
    ]
    if a.result and len(inst_a) == 1 and inst_a[0] != subject:
        return (
            "single_dataset_conclusion",
            "single_dataset",
            {"instrument_a": inst_a[0], "instrument_b": inst_b[0] if inst_b else None},
        )
    return None


def find_tensions(papers: list[PaperClaims], cutoff: dt.date) -> list[Tension]:
    """Every typed tension in the graph, scored (unsorted)."""
    graph = build_graph(papers)
    by_id = {p.record.id: p for p in papers}
    index = _claims_by_key(graph, by_id)
    df: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (skind, subject, _), claims in index.items():
        df[(skind, subject)].update(c.paper_id for c in claims)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    stop = frozenset(ENGLISH_STOP_WORDS)
    word_df: dict[str, int] = defaultdict(int)
    for p in papers:
        for w in set(_content_words(" ".join(c.text for c in p.claims), stop)):
            word_df[w] += 1
    first = min(p.record.published for p in papers)
    span = max(1, (cutoff - first).days)
    tensions: list[Tension] = []
    for (skind, subject, topic), claims in sorted(index.items()):
        paper_ids = sorted({c.paper_id for c in claims})
        if len(paper_ids) < 2 or len(df[(skind, subject)]) > 400:
            continue
        ordered = sorted(claims, key=lambda c: (by_id[c.paper_id].record.published, c.paper_id, c.index))
        groups = _author_groups([by_id[i] for i in paper_ids])
        pairs = 0
        for j in range(len(ordered) - 1, 0, -1):  # latest claim first: recent tensions first
            b = ordered[j]
            for i in range(j - 1, -1, -1):
                a = ordered[i]
                pa, pb = by_id[a.paper_id], by_id[b.paper_id]
                if a.paper_id == b.paper_id or pa.record.published > pb.record.published:
                    continue
                typed = classify(a, b, pa, pb, topic, subject)
                if not typed:
                    continue
                kind, evidence, detail = typed
                if topic == GENERIC_TOPIC:
                    detail = {**detail, "phrase": shared_phrase(a, b, subject, word_df, stop)}
                t = Tension(
                    kind=kind,
                    evidence=evidence,
                    subject=subject,
                    subject_kind=skind,
                    topic=topic,
                    a=a,
                    b=b,
                    paper_a=pa,
                    paper_b=pb,
                    detail=detail,
                )
                _score(t, len(df[(skind, subject)]), groups, cutoff, span)
                tensions.append(t)
                pairs += 1
                break  # one partner per later claim
            if pairs >= MAX_PAIRS_PER_KEY:
                break
    return tensions


_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{3,}")
_GENERIC_WORDS = frozenset(
    """
using used based find found show shows shown results result observations observed data study studies analysis
model models suggest suggests within between however while these those their which also first new large small high
low higher lower than more most both each other such about into over under only well much many several find
consistent constraints constrain derived measured measure estimate estimated present presented paper work provide
conclude concluded uncertainty uncertainties detection detections observation function functions region regions
reveal reveals indicate indicates evidence significant significantly sample samples compared compare times time
""".split()
)


_NOUNLIKE = re.compile(
    r"(?:ion|ions|ity|ance|ence|ure|ism|ment|ness|ics|sphere|tail|wave|waves|field|fields|rate|ratio|mass|flux|disk|disc|"
    r"wind|winds|shock|shocks|jet|jets|cloud|clouds|dust|gas|halo|halos|bar|ring|rings|spectrum|spectra|outflow|outflows|"
    r"structure|population|populations|variability|layer|layers|core|cores|envelope|profile|profiles|signal|signals)$"
)


def _content_words(text: str, stop: frozenset[str]) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in stop and w.lower() not in _GENERIC_WORDS]


def shared_phrase(a: Claim, b: Claim, subject: str, word_df: dict[str, int], stop: frozenset[str]) -> str | None:
    """The most specific wording two claims share: a common content bigram, else the rarest common word."""
    from backtest.generators.extract import MOLECULES

    skip = {w.lower() for w in _WORD.findall(subject)}
    skip |= {w.lower() for alias in MOLECULES.get(subject, ()) for w in _WORD.findall(alias)}
    wa, wb = _content_words(a.text, stop), _content_words(b.text, stop)
    bigrams = {f"{x} {y}" for x, y in zip(wa, wa[1:])} & {f"{x} {y}" for x, y in zip(wb, wb[1:])}
    bigrams = {g for g in bigrams if not (set(g.split()) & skip)}
    if bigrams:
        return min(bigrams, key=lambda g: (sum(word_df.get(w, 0) for w in g.split()), g))
    common = (set(wa) & set(wb)) - skip
    common = {w for w in common if word_df.get(w, 0) >= 2 and _NOUNLIKE.search(w)}
    return min(common, key=lambda w: (word_df.get(w, 0), w)) if common else None


def _author_groups(papers: list[PaperClaims]) -> int:
    """How many author-disjoint groups the papers form (papers sharing an author are one group)."""
    import networkx as nx

    graph = nx.Graph()
    for p in papers:
        graph.add_node(("p", p.record.id))
        for author in p.record.authors:
            graph.add_edge(("p", p.record.id), ("a", author.strip().lower()))
    return sum(1 for c in nx.connected_components(graph) if any(n[0] == "p" for n in c))


def _score(t: Tension, n_papers_subject: int, groups: int, cutoff: dt.date, span: int) -> None:
    specificity = (
        SUBJECT_WEIGHT[t.subject_kind]
        * (1.0 if t.topic != GENERIC_TOPIC else 0.8)
        / math.sqrt(1 + n_papers_subject / 25)
    )
    independence = min(1.0, (groups - 1) / 3) * (1.0 if _disjoint_authors(t.paper_a, t.paper_b) else 0.5)
    recency = max(0.0, 1 - (cutoff - t.paper_b.record.published).days / span)
    evidence = EVIDENCE_WEIGHT[t.evidence]
    t.components = {
        "specificity": round(specificity, 4),
        "independence": round(independence, 4),
        "recency": round(recency, 4),
        "evidence": evidence,
    }
    t.score = round(sum(WEIGHTS[k] * v for k, v in t.components.items()), 6)


# --------------------------------------------------------------------------- questions

TEMPLATES: dict[str, tuple[str, ...]] = {
    "observational_tension": (
        "Do independent determinations of the {topic} of {subject} agree within their stated uncertainties?",
        "Is the {topic} reported for {subject} reproduced when it is re-observed and re-analysed independently?",
        "Will new measurements of {subject} narrow the spread between published estimates of its {topic}?",
        "Which of the differing {topic} results for {subject} do further observations support?",
    ),
    "methodological_challenge": (
        "Does the inferred {topic} of {subject} change beyond its quoted uncertainty "
        "when {issue} {is_are} treated differently?",
        "How strongly do conclusions about the {topic} of {subject} depend on the handling of {issue}?",
        "Do analyses of {subject} that model {issue} in different ways arrive at the same {topic}?",
        "Is the {topic} derived for {subject} stable against alternative treatments of {issue}?",
    ),
    "single_dataset_conclusion": (
        "Is the {topic} result for {subject} obtained with {instrument_a} "
        "confirmed by independent {instrument_b} data?",
        "Does the {instrument_a}-based conclusion on the {topic} of {subject} survive a test with {instrument_b}?",
        "Will data independent of {instrument_a} reproduce the reported {topic} of {subject}?",
    ),
    "independent_qualification": (
        "Does the earlier conclusion about the {topic} of {subject} "
        "still hold once the limitations raised by later work are included?",
        "Under which conditions does the reported {topic} of {subject} remain valid?",
        "Is the {topic} finding for {subject} robust across the range of conditions explored by subsequent studies?",
    ),
}
GENERIC_TOPIC_PHRASE = {
    "object": "main result",
    "molecule": "abundance",
    "phenomenon": "main result",
    "instrument": "main result",
    "method": "main result",
}


_WITH_ARTICLE = {
    "magnetosphere",
    "ionosphere",
    "thermosphere",
    "plasmasphere",
    "magnetopause",
    "magnetotail",
    "ring current",
    "solar wind",
    "heliosphere",
    "corona",
    "stratosphere",
    "polar vortex",
    "jet stream",
    "geodynamo",
    "Martian atmosphere",
    "Venus atmosphere",
    "Jovian magnetosphere",
    "bow shock",
    "planetary boundary layer",
    "QBO",
    "MJO",
    "radiation belts",
}


def _subject_phrase(t: Tension) -> str:
    phenomenon = f"the {t.subject}" if t.subject in _WITH_ARTICLE else t.subject
    return {
        "object": t.subject,
        "molecule": t.subject,
        "phenomenon": phenomenon,
        "instrument": f"{t.subject} measurements",
        "method": f"{t.subject} results",
    }[t.subject_kind]


def realise(t: Tension, rng: random.Random) -> str:
    """A neutral question for tension ``t`` from its type's templates (choice seeded)."""
    options = TEMPLATES[t.kind]
    if t.kind == "single_dataset_conclusion" and not t.detail.get("instrument_b"):
        options = tuple(o for o in options if "{instrument_b}" not in o)
    template = options[rng.randrange(len(options))]
    topic = t.topic if t.topic != GENERIC_TOPIC else (t.detail.get("phrase") or GENERIC_TOPIC_PHRASE[t.subject_kind])
    issue = t.detail.get("issue", "systematics")
    text = template.format(
        topic=topic,
        subject=_subject_phrase(t),
        issue=issue,
        is_are="are" if issue.endswith(("s", "ies")) else "is",
        instrument_a=t.detail.get("instrument_a", ""),
        instrument_b=t.detail.get("instrument_b", ""),
    )
    return text.replace("main result result", "main result").replace("main result finding", "main result")


def to_draft(t: Tension, question: str) -> Draft:
    """The draft for a tension: both papers as evidence, its objects, type, claims and score."""
    objects = [t.subject] if t.subject_kind == "object" else []
    objects += [o for o in dict.fromkeys(t.a.detected.objects + t.b.detected.objects) if o not in objects]
    return Draft(
        question=question,
        source_evidence_ids=t.ids,
        objects=objects or [t.subject],
        signal_type=t.kind,
        premise=(
            f"{t.paper_a.record.id}: {claim_clause(t.a.text, 300)} / "
            f"{t.paper_b.record.id}: {claim_clause(t.b.text, 300)}"
        ),
        extra={
            "tension": {
                "subject": t.subject,
                "subject_kind": t.subject_kind,
                "topic": t.topic,
                "evidence": t.evidence,
                "claims": [t.a.claim_id, t.b.claim_id],
                "score": t.score,
                "components": t.components,
                **{k: v for k, v in t.detail.items() if v},
            }
        },
    )


class EvidenceGraph:
    """Claims -> objects -> typed cross-paper tensions -> ranked neutral questions."""

    name = "evidence_graph"
    version = "1"

    def system_name(self, ctx: GenerationContext) -> str:
        """``evidence_graph``, or ``evidence_graph_llm`` with the LLM verbalizer."""
        return "evidence_graph_llm" if ctx.options.get("verbalizer") == "llm" else "evidence_graph"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Find, score and select tensions; phrase them with templates (or an LLM)."""
        papers = analyse_corpus(ctx.past)
        tensions = find_tensions(papers, ctx.cutoff)
        rng = random.Random(ctx.seed)
        tiebreak = {id(t): rng.random() for t in tensions}
        # Specificity first: subject tier (catalogued object > molecule > instrument > method), then score.
        tensions.sort(key=lambda t: (-SUBJECT_WEIGHT[t.subject_kind], -t.score, tiebreak[id(t)]))
        drafts = [to_draft(t, realise(t, rng)) for t in tensions[: max(8 * ctx.n, 600)]]

        def accept(draft: Draft, kept: list[Draft]) -> bool:
            subject = draft.extra["tension"]["subject"]
            cap = MAX_PER_OBJECT if draft.extra["tension"]["subject_kind"] == "object" else MAX_PER_SUBJECT
            if sum(1 for k in kept if k.extra["tension"]["subject"] == subject) >= cap:
                return False
            for pid in draft.source_evidence_ids:
                if sum(1 for k in kept if pid in k.source_evidence_ids) >= MAX_PER_PAPER:
                    return False
            return True

        chosen = select_diverse(drafts, ctx.n, accept=accept, embedding=True, cache_dir=ctx.cache_dir)
        llm_components = None
        if ctx.options.get("verbalizer") == "llm":
            from backtest.generators.verbalize import verbalize_with_llm

            chosen, llm_components = verbalize_with_llm(chosen, ctx)
        counts: defaultdict[str, int] = defaultdict(int)
        for d in chosen:
            counts[d.signal_type or "none"] += 1
        description = (
            "Evidence graph: provenance-carrying claim sentences from past abstracts, the objects they are "
            "about (catalogued designations, molecules, instruments, methods, quantities), a networkx graph of "
            "papers, claims and objects, typed cross-paper tensions ranked by specificity, independent "
            "sources, recency and evidence strength, phrased as neutral questions "
            + ("by a language model." if llm_components else "from templates.")
        )
        return GenerationResult(
            drafts=chosen,
            description=description,
            llm_components=llm_components,
            notes={"papers": len(papers), "tensions": len(tensions), "types": dict(sorted(counts.items()))},
        )
