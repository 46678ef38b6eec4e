"""``backtest control mismatch|rerun|prompt RUN_DIR``: judge-validation controls."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import RUN_DIR, echo_json, json_option, workspace


@click.group("control")
def control():
    """Judge-validation controls; each writes its own run folder next to RUN_DIR.

    mismatch: judge against another question's documents (generosity floor);
    rerun: the same judge again without cache; prompt: another prompt template.
    """


judge_option = click.option(
    "--judge", "judge_spec", default=None, help="Judge to use (default: the one that scored RUN_DIR)."
)


def _emit(result: dict, as_json: bool, render) -> None:
    if as_json:
        echo_json(result)
    else:
        click.echo(render(result), nl=False)
        click.echo(f"wrote {result['out']}")


@control.command("mismatch")
@click.argument("run_dir", type=RUN_DIR)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the derangement.")
@judge_option
@json_option
@click.pass_context
def control_mismatch_cmd(ctx, run_dir, seed, judge_spec, as_json):
    """Rejudge every question against another question's documents; Fisher test of engagement."""
    from backtest.validity.controls import control_mismatch, render_mismatch

    _emit(control_mismatch(run_dir, workspace(ctx), seed=seed, judge_spec=judge_spec), as_json, render_mismatch)


@control.command("rerun")
@click.argument("run_dir", type=RUN_DIR)
@judge_option
@json_option
@click.pass_context
def control_rerun_cmd(ctx, run_dir, judge_spec, as_json):
    """The same judge again without its cache; agreement (raw, Cohen's kappa) with the run."""
    from backtest.validity.controls import control_rerun, render_agreement

    _emit(control_rerun(run_dir, workspace(ctx), judge_spec=judge_spec), as_json, render_agreement)


@control.command("prompt")
@click.argument("run_dir", type=RUN_DIR)
@click.option(
    "--prompt",
    "prompt",
    required=True,
    type=click.Path(path_type=Path),
    help="Alternative prompt template, e.g. judges/prompts/outcome-premise-reworded-v2.md.",
)
@judge_option
@json_option
@click.pass_context
def control_prompt_cmd(ctx, run_dir, prompt, judge_spec, as_json):
    """The run's LLM judge with another prompt; agreement with the original labels."""
    from backtest.validity.controls import control_prompt, render_agreement

    _emit(control_prompt(run_dir, workspace(ctx), prompt, judge_spec=judge_spec), as_json, render_agreement)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [control]
