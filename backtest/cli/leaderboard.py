"""``backtest leaderboard``: a static site of scored runs."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, workspace
from backtest.cli.estimate import labels_option


@click.command("leaderboard")
@click.argument("run_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--all", "all_runs", is_flag=True, help="Every complete run under the workspace's results/.")
@click.option(
    "--out",
    "out",
    required=True,
    type=OutPath(file_okay=False, path_type=Path),
    help="Folder for the site (index.html, <instance>/index.html, <instance>/<system>.html).",
)
@click.option("--allow-invalid", is_flag=True, help="Include runs marked valid=false (shown as INVALID everywhere).")
@labels_option()
@click.pass_context
def leaderboard_cmd(ctx, run_dirs, all_runs, out, allow_invalid, labels):
    """Build a static leaderboard site from scored runs: per instance the systems x metrics table with 95%
    intervals, Fisher/Holm bands and a forest plot; per system every question, its labels and the documents
    the judge was shown. Self-contained (no CDN), sortable tables, opens from file://.

    With --labels, or with --all and labelled samples under judges/validation/, tables rank by coverage
    grounded in careful reading (PPI++ per run); judge-only rates stand beside it."""
    from backtest.analysis.estimate import discover_label_sets
    from backtest.analysis.leaderboard import build_site, discover_runs

    if bool(run_dirs) == all_runs:
        raise click.UsageError("name run folders or pass --all (not both)")
    ws = workspace(ctx)
    runs = discover_runs(ws) if all_runs else list(run_dirs)
    if all_runs and not labels:
        labels = tuple(discover_label_sets(ws))
        if labels:
            click.echo(f"grounded in the labelled samples {', '.join(ws.relative(p) for p in labels)}", err=True)
    pages = build_site(runs, out, allow_invalid=allow_invalid, labels=labels)
    click.echo(f"wrote {len(pages)} pages; open {pages[0]}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [leaderboard_cmd]
