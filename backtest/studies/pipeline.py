"""The one freeze-and-score pipeline every study goes through (baselines, stress, prospective grading).

* **Freeze or reuse** (:func:`freeze_or_reuse`, the rule of ``backtest freeze`` too): a submission whose
  ``questions.jsonl`` and ``metadata.json`` are byte-identical to those of an intact frozen set of the
  same system on the same instance, sealed under the same gate settings, reuses it (no new version, no
  ledger line); anything else runs every gate and is sealed.
* **Score** (:func:`score`): the frozen set with its instance's retriever and judge.
* **Rates** (:func:`rates_of_run`): always read from the run's ``metrics.json``, so a table built here
  says exactly what ``backtest score`` printed.
"""

from __future__ import annotations

from pathlib import Path

from backtest.core.workspace import Workspace
from backtest.scoring.score import ScoreResult, score_frozen
from backtest.studies.outputs import StudyRates
from backtest.submit.freeze import freeze_once
from backtest.validity.runfolder import RunFolder


def freeze_or_reuse(
    submission_dir: str | Path, instance_id: str, ws: Workspace, dedup: str = "report"
) -> tuple[Path, bool]:
    """``(frozen folder, reused)`` for a submission: an intact identical frozen set, else a new freeze."""
    return freeze_once(submission_dir, instance_id, ws, dedup=dedup)


def score(
    frozen_path: str | Path,
    ws: Workspace,
    run_id: str | None = None,
    judge_spec: str | None = None,
    progress: bool = False,
) -> ScoreResult:
    """Score a frozen set (resuming a partial run of the same id)."""
    return score_frozen(Path(frozen_path), ws, run_id=run_id, judge_spec=judge_spec, progress=progress)


def rates_of_run(run_dir: str | Path) -> StudyRates:
    """Coverage, answered and premise-refuted rates (k, n, rate, 95% interval) from the run's metrics.json."""
    metrics = RunFolder(run_dir).metrics
    return StudyRates(
        n=metrics.n_questions,
        coverage=metrics.coverage,
        answered=metrics.answered_rate,
        refuted=metrics.premise_refutation_rate,
    )
