"""``backtest judge validate|verify-card|fit``: judges measured against careful reading.

``backtest judge batch export|import`` (provider batch files) is :mod:`backtest.cli.batch`, attached here.
"""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.batch import batch_group
from backtest.cli.common import OutPath, echo_json, json_option, progress_enabled, workspace
from backtest.core.errors import BadInput, CheckFailed


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
    from backtest.analysis.reading.report import render_text, write_report
    from backtest.analysis.reading.validate import validate_items, validate_pairs
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
@click.option(
    "--allow-endpoint",
    is_flag=True,
    help="Call a card's judge that calls an endpoint (an LLM judge): the committed items, and the key its config "
    "names, go to that endpoint. Without it such a card's figures are not recomputed and no request is made.",
)
@json_option
@click.pass_context
def judge_verify_card(ctx, cards, judge_spec, expect_sha256, allow_endpoint, as_json):
    """Re-derive validity CARDS (default: every card in judges/cards/) from the committed labelled sets.

    Checks that each card names the judge it is filed under and cites committed labelled sets,
    then re-runs that judge on each set the way the card says it was measured and compares every
    figure. Each card is "ok", "CARD INVALID" (a check failed or a figure differs) or "UNVERIFIED" (nothing
    could be re-derived here, e.g. an LLM judge without its endpoint or cache, or without --allow-endpoint: give
    --expect-sha256). Exit 1 unless every card is ok; each card's sha256 is printed, to publish.
    """
    from backtest.analysis.reading.verify_card import verify_card

    ws = workspace(ctx)
    paths = list(cards) or sorted((ws.judges / "cards").glob("*.json"))
    if not paths:
        raise BadInput(f"no validity cards under {ws.relative(ws.judges / 'cards')}")
    if expect_sha256 and len(paths) != 1:
        raise BadInput("--expect-sha256 checks one card: name it")
    results = [verify_card(ws, p, judge_spec, expect_sha256, allow_endpoint) for p in paths]
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
    from backtest.analysis.reading.validate import fit_judge_weights
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
COMMANDS = [judge_group]
