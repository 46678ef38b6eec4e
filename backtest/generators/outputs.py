"""The typed records of ``evidence_graph``'s reading gate (``docs/generators.md``, "The reading gate").

* :class:`Candidate` — one proposed tension, as the machine found it: its channel, the rule that fired and the
  words it matched, the claim sentences (earlier first) with their papers, the proposed type, why they were
  paired, and ``content_sha256``, the hash of everything that identifies it (a decision names it).
* :class:`ReviewItem` — a candidate as a reader sees it (``items.jsonl`` of a review batch): blinded (no paper
  id, no channel, no score).
* :class:`ReviewDecode` — a batch's private ``decode.json``: which candidate each item is, how it was drawn
  (ranked or at random), the corpus seal, the seed and the ranker's state when the batch was drawn.
* :class:`GateDecision` — one reader's decision on one candidate (``decisions/<batch>.jsonl``): accept with a
  type, or reject with a reason; the reader, the time, the candidate's content hash and the corpus seal.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from backtest.core.records import Output, Versioned

TENSION_TYPES = (
    "observational_tension",
    "methodological_challenge",
    "single_dataset_conclusion",
    "independent_qualification",
)
TensionType = Literal[
    "observational_tension", "methodological_challenge", "single_dataset_conclusion", "independent_qualification"
]
CHANNELS = ("author_stated", "numeric_stance", "single_dataset", "structural", "dense_neighbour")
Channel = Literal["author_stated", "numeric_stance", "single_dataset", "structural", "dense_neighbour"]
REJECT_REASONS = (
    "topic_neighbours",
    "not_a_finding",
    "same_result_restated",
    "same_authors",
    "unintelligible",
    "other",
)
RejectReason = Literal[
    "topic_neighbours", "not_a_finding", "same_result_restated", "same_authors", "unintelligible", "other"
]


class ClaimSide(BaseModel):
    """One claim sentence of a candidate, with its paper."""

    model_config = ConfigDict(extra="forbid")

    paper_id: str
    sentence_index: int
    date: str
    title: str
    sentence: str
    authors: list[str] = Field(default_factory=list)


class Candidate(Versioned):
    """One proposed tension (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    candidate_id: str
    channel: Channel
    rule: str
    matched: list[str]
    proposed_type: TensionType
    claims: list[ClaimSide] = Field(min_length=1, max_length=2)  # earlier first
    earlier_outside_corpus: bool = False  # author-stated: the earlier work is not in the past corpus
    node: str = ""  # what joins the claims: subject, property, data set, method
    why: str
    strength: float | None = None  # sigma separation (numeric), cosine (pairs), none otherwise
    content_sha256: str


class ReviewItem(BaseModel):
    """A candidate as its reader sees it: no paper id, no channel, no score."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    proposed_type: TensionType
    type_definition: str
    why: str
    claims: list[dict[str, str]]  # {"role", "date", "title", "sentence"}, earlier first
    earlier_outside_corpus: bool = False


class DrawnItem(BaseModel):
    """Which candidate a review item is, and how it was drawn."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    candidate_id: str
    content_sha256: str
    channel: Channel
    rule: str
    drawn: Literal["ranked", "random"]
    priority: float  # the ranker's probability of acceptance when drawn


class ReviewDecode(Output):
    """A review batch's private ``decode.json``."""

    kind: Literal["evidence_graph_review"] = "evidence_graph_review"
    instance: str
    past_seal: str
    batch: str
    seed: int
    random_share: float
    n_candidates: int  # in the pool when the batch was drawn
    n_read_before: int  # decisions before this batch
    items: list[DrawnItem]


class GateLabel(Versioned):
    """One reader's answer on a review item as the reading desk saves it (``labels/<reader>.jsonl`` in the batch
    folder): the columns of the sheet ``gate import`` takes, and the seconds spent; ``gate import`` takes the
    file as that sheet."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    decision: Literal["accept", "reject"]
    type: TensionType | None = None
    reason: RejectReason | None = None
    notes: str = ""
    seconds: float | None = Field(default=None, ge=0)


class ReadRecord(Versioned):
    """What every record of a reading of a batch carries: the candidate read and the content its reader was
    shown, the corpus seal, the batch and item, and the reader."""

    model_config = ConfigDict(extra="forbid")

    candidate_id: str
    content_sha256: str
    past_seal: str
    batch: str
    item_id: str
    reader: str


class GateDecision(ReadRecord):
    """One reader's decision on one candidate."""

    decided_at: str  # UTC, ISO 8601
    decision: Literal["accept", "reject"]
    type: TensionType | None = None
    reason: RejectReason | None = None
    notes: str = ""
    drawn: Literal["ranked", "random"]
    channel: Channel
    rule: str

    @model_validator(mode="after")
    def _type_or_reason(self) -> GateDecision:
        if self.decision == "accept" and self.type is None:
            raise ValueError("an accepted candidate needs a type")
        if self.decision == "reject" and self.reason is None:
            raise ValueError("a rejected candidate needs a reason")
        return self


# --------------------------------------------------------------------------- claim notes (the gate's second read)

#: a stated finding is quoted inside a question with at most one other: this keeps the question under its limit
MAX_FINDING_CHARS = 180


class ClaimsItem(BaseModel):
    """An accepted tension as its annotator sees it (``claims-NNN/items.jsonl``): the type its gate reader gave it,
    the claim sentences with their papers' titles, dates and whole abstracts, and the gate reader's note; no paper
    id, no channel."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    type: TensionType
    type_definition: str
    claims: list[dict[str, str]]  # {"role", "date", "title", "sentence", "abstract"}, earlier first
    earlier_outside_corpus: bool = False
    gate_note: str = ""


class ClaimsDrawn(BaseModel):
    """Which accepted candidate a claims item is."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    candidate_id: str
    content_sha256: str
    type: TensionType


class ClaimsDecode(Output):
    """A claims batch's private ``decode.json``."""

    kind: Literal["evidence_graph_claims"] = "evidence_graph_claims"
    instance: str
    past_seal: str
    batch: str
    items: list[ClaimsDrawn]


class ClaimsAnswer(BaseModel):
    """One line of an annotator's ``answers.jsonl``: the findings stated so that they stand on their own."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    askable: bool
    earlier: str = Field(default="", max_length=MAX_FINDING_CHARS)
    later: str = Field(default="", max_length=MAX_FINDING_CHARS)
    data_set: str = Field(default="", max_length=100)
    reason: str = ""


class ClaimNote(ReadRecord):
    """One annotator's statement of an accepted tension's findings (``claim-notes/claims-NNN.jsonl``), as the
    reference paper's graph annotated its claims: the findings written to stand on their own, the one data set
    of a single-dataset conclusion, or why the tension cannot be asked. The question is phrased from these."""

    annotated_at: str  # UTC, ISO 8601
    type: TensionType
    askable: bool
    earlier: str = ""  # the earlier finding ("" where no earlier finding is stated)
    later: str = ""  # the later finding (the only one of a single-claim tension)
    data_set: str = ""  # a single-dataset conclusion's one data set, instrument or sample
    reason: str = ""  # why not askable

    @model_validator(mode="after")
    def _complete(self) -> ClaimNote:
        if not self.askable:
            if not self.reason.strip():
                raise ValueError("a tension that cannot be asked needs a reason")
            return self
        if not self.later.strip():
            raise ValueError("an askable tension needs its later (or only) finding")
        if self.type == "single_dataset_conclusion" and not self.data_set.strip():
            raise ValueError("a single-dataset conclusion needs its one data set")
        if self.type in ("methodological_challenge", "independent_qualification") and not self.earlier.strip():
            raise ValueError(f"a {self.type} needs the earlier finding it bears on")
        return self


class TensionRecord(BaseModel):
    """What a question of the sentence-rule graph records of its tension (the draft's ``tension``, written into the
    question as ``tension``): typed from the finding to the question; written as its JSON dump without the unset
    fields."""

    model_config = ConfigDict(extra="forbid")

    subject: str
    subject_kind: str
    topic: str
    key: list[str]  # (kind or property, ...): two questions with the same subject and key ask about one finding
    evidence: str
    claims: list[str]  # claim ids
    findings: list[str]
    sigma: float | int | None = None  # observational: the separation in combined uncertainties
    similarity: float | int | None = None
    why: str | None = None  # the claim-tension rules say why they paired the claims
    score: float | int
    components: dict[str, float | int]

    def why_paired(self) -> str:
        """Why the claims form this tension (observational: both values and their separation)."""
        if self.why:
            return self.why
        a, b = self.findings
        gap = f", {self.sigma} sigma apart" if self.sigma is not None else ""
        return f"both state {' '.join(self.key[1:])} of {self.subject}: {a} vs {b}{gap}"


class GatedTension(BaseModel):
    """What a question of the gated set records of its tension (the draft's ``tension``, and so the frozen
    question's): typed from the gate to the question; written as its JSON dump."""

    model_config = ConfigDict(extra="forbid")

    candidate_id: str
    channel: Channel
    rule: str
    proposed_type: TensionType
    accepted_type: TensionType
    claims: list[str]  # "<paper id>#s<sentence index>", earlier first
    earlier_outside_corpus: bool
    why: str
    subject: str
    stated_by: str | None = None  # the annotator whose stated findings the question quotes (None: machine clauses)
