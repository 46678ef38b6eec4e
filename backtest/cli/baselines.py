"""``backtest baselines``: the reference systems generated, frozen and scored on one instance."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, given_options, json_option, llm_options, progress_enabled, workspace


@click.command("baselines")
@click.option("--instance", "instance_id", required=True, help="A built instance (with a future corpus).")
@click.option("--n", type=click.IntRange(1, 10000), default=125, show_default=True, help="Questions per system.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--judge", "judge_spec", default="offline", show_default=True, help="Judge config (judges/NAME.toml) or name."
)
@click.option(
    "--generator",
    "generators",
    multiple=True,
    help="Only these generators (repeatable; default: all six reference systems).",
)
@click.option(
    "--out",
    type=OutPath(file_okay=False, path_type=Path),
    help="Output folder (default: results/<instance>/baselines).",
)
@click.option("--diversity/--no-diversity", default=True, show_default=True, help="Distinct questions and the audit.")
@click.option("--arena/--no-arena", default=True, show_default=True, help="The pairwise arena.")
@click.option(
    "--arena-judge",
    default="offline",
    show_default=True,
    help="Pairwise judge of the arena (name or judges/NAME.toml).",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(0, 1_000_000),
    default=10_000,
    show_default=True,
    help="Arena bootstrap replicates.",
)
@llm_options
@json_option
@click.pass_context
def baselines(
    ctx,
    instance_id,
    n,
    seed,
    judge_spec,
    generators,
    out,
    diversity,
    arena,
    arena_judge,
    n_boot,
    llm_base_url,
    llm_model,
    llm_api_key_env,
    llm_training_cutoff,
    as_json,
):
    """Generate, freeze and score the six reference systems on an instance; compare them.

    Writes results/<instance>/baselines/: compare.{md,json,html}, diversity/, arena/ and
    BASELINES.json. direct_llm and evidence_graph_llm (evidence_graph with --verbalizer llm)
    run only with an LLM endpoint (--llm-base-url), else they are skipped with a note. Reruns
    reuse identical frozen sets and complete runs.
    """
    from backtest.core.errors import BadInput
    from backtest.generators import REFERENCE_SYSTEMS, system_names
    from backtest.studies.baselines import run_baselines

    known = system_names()
    unknown = [g for g in generators if g not in known]
    if unknown:
        raise BadInput(f"unknown generator {unknown[0]!r}; known: {', '.join(known)}")
    options = given_options(
        llm_base_url=llm_base_url,
        llm_model=llm_model,
        llm_api_key_env=llm_api_key_env,
        llm_training_cutoff=llm_training_cutoff,
    )
    log = (lambda line: click.echo(line, err=True)) if as_json else click.echo
    summary = run_baselines(
        workspace(ctx),
        instance_id,
        n=n,
        seed=seed,
        judge_spec=judge_spec,
        generators=generators or REFERENCE_SYSTEMS,
        options=options,
        out=out,
        diversity=diversity,
        arena=arena,
        arena_judge=arena_judge,
        n_boot=n_boot,
        progress=progress_enabled(),
        log=log,
    )
    if as_json:
        echo_json(summary)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [baselines]
