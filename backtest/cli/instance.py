"""``backtest instance create | verify``."""

from __future__ import annotations

import click

from backtest.cli.common import (
    DATE,
    echo_json,
    embedding_model_option,
    json_option,
    k_option,
    retriever_option,
    workspace,
)
from backtest.core.errors import CheckFailed
from backtest.core.records import RetrievalSettings
from backtest.corpus.instance import create_instance, load_instance, verify_instance


@click.group()
def instance() -> None:
    """Create and verify sealed instances (cutoff + past + future corpora + settings)."""


@instance.command("create")
@click.argument("instance_id")
@click.option("--cutoff", type=DATE, required=True, help="The cutoff date T (inclusive for the past).")
@click.option("--past", required=True, help="Past corpus: manifest path or corpus id.")
@click.option("--future", required=True, help="Future corpus: manifest path or corpus id.")
@retriever_option
@embedding_model_option
@k_option()
@click.option(
    "--max-chars",
    type=click.IntRange(50),
    default=1200,
    show_default=True,
    help="Characters of abstract shown to the judge.",
)
@click.option(
    "--judge", "judge_config", type=click.Path(), help="Judge config (judges/NAME.toml); default: offline judge."
)
@click.option("--domain", default="", help="A short description of the domain (used by prompt-only generators).")
@click.option(
    "--reproduce",
    is_flag=True,
    help="The committed manifests/instances/<ID>.json must come out byte for byte (exit 1 if not).",
)
@json_option
@click.pass_context
def create(
    ctx, instance_id, cutoff, past, future, retriever, model, k, max_chars, judge_config, domain, reproduce, as_json
):
    """Seal a new instance after checking both corpora against the cutoff."""
    ws = workspace(ctx)
    settings = RetrievalSettings(method=retriever, model=model, k=k, max_chars=max_chars)
    inst = create_instance(
        instance_id,
        cutoff,
        past,
        future,
        ws,
        retrieval=settings,
        judge_config=judge_config,
        domain=domain,
        reproduce=reproduce,
    )
    if as_json:
        echo_json(inst.model_dump(mode="json"))
    else:
        verb = "reproduced" if reproduce else "created"
        click.echo(f"{verb} instance {inst.instance_id}: cutoff {inst.cutoff}, seal {inst.seal}")


@instance.command("verify")
@click.argument("instance_id")
@json_option
@click.pass_context
def verify(ctx, instance_id, as_json):
    """Re-verify an instance: its seal, both corpora, and the cutoff (exit 1 on any failure)."""
    ws = workspace(ctx)
    inst = load_instance(instance_id, ws)
    problems = verify_instance(inst, ws)
    if as_json:
        echo_json({"instance_id": inst.instance_id, "ok": not problems, "problems": problems})
    elif not problems:
        click.echo(f"OK {inst.instance_id}: cutoff {inst.cutoff}, seal {inst.seal}")
    if problems:
        raise CheckFailed(f"instance {inst.instance_id} does not verify: {problems[0]}", problems)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [instance]
