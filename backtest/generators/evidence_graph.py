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
3. **Graph** (``networkx``, :func:`build_graph`): paper -makes-> claim (every claim sentence);
   claim -about-> subject; claim -names-> term (data sets, methods, quantities, molecules,
   phenomena, systematics of the lexicons); claim -states-> finding, where a finding is a
   *quantity key* (property + unit, with the claim's value) or a *proposition* ("feature F is
   present", with the claim's stance). The typed tensions are its claim -> claim edges.
4. **Tensions**, four types, each with a condition checkable on its claims (``docs/generators.md``):

   * ``observational_tension`` — two claims from different papers (A earlier or same day, B later)
     about the same subject state the same finding in conflict: ``numeric`` (exactly one value
     of the same property in the same unit each, with uncertainties, neither a bound, more than
     2 sigma apart) or ``stance`` (detected vs not detected; hedged detections are not stances);
   * ``methodological_challenge``, ``single_dataset_conclusion``, ``independent_qualification``
     — :mod:`.tensions` states their conditions.

   Nothing is paired on a cue word alone, and no "main result" stands in for a finding. Where the
   corpus holds fewer tensions than questions requested, fewer questions are emitted;
   ``metadata.json`` (``generator_notes``) says how many were requested, found (by type) and
   emitted (by type).
5. **Ranking** by a documented score in [0, 1]::

       score = 0.50 * specificity + 0.20 * independence + 0.10 * recency + 0.20 * evidence

   observational tensions: specificity: catalogued object 1.0, cosmological parameter 0.8, x rarity
   ``1/sqrt(1 + papers_naming_subject/25)``; independence: author-disjoint groups among the
   papers stating this finding, ``min(1, (groups - 1) / 3)``, halved when A and B share an
   author; recency: ``1 - (cutoff - date_B) / (cutoff - first past date)``; evidence: numeric
   conflict 1.0 (and the sigma separation, capped, breaks ties), stance conflict 0.9. The other
   types: :func:`score_claim_tension` (centrality of the node that joins the claims in place of
   specificity, the type's evidence weight plus the claims' closeness).
6. **Questions**: one self-contained sentence naming the subject, the quantity or feature,
   both findings in brief (the two values, or detected vs not detected) and the decisive
   test, from a few neutral templates (chosen by the seeded generator). Each question also
   carries the six-field falsifiable contract (literature gap, hypothesis, minimal test,
   decisive metric, supporting and falsifying result), both papers as
   ``source_evidence_ids``, the two claims as ``premise`` and the ``tension`` record (subject,
   quantity key, the two claim ids, their values or stances, score and its components).
   Selection is greedy by score: at most two questions per subject and finding, three per
   subject and per paper, no near-duplicates under the freeze rule, and no tension type above
   :data:`MAX_TYPE_SHARE` (60%) of the set when more than one type is asked for
   (:func:`balance_types`; then a corpus whose tensions are all of one type yields no set).
   ``--explain OUT`` writes the graph's counts and, per question, its claims and why they were
   paired (:func:`write_explain`).

``--verbalizer llm`` keeps steps 1-5 and the selection, and asks an LLM to phrase each
selected tension as one neutral question (falling back to the template when its answer is
unusable), so the structure's and the language model's contributions can be separated.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from collections import defaultdict
from typing import Any

from backtest.generators.candidates import corpus_embedder, find_candidates, numeric_stance
from backtest.generators.extract import Claim, PaperClaims, analyse_corpus
from backtest.generators.outputs import Candidate
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult, NothingToAsk
from backtest.generators.select import select_diverse
from backtest.generators.tension_questions import claim_draft, realise, record_of, to_draft
from backtest.generators.tensions import TYPES as CLAIM_TENSION_TYPES
from backtest.generators.tensions import ClaimTension, Finding, Tension, claim_tensions, disjoint_authors
from backtest.generators.wording import reads_clearly

TENSION_TYPES = ("observational_tension", *CLAIM_TENSION_TYPES)
# The types asked about by default. evidence-graph-v1's readers found none at 80% real; the observational tension
# (64%) was fixed against that reading (MODEL_CONDITIONED: 3/3 of the read pairs it keeps are real, in-sample).
# The other three read 0-33% real and are asked about only when named (``--tension-type``), for study.
DEFAULT_TYPES = ("observational_tension",)
MAX_TYPE_SHARE = 0.6  # no tension type above this share of a set
EVIDENCE_KINDS = ("numeric", "stance")
SUBJECT_WEIGHT = {"object": 1.0, "parameter": 0.8}
EVIDENCE_WEIGHT = {
    "numeric": 1.0,
    "stance": 0.9,
    "single_dataset_conclusion": 0.8,
    "methodological_challenge": 0.7,
    "independent_qualification": 0.6,
}
WEIGHTS = {"specificity": 0.50, "independence": 0.20, "recency": 0.10, "evidence": 0.20}
SIGMA_THRESHOLD = 2.0
FACTOR_THRESHOLD = 2.0  # for values quoted without an uncertainty
MAX_PAIRS_PER_KEY = 3  # paper pairs kept per (subject, finding)
MAX_PER_FINDING = 2  # questions per (subject, finding), from different paper pairs
MAX_PER_SUBJECT = 3
MAX_PER_PAPER = 3
# A cosmological parameter's value that is not a measurement to compare (evidence-graph-v1's readers: four of
# eleven observational tensions were H0 values of this kind): a prior the paper takes as input, or a fit within
# an extended model ("in the MAPAge model", "within the axion EDE framework", "reducing the H0 tension").
MODEL_CONDITIONED = re.compile(
    r"\b(?:priors?|models?|framework|scenarios?|extensions?|interacting|(?:reduc|alleviat|eas|resolv)\w* the "
    r"(?:H0 |Hubble |S8 )?tension)\b",
    re.I,
)
# Quantities that are not properties of one object: their own subject.
GLOBAL_PROPERTIES = {"Hubble constant": "km/s/Mpc", "S8": "", "sigma8": ""}  # each with its one unit


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
        if q["property"] in GLOBAL_PROPERTIES and MODEL_CONDITIONED.search(claim.text):
            continue  # a prior taken as input, or a fit within a model built to move the value: not a measurement
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


TERM_KINDS = {
    "instruments": "data set",
    "methods": "method",
    "properties": "quantity",
    "molecules": "molecule",
    "phenomena": "phenomenon",
    "systematics": "systematic",
}


def build_graph(papers: list[PaperClaims]):
    """The evidence graph over the past corpus: paper -makes-> claim (every claim sentence, with its provenance);
    claim -about-> subject (its one catalogued object or parameter); claim -names-> term (a data set, method,
    quantity, molecule, phenomenon or systematic of the lexicon); claim -states-> finding (edge data: the
    :class:`Finding`). The typed tensions are added as claim -> claim (or claim -> data set) edges by
    :func:`add_tensions`."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    for paper in papers:
        pid = ("paper", paper.record.id)
        graph.add_node(pid, kind="paper", paper=paper, date=paper.record.published.isoformat())
        for claim in paper.claims:
            cid = ("claim", claim.claim_id)
            graph.add_node(cid, kind="claim", claim=claim)
            graph.add_edge(pid, cid, rel="makes")
            for attr, kind in TERM_KINDS.items():
                for term in getattr(claim.detected, attr):
                    graph.add_node(("term", term), kind=kind)
                    graph.add_edge(cid, ("term", term), rel="names")
            for f in findings(claim, paper):
                subject = ("subject", f.subject)
                node = ("finding", f.subject, *f.key)
                graph.add_node(subject, kind=f.subject_kind)
                graph.add_node(node, kind="finding")
                graph.add_edge(cid, subject, rel="about")
                graph.add_edge(cid, node, rel="states", finding=f)
    return graph


def add_tensions(graph, observational: list[Tension], others: list[ClaimTension]) -> None:
    """The typed tensions as edges: the later claim -> the earlier claim it conflicts with, challenges or
    qualifies; a single-dataset conclusion as claim -> its one data set."""
    for t in observational:
        graph.add_edge(("claim", t.b.claim.claim_id), ("claim", t.a.claim.claim_id), rel=t.kind)
    for c in others:
        if c.b is not None:
            graph.add_edge(("claim", c.b.claim_id), ("claim", c.a.claim_id), rel=c.kind)
        else:
            graph.add_edge(("claim", c.a.claim_id), ("term", c.node), rel=c.kind)


def graph_counts(graph) -> dict[str, dict[str, int]]:
    """Nodes by kind and edges by relation, each sorted by name."""
    nodes: defaultdict[str, int] = defaultdict(int)
    edges: defaultdict[str, int] = defaultdict(int)
    for _, data in graph.nodes(data=True):
        nodes[data.get("kind", "?")] += 1
    for _, _, data in graph.edges(data=True):
        edges[data.get("rel", "?")] += 1
    return {"nodes": dict(sorted(nodes.items())), "edges": dict(sorted(edges.items()))}


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


def find_tensions(papers: list[PaperClaims], cutoff: dt.date, graph=None) -> list[Tension]:
    """Every observational tension in the graph (two papers, one subject, one finding, conflicting), scored,
    unsorted. ``graph``: :func:`build_graph` of ``papers``, when already built."""
    graph = build_graph(papers) if graph is None else graph
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
    independence = min(1.0, (groups - 1) / 3) * (1.0 if disjoint_authors(t.paper_a, t.paper_b) else 0.5)
    recency = max(0.0, 1 - (cutoff - t.paper_b.record.published).days / span)
    evidence = EVIDENCE_WEIGHT[t.evidence]
    t.components = {
        "specificity": round(specificity, 4),
        "independence": round(independence, 4),
        "recency": round(recency, 4),
        "evidence": evidence,
    }
    t.score = round(sum(WEIGHTS[k] * v for k, v in t.components.items()), 6)


def score_claim_tension(t: ClaimTension, papers_naming: int, most: int, cutoff: dt.date, span: int) -> None:
    """The ranking score of a claim tension in [0, 1], with the observational tensions' weights:
    checkability (the type's evidence weight, plus up to 0.1 for how close the two sentences are), centrality in
    place of specificity (``log(1 + papers naming its node) / log(1 + most papers naming any node)``: a tension
    about a node many papers rest on matters more), independence (1 for two author-disjoint papers, 0.5 for one
    paper) and recency (of the later claim)."""
    later = t.paper_b or t.paper_a
    sim = t.similarity or 0.0
    evidence = min(1.0, EVIDENCE_WEIGHT[t.kind] + 0.1 * min(1.0, sim / 0.5))
    centrality = math.log1p(papers_naming) / math.log1p(most) if most > 0 else 0.0
    t.components = {
        "specificity": round(centrality, 4),
        "independence": 1.0 if t.paper_b else 0.5,
        "recency": round(max(0.0, 1 - (cutoff - later.record.published).days / span), 4),
        "evidence": round(evidence, 4),
    }
    t.score = round(sum(WEIGHTS[k] * v for k, v in t.components.items()), 6)


def balance_types(chosen: list[Draft], share: float) -> list[Draft]:
    """``chosen`` (best first) without the lowest-ranked questions of any tension type above ``share`` of the
    set; the set shrinks until no type is above it (a set of one type alone keeps nothing)."""
    kept = list(chosen)
    while kept:
        counts: defaultdict[str, int] = defaultdict(int)
        for d in kept:
            counts[d.signal_type or ""] += 1
        top, n_top = max(sorted(counts.items()), key=lambda x: x[1])
        if n_top <= share * len(kept):
            return kept
        drop = max(i for i, d in enumerate(kept) if d.signal_type == top)
        kept.pop(drop)
    return kept


class EvidenceGraph:
    """Claims -> the evidence graph -> typed cross-paper tensions -> ranked, self-contained questions."""

    name = "evidence_graph"
    version = "3"

    def system_name(self, ctx: GenerationContext) -> str:
        """``evidence_graph``, or ``evidence_graph_llm`` with the LLM verbalizer."""
        return "evidence_graph_llm" if ctx.options.get("verbalizer") == "llm" else "evidence_graph"

    def candidates(self, ctx: GenerationContext) -> tuple[list[PaperClaims], list[Candidate], dict[str, Tension]]:
        """The analysed papers, every candidate tension of the past corpus for the reading gate
        (:func:`backtest.generators.candidates.find_candidates`, all five channels) and the observational tension
        behind each numeric or stance candidate (by candidate id)."""
        papers = analyse_corpus(ctx.past)
        observational = find_tensions(papers, ctx.cutoff)
        embed = corpus_embedder(ctx.cache_dir, ctx.past.seal)
        found = find_candidates(papers, observational, embed=embed)
        behind = {numeric_stance([t])[0].candidate_id: t for t in observational}
        return papers, found, behind

    def tensions(self, ctx: GenerationContext):
        """The graph, with every typed tension of the past corpus as an edge, and the drafts (best first)."""
        papers = analyse_corpus(ctx.past)
        types = tuple(ctx.options.get("tension_types") or DEFAULT_TYPES)
        graph = build_graph(papers)
        observational = find_tensions(papers, ctx.cutoff, graph) if "observational_tension" in types else []
        others = claim_tensions(papers)
        others = [t for t in others if t.kind in types]
        add_tensions(graph, observational, others)
        naming: defaultdict[str, set[str]] = defaultdict(set)
        for p in papers:
            for attr in ("objects", *TERM_KINDS):
                for term in getattr(p.detected, attr):
                    naming[term].add(p.record.id)
        most = max((len(v) for v in naming.values()), default=0)
        span = max(1, (ctx.cutoff - min((p.record.published for p in papers), default=ctx.cutoff)).days)
        for t in others:
            score_claim_tension(t, len(naming.get(t.node, ())), most, ctx.cutoff, span)
        rng = random.Random(ctx.seed)
        ranked: list[tuple[float, float, float, Draft]] = []
        for o in observational:
            ranked.append((o.score, o.sigma or 0.0, rng.random(), to_draft(o, realise(o, rng))))
        for c in others:
            ranked.append((c.score, 0.0, rng.random(), claim_draft(c)))
        ranked.sort(key=lambda x: (-x[0], -x[1], x[2]))
        drafts = [d for *_, d in ranked if reads_clearly(d.question)]
        return papers, graph, observational, others, drafts

    def generate_reviewed(self, ctx: GenerationContext) -> GenerationResult:
        """The set built from the reading gate's accepted candidates only (``--reviewed DIR``):
        :func:`backtest.generators.gated_graph.gated_set`."""
        from backtest.generators.gated_graph import gated_set

        papers, found, behind = self.candidates(ctx)
        return gated_set(ctx, papers, found, behind, per_paper=MAX_PER_PAPER)

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Find, score and select the typed tensions; phrase them with templates (or an LLM); emit fewer when the
        corpus holds fewer than ``ctx.n``; no type above :data:`MAX_TYPE_SHARE` of the set. With
        ``--reviewed DIR``: :meth:`generate_reviewed`."""
        if ctx.options.get("reviewed"):
            return self.generate_reviewed(ctx)
        papers, graph, observational, others, drafts = self.tensions(ctx)
        cap = max(1, math.floor(MAX_TYPE_SHARE * ctx.n))

        def accept(draft: Draft, kept: list[Draft]) -> bool:
            t = record_of(draft)
            if sum(1 for k in kept if k.signal_type == draft.signal_type) >= cap:
                return False
            same = [k for k in kept if (record_of(k).subject, record_of(k).key) == (t.subject, t.key)]
            if len(same) >= MAX_PER_FINDING:
                return False
            if sum(1 for k in kept if record_of(k).subject == t.subject) >= MAX_PER_SUBJECT:
                return False
            for pid in draft.source_evidence_ids:
                if sum(1 for k in kept if pid in k.source_evidence_ids) >= MAX_PER_PAPER:
                    return False
            return True

        chosen = select_diverse(drafts, ctx.n, accept=accept, embedding=True, cache_dir=ctx.cache_dir)
        if len(set(ctx.options.get("tension_types") or DEFAULT_TYPES)) > 1:
            chosen = balance_types(chosen, MAX_TYPE_SHARE)
        if not chosen:
            kinds = sorted({d.signal_type or "" for d in drafts})
            raise NothingToAsk(
                f"evidence_graph: the past corpus of {ctx.instance.instance_id} holds no typed tension that reads "
                "as a question; nothing written"
                if not drafts
                else f"evidence_graph: the past corpus of {ctx.instance.instance_id} holds {len(drafts)} typed "
                f"tensions that read as questions, all {'/'.join(kinds)}: a set needs two types, none above "
                f"{MAX_TYPE_SHARE:.0%}; nothing written"
            )
        llm_components = None
        if ctx.options.get("verbalizer") == "llm":
            from backtest.generators.verbalize import verbalize_with_llm

            chosen, llm_components = verbalize_with_llm(chosen, ctx)
        found: defaultdict[str, int] = defaultdict(int)
        for t in [*observational, *others]:
            found[t.kind] += 1
        by_type: defaultdict[str, int] = defaultdict(int)
        for d in chosen:
            by_type[d.signal_type or ""] += 1
        counts = graph_counts(graph)
        if ctx.options.get("explain"):
            write_explain(ctx.options["explain"], ctx.instance.instance_id, papers, counts, dict(found), chosen)
        description = (
            "Evidence graph: provenance-carrying claim sentences from past abstracts, a networkx graph of papers, "
            "claims, subjects, findings and lexicon terms (data sets, methods, quantities, molecules, phenomena, "
            "systematics), and typed tensions between claims (observational tensions, methodological challenges, "
            "single-dataset conclusions, independent qualifications; each with a checkable condition), ranked by "
            "checkability, centrality, independent sources and recency, phrased as self-contained questions with "
            "a falsifiable contract "
            + ("by a language model." if llm_components else "from templates.")
            + f" {len(chosen)} of {ctx.n} requested: the past corpus holds "
            + ", ".join(f"{v} {k.replace('_', ' ')}s" for k, v in sorted(found.items()))
            + "."
        )
        return GenerationResult(
            drafts=chosen,
            description=description,
            llm_components=llm_components,
            notes={
                "papers": len(papers),
                "requested": ctx.n,
                "tensions_found": sum(found.values()),
                "found_by_type": dict(sorted(found.items())),
                "emitted": len(chosen),
                "emitted_by_type": dict(sorted(by_type.items())),
                "shortfall": max(0, ctx.n - len(chosen)),
                "graph": counts,
            },
        )


def write_explain(
    path, instance_id: str, papers: list[PaperClaims], counts: dict, found: dict[str, int], chosen: list[Draft]
) -> None:
    """``--explain OUT``: the graph's counts by node and edge type, the tensions found by type, and for each question
    the claims it pairs (their sentences) and why they were paired; Markdown (``OUT``) and JSON (``OUT.json``)."""
    import json
    from pathlib import Path

    from backtest.core.fileio import atomic_write_text

    out = Path(path)
    by_claim = {c.claim_id: (p, c) for p in papers for c in p.claims}
    items: list[dict[str, Any]] = []
    for i, d in enumerate(chosen, 1):
        t = record_of(d)
        claims = [
            {"claim": cid, "date": by_claim[cid][0].record.published.isoformat(), "sentence": by_claim[cid][1].text}
            for cid in t.claims
            if cid in by_claim
        ]
        why = t.why_paired()
        items.append({"n": i, "type": d.signal_type, "question": d.question, "claims": claims, "why": why})
    report = {
        "instance": instance_id,
        "graph": counts,
        "tensions_found": dict(sorted(found.items())),
        "questions": items,
    }
    lines = [f"# evidence_graph on {instance_id}: the graph and why each question was asked", ""]
    lines += ["| node kind | count |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in counts["nodes"].items()]
    lines += ["", "| edge type | count |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in counts["edges"].items()]
    lines += ["", "| tension type | found | asked |", "|---|---:|---:|"]
    asked: defaultdict[str, int] = defaultdict(int)
    for item in items:
        asked[item["type"]] += 1
    lines += [f"| {k} | {v} | {asked.get(k, 0)} |" for k, v in sorted(found.items())]
    for item in items:
        lines += ["", f"## {item['n']}. {item['type']}", "", item["question"], ""]
        lines += [f"- `{c['claim']}` ({c['date']}): {c['sentence']}" for c in item["claims"]]
        lines += [f"- why: {item['why']}"]
    atomic_write_text(out, "\n".join(lines) + "\n")
    atomic_write_text(out.with_name(out.name + ".json"), json.dumps(report, indent=2, ensure_ascii=False) + "\n")
