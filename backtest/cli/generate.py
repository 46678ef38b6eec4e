"""``backtest generate NAME --instance ID [--n 125] [--seed S] [--out DIR]``."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, given_options, json_option, llm_options, workspace


class ListsGenerators(click.Command):
    """A command whose help ends with the generators installed now (built-in and plugins)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from backtest.generators.protocol import available_generators

        formatter.write_paragraph()
        formatter.write_text(f"Generators: {', '.join(available_generators())}.")
        super().format_epilog(ctx, formatter)


@click.command("generate", cls=ListsGenerators)
@click.argument("name")
@click.option("--instance", "instance_id", required=True, help="Instance whose PAST corpus the generator reads.")
@click.option("--n", type=click.IntRange(1, 10000), default=125, show_default=True, help="Number of questions.")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed: same seed, same corpus -> byte-identical files."
)
@click.option(
    "--out", type=OutPath(path_type=Path), help="Submission folder (default: submissions/<instance>/<system>)."
)
@click.option(
    "--generated-at",
    "generated_at",
    default=None,
    help="Stamp for generated_at: 'now', or an ISO date/datetime (default: the cutoff day, an as-of date; "
    "$SOURCE_DATE_EPOCH wins when set).",
)
@click.option(
    "--verbalizer",
    type=click.Choice(["template", "llm"]),
    default=None,
    help="evidence_graph only: phrase the detected tensions with templates (default) or an LLM.",
)
@click.option(
    "--explain",
    type=OutPath(dir_okay=False, path_type=Path),
    default=None,
    help="evidence_graph only: write the graph's counts by node and edge type and, for each question, the claims "
    "it pairs and why (Markdown at OUT, JSON at OUT.json).",
)
@click.option(
    "--tension-type",
    "tension_types",
    multiple=True,
    type=click.Choice(
        ["observational_tension", "methodological_challenge", "single_dataset_conclusion", "independent_qualification"]
    ),
    help="evidence_graph only: ask only about these tension types (repeatable; default: every type).",
)
@click.option(
    "--review-export",
    "review_export",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="evidence_graph only: instead of questions, write the next batch of ranked candidate tensions as blinded "
    "review items under DIR/batch-NNN/ (the reading gate; same as `backtest gate export`).",
)
@click.option(
    "--batch-size", type=click.IntRange(1, 5000), default=100, show_default=True, help="With --review-export."
)
@click.option(
    "--random-share",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="With --review-export: share of the batch drawn at random from the unread candidates.",
)
@click.option(
    "--reviewed",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="evidence_graph only: build the set from the reading gate's accepted candidates in DIR (its "
    "decisions/), each phrased for the type its reader gave it.",
)
@llm_options
@json_option
@click.pass_context
def generate(
    ctx,
    name,
    instance_id,
    n,
    seed,
    out,
    generated_at,
    verbalizer,
    explain,
    tension_types,
    review_export,
    batch_size,
    random_share,
    reviewed,
    llm_base_url,
    llm_model,
    llm_api_key_env,
    llm_training_cutoff,
    as_json,
):
    """Run generator NAME on an instance's past corpus; write questions.jsonl + metadata.json.

    NAME is a built-in generator or one a plugin package adds (entry-point group
    backtest.generators); the list ends this help.
    """
    from backtest.generators import run_generator

    ws = workspace(ctx)
    if (explain or tension_types or review_export or reviewed) and name != "evidence_graph":
        raise click.UsageError("--explain, --tension-type, --review-export and --reviewed apply to evidence_graph only")
    if review_export and (reviewed or explain or tension_types):
        raise click.UsageError("--review-export writes review items, not questions: give it alone")
    if review_export:
        from backtest.cli.gate import export_next

        export_next(ctx, instance_id, review_export, batch_size, seed, random_share)
        return
    options = given_options(
        verbalizer=verbalizer,
        explain=str(explain) if explain else None,
        tension_types=list(tension_types) or None,
        reviewed=str(reviewed) if reviewed else None,
        llm_base_url=llm_base_url,
        llm_model=llm_model,
        llm_api_key_env=llm_api_key_env,
        llm_training_cutoff=llm_training_cutoff,
    )
    summary = run_generator(name, instance_id, ws, n=n, seed=seed, out=out, generated_at=generated_at, options=options)
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"{summary['system_name']}: wrote {summary['n_questions']} questions to {summary['out']}")
        if summary["n_questions"] < n:
            click.echo(
                f"note: asked for {n}, {name} produced {summary['n_questions']} usable distinct questions", err=True
            )


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [generate]
