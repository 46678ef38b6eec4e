"""The three claim-level tension types of ``evidence_graph`` besides the observational tension.

Each type has one condition, checkable from the two claim sentences (and the past corpus), stated
here and in ``docs/generators.md``; nothing is paired on a cue word alone:

* **methodological challenge** (``methodological_challenge``): a later claim B questions a method or
  instrument M — its sentence names M and a challenge (a bias, an over- or underestimate, a
  systematic error, contamination, a spurious signal, model dependence, a degeneracy, a strong
  sensitivity) — and an earlier finding A of an author-disjoint paper rests on M (A's sentence names
  M). A and B also name one subject node in common besides M (a catalogued object, a phenomenon, a
  property or a molecule) and their sentences are close: TF-IDF cosine at least
  :data:`PAIR_SIMILARITY`.
* **single-dataset conclusion** (``single_dataset_conclusion``): a finding drawn from data (its
  sentence speaks of data, observations, spectra, measurements..., not of simulations, predictions or
  forecasts) whose sentence names exactly one data set (an instrument, survey, mission or reanalysis
  of the lexicon) and whose whole abstract names no other, and that no other past paper tested
  independently: no claim of an author-disjoint past paper that restates it (TF-IDF cosine at least
  :data:`RESTATEMENT_SIMILARITY`) names a different data set.
* **independent qualification** (``independent_qualification``): a later claim B of an
  author-disjoint paper states a condition ("only for / when / if / under / below / above ...",
  "limited to", "restricted to") on the same kind of finding as an earlier finding A: A and B name
  one subject node in common and their sentences are close (TF-IDF cosine at least
  :data:`PAIR_SIMILARITY`).

A finding is a claim sentence that states a result (a result cue, a value with its uncertainty or a
detection), is not a non-detection and not background (:func:`backtest.text.discourse.is_background`),
and reads on its own once its lead-in is removed (:func:`backtest.generators.wording.self_contained_clause`
and not :func:`~backtest.generators.wording.refers_back`): the question quotes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from backtest.generators.extract import Claim, PaperClaims
from backtest.generators.wording import refers_back, self_contained_clause
from backtest.text.discourse import is_background

PAIR_SIMILARITY = 0.20  # TF-IDF cosine of two claim sentences paired as challenge or qualification
RESTATEMENT_SIMILARITY = 0.30  # TF-IDF cosine at which another paper's claim restates a finding

# A challenge to a method: what B's sentence must say about the method or instrument it names. The
# capture names the problem in the question ("the biases", "the contamination").
CHALLENGE = re.compile(
    r"\b(?P<problem>bias(?:ed|es)?|overestimat\w*|underestimat\w*|spurious|artefacts?|artifacts?|contaminat\w*|"
    r"systematic (?:errors?|uncertaint\w*|effects?|offsets?|biases)|model[- ]dependen\w*|degenera\w*|"
    r"(?:is|are|be|remains?) (?:highly |very |strongly )?sensitive to|depends? (?:strongly|critically|sensitively) on|"
    r"unreliable|mimic\w*|not robust)\b",
    re.I,
)
PROBLEM_NOUN = (
    (re.compile(r"^bias", re.I), "biases"),
    (re.compile(r"^overestimat", re.I), "overestimates"),
    (re.compile(r"^underestimat", re.I), "underestimates"),
    (re.compile(r"^(?:spurious|artefact|artifact|mimic)", re.I), "spurious signals"),
    (re.compile(r"^contaminat", re.I), "contamination"),
    (re.compile(r"^systematic", re.I), "systematic errors"),
    (re.compile(r"^model", re.I), "model dependence"),
    (re.compile(r"^degenera", re.I), "degeneracies"),
    (re.compile(r"^unreliable|^not robust", re.I), "unreliability"),
)
# A condition B states: "only for X", "limited to X". The condition is quoted, up to the clause's end.
CONDITION = re.compile(
    r"\b(?P<head>only (?:if|when|for|under|in|at|within|below|above)|limited to|restricted to)\s+"
    r"(?P<cond>[^,;:.()]{4,90}?)(?=\s*(?:[,;:.()]|$|\band\b|\bwhile\b|\bwhereas\b|\bbut\b|\bwhich\b))",
    re.I,
)

# A single-dataset conclusion is drawn from data: its sentence says so, and is not a simulation's or a model's.
FROM_DATA = re.compile(
    r"\b(?:data|observations?|observed|spectr(?:a|um|oscopy)|photometry|imaging|images|light ?curves?|"
    r"measurements?|catalog(?:ue)?|DR\d+|detect(?:ed|ion))\b",
    re.I,
)
NOT_FROM_DATA = re.compile(r"\b(?:simulat\w*|we propose|predict\w*|forecast\w*|mock|could|would|will)\b", re.I)

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


TYPES = ("methodological_challenge", "single_dataset_conclusion", "independent_qualification")


def problem_noun(match: str) -> str:
    """The challenge in a question's words: "biased" -> "biases", "contaminated" -> "contamination"."""
    for pattern, noun in PROBLEM_NOUN:
        if pattern.match(match):
            return noun
    return "sensitivity to assumptions"


def condition_of(text: str) -> str | None:
    """The condition a qualifying sentence states ("only for a sufficiently strong guide field" -> "for a
    sufficiently strong guide field"; "limited to X" -> "for X"), or None."""
    m = CONDITION.search(text)
    if not m:
        return None
    head = m.group("head").lower()
    cond = m.group("cond").strip()
    if re.search(r"\b(?:we|our|this|these|they|their)\b", cond, re.I):
        return None
    words = head.split()
    return (f"{words[1]} {cond}" if words[0] == "only" else f"for {cond}").strip()


@dataclass
class ClaimTension:
    """One typed edge of the evidence graph between claims: ``a`` is the claim in question (earlier), ``b``
    the claim that challenges or qualifies it (None for a single-dataset conclusion)."""

    kind: str
    a: Claim
    paper_a: PaperClaims
    clause: str  # a's finding as a self-contained clause (the question quotes it)
    b: Claim | None = None
    paper_b: PaperClaims | None = None
    node: str = ""  # the node that joins them: the method (challenge), data set (single) or shared subject
    detail: str = ""  # the problem (challenge) or the condition (qualification)
    similarity: float | None = None
    why: str = ""
    score: float = 0.0
    components: dict[str, float] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [self.paper_a.record.id] + ([self.paper_b.record.id] if self.paper_b else [])


def _nodes(claim: Claim) -> set[str]:
    d = claim.detected
    return set(d.objects) | set(d.phenomena) | set(d.properties) | set(d.molecules)


def _tools(claim: Claim) -> set[str]:
    return set(claim.detected.methods) | set(claim.detected.instruments)


class ClaimSpace:
    """Every claim of the past corpus with its TF-IDF vector (fitted on the claim sentences themselves;
    English stop words, terms in at least 2 and at most 5% of sentences, sublinear tf) and which of them are
    findings with a self-contained clause."""

    def __init__(self, papers: list[PaperClaims]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.claims = [(p, c) for p in papers for c in p.claims]
        texts = [c.text for _, c in self.claims]
        self.vectorizer = TfidfVectorizer(stop_words="english", min_df=2, max_df=0.05, sublinear_tf=True)
        self.vectors = self.vectorizer.fit_transform(texts) if texts else None
        self.clauses: dict[int, str] = {}
        for i, (paper, claim) in enumerate(self.claims):
            clause = finding_clause(paper, claim)
            if clause:
                self.clauses[i] = clause
        self._sims = (self.vectors @ self.vectors.T).tocsr() if self.vectors is not None else None

    def neighbours(self, i: int, minimum: float) -> list[tuple[int, float]]:
        """Other claims with TF-IDF cosine at least ``minimum`` to claim ``i``, most similar first (ties by index)."""
        if self._sims is None:
            return []
        row = self._sims[i]
        found = [(int(j), float(s)) for j, s in zip(row.indices, row.data) if j != i and s >= minimum - 1e-12]
        return sorted(found, key=lambda x: (-x[1], x[0]))

    def similar_to(self, text: str, minimum: float) -> list[tuple[int, float]]:
        """Claims with TF-IDF cosine at least ``minimum`` to ``text`` (any sentence), most similar first."""
        if self.vectors is None:
            return []
        row = (self.vectorizer.transform([text]) @ self.vectors.T).tocsr()
        found = [(int(j), float(s)) for j, s in zip(row.indices, row.data) if s >= minimum - 1e-12]
        return sorted(found, key=lambda x: (-x[1], x[0]))


def is_finding(claim: Claim) -> bool:
    """A result the sentence states: a result cue, a value with its uncertainty or a detection; not a
    non-detection."""
    detected = any(stance == "detected" for _, stance in claim.stances)
    return (claim.result or claim.measured or detected) and not claim.negative


def finding_clause(paper: PaperClaims, claim: Claim) -> str | None:
    """The finding ``claim`` states as a clause that reads on its own, or None (not a finding, background, or
    leaning on its abstract)."""
    if not is_finding(claim) or is_background(claim.text):
        return None
    clause = self_contained_clause(claim.text)
    if clause and not refers_back(clause, " ".join(paper.sentences[: max(claim.index, 0)])):
        return clause
    return None


def disjoint_authors(a: PaperClaims, b: PaperClaims) -> bool:
    """True when no author (case- and space-insensitive) signs both papers."""
    return not ({x.strip().lower() for x in a.record.authors} & {x.strip().lower() for x in b.record.authors})


def _disjoint(a: PaperClaims, b: PaperClaims) -> bool:
    """Two different papers by author-disjoint groups."""
    return a.record.id != b.record.id and disjoint_authors(a, b)


def single_dataset_conclusions(space: ClaimSpace) -> list[ClaimTension]:
    """Findings that rest on one data set and that no author-disjoint past paper restated with other data."""
    out: list[ClaimTension] = []
    for i, clause in sorted(space.clauses.items()):
        paper, claim = space.claims[i]
        named = claim.detected.instruments
        if len(named) != 1 or tuple(paper.detected.instruments) != named:
            continue
        if not FROM_DATA.search(claim.text) or NOT_FROM_DATA.search(claim.text):
            continue
        data = named[0]
        tested = [
            space.claims[j][1].claim_id
            for j, _ in space.neighbours(i, RESTATEMENT_SIMILARITY)
            if _disjoint(paper, space.claims[j][0]) and set(space.claims[j][1].detected.instruments) - {data}
        ]
        if tested:
            continue
        restated = len(space.neighbours(i, RESTATEMENT_SIMILARITY))
        out.append(
            ClaimTension(
                kind="single_dataset_conclusion",
                a=claim,
                paper_a=paper,
                clause=clause,
                node=data,
                why=f"{claim.claim_id} names one data set, {data}, and its abstract no other; no claim of an "
                f"author-disjoint past paper restating it (TF-IDF cosine >= {RESTATEMENT_SIMILARITY}) uses other "
                f"data ({restated} restatements in all)",
            )
        )
    return out


def _pairs(space: ClaimSpace, kind: str) -> list[ClaimTension]:
    """Methodological challenges or independent qualifications: each later claim B with its cue, paired with
    the most similar earlier finding A of an author-disjoint paper that meets the type's condition."""
    out: list[ClaimTension] = []
    for i, (paper_b, b) in enumerate(space.claims):
        if kind == "methodological_challenge":
            m = CHALLENGE.search(b.text)
            if not m or not _tools(b):
                continue
            detail = problem_noun(m.group("problem"))
        else:
            cond = condition_of(b.text)
            if not cond:
                continue
            detail = cond
        for j, sim in space.neighbours(i, PAIR_SIMILARITY):
            if j not in space.clauses:
                continue
            paper_a, a = space.claims[j]
            if paper_a.record.published >= paper_b.record.published or not _disjoint(paper_a, paper_b):
                continue
            shared = sorted(_nodes(a) & _nodes(b))
            tools = sorted(_tools(a) & _tools(b))
            if kind == "methodological_challenge" and not (tools and shared):
                continue
            if kind == "independent_qualification" and (not shared or CHALLENGE.search(a.text)):
                continue
            node = tools[0] if kind == "methodological_challenge" else shared[0]
            why = (
                f"{b.claim_id} questions {node} ({detail}); {a.claim_id} rests on {node}; both name {shared[0]}; "
                f"TF-IDF cosine {sim:.2f}"
                if kind == "methodological_challenge"
                else f"{b.claim_id}, later and author-disjoint, finds it holds only {detail}; both name "
                f"{', '.join(shared)}; TF-IDF cosine {sim:.2f}"
            )
            out.append(
                ClaimTension(
                    kind=kind,
                    a=a,
                    paper_a=paper_a,
                    clause=space.clauses[j],
                    b=b,
                    paper_b=paper_b,
                    node=node,
                    detail=detail,
                    similarity=round(sim, 3),
                    why=why,
                )
            )
            break  # the closest earlier finding only
    return out


def claim_tensions(papers: list[PaperClaims]) -> list[ClaimTension]:
    """Every methodological challenge, single-dataset conclusion and independent qualification in the past
    corpus (unscored, unsorted)."""
    space = ClaimSpace(papers)
    found = single_dataset_conclusions(space)
    found += _pairs(space, "methodological_challenge")
    found += _pairs(space, "independent_qualification")
    return found
