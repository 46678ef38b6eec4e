"""``backtest compare RUN_DIR...``: runs side by side, with tests between them."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option
from backtest.cli.estimate import labels_option


@click.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    type=OutPath(path_type=Path),
    help="FILE.md, FILE.json or FILE.html, or a folder for compare.{md,json,html}.",
)
@click.option("--allow-invalid", is_flag=True, help="Include runs marked valid=false (shown as INVALID everywhere).")
@labels_option()
@json_option
def compare_cmd(run_dirs, out, allow_invalid, labels, as_json):
    """Compare runs: systems x metrics with 95% CP intervals, Fisher tests, leaderboard.

    With --labels (a readers' sample of each run) the leaderboard ranks by rates grounded in careful reading
    (PPI++ per run) with the judge-only rates beside them; without, the ranking is the judge's alone.
    """
    from backtest.analysis.compare import compare_runs, render_markdown, write_outputs
    from backtest.core.records import output_dict

    comparison = compare_runs(list(run_dirs), allow_invalid=allow_invalid, labels=labels)
    if out:
        for path in write_outputs(comparison, out):
            click.echo(f"wrote {path}", err=True)
    if as_json:
        echo_json(output_dict(comparison))
    else:
        click.echo(render_markdown(comparison))


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [compare_cmd]
