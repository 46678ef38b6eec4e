"""The resumable scoring pipeline: frozen set → retrieve → judge → constraints → metrics → report.

``score_frozen(FROZEN_DIR, ws, judge=..., run_id=...)`` writes
``results/<instance>/<system>/<run_id>/``:

* ``RUN.json``: what was scored with what (instance and frozen seals, retriever spec,
  judge info and settings, their sha256 ``settings_sha256``), status, counts,
  the judge's call/cache/token counters, ``valid`` and ``leakage``.
* ``retrieval.jsonl``: one Retrieval per question, in question order (written once).
* ``judgments.jsonl``: one Judgment per question, in question order.
* ``metrics.json``, ``report.md``, ``report.html``;
* ``SEAL.json`` once the run is complete: the sha256 of its files (:mod:`backtest.scoring.runseal`).
* ``contamination.json``: the contamination probe (:mod:`backtest.validity.contamination`), run after
  the leakage checks; its summary is ``RUN.json``'s ``contamination``.

**Resumable.** Judgments are appended, one canonical JSON line per question, to
``judgments.partial.jsonl`` with an fsync after each line. A rerun keeps every
complete line whose question matches the order (a torn last line is cut off),
judges only the rest, and renames the result to ``judgments.jsonl``. LLM answers
are also in the judge's cache, so a question in flight when the process died costs
no new call. Judges are deterministic (the offline judge by construction, the LLM
judge through its cache at temperature 0), so a killed-and-resumed run gives a
``judgments.jsonl`` byte-identical to an uninterrupted one.

**Never overwritten.** The default run id is ``<judge>-<sha256(settings)[:12]>``, so a
different judge, prompt, config, retriever or frozen set mints a new run; an existing
run folder with other settings is refused, and a complete run is left as it is.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from backtest import __version__
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes
from backtest.core.records import (
    Instance,
    Judgment,
    Question,
    Retrieval,
    check_safe_name,
)
from backtest.core.runs import JudgeStats, LeakageCheck, Metrics, Run, RunCost, RunJudge, TokensTotal
from backtest.core.seal import sha256_json
from backtest.core.workspace import Workspace
from backtest.judge.protocol import Judge
from backtest.retrieve.compact import is_compact_file, read_retrievals
from backtest.scoring.cost import run_cost
from backtest.scoring.judging import judge_all, judge_spec_of, judge_stats, n_failed
from backtest.scoring.outputs import DryRun
from backtest.submit.freeze import FrozenBundle
from backtest.validity.runfolder import RunFolder

RUN_FILES = ("RUN.json", "retrieval.jsonl", "judgments.jsonl", "metrics.json", "report.md", "report.html")


@dataclass
class ScoreResult:
    """What a call to :func:`score_frozen` did."""

    run_dir: Path
    run_id: str
    status: str  # "complete" or "already complete"
    n_questions: int
    judged_now: int = 0
    judge_stats: JudgeStats = field(default_factory=JudgeStats)
    metrics: Metrics | None = None
    valid: bool | None = None
    cost: RunCost | None = None  # RUN.json's cost block


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_settings(bundle: FrozenBundle, instance: Instance, judge: Judge) -> dict[str, Any]:
    """Everything that changes a run's labels; its sha256 names the default run id."""
    return {
        "frozen_seal": bundle.frozen.seal,
        "instance_id": instance.instance_id,
        "instance_seal": instance.seal,
        "future_seal": instance.future.seal if instance.future else None,
        "retrieval": instance.retrieval.model_dump(mode="json"),
        "judge": judge.settings(),
    }


def default_run_id(judge_name: str, settings: dict[str, Any]) -> str:
    """``<judge>-<first 12 hex of sha256(settings)>``."""
    return f"{judge_name}-{sha256_json(settings)[:12]}"


# --------------------------------------------------------------------------- hooks


def leakage_hook(run_dir: Path, ws: Workspace) -> tuple[bool, list[LeakageCheck]]:
    """Run the mechanical leakage checks (``backtest.validity.leakage.check_run``) on a run folder.

    Returns ``(valid, leakage)``: ``valid`` is False when any check failed. Runs after
    retrieval.jsonl and judgments.jsonl are final; the result goes into RUN.json and
    metrics.json.
    """
    from backtest.validity.leakage import check_run, leakage_checks

    results = check_run(run_dir, ws)
    return all(r.passed for r in results), leakage_checks(results)


def _metrics(
    questions: Sequence[Question], judgments: Sequence[Judgment], retrievals: Sequence[Retrieval], cutoff: dt.date
) -> Metrics:
    try:
        from backtest.scoring.metrics import compute_metrics
    except ImportError:
        raise CheckFailed("backtest.scoring.metrics is missing from this build; cannot compute metrics") from None
    return compute_metrics(questions, judgments, retrievals, cutoff)


# --------------------------------------------------------------------------- the pipeline


def sibling_retrieval(run_dir: Path, settings: dict[str, Any]) -> Path | None:
    """``retrieval.jsonl`` of a complete sibling run with the same frozen set, instance and retrieval
    settings (retrieval is deterministic, so it is reused instead of recomputed), or None."""
    same = {k: settings[k] for k in ("frozen_seal", "instance_seal", "future_seal", "retrieval")}
    parent = run_dir.parent
    if not parent.is_dir():
        return None
    for other in (RunFolder(p) for p in sorted(parent.iterdir()) if p.is_dir() and p != run_dir):
        try:
            meta = other.run
        except BadInput:
            continue
        if meta.status != "complete" or not other.has("retrieval.jsonl"):
            continue
        theirs = meta.run_settings or {}
        if {k: theirs.get(k) for k in same} == same:
            return other.file("retrieval.jsonl")
    return None


def load_run_files(run_dir: Path) -> tuple[Run, list[Retrieval], list[Judgment], Metrics]:
    """RUN.json, retrievals (with their text, re-cut from the sealed corpus for a compact run), judgments and
    metrics of a finished run."""
    folder = RunFolder.open(run_dir).check_seal()
    run = folder.run
    folder.require("retrieval.jsonl", "judgments.jsonl", "metrics.json")
    return run, folder.retrievals(), folder.judgments, folder.metrics


@dataclass
class Prepared:
    """A frozen set checked and ready to score: its bundle, instance, judge, settings and run folder."""

    frozen_path: Path
    bundle: Any
    instance: Any
    judge: Any
    settings: dict[str, Any]
    settings_sha: str
    run_id: str
    run_dir: Path

    @property
    def questions(self) -> list[Question]:
        return list(self.bundle.questions)

    def retrievals(self, ws: Workspace, progress: bool = False, write: bool = True) -> list[Retrieval]:
        """The run's retrievals: its own file, a complete sibling run's (same frozen set, instance and
        retriever: retrieval is deterministic), else retrieved now; written into the run folder when ``write``."""
        from backtest.retrieve import retrieve_questions, write_retrievals

        path = self.run_dir / "retrieval.jsonl"
        source = path if path.is_file() else sibling_retrieval(self.run_dir, self.settings)
        if source is not None:
            # a committed (compact) sibling holds hashes, not text: the text is cut again and checked, or refused
            retrievals = read_retrievals(source, self.instance.instance_id, ws)
            if [r.question_id for r in retrievals] != [q.question_id for q in self.questions]:
                raise CheckFailed(
                    f"{source}: question ids do not match the frozen set; remove the run folder to redo it"
                )
            if write and source != path:
                if is_compact_file(source):  # restored text, written as retrieval writes it
                    write_retrievals(path, retrievals)
                else:
                    atomic_write_bytes(path, source.read_bytes())
            return retrievals
        retrievals = retrieve_questions(self.questions, self.instance, ws, progress=progress)
        if write:
            write_retrievals(path, retrievals)
        return retrievals


def prepare(
    frozen_path: str | Path,
    ws: Workspace,
    judge_spec: str | None = None,
    run_id: str | None = None,
    judge: Judge | None = None,
) -> Prepared:
    """Check a frozen set (frozen, intact, its instance unchanged and with a future corpus), make its judge
    (``judge_spec``; default: the instance's judge, else ``offline``) and name its run folder."""
    from backtest.judge import get_judge
    from backtest.submit.freeze import open_intact_frozen

    frozen_path, bundle, instance = open_intact_frozen(frozen_path, ws, "scoring reads frozen sets only")
    if instance.future is None:
        raise BadInput(
            f"instance {instance.instance_id} has no future corpus yet (prospective); grade it when it is due"
        )
    if judge is None:
        judge = get_judge(judge_spec or instance.judge.config or "offline", ws)
    settings = run_settings(bundle, instance, judge)
    run_id = run_id or default_run_id(judge.name, settings)
    try:
        check_safe_name(run_id, "run id")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    run_dir = ws.results / instance.instance_id / bundle.frozen.system / run_id
    return Prepared(frozen_path, bundle, instance, judge, settings, sha256_json(settings), run_id, run_dir)


def dry_run(frozen_path: str | Path, ws: Workspace, judge_spec: str | None = None, progress: bool = False) -> DryRun:
    """``score --dry-run``: what scoring would call and cost (:func:`~backtest.scoring.cost.estimate_questions`);
    retrieves in memory when no run has, writes nothing and calls no judge."""
    from backtest.scoring.cost import estimate_questions

    prep = prepare(frozen_path, ws, judge_spec)
    retrievals = prep.retrievals(ws, progress=progress, write=False)
    estimate = estimate_questions(prep.judge, prep.questions, [r.documents for r in retrievals])
    return DryRun(
        frozen_path=ws.relative(prep.frozen_path),
        instance_id=prep.instance.instance_id,
        system=prep.bundle.frozen.system,
        judge=prep.judge.name,
        run_id=prep.run_id,
        **dict(estimate),
    )


def score_frozen(
    frozen_path: str | Path,
    ws: Workspace,
    judge_spec: str | None = None,
    run_id: str | None = None,
    progress: bool = False,
    judge: Judge | None = None,
    on_judged: Callable[[int], None] | None = None,
    max_cost: float | None = None,
) -> ScoreResult:
    """Score a frozen set into ``results/<instance>/<system>/<run_id>/`` (resumable; never overwrites).

    ``judge_spec`` is a judge config path or name (default: the instance's judge, else
    ``offline``); ``judge`` may pass a ready Judge object instead. Embedding and judging run on
    the current executor (:func:`backtest.core.executor.use`). ``max_cost`` stops before the
    judge's priced calls of this invocation would cost more (CheckFailed; the run resumes).
    """
    from backtest.judge.cards import run_validity
    from backtest.scoring.report import write_reports

    prep = prepare(frozen_path, ws, judge_spec, run_id, judge)
    frozen_path, bundle, instance, judge = prep.frozen_path, prep.bundle, prep.instance, prep.judge
    settings, settings_sha, run_id, run_dir = prep.settings, prep.settings_sha, prep.run_id, prep.run_dir
    system = bundle.frozen.system
    folder = RunFolder(run_dir)
    questions = prep.questions
    started = _now()
    if folder.has("RUN.json"):
        existing = folder.run
        if existing.settings_sha256 != settings_sha:
            raise BadInput(
                f"{run_dir} holds a run with other settings (judge, retriever or frozen set); runs are never "
                f"overwritten: choose another --run-id or omit it for the settings-derived one"
            )
        if existing.status == "complete":
            return ScoreResult(
                run_dir,
                run_id,
                "already complete",
                len(questions),
                metrics=folder.metrics,
                valid=existing.valid,
                cost=existing.cost,
            )
        started = existing.started_at or started
    run = Run(
        schema_version="1",
        run_id=run_id,
        status="running",
        backtest_version=__version__,
        instance_id=instance.instance_id,
        instance_seal=instance.seal,
        cutoff=str(instance.cutoff),
        system=system,
        frozen_path=ws.relative(frozen_path),
        frozen_seal=bundle.frozen.seal,
        frozen_version=bundle.frozen.version,
        n_questions=len(questions),
        retriever=None,
        judge=RunJudge(**judge.info().model_dump(mode="json"), spec=judge_spec_of(judge, ws)),
        judge_settings=judge.settings(),
        settings_sha256=settings_sha,
        run_settings=settings,
        started_at=started,
        valid=None,
        leakage=[],
    )
    folder.write_run(run)

    retrievals = prep.retrievals(ws, progress=progress)
    retriever = (
        {**retrievals[0].retriever, "k": retrievals[0].k} if retrievals else instance.retrieval.model_dump(mode="json")
    )
    run = run.updated(retriever=retriever)

    outcome = judge_all(
        judge,
        questions,
        retrievals,
        run_dir,
        progress=progress,
        on_judged=on_judged,
        seed=settings_sha,
        ws=ws,
        max_cost=max_cost,
    )
    judgments, judged_now = outcome.judgments, outcome.judged_now
    price = judge.price
    spent = outcome.ledger.spent if outcome.ledger else None
    if outcome.stopped and not n_failed(judgments):
        assert outcome.ledger is not None
        run = run.updated(
            status="incomplete",
            judged_last_invocation=judged_now,
            judge_stats_last_invocation=judge_stats(judge) + outcome.worker_stats,
            cost=run_cost(judgments, price, spent),
        )
        folder.write_run(run)
        currency = price.currency if price else ""
        if outcome.ledger.overrun:
            raise CheckFailed(
                f"stopped: {outcome.ledger.overrun}; {spent:.4f} of --max-cost {max_cost:g} {currency} spent, "
                f"{len(judgments)} of {len(questions)} questions judged. The run {ws.relative(run_dir)} is "
                "incomplete: check the endpoint's usage reports before going on"
            )
        raise CheckFailed(
            f"stopped before the budget: {spent:.4f} of --max-cost {max_cost:g} {currency} spent, "
            f"{len(judgments)} of {len(questions)} questions judged ({judged_now} now); the next, "
            f"{outcome.ledger.stopped_at}, could pass it at its worst case. The run {ws.relative(run_dir)} is "
            f"incomplete: rerun `backtest score` with a larger --max-cost to go on"
        )
    failed = n_failed(judgments)
    if failed:
        run = run.updated(
            status="incomplete",
            n_judge_failed=failed,
            judged_last_invocation=judged_now,
            judge_stats_last_invocation=judge_stats(judge) + outcome.worker_stats,
        )
        folder.write_run(run)
        reasons = [f"{j.question_id}: {j.needs_review[0]}" for j in judgments if j.failed]
        raise CheckFailed(
            f"{failed} of {len(questions)} judgments failed (the judge gave no usable answer); the run "
            f"{ws.relative(run_dir)} is incomplete: rerun `backtest score` to retry them; first: {reasons[0]}",
            reasons,
        )
    valid, leakage = leakage_hook(run_dir, ws)
    from backtest.validity.contamination import run_hook as contamination_hook

    contamination = contamination_hook(run_dir, questions, instance, ws, bundle.frozen)  # contamination.json
    metrics = _metrics(questions, judgments, retrievals, instance.cutoff)
    metrics = metrics.updated(run_id=run_id, valid=valid, leakage=leakage)
    folder.write_metrics(metrics)
    stats = judge_stats(judge) + outcome.worker_stats
    run = run.updated(
        status="complete",
        finished_at=_now(),
        valid=valid,
        leakage=leakage,
        contamination=contamination,
        n_needs_review=sum(1 for j in judgments if j.needs_review),
        judge_stats_last_invocation=stats,
        judged_last_invocation=judged_now,
        tokens_total=TokensTotal(
            prompt_tokens=sum(j.tokens.get("prompt_tokens", 0) for j in judgments),
            completion_tokens=sum(j.tokens.get("completion_tokens", 0) for j in judgments),
        ),
        cost=run_cost(judgments, price, spent),
    )
    validity = run_validity(ws, run.judge).line
    write_reports(run_dir, run, questions, retrievals, judgments, metrics, validity)
    folder.write_run(run)
    folder.write_seal(run_id)
    return ScoreResult(run_dir, run_id, "complete", len(questions), judged_now, stats, metrics, valid, run.cost)
