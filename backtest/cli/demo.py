"""``backtest demo``: a small real submission frozen and scored offline."""

from __future__ import annotations

import click

from backtest.cli.common import (
    progress_enabled,
    run_validity_line,
    workspace,
)


@click.command("demo")
@click.option(
    "--instance", "instance_id", default="astro-2025-ep", show_default=True, help="A built instance (make instances)."
)
@click.option("--n", "n_questions", default=12, show_default=True, help="Questions in the demo submission.")
@click.option("--seed", default=0, show_default=True)
@click.pass_context
def demo(ctx, instance_id, n_questions, seed):
    """Make a small real submission from past-corpus claims, freeze it, score it offline, print the report path."""
    from backtest.studies.demo import run_demo

    ws = workspace(ctx)
    result = run_demo(ws, instance_id, n=n_questions, seed=seed, progress=progress_enabled())
    click.echo(f"demo scored: {result.run_dir}")
    click.echo(run_validity_line(ws, result.run_dir))
    click.echo(f"report: {result.run_dir / 'report.html'}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [demo]
