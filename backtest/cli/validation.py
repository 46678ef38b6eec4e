"""``backtest annotate export|import`` and ``backtest judge validate|fit``: judges measured against careful reading.

``backtest judge batch export|import`` (provider batch files) is :mod:`backtest.cli.batch`, attached here.
"""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.batch import batch_group
from backtest.cli.common import OutPath, echo_json, json_option, progress_enabled, workspace
from backtest.core.errors import BadInput, CheckFailed


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
    "--out", type=OutPath(file_okay=False, path_type=Path), required=True, help="New (or empty) folder to write."
)
@click.pass_context
def annotate_export(ctx, sources, n, per_run, seed, stratify, first_item, pairwise, instance_id, codebook, out):
    """Write blinded items from scored runs (RUN_DIR...), or pairs from arena folders (--pairwise).

    OUT gets items.jsonl (or pairs.jsonl), a blank sheet.csv, the codebook (or the pair guide)
    and decode.json, which maps items back to systems and must not be shown to readers.
    """
    from backtest.analysis.validation.annotate import DEFAULT_CODEBOOK, export_items, export_pairs

    ws = workspace(ctx)
    if pairwise:
        if per_run is not None or n is None:
            raise BadInput("--pairwise draws --n pairs over the arenas (no --per-run)")
        summary = export_pairs(ws, sources, n=n, seed=seed, out=out, instance_id=instance_id, first_item=first_item)
        click.echo(f"wrote {summary['n']} blinded pairs to {out} (pairs.jsonl, sheet.csv, guide.md, decode.json)")
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


@annotate_group.command("import")
@click.argument("sheet", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--items",
    "items_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The folder annotate export wrote (items.jsonl or pairs.jsonl).",
)
@click.option("--rater", required=True, help="The reader's name; labels go to ITEMS/labels/RATER.jsonl.")
@click.option(
    "--out",
    type=OutPath(dir_okay=False, path_type=Path),
    default=None,
    help="Labels file (default: ITEMS/labels/RATER.jsonl).",
)
def annotate_import(sheet, items_dir, rater, out):
    """Validate a filled SHEET against its items and write the reader's labels (nothing written on any problem)."""
    from backtest.analysis.validation.annotate import import_sheet

    result = import_sheet(sheet, items_dir, rater, out)
    click.echo(f"{rater}: {result['n']} {'pair verdicts' if result['pairwise'] else 'labels'} -> {result['labels']}")


@annotate_group.command("merge")
@click.argument("sources", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--out", type=OutPath(file_okay=False, path_type=Path), required=True, help="New (or empty) folder to write."
)
def annotate_merge(sources, out):
    """Merge exports made in batches (numbered with --first-item), with each reader's labels, into one set."""
    from backtest.analysis.validation.annotate import merge_exports

    result = merge_exports(sources, out)
    click.echo(
        f"merged {result['n']} items from {len(sources)} exports into {out} "
        f"(readers: {', '.join(result['raters']) or 'none'})"
    )


@annotate_group.command("adjudicate")
@click.argument("items_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--decisions",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="JSON Lines: one decision per disagreement (item_id, field, reader_a, reader_b, adjudicated, reason).",
)
def annotate_adjudicate(items_dir, decisions):
    """Settle two readers' disagreements (ITEMS_DIR/labels/reader_a.jsonl and reader_b.jsonl).

    Without --decisions: print every disagreement as a JSON line to fill in (adjudicated: one of the two
    readings; reason: why, from the abstracts). With it: write labels/adjudicated.jsonl (the readers' labels
    where they agree, the decision where they do not) and adjudication.jsonl (every decision with both readings).
    """
    import json

    from backtest.analysis.validation.annotate import adjudicate, disagreements

    if decisions is None:
        for d in disagreements(items_dir):
            click.echo(json.dumps(d, ensure_ascii=False))
        return
    result = adjudicate(items_dir, decisions)
    click.echo(
        f"adjudicated {result['decided']} disagreement(s); {result['n']} labels -> {items_dir}/labels/adjudicated.jsonl"
    )


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
@click.option("--budget", type=click.IntRange(min=1), default=None, help="Items you can read in all (split evenly).")
@json_option
@click.pass_context
def annotate_plan(ctx, runs, halfwidth, labels, budget, as_json):
    """How many questions of each RUN to read for a coverage interval of --halfwidth, and what --budget buys.

    The judge's correlation with careful reading comes from a pilot sample (--labels), else from its validity
    card, else is taken as none; a better judge needs fewer items (the PPI++ variance shrinks by 1 - rho^2).
    Near a rate of 0 or 1 the exact interval sets a floor no judge removes.
    """
    from backtest.analysis.estimate import plan_runs

    plans = plan_runs(runs, halfwidth, workspace(ctx), labels=labels, budget=budget)
    if as_json:
        echo_json([p.model_dump(mode="json") for p in plans])
        return
    click.echo(f"items to read for a 95% coverage interval of +-{halfwidth:.0%} per run:")
    for p in plans:
        line = (
            f"  {p.system:<22} N={p.n:<4} read {p.n_to_read:>4} (labels alone: {p.n_labels_only:>4}); "
            f"rate ~{p.rate:.0%} from {p.rate_from}; rho {p.rho:.2f} from {p.rho_from}"
        )
        if p.halfwidth_of_budget is not None:
            line += f"; --budget {budget} buys +-{p.halfwidth_of_budget:.1%}"
        click.echo(line)
    click.echo(f"total: {sum(p.n_to_read for p in plans)} items (labels alone: {sum(p.n_labels_only for p in plans)})")


@click.group("judge")
def judge_group() -> None:
    """Judges: validate one against careful reading (its validity card), refit the offline judge, batch files."""


judge_group.add_command(batch_group)


@judge_group.command("validate")
@click.argument("items", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--labels", "label_specs", multiple=True, required=True, help="NAME=FILE of one reader's labels (repeatable)."
)
@click.option(
    "--judge",
    "judge_spec",
    default="offline",
    show_default=True,
    help="offline, offline-cues-v1, judges/NAME.toml (an LLM judge), or a pairwise judge with --pairwise.",
)
@click.option("--pairwise", is_flag=True, help="ITEMS is a pairs.jsonl; validate a pairwise (arena) judge.")
@click.option(
    "--set-name", default=None, help="Name of the labelled set on the card (default: the items' folder name)."
)
@click.option(
    "--out",
    type=OutPath(file_okay=False, path_type=Path),
    default=None,
    help="Write validation.json and validation.html here.",
)
@click.option("--no-card", is_flag=True, help="Do not write the judge's validity card.")
@click.option(
    "--cross-validate",
    is_flag=True,
    help="Refit a fitted judge per fold on this set's labels (measures the method, not the shipped weights). "
    "Default: the shipped weights as-is on the items they were never fitted on.",
)
@click.option("--folds", type=int, default=5, show_default=True, help="Folds with --cross-validate.")
@click.option(
    "--n-boot", type=int, default=2000, show_default=True, help="Bootstrap replicates for the kappa intervals."
)
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
@click.pass_context
def judge_validate(
    ctx, items, label_specs, judge_spec, pairwise, set_name, out, no_card, cross_validate, folds, n_boot, seed, as_json
):
    """Run a judge on exactly the ITEMS' documents and measure it against the readers' labels.

    Prints kappa with 95% intervals for outcome, premise and engaged-vs-not, per reader and
    against their consensus, and writes the judge's validity card to judges/cards/.
    """
    from backtest.analysis.validation.report import render_text, write_report
    from backtest.analysis.validation.validate import validate_items, validate_pairs
    from backtest.judge.cards import validity_line, write_card

    ws = workspace(ctx)
    if pairwise:
        from backtest.arena.pairwise import get_pairwise_judge

        judge = get_pairwise_judge(judge_spec, ws.root)
        report = validate_pairs(items, label_specs, judge, folds=folds, seed=seed, cross_validate=cross_validate)
    else:
        from backtest.judge import get_judge

        judge = get_judge(judge_spec, ws)
        report = validate_items(
            items,
            label_specs,
            judge,
            n_boot=n_boot,
            seed=seed,
            folds=folds,
            progress=progress_enabled(),
            cross_validate=cross_validate,
        )
    if out:
        write_report(report, out)
    if not no_card:
        card = write_card(ws.judges / "cards", report, set_name or Path(items).resolve().parent.name)
        report["card"] = ws.relative(card)
    if as_json:
        echo_json(report)
        return
    click.echo(render_text(report))
    if not no_card:
        click.echo(validity_line(ws.judges / "cards", report["judge"], pairwise))
        click.echo(f"card: {report['card']}")


@judge_group.command("verify-card")
@click.argument("cards", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--judge",
    "judge_spec",
    default=None,
    help="The judge the card is for (default: the registered judge or judges/*.toml with the card's fingerprint).",
)
@click.option(
    "--expect-sha256",
    default=None,
    help="The card's published sha256 (one card): checked as well, and enough where a figure cannot be recomputed.",
)
@json_option
@click.pass_context
def judge_verify_card(ctx, cards, judge_spec, expect_sha256, as_json):
    """Re-derive validity CARDS (default: every card in judges/cards/) from the committed labelled sets.

    Checks that each card names the judge it is filed under and cites committed labelled sets,
    then re-runs that judge on each set the way the card says it was measured and compares every
    figure. Each card is "ok", "CARD INVALID" (a check failed or a figure differs) or "UNVERIFIED" (nothing
    could be re-derived here, e.g. an LLM judge without its endpoint or cache: give --expect-sha256). Exit 1
    unless every card is ok; each card's sha256 is printed, to publish.
    """
    from backtest.analysis.validation.verify_card import verify_card

    ws = workspace(ctx)
    paths = list(cards) or sorted((ws.judges / "cards").glob("*.json"))
    if not paths:
        raise BadInput(f"no validity cards under {ws.relative(ws.judges / 'cards')}")
    if expect_sha256 and len(paths) != 1:
        raise BadInput("--expect-sha256 checks one card: name it")
    results = [verify_card(ws, p, judge_spec, expect_sha256) for p in paths]
    if as_json:
        echo_json(results)
    else:
        for r in results:
            label = {"ok": "ok", "invalid": "CARD INVALID", "unverified": "UNVERIFIED"}[r["status"]]
            click.echo(f"{label}  {r['card']}  sha256 {r['sha256']}")
            for e in r["entries"]:
                click.echo(f"  {e['status']}: {e['set']}" + (f" ({e['why']})" if e.get("why") else ""))
            for problem in r["problems"]:
                click.echo(f"  - {problem}")
    failed = [r for r in results if not r["ok"]]
    if failed:
        raise CheckFailed(
            f"{len(failed)} of {len(results)} validity card(s) invalid or unverified; first: {failed[0]['card']}: "
            f"{failed[0]['problems'][0]}",
            [f"{r['card']}: {r['problems'][0]}" for r in failed],
        )


@judge_group.command("fit")
@click.argument("items", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--labels", "label_specs", multiple=True, required=True, help="NAME=FILE of one reader's labels (repeatable)."
)
@click.option("--pairwise", is_flag=True, help="Fit the offline pairwise (arena) judge on pairs instead.")
@click.option(
    "--out", type=OutPath(dir_okay=False, path_type=Path), required=True, help="Weights file to write (JSON)."
)
@click.option(
    "--features",
    default=None,
    metavar="A,B,...",
    help="Document features of the offline judge, comma-separated (default: those of the packaged weights).",
)
@click.pass_context
def judge_fit(ctx, items, label_specs, pairwise, out, features):
    """Fit the offline judge's weights on a labelled set (the readers' consensus).

    Use the weights with a judge config: judges/NAME.toml holding kind = "offline" and
    weights = "PATH"; then `backtest judge validate` it (cross-validated on its own set).
    """
    from backtest.analysis.validation.validate import fit_judge_weights
    from backtest.core.fileio import write_json

    if features is not None and pairwise:
        raise BadInput("--features goes with the offline outcome judge, not --pairwise")
    names = tuple(f.strip() for f in features.split(",") if f.strip()) if features is not None else None
    weights = fit_judge_weights(items, label_specs, pairwise=pairwise, features=names)
    write_json(out, weights)
    trained = weights["trained_on"]
    click.echo(
        f"wrote {out}: fitted on {trained.get('n_items', trained.get('n_pairs'))} "
        f"labelled {'pairs' if pairwise else 'items'}"
    )


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [annotate_group, judge_group]
