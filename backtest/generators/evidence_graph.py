"""``evidence_graph`` — structure first: claims -> subjects and quantities -> real cross-paper tensions -> questions.

Pipeline (no model weights needed; an LLM may optionally phrase the result):

1. **Claims with provenance** (:mod:`.extract`): every past abstract is split into
   sentences; claim sentences keep ``(paper id, sentence index)``, their cue flags, the
   key quantities they state (a value with its uncertainty and unit, tied to the
   property named before it; bounds, rough figures and ends of ranges are marked) and
   their *stances* (a feature — a molecule, radio or X-ray emission, pulsations... —
   explicitly detected, or explicitly not detected).
2. **Subject**: the one catalogued object a claim is about — the single designation the
   sentence names, else the single designation of the paper's title when the sentence
   names none. A sentence naming several objects has no subject (its values cannot be
   attributed). Cosmological parameters (the Hubble constant, S8) are their own subject.
3. **Graph** (``networkx``): paper -makes-> claim -about-> subject, and claim -states->
   finding, where a finding is a *quantity key* (property + unit, with the claim's value)
   or a *proposition* ("feature F is present", with the claim's stance).
4. **Tensions** — two claims from different papers (A earlier or same day, B later) about
   the same subject that state the same finding and conflict:

   * ``numeric``: both state exactly one value of the same property in the same unit, each
     with an uncertainty and neither a bound, and the values are more than 2 sigma apart
     (combined uncertainty);
   * ``stance``: one claim says the feature was detected in the subject, the other that it
     was not (hedged, tentative or candidate detections are not stances).

   Nothing else is a tension: no cue-word pairing, no "main result" of a subject. Where the
   corpus holds fewer real tensions than questions requested, fewer questions are emitted;
   ``metadata.json`` (``generator_notes``) says how many were requested, found and emitted.
5. **Ranking** by a documented score in [0, 1]::

       score = 0.50 * specificity + 0.20 * independence + 0.10 * recency + 0.20 * evidence

   specificity: catalogued object 1.0, cosmological parameter 0.8, x rarity
   ``1/sqrt(1 + papers_naming_subject/25)``; independence: author-disjoint groups among the
   papers stating this finding, ``min(1, (groups - 1) / 3)``, halved when A and B share an
   author; recency: ``1 - (cutoff - date_B) / (cutoff - first past date)``; evidence: numeric
   conflict 1.0 (and the sigma separation, capped, breaks ties), stance conflict 0.9.
6. **Questions**: one self-contained sentence naming the subject, the quantity or feature,
   both findings in brief (the two values, or detected vs not detected) and the decisive
   test, from a few neutral templates (chosen by the seeded generator). Each question also
   carries the six-field falsifiable contract (literature gap, hypothesis, minimal test,
   decisive metric, supporting and falsifying result), both papers as
   ``source_evidence_ids``, the two claims as ``premise`` and the ``tension`` record (subject,
   quantity key, the two claim ids, their values or stances, score and its components).
   Selection is greedy by score: one question per subject and finding, at most three per
   subject and per paper, no near-duplicates under the freeze rule.

``--verbalizer llm`` keeps steps 1-5 and the selection, and asks an LLM to phrase each
selected tension as one neutral question (falling back to the template when its answer is
unusable), so the structure's and the language model's contributions can be separated.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field

from backtest.generators.extract import Claim, PaperClaims, analyse_corpus, claim_clause
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult, NothingToAsk
from backtest.generators.select import select_diverse
from backtest.generators.wording import reads_clearly

TENSION_TYPES = ("observational_tension",)
EVIDENCE_KINDS = ("numeric", "stance")
SUBJECT_WEIGHT = {"object": 1.0, "parameter": 0.8}
EVIDENCE_WEIGHT = {"numeric": 1.0, "stance": 0.9}
WEIGHTS = {"specificity": 0.50, "independence": 0.20, "recency": 0.10, "evidence": 0.20}
SIGMA_THRESHOLD = 2.0
FACTOR_THRESHOLD = 2.0  # for values quoted without an uncertainty
MAX_PAIRS_PER_KEY = 3  # paper pairs kept per (subject, finding)
MAX_PER_FINDING = 2  # questions per (subject, finding), from different paper pairs
MAX_PER_SUBJECT = 3
MAX_PER_PAPER = 3
# Quantities that are not properties of one object: their own subject.
GLOBAL_PROPERTIES = {"Hubble constant": "km/s/Mpc", "S8": "", "sigma8": ""}  # each with its one unit
PARAMETER_PHRASE = {
    "Hubble constant": "the Hubble constant H0",
    "S8": "the matter clustering amplitude S8",
    "sigma8": "the matter fluctuation amplitude sigma8",
}
STANCE_PHRASE = {"detected": "detected", "not detected": "not detected"}


@dataclass(frozen=True)
class Finding:
    """What one claim states about its subject: a value of a quantity, or a stance on a feature."""

    claim: Claim
    subject: str
    subject_kind: str  # "object" | "parameter"
    key: tuple[str, ...]  # ("quantity", property, unit) | ("feature", name)
    value: dict | None = None
    stance: str | None = None

    @property
    def shown(self) -> str:
        """The finding in brief: the value with its uncertainty and unit, or the stance."""
        if self.value is not None:
            return str(self.value["text"])
        return STANCE_PHRASE[self.stance or ""]


@dataclass
class Tension:
    """Two claims from different papers about the same subject and the same finding, in conflict."""

    evidence: str  # "numeric" | "stance"
    subject: str
    subject_kind: str
    key: tuple[str, ...]
    a: Finding
    b: Finding
    paper_a: PaperClaims
    paper_b: PaperClaims
    sigma: float | None = None
    score: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    kind: str = "observational_tension"

    @property
    def ids(self) -> list[str]:
        return [self.paper_a.record.id, self.paper_b.record.id]

    @property
    def topic(self) -> str:
        """The property (numeric) or the feature (stance) the two claims disagree on."""
        return self.key[1]


# --------------------------------------------------------------------------- findings


def claim_subjects(claim: Claim, paper: PaperClaims) -> tuple[str, ...]:
    """The one catalogued object ``claim`` is about: the only designation the sentence names, else the
    only designation of its paper's title when the sentence names none; ``()`` when ambiguous."""
    named = claim.detected.objects
    if len(named) == 1:
        return named
    if named:
        return ()
    if len(paper.title_objects) == 1:
        return paper.title_objects
    if not paper.title_objects and len(paper.detected.objects) == 1:
        return paper.detected.objects
    return ()


def findings(claim: Claim, paper: PaperClaims) -> list[Finding]:
    """The determinations and stances ``claim`` states about its subject.

    A quantity counts only when it is a determination (an uncertainty, not a bound) and the
    sentence states exactly one value of that property in that unit (two masses in one sentence
    are two components, not one determination)."""
    out: list[Finding] = []
    subjects = claim_subjects(claim, paper)
    values = [dict(q) for q in claim.quantities]
    per_key: dict[tuple[str, str], int] = defaultdict(int)
    for q in values:
        per_key[(q["property"], q["unit"])] += 1
    for q in values:
        if q.get("bound") or per_key[(q["property"], q["unit"])] != 1 or q["value"] <= 0:
            continue
        if q["err"] is None and not q["unit"] or q["err"] is not None and q["err"] <= 0:
            continue
        unit = str(GLOBAL_PROPERTIES.get(q["property"], q["unit"]))
        if q["property"] in GLOBAL_PROPERTIES and q["unit"] not in ("", unit):
            continue
        if q["property"] == "Hubble constant" and not 40 <= q["value"] <= 110:
            continue  # h = 0.7, or another parameter named next to H0
        key: tuple[str, ...] = ("quantity", str(q["property"]), unit)
        if q["property"] in GLOBAL_PROPERTIES:
            if unit and not str(q["text"]).endswith(unit):
                q = {**q, "unit": unit, "text": f"{q['text']} {unit}"}  # the parameter's one unit, always shown
            out.append(Finding(claim, q["property"], "parameter", key, value=q))
        elif subjects:
            out.append(Finding(claim, subjects[0], "object", key, value=q))
    for feature, stance in claim.stances:
        if subjects:
            out.append(Finding(claim, subjects[0], "object", ("feature", feature), stance=stance))
    return out


def build_graph(papers: list[PaperClaims]):
    """The evidence graph: paper -makes-> claim -about-> subject, claim -states-> finding (edge data: the finding)."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    for paper in papers:
        pid = ("paper", paper.record.id)
        graph.add_node(pid, kind="paper", paper=paper)
        for claim in paper.claims:
            found = findings(claim, paper)
            if not found:
                continue
            cid = ("claim", claim.claim_id)
            graph.add_node(cid, kind="claim", claim=claim)
            graph.add_edge(pid, cid, rel="makes")
            for f in found:
                subject = ("subject", f.subject)
                node = ("finding", f.subject, *f.key)
                graph.add_node(subject, kind=f.subject_kind)
                graph.add_node(node, kind="finding")
                graph.add_edge(cid, subject, rel="about")
                graph.add_edge(cid, node, rel="states", finding=f)
    return graph


# --------------------------------------------------------------------------- tensions


def conflict(a: Finding, b: Finding) -> tuple[str, float | None] | None:
    """``("numeric", sigma)`` when two values of one quantity are more than 2 sigma apart,
    ``("stance", None)`` when one claim detects the feature and the other does not; else None."""
    if a.key != b.key or a.subject != b.subject:
        return None
    if a.value is not None and b.value is not None:
        va, vb = a.value["value"], b.value["value"]
        if a.value["err"] and b.value["err"]:
            separation = abs(va - vb) / math.hypot(a.value["err"], b.value["err"])
            return ("numeric", round(separation, 1)) if separation > SIGMA_THRESHOLD else None
        # a value without an uncertainty: only a factor of FACTOR_THRESHOLD or more is a conflict
        if max(va, vb) / min(va, vb) >= FACTOR_THRESHOLD:
            return "numeric", None
        return None
    if a.stance and b.stance and {a.stance, b.stance} == {"detected", "not detected"}:
        return "stance", None
    return None


def _disjoint_authors(a: PaperClaims, b: PaperClaims) -> bool:
    return not ({x.strip().lower() for x in a.record.authors} & {x.strip().lower() for x in b.record.authors})


def find_tensions(papers: list[PaperClaims], cutoff: dt.date) -> list[Tension]:
    """Every real tension in the graph (two papers, one subject, one finding, conflicting), scored, unsorted."""
    graph = build_graph(papers)
    by_id = {p.record.id: p for p in papers}
    stated: dict[tuple, list[Finding]] = defaultdict(list)
    for node, data in graph.nodes(data=True):
        if data.get("kind") != "finding":
            continue
        for _, _, edge in graph.in_edges(node, data=True):
            stated[node].append(edge["finding"])
    naming: dict[str, set[str]] = defaultdict(set)
    for p in papers:
        for o in p.detected.objects:
            naming[o].add(p.record.id)
    first = min(p.record.published for p in papers)
    span = max(1, (cutoff - first).days)
    tensions: list[Tension] = []
    for node in sorted(stated, key=lambda n: tuple(str(x) for x in n)):
        found = sorted(
            stated[node], key=lambda f: (by_id[f.claim.paper_id].record.published, f.claim.paper_id, f.claim.index)
        )
        if len({f.claim.paper_id for f in found}) < 2:
            continue
        groups = _author_groups([by_id[i] for i in sorted({f.claim.paper_id for f in found})])
        seen_pairs: set[tuple[str, str]] = set()
        for j in range(len(found) - 1, 0, -1):  # latest claim first
            b = found[j]
            for i in range(j - 1, -1, -1):
                a = found[i]
                pair = (a.claim.paper_id, b.claim.paper_id)
                if a.claim.paper_id == b.claim.paper_id or pair in seen_pairs:
                    continue
                typed = conflict(a, b)
                if not typed:
                    continue
                seen_pairs.add(pair)
                pa, pb = by_id[a.claim.paper_id], by_id[b.claim.paper_id]
                t = Tension(
                    evidence=typed[0],
                    subject=a.subject,
                    subject_kind=a.subject_kind,
                    key=a.key,
                    a=a,
                    b=b,
                    paper_a=pa,
                    paper_b=pb,
                    sigma=typed[1],
                )
                _score(t, len(naming.get(a.subject, ())) or 1, groups, cutoff, span)
                tensions.append(t)
                break  # one partner per later claim
            if len(seen_pairs) >= MAX_PAIRS_PER_KEY:
                break
    return tensions


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
    specificity = SUBJECT_WEIGHT[t.subject_kind] / math.sqrt(1 + n_papers_subject / 25)
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


class EvidenceGraph:
    """Claims -> subjects and findings -> real cross-paper tensions -> ranked, self-contained questions."""

    name = "evidence_graph"
    version = "2"

    def system_name(self, ctx: GenerationContext) -> str:
        """``evidence_graph``, or ``evidence_graph_llm`` with the LLM verbalizer."""
        return "evidence_graph_llm" if ctx.options.get("verbalizer") == "llm" else "evidence_graph"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Find, score and select real tensions; phrase them with templates (or an LLM); emit fewer when
        the corpus holds fewer than ``ctx.n``."""
        papers = analyse_corpus(ctx.past)
        tensions = find_tensions(papers, ctx.cutoff)
        rng = random.Random(ctx.seed)
        tiebreak = {id(t): rng.random() for t in tensions}
        tensions.sort(key=lambda t: (-t.score, -(t.sigma or 0.0), tiebreak[id(t)]))
        drafts = [to_draft(t, realise(t, rng)) for t in tensions]
        drafts = [d for d in drafts if reads_clearly(d.question)]

        def accept(draft: Draft, kept: list[Draft]) -> bool:
            t = draft.extra["tension"]
            same = [
                k
                for k in kept
                if (k.extra["tension"]["subject"], k.extra["tension"]["key"]) == (t["subject"], t["key"])
            ]
            if len(same) >= MAX_PER_FINDING:
                return False
            if sum(1 for k in kept if k.extra["tension"]["subject"] == t["subject"]) >= MAX_PER_SUBJECT:
                return False
            for pid in draft.source_evidence_ids:
                if sum(1 for k in kept if pid in k.source_evidence_ids) >= MAX_PER_PAPER:
                    return False
            return True

        if not drafts:
            raise NothingToAsk(
                f"evidence_graph: the past corpus of {ctx.instance.instance_id} holds no real tension (two papers, "
                "one subject, one quantity or feature, conflicting values or stances); nothing written"
            )
        chosen = select_diverse(drafts, ctx.n, accept=accept, embedding=True, cache_dir=ctx.cache_dir)
        llm_components = None
        if ctx.options.get("verbalizer") == "llm":
            from backtest.generators.verbalize import verbalize_with_llm

            chosen, llm_components = verbalize_with_llm(chosen, ctx)
        counts: defaultdict[str, int] = defaultdict(int)
        for d in chosen:
            counts[d.extra["tension"]["evidence"]] += 1
        description = (
            "Evidence graph: provenance-carrying claim sentences from past abstracts, the one catalogued object "
            "(or cosmological parameter) each is about and what it states (a value with its uncertainty, or "
            "a detection or non-detection), a networkx graph of papers, claims, subjects and findings, and "
            "real cross-paper tensions (two papers, one subject, one quantity or feature, conflicting values or "
            "stances) ranked by specificity, independent sources, recency and evidence, phrased as "
            "self-contained questions with a falsifiable contract "
            + ("by a language model." if llm_components else "from templates.")
            + f" {len(chosen)} of {ctx.n} requested: the past corpus holds {len(tensions)} real tensions."
        )
        return GenerationResult(
            drafts=chosen,
            description=description,
            llm_components=llm_components,
            notes={
                "papers": len(papers),
                "requested": ctx.n,
                "tensions_found": len(tensions),
                "emitted": len(chosen),
                "shortfall": max(0, ctx.n - len(chosen)),
                "evidence": dict(sorted(counts.items())),
            },
        )
