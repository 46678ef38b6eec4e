"""``backtest import sqb | sqb-annotation``: the reference release and its human labels, imported."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option
from backtest.core.errors import CheckFailed


@click.group("import")
def import_group() -> None:
    """Import other benchmarks' files as our own records."""


@import_group.command("sqb")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=OutPath(file_okay=False, path_type=Path),
    help="Folder to write into (a workspace root: manifests/, frozen/, results/, labels/).",
)
@click.option("--no-annotation", is_flag=True, help="Skip decoding the human annotation sheets.")
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse (exit 1, nothing written) when the release holds a file no import rule knows.",
)
@json_option
def import_sqb_cmd(path, out, no_annotation, strict, as_json):
    """Import the reference release at PATH: frozen sets, runs, metrics and human labels.

    Systems and stress-test cutoffs are discovered from the files present; every file
    not imported is listed with the reason, an unexpected one as a warning. Refused (exit 2,
    nothing written): a link leaving the release, a file name with a control character, two
    different rows for one question. Exit 1 when an imported run is invalid (its checks failed).
    """
    from backtest.interop.sqb import import_sqb

    summary = import_sqb(path, out, annotation=not no_annotation, strict=strict)
    invalid = summary["invalid_runs"]
    if as_json:
        echo_json(summary)
    else:
        _print_import(summary)
    if invalid:
        raise CheckFailed(
            f"{len(invalid)} of {len(summary['runs'])} imported runs are invalid; first: {invalid[0]['run']} "
            f"(failed: {', '.join(invalid[0]['failed'])})",
            [f"{r['run']}: failed {', '.join(r['failed'])}" for r in invalid],
        )


def _print_import(summary) -> None:
    """The human summary of an import: what was written, what was not and why."""
    click.echo(
        f"imported {len(summary['instances'])} instances, {len(summary['frozen'])} frozen sets and "
        f"{len(summary['runs'])} runs into {summary['out']}"
    )
    for run in summary["runs"]:
        click.echo(f"  run {run}")
    for labels in summary.get("labels", []):
        click.echo(f"  rater file {labels}")
    for note in summary["notes"]:
        click.echo(f"  note: {note}")
    by_reason: dict[str, list[str]] = {}
    for item in summary["skipped"]:
        by_reason.setdefault(item["reason"], []).append(item["path"])
    for reason, paths in by_reason.items():
        click.echo(f"  not imported ({len(paths)} file{'s' if len(paths) > 1 else ''}, e.g. {paths[0]}): {reason}")
    if summary["not_scanned"]:
        click.echo(f"  not scanned (outside the release's data folders): {', '.join(summary['not_scanned'])}")
    for item in summary["unexpected"]:
        click.echo(f"warning: not imported, unexpected file {item['path']}: {item['reason']}", err=True)


@import_group.command("sqb-annotation")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=OutPath(file_okay=False, path_type=Path),
    help="Folder for the rater files (annotator_<N>.jsonl).",
)
def import_sqb_annotation_cmd(path, out):
    """Decode the release's blinded annotation sheets (PATH: the release or its annotation/)."""
    from backtest.interop.sqb import import_annotation

    for written in import_annotation(path, out):
        click.echo(f"wrote {written}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [import_group]
