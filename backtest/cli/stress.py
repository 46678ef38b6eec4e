"""``backtest stress``: the same generators at several cutoffs."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import (
    OutPath,
    echo_json,
    json_option,
    k_option,
    retriever_option,
    split_values,
    workspace,
)
from backtest.core.errors import BadInput
from backtest.core.records import RetrievalSettings


@click.command("stress")
@click.argument("generators", nargs=-1, metavar="GENERATOR...|RUN_DIR...")
@click.option(
    "--from-runs",
    is_flag=True,
    help="The arguments are scored run folders (e.g. an imported release's results/sqb-stress-c*/*/sqb-release): "
    "tabulate them, a row per run at its instance's cutoff; nothing is built, frozen or scored.",
)
@click.option("--cutoffs", help="Comma-separated cutoff dates, each a full instance (required unless --from-runs).")
@click.option("--source", default="arxiv-archive", show_default=True)
@click.option(
    "--input", "inputs", multiple=True, help="Source input path(s); repeatable (required unless --from-runs)."
)
@click.option("--categories", multiple=True, help="Comma-separated or repeated categories.")
@click.option("--query", help="'|'-separated phrases a record must contain.")
@click.option(
    "--years-before",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Past window length in years.",
)
@click.option(
    "--years-after",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Future window length in years.",
)
@click.option("--n", type=click.IntRange(1), default=50, show_default=True, help="Questions per generator and cutoff.")
@click.option("--seed", type=int, default=0, show_default=True)
@retriever_option
@k_option("Future documents shown to the judge per question.")
@click.option("--judge", "judge_config", type=click.Path(), help="Judge config; default: the offline judge.")
@click.option(
    "--id", "stress_id", default="stress", show_default=True, help="Prefix of the corpora and instances built."
)
@click.option(
    "--out", type=OutPath(path_type=Path), help="Folder for STRESS.md and STRESS.json (default: results/stress/<id>/)."
)
@json_option
@click.pass_context
def stress_cmd(
    ctx,
    generators,
    from_runs,
    cutoffs,
    source,
    inputs,
    categories,
    query,
    years_before,
    years_after,
    n,
    seed,
    retriever,
    k,
    judge_config,
    stress_id,
    out,
    as_json,
):
    """Run the same generators at several cutoffs (each a full instance), freeze, score, and tabulate the rates.

    With --from-runs, tabulate existing scored runs instead (RUN_DIR...), such as the
    release's stress test imported by `backtest import sqb`.
    """
    from backtest.studies.prospective.commit import parse_dates
    from backtest.studies.stress import StressOptions, run_stress, stress_from_runs

    ws = workspace(ctx)
    if from_runs:
        build = {
            "--cutoffs": cutoffs,
            "--input": inputs,
            "--categories": categories,
            "--query": query,
            "--judge": judge_config,
        }
        given = [name for name, value in build.items() if value]
        if given:
            raise BadInput(f"{given[0]} does not apply with --from-runs (the runs are tabulated as they are)")
        _show_stress(stress_from_runs(list(generators), ws, stress_id=stress_id, out=out), as_json)
        return
    if not generators:
        raise BadInput("name at least one generator (or pass --from-runs with run folders)")
    if not cutoffs:
        raise BadInput("--cutoffs: at least one cutoff date is needed")
    if not inputs:
        raise BadInput("--input: at least one source input is needed")
    opts = StressOptions(
        generators=list(generators),
        cutoffs=parse_dates(cutoffs, "--cutoffs"),
        source=source,
        inputs=list(inputs),
        categories=split_values(categories),
        query=query,
        years_before=years_before,
        years_after=years_after,
        n=n,
        seed=seed,
        retrieval=RetrievalSettings(method=retriever, k=k),
        judge_config=judge_config,
        stress_id=stress_id,
        out=out,
    )
    _show_stress(run_stress(opts, ws), as_json)


def _show_stress(table: dict, as_json: bool) -> None:
    if as_json:
        echo_json(table)
        return
    click.echo(Path(table["markdown_path"]).read_text(encoding="utf-8"))
    click.echo(f"wrote {table['markdown_path']} and {table['json_path']}", err=True)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [stress_cmd]
