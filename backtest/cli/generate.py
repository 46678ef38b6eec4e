"""``backtest generate NAME --instance ID [--n 125] [--seed S] [--out DIR]``."""

from __future__ import annotations

from pathlib import Path

import click

from .common import echo_json, json_option, workspace
from .main import cli


@cli.command("generate")
@click.argument("name")
@click.option("--instance", "instance_id", required=True, help="Instance whose PAST corpus the generator reads.")
@click.option("--n", type=click.IntRange(1, 10000), default=125, show_default=True, help="Number of questions.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed: same seed, same corpus -> byte-identical files.")
@click.option("--out", type=click.Path(path_type=Path), help="Submission folder (default: submissions/<instance>/<system>).")
@click.option("--generated-at", "generated_at", default=None,
              help="Stamp for generated_at: 'now', or an ISO date/datetime (default: the cutoff day, an as-of date; "
                   "$SOURCE_DATE_EPOCH wins when set).")
@click.option("--verbalizer", type=click.Choice(["template", "llm"]), default=None,
              help="evidence_graph only: phrase the detected tensions with templates (default) or an LLM.")
@click.option("--llm-base-url", envvar="BACKTEST_LLM_BASE_URL", default=None, help="OpenAI-compatible endpoint (direct_llm, --verbalizer llm).")
@click.option("--llm-model", envvar="BACKTEST_LLM_MODEL", default=None, help="Model name at that endpoint.")
@click.option("--llm-api-key-env", envvar="BACKTEST_LLM_API_KEY_ENV", default=None, help="Name of the environment variable holding the API key.")
@click.option("--llm-training-cutoff", envvar="BACKTEST_LLM_TRAINING_CUTOFF", default=None, help="The model's stated training cutoff (recorded in llm_components).")
@json_option
@click.pass_context
def generate(ctx, name, instance_id, n, seed, out, generated_at, verbalizer, llm_base_url, llm_model, llm_api_key_env,
             llm_training_cutoff, as_json):
    """Run generator NAME on an instance's past corpus; write questions.jsonl + metadata.json.

    Generators: random_claims, citation_leaders, review_future_work, direct_llm, evidence_graph.
    """
    from ..generators import run_generator

    ws = workspace(ctx)
    options = {"verbalizer": verbalizer, "llm_base_url": llm_base_url, "llm_model": llm_model,
               "llm_api_key_env": llm_api_key_env, "llm_training_cutoff": llm_training_cutoff}
    summary = run_generator(name, instance_id, ws, n=n, seed=seed, out=out, generated_at=generated_at,
                            options={k: v for k, v in options.items() if v is not None})
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"{summary['system_name']}: wrote {summary['n_questions']} questions to {summary['out']}")
        if summary["n_questions"] < n:
            click.echo(f"note: asked for {n}, {name} produced {summary['n_questions']} usable distinct questions", err=True)
