"""``backtest diversity``: distinct questions and the perturbation audit."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.arena import load_question_sets
from backtest.cli.common import OutPath, device_option, echo_json, json_option, workspace


@click.command("diversity")
@click.argument("sets", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--rule",
    "rules",
    multiple=True,
    default=("tfidf", "embedding"),
    show_default=True,
    help="Equivalence rule (repeatable): tfidf, embedding, llm.",
)
@click.option(
    "--grouping",
    "groupings",
    multiple=True,
    type=click.Choice(["components", "complete", "leader"]),
    default=("components", "complete", "leader"),
    show_default=True,
    help="Clustering (repeatable).",
)
@click.option("--audit/--no-audit", default=True, show_default=True, help="Run the perturbation audit.")
@click.option("--audit-max", type=click.IntRange(1), default=None, help="Audit at most this many questions per set.")
@click.option(
    "--llm-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Judge config for --rule llm."
)
@click.option(
    "--out", type=OutPath(file_okay=False, path_type=Path), help="Output folder (default: results/diversity/<id>)."
)
@device_option
@json_option
@click.pass_context
def diversity(ctx, sets, rules, groupings, audit, audit_max, llm_config, out, as_json):
    """Count distinct questions per set under each equivalence rule, and audit the rules with
    controlled perturbations (wording, synonyms: meaning kept; object or method swapped: changed).

    SETS are submission folders, frozen set folders (verified) or questions.jsonl files.
    """
    from backtest.analysis.diversity import build_rules, diversity_study, ranked_texts, write_diversity
    from backtest.core.seal import sha256_json

    ws = workspace(ctx)
    question_sets = ranked_texts(load_question_sets(sets))
    built = build_rules(rules, cache_dir=ws.cache / "equivalence", llm_config=llm_config)
    report, md = diversity_study(question_sets, built, groupings=groupings, audit=audit, audit_max=audit_max)
    out = (
        out
        or ws.results
        / "diversity"
        / sha256_json(
            {
                "sets": question_sets,
                "rules": [r.name for r in built],
                "groupings": groupings,
                "audit": audit,
                "audit_max": audit_max,
            }
        )[:12]
    )
    write_diversity(report, md, out)
    if as_json:
        echo_json(report)
        return
    click.echo(md)
    click.echo(f"wrote {out}/diversity.json, diversity.md")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [diversity]
