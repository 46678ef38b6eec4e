"""``backtest leakage RUN_DIR``: the leakage checks of a scored run."""

from __future__ import annotations

import click

from backtest.cli.common import RUN_DIR, echo_json, json_option, workspace
from backtest.core.errors import CheckFailed


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


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [leakage]
