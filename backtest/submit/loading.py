"""Loading a submission, and what the gates of :mod:`backtest.submit.gates` are given.

:func:`load_submission` is the schema gate: it reads ``questions.jsonl`` and ``metadata.json``, keeping their
exact bytes, and anything malformed (bad JSON, a missing or mistyped field, non-UTF-8 bytes, a huge line, a
duplicate JSON key, an unsafe ``system_name``, a linked file) raises :class:`BadInput` (exit 2) naming the file
and line, so the gates see well-formed records only. :class:`FreezeSettings` holds everything that changes a
freeze's gates; :class:`GateContext` is what a gate may look at (the submission, the instance, the workspace, the
moment of freezing, the past corpus opened once).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput
from backtest.core.records import Instance, Question, SubmissionMetadata, parse_record
from backtest.text.clarity import CLARITY_THRESHOLD, CLARITY_VERSION

QUESTIONS_FILE = "questions.jsonl"
METADATA_FILE = "metadata.json"
MAX_QUESTIONS_BYTES = 64 << 20
MAX_LINE_BYTES = 256 << 10
MAX_METADATA_BYTES = 1 << 20
MAX_QUESTIONS = 5000  # a benchmark set is 125; the near-duplicate screen compares every pair
DEDUP_MODES = ("report", "fail", "drop-later")
CLARITY_MODES = ("report", "fail")

# --------------------------------------------------------------------------- loading (the schema gate)


@dataclass
class Submission:
    """A parsed submission folder, keeping the exact bytes of both files and of each line."""

    folder: Path
    questions: list[Question]
    lines: list[int]
    raw_lines: list[bytes]
    metadata: SubmissionMetadata
    metadata_data: dict[str, Any]
    questions_bytes: bytes
    metadata_bytes: bytes


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def strict_json(text: str) -> Any:
    """``json.loads`` that rejects duplicate keys, NaN/Infinity and lone surrogates (ValueError)."""
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    _reject_surrogates(obj)
    return obj


_SURROGATE = re.compile("[\ud800-\udfff]")


def _reject_surrogates(obj: Any) -> None:
    """ValueError when any string (key or value) holds a lone surrogate: ``\\udc80`` decodes to one, and it is
    not a Unicode scalar value (it cannot be written as UTF-8, so such a question could never be scored)."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                raise ValueError(
                    f"text holds a lone surrogate (U+{ord(found.group(0)):04X}), which is not valid Unicode"
                )
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _read_regular(path: Path, limit: int) -> bytes:
    if path.is_symlink():
        raise BadInput(f"{path}: must be a regular file, not a link")
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if not path.is_file():
        raise BadInput(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > limit:
        raise BadInput(f"{path}: {size} bytes, over the {limit}-byte limit")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        raise BadInput(f"{path}:{lineno}: not valid UTF-8") from None


def parse_questions(data: bytes, path: Path) -> tuple[list[Question], list[int], list[bytes]]:
    """Parse questions.jsonl bytes into (questions, line numbers, raw line bytes); BadInput on any flaw."""
    _decode(data, path)
    if data.startswith(b"\xef\xbb\xbf"):
        raise BadInput(f"{path}:1: starts with a byte-order mark; save as UTF-8 without BOM")
    questions: list[Question] = []
    lines: list[int] = []
    raws: list[bytes] = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"
        if len(raw) > MAX_LINE_BYTES:
            raise BadInput(f"{where}: line of {len(raw)} bytes, over the {MAX_LINE_BYTES}-byte limit")
        try:
            obj = strict_json(raw.decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise BadInput(f"{where}: bad JSON ({exc.msg})") from None
        except ValueError as exc:
            raise BadInput(f"{where}: bad JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise BadInput(f"{where}: expected a JSON object, got {type(obj).__name__}")
        if len(questions) >= MAX_QUESTIONS:
            raise BadInput(
                f"{path}: more than {MAX_QUESTIONS} questions; a submission holds at most {MAX_QUESTIONS} "
                f"(split larger sets into several systems)"
            )
        questions.append(parse_record(Question, obj, where))
        lines.append(lineno)
        raws.append(raw + b"\n")
    if not questions:
        raise BadInput(f"{path}: no questions (empty file)")
    return questions, lines, raws


def parse_metadata(data: bytes, path: Path) -> tuple[SubmissionMetadata, dict[str, Any]]:
    """Parse metadata.json bytes; BadInput naming the file on any flaw."""
    text = _decode(data, path)
    if not text.strip():
        raise BadInput(f"{path}: empty file")
    try:
        obj = strict_json(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}:{exc.lineno}: bad JSON ({exc.msg})") from None
    except ValueError as exc:
        raise BadInput(f"{path}: bad JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise BadInput(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return parse_record(SubmissionMetadata, obj, str(path)), obj


def load_submission(folder: str | Path) -> Submission:
    """Read and validate ``folder/questions.jsonl`` and ``folder/metadata.json`` (BadInput on any flaw)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(f"{folder}: not a submission folder (expected {QUESTIONS_FILE} and {METADATA_FILE})")
    q_path, m_path = folder / QUESTIONS_FILE, folder / METADATA_FILE
    q_bytes = _read_regular(q_path, MAX_QUESTIONS_BYTES)
    m_bytes = _read_regular(m_path, MAX_METADATA_BYTES)
    questions, lines, raws = parse_questions(q_bytes, q_path)
    metadata, data = parse_metadata(m_bytes, m_path)
    return Submission(folder, questions, lines, raws, metadata, data, q_bytes, m_bytes)


# --------------------------------------------------------------------------- gate context


@dataclass
class FreezeSettings:
    """Everything that changes a freeze's gates; recorded in FROZEN.json."""

    dedup: str = "report"
    tfidf_threshold: float = 0.25
    embedding_threshold: float = 0.77
    embedding_model: str = "all-MiniLM-L6-v2"
    clarity: str = "report"
    clarity_threshold: float = CLARITY_THRESHOLD
    clarity_version: str = CLARITY_VERSION
    max_question_chars: int = 600
    restate_jaccard: float = 0.8
    strict: bool = False

    def check(self) -> "FreezeSettings":
        """Raise BadInput on an impossible setting."""
        if self.dedup not in DEDUP_MODES:
            raise BadInput(f"--dedup {self.dedup!r}: choose one of {', '.join(DEDUP_MODES)}")
        if self.clarity not in CLARITY_MODES:
            raise BadInput(f"--clarity {self.clarity!r}: choose one of {', '.join(CLARITY_MODES)}")
        if self.clarity_version != CLARITY_VERSION:
            raise BadInput(
                f"clarity score version {self.clarity_version!r} is not this backtest's ({CLARITY_VERSION}); "
                "the score of an older version cannot be recomputed"
            )
        for name in ("tfidf_threshold", "embedding_threshold", "restate_jaccard", "clarity_threshold"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise BadInput(f"{name.replace('_', '-')} {value} must lie in [0, 1]")
        if self.max_question_chars < 1:
            raise BadInput("max-question-chars must be positive")
        return self


@dataclass
class GateContext:
    """What a gate may look at: the submission, the instance, the workspace and the moment of freezing."""

    submission: Submission
    instance: Instance
    ws: Any
    now: dt.datetime
    settings: FreezeSettings
    dropped: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)

    def past_corpus(self):
        """The instance's past corpus (opened once), or raise BadInput/CheckFailed if unavailable."""
        if "past" not in self.cache:
            from backtest.corpus.instance import open_past_corpus

            self.cache["past"] = open_past_corpus(self.instance, self.ws)
        return self.cache["past"]

    def where(self, index: int) -> str:
        """``question <id> (line N)`` for messages."""
        return f"question {self.submission.questions[index].question_id} (line {self.submission.lines[index]})"
