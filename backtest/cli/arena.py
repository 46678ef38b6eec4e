"""``backtest arena``: a pairwise leaderboard of systems on shared contexts."""

from __future__ import annotations

from pathlib import Path

import click
from tqdm import tqdm

from backtest.cli.common import OutPath, device_option, echo_json, json_option, progress_enabled, workspace
from backtest.core.errors import BadInput


def load_question_sets(paths) -> dict:
    from backtest.arena.contexts import load_question_set

    sets: dict = {}
    for path in paths:
        name, questions = load_question_set(path)
        if name in sets:
            raise BadInput(f"{path}: system {name!r} is given twice")
        sets[name] = questions
    return sets


def _past_of(instance_id: str, question_sets: dict, ws):
    """The instance's past corpus, after checking the sets were made for its cutoff."""
    from backtest.arena.contexts import cutoff_of
    from backtest.corpus.instance import load_instance, open_past_corpus

    instance = load_instance(instance_id, ws)
    cutoff = cutoff_of(question_sets)
    if cutoff is not None and cutoff != instance.cutoff:
        raise BadInput(f"the question sets' cutoff {cutoff} is not instance {instance_id}'s cutoff {instance.cutoff}")
    return open_past_corpus(instance, ws)


@click.command("arena")
@click.argument("sets", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--instance", "instance_id", help="Instance whose past corpus gives the evidence text of each context.")
@click.option(
    "--contexts",
    "contexts_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A JSONL of {context, system, output} instead of question sets.",
)
@click.option(
    "--judge",
    default="offline",
    show_default=True,
    help='Pairwise judge: offline, position-a (a biased control), or judges/NAME.toml (kind = "llm").',
)
@click.option(
    "--fold",
    type=click.Choice(["average", "strict"]),
    default="average",
    show_default=True,
    help="average: both orders averaged; strict: only order-stable cases enter the fit.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(0, 1_000_000),
    default=10_000,
    show_default=True,
    help="Bootstrap replicates (0: none).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--cluster/--no-cluster", default=False, show_default=True, help="Resample whole contexts instead of single cases."
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=0.15,
    show_default=True,
    help="Evidence-text TF-IDF cosine at which two questions are neighbours (shared evidence always is).",
)
@click.option(
    "--ridge",
    type=click.FloatRange(0),
    default=1e-3,
    show_default=True,
    help="Gaussian prior ridge·Σβ² of the BTD fit.",
)
@click.option(
    "--rubric",
    type=click.Choice(["offline", "llm", "none"]),
    default="offline",
    show_default=True,
    help="Rubric diagnostics beside the leaderboard.",
)
@click.option(
    "--rubric-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Config for --rubric llm."
)
@click.option(
    "--out",
    type=OutPath(file_okay=False, path_type=Path),
    help="Output folder (default: results/<instance>/arena/<run id>).",
)
@device_option
@json_option
@click.pass_context
def arena(
    ctx,
    sets,
    instance_id,
    contexts_file,
    judge,
    fold,
    n_boot,
    seed,
    cluster,
    threshold,
    ridge,
    rubric,
    rubric_config,
    out,
    as_json,
):
    """Rank systems by blind pairwise comparison: both orders judged, folded, BTD-fitted, bootstrapped.

    SETS are submission folders, frozen set folders (verified) or questions.jsonl files of
    two or more systems on the same instance; contexts are their shared past-evidence
    neighbourhoods. Writes arena.json, cases.jsonl, contexts.jsonl and leaderboard.md.
    """
    from backtest.arena.contexts import load_user_contexts
    from backtest.arena.run import arena_study, leaderboard_markdown, rubric_markdown, write_arena

    ws = workspace(ctx)
    if bool(sets) == bool(contexts_file):
        raise BadInput("give either question SETS or --contexts FILE (not both, not neither)")
    contexts = question_sets = past = None
    if contexts_file:
        contexts = load_user_contexts(contexts_file)
    else:
        question_sets = load_question_sets(sets)
        if instance_id:
            past = _past_of(instance_id, question_sets, ws)
    with tqdm(desc="judging pairs", unit=" pair", disable=not progress_enabled()) as bar:
        result, multi, run_id = arena_study(
            contexts=contexts,
            question_sets=question_sets,
            past=past,
            judge=judge,
            root=ws.root,
            fold=fold,
            n_boot=n_boot,
            seed=seed,
            cluster=cluster,
            threshold=threshold,
            ridge=ridge,
            rubric=rubric,
            rubric_config=rubric_config,
            progress=bar,
        )
    result["inputs"] = {
        "sets": [str(p) for p in sets],
        "contexts_file": str(contexts_file) if contexts_file else None,
        "instance": instance_id,
        "threshold": threshold,
        "cluster": cluster,
        "seed": seed,
    }
    out = out or ws.results / (instance_id or "user") / "arena" / run_id
    write_arena(result, multi, out)
    if as_json:
        echo_json({k: v for k, v in result.items() if k != "cases"})
        return
    click.echo(leaderboard_markdown(result))
    if "rubric" in result:
        click.echo(rubric_markdown(result["rubric"]))
    click.echo(f"wrote {out}/arena.json, leaderboard.md, cases.jsonl, contexts.jsonl")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [arena]
