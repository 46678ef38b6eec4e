"""``backtest annotate export|import|merge|adjudicate|plan``: blinded items for careful reading, and labels back."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option, workspace
from backtest.core.errors import BadInput


@click.group("annotate")
def annotate_group() -> None:
    """Blinded annotation: export items for careful reading, import filled sheets."""


@annotate_group.command("export")
@click.argument("sources", nargs=-1, required=True)
@click.option("--n", "n", type=int, default=None, help="Number of items, split evenly over the runs (or --per-run).")
@click.option(
    "--per-run",
    type=int,
    default=None,
    help="A simple random sample of this many questions from each run (all of a smaller run): the design "
    "`backtest estimate` uses; decode.json records it.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw and the shuffle.")
@click.option(
    "--stratify",
    type=click.Choice(["outcome"]),
    default=None,
    help="Draw round-robin over the run judge's outcome labels, so rare labels are represented.",
)
@click.option(
    "--first-item",
    type=int,
    default=1,
    show_default=True,
    help="Number of the first item (exports made in batches can share one numbering).",
)
@click.option("--pairwise", is_flag=True, help="Export arena pairs: SOURCES are arena folders (with contexts.jsonl).")
@click.option(
    "--instance",
    "instance_id",
    default=None,
    help="With --pairwise and one arena folder outside results/<instance>/: the instance giving the context papers.",
)
@click.option(
    "--codebook",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Codebook copied beside the items (default: ../shared/reference/sqb/annotation/codebook.md when present).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sheet", "label-studio"]),
    default="sheet",
    show_default=True,
    help="label-studio: also write OUT/label-studio/tasks.json (Label Studio's task import) and config.xml (its "
    "labelling configuration); `annotate import` reads Label Studio's JSON export back.",
)
@click.option(
    "--out", type=OutPath(file_okay=False, path_type=Path), required=True, help="New (or empty) folder to write."
)
@click.pass_context
def annotate_export(ctx, sources, n, per_run, seed, stratify, first_item, pairwise, instance_id, codebook, fmt, out):
    """Write blinded items from scored runs (RUN_DIR...), or pairs from arena folders (--pairwise).

    OUT gets items.jsonl (or pairs.jsonl), a blank sheet.csv, the codebook (or the pair guide)
    and decode.json, which maps items back to systems and must not be shown to readers.
    """
    from backtest.analysis.reading.annotate import DEFAULT_CODEBOOK, export_items, export_pairs

    ws = workspace(ctx)
    if pairwise:
        if per_run is not None or n is None:
            raise BadInput("--pairwise draws --n pairs over the arenas (no --per-run)")
        summary = export_pairs(ws, sources, n=n, seed=seed, out=out, instance_id=instance_id, first_item=first_item)
        click.echo(f"wrote {summary['n']} blinded pairs to {out} (pairs.jsonl, sheet.csv, guide.md, decode.json)")
        _label_studio(fmt, out)
        return
    if codebook is None and (ws.root.parent / "shared" / DEFAULT_CODEBOOK).is_file():
        codebook = ws.root.parent / "shared" / DEFAULT_CODEBOOK
    summary = export_items(
        ws,
        sources,
        n=n,
        seed=seed,
        out=out,
        stratify=stratify,
        codebook=codebook,
        first_item=first_item,
        per_run=per_run,
    )
    per_run = ", ".join(f"{k}: {v}" for k, v in summary["per_run"].items())
    click.echo(f"wrote {summary['n']} blinded items to {out} ({per_run}); keep decode.json away from readers")
    _label_studio(fmt, out)


def _label_studio(fmt: str, out: Path) -> None:
    """With --format label-studio: the export's tasks and labelling configuration for Label Studio."""
    if fmt != "label-studio":
        return
    from backtest.analysis.reading.items import AnnotationItem, PairItem, read_records
    from backtest.analysis.reading.labelstudio import write_label_studio

    pairs = (out / "pairs.jsonl").is_file()
    write_label_studio(
        out, read_records(out / ("pairs.jsonl" if pairs else "items.jsonl"), PairItem if pairs else AnnotationItem)
    )
    click.echo(f"and {out}/label-studio/tasks.json and config.xml for Label Studio (import its JSON export back)")


@annotate_group.command("import")
@click.argument("sheet", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--items",
    "items_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The folder annotate export wrote (items.jsonl or pairs.jsonl).",
)
@click.option(
    "--rater",
    required=True,
    help="The reader's name; labels go to ITEMS/labels/RATER.jsonl ('adjudicated' is reserved for annotate "
    "adjudicate).",
)
@click.option(
    "--out",
    type=OutPath(dir_okay=False, path_type=Path),
    default=None,
    help="Labels file (default: ITEMS/labels/RATER.jsonl).",
)
@click.option("--replace", is_flag=True, help="Replace the reader's labels when they were imported before.")
@click.option(
    "--completed-by",
    default=None,
    help="With a Label Studio export: import the annotations of this annotator only (their id or email).",
)
def annotate_import(sheet, items_dir, rater, out, replace, completed_by):
    """Validate a filled SHEET against its items and write the reader's labels (nothing written on any problem).

    SHEET is the export's sheet.csv filled in, or Label Studio's JSON export (a .json file) of the tasks
    `annotate export --format label-studio` wrote, whose lead_time becomes each label's seconds. A reader
    already imported is refused unless --replace; concurrent imports hold a lock on the labels folder.
    """
    from backtest.analysis.reading.annotate import import_sheet

    result = import_sheet(sheet, items_dir, rater, out, replace=replace, completed_by=completed_by)
    click.echo(f"{rater}: {result['n']} {'pair verdicts' if result['pairwise'] else 'labels'} -> {result['labels']}")
    if result["adjudication_stale"]:
        click.echo(
            "note: labels/adjudicated.jsonl was made from this reader's earlier labels; estimate refuses it until "
            "you adjudicate again (annotate adjudicate)",
            err=True,
        )


@annotate_group.command("merge")
@click.argument("sources", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--out", type=OutPath(file_okay=False, path_type=Path), required=True, help="New (or empty) folder to write."
)
def annotate_merge(sources, out):
    """Merge exports made in batches (numbered with --first-item), with each reader's labels, into one set."""
    from backtest.analysis.reading.annotate import merge_exports

    result = merge_exports(sources, out)
    click.echo(
        f"merged {result['n']} items from {len(sources)} exports into {out} "
        f"(readers: {', '.join(result['raters']) or 'none'})"
    )
    if result["no_design"]:
        click.echo(
            f"note: the merged set records no sampling design, so estimate cannot use it: {result['no_design']}",
            err=True,
        )


@annotate_group.command("adjudicate")
@click.argument("items_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--decisions",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="JSON Lines: one decision per disagreement (item_id, field, reader_a, reader_b, adjudicated, reason).",
)
@click.option(
    "--readers",
    nargs=2,
    default=("reader_a", "reader_b"),
    show_default=True,
    metavar="A B",
    help="The two readers to settle (labels/A.jsonl and labels/B.jsonl); the decisions' reader_a and reader_b "
    "fields hold A's and B's readings.",
)
def annotate_adjudicate(items_dir, decisions, readers):
    """Settle two readers' disagreements (ITEMS_DIR/labels/reader_a.jsonl and reader_b.jsonl, or --readers).

    Without --decisions: print every disagreement as a JSON line to fill in (adjudicated: one of the two
    readings; reason: why, from the abstracts). With it: write labels/adjudicated.jsonl (the readers' labels
    where they agree, the decision where they do not) and adjudication.jsonl (every decision with both readings).
    """
    import json

    from backtest.analysis.reading.annotate import adjudicate, check_readers, disagreements

    readers = check_readers(tuple(readers))
    if decisions is None:
        for d in disagreements(items_dir, readers):
            click.echo(json.dumps(d, ensure_ascii=False))
        return
    result = adjudicate(items_dir, decisions, readers)
    click.echo(
        f"adjudicated {result['decided']} disagreement(s); {result['n']} labels -> {items_dir}/labels/adjudicated.jsonl"
    )


@annotate_group.command("serve")
@click.argument("items_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--reader", default=None, help="Whose labels these are: they go to ITEMS_DIR/labels/READER.jsonl.")
@click.option(
    "--adjudicate",
    nargs=2,
    default=None,
    metavar="A B",
    help="Settle readers A's and B's disagreements instead (outcome items, or an intelligibility set's two "
    "passes): only the items where they differ, both readings side by side, each decision one of the two with a "
    "reason; writes what `annotate adjudicate --readers A B` writes (an intelligibility set: its "
    "adjudication.jsonl, and a generated-question set also labels/adjudicated.jsonl, as the committed sets have them).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Another than 127.0.0.1 lets other machines reach the page (its URL's token "
    "still guards it): give it only on a network you trust.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port (0: a free one).")
def annotate_serve(items_dir, reader, adjudicate, host, port):
    """The reading desk: a local page over an export folder, one item a screen, answered by keyboard.

    ITEMS_DIR is a folder `annotate export` (items or --pairwise pairs) or `gate export` (evidence-graph review
    batch) wrote, or an intelligibility reading set (scripts/evidence_graph_reading.py or
    scripts/intelligibility_items.py: judges/validation/evidence-graph-v*, intelligibility-v*); its decode.json
    says which. Each label is saved the moment it is given, atomically, to labels/READER.jsonl in the format
    `annotate import` writes (a review batch: the rows `gate import` takes; an intelligibility set: the label its
    results or study script reads), with the seconds spent on the item; the page resumes at the first unlabelled
    item. The page never shows decode.json, key.json or another reader's labels. Stop with Ctrl-C: every saved
    label stays.
    """
    from backtest.analysis.reading.desk import Desk
    from backtest.analysis.reading.desk_server import serve

    desk = Desk.open(items_dir, reader, tuple(adjudicate) if adjudicate else None)
    server = serve(desk, host, port)
    what = (
        f"adjudicating {adjudicate[0]} and {adjudicate[1]} ({len(desk.disputes())} disagreements)"
        if adjudicate
        else f"reader {desk.reader}: {len(desk.labels())} of {len(desk.items)} {desk.kind.name} labelled"
    )
    click.echo(f"reading desk on {items_dir} ({what})")
    click.echo(f"open {server.url}  (Ctrl-C stops; every label is saved as it is given)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped; the labels saved are in " + str(desk.path if not adjudicate else desk.decisions_path))
    finally:
        server.server_close()


@annotate_group.command("plan")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--halfwidth",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.10,
    show_default=True,
    help="The 95% interval half-width wanted for each run's coverage.",
)
@click.option(
    "--labels",
    "labels",
    multiple=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A pilot sample (annotate export with readers' labels): the judge's correlation with the readers and "
    "each run's rate are taken from it (repeatable).",
)
@click.option(
    "--budget",
    "budget_hours",
    type=float,
    default=None,
    metavar="HOURS",
    help="Reader-hours you can spend in all: turned into items at the readers' median seconds an item on the "
    "timed labels in --labels (read at `annotate serve`), split as evenly as can be over the runs.",
)
@click.option(
    "--budget-items",
    type=click.IntRange(min=1),
    default=None,
    help="Items you can read in all, split as evenly as can be over the runs (at least one each).",
)
@json_option
@click.pass_context
def annotate_plan(ctx, runs, halfwidth, labels, budget_hours, budget_items, as_json):
    """How many questions of each RUN to read for a coverage interval of --halfwidth, and what a budget buys.

    The judge's correlation with careful reading comes from a pilot sample (--labels), else from its validity
    card, else is taken as none; a better judge needs fewer items (the PPI++ variance shrinks by 1 - rho^2).
    Near a rate of 0 or 1 the exact interval sets a floor no judge removes.
    """
    from backtest.analysis.estimate import plan_runs

    plans = plan_runs(runs, halfwidth, workspace(ctx), labels=labels, budget=budget_items, budget_hours=budget_hours)
    if as_json:
        echo_json([p.model_dump(mode="json") for p in plans])
        return
    click.echo(f"items to read for a 95% coverage interval of +-{halfwidth:.0%} per run:")
    budget = f"--budget {budget_hours:g} h" if budget_hours is not None else f"--budget-items {budget_items}"
    for p in plans:
        hours = f" (~{p.hours_to_read:.1f} h)" if p.hours_to_read is not None else ""
        line = (
            f"  {p.system:<22} N={p.n:<4} read {p.n_to_read:>4}{hours} (labels alone: {p.n_labels_only:>4}); "
            f"rate ~{p.rate:.0%} from {p.rate_from}; rho {p.rho:.2f} from {p.rho_from}"
        )
        if p.halfwidth_of_budget is not None and p.budget_share is not None:
            share = f"{p.budget_share} items" if p.budget_share <= p.n else f"{p.budget_share} items, more than its N"
            line += f"; its share of {budget} ({share}) buys +-{p.halfwidth_of_budget:.1%}"
        click.echo(line)
    total = sum(p.n_to_read for p in plans)
    pace = plans[0].seconds_per_item if plans else None
    hours = (
        f", ~{total * pace / 3600:.1f} reader-hours at {pace:.0f} s an item ({plans[0].seconds_from})" if pace else ""
    )
    click.echo(f"total: {total} items{hours} (labels alone: {sum(p.n_labels_only for p in plans)})")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [annotate_group]
