"""``backtest release compact RUN_DIR...`` and ``backtest release replay [--check]``: committed, replayable results."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import device_option, echo_json, json_option, progress_enabled, workspace


@click.group("release")
def release_group() -> None:
    """Results a repository commits (compact run folders) and their replay from the frozen sets."""


@release_group.command("compact")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
def compact_cmd(run_dirs):
    """Rewrite complete run folders in place in the compact form a release commits: RUN.json without
    timestamps, judgments and metrics as they are, retrieval with document hashes instead of their text
    (re-materialised from the sealed corpus when read), no reports."""
    from backtest.studies.release import compact_run

    for run_dir in run_dirs:
        files = compact_run(run_dir)
        click.echo(f"compacted {run_dir}: {', '.join(p.name for p in files)}")


@release_group.command("replay")
@click.option("--check", is_flag=True, help="Only compare: exit 1 if a replayed run changed (nothing written).")
@click.option(
    "--allow-endpoint",
    is_flag=True,
    help="Let a run whose judge calls an endpoint (an LLM judge) be replayed: its questions, and the key its "
    "config names, go to that endpoint. Without it such a run is refused before anything is scored.",
)
@device_option
@json_option
@click.pass_context
def replay_cmd(ctx, check, allow_endpoint, as_json):
    """Re-score every committed (compact) run under results/ from its frozen set, with the judge its RUN.json
    names, in a scratch workspace, and compare: what readers and judges are shown (documents, ranks, shown-text
    hashes, judgments, metrics) exactly, the stored retrieval scores within 1e-4 (another machine's float
    kernels move them; docs/scoring.md). Without --check the files that changed are replaced by the replayed
    ones and the others keep their bytes (make replay then runs `git diff --exit-code results/`).

    RUN.json is data a pull request can edit: before any run is scored, each run's judge must be the one it was
    judged with (its config sha256 is the run's judge.config_sha256, else exit 1) and call no endpoint (else
    exit 2, unless --allow-endpoint)."""
    from backtest.core.errors import CheckFailed
    from backtest.studies.release import replay
    from backtest.studies.release_compare import SCORE_TOLERANCE

    replayed = replay(workspace(ctx), write=not check, progress=progress_enabled(), allow_endpoint=allow_endpoint)
    changed = [r for r in replayed if r.changed]
    moved = max((r.max_score_move for r in replayed), default=0.0)
    if as_json:
        echo_json(
            {
                "runs": len(replayed),
                "changed": {str(r.run_dir): r.changed for r in changed},
                "differences": {str(r.run_dir): [d.line() for d in r.differences] for r in changed},
                "score_tolerance": SCORE_TOLERANCE,
                "max_score_move": moved,
            }
        )
    else:
        click.echo(
            f"replayed {len(replayed)} committed run(s); {len(changed)} changed "
            f"(largest score move within the {SCORE_TOLERANCE:g} tolerance: {moved:.1e})"
        )
    if changed and check:
        message = f"{len(changed)} replayed run(s) differ from the committed files"
        lines = [f"{r.run_dir}: {d.line()}" for r in changed for d in r.differences]
        raise CheckFailed(message, [message, *lines])


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [release_group]
