"""``prospective verify``: a folder against its ``SHA256SUMS`` (ours or anyone's), then our commitment."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.core import sums
from backtest.core.errors import BadInput
from backtest.core.fileio import read_json
from backtest.core.records import FrozenSet, Instance, parse_record
from backtest.core.seal import compute_seal, sha256_file
from backtest.studies.prospective.merkle import sum_entries, sums_root
from backtest.studies.prospective.records import (
    COMMITMENT_FILE,
    GRADED_DIR,
    INSTANCE_FILE,
    NOT_COMMITTED,
    SUMS_FILE,
    Commitment,
    CommittedSystem,
    FutureDeclaration,
)


@dataclass
class VerifyResult:
    """What ``verify_folder`` found; ``ok`` when nothing changed, went missing or appeared."""

    folder: Path
    n_files: int = 0
    root: str = ""
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    commitment: Commitment | None = None

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.extra or self.problems)

    def failures(self) -> list[str]:
        """One line per failure, files first."""
        return (
            [f"changed: {p}" for p in self.changed]
            + [f"missing: {p}" for p in self.missing]
            + [f"extra: {p}" for p in self.extra]
            + self.problems
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "folder": str(self.folder),
            "ok": self.ok,
            "n_files": self.n_files,
            "root": self.root,
            "changed": self.changed,
            "missing": self.missing,
            "extra": self.extra,
            "problems": self.problems,
            "commitment": self.commitment.commitment_id if self.commitment else None,
        }


def _all_files(folder: Path, skip_graded: bool) -> list[str]:
    out = []
    for path in sorted(folder.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(folder).as_posix()
        if rel in NOT_COMMITTED and (rel == SUMS_FILE or skip_graded):
            continue
        if skip_graded and rel.split("/", 1)[0] == GRADED_DIR:
            continue
        out.append(rel)
    return out


def verify_folder(
    folder: str | Path,
    expect_root: str | None = None,
    ledger: str | Path | None = None,
    expect_committed: dt.date | None = None,
) -> VerifyResult:
    """Check a folder against its ``SHA256SUMS`` (ours or anyone's), then our commitment when present.

    Names every changed, missing and extra file. Extra files are any not listed, except
    ``SHA256SUMS`` itself and, in a commitment folder, ``COMMITMENT.json`` and ``graded/``.

    A folder rewritten and wholly re-sealed (a question changed, then FROZEN.json, SHA256SUMS and
    COMMITMENT.json recomputed) verifies against itself; two outside anchors catch it: ``expect_root``, the
    Merkle root published when the commitment was made, and ``ledger``, the append-only ``frozen/LEDGER.jsonl``
    that sealed each committed frozen set when it was frozen (every committed seal must be a line of it).
    With ``ledger`` (or ``expect_committed``) the folder must be a commitment: a deleted ``COMMITMENT.json``
    fails, it does not skip the check. ``COMMITMENT.json``'s ``committed_at`` lies outside the root: its day
    must be before the future window opens (inside the root) and, given ``expect_committed``, the day the
    publish line names (``committed YYYY-MM-DD``).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(f"{folder}: no such folder")
    if not (folder / SUMS_FILE).is_file():
        raise BadInput(f"{folder}: no {SUMS_FILE} file")
    result = VerifyResult(folder)
    try:
        entries = sum_entries(folder / SUMS_FILE)
    except BadInput as exc:  # a damaged SHA256SUMS is a failed verification, not a usage error
        result.problems.append(f"{SUMS_FILE} is damaged: {exc.message}")
        return result
    report = sums.verify_sums(folder, extra=False)
    result.changed, result.missing = list(report.changed), list(report.missing)
    is_commitment = (folder / COMMITMENT_FILE).is_file()
    listed = {path for _, path in entries}
    result.extra = [p for p in _all_files(folder, skip_graded=is_commitment) if p not in listed]
    result.n_files = len(entries)
    result.root = sums_root(entries)
    if is_commitment:
        result.problems += _verify_commitment(folder, result, expect_committed)
    if expect_root is not None and result.root != expect_root.strip().lower():
        result.problems.append(
            f"merkle root {result.root} is not the published root {expect_root.strip()}: the folder was rewritten "
            "after it was published"
        )
    if ledger is not None and result.commitment is not None:
        result.problems += _ledger_problems(result.commitment, Path(ledger))
    elif (ledger is not None or expect_committed is not None) and not is_commitment:
        result.problems.append(
            f"{COMMITMENT_FILE} is missing: the folder cannot be checked as a commitment (against the ledger or "
            "the published day); a commitment folder holds it, outside SHA256SUMS, so deleting it changes no root"
        )
    return result


def _ledger_problems(commitment: Commitment, ledger: Path) -> list[str]:
    """Committed frozen sets whose seal the ledger never recorded (one line each)."""
    from backtest.core.fileio import iter_jsonl

    if not ledger.is_file():
        raise BadInput(f"{ledger}: no such ledger")
    sealed = {row.get("frozen_seal") for _, row in iter_jsonl(ledger) if isinstance(row, dict)}
    return [
        f"{s.system}: frozen seal {s.frozen_seal[:16]}… is not in {ledger.name}: not the set that was frozen"
        for s in commitment.systems
        if s.frozen_seal not in sealed
    ]


def _verify_commitment(folder: Path, result: VerifyResult, expect_committed: dt.date | None) -> list[str]:
    try:
        return _commitment_problems(folder, result, expect_committed)
    except BadInput as exc:  # unreadable committed JSON: the commitment does not verify
        return [exc.message]


def _commitment_problems(folder: Path, result: VerifyResult, expect_committed: dt.date | None) -> list[str]:
    data = read_json(folder / COMMITMENT_FILE)
    if not isinstance(data, dict):
        return [f"{COMMITMENT_FILE}: not a JSON object"]
    try:
        commitment = parse_record(Commitment, data, str(folder / COMMITMENT_FILE))
    except BadInput as exc:
        return [exc.message]
    result.commitment = commitment
    problems = []
    if compute_seal(data) != commitment.seal:
        problems.append(f"{COMMITMENT_FILE}: seal does not match its contents")
    if commitment.root != result.root:
        problems.append(
            f"{COMMITMENT_FILE}: root {commitment.root[:16]}… "
            f"differs from the root of {SUMS_FILE} ({result.root[:16]}…)"
        )
    if sha256_file(folder / SUMS_FILE) != commitment.sums_sha256:
        problems.append(f"{SUMS_FILE}: sha256 differs from the one in {COMMITMENT_FILE}")
    if commitment.n_files != result.n_files:
        problems.append(f"{SUMS_FILE}: lists {result.n_files} files, {COMMITMENT_FILE} says {commitment.n_files}")
    instance_file = folder / INSTANCE_FILE
    if not instance_file.is_file():
        return problems + [f"{INSTANCE_FILE}: missing from the commitment"]
    raw = read_json(instance_file)
    try:
        instance = parse_record(Instance, raw, str(instance_file))
    except BadInput as exc:
        return problems + [exc.message]
    if compute_seal(raw) != instance.seal:
        problems.append(f"{INSTANCE_FILE}: seal does not match its contents")
    mirrored = {
        "instance_seal": (commitment.instance_seal, instance.seal),
        "cutoff": (commitment.cutoff, instance.cutoff),
        "future_declaration": (commitment.future_declaration, instance.future_declaration),
        "retrieval": (commitment.retrieval, instance.retrieval),
        "judge": (commitment.judge, instance.judge),
        "past corpus seal": (commitment.past_corpus.get("seal"), instance.past.seal),
    }
    for name, (ours, theirs) in mirrored.items():
        if ours != theirs:
            problems.append(f"{COMMITMENT_FILE}: {name} differs from the committed {INSTANCE_FILE}")
    try:
        declaration = parse_record(FutureDeclaration, instance.future_declaration or {}, f"{instance_file}: future")
    except BadInput as exc:  # a damaged declaration inside a parsable instance: the commitment does not verify
        return problems + [exc.message]
    if declaration.window != commitment.window or declaration.schedule != commitment.schedule:
        problems.append(f"{COMMITMENT_FILE}: window or schedule differs from the committed {INSTANCE_FILE}")
    for system in commitment.systems:
        problems += _verify_committed_frozen(folder / system.path, system, instance.seal)
    return problems + _committed_at_problems(commitment.committed_at, declaration.window.start, expect_committed)


def _committed_at_problems(committed_at: str, window_start: dt.date, expect_day: dt.date | None) -> list[str]:
    """``committed_at`` lies outside the Merkle root: its day must be the published one (``expect_day``, when
    given) and before the future window opens (the window is inside the root, in instance.json)."""
    try:
        day = dt.date.fromisoformat(committed_at[:10])
    except (TypeError, ValueError):
        return [f"{COMMITMENT_FILE}: committed_at {committed_at!r} does not start with a day (YYYY-MM-DD)"]
    problems = []
    if day >= window_start:
        problems.append(
            f"{COMMITMENT_FILE}: committed_at {committed_at} is not before the future window opens ({window_start})"
        )
    if expect_day is not None and day != expect_day:
        problems.append(f"{COMMITMENT_FILE}: committed_at {committed_at} is not the published day {expect_day}")
    return problems


def _verify_committed_frozen(path: Path, system: CommittedSystem, instance_seal: str) -> list[str]:
    frozen_file = path / "FROZEN.json"
    if not frozen_file.is_file():
        return [f"{system.path}/FROZEN.json: missing"]
    raw = read_json(frozen_file)
    try:
        frozen = parse_record(FrozenSet, raw, str(frozen_file))
    except BadInput as exc:
        return [exc.message]
    problems = []
    if compute_seal(raw) != frozen.seal or frozen.seal != system.frozen_seal:
        problems.append(f"{system.path}/FROZEN.json: seal does not verify or differs from the commitment")
    if frozen.instance_seal != instance_seal:
        problems.append(f"{system.path}: frozen against another instance")
    for name, digest in frozen.files.items():
        target = path / name
        if not target.is_file() or sha256_file(target) != digest:
            problems.append(f"{system.path}/{name}: differs from its FROZEN.json")
    return problems
