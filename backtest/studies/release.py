"""Committed results and their replay: a run in the compact form a repository can hold, re-scored from scratch.

A scored run folder holds what cannot be recomputed cheaply and much that can. :func:`compact_run` turns a
complete run, in place, into its **compact form**, the files a benchmark release commits:

* ``RUN.json`` without what differs between two identical scorings (start and finish times, this
  invocation's counters, the backtest version that wrote it) and with ``"compact": COMPACT`` added;
* ``judgments.jsonl``, ``metrics.json`` and ``contamination.json`` (when the probe ran) as they are;
* ``retrieval.jsonl`` with each document reduced to its id, rank, score and date, plus ``shown_sha256``, the
  sha256 of the title and abstract exactly as the judge was shown them: the text itself is re-materialised
  from the sealed future corpus (:func:`backtest.retrieve.compact.rematerialise`), checked against that hash;
* the reports (``report.md``, ``report.html``) are removed: they are redrawn from the rest.

:func:`replay` re-scores every compact run of a workspace from its frozen set, with the judge its
``RUN.json`` names, in a scratch workspace that shares the corpora, manifests, judges and caches and copies
the frozen sets (so nothing under ``results/`` is touched while it runs), compacts the new run the same way and
compares the files byte for byte: with ``write=True`` the committed files are replaced by the replayed ones
(``make replay`` then runs ``git diff --exit-code results/``), else the differences are only reported.
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

from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_bytes, iter_jsonl
from backtest.core.records import Retrieval, output_dict, parse_record, read_output
from backtest.core.workspace import Workspace
from backtest.retrieve.compact import compact_retrieval
from backtest.scoring.outputs import Run
from backtest.studies.release_compare import Difference, changed_files, compare_run_files

COMPACT = "compact-v1"  # RUN.json "compact": the form below (its version, should it change)
VOLATILE_RUN_KEYS = (
    "started_at",
    "finished_at",
    "judge_stats_last_invocation",
    "judged_last_invocation",
    "backtest_version",
)
KEPT = ("RUN.json", "judgments.jsonl", "metrics.json", "retrieval.jsonl", "contamination.json")
SHARED_FOLDERS = ("corpora", "manifests", "judges", ".cache")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, sort_keys=True, ensure_ascii=False).encode() + b"\n" for r in rows)


def compact_files(run_dir: Path) -> dict[str, bytes]:
    """The compact form of a complete run folder (module docstring), as file name -> bytes."""
    run_dir = Path(run_dir)
    run = read_output(Run, run_dir / "RUN.json")
    if is_compact(run):
        return {name: (run_dir / name).read_bytes() for name in KEPT if (run_dir / name).is_file()}
    if run.status != "complete":
        raise BadInput(f"{run_dir}: not a complete run (status {run.status!r}); score it to the end first")
    slim = {k: v for k, v in output_dict(run).items() if k not in VOLATILE_RUN_KEYS}
    if isinstance(slim.get("cost"), dict):
        slim["cost"] = {k: v for k, v in slim["cost"].items() if k != "spent_last_invocation"}
    slim["compact"] = COMPACT
    retrievals = []
    for n, row in iter_jsonl(run_dir / "retrieval.jsonl"):
        parse_record(Retrieval, row, f"{run_dir / 'retrieval.jsonl'}:{n}")
        retrievals.append(compact_retrieval(row))
    files = {
        "RUN.json": (json.dumps(slim, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode(),
        "judgments.jsonl": (run_dir / "judgments.jsonl").read_bytes(),
        "metrics.json": (run_dir / "metrics.json").read_bytes(),
        "retrieval.jsonl": _jsonl(retrievals),
    }
    if (run_dir / "contamination.json").is_file():  # the probe's per-question terms (absent where it could not run)
        files["contamination.json"] = (run_dir / "contamination.json").read_bytes()
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
            if is_compact(read_output(Run, path)):
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


def replay(ws: Workspace, write: bool = False, progress: bool = False) -> list[Replayed]:
    """Re-score every compact run of ``ws`` from scratch and compare (module docstring)."""
    from backtest.scoring.score import score_frozen

    results = []
    runs = committed_runs(ws)
    with scratch_workspace(ws) as scratch:
        for run_dir in runs:
            run = read_output(Run, run_dir / "RUN.json")
            scored = score_frozen(
                scratch.root / run.frozen_path,
                scratch,
                judge_spec=run.judge.get("spec"),
                run_id=run.run_id,
                progress=progress,
            )
            fresh = compact_files(scored.run_dir)
            committed = {name: (run_dir / name).read_bytes() for name in KEPT if (run_dir / name).is_file()}
            replayed = compared(run_dir, committed, fresh)
            if write:
                write_changed(run_dir, replayed.changed, fresh)
            results.append(replayed)
    return results


def compared(run_dir: Path, committed: dict[str, bytes], fresh: dict[str, bytes]) -> Replayed:
    """A replayed run's files against the committed ones (:func:`~backtest.studies.release_compare.compare_run_files`:
    what readers and judges are shown exactly, scores within its tolerance)."""
    comparisons = compare_run_files(committed, fresh)
    return Replayed(
        run_dir,
        changed_files(comparisons),
        [d for c in comparisons for d in c.differences],
        max((c.max_score_move for c in comparisons), default=0.0),
    )


def write_changed(run_dir: Path, changed: list[str], fresh: dict[str, bytes]) -> None:
    """Replace the committed files that changed by the replayed ones; a file whose scores moved only within the
    tolerance keeps its committed bytes (so ``git diff`` shows real changes only)."""
    for name in changed:
        if name in fresh:
            atomic_write_bytes(run_dir / name, fresh[name])
        else:
            (run_dir / name).unlink()


__all__ = ["compact_files", "compact_run", "committed_runs", "is_compact", "replay"]
