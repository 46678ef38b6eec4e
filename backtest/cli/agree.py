"""``backtest agree LABELS...``: agreement between label files."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option


@click.command("agree")
@click.argument("label_files", nargs=-1, required=True)
@click.option(
    "--field", "field_name", type=click.Choice(["outcome", "premise_status"]), default="outcome", show_default=True
)
@click.option("--html", "html_out", type=OutPath(dir_okay=False, path_type=Path), help="Write an HTML heat map here.")
@json_option
def agree_cmd(label_files, field_name, html_out, as_json):
    """Agreement between raters on the items they all label.

    Each LABEL_FILE is a rater: a judgments/outcomes/rater JSONL file, a run folder, or
    NAME=PATH[,PATH...] for a rater spread over several files.
    """
    from backtest.analysis.agreement import agreement, load_rater, render_html, render_text
    from backtest.core.fileio import atomic_write_text

    result = agreement([load_rater(spec) for spec in label_files], field_name)
    if html_out:
        atomic_write_text(html_out, render_html(result))
        click.echo(f"wrote {html_out}", err=True)
    if as_json:
        echo_json(result)
    else:
        click.echo(render_text(result), nl=False)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [agree_cmd]
