"""``backtest leakage RUN_DIR``, ``backtest contamination FROZEN_DIR|RUN_DIR`` and
``backtest control mismatch|rerun|prompt RUN_DIR``."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, workspace
from backtest.core.errors import CheckFailed

RUN_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("leakage")
@click.argument("run_dir", type=RUN_DIR)
@json_option
@click.pass_context
def leakage(ctx, run_dir, as_json):
    """Run the eight leakage checks on a scored run; exit 1 with one line per failed check.

    Checks: cutoff, evidence_in_past, retrieved_in_future, citations_shown, ids_aligned,
    windows, corpora_disjoint, integrity (see docs/validity.md).
    """
    from backtest.validity.leakage import check_run, failure_lines, leakage_record

    results = check_run(run_dir, workspace(ctx))
    record = leakage_record(results)
    if as_json:
        echo_json({"run_dir": str(run_dir), **record})
    else:
        for r in results:
            click.echo(f"{'ok  ' if r.passed else 'FAIL'} {r.name}: {r.summary}")
            for offender in [] if r.passed else r.offenders[:20]:
                click.echo(f"       {offender}")
            if not r.passed and len(r.offenders) > 20:
                click.echo(f"       … and {len(r.offenders) - 20} more")
    failures = failure_lines(results)
    if failures:
        raise CheckFailed(failures[0], failures)  # exit 1, one line per failed check


@click.command("contamination")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the typed record (contamination.json schema) to this file.",
)
@click.option(
    "--max-rate",
    type=click.FloatRange(0, 1),
    default=None,
    help="Exit 1 when the share of flagged questions is above this (e.g. 0 for a past-only set).",
)
@click.option("--limit", type=click.IntRange(0), default=20, show_default=True, help="Flagged questions listed.")
@json_option
@click.pass_context
def contamination(ctx, path, out, max_rate, limit, as_json):
    """Contamination probe of a frozen set (PATH: its folder, or a run folder naming it).

    Flags each question term (catalogued object, named instrument/mission/survey, content
    n-gram of 1-3 words) that occurs in the instance's future corpus but never in its past
    corpus, and reports the share of questions with at least one (95% Clopper-Pearson
    interval). Runs only on an intact frozen set, after freezing, as scoring does; the
    definition and thresholds are in docs/validity.md.
    """
    from backtest.validity.contamination import probe_path, render_text, write_report

    ws = workspace(ctx)
    target = ws.check_output(out) if out is not None else None  # refused before any work
    report = probe_path(path, ws)
    if target is not None:
        write_report(target, report)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        click.echo(render_text(report, limit=limit), nl=False)
        if out is not None:
            click.echo(f"wrote {out}")
    rate = report.rate.rate
    if max_rate is not None and rate is not None and rate > max_rate:
        raise CheckFailed(
            f"contamination probe: {report.rate.k}/{report.rate.n} questions flagged ({rate:.3f}), "
            f"above --max-rate {max_rate:g}"
        )


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
    help="Alternative prompt template, e.g. judges/prompts/outcome-premise-reworded-v1.md.",
)
@judge_option
@json_option
@click.pass_context
def control_prompt_cmd(ctx, run_dir, prompt, judge_spec, as_json):
    """The run's LLM judge with another prompt; agreement with the original labels."""
    from backtest.validity.controls import control_prompt, render_agreement

    _emit(control_prompt(run_dir, workspace(ctx), prompt, judge_spec=judge_spec), as_json, render_agreement)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [leakage, contamination, control]
