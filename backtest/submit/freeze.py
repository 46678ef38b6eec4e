"""Freeze a submission, load a frozen set, and verify frozen sets and the ledger.

Freezing runs every gate of :mod:`backtest.submit.gates`; when none fails it writes
``frozen/<instance>/<system>/v<N>/`` (``questions.jsonl`` and ``metadata.json``
copied byte for byte, ``FROZEN.json`` sealed) and appends a hash-chained line to
``frozen/LEDGER.jsonl``. A second freeze of the same system gets ``v<N+1>``;
nothing is ever overwritten. When a gate fails or the input is malformed, nothing
under ``frozen/`` is created or touched.

:func:`freeze_once` is the one reuse rule (``backtest freeze`` without
``--new-version``, and every study): when an intact frozen set of the same system on
the same instance was sealed from byte-identical ``questions.jsonl`` and
``metadata.json`` under the same gate settings, that set is returned and nothing is
written; otherwise it freezes as :func:`freeze_submission` does.

The version folder is assembled in a hidden temp folder and renamed into place
under the ledger lock; if the ledger append then fails, the folder is removed, so
a frozen set exists exactly when its ledger line does.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from backtest import __version__
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes
from backtest.core.records import FrozenSet, Instance, Question, SubmissionMetadata, describe_validation_error
from backtest.core.seal import compute_seal, sha256_bytes, sha256_file, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.instance import load_instance
from backtest.submit.gates import blocking, run_gates
from backtest.submit.ledger import append_entry, find_entry, ledger_lock, read_ledger
from backtest.submit.loading import (
    METADATA_FILE,
    QUESTIONS_FILE,
    FreezeSettings,
    GateContext,
    Submission,
    load_submission,
    parse_metadata,
    parse_questions,
)

FROZEN_FILE = "FROZEN.json"
FROZEN_FILES = (QUESTIONS_FILE, METADATA_FILE)
_VERSION_DIR = re.compile(r"^v([1-9][0-9]*)$")


@dataclass
class FrozenBundle:
    """A loaded frozen set: its FROZEN.json record, questions, metadata and folder."""

    frozen: FrozenSet
    questions: list[Question]
    metadata: SubmissionMetadata
    path: Path


def utc_now() -> dt.datetime:
    """The current moment, timezone-aware UTC."""
    return dt.datetime.now(dt.timezone.utc)


def format_utc(moment: dt.datetime) -> str:
    """``2026-11-29T23:01:02.123456Z``."""
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def render_frozen(data: dict[str, Any]) -> bytes:
    """The exact bytes of FROZEN.json for ``data`` (indented, sorted keys, trailing newline)."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def next_version(system_dir: Path) -> int:
    """One more than the highest existing ``v<N>`` folder (1 when none)."""
    versions = (
        [int(m.group(1)) for p in system_dir.iterdir() if (m := _VERSION_DIR.fullmatch(p.name))]
        if system_dir.is_dir()
        else []
    )
    return max(versions, default=0) + 1


def check_gates(
    submission_dir: str | Path,
    instance_id: str,
    ws: Workspace,
    settings: FreezeSettings | None = None,
    now: dt.datetime | None = None,
    timings: dict[str, dict[str, float]] | None = None,
) -> tuple[GateContext, list]:
    """Load the submission and run every gate without writing anything; return (context, results)."""
    settings = (settings or FreezeSettings()).check()
    instance = load_instance(instance_id, ws)
    submission = load_submission(submission_dir)
    ctx = GateContext(submission=submission, instance=instance, ws=ws, now=now or utc_now(), settings=settings)
    return ctx, run_gates(ctx, timings)


def _refuse(results) -> None:
    lines = []
    for result in results:
        problems = [d["problem"] for d in result.details if "problem" in d] or [result.reason]
        lines += [f"gate {result.name} {result.status}: {p}" for p in problems]
    raise CheckFailed(lines[0], lines)


def freeze_submission(
    submission_dir: str | Path,
    instance_id: str,
    ws: Workspace,
    dedup: str = "report",
    settings: FreezeSettings | None = None,
    now: dt.datetime | None = None,
    timings: dict[str, dict[str, float]] | None = None,
) -> Path:
    """Gate and freeze a submission; return the new ``frozen/<instance>/<system>/v<N>`` folder.

    Always seals a new version (``backtest freeze --new-version``); :func:`freeze_once`
    reuses an identical frozen set instead. Raises BadInput (malformed input, exit 2) or
    CheckFailed (a failed gate, exit 1) with a line naming the question and id; nothing
    is written in either case.
    """
    return _freeze(submission_dir, instance_id, ws, settings or FreezeSettings(dedup=dedup), now, timings, False)[0]


def freeze_once(
    submission: str | Path, instance: str, ws: Workspace, dedup: str = "report", settings: FreezeSettings | None = None
) -> tuple[Path, bool]:
    """Freeze a submission folder on an instance (by id) unless an identical frozen set exists; ``(folder, reused)``.

    Identical (:func:`find_frozen_copy`): an intact set of the same system on the same
    instance, sealed from byte-identical ``questions.jsonl`` and ``metadata.json`` under
    the same gate settings. A reused set is returned as it is: no gate runs, nothing is
    written, no ledger line. Malformed input is refused exactly as by a freeze.
    """
    return _freeze(submission, instance, ws, settings or FreezeSettings(dedup=dedup), None, None, True)


def _freeze(
    submission_dir: str | Path,
    instance_id: str,
    ws: Workspace,
    settings: FreezeSettings,
    now: dt.datetime | None,
    timings: dict[str, dict[str, float]] | None,
    reuse: bool,
) -> tuple[Path, bool]:
    if reuse:  # before the gates: a rerun of identical content costs no gate (and no embedding)
        settings.check()
        instance = load_instance(instance_id, ws)
        existing = find_frozen_copy(ws, instance.instance_id, load_submission(submission_dir), settings)
        if existing is not None:
            return existing, True
    ctx, results = check_gates(submission_dir, instance_id, ws, settings, now, timings)
    refused = blocking(results, strict=settings.strict)
    if refused:
        _refuse(refused)
    sub = ctx.submission
    dropped = set(ctx.dropped)
    keep = [i for i, q in enumerate(sub.questions) if q.question_id not in dropped]
    questions_bytes = sub.questions_bytes if not dropped else b"".join(sub.raw_lines[i] for i in keep)
    files = {QUESTIONS_FILE: questions_bytes, METADATA_FILE: sub.metadata_bytes}
    system = sub.metadata.system_name
    record_settings = asdict(settings)
    record_settings.update(
        backtest_version=__version__,
        submission={
            "folder": sub.folder.name,
            "questions_sha256": sha256_bytes(sub.questions_bytes),
            "metadata_sha256": sha256_bytes(sub.metadata_bytes),
            "n_questions": len(sub.questions),
        },
        dropped=sorted(dropped),
    )
    system_dir = ws.frozen / ctx.instance.instance_id / system
    with ledger_lock(ws.ledger):
        _, ledger_problems = read_ledger(ws.ledger)
        if ledger_problems:
            raise CheckFailed(
                f"ledger {ws.ledger} is broken; refusing to freeze: {ledger_problems[0]}", ledger_problems
            )
        if reuse:  # sealed by a concurrent freeze of the same content while the gates ran
            existing = find_frozen_copy(ws, ctx.instance.instance_id, sub, settings)
            if existing is not None:
                return existing, True
        version = next_version(system_dir)
        frozen = FrozenSet(
            instance_id=ctx.instance.instance_id,
            instance_seal=ctx.instance.seal,
            system=system,
            version=version,
            frozen_at=format_utc(ctx.now),
            files={name: sha256_bytes(data) for name, data in files.items()},
            n_questions=len(keep),
            gates=results,
            settings=record_settings,
        )
        sealed = with_seal(frozen.model_dump(mode="json"))
        system_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".v{version}.", suffix=".tmp", dir=system_dir))
        final = system_dir / f"v{version}"
        try:
            for name, data in files.items():
                atomic_write_bytes(tmp / name, data)
            atomic_write_bytes(tmp / FROZEN_FILE, render_frozen(sealed))
            os.rename(tmp, final)  # fails rather than overwrite: final does not exist under the lock
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            append_entry(
                ws.ledger,
                {
                    "kind": "freeze",
                    "instance_id": ctx.instance.instance_id,
                    "system": system,
                    "version": version,
                    "path": final.relative_to(ws.root).as_posix(),
                    "frozen_seal": sealed["seal"],
                    "frozen_at": sealed["frozen_at"],
                },
                locked=True,
            )
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
    return final, False


def find_frozen_copy(ws: Workspace, instance_id: str, submission: Submission, settings: FreezeSettings) -> Path | None:
    """The intact frozen set (seal, file hashes and ledger line check out) of the submission's system on
    ``instance_id`` sealed from exactly this submission's bytes (``questions.jsonl`` and ``metadata.json``)
    under the same gate settings, if any; the first in version order."""
    system = submission.metadata.system_name
    wanted = {
        "questions_sha256": sha256_bytes(submission.questions_bytes),
        "metadata_sha256": sha256_bytes(submission.metadata_bytes),
    }
    gate_settings = asdict(settings)
    for folder in sorted(frozen_sets(ws), key=lambda p: (str(p.parent), int(p.name[1:]))):
        if folder.parent.name != system or folder.parent.parent.name != instance_id:
            continue
        try:
            frozen = _read_frozen_record(folder)[1]
        except BadInput:
            continue
        source = frozen.settings.get("submission")
        if not isinstance(source, dict) or {k: source.get(k) for k in wanted} != wanted:
            continue
        if {f.name: frozen.settings.get(f.name) for f in fields(FreezeSettings)} != gate_settings:
            continue
        if is_frozen_and_intact(folder, ws)[0]:
            return folder
    return None


# --------------------------------------------------------------------------- loading and verifying


def _read_frozen_record(path: Path) -> tuple[dict[str, Any], FrozenSet]:
    target = path / FROZEN_FILE
    if not target.is_file():
        raise BadInput(f"{target}: no such file (not a frozen set)")
    try:
        data = json.loads(target.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{target}: unreadable ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{target}: expected a JSON object")
    try:
        return data, FrozenSet.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"{target}: not a frozen-set record ({describe_validation_error(exc)})") from None


def load_frozen(path: str | Path, verify: bool = True) -> FrozenBundle:
    """Load a frozen set folder. With ``verify`` (default) its seal and file hashes must match
    (CheckFailed naming the file otherwise); use :func:`is_frozen_and_intact` for the ledger too."""
    path = Path(path)
    data, frozen = _read_frozen_record(path)
    if verify:
        problems = _file_problems(path, data, frozen)
        if problems:
            raise CheckFailed(problems[0], problems)
    q_path, m_path = path / QUESTIONS_FILE, path / METADATA_FILE
    for p in (q_path, m_path):
        if not p.is_file():
            raise BadInput(f"{p}: no such file")
    questions, _, _ = parse_questions(q_path.read_bytes(), q_path)
    metadata, _ = parse_metadata(m_path.read_bytes(), m_path)
    return FrozenBundle(frozen=frozen, questions=questions, metadata=metadata, path=path)


def _file_problems(path: Path, data: dict[str, Any], frozen: FrozenSet) -> list[str]:
    problems = []
    target = path / FROZEN_FILE
    if compute_seal(data) != frozen.seal:
        problems.append(f"{target}: seal does not match its contents")
    if target.read_bytes() != render_frozen(data):
        problems.append(f"{target}: bytes differ from the canonical rendering of its contents (edited)")
    if set(frozen.files) != set(FROZEN_FILES):
        problems.append(f"{target}: lists {sorted(frozen.files)}, expected {list(FROZEN_FILES)}")
    for name, digest in sorted(frozen.files.items()):
        file = path / name
        if not file.is_file() or file.is_symlink():
            problems.append(f"{file}: missing")
        elif sha256_file(file) != digest:
            problems.append(f"{file}: sha256 differs from {FROZEN_FILE}")
    extra = sorted(p.name for p in path.iterdir() if p.name not in set(frozen.files) | {FROZEN_FILE})
    problems += [f"{path / name}: extra file in a frozen set" for name in extra]
    return problems


def symlink_in(path: str | Path, ws: Workspace) -> Path | None:
    """The first symbolic link among the components of ``path`` below the workspace root, or None."""
    absolute = Path(os.path.abspath(path))
    try:
        rel = absolute.relative_to(ws.root)
    except ValueError:
        return None
    current = ws.root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def entry_problems(entry, frozen: FrozenSet, rel: str) -> list[str]:
    """Every field of a ledger line that disagrees with the frozen set it describes (and the folder it is in)."""
    kind = "import" if frozen.settings.get("imported_from") else "freeze"  # interop imports copy a set frozen elsewhere
    expected = {
        "kind": kind,
        "instance_id": frozen.instance_id,
        "system": frozen.system,
        "version": frozen.version,
        "path": rel,
        "frozen_seal": frozen.seal,
        "frozen_at": frozen.frozen_at,
    }
    return [
        f"ledger line {entry.seq + 1} for {rel}: {key} is {getattr(entry, key)!r} but {FROZEN_FILE} says {value!r}"
        for key, value in expected.items()
        if getattr(entry, key) != value
    ]


def verify_frozen(path: str | Path, ws: Workspace) -> list[str]:
    """Every problem with a frozen set: file hashes, FROZEN.json seal and bytes, its ledger entry (every
    field), the ledger chain, and the instance seal; a set reached through a symbolic link is refused.
    Empty when intact."""
    link = symlink_in(path, ws)
    if link is not None:
        return [f"{link}: a symbolic link; frozen sets are real folders inside the workspace"]
    path = Path(path).resolve()
    try:
        data, frozen = _read_frozen_record(path)
    except BadInput as exc:
        return [exc.message]
    problems = _file_problems(path, data, frozen)
    try:
        rel = path.relative_to(ws.root.resolve()).as_posix()
    except ValueError:
        return problems + [f"{path}: not inside the workspace {ws.root}; its ledger entry cannot be checked"]
    expected_rel = f"frozen/{frozen.instance_id}/{frozen.system}/v{frozen.version}"
    if rel != expected_rel:
        problems.append(f"{path / FROZEN_FILE}: says {expected_rel} but the folder is {rel} (moved or renamed)")
    entries, ledger_problems = read_ledger(ws.ledger)
    problems += ledger_problems
    entry = find_entry(entries, rel)
    if entry is None:
        problems.append(f"{ws.ledger}: no ledger entry for {rel}")
    else:
        problems += [f"{ws.ledger}: {p}" for p in entry_problems(entry, frozen, rel)]
    try:
        instance = load_instance(frozen.instance_id, ws)
        if instance.seal != frozen.instance_seal:
            problems.append(
                f"instance {frozen.instance_id}: seal {instance.seal[:12]}… "
                f"differs from the frozen set's {frozen.instance_seal[:12]}…"
            )
    except (BadInput, CheckFailed) as exc:
        problems.append(f"instance {frozen.instance_id}: {exc.message}")
    return problems


def is_frozen_and_intact(path: str | Path, ws: Workspace) -> tuple[bool, str]:
    """``(True, summary)`` when ``path`` is a frozen set whose files, seal, ledger entry and instance
    all check out; otherwise ``(False, first problem)``. For scoring and retrieval to call first."""
    problems = verify_frozen(path, ws)
    if problems:
        return False, problems[0]
    frozen = _read_frozen_record(Path(path).resolve())[1]
    return (
        True,
        f"{frozen.system} v{frozen.version} for {frozen.instance_id}: {frozen.n_questions} questions, "
        f"seal {frozen.seal}",
    )


def open_intact_frozen(frozen_path: str | Path, ws: Workspace, reader: str) -> tuple[Path, FrozenBundle, Instance]:
    """``(folder, bundle, instance)`` of a frozen set that is frozen, intact and sealed against its instance's
    current seal; ``frozen_path`` may be relative to the workspace. BadInput for a missing folder, CheckFailed
    for anything else (``reader`` ends the message: who reads frozen sets only, and why)."""
    path = Path(frozen_path)
    if not path.is_absolute() and not path.exists():
        path = ws.root / path
    if not path.is_dir():
        raise BadInput(f"{path}: no such frozen set folder")
    ok, why = is_frozen_and_intact(path, ws)
    if not ok:
        raise CheckFailed(f"{path}: not a frozen, intact set ({why}); {reader}")
    bundle = load_frozen(path)
    instance = load_instance(bundle.frozen.instance_id, ws)
    if instance.seal != bundle.frozen.instance_seal:
        raise CheckFailed(
            f"{path}: frozen against instance seal {bundle.frozen.instance_seal[:12]}…, "
            f"but instance {instance.instance_id} now has {instance.seal[:12]}…"
        )
    return path, bundle, instance


def frozen_sets(ws: Workspace) -> list[Path]:
    """Every ``frozen/<instance>/<system>/v<N>`` folder in the workspace, sorted."""
    if not ws.frozen.is_dir():
        return []
    return sorted(p for p in ws.frozen.glob("*/*/v*") if p.is_dir() and _VERSION_DIR.fullmatch(p.name))


def verify_ledger_and_sets(ws: Workspace) -> list[str]:
    """The whole ledger: its hash chain, each entry's frozen set, and no frozen set without an entry."""
    entries, problems = read_ledger(ws.ledger)
    listed = set()
    for entry in entries:
        listed.add(entry.path)
        folder = ws.root / entry.path
        if not folder.is_dir():
            problems.append(f"{ws.ledger}:{entry.seq + 1}: frozen set {entry.path} is missing")
            continue
        problems += _set_problems(folder, entry, ws)
    for folder in frozen_sets(ws):
        rel = folder.relative_to(ws.root).as_posix()
        if rel not in listed:
            problems.append(f"{folder}: frozen set has no ledger entry (ledger truncated or set added by hand)")
    return problems


def _set_problems(folder: Path, entry, ws: Workspace) -> list[str]:
    link = symlink_in(folder, ws)
    if link is not None:
        return [f"{link}: a symbolic link; frozen sets are real folders inside the workspace"]
    try:
        data, frozen = _read_frozen_record(folder)
    except BadInput as exc:
        return [exc.message]
    return _file_problems(folder, data, frozen) + [
        f"{ws.ledger}: {p}" for p in entry_problems(entry, frozen, entry.path)
    ]
