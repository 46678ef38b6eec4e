"""``prospective commit``: build the past-only instance, freeze every submission against it, and write the
commitment folder (the copies, ``SHA256SUMS`` and the sealed ``COMMITMENT.json`` with the Merkle root)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.core import sums
from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_bytes, write_json
from backtest.core.records import Instance, JudgeSettings, RetrievalSettings, Window, check_safe_name
from backtest.core.seal import sha256_file, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus, load_manifest
from backtest.corpus.instance import create_instance, load_instance
from backtest.studies.pipeline import freeze_or_reuse
from backtest.studies.prospective.merkle import sum_entries, sums_root
from backtest.studies.prospective.records import (
    COMMITMENT_FILE,
    INSTANCE_FILE,
    PAST_MANIFEST_FILE,
    SUMS_FILE,
    Commitment,
    CommittedSystem,
    FutureDeclaration,
)


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


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def retrieval_fingerprint(retrieval: RetrievalSettings) -> str | None:
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
    # systems to generate against the past-only instance and commit with the submissions (run_system names)
    generate: list[str] = field(default_factory=list)
    n: int = 50
    seed: int = 0
    generator_options: dict[str, Any] = field(default_factory=dict)


def _check_commit_options(opts: CommitOptions, today: dt.date) -> None:
    _safe_id(opts.commitment_id)
    if opts.window.start <= opts.cutoff:
        raise BadInput(f"--window starts {opts.window.start}, not after the cutoff {opts.cutoff}")
    if opts.window.start <= today:
        raise BadInput(
            f"--window starts {opts.window.start}, on or before today ({today} UTC): that 'future' already exists "
            "when the questions are sealed; a prospective window starts after the day of commitment (for a past "
            "window, make a historical instance: backtest instance create); grading dates, never before the "
            "window starts, are then after today too"
        )
    if opts.schedule != sorted(set(opts.schedule)):
        raise BadInput("--schedule: dates must be distinct and in increasing order")
    if opts.schedule[0] < opts.window.start:
        raise BadInput(
            f"--schedule: first grading date {opts.schedule[0]} is before the window starts ({opts.window.start})"
        )
    if not opts.submissions and not opts.generate:
        raise BadInput("nothing to commit: give --submissions folders or --generate systems")
    from backtest.generators import lacks_endpoint, system_names

    known = system_names()
    for name in opts.generate:
        if name not in known:
            raise BadInput(f"--generate {name!r}: unknown system; known: {', '.join(known)}")
        if lacks_endpoint(name, opts.generator_options):
            raise BadInput(f"--generate {name}: needs an LLM endpoint (--llm-base-url)")
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

    now = now or utc_now()
    _check_commit_options(opts, now.date())
    out = Path(opts.out) if opts.out else ws.root / "prospective" / opts.commitment_id
    if out.exists() and any(out.iterdir()):
        raise BadInput(f"{out}: already exists and is not empty (a commitment is never overwritten)")
    fingerprint = retrieval_fingerprint(opts.retrieval)
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
    submissions = [*map(Path, opts.submissions), *_generate(opts, instance.instance_id, ws)]
    frozen_dirs = [freeze_or_reuse(sub, instance.instance_id, ws)[0] for sub in submissions]
    systems: list[CommittedSystem] = []
    copies: dict[str, Path] = {
        INSTANCE_FILE: ws.instance_path(instance.instance_id),
        PAST_MANIFEST_FILE: ws.manifest_path(past_id),
    }
    if instance.judge.config:
        copies[f"judge/{Path(instance.judge.config).name}"] = judge_path(instance.judge, ws)
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


def _generate(opts: CommitOptions, instance_id: str, ws: Workspace) -> list[Path]:
    """Run each ``--generate`` system on the past-only instance (``generated_at``: the wall-clock time, which
    is the truth for questions written now); their submissions land in ``submissions/<ID>/<system>/``."""
    from backtest.generators import run_system

    made = []
    for name in opts.generate:
        summary = run_system(
            name, instance_id, ws, n=opts.n, seed=opts.seed, options=opts.generator_options, generated_at="now"
        )
        made.append(Path(summary["out"]))
    return made


def _write_commitment(
    out: Path,
    copies: dict[str, Path],
    opts: CommitOptions,
    instance: Instance,
    past_id: str,
    systems: list[CommittedSystem],
    now: dt.datetime,
) -> Commitment:
    """Write the copies, SHA256SUMS and the sealed COMMITMENT.json into ``out``; return the commitment."""
    for rel, src in copies.items():
        atomic_write_bytes(out / rel, Path(src).read_bytes())
    sums.write_sums(out, sorted(copies))
    entries = sum_entries(out / SUMS_FILE)
    commitment = Commitment(
        commitment_id=opts.commitment_id,
        committed_at=now.isoformat().replace("+00:00", "Z"),
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


def judge_path(judge: JudgeSettings, ws: Workspace) -> Path:
    path = Path(judge.config or "")
    return path if path.is_absolute() or path.is_file() else ws.root / path
