"""The append-only ledger ``frozen/LEDGER.jsonl``: a hash chain of freeze events.

Each line is a :class:`~backtest.core.records.LedgerEntry` in canonical JSON. ``hash`` is
the sha256 of the canonical JSON of the entry without ``hash``; ``prev_hash`` is the
previous line's ``hash`` (64 zeros on the first line); ``seq`` counts lines from 0.
A deleted, inserted, edited or reordered line breaks the chain at that point.

Appending (:func:`append_entry`) takes an exclusive ``flock`` on ``.LEDGER.lock``
beside the ledger, re-reads and verifies the whole chain, then writes the old bytes
plus the new line to a temp file, fsyncs it and ``os.replace``-s it over the ledger.
Why not a plain ``O_APPEND`` write: a crash in the middle of an append can leave a
torn last line that breaks the chain for everyone after; the rename is atomic, so a
reader sees the old ledger or the new one, never half a line. The lock serialises
concurrent freezes so that no append is lost between read and rename. The ledger is
small (one line per freeze), so rewriting it costs nothing that matters.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes
from backtest.core.records import LedgerEntry, describe_validation_error
from backtest.core.seal import canonical_json, sha256_json

GENESIS = "0" * 64
LOCK_NAME = ".LEDGER.lock"


def entry_hash(data: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a ledger entry without its ``hash`` field."""
    return sha256_json({k: v for k, v in data.items() if k != "hash"})


@contextlib.contextmanager
def ledger_lock(ledger: Path) -> Iterator[None]:
    """Hold an exclusive lock for writing ``ledger`` (and anything frozen with it)."""
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with open(ledger.parent / LOCK_NAME, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def read_ledger(ledger: Path) -> tuple[list[LedgerEntry], list[str]]:
    """Parse every line and check the chain; return ``(entries, problems)``.

    A missing ledger is an empty, intact ledger. Problems name the line:
    unreadable lines, a ``hash`` that does not match the line's content, a
    ``prev_hash`` that does not match the line before (deleted, inserted or
    reordered lines) and ``seq`` out of order.
    """
    ledger = Path(ledger)
    if not ledger.is_file():
        return [], []
    raw = ledger.read_bytes()
    problems: list[str] = []
    entries: list[LedgerEntry] = []
    if raw and not raw.endswith(b"\n"):
        problems.append(f"{ledger}: last line is not terminated (torn write?)")
    prev: str | None = GENESIS
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            if lineno <= raw.count(b"\n"):
                problems.append(f"{ledger}:{lineno}: blank line inside the ledger")
            continue
        where = f"{ledger}:{lineno}"
        try:
            data = json.loads(line.decode("utf-8"))
            entry = LedgerEntry.model_validate(data)
        except UnicodeDecodeError:
            problems.append(f"{where}: not valid UTF-8")
            prev = None
            continue
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: bad JSON ({exc.msg})")
            prev = None
            continue
        except ValidationError as exc:
            problems.append(f"{where}: not a ledger entry ({describe_validation_error(exc)})")
            prev = None
            continue
        if entry_hash(data) != entry.hash:
            problems.append(f"{where}: hash does not match the line's content (entry edited)")
        if prev is not None and entry.prev_hash != prev:
            problems.append(
                f"{where}: prev_hash does not match the previous line's hash "
                f"(a line was deleted, inserted or reordered before seq {entry.seq})"
            )
        if entry.seq != len(entries):
            problems.append(f"{where}: seq {entry.seq}, expected {len(entries)} (lines deleted or reordered)")
        entries.append(entry)
        prev = entry.hash
    return entries, problems


def append_entry(ledger: Path, fields: dict[str, Any], locked: bool = False) -> LedgerEntry:
    """Append one entry (``fields`` without seq/prev_hash/hash) after verifying the chain.

    Refuses (CheckFailed) to extend a broken chain. ``locked=True`` when the caller
    already holds :func:`ledger_lock`.
    """
    ledger = Path(ledger)
    with contextlib.nullcontext() if locked else ledger_lock(ledger):
        entries, problems = read_ledger(ledger)
        if problems:
            raise CheckFailed(f"ledger {ledger} is broken; refusing to append: {problems[0]}", problems)
        data = dict(fields)
        data.update(seq=len(entries), prev_hash=entries[-1].hash if entries else GENESIS, hash="")
        try:
            entry = LedgerEntry.model_validate(data)
        except ValidationError as exc:
            raise BadInput(f"ledger entry: {describe_validation_error(exc)}") from None
        payload = entry.model_dump(mode="json")
        payload["hash"] = entry_hash(payload)
        old = ledger.read_bytes() if ledger.is_file() else b""
        atomic_write_bytes(ledger, old + (canonical_json(payload) + "\n").encode("utf-8"))
        with contextlib.suppress(OSError):  # make the rename itself durable
            fd = os.open(ledger.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return LedgerEntry.model_validate(payload)


def find_entry(entries: list[LedgerEntry], path: str) -> LedgerEntry | None:
    """The last entry recorded for a frozen folder ``path`` (relative to the workspace root)."""
    for entry in reversed(entries):
        if entry.path == path:
            return entry
    return None
