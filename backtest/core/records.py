"""The data contracts: pydantic models for everything written to or read from disk.

Field names of questions, metadata and judgments follow the reference release
(``../shared/reference/sqb``) so its files load unchanged; unknown fields in those
records are kept (``extra="allow"``), never dropped. Every record type that we
write carries a ``schema_version``; an unknown version is rejected.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from backtest.core.errors import BadInput
from backtest.core.seal import canonical_json, sha256_text

OUTCOMES = ("answered", "partially_addressed", "posed_but_open", "not_addressed")
ENGAGED_OUTCOMES = ("answered", "partially_addressed", "posed_but_open")
PREMISE_STATUSES = ("supported", "refuted", "weakened", "still_plausible", "not_applicable")
CONTRACT_FIELDS = (
    "literature_gap",
    "hypothesis",
    "minimal_test",
    "decisive_metric",
    "supporting_result",
    "falsifying_result",
)
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class UnsafeName(BadInput, ValueError):
    """A name that could escape its folder: bad input (exit 2) and, for pydantic validators, a ValueError."""


def check_safe_name(value: str, what: str = "name") -> str:
    """Reject names that could escape a folder (``../x``, ``/abs``, empty, odd characters, a trailing newline)."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value) or ".." in value:
        raise UnsafeName(f"{what} {value!r} must match {SAFE_NAME.pattern} and contain no '..'")
    return value


def _strict_day(value: Any) -> Any:
    """A date given in JSON must be the string YYYY-MM-DD: not a Unix integer, not a datetime."""
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError(f"{value!r} is not a date written YYYY-MM-DD")
    return value


def utc_day(value: Any) -> Any:
    """A record's publication day, compared by day in UTC: a datetime (or ISO datetime string) with a UTC offset
    becomes its UTC date (``2025-11-01T00:00:00+14:00`` was 2025-10-31 in UTC, so it is not after a 2025-10-31
    cutoff); a bare date, or a datetime without an offset, keeps its calendar day."""
    if isinstance(value, str) and "T" in value:
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value  # pydantic names the bad value
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).date() if value.tzinfo is not None else value.date()
    return value


def safe_name_validator(field: str, what: str) -> Any:
    """A pydantic validator for ``field`` that applies :func:`check_safe_name`, naming the value ``what``."""

    def _check(cls: type, value: str) -> str:
        return check_safe_name(value, what)

    return field_validator(field)(classmethod(_check))


class Versioned(BaseModel):
    """A record with a ``schema_version``; subclasses list the versions they can read."""

    SCHEMA_VERSION: ClassVar[str] = "1"
    SUPPORTED_VERSIONS: ClassVar[tuple[str, ...]] = ("1",)

    schema_version: str = "1"

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if value not in cls.SUPPORTED_VERSIONS:
            raise ValueError(f"unknown schema_version {value!r} (this build reads {', '.join(cls.SUPPORTED_VERSIONS)})")
        return value


class Rate(BaseModel):
    """One rate: ``k`` of ``n`` with its exact (Clopper-Pearson) 95% interval; ``rate`` is None when n = 0."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(ge=0)
    n: int = Field(ge=0)
    rate: float | None
    ci95: tuple[float, float]


class Output(Versioned):
    """Base of every output file backtest writes (RUN.json, metrics.json, compare.json, GRADE.json, ...):
    a known ``schema_version``, typed fields. A record whose fields are all typed refuses unknown ones
    (``extra="forbid"`` on the model: the run folder's records, :mod:`backtest.core.runs`, and
    ``contamination.json``), so a misspelt key stops the write; the others still keep fields their writers add
    (extra allowed) until those are typed too (``control.json``'s writers add several)."""

    model_config = ConfigDict(extra="allow")

    def updated(self, **changes: Any) -> Self:
        """This record with ``changes`` applied, every field checked as on reading (a mistyped value, or on a
        record that refuses unknown fields a misspelt name, is a ValidationError naming it); the fields it had
        are kept as they were, so it is written to the same bytes but for the change. The one way a record
        is changed (pydantic's ``model_copy(update=...)`` checks nothing)."""
        return self.model_validate({**self.model_dump(exclude_unset=True), **changes})


V = TypeVar("V", bound=Versioned)


def read_output(model: type[V], path: Path | str) -> V:
    """An output file read as its model: BadInput naming the file when it is not one, or carries a
    schema_version this build does not read."""
    from backtest.core.fileio import read_json

    parsed: V = parse_record(model, read_json(Path(path)), str(path))
    return parsed


def output_dict(output: BaseModel) -> dict[str, Any]:
    """An output model (or a block of one) as the JSON object it is written as: the fields it was given or set,
    no defaults added (a file read and written again is the same bytes)."""
    return output.model_dump(mode="json", exclude_unset=True)


def output_bytes(output: BaseModel) -> bytes:
    """An output model as the bytes backtest writes it (:func:`output_dict` as
    :func:`~backtest.core.fileio.write_json` writes it: indented, key-sorted JSON and a newline)."""
    import json

    return (json.dumps(output_dict(output), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def write_output(path: Path | str, model: type[Versioned], data: dict[str, Any] | Versioned) -> Path:
    """Check ``data`` (a dict or a model) against its output model, then write it (atomic JSON, as
    :func:`~backtest.core.fileio.write_json`)."""
    from backtest.core.fileio import write_json

    raw = output_dict(data) if isinstance(data, Versioned) else data
    parse_record(model, raw, f"{path} (as written)")
    return write_json(Path(path), raw)


# --------------------------------------------------------------------------- corpora


class CorpusRecord(BaseModel):
    """One paper. ``id`` is source-native (arXiv id, ADS bibcode, OpenAlex id)."""

    model_config = ConfigDict(extra="forbid")

    id: StrictStr = Field(min_length=1)
    title: StrictStr
    abstract: StrictStr
    published: dt.date
    categories: list[str] = Field(default_factory=list)
    authors: list[str] = Field(default_factory=list)
    doi: str | None = None
    references: list[str] | None = None
    citation_count: int | None = None
    citation_count_as_of: dt.date | None = None
    source: StrictStr

    _utc_day = field_validator("published", "citation_count_as_of", mode="before")(
        classmethod(lambda cls, v: utc_day(v))
    )

    def content(self) -> dict[str, Any]:
        """The record's content fields as JSON-ready data (absent optionals omitted)."""
        return self.model_dump(mode="json", exclude_none=True)

    def canonical_line(self) -> str:
        """The canonical JSON line stored in ``records.jsonl``; its sha256 is the record hash."""
        return canonical_json(self.content())

    def sha256(self) -> str:
        """sha256 of the canonical JSON of the content fields."""
        return sha256_text(self.canonical_line())


class Window(BaseModel):
    """An inclusive date window."""

    model_config = ConfigDict(extra="forbid")

    start: dt.date
    end: dt.date

    def contains(self, day: dt.date) -> bool:
        """True when ``day`` lies in the window (inclusive, compared by day)."""
        return self.start <= day <= self.end


class CorpusManifest(Versioned):
    """The sealed description of a built corpus (``manifests/<corpus_id>.json``)."""

    model_config = ConfigDict(extra="forbid")

    corpus_id: str
    role: Literal["past", "future"]
    window: Window
    source: dict[str, Any]
    rules: dict[str, Any]
    counts: dict[str, int]
    n_records: int
    index_sha256: str
    records_sha256: str
    seal: str = ""

    _safe_id = safe_name_validator("corpus_id", "corpus id")


# --------------------------------------------------------------------------- instances


class CorpusRef(BaseModel):
    """A reference from an instance to a sealed corpus manifest."""

    model_config = ConfigDict(extra="forbid")

    corpus_id: str
    seal: str
    window: Window


class RetrievalSettings(BaseModel):
    """How the scorer retrieves from the future corpus."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["dense", "bm25", "hybrid"] = "dense"
    model: str = "all-MiniLM-L6-v2"
    k: int = Field(default=8, ge=1, le=100)
    text_fields: list[str] = Field(default_factory=lambda: ["title", "abstract"])
    max_chars: int = Field(default=1200, ge=50)


class JudgeSettings(BaseModel):
    """Which judge scores the instance: a config file and its sha256 (``offline`` needs none)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "offline"
    config: str | None = None
    config_sha256: str | None = None


class Instance(Versioned):
    """A sealed benchmark instance: cutoff + past and future corpora + scoring settings."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    cutoff: dt.date
    domain: str = ""
    past: CorpusRef
    future: CorpusRef | None
    future_declaration: dict[str, Any] | None = None
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    seal: str = ""

    _safe_id = safe_name_validator("instance_id", "instance id")


# --------------------------------------------------------------------------- submissions


class Question(BaseModel):
    """One frozen question (a line of ``questions.jsonl``). Unknown fields are kept."""

    model_config = ConfigDict(extra="allow")

    question_id: StrictStr = Field(min_length=1, max_length=200)
    question: StrictStr
    domain: StrictStr
    cutoff_date: dt.date
    generated_at: StrictStr
    generation_system: StrictStr
    source_evidence_ids: list[StrictStr] = Field(min_length=1)
    rank: StrictInt
    frozen: StrictBool
    sub_questions: list[StrictStr] | None = None
    objects: list[StrictStr] | None = None
    signal_type: StrictStr | None = None
    premise: StrictStr | None = None
    literature_gap: StrictStr | None = None
    hypothesis: StrictStr | None = None
    minimal_test: StrictStr | None = None
    decisive_metric: StrictStr | None = None
    supporting_result: StrictStr | None = None
    falsifying_result: StrictStr | None = None

    _safe_id = safe_name_validator("question_id", "question id")

    @field_validator("cutoff_date", mode="before")
    @classmethod
    def _iso_day(cls, value: Any) -> Any:
        return _strict_day(value)

    @field_validator("generated_at")
    @classmethod
    def _parseable_time(cls, value: str) -> str:
        parse_timestamp(value)
        return value

    def generated_at_utc(self) -> dt.datetime:
        """``generated_at`` as an aware UTC datetime (a bare date means its start)."""
        return parse_timestamp(self.generated_at)


def parse_timestamp(value: str) -> dt.datetime:
    """Parse an ISO date or datetime; naive values are taken as UTC."""
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            return dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc)
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not an ISO date or datetime") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


class LLMComponent(BaseModel):
    """An LLM used by a generator: which model, for what, and its stated training cutoff."""

    model_config = ConfigDict(extra="allow")

    model: StrictStr = Field(min_length=1)
    role: StrictStr = Field(min_length=1)
    training_cutoff: StrictStr | None = None


class SubmissionMetadata(BaseModel):
    """``metadata.json`` of a submission. ``llm_components`` may be our list form or the
    reference release's free-form mapping; both are kept as written."""

    model_config = ConfigDict(extra="allow")

    system_name: StrictStr
    description: StrictStr
    repository: StrictStr | None = None
    cutoff_date: dt.date
    domain: StrictStr
    n_questions: StrictInt = Field(ge=0)

    @field_validator("cutoff_date", mode="before")
    @classmethod
    def _iso_day(cls, value: Any) -> Any:
        return _strict_day(value)

    frozen: StrictBool
    llm_components: list[LLMComponent] | dict[str, Any] | None = None

    _safe_name = safe_name_validator("system_name", "system_name")

    def declares_llm(self) -> bool:
        """True when ``llm_components`` names at least one component."""
        return bool(self.llm_components)


# --------------------------------------------------------------------------- freezing


class GateResult(BaseModel):
    """The outcome of one freeze gate. ``skipped`` always carries a reason."""

    model_config = ConfigDict(extra="forbid")

    name: str
    status: Literal["passed", "failed", "skipped", "warned"]
    reason: str = ""
    details: list[dict[str, Any]] = Field(default_factory=list)


class FrozenSet(Versioned):
    """``FROZEN.json``: what was sealed, against which instance, after which gates."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    instance_seal: str
    system: str
    version: int
    frozen_at: str
    files: dict[str, str]
    n_questions: int
    gates: list[GateResult]
    settings: dict[str, Any] = Field(default_factory=dict)
    seal: str = ""


class LedgerEntry(Versioned):
    """One line of ``frozen/LEDGER.jsonl``; ``hash`` chains it to ``prev_hash``."""

    model_config = ConfigDict(extra="forbid")

    seq: int
    kind: str
    instance_id: str
    system: str
    version: int
    path: str
    frozen_seal: str
    frozen_at: str
    prev_hash: str
    hash: str = ""


# --------------------------------------------------------------------------- scoring


class RetrievedDocument(BaseModel):
    """One ranked document with the exact text the judge is shown."""

    model_config = ConfigDict(extra="allow")

    rank: int
    id: str
    score: float
    published: dt.date | None = None
    title: str = ""
    abstract: str = ""


class Retrieval(Versioned):
    """Retrieval for one question from the future corpus."""

    model_config = ConfigDict(extra="allow")

    question_id: str
    retriever: dict[str, Any]
    corpus_id: str
    corpus_seal: str
    k: int
    documents: list[RetrievedDocument]
    top1_similarity: float | None


class EvidenceItem(BaseModel):
    """A cited document and why it is relevant."""

    model_config = ConfigDict(extra="allow")

    id: str
    relevance: str = ""


class JudgeInfo(BaseModel):
    """Which judge produced a label, pinned by the hashes of its prompt and config."""

    model_config = ConfigDict(extra="allow")

    name: str
    model: str | None = None
    protocol: str | None = None
    prompt_sha256: str | None = None
    config_sha256: str | None = None


class Judgment(Versioned):
    """The label for one question. Labels are plain strings so that unknown ones can be
    flagged in ``needs_review`` instead of being rejected or mapped silently."""

    model_config = ConfigDict(extra="allow")

    question_id: str
    outcome: str
    premise_status: str
    evidence: list[EvidenceItem] = Field(default_factory=list)
    supporting_ids: list[str] = Field(default_factory=list)
    rationale: str = ""
    judge: JudgeInfo
    provenance: Literal["judge", "adjudicated", "human"] = "judge"
    needs_review: list[str] = Field(default_factory=list)
    tokens: dict[str, int] = Field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True for a question the judge gave no usable answer to (the extra field ``judge_failed``)."""
        return bool((self.model_extra or {}).get("judge_failed"))

    @model_validator(mode="after")
    def _cites_as_the_rules_say(self) -> Judgment:
        """A judge's engaged outcome cites a document and ``not_addressed`` cites none (the constraint rules,
        :mod:`backtest.judge.constraints`), unless the judgment is flagged (``needs_review``): the constraints
        never write such a judgment unflagged, so a ``judgments.jsonl`` rewritten to ``answered`` is refused
        wherever it is read, not counted. Readers' labels (``human``, ``adjudicated``) are checked where they
        are imported."""
        if self.provenance != "judge" or self.needs_review:
            return self
        if self.outcome in ENGAGED_OUTCOMES and not self.evidence:
            raise ValueError(
                f"outcome {self.outcome!r} cites no document and is not flagged (needs_review): a judge's engaged "
                "outcome cites what it was shown (has judgments.jsonl been edited?)"
            )
        if self.outcome == "not_addressed" and self.evidence:
            raise ValueError("outcome 'not_addressed' cites documents and is not flagged (needs_review)")
        return self


SCHEMAS: dict[str, type[BaseModel]] = {
    "question": Question,
    "metadata": SubmissionMetadata,
    "judgment": Judgment,
    "retrieval": Retrieval,
    "corpus-record": CorpusRecord,
    "manifest": CorpusManifest,
    "instance": Instance,
    "frozen": FrozenSet,
}


def describe_validation_error(exc: ValidationError) -> str:
    """Turn a pydantic error into one short line: ``field: message; field: message``."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "record"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def parse_record(model: type[BaseModel], data: Any, where: str) -> Any:
    """Validate ``data`` as ``model``; raise BadInput naming ``where`` (file:line) on failure."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"{where}: {describe_validation_error(exc)}") from None
