"""``backtest contamination FROZEN_DIR|RUN_DIR``: the contamination probe."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, workspace
from backtest.core.errors import CheckFailed


@click.command("contamination")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the typed record (contamination.json schema) to this file.",
)
@click.option(
    "--max-rate",
    type=click.FloatRange(0, 1),
    default=None,
    help="Exit 1 when the share of flagged questions is above this (e.g. 0 for a past-only set).",
)
@click.option("--limit", type=click.IntRange(0), default=20, show_default=True, help="Flagged questions listed.")
@json_option
@click.pass_context
def contamination(ctx, path, out, max_rate, limit, as_json):
    """Contamination probe of a frozen set (PATH: its folder, or a run folder naming it).

    Flags each question term (catalogued object, named instrument/mission/survey, content
    n-gram of 1-3 words) that occurs in the instance's future corpus but never in its past
    corpus, and reports the share of questions with at least one (95% Clopper-Pearson
    interval). Runs only on an intact frozen set, after freezing, as scoring does; the
    definition and thresholds are in docs/validity.md.
    """
    from backtest.validity.contamination import probe_path, render_text, write_report

    ws = workspace(ctx)
    target = ws.check_output(out) if out is not None else None  # refused before any work
    report = probe_path(path, ws)
    if target is not None:
        write_report(target, report)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(render_text(report, limit=limit), nl=False)
        if out is not None:
            click.echo(f"wrote {out}")
    rate = report.rate.rate
    if max_rate is not None and rate is not None and rate > max_rate:
        raise CheckFailed(
            f"contamination probe: {report.rate.k}/{report.rate.n} questions flagged ({rate:.3f}), "
            f"above --max-rate {max_rate:g}"
        )


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [contamination]
