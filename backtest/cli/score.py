"""``backtest score FROZEN_DIR``: retrieve, judge and measure a frozen set."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from backtest.cli.common import (
    device_option,
    echo_json,
    executor_options,
    executor_spec,
    json_option,
    progress_enabled,
    run_validity_line,
    workspace,
)
from backtest.core.records import output_dict

if TYPE_CHECKING:
    from backtest.scoring.outputs import DryRun


@click.command("score")
@click.argument("frozen_dir", type=click.Path(path_type=Path))
@click.option(
    "--judge",
    "judge_spec",
    default=None,
    help="Judge config (judges/NAME.toml) or name; default: the instance's judge, else 'offline'.",
)
@click.option("--run-id", default=None, help="Run folder name (default: <judge>-<hash of all settings>).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only estimate: the judge calls and tokens the run would need and, with a price in the judge "
    "config, their cost; nothing is judged or written, no key is needed.",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(0, None),
    default=None,
    help="Stop before this invocation's judge calls would cost more (in the config's currency); the run "
    "stays resumable. Needs a price in the judge config.",
)
@device_option
@executor_options
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal)."
)
@json_option
@click.pass_context
def score(
    ctx, frozen_dir, judge_spec, run_id, dry_run, max_cost, executor_name, ray_address, ray_cpus, progress, as_json
):
    """Retrieve, judge and compute metrics for a frozen set (resumable).

    Writes results/<instance>/<system>/<run-id>/ with RUN.json, retrieval.jsonl,
    judgments.jsonl, metrics.json, report.md and report.html. Rerun after an
    interruption to continue; nothing is judged twice and no run is overwritten.
    RUN.json and the report carry the run's tokens and, with a priced judge, its cost.
    """
    from backtest.core.executor import use
    from backtest.scoring.metrics import JUDGE_ONLY_NOTE
    from backtest.scoring.score import score_frozen

    ws = workspace(ctx)
    show = progress_enabled() if progress is None else progress
    with use(executor_spec(executor_name, ray_address, ray_cpus)):
        if dry_run:
            if max_cost is not None or run_id is not None:
                raise click.UsageError("--dry-run estimates only: drop --max-cost and --run-id")
            from backtest.scoring.score import dry_run as estimate_run

            _print_estimate(estimate_run(frozen_dir, ws, judge_spec=judge_spec, progress=show), as_json)
            return
        result = score_frozen(frozen_dir, ws, judge_spec=judge_spec, run_id=run_id, progress=show, max_cost=max_cost)
    summary = {
        "run_dir": str(result.run_dir),
        "run_id": result.run_id,
        "status": result.status,
        "n_questions": result.n_questions,
        "judged_now": result.judged_now,
        "valid": result.valid,
        "http_calls": result.judge_stats.get("http_calls"),
        "cache_hits": result.judge_stats.get("cache_hits"),
        "prompt_tokens": result.judge_stats.get("prompt_tokens"),
        "completion_tokens": result.judge_stats.get("completion_tokens"),
        "ray_attempts_lost": result.judge_stats.get("ray_attempts_lost"),
        "cost": output_dict(result.cost) if result.cost else None,
        "judge_validity": run_validity_line(ws, result.run_dir),
        "coverage_judge_only": output_dict(result.metrics.coverage) if result.metrics else None,
        "judge_only_note": JUDGE_ONLY_NOTE,
    }
    if as_json:
        echo_json(summary)
        return
    click.echo(
        f"{result.status}: {result.run_id} ({result.n_questions} questions, {result.judged_now} judged now, "
        f"{summary['http_calls']} HTTP calls, {summary['cache_hits']} cache hits, "
        f"{summary['prompt_tokens'] + summary['completion_tokens']} new tokens; valid={result.valid})"
    )
    if summary["ray_attempts_lost"]:
        click.echo(
            f"  {summary['ray_attempts_lost']} Ray task attempt(s) died with their worker and were retried: a call "
            "they made, if it reached the endpoint, is in no count and no cost"
        )
    if result.cost and result.cost.priced and result.cost.total is not None:
        c = result.cost
        click.echo(
            f"cost: {c.total:.4f} {c.currency} for the run's labels "
            f"({c.prompt_tokens} prompt + {c.completion_tokens} completion tokens); "
            f"spent now: {c.spent_last_invocation or 0:.4f} {c.currency}"
        )
    coverage = result.metrics.coverage if result.metrics else None
    if coverage is not None and coverage.rate is not None:
        lo, hi = coverage.ci95
        click.echo(
            f"coverage, judge only: {coverage.rate:.1%} [{lo:.1%}, {hi:.1%}] ({coverage.k}/{coverage.n}); "
            f"{JUDGE_ONLY_NOTE}"
        )
    click.echo(summary["judge_validity"])
    click.echo(f"report: {result.run_dir / 'report.html'}")


def _print_estimate(est: DryRun, as_json: bool) -> None:
    """The dry run's totals: calls, prompt tokens (exact or estimated), the completion bound, the cost."""
    if as_json:
        echo_json(est.model_dump(mode="json"))
        return
    how = "counted by the endpoint's tokenizer" if est.prompt_tokens_exact else "estimated from characters"
    click.echo(
        f"dry run: {est.system} on {est.instance_id} with {est.judge}: {est.n_questions} questions, "
        f"{est.n_cached} cached, {est.n_calls} calls"
    )
    click.echo(f"  prompt tokens: {est.prompt_tokens} ({how})")
    click.echo(f"  completion tokens: at most {est.max_completion_tokens} (max_tokens per call)")
    if est.priced:
        click.echo(
            f"  cost: {est.cost_prompt:.4f} {est.currency} for the prompts, at most "
            f"{est.cost_at_most:.4f} {est.currency} with the longest answers ({est.note})"
        )
        if est.batch_factor < 1:
            click.echo(
                f"  through provider batch files (judge batch export, billed x{est.batch_factor:g}): at most "
                f"{est.cost_at_most_batch:.4f} {est.currency}"
            )
    else:
        click.echo("  cost: the judge config has no price table (price = {input_per_mtok, output_per_mtok, currency})")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [score]
