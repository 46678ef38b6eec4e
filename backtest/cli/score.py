"""``backtest score FROZEN_DIR``, ``backtest report RUN_DIR`` and ``backtest demo``."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, progress_enabled, workspace


def _validity_line(ws, run_dir: Path) -> str:
    """The judge-validity line of a finished run (its judge's card, or that it has none)."""
    from backtest.core.fileio import read_json
    from backtest.judge.cards import run_validity

    return run_validity(ws, read_json(run_dir / "RUN.json")["judge"])["line"]


@click.command("score")
@click.argument("frozen_dir", type=click.Path(path_type=Path))
@click.option(
    "--judge",
    "judge_spec",
    default=None,
    help="Judge config (judges/NAME.toml) or name; default: the instance's judge, else 'offline'.",
)
@click.option("--run-id", default=None, help="Run folder name (default: <judge>-<hash of all settings>).")
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal)."
)
@json_option
@click.pass_context
def score(ctx, frozen_dir, judge_spec, run_id, progress, as_json):
    """Retrieve, judge and compute metrics for a frozen set (resumable).

    Writes results/<instance>/<system>/<run-id>/ with RUN.json, retrieval.jsonl,
    judgments.jsonl, metrics.json, report.md and report.html. Rerun after an
    interruption to continue; nothing is judged twice and no run is overwritten.
    """
    from backtest.scoring.score import score_frozen

    ws = workspace(ctx)
    result = score_frozen(
        frozen_dir,
        ws,
        judge_spec=judge_spec,
        run_id=run_id,
        progress=progress_enabled() if progress is None else progress,
    )
    summary = {
        "run_dir": str(result.run_dir),
        "run_id": result.run_id,
        "status": result.status,
        "n_questions": result.n_questions,
        "judged_now": result.judged_now,
        "valid": result.valid,
        "http_calls": result.judge_stats.get("http_calls", 0),
        "cache_hits": result.judge_stats.get("cache_hits", 0),
        "prompt_tokens": result.judge_stats.get("prompt_tokens", 0),
        "completion_tokens": result.judge_stats.get("completion_tokens", 0),
        "judge_validity": _validity_line(ws, result.run_dir),
    }
    if as_json:
        echo_json(summary)
        return
    click.echo(
        f"{result.status}: {result.run_id} ({result.n_questions} questions, {result.judged_now} judged now, "
        f"{summary['http_calls']} HTTP calls, {summary['cache_hits']} cache hits, "
        f"{summary['prompt_tokens'] + summary['completion_tokens']} new tokens; valid={result.valid})"
    )
    click.echo(summary["judge_validity"])
    click.echo(f"report: {result.run_dir / 'report.html'}")


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.pass_context
def report(ctx, run_dir):
    """Redraw report.md and report.html of a finished run from its files."""
    from backtest.judge.cards import run_validity
    from backtest.scoring.report import write_reports
    from backtest.scoring.score import load_run_files
    from backtest.submit.freeze import load_frozen

    ws = workspace(ctx)
    run, retrievals, judgments, metrics = load_run_files(run_dir)
    frozen = Path(run["frozen_path"])
    bundle = load_frozen(frozen if frozen.is_absolute() else ws.root / frozen)
    md, page = write_reports(
        run_dir, run, bundle.questions, retrievals, judgments, metrics, run_validity(ws, run["judge"])["line"]
    )
    click.echo(f"wrote {md} and {page}")


@click.command("demo")
@click.option("--instance", "instance_id", default="astro-2025", show_default=True, help="A built instance.")
@click.option("--n", "n_questions", default=12, show_default=True, help="Questions in the demo submission.")
@click.option("--seed", default=0, show_default=True)
@click.pass_context
def demo(ctx, instance_id, n_questions, seed):
    """Make a small real submission from past-corpus claims, freeze it, score it offline, print the report path."""
    from backtest.studies.demo import run_demo

    ws = workspace(ctx)
    result = run_demo(ws, instance_id, n=n_questions, seed=seed, progress=progress_enabled())
    click.echo(f"demo scored: {result.run_dir}")
    click.echo(_validity_line(ws, result.run_dir))
    click.echo(f"report: {result.run_dir / 'report.html'}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [score, report, demo]
