"""Committed results and their replay: a run in the compact form a repository can hold, re-scored from scratch.

A scored run folder holds what cannot be recomputed cheaply and much that can. :func:`compact_run` turns a
complete run, in place, into its **compact form**, the files a benchmark release commits:

* ``RUN.json`` without what differs between two identical scorings (start and finish times, this
  invocation's counters, the backtest version that wrote it) and with ``"compact": COMPACT`` added;
* ``judgments.jsonl``, ``metrics.json`` and ``contamination.json`` (when the probe ran) as they are;
* ``retrieval.jsonl`` with each document reduced to its id, rank, score and date, plus ``shown_sha256``, the
  sha256 of the title and abstract exactly as the judge was shown them: the text itself is re-materialised
  from the sealed future corpus (:func:`backtest.retrieve.compact.rematerialise`), checked against that hash;
* the reports (``report.md``, ``report.html``) are removed: they are redrawn from the rest;
* ``SEAL.json`` (:mod:`backtest.scoring.runseal`) holds the sha256 of the compact files, made again.

:func:`replay` re-scores every compact run of a workspace from its frozen set, with the judge its
``RUN.json`` names (:func:`replay_judge`: only the very judge the run was judged with, and one that calls no
endpoint unless ``allow_endpoint``; every run's judge is checked before any is used), in a scratch workspace
that shares the corpora, manifests, judges and caches and copies the frozen sets (so nothing under
``results/`` is touched while it runs), compacts the new run the same way and compares the files byte for
byte: with ``write=True`` the committed files are replaced by the replayed ones (``make replay`` then runs
``git diff --exit-code results/``), else the differences are only reported.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes
from backtest.core.records import Retrieval, output_bytes, parse_record
from backtest.core.runs import Run
from backtest.core.workspace import Workspace
from backtest.judge.protocol import Judge
from backtest.retrieve.compact import compact_retrieval
from backtest.studies.release_compare import Difference, changed_files, compare_run_files
from backtest.validity.runfolder import SEAL_FILE, SEALED, RunFolder, seal_bytes

COMPACT = "compact-v1"  # RUN.json "compact": the form below (its version, should it change)
VOLATILE_RUN_KEYS = (
    "started_at",
    "finished_at",
    "judge_stats_last_invocation",
    "judged_last_invocation",
    "backtest_version",
)
KEPT = ("RUN.json", "judgments.jsonl", "metrics.json", "retrieval.jsonl", "contamination.json", SEAL_FILE)
SHARED_FOLDERS = ("corpora", "manifests", "judges", ".cache")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, sort_keys=True, ensure_ascii=False).encode() + b"\n" for r in rows)


def compact_files(run_dir: Path) -> dict[str, bytes]:
    """The compact form of a complete run folder (module docstring), as file name -> bytes."""
    run_dir = Path(run_dir)
    folder = RunFolder.open(run_dir)
    run = folder.run
    if is_compact(run):  # as they are, sealed again (a run compacted before seals gains its SEAL.json)
        files = folder.file_bytes(SEALED)
        return {**files, SEAL_FILE: seal_bytes(run.run_id, files)}
    if run.status != "complete":
        raise BadInput(f"{run_dir}: not a complete run (status {run.status!r}); score it to the end first")
    kept = run.model_dump(exclude_unset=True, exclude=set(VOLATILE_RUN_KEYS))
    if run.cost is not None:
        kept["cost"] = run.cost.model_dump(exclude_unset=True, exclude={"spent_last_invocation"})
    slim = Run.model_validate({**kept, "compact": COMPACT})
    retrievals = []
    for n, row in folder.rows("retrieval.jsonl"):
        parse_record(Retrieval, row, f"{run_dir / 'retrieval.jsonl'}:{n}")
        retrievals.append(compact_retrieval(row))
    # judgments and metrics as they are; the probe's per-question terms where it ran
    kept_bytes = folder.require("judgments.jsonl", "metrics.json").file_bytes(
        ("judgments.jsonl", "metrics.json", "contamination.json")
    )
    files = {
        "RUN.json": output_bytes(slim),
        "judgments.jsonl": kept_bytes["judgments.jsonl"],
        "metrics.json": kept_bytes["metrics.json"],
        "retrieval.jsonl": _jsonl(retrievals),
    }
    if "contamination.json" in kept_bytes:
        files["contamination.json"] = kept_bytes["contamination.json"]
    files[SEAL_FILE] = seal_bytes(run.run_id, files)  # the compact files' own hashes
    return files


def compact_run(run_dir: Path) -> list[Path]:
    """Rewrite a complete run folder, in place, as its compact form; returns the files it now holds."""
    run_dir = Path(run_dir)
    files = compact_files(run_dir)
    for name, data in files.items():
        atomic_write_bytes(run_dir / name, data)
    for extra in run_dir.iterdir():
        if extra.is_file() and extra.name not in files:
            extra.unlink()
    return sorted(run_dir / name for name in files)


def is_compact(run: Run) -> bool:
    """True for a run in the compact form a release commits."""
    return run.compact == COMPACT


def committed_runs(ws: Workspace) -> list[Path]:
    """The compact run folders under ``ws.results`` (``<instance>/<system>/<run>/``), in path order."""
    found = []
    for path in sorted(ws.results.glob("*/*/*/RUN.json")):
        with contextlib.suppress(BadInput):
            if is_compact(RunFolder(path.parent).run):
                found.append(path.parent)
    return found


@contextlib.contextmanager
def scratch_workspace(ws: Workspace) -> Iterator[Workspace]:
    """A temporary workspace whose corpora, manifests, judges and caches are ``ws``'s (links), with a copy of
    its frozen sets and ledger and results of its own."""
    with tempfile.TemporaryDirectory(prefix="backtest-replay-") as tmp:
        root = Path(tmp)
        for name in SHARED_FOLDERS:
            if (ws.root / name).exists():
                (root / name).symlink_to((ws.root / name).resolve())
        if ws.frozen.is_dir():  # copied, not linked: scoring reads only frozen sets inside its own workspace
            shutil.copytree(ws.frozen, root / "frozen", symlinks=True)
        yield Workspace(root)


@dataclass
class Replayed:
    """One committed run replayed: its folder, the files that changed (beyond score noise), what changed in
    them, and the largest score move within the tolerance."""

    run_dir: Path
    changed: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    max_score_move: float = 0.0


def replay_judge(run: Run, run_dir: Path, ws: Workspace, allow_endpoint: bool = False) -> Judge:
    """The judge a committed run's ``RUN.json`` names (``judge.spec``), made in ``ws`` but not yet used.

    ``RUN.json`` is data any pull request can edit, so the judge it names is refused (one line) unless it calls
    no endpoint (an LLM judge would send every question, and its key, wherever its config points), or
    ``allow_endpoint`` says to call it; and unless it is the judge the run was judged with: its config sha256
    (the offline judge's: its weights' and model's) must be the run's ``judge.config_sha256``."""
    from backtest.judge import get_judge

    spec = run.judge.spec
    if not spec:
        raise BadInput(f"{run_dir}/RUN.json: names no judge (judge.spec); it cannot be replayed")
    judge = get_judge(spec, ws)
    if judge.calls_endpoint and not allow_endpoint:
        raise BadInput(
            f"{run_dir}/RUN.json: its judge {spec} calls an endpoint; a replay calls none unless told to "
            "(--allow-endpoint), since a committed RUN.json can name any judge config"
        )
    recorded, now = run.judge.config_sha256, judge.info().config_sha256
    if recorded != now:
        raise CheckFailed(
            f"{run_dir}/RUN.json: its judge {spec} is not the one the run was judged with (config sha256 "
            f"{str(now)[:12]}…, the run's {str(recorded)[:12]}…); a replay reproduces a run with its own judge"
        )
    return judge


def replay(ws: Workspace, write: bool = False, progress: bool = False, allow_endpoint: bool = False) -> list[Replayed]:
    """Re-score every compact run of ``ws`` from scratch and compare (module docstring); every run's judge is
    checked (:func:`replay_judge`) before the first is scored."""
    from backtest.scoring.score import score_frozen

    results = []
    runs = committed_runs(ws)
    with scratch_workspace(ws) as scratch:
        metas = [RunFolder.open(run_dir).run for run_dir in runs]
        judges = [replay_judge(run, run_dir, scratch, allow_endpoint) for run, run_dir in zip(metas, runs)]
        for run_dir, run, judge in zip(runs, metas, judges):
            scored = score_frozen(
                scratch.root / run.frozen_path, scratch, judge=judge, run_id=run.run_id, progress=progress
            )
            fresh = compact_files(scored.run_dir)
            committed = {name: (run_dir / name).read_bytes() for name in KEPT if (run_dir / name).is_file()}
            replayed = compared(run_dir, committed, fresh)
            if write:
                write_changed(run_dir, replayed.changed, fresh, run.run_id)
            results.append(replayed)
    return results


def compared(run_dir: Path, committed: dict[str, bytes], fresh: dict[str, bytes]) -> Replayed:
    """A replayed run's files against the committed ones (:func:`~backtest.studies.release_compare.compare_run_files`:
    what readers and judges are shown exactly, scores within its tolerance). ``SEAL.json`` is derived, not
    compared: a score moved within the tolerance keeps its committed bytes, so the replay's seal of the moved bytes
    may differ; when nothing else changed, the committed seal must seal the committed files."""
    comparisons = compare_run_files(
        {n: b for n, b in committed.items() if n != SEAL_FILE}, {n: b for n, b in fresh.items() if n != SEAL_FILE}
    )
    differences = [d for c in comparisons for d in c.differences]
    changed = changed_files(comparisons)
    run_id = str(json.loads(committed.get("RUN.json", b"{}")).get("run_id", ""))
    if not changed and committed.get(SEAL_FILE) != seal_bytes(run_id, committed):
        changed.append(SEAL_FILE)
        differences.append(Difference(SEAL_FILE, "", "does not seal the committed files"))
    return Replayed(run_dir, changed, differences, max((c.max_score_move for c in comparisons), default=0.0))


def write_changed(run_dir: Path, changed: list[str], fresh: dict[str, bytes], run_id: str) -> None:
    """Replace the committed files that changed by the replayed ones and seal the result; a file whose scores moved
    only within the tolerance keeps its committed bytes (so ``git diff`` shows real changes only)."""
    if not changed:
        return
    for name in changed:
        if name == SEAL_FILE:
            continue
        if name in fresh:
            atomic_write_bytes(run_dir / name, fresh[name])
        else:
            (run_dir / name).unlink()
    files = {name: (run_dir / name).read_bytes() for name in SEALED if (run_dir / name).is_file()}
    atomic_write_bytes(run_dir / SEAL_FILE, seal_bytes(run_id, files))


__all__ = ["compact_files", "compact_run", "committed_runs", "is_compact", "replay", "replay_judge"]
