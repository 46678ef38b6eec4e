"""``backtest gate export|import|status``: evidence_graph's reading gate (``docs/generators.md``, "The reading
gate")."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, workspace

GATE_DIR = click.Path(file_okay=False, path_type=Path)


def gate_papers(ctx: click.Context, instance_id: str, seed: int = 0):
    """The generation context of ``instance_id``, its analysed papers and its candidates (computed from the sealed
    past corpus)."""
    from backtest.generators import generation_context
    from backtest.generators.evidence_graph import EvidenceGraph

    gen_ctx = generation_context(instance_id, workspace(ctx), seed=seed)
    click.echo(f"finding candidate tensions in {instance_id}'s past corpus ...", err=True)
    papers, found, _behind = EvidenceGraph().candidates(gen_ctx)
    return gen_ctx, papers, found


def gate_candidates(ctx: click.Context, instance_id: str, seed: int = 0):
    """The generation context of ``instance_id`` and its candidates."""
    gen_ctx, _papers, found = gate_papers(ctx, instance_id, seed)
    return gen_ctx, found


def export_next(ctx: click.Context, instance_id: str, gate: Path, size: int, seed: int, random_share: float) -> None:
    """Write the next review batch and say where (shared by ``gate export`` and ``generate --review-export``)."""
    from backtest.generators.gate import export_batch

    gen_ctx, found = gate_candidates(ctx, instance_id, seed)
    folder = export_batch(gate, instance_id, gen_ctx.past.seal, found, size, seed, random_share)
    if folder is None:
        click.echo(f"every one of the {len(found)} candidates is read or waiting in a batch: nothing to export")
        return
    click.echo(
        f"{folder}: {sum(1 for _ in open(folder / 'items.jsonl'))} items of {len(found)} candidates; readers "
        f"get items.md (or items.jsonl), guide.md and sheet.csv, never decode.json"
    )


@click.group("gate")
def gate() -> None:
    """evidence_graph's reading gate: export ranked candidate tensions as blinded review batches, import a
    reader's decisions, and report what was read and accepted. `backtest generate evidence_graph --reviewed DIR`
    builds the question set from the accepted candidates only."""


size_option = click.option(
    "--size", type=click.IntRange(1, 5000), default=100, show_default=True, help="Items in the batch."
)
seed_option = click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the random draws (and of the batch's order)."
)
share_option = click.option(
    "--random-share",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of the batch drawn uniformly at random from the unread candidates (each "
    "channel's precision is estimated from these alone).",
)


def batch_option(help_text: str):
    """``--batch DIR``: the batch folder an import answers."""
    return click.option(
        "--batch",
        "batch_dir",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        required=True,
        help=help_text,
    )


@gate.command("export")
@click.argument("instance_id")
@click.option("--dir", "gate_dir", type=GATE_DIR, required=True, help="The gate folder (e.g. gates/<instance>).")
@size_option
@seed_option
@share_option
@click.pass_context
def export(ctx, instance_id, gate_dir, size, seed, random_share):
    """Write the next batch of ranked candidates of INSTANCE_ID as blinded review items (DIR/batch-NNN/)."""
    export_next(ctx, instance_id, gate_dir, size, seed, random_share)


@gate.command("import")
@click.argument("instance_id")
@click.argument("sheet", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@batch_option("The batch folder the sheet answers (DIR/batch-NNN).")
@click.option("--reader", required=True, help="Who decided (a plain name; recorded with every decision).")
@click.pass_context
def import_(ctx, instance_id, sheet, batch_dir, reader):
    """Record a reader's filled SHEET for a batch: DIR/decisions/batch-NNN.jsonl (written once, never edited)."""
    from backtest.generators.gate import import_sheet

    gen_ctx, found = gate_candidates(ctx, instance_id)
    out = import_sheet(batch_dir.parent, batch_dir, sheet, reader, found, gen_ctx.past.seal)
    n = sum(1 for _ in open(out))
    click.echo(f"{out}: {n} decisions by {reader}")


@gate.command("status")
@click.argument("instance_id")
@click.option(
    "--dir",
    "gate_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="The gate folder.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the table as Markdown here (and its JSON beside it, OUT.json).",
)
@json_option
@click.pass_context
def status(ctx, instance_id, gate_dir, out, as_json):
    """What the gate of INSTANCE_ID proposed, read and accepted, by channel and type, with the yield curve."""
    from backtest.generators.gate import check_decisions, read_decisions, yield_markdown, yield_table

    gen_ctx, found = gate_candidates(ctx, instance_id)
    decisions = read_decisions(gate_dir)
    check_decisions(decisions, found, gen_ctx.past.seal, str(gate_dir))
    table = yield_table(decisions, found)
    if out:
        from backtest.core.fileio import atomic_write_text, write_json

        atomic_write_text(out, yield_markdown(instance_id, table))
        write_json(out.with_name(out.name + ".json"), table)
    if as_json:
        echo_json(table)
    else:
        click.echo(yield_markdown(instance_id, table))


@gate.command("claims-export")
@click.argument("instance_id")
@click.option("--dir", "gate_dir", type=GATE_DIR, required=True, help="The gate folder (e.g. gates/<instance>).")
@click.option(
    "--size", type=click.IntRange(1, 5000), default=80, show_default=True, help="Accepted tensions in the batch."
)
@click.pass_context
def claims_export(ctx, instance_id, gate_dir, size):
    """Write the next batch of INSTANCE_ID's accepted tensions for an annotator to state their findings so that
    they stand on their own (DIR/claims-NNN/: items.md, items.jsonl, guide.md; answers go in answers.jsonl)."""
    from backtest.generators.claim_notes import export_claims
    from backtest.generators.gate import check_decisions, read_decisions

    gen_ctx, papers, found = gate_papers(ctx, instance_id)
    decisions = read_decisions(gate_dir)
    decided = check_decisions(decisions, found, gen_ctx.past.seal, str(gate_dir))
    by_paper = {p.record.id: p for p in papers}
    folder = export_claims(gate_dir, instance_id, gen_ctx.past.seal, decisions, decided, by_paper, size)
    if folder is None:
        click.echo("every accepted tension is stated or waiting in a claims batch: nothing to export")
        return
    n = sum(1 for _ in open(folder / "items.jsonl"))
    click.echo(
        f"{folder}: {n} accepted tensions; annotators get items.md (or items.jsonl) and guide.md, never decode.json"
    )


@gate.command("claims-import")
@click.argument("instance_id")
@click.argument("answers", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@batch_option("The claims batch the answers are for (DIR/claims-NNN).")
@click.option("--reader", required=True, help="Who stated the findings (recorded with every note).")
@click.pass_context
def claims_import(ctx, instance_id, answers, batch_dir, reader):
    """Record an annotator's ANSWERS (answers.jsonl) for a claims batch: DIR/claim-notes/claims-NNN.jsonl (written
    once, never edited)."""
    from backtest.generators.claim_notes import import_answers
    from backtest.generators.gate import check_decisions, read_decisions

    gen_ctx, found = gate_candidates(ctx, instance_id)
    decisions = read_decisions(batch_dir.parent)
    check_decisions(decisions, found, gen_ctx.past.seal, str(batch_dir.parent))
    out = import_answers(batch_dir.parent, batch_dir, answers, reader, decisions, gen_ctx.past.seal)
    n = sum(1 for _ in open(out))
    click.echo(f"{out}: {n} claim notes by {reader}")


COMMANDS = [gate]
