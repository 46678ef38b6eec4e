"""Prospective instances: commit questions now, grade them when the future arrives.

A *commitment* is a folder that anyone can check later::

    prospective/<ID>/
      COMMITMENT.json          sealed: cutoff, future window, grading schedule, the declared
                               future-corpus query, judge and retriever settings, the root
      SHA256SUMS               ``sha256sum`` format over every committed file below
      instance.json            the sealed past-only instance (its future is declared, not built)
      past_manifest.json       the sealed past corpus manifest
      judge/<config>           the committed judge config, when one is used
      submissions/<system>/    each frozen set: questions.jsonl, metadata.json, FROZEN.json
      graded/<as-of>[-provisional]/   written later by ``grade``; not part of the commitment

Merkle root: leaf *i* is the sha256 of line *i* of ``SHA256SUMS``, normalised to the
UTF-8 bytes ``<lowercase hex digest><two spaces><path>`` without the newline (so a
``*`` binary marker does not matter), and each leaf binds a file's content to its path;
the lines are sorted by path (code-point order) when we write them, and a
foreign ``SHA256SUMS`` is taken in its own line order. The tree is
:func:`backtest.core.seal.merkle_root` (sha256 of the concatenated child digests, the last
node duplicated on odd levels). ``COMMITMENT.json`` is not in ``SHA256SUMS`` (it holds
the root); it is sealed, and every setting it records is also in the committed
``instance.json``, which the root covers — so the published root binds the settings too.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from backtest.core import sums
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes, atomic_write_text, read_json, write_json
from backtest.core.records import (
    FrozenSet,
    Instance,
    JudgeSettings,
    RetrievalSettings,
    Versioned,
    Window,
    check_safe_name,
    parse_record,
    read_output,
    write_output,
)
from backtest.core.seal import compute_seal, merkle_root, sha256_file, sha256_text, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus, build_or_reuse, load_manifest
from backtest.corpus.instance import create_instance, load_instance
from backtest.scoring.metrics import format_rate
from backtest.scoring.outputs import Run
from backtest.studies.outputs import Grade
from backtest.studies.pipeline import freeze_or_reuse, rates_of_run, score

SUMS_FILE = "SHA256SUMS"
COMMITMENT_FILE = "COMMITMENT.json"
INSTANCE_FILE = "instance.json"
PAST_MANIFEST_FILE = "past_manifest.json"
GRADED_DIR = "graded"
LEAF_RULE = (
    "leaf i = sha256 of line i of SHA256SUMS normalised to '<lowercase hex>  <path>' (UTF-8, no newline); "
    "lines sorted by path; "
    "root = backtest.core.seal.merkle_root(leaves): sha256 of concatenated child digests, "
    "last node duplicated on odd levels"
)
NOT_COMMITTED = (COMMITMENT_FILE, SUMS_FILE)


# --------------------------------------------------------------------------- records


class FutureDeclaration(BaseModel):
    """The future corpus as declared at commit time: how it will be built, and when graded."""

    model_config = ConfigDict(extra="forbid")

    source: str
    inputs: list[str] = Field(min_length=1)
    categories: list[str] = Field(default_factory=list)
    query: str | None = None
    window: Window
    schedule: list[dt.date] = Field(min_length=1)
    corpus_prefix: str
    retrieval_model_fingerprint: str | None = None
    judge_info: dict[str, Any] | None = None
    rule: str = "built with backtest.corpus.build (role future) from the inputs, window clipped to the as-of day"

    @field_validator("schedule")
    @classmethod
    def _sorted(cls, value: list[dt.date]) -> list[dt.date]:
        if value != sorted(set(value)):
            raise ValueError("grading dates must be distinct and in increasing order")
        return value


class CommittedSystem(BaseModel):
    """One frozen submission inside a commitment."""

    model_config = ConfigDict(extra="forbid")

    system: str
    path: str
    frozen_version: int
    frozen_seal: str
    n_questions: int
    questions_sha256: str


class Commitment(Versioned):
    """``COMMITMENT.json``: what was committed, how it will be graded, and the Merkle root."""

    model_config = ConfigDict(extra="forbid")

    commitment_id: str
    committed_at: str
    instance_id: str
    instance_seal: str
    cutoff: dt.date
    window: Window
    schedule: list[dt.date]
    future_declaration: dict[str, Any]
    retrieval: RetrievalSettings
    judge: JudgeSettings
    past_corpus: dict[str, str]
    systems: list[CommittedSystem]
    n_files: int
    sums_sha256: str
    leaf_rule: str = LEAF_RULE
    root: str
    seal: str = ""


# --------------------------------------------------------------------------- Merkle root


def sum_entries(path: Path) -> list[tuple[str, str]]:
    """``(digest, path)`` pairs of a SHA256SUMS file in line order (parsed by :mod:`backtest.core.sums`)."""
    return [(digest, rel) for rel, digest in sums.parse_sums(path).items()]


def leaf_digests(entries: list[tuple[str, str]]) -> list[str]:
    """Merkle leaves for ``(digest, path)`` entries of a SHA256SUMS file, in its line order."""
    return [sha256_text(f"{digest}  {path}") for digest, path in entries]


def sums_root(entries: list[tuple[str, str]]) -> str:
    """The Merkle root over a SHA256SUMS file's entries (see the module docstring)."""
    return merkle_root(leaf_digests(entries))


def publish_line(commitment: Commitment) -> str:
    """The one line a user publishes: the commitment id, its Merkle root and the date."""
    return (
        f"backtest prospective {commitment.commitment_id}: sha256 merkle root {commitment.root} "
        f"committed {commitment.committed_at[:10]}"
    )


# --------------------------------------------------------------------------- commit


def parse_window(text: str) -> Window:
    """Parse ``START..END`` (inclusive ISO dates)."""
    start, sep, end = (text or "").partition("..")
    try:
        if not sep:
            raise ValueError
        window = Window(start=dt.date.fromisoformat(start.strip()), end=dt.date.fromisoformat(end.strip()))
    except ValueError:
        raise BadInput(f"--window {text!r}: expected START..END with ISO dates (YYYY-MM-DD..YYYY-MM-DD)") from None
    if window.start > window.end:
        raise BadInput(f"--window {text!r}: start is after end")
    return window


def parse_dates(text: str, what: str = "--schedule") -> list[dt.date]:
    """Parse comma-separated ISO dates."""
    out = []
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        try:
            out.append(dt.date.fromisoformat(part))
        except ValueError:
            raise BadInput(f"{what}: {part!r} is not a date (YYYY-MM-DD)") from None
    if not out:
        raise BadInput(f"{what}: at least one date is needed")
    return out


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def _retrieval_fingerprint(retrieval: RetrievalSettings) -> str | None:
    """The embedding model's fingerprint when retrieval needs one (dense/hybrid), else None."""
    if retrieval.method == "bm25":
        return None
    from backtest.text.embed import model_fingerprint

    return model_fingerprint(retrieval.model)


@dataclass
class CommitOptions:
    """Everything ``prospective commit`` needs."""

    commitment_id: str
    cutoff: dt.date
    window: Window
    schedule: list[dt.date]
    submissions: list[Path]
    source: str
    inputs: list[str]
    categories: list[str] = field(default_factory=list)
    query: str | None = None
    past: str | None = None
    past_start: dt.date | None = None
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    judge_config: str | None = None
    domain: str = ""
    out: Path | None = None


def _check_commit_options(opts: CommitOptions) -> None:
    _safe_id(opts.commitment_id)
    if opts.window.start <= opts.cutoff:
        raise BadInput(f"--window starts {opts.window.start}, not after the cutoff {opts.cutoff}")
    if opts.schedule != sorted(set(opts.schedule)):
        raise BadInput("--schedule: dates must be distinct and in increasing order")
    if opts.schedule[0] < opts.window.start:
        raise BadInput(
            f"--schedule: first grading date {opts.schedule[0]} is before the window starts ({opts.window.start})"
        )
    if not opts.submissions:
        raise BadInput("--submissions: at least one submission folder is needed")
    for sub in opts.submissions:
        if not Path(sub).is_dir():
            raise BadInput(f"{sub}: no such submission folder")


def _safe_id(name: str) -> str:
    try:
        return check_safe_name(name, "commitment id")
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def _past_manifest(opts: CommitOptions, ws: Workspace) -> str:
    """The past corpus id: the one given, else build ``<ID>-past`` from the declared source up to the cutoff."""
    if opts.past:
        return load_manifest(opts.past, ws).corpus_id
    manifest = build_corpus(
        BuildOptions(
            source=opts.source,
            inputs=[Path(p) for p in opts.inputs],
            corpus_id=f"{opts.commitment_id}-past",
            role="past",
            start=opts.past_start,
            end=opts.cutoff,
            categories=list(opts.categories),
            query=opts.query,
        ),
        ws,
    )
    return manifest.corpus_id


def commit(opts: CommitOptions, ws: Workspace, now: dt.datetime | None = None) -> tuple[Path, Commitment]:
    """Create the past-only instance, freeze every submission against it, and write the commitment folder."""
    from backtest.submit.freeze import load_frozen

    _check_commit_options(opts)
    out = Path(opts.out) if opts.out else ws.root / "prospective" / opts.commitment_id
    if out.exists() and any(out.iterdir()):
        raise BadInput(f"{out}: already exists and is not empty (a commitment is never overwritten)")
    fingerprint = _retrieval_fingerprint(opts.retrieval)
    declaration = FutureDeclaration(
        source=opts.source,
        inputs=list(opts.inputs),
        categories=list(opts.categories),
        query=opts.query,
        window=opts.window,
        schedule=opts.schedule,
        corpus_prefix=f"{opts.commitment_id}-future",
        retrieval_model_fingerprint=fingerprint,
        judge_info=judge_identity(opts.judge_config, ws),
    )
    past_id = _past_manifest(opts, ws)
    instance = _prospective_instance(opts, past_id, declaration, ws)
    frozen_dirs = [freeze_or_reuse(Path(sub), instance.instance_id, ws)[0] for sub in opts.submissions]
    systems: list[CommittedSystem] = []
    copies: dict[str, Path] = {
        INSTANCE_FILE: ws.instance_path(instance.instance_id),
        PAST_MANIFEST_FILE: ws.manifest_path(past_id),
    }
    if instance.judge.config:
        copies[f"judge/{Path(instance.judge.config).name}"] = _judge_path(instance.judge, ws)
    for frozen_dir in frozen_dirs:
        bundle = load_frozen(frozen_dir)
        system = bundle.frozen.system
        if any(s.system == system for s in systems):
            raise BadInput(f"two submissions share the system name {system!r}")
        rel = f"submissions/{system}"
        for item in sorted(frozen_dir.iterdir()):
            if item.is_file():
                copies[f"{rel}/{item.name}"] = item
        systems.append(
            CommittedSystem(
                system=system,
                path=rel,
                frozen_version=bundle.frozen.version,
                frozen_seal=bundle.frozen.seal,
                n_questions=bundle.frozen.n_questions,
                questions_sha256=bundle.frozen.files["questions.jsonl"],
            )
        )
    # all or nothing: the folder is assembled beside its place and renamed into it whole
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        commitment = _write_commitment(tmp, copies, opts, instance, past_id, systems, now)
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out, commitment


def _write_commitment(
    out: Path,
    copies: dict[str, Path],
    opts: CommitOptions,
    instance: Instance,
    past_id: str,
    systems: list[CommittedSystem],
    now: dt.datetime | None,
) -> Commitment:
    """Write the copies, SHA256SUMS and the sealed COMMITMENT.json into ``out``; return the commitment."""
    for rel, src in copies.items():
        atomic_write_bytes(out / rel, Path(src).read_bytes())
    sums.write_sums(out, sorted(copies))
    entries = sum_entries(out / SUMS_FILE)
    commitment = Commitment(
        commitment_id=opts.commitment_id,
        committed_at=(now or _utc_now()).isoformat().replace("+00:00", "Z"),
        instance_id=instance.instance_id,
        instance_seal=instance.seal,
        cutoff=opts.cutoff,
        window=opts.window,
        schedule=opts.schedule,
        future_declaration=instance.future_declaration or {},
        retrieval=instance.retrieval,
        judge=instance.judge,
        past_corpus={"corpus_id": past_id, "seal": instance.past.seal},
        systems=systems,
        n_files=len(entries),
        sums_sha256=sha256_file(out / SUMS_FILE),
        root=sums_root(entries),
    )
    sealed = with_seal(commitment.model_dump(mode="json"))
    write_json(out / COMMITMENT_FILE, sealed)
    return Commitment.model_validate(sealed)


def _prospective_instance(opts: CommitOptions, past_id: str, declaration: FutureDeclaration, ws: Workspace) -> Instance:
    """Create the past-only instance; an existing one is reused only when it carries exactly these settings
    (so a commit that failed part-way can be rerun), otherwise refused."""
    if ws.instance_path(opts.commitment_id).exists():
        existing = load_instance(opts.commitment_id, ws)
        same = (
            existing.future is None
            and existing.cutoff == opts.cutoff
            and existing.past.seal == load_manifest(past_id, ws).seal
            and existing.future_declaration == declaration.model_dump(mode="json")
            and existing.retrieval == opts.retrieval
            and existing.judge.config == opts.judge_config
            and (not opts.judge_config or existing.judge.config_sha256 == sha256_file(opts.judge_config))
        )
        if not same:
            raise BadInput(
                f"instance {opts.commitment_id} already exists with other settings; choose a new commitment id"
            )
        return existing
    return create_instance(
        opts.commitment_id,
        opts.cutoff,
        past_id,
        None,
        ws,
        retrieval=opts.retrieval,
        judge_config=opts.judge_config,
        domain=opts.domain,
        future_declaration=declaration.model_dump(mode="json"),
    )


def judge_identity(spec: str | None, ws: Workspace) -> dict[str, Any]:
    """The judge's identity (name, model, protocol, prompt and config sha256) as it would label now.

    Loading the judge here also validates its config at commit time."""
    from backtest.judge import get_judge

    return get_judge(spec or "offline", ws).info().model_dump(mode="json", exclude_none=True)


def _judge_path(judge: JudgeSettings, ws: Workspace) -> Path:
    path = Path(judge.config or "")
    return path if path.is_absolute() or path.is_file() else ws.root / path


# --------------------------------------------------------------------------- verify


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


def verify_folder(folder: str | Path) -> VerifyResult:
    """Check a folder against its ``SHA256SUMS`` (ours or anyone's), then our commitment when present.

    Names every changed, missing and extra file. Extra files are any not listed, except
    ``SHA256SUMS`` itself and, in a commitment folder, ``COMMITMENT.json`` and ``graded/``.
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
        result.problems += _verify_commitment(folder, result)
    return result


def _verify_commitment(folder: Path, result: VerifyResult) -> list[str]:
    try:
        return _commitment_problems(folder, result)
    except BadInput as exc:  # unreadable committed JSON: the commitment does not verify
        return [exc.message]


def _commitment_problems(folder: Path, result: VerifyResult) -> list[str]:
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
    declaration = FutureDeclaration.model_validate(instance.future_declaration or {})
    if declaration.window != commitment.window or declaration.schedule != commitment.schedule:
        problems.append(f"{COMMITMENT_FILE}: window or schedule differs from the committed {INSTANCE_FILE}")
    for system in commitment.systems:
        problems += _verify_committed_frozen(folder / system.path, system, instance.seal)
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


# --------------------------------------------------------------------------- grade


def load_verified_commitment(folder: str | Path) -> tuple[Commitment, Instance]:
    """Verify a commitment folder and return its commitment and instance; CheckFailed when anything changed."""
    result = verify_folder(folder)
    if result.commitment is None:
        raise BadInput(
            f"{folder}: no {COMMITMENT_FILE}; only a commitment made by `backtest prospective commit` can be graded"
        )
    if not result.ok:
        failures = result.failures()
        raise CheckFailed(f"commitment {folder} does not verify: {failures[0]}", failures)
    raw = read_json(Path(folder) / INSTANCE_FILE)
    return result.commitment, Instance.model_validate(raw)


def window_fraction(window: Window, as_of: dt.date) -> float:
    """The fraction of the window's days that have passed by ``as_of`` (inclusive), in [0, 1]."""
    total = (window.end - window.start).days + 1
    passed = (min(window.end, as_of) - window.start).days + 1
    return max(0.0, min(1.0, passed / total))


@dataclass
class GradePlan:
    """Where a grading stands on ``as_of``: due or provisional, and how much of the window is in."""

    as_of: dt.date
    provisional: bool
    scheduled: dt.date | None
    window_end: dt.date
    fraction: float

    @property
    def label(self) -> str:
        return f"{self.as_of.isoformat()}{'-provisional' if self.provisional else ''}"

    def describe(self) -> str:
        """One line: provisional or scheduled, and the share of the window that has passed."""
        kind = "PROVISIONAL grade" if self.provisional else f"grade due {self.scheduled}"
        return (
            f"{kind} as of {self.as_of}: {self.fraction:.1%} of the future window has passed "
            f"(corpus up to {self.window_end})"
        )


def plan_grade(commitment: Commitment, as_of: dt.date, provisional: bool, today: dt.date | None = None) -> GradePlan:
    """Decide whether grading on ``as_of`` is allowed; refuse (CheckFailed) before the first scheduled date."""
    today = today or _utc_now().date()
    if as_of > today:
        raise BadInput(
            f"--as-of {as_of} is after today ({today}): the future corpus cannot hold papers not yet published"
        )
    if as_of < commitment.window.start:
        raise CheckFailed(
            f"nothing to grade: --as-of {as_of} is before the future window starts ({commitment.window.start})"
        )
    due = [d for d in commitment.schedule if d <= as_of]
    if not due and not provisional:
        raise CheckFailed(
            f"not due: commitment {commitment.commitment_id} is first graded on {commitment.schedule[0]} "
            f"(--as-of {as_of}); pass --provisional for a provisional grade"
        )
    return GradePlan(
        as_of=as_of,
        provisional=not due,
        scheduled=due[-1] if due else None,
        window_end=min(commitment.window.end, as_of),
        fraction=window_fraction(commitment.window, as_of),
    )


def check_settings(commitment: Commitment, instance: Instance, ws: Workspace) -> list[str]:
    """Every committed setting that can no longer be honoured, one line each (never swapped silently)."""
    problems = []
    judge = instance.judge
    if judge.config:
        committed = judge.config_sha256 or ""
        path = _judge_path(judge, ws)
        if not path.is_file():
            problems.append(
                f"committed judge config {judge.config} is missing (sha256 {committed[:16]}…); restore it to grade"
            )
        elif sha256_file(path) != judge.config_sha256:
            problems.append(
                f"committed judge config {judge.config} changed since the commitment "
                f"(sha256 {sha256_file(path)[:16]}…, committed {committed[:16]}…)"
            )
    declaration = FutureDeclaration.model_validate(instance.future_declaration or {})
    if declaration.judge_info and not problems:
        try:
            now_info = judge_identity(str(_judge_path(judge, ws)) if judge.config else None, ws)
        except BadInput as exc:
            problems.append(f"committed judge {judge.name} cannot be loaded now: {exc.message}")
        else:
            changed = [
                f"{key} {declaration.judge_info.get(key)} -> {now_info.get(key)}"
                for key in sorted(set(declaration.judge_info) | set(now_info))
                if declaration.judge_info.get(key) != now_info.get(key)
            ]
            if changed:
                problems.append(f"committed judge {judge.name} would now label differently ({'; '.join(changed)})")
    if declaration.retrieval_model_fingerprint:
        try:
            now = _retrieval_fingerprint(instance.retrieval)
        except BadInput as exc:
            now, reason = None, exc.message
        else:
            reason = ""
        if now is None:
            problems.append(f"committed retriever model {instance.retrieval.model} is not available: {reason}")
        elif now != declaration.retrieval_model_fingerprint:
            problems.append(
                f"committed retriever model {instance.retrieval.model} changed "
                f"(fingerprint {now}, committed {declaration.retrieval_model_fingerprint})"
            )
    past = ws.manifest_path(commitment.past_corpus["corpus_id"])
    if not past.is_file():
        problems.append(f"committed past corpus {commitment.past_corpus['corpus_id']} is not built here ({past})")
    elif load_manifest(str(past), ws).seal != commitment.past_corpus["seal"]:
        problems.append(f"past corpus {commitment.past_corpus['corpus_id']}: seal differs from the commitment")
    return problems


def _resolve_inputs(declaration: FutureDeclaration, ws: Workspace, override: list[str] | None) -> list[Path]:
    paths = []
    for given in override or declaration.inputs:
        path = Path(given)
        if not path.exists() and not path.is_absolute() and (ws.root / path).exists():
            path = ws.root / path
        if not path.exists():
            raise CheckFailed(
                f"committed future-corpus input {given} is not available here; pass --input to say where it lives now"
            )
        paths.append(path)
    return paths


def build_future(
    commitment: Commitment,
    declaration: FutureDeclaration,
    plan: GradePlan,
    ws: Workspace,
    inputs: list[str] | None = None,
) -> str:
    """Build (or reuse, when intact) the future corpus declared in the commitment, clipped to the as-of day."""
    return build_or_reuse(
        BuildOptions(
            source=declaration.source,
            inputs=_resolve_inputs(declaration, ws, inputs),
            corpus_id=f"{declaration.corpus_prefix}-{plan.window_end:%Y%m%d}",
            role="future",
            start=declaration.window.start,
            end=plan.window_end,
            categories=list(declaration.categories),
            query=declaration.query,
        ),
        ws,
    )


# --------------------------------------------------------------------------- grade


def grade(
    folder: str | Path,
    as_of: dt.date,
    ws: Workspace,
    provisional: bool = False,
    inputs: list[str] | None = None,
    today: dt.date | None = None,
) -> dict[str, Any]:
    """Grade a verified commitment on ``as_of``: build the declared future corpus up to that day, score
    every committed submission with the committed settings, and write ``graded/<as-of>/`` beside them.

    Refuses (CheckFailed) before the first scheduled date unless ``provisional``, when the
    commitment does not verify, or when a committed setting can no longer be honoured.
    """
    from backtest.submit.freeze import load_frozen

    folder = Path(folder)
    commitment, instance = load_verified_commitment(folder)
    plan = plan_grade(commitment, as_of, provisional, today)
    problems = check_settings(commitment, instance, ws)
    if problems:
        raise CheckFailed(
            f"cannot grade {commitment.commitment_id} with its committed settings: {problems[0]}", problems
        )
    out = folder / GRADED_DIR / plan.label
    if (out / "GRADE.json").is_file():
        raise BadInput(f"{out}: already graded as of {as_of} (grades are never overwritten)")
    declaration = FutureDeclaration.model_validate(instance.future_declaration or {})
    future_id = build_future(commitment, declaration, plan, ws, inputs)
    graded_id = f"{commitment.commitment_id}.graded-{plan.window_end:%Y%m%d}"
    judge_config = str(_judge_path(instance.judge, ws)) if instance.judge.config else None
    if ws.instance_path(graded_id).is_file():
        earlier = load_instance(graded_id, ws)
        if earlier.future is None or earlier.future.seal != load_manifest(future_id, ws).seal:
            raise CheckFailed(
                f"graded instance {graded_id} exists with another future corpus; an earlier grading used "
                "different data (source drifted?) and is never overwritten"
            )
    graded = create_instance(
        graded_id,
        instance.cutoff,
        commitment.past_corpus["corpus_id"],
        future_id,
        ws,
        retrieval=instance.retrieval,
        judge_config=judge_config,
        domain=instance.domain,
        future_declaration=instance.future_declaration,
    )
    if (
        (graded.judge.name, graded.judge.config_sha256) != (instance.judge.name, instance.judge.config_sha256)
        or graded.retrieval != instance.retrieval
        or graded.past.seal != instance.past.seal
    ):
        raise CheckFailed(f"graded instance {graded_id} does not carry the committed settings")
    run_id = f"{'provisional' if plan.provisional else 'graded'}-{as_of:%Y%m%d}"
    note = {
        "commitment_id": commitment.commitment_id,
        "root": commitment.root,
        "as_of": as_of.isoformat(),
        "provisional": plan.provisional,
        "scheduled": plan.scheduled.isoformat() if plan.scheduled else None,
        "window": commitment.window.model_dump(mode="json"),
        "window_end_graded": plan.window_end.isoformat(),
        "window_fraction": round(plan.fraction, 6),
        "status": plan.describe(),
    }
    rows = []
    for system in commitment.systems:
        frozen, _ = freeze_or_reuse(folder / system.path, graded_id, ws)
        if load_frozen(frozen).frozen.files.get("questions.jsonl") != system.questions_sha256:
            raise CheckFailed(f"{system.system}: the questions frozen for grading differ from the committed ones")
        run_dir = Path(score(frozen, ws, run_id=run_id).run_dir)
        dest = out / system.system
        _copy_tree(run_dir, dest)
        write_json(dest / "GRADE_NOTE.json", {**note, "system": system.system, "run": str(run_dir)})
        rows.append(
            {
                "system": system.system,
                "graded_run": (dest.relative_to(folder)).as_posix(),
                "run": str(run_dir),
                "frozen": str(frozen),
                "valid": read_output(Run, run_dir / "RUN.json").get("valid"),
                **rates_of_run(run_dir),
            }
        )
    future_manifest = load_manifest(future_id, ws)
    summary = {
        **note,
        "schema_version": "1",
        "future_corpus": {
            "corpus_id": future_id,
            "seal": future_manifest.seal,
            "n_records": future_manifest.n_records,
            "window": future_manifest.window.model_dump(mode="json"),
            "inputs": future_manifest.source.get("inputs"),
        },
        "graded_instance": {"instance_id": graded_id, "seal": graded.seal},
        "judge": instance.judge.model_dump(mode="json"),
        "retrieval": instance.retrieval.model_dump(mode="json"),
        "systems": rows,
    }
    atomic_write_text(out / "GRADE.md", render_grade(summary))
    sealed = with_seal(summary)
    write_output(out / "GRADE.json", Grade, sealed)
    return {**sealed, "folder": str(out)}


def _copy_tree(src: Path, dest: Path) -> None:
    for path in sorted(Path(src).rglob("*")):
        if path.is_file():
            atomic_write_bytes(dest / path.relative_to(src), path.read_bytes())


def render_grade(summary: dict[str, Any]) -> str:
    """``GRADE.md``: the status line (provisional or due), then one row per committed system."""

    title = "PROVISIONAL grade" if summary["provisional"] else "Grade"
    lines = [
        f"# {title} of prospective commitment `{summary['commitment_id']}` as of {summary['as_of']}",
        "",
        f"{summary['status']}.",
        "",
        f"Commitment root `{summary['root']}`; future corpus `{summary['future_corpus']['corpus_id']}` "
        f"({summary['future_corpus']['n_records']} papers, seal `{summary['future_corpus']['seal'][:16]}…`); "
        f"retriever {summary['retrieval']['method']} ({summary['retrieval']['model']}, k={summary['retrieval']['k']}); "
        f"judge {summary['judge']['name']}.",
        "",
        "| system | n | coverage | answered | premise refuted | valid |",
        "|---|---|---|---|---|---|",
    ]
    for row in summary["systems"]:
        valid = {True: "yes", False: "NO (leakage check failed)"}.get(row.get("valid"), "not checked")
        lines.append(
            f"| {row['system']} | {row['n']} | "
            + " | ".join(format_rate(row[k]) for k in ("coverage", "answered", "refuted"))
            + f" | {valid} |"
        )
    if summary["provisional"]:
        lines += [
            "",
            f"PROVISIONAL: only {summary['window_fraction']:.1%} of the future window has passed; "
            "these rates will change and are not the committed grade.",
        ]
    return "\n".join(lines) + "\n"
