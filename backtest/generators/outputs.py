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


class GateDecision(Versioned):
    """One reader's decision on one candidate."""

    model_config = ConfigDict(extra="forbid")

    candidate_id: str
    content_sha256: str
    past_seal: str
    batch: str
    item_id: str
    reader: str
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
