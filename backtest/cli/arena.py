"""``backtest arena`` (pairwise leaderboard) and ``backtest diversity`` (distinct questions, perturbation audit)."""

from __future__ import annotations

from pathlib import Path

import click
from tqdm import tqdm

from ..errors import BadInput
from .common import echo_json, json_option, progress_enabled, workspace
from .main import cli


def _question_sets(paths) -> dict:
    from ..arena.contexts import load_question_set

    sets: dict = {}
    for path in paths:
        name, questions = load_question_set(path)
        if name in sets:
            raise BadInput(f"{path}: system {name!r} is given twice")
        sets[name] = questions
    return sets


@cli.command("arena")
@click.argument("sets", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--instance", "instance_id", help="Instance whose past corpus gives the evidence text of each context.")
@click.option("--contexts", "contexts_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A JSONL of {context, system, output} instead of question sets.")
@click.option("--judge", default="offline", show_default=True,
              help="Pairwise judge: offline, position-a (a biased control), or judges/NAME.toml (kind = \"llm\").")
@click.option("--fold", type=click.Choice(["average", "strict"]), default="average", show_default=True,
              help="average: both orders averaged; strict: only order-stable cases enter the fit.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(0, 1_000_000), default=10_000, show_default=True,
              help="Bootstrap replicates (0: none).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--cluster/--no-cluster", default=False, show_default=True,
              help="Resample whole contexts instead of single cases.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.15, show_default=True,
              help="Evidence-text TF-IDF cosine at which two questions are neighbours (shared evidence always is).")
@click.option("--ridge", type=click.FloatRange(0), default=1e-3, show_default=True, help="Gaussian prior ridge·Σβ² of the BTD fit.")
@click.option("--rubric", type=click.Choice(["offline", "llm", "none"]), default="offline", show_default=True,
              help="Rubric diagnostics beside the leaderboard.")
@click.option("--rubric-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Config for --rubric llm.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Output folder (default: results/<instance>/arena/<run id>).")
@json_option
@click.pass_context
def arena(ctx, sets, instance_id, contexts_file, judge, fold, n_boot, seed, cluster, threshold, ridge, rubric,
          rubric_config, out, as_json):
    """Rank systems by blind pairwise comparison: both orders judged, folded, BTD-fitted, bootstrapped.

    SETS are submission folders, frozen set folders (verified) or questions.jsonl files of
    two or more systems on the same instance; contexts are their shared past-evidence
    neighbourhoods. Writes arena.json, cases.jsonl, contexts.jsonl and leaderboard.md.
    """
    from ..arena.contexts import load_user_contexts, neighbourhood_contexts
    from ..arena.pairwise import get_pairwise_judge
    from ..arena.rubric import get_rubric
    from ..arena.run import leaderboard_markdown, rubric_markdown, run_arena, write_arena
    from ..seal import sha256_json

    ws = workspace(ctx)
    if bool(sets) == bool(contexts_file):
        raise BadInput("give either question SETS or --contexts FILE (not both, not neither)")
    if contexts_file:
        contexts = load_user_contexts(contexts_file)
    else:
        from ..arena.contexts import cutoff_of

        question_sets = _question_sets(sets)
        past = None
        if instance_id:
            from ..instance import load_instance, open_past_corpus

            instance = load_instance(instance_id, ws)
            cutoff = cutoff_of(question_sets)
            if cutoff is not None and cutoff != instance.cutoff:
                raise BadInput(f"the question sets' cutoff {cutoff} is not instance {instance_id}'s cutoff {instance.cutoff}")
            past = open_past_corpus(instance, ws)
        contexts = neighbourhood_contexts(question_sets, past, threshold=threshold)
    multi = [c for c in contexts if len(c.outputs) >= 2]
    if not multi:
        raise BadInput("no context holds outputs of two systems: nothing to compare (try a lower --threshold)")
    pairwise = get_pairwise_judge(judge, root=ws.root)
    scorer = None if rubric == "none" else get_rubric(rubric, **({"config": rubric_config} if rubric_config else {}))
    n_pairs = sum(len(c.outputs) * (len(c.outputs) - 1) // 2 for c in multi)
    with tqdm(total=n_pairs, desc="judging pairs", unit=" pair", disable=not progress_enabled()) as bar:
        result = run_arena(multi, pairwise, fold=fold, n_boot=n_boot, seed=seed, cluster=cluster, ridge=ridge,
                           rubric=scorer, progress=bar.update)
    result["inputs"] = {"sets": [str(p) for p in sets], "contexts_file": str(contexts_file) if contexts_file else None,
                        "instance": instance_id, "threshold": threshold, "cluster": cluster, "seed": seed}
    run_id = sha256_json({"contexts": [c.model_dump(mode="json") for c in multi], "judge": result["judge"], "fold": fold,
                          "n_boot": n_boot, "seed": seed, "cluster": cluster, "ridge": ridge, "rubric": rubric})[:12]
    out = out or ws.results / (instance_id or "user") / "arena" / run_id
    write_arena(result, multi, out)
    if as_json:
        echo_json({k: v for k, v in result.items() if k != "cases"})
        return
    click.echo(leaderboard_markdown(result))
    if "rubric" in result:
        click.echo(rubric_markdown(result["rubric"]))
    click.echo(f"wrote {out}/arena.json, leaderboard.md, cases.jsonl, contexts.jsonl")


@cli.command("diversity")
@click.argument("sets", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--rule", "rules", multiple=True, default=("tfidf", "embedding"), show_default=True,
              help="Equivalence rule (repeatable): tfidf, embedding, llm.")
@click.option("--grouping", "groupings", multiple=True, type=click.Choice(["components", "complete", "leader"]),
              default=("components", "complete", "leader"), show_default=True, help="Clustering (repeatable).")
@click.option("--audit/--no-audit", default=True, show_default=True, help="Run the perturbation audit.")
@click.option("--audit-max", type=click.IntRange(1), default=None, help="Audit at most this many questions per set.")
@click.option("--llm-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Judge config for --rule llm.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Output folder (default: results/diversity/<id>).")
@json_option
@click.pass_context
def diversity(ctx, sets, rules, groupings, audit, audit_max, llm_config, out, as_json):
    """Count distinct questions per set under each equivalence rule, and audit the rules with
    controlled perturbations (wording, synonyms: meaning kept; object or method swapped: changed).

    SETS are submission folders, frozen set folders (verified) or questions.jsonl files.
    """
    from ..diversity import audit_markdown, distinct_markdown, distinct_report, perturbation_audit
    from ..equivalence import get_rule
    from ..fileio import atomic_write_text, write_json
    from ..seal import sha256_json

    ws = workspace(ctx)
    question_sets = {name: [q.question for q in sorted(qs, key=lambda q: (q.rank, q.question_id))]
                     for name, qs in _question_sets(sets).items()}
    built = []
    for name in dict.fromkeys(rules):
        if name == "llm":
            from .. import equivalence_llm  # noqa: F401  (registers the llm rule)

            built.append(get_rule("llm", config=llm_config))
        elif name == "embedding":
            built.append(get_rule("embedding", cache_dir=ws.cache / "equivalence"))
        else:
            built.append(get_rule(name))
    report = {"distinct": distinct_report(question_sets, built, groupings=list(dict.fromkeys(groupings)))}
    md = "## Distinct questions per set\n\n" + distinct_markdown(report["distinct"])
    if audit:
        pool = [q for name in sorted(question_sets) for q in question_sets[name][:audit_max]]
        report["audit"] = perturbation_audit(pool, built)
        md += "\n## Perturbation audit\n\n" + audit_markdown(report["audit"])
    out = out or ws.results / "diversity" / sha256_json({"sets": question_sets, "rules": [r.name for r in built],
                                                         "groupings": groupings, "audit": audit, "audit_max": audit_max})[:12]
    write_json(out / "diversity.json", report)
    atomic_write_text(out / "diversity.md", "# Diversity\n\n" + md)
    if as_json:
        echo_json(report)
        return
    click.echo(md)
    click.echo(f"wrote {out}/diversity.json, diversity.md")
