"""Candidate tensions at machine scale: what ``evidence_graph``'s reading gate reads (issue 40).

No model here can judge the relation between two claims, and the reference paper's graph was gated by reading.
So the machine only *proposes*; careful reading accepts (:mod:`backtest.generators.gate`). Five channels, each
candidate recording its channel, the rule that fired and the words it matched:

* ``author_stated`` — a sentence in which the authors set their result against earlier work ("in 3 sigma tension
  with the previous measurements", "contrary to earlier reports", "we do not confirm", "disagree with the
  published"): cue words next to a word for prior work, which coded full-text studies found real in 86-98% of
  sentences (Lamers et al., eLife 2021; bare "in contrast" 20%). Novelty claims ("unlike previous studies, we"),
  negations ("not in tension with") and "contrary to expectations" are excluded. The earlier claim is linked in
  the past corpus when it is there (an earlier, author-disjoint claim naming the same subject or property, TF-IDF
  cosine at least :data:`LINK_SIMILARITY`), else the earlier side is recorded as outside the corpus.
* ``numeric_stance`` — :func:`backtest.generators.evidence_graph.find_tensions`: two values of one quantity of one
  subject more than 2 sigma apart (the separation is the candidate's strength), or detected vs not detected.
* ``single_dataset`` — :func:`backtest.generators.tensions.single_dataset_conclusions`, without what
  evidence-graph-v1's readers found unreal: method checks and calibrations, simulation output, "Fermi" the
  physicist read as the data set; and, read after those, findings from data whose abstract names exactly one
  data set though the sentence names none (:func:`abstract_data_set`).
* ``structural`` — the rule pairs of :mod:`backtest.generators.tensions` (a later author-disjoint claim that
  challenges a method, or qualifies a finding, sharing a subject and close in TF-IDF).
* ``dense_neighbour`` — a later claim with a contrast or qualification cue and its nearest earlier
  author-disjoint finding by MiniLM embedding (cosine at least :data:`DENSE_SIMILARITY`): unlimited recall, low
  precision, read last.

:func:`find_candidates` returns them all, deduplicated (one candidate per unordered pair of claims, the most
precise channel kept), sorted by id. Each candidate's ``candidate_id`` and ``content_sha256`` are hashes of what
identifies it, so a decision made on it is refused once the candidate changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from backtest.core.seal import sha256_json
from backtest.generators.extract import Claim, PaperClaims, analyse_sentence
from backtest.generators.outputs import Candidate, ClaimSide
from backtest.generators.tensions import (
    FROM_DATA,
    NOT_FROM_DATA,
    RESTATEMENT_SIMILARITY,
    ClaimSpace,
    Tension,
    _disjoint,
    _pairs,
    disjoint_authors,
    single_dataset_conclusions,
)

LINK_SIMILARITY = 0.20  # TF-IDF cosine of an author-stated sentence and the earlier claim it is linked to
DENSE_SIMILARITY = 0.70  # MiniLM cosine of a dense-neighbour pair

# A word for prior work near the cue (Lamers et al.: the cue alone is imprecise).
PRIOR_WORK = (
    r"(?:previous(?:ly)?|earlier|prior|past|published|reported|literature|recent(?:ly)? (?:reported|published|"
    r"claimed|measured|derived)|other (?:studies|works|authors|groups|analyses|measurements)|claim(?:s|ed)?|"
    r"(?:results?|measurements?|values?|estimates?|determinations?|findings?|detections?|studies|works|analys[ie]s|"
    r"constraints?|observations?|interpretations?|reports?) (?:of|by|from|in)\b|those (?:of|from|reported|obtained|"
    r"found|derived))"
)
# (rule, pattern, prior probability a reader accepts it, needs a prior-work word in the sentence)
AUTHOR_RULES: tuple[tuple[str, re.Pattern[str], float, bool], ...] = (
    (
        "sigma_tension_with",
        re.compile(
            r"\bin (?:a )?(?:~|about |approximately )?\d+(?:\.\d+)?\s?(?:σ|sigma|-sigma)\s+tension with\b", re.I
        ),
        0.75,
        False,
    ),
    (
        "tension_with_prior",
        re.compile(r"\b(?:in|is in|are in) (?:strong |significant |mild )?tension with\b", re.I),
        0.6,
        True,
    ),
    (
        "inconsistent_with_prior",
        re.compile(
            r"\b(?:inconsistent|incompatible) with (?:the |those |all |most )?(?:previous|earlier|prior|published|"
            r"reported|recent|literature|claimed)",
            re.I,
        ),
        0.7,
        False,
    ),
    (
        "contrary_to_prior",
        re.compile(
            r"\bcontrary to (?:the )?(?:previous|earlier|prior|published|reported|recent|claimed|argued|"
            r"proposed|literature|some|other)",
            re.I,
        ),
        0.85,
        False,
    ),
    (
        "not_confirm",
        re.compile(r"\bwe (?:do not|cannot|could not|did not|are unable to) (?:confirm|reproduce|recover)\b", re.I),
        0.8,
        False,
    ),
    (
        "fail_to_reproduce_prior",
        re.compile(r"\b(?:fail(?:s|ed)?|unable) to (?:reproduce|confirm|replicate|recover)\b", re.I),
        0.5,
        True,
    ),
    (
        "in_contrast_to_prior",
        re.compile(
            r"\bin contrast (?:to|with) (?:the )?(?:previous|earlier|prior|published|reported|recent|claimed|"
            r"literature)",
            re.I,
        ),
        0.55,
        False,
    ),
    ("disagree_with_prior", re.compile(r"\bdisagree(?:s|d|ment)? (?:with|between)\b", re.I), 0.8, True),
    ("contradict_prior", re.compile(r"\bcontradict(?:s|ed|ing|ion|ory)?\b", re.I), 0.8, True),
    ("at_odds_with_prior", re.compile(r"\bat odds with\b", re.I), 0.7, True),
    ("discrepant_with_prior", re.compile(r"\bdiscrepan(?:t|cy|cies) (?:with|between)\b", re.I), 0.6, True),
    ("no_consensus", re.compile(r"\bno (?:clear )?consensus\b", re.I), 0.4, False),
    (
        "prior_method_biased",
        re.compile(
            r"\b(?:previous|earlier|prior|standard|commonly used|widely used|conventional|traditional) "
            r"(?:methods?|analyses|estimates?|measurements?|approaches|calibrations?|techniques?|models?)"
            r"[^.;]{0,60}?\b(?:biased|overestimat\w*|underestimat\w*|unreliable|inaccurate|systematically "
            r"(?:offset|shifted|wrong|biased))",
            re.I,
        ),
        0.6,
        False,
    ),
    (
        "revises_prior",
        re.compile(
            r"\b(?:higher|lower|larger|smaller|greater|older|younger|more|less|fewer|weaker|stronger|faster|"
            r"slower) than (?:previously|earlier|prior|published|(?:those |values )?(?:previously )?reported|"
            r"(?:the )?(?:previous|earlier|prior|published) (?:\w+ )?(?:estimates?|measurements?|values?|results?"
            r"|determinations?|studies|works|claims?|findings?))",
            re.I,
        ),
        0.55,
        False,
    ),
    (
        "challenges_prior",
        re.compile(
            r"\bchalleng(?:e|es|ed|ing) (?:the |this |a )?(?:previous(?:ly)?|earlier|prior|published|reported|"
            r"claimed)\b",
            re.I,
        ),
        0.6,
        False,
    ),
    (
        "challenges_standard",
        re.compile(
            r"\bchalleng(?:e|es|ed|ing) (?:the |this |a )?(?:current|standard|prevailing|conventional|common|"
            r"widely (?:held|accepted)|accepted|canonical|long-standing|established)\b",
            re.I,
        ),
        0.3,
        False,
    ),
    (
        "rules_out_prior",
        re.compile(
            r"\b(?:rule|rules|ruled|ruling) out (?:the )?(?:previous(?:ly)?|earlier|proposed|claimed|reported|"
            r"suggested)",
            re.I,
        ),
        0.6,
        False,
    ),
    (
        "not_support_prior",
        re.compile(
            r"\b(?:do|does|did|cannot|can not) not (?:support|reproduce|confirm) (?:the )?(?:previous(?:ly)?|"
            r"earlier|proposed|claimed|reported|suggested|published)",
            re.I,
        ),
        0.7,
        False,
    ),
    (
        "revise_prior",
        re.compile(
            r"\brevis(?:e|es|ed|ing|ion of) (?:the |a )?(?:previous(?:ly)?|earlier|prior|published|reported|"
            r"commonly|widely)",
            re.I,
        ),
        0.5,
        False,
    ),
    (
        "differ_from_prior",
        re.compile(
            r"\bdiffer(?:s|ed|ent|ing)? (?:significantly |substantially |markedly )?from (?:the |those |all )?"
            r"(?:previous(?:ly)?|earlier|prior|published|reported)",
            re.I,
        ),
        0.3,
        False,
    ),
    (
        "overturn_prior",
        re.compile(r"\b(?:overestimat|underestimat)\w* (?:in|by) (?:previous|earlier|prior|published)", re.I),
        0.6,
        False,
    ),
)
_PRIOR = re.compile(r"\b" + PRIOR_WORK, re.I)
# What the authors' cue words do not mean here.
NOT_AUTHOR_STATED = re.compile(
    r"\bunlike (?:most |many )?(?:previous|earlier|prior|past|existing|other|conventional|traditional)\b"
    r"|\bcontrary to (?:(?:naive |common |our |the )?expectations?|what (?:is|was|one might|might be) (?:expected|"
    r"thought))"
    r"|\b(?:not|no longer|never|neither|nor|without) (?:significantly |strongly )?(?:in tension|inconsistent|"
    r"contradict\w*|disagree\w*|at odds|discrepan\w*)"
    r"|\bno (?:significant |statistically significant )?(?:tension|discrepancy|disagreement|inconsistency)"
    r"|\b(?:alleviat|resolv|reduc|eas|explain|address|reconcil)\w* (?:the |this |these |such )?(?:\w+ ){0,3}"
    r"(?:tensions?|discrepanc\w*|disagreements?)",
    re.I,
)

# Single-dataset conclusions that evidence-graph-v1's readers found unreal.
METHOD_CHECK = re.compile(
    r"\b(?:calibrat\w*|slit[- ]loss\w*|validat\w*|pipeline|data reduction|we (?:test|verify|check|benchmark)|"
    r"consistency check|cross-check\w*|accuracy of (?:the|our)|precision of (?:the|our)|recover(?:s|ed)? the "
    r"(?:input|injected)|injection[- ]recovery|mock)\b",
    re.I,
)
NOT_THE_DATA_SET = re.compile(r"\bFermi(?:[- ](?:acceleration|energy|level|surface|bubbles?|gas|sea|process))", re.I)

# A later claim that could set itself against an earlier one: the dense channel's cue.
CONTRAST = re.compile(
    r"\b(?:however|in contrast|contrary|unlike|whereas|instead|rather than|only (?:if|when|for|under)|"
    r"challeng\w*|tension|inconsistent|discrepan\w*|disagree\w*|contradict\w*|revis\w*|not (?:confirm|support)\w*)\b",
    re.I,
)

TYPE_DEFINITIONS = {
    "observational_tension": "two findings about the same object or quantity that cannot both be right (different "
    "values, or detected vs not detected), or a finding its authors set against an earlier result",
    "methodological_challenge": "a later claim says a method, instrument or analysis choice an earlier finding rests "
    "on is biased, unreliable or incomplete, so the earlier finding may not hold",
    "single_dataset_conclusion": "a finding drawn from one data set (one instrument, survey or sample) that no "
    "independent data have tested yet",
    "independent_qualification": "a later, independent claim finds that an earlier finding holds only under a "
    "condition, or only in part",
}


def _side(paper: PaperClaims, index: int, text: str) -> ClaimSide:
    r = paper.record
    return ClaimSide(
        paper_id=r.id,
        sentence_index=index,
        date=r.published.isoformat(),
        title=" ".join(r.title.split()),
        sentence=text,
        authors=list(r.authors),
    )


def make_candidate(
    channel: str,
    rule: str,
    matched: list[str],
    proposed_type: str,
    sides: list[ClaimSide],
    why: str,
    node: str = "",
    strength: float | None = None,
    outside: bool = False,
) -> Candidate:
    """A candidate with its ids: ``candidate_id`` hashes the claims it joins and its channel and rule (what it
    *is*); ``content_sha256`` hashes everything a reader is shown and the proposed type (what was *read*)."""
    identity = {"channel": channel, "rule": rule, "claims": [[s.paper_id, s.sentence_index] for s in sides]}
    content = {
        **identity,
        "type": proposed_type,
        "why": why,
        "outside": outside,
        "shown": [[s.date, s.title, s.sentence] for s in sides],
    }
    return Candidate(
        candidate_id="c" + sha256_json(identity)[:15],
        channel=channel,
        rule=rule,
        matched=matched,
        proposed_type=proposed_type,
        claims=sides,
        earlier_outside_corpus=outside,
        node=node,
        why=why,
        strength=strength,
        content_sha256=sha256_json(content),
    )


def _nodes(claim: Claim) -> set[str]:
    d = claim.detected
    return set(d.objects) | set(d.phenomena) | set(d.properties) | set(d.molecules)


def author_rule(sentence: str) -> tuple[str, str, float] | None:
    """``(rule, matched words, prior)`` when ``sentence`` sets its result against earlier work, else None."""
    if NOT_AUTHOR_STATED.search(sentence):
        return None
    for rule, pattern, prior, needs_prior in AUTHOR_RULES:
        m = pattern.search(sentence)
        if not m:
            continue
        if needs_prior:
            p = _PRIOR.search(sentence)
            if not p:
                continue
            return rule, f"{m.group(0)} ... {p.group(0)}", prior
        return rule, m.group(0), prior
    return None


def author_stated(papers: list[PaperClaims], space: ClaimSpace) -> list[Candidate]:
    """Sentences whose authors set their result against earlier work, each linked to the earlier claim in the past
    corpus when it is there."""
    out: list[Candidate] = []
    for paper in papers:
        for index, sentence in enumerate(paper.sentences):
            found = author_rule(sentence)
            if not found:
                continue
            rule, matched, _prior = found
            claim = analyse_sentence(paper.record.id, index, sentence, objects=paper.detected.objects)
            link = _earlier_claim(space, paper, claim)
            later = _side(paper, index, sentence)
            if link is None:
                out.append(
                    make_candidate(
                        "author_stated",
                        rule,
                        [matched],
                        "observational_tension",
                        [later],
                        f'the authors set their result against earlier work ("{matched}"); the earlier work is '
                        "not in the past corpus",
                        node=", ".join(sorted(_nodes(claim))[:3]),
                        outside=True,
                    )
                )
                continue
            (earlier_paper, earlier), shared, sim = link
            out.append(
                make_candidate(
                    "author_stated",
                    rule,
                    [matched],
                    "observational_tension",
                    [_side(earlier_paper, earlier.index, earlier.text), later],
                    f'the later authors set their result against earlier work ("{matched}"); the earlier claim, '
                    f"by other authors, names {', '.join(shared)} too (TF-IDF cosine {sim:.2f})",
                    node=shared[0],
                    strength=round(sim, 3),
                )
            )
    return out


def _earlier_claim(
    space: ClaimSpace, paper: PaperClaims, claim: Claim
) -> tuple[tuple[PaperClaims, Claim], list[str], float] | None:
    """The most similar earlier claim of an author-disjoint paper that names a subject of ``claim`` too."""
    mine = _nodes(claim)
    if not mine:
        return None
    for j, sim in space.similar_to(claim.text, LINK_SIMILARITY):
        other_paper, other = space.claims[j]
        if other_paper.record.published >= paper.record.published or not disjoint_authors(other_paper, paper):
            continue
        shared = sorted(mine & _nodes(other))
        if shared:
            return (other_paper, other), shared, sim
    return None


def numeric_stance(observational: list[Tension]) -> list[Candidate]:
    """The observational rule's tensions as candidates, the sigma separation as strength."""
    out = []
    for t in observational:
        gap = f", {t.sigma} sigma apart" if t.sigma is not None else ""
        rule = "stance" if t.evidence == "stance" else ("numeric_3sigma" if (t.sigma or 0) >= 3 else "numeric")
        out.append(
            make_candidate(
                "numeric_stance",
                rule,
                [t.a.shown, t.b.shown],
                "observational_tension",
                [_side(t.paper_a, t.a.claim.index, t.a.claim.text), _side(t.paper_b, t.b.claim.index, t.b.claim.text)],
                f"both state {' '.join(t.key[1:])} of {t.subject}: {t.a.shown} vs {t.b.shown}{gap}",
                node=t.subject,
                strength=t.sigma,
            )
        )
    return out


def single_dataset(space: ClaimSpace) -> list[Candidate]:
    """Single-dataset conclusions, without method checks, calibrations, simulations and Fermi the physicist."""
    out = []
    for t in single_dataset_conclusions(space):
        if METHOD_CHECK.search(t.a.text) or NOT_THE_DATA_SET.search(t.a.text):
            continue
        out.append(
            make_candidate(
                "single_dataset",
                "one_data_set",
                [t.node],
                "single_dataset_conclusion",
                [_side(t.paper_a, t.a.index, t.a.text)],
                f"the finding names one data set, {t.node}, and its abstract no other; no past paper by other "
                "authors restates it with other data",
                node=t.node,
            )
        )
    return out


def abstract_data_set(space: ClaimSpace) -> list[Candidate]:
    """Findings drawn from data whose sentence names no data set while the whole abstract names exactly one, and
    that no author-disjoint past paper restated with other data (rule ``one_data_set_in_abstract``; the looser
    sibling of :func:`single_dataset`, read after it)."""
    out = []
    for i in sorted(space.clauses):
        paper, claim = space.claims[i]
        named = tuple(paper.detected.instruments)
        if claim.detected.instruments or len(named) != 1:
            continue
        text = claim.text
        if not FROM_DATA.search(text) or NOT_FROM_DATA.search(text) or METHOD_CHECK.search(text):
            continue
        data = named[0]
        if NOT_THE_DATA_SET.search(" ".join(paper.sentences)):
            continue
        if any(
            _disjoint(paper, space.claims[j][0]) and set(space.claims[j][1].detected.instruments) - {data}
            for j, _ in space.neighbours(i, RESTATEMENT_SIMILARITY)
        ):
            continue
        out.append(
            make_candidate(
                "single_dataset",
                "one_data_set_in_abstract",
                [data],
                "single_dataset_conclusion",
                [_side(paper, claim.index, text)],
                f"a finding from data in a paper whose abstract names one data set, {data}; no past paper by other "
                "authors restates it with other data",
                node=data,
            )
        )
    return out


def structural(space: ClaimSpace) -> list[Candidate]:
    """The rule pairs: a later author-disjoint claim challenging a method, or qualifying a finding."""
    out = []
    for kind, rule in (("methodological_challenge", "method_challenge"), ("independent_qualification", "condition")):
        for t in _pairs(space, kind):
            assert t.b is not None and t.paper_b is not None
            out.append(
                make_candidate(
                    "structural",
                    rule,
                    [t.detail, t.node],
                    kind,
                    [_side(t.paper_a, t.a.index, t.a.text), _side(t.paper_b, t.b.index, t.b.text)],
                    (
                        f"the later claim, by other authors, reports {t.detail} in {t.node}, on which the earlier "
                        f"finding rests (TF-IDF cosine {t.similarity})"
                        if kind == "methodological_challenge"
                        else f"the later claim, by other authors, holds only {t.detail}; both name {t.node} "
                        f"(TF-IDF cosine {t.similarity})"
                    ),
                    node=t.node,
                    strength=t.similarity,
                )
            )
    return out


def dense_neighbours(space: ClaimSpace, embed: Callable[[list[str]], object]) -> list[Candidate]:
    """Later claims with a contrast cue and their nearest earlier author-disjoint finding by embedding."""
    import faiss
    import numpy as np

    findings = sorted(space.clauses)
    later = [i for i in range(len(space.claims)) if CONTRAST.search(space.claims[i][1].text)]
    if not findings or not later:
        return []
    texts = [space.claims[i][1].text for i in findings] + [space.claims[i][1].text for i in later]
    vectors = np.asarray(embed(texts), dtype="float32")
    faiss.normalize_L2(vectors)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors[: len(findings)])
    k = min(20, len(findings))
    sims, nbrs = index.search(vectors[len(findings) :], k)
    out = []
    for row, i in enumerate(later):
        paper_b, b = space.claims[i]
        for sim, pos in zip(sims[row], nbrs[row]):
            if pos < 0 or sim < DENSE_SIMILARITY:
                break
            paper_a, a = space.claims[findings[pos]]
            if paper_a.record.published >= paper_b.record.published or not disjoint_authors(paper_a, paper_b):
                continue
            m = CONTRAST.search(b.text)
            out.append(
                make_candidate(
                    "dense_neighbour",
                    "embedding_neighbour",
                    [m.group(0) if m else ""],
                    "independent_qualification",
                    [_side(paper_a, a.index, a.text), _side(paper_b, b.index, b.text)],
                    f"the later claim, by other authors, is the nearest in meaning to the earlier finding (cosine "
                    f'{sim:.2f}) and carries a contrast cue ("{m.group(0) if m else ""}")',
                    strength=round(float(sim), 3),
                )
            )
            break
    return out


CHANNEL_ORDER = ("author_stated", "numeric_stance", "single_dataset", "structural", "dense_neighbour")


def dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per set of claims: the one of the most precise channel (:data:`CHANNEL_ORDER`) wins; sorted
    by candidate id."""
    best: dict[tuple, Candidate] = {}
    for c in sorted(candidates, key=lambda c: (CHANNEL_ORDER.index(c.channel), c.candidate_id)):
        key = tuple(sorted((s.paper_id, s.sentence_index) for s in c.claims))
        best.setdefault(key, c)
    return sorted(best.values(), key=lambda c: c.candidate_id)


def find_candidates(
    papers: list[PaperClaims],
    observational: list[Tension],
    embed: Callable[[list[str]], object] | None = None,
    space: ClaimSpace | None = None,
) -> list[Candidate]:
    """Every candidate of every channel in the past corpus (deduplicated, sorted by id). ``embed``: texts ->
    vectors for the dense channel (None leaves that channel out)."""
    space = space or ClaimSpace(papers)
    found = author_stated(papers, space) + numeric_stance(observational) + single_dataset(space)
    found += abstract_data_set(space) + structural(space)
    if embed is not None:
        found += dense_neighbours(space, embed)
    return dedupe(found)


def corpus_embedder(cache_dir: Path | None, seal: str) -> Callable[[list[str]], object]:
    """The MiniLM embedder of the dense channel, its vectors cached under the corpus seal and the texts' hash."""
    from backtest.text.embed import DEFAULT_MODEL, cached_embeddings, model_fingerprint

    def embed(texts: list[str]) -> object:
        if cache_dir is None:
            from backtest.text.embed import embed_texts

            return embed_texts(texts)
        key = sha256_json([model_fingerprint(DEFAULT_MODEL), texts])[:24]
        return cached_embeddings(texts, cache_dir / f"claims-{seal[:16]}-{key}.npy", progress=True)

    return embed
