"""``backtest report RUN_DIR``: a finished run's report, redrawn from its files."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import workspace


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
    frozen = Path(run.frozen_path)
    bundle = load_frozen(frozen if frozen.is_absolute() else ws.root / frozen)
    md, page = write_reports(
        run_dir, run, bundle.questions, retrievals, judgments, metrics, run_validity(ws, run.judge).line
    )
    click.echo(f"wrote {md} and {page}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [report]
