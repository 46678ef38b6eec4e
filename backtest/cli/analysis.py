"""``backtest import sqb | sqb-annotation``, ``backtest compare``, ``backtest leaderboard``, ``backtest agree``."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option, workspace
from backtest.cli.estimate import labels_option
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

    comparison = compare_runs(list(run_dirs), allow_invalid=allow_invalid, labels=labels)
    if out:
        for path in write_outputs(comparison, out):
            click.echo(f"wrote {path}", err=True)
    if as_json:
        echo_json(comparison)
    else:
        click.echo(render_markdown(comparison))


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
COMMANDS = [import_group, compare_cmd, leaderboard_cmd, agree_cmd]
