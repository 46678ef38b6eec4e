"""``backtest estimate``: label-grounded rates (PPI++) per run, with intervals (:mod:`backtest.analysis.estimate`)."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option, workspace


def labels_option(required: bool = False):
    """``--labels DIR`` (repeatable): annotate export folders with readers' labels and a per-run sample design."""
    return click.option(
        "--labels",
        "labels",
        multiple=True,
        required=required,
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        help="An annotate export folder (decode.json with a --per-run sample, labels/*.jsonl); repeatable. "
        "Rates are then grounded in careful reading (PPI++ per run).",
    )


@click.command("estimate")
@click.argument("runs", nargs=-1, required=True)
@labels_option(required=True)
@click.option(
    "--out",
    type=OutPath(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the JSON report here (never inside a RUN folder or a --labels folder: their files are theirs).",
)
@json_option
@click.pass_context
def estimate_cmd(ctx, runs, labels, out, as_json):
    """Label-grounded rates of each RUN: the judge's labels on every question and careful reading's on a
    random sample, combined by prediction-powered inference (PPI++, per run).

    For each run and rate (coverage, answered, partially_addressed, posed_but_open, premise refuted, supported,
    weakened): the estimate, its 95% interval, N, n labelled, effective n, lambda, the judge-only and labels-only
    rates and the judge's kappa on the sample; then the differences between runs, Holm-corrected. A judge that
    collapses onto one label is flagged. Every RUN must have been sampled by one of the --labels folders, and
    each sample is drawn again from its seed and checked against the runs before any label counts.
    """
    from backtest.analysis.estimate import check_out, estimate_runs, render_text
    from backtest.core.fileio import write_json

    ws = workspace(ctx)
    if out:
        check_out(out, runs, labels, ws)
    report, _ = estimate_runs(runs, labels, ws)
    data = report.model_dump(mode="json", by_alias=True)
    if out:
        write_json(out, data)
    if as_json:
        echo_json(data)
        return
    click.echo(render_text(report), nl=False)


COMMANDS = [estimate_cmd]
