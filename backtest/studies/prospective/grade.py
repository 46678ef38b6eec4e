"""``prospective grade``: a verified commitment scored on an as-of day with its committed settings."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes, atomic_write_text, read_json
from backtest.core.records import Instance, Window, write_output
from backtest.core.seal import sha256_file, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_or_reuse, load_manifest
from backtest.corpus.instance import create_instance, load_instance
from backtest.studies.outputs import Grade, GradeNote
from backtest.studies.pipeline import freeze_or_reuse, rates_of_run, score
from backtest.studies.prospective.commit import judge_identity, judge_path, retrieval_fingerprint, utc_now
from backtest.studies.prospective.records import (
    COMMITMENT_FILE,
    GRADED_DIR,
    INSTANCE_FILE,
    Commitment,
    FutureDeclaration,
)
from backtest.studies.prospective.render import render_grade
from backtest.studies.prospective.verify import verify_folder
from backtest.validity.runfolder import RunFolder


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
    today = today or utc_now().date()
    committed_on = dt.date.fromisoformat(commitment.committed_at[:10])
    if commitment.window.start <= committed_on:
        raise CheckFailed(
            f"commitment {commitment.commitment_id} was made on {committed_on}, on or after its window started "
            f"({commitment.window.start}): its 'future' already existed when the questions were sealed, so it "
            "cannot be graded as a prospective test"
        )
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
        path = judge_path(judge, ws)
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
            now_info = judge_identity(str(judge_path(judge, ws)) if judge.config else None, ws)
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
            now = retrieval_fingerprint(instance.retrieval)
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
    judge_config = str(judge_path(instance.judge, ws)) if instance.judge.config else None
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
        write_output(
            dest / "GRADE_NOTE.json",
            GradeNote,
            {**note, "schema_version": "1", "system": system.system, "run": str(run_dir)},
        )
        rows.append(
            {
                "system": system.system,
                "graded_run": (dest.relative_to(folder)).as_posix(),
                "run": str(run_dir),
                "frozen": str(frozen),
                "valid": RunFolder.open(run_dir).run.valid,
                **rates_of_run(run_dir).model_dump(mode="json"),
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
