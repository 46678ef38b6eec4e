"""``backtest release compact RUN_DIR...`` and ``backtest release replay [--check]``: committed, replayable results."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, progress_enabled, workspace


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
@click.option("--check", is_flag=True, help="Only compare: exit 1 if a replayed file differs (nothing written).")
@click.option(
    "--allow-endpoint",
    is_flag=True,
    help="Let a run whose judge calls an endpoint (an LLM judge) be replayed: its questions, and the key its "
    "config names, go to that endpoint. Without it such a run is refused before anything is scored.",
)
@json_option
@click.pass_context
def replay_cmd(ctx, check, allow_endpoint, as_json):
    """Re-score every committed (compact) run under results/ from its frozen set, with the judge its RUN.json
    names, in a scratch workspace, and compare the files byte for byte. Without --check the committed files
    are replaced by the replayed ones (make replay then runs `git diff --exit-code results/`).

    RUN.json is data a pull request can edit: before any run is scored, each run's judge must be the one it was
    judged with (its config sha256 is the run's judge.config_sha256, else exit 1) and call no endpoint (else
    exit 2, unless --allow-endpoint)."""
    from backtest.core.errors import CheckFailed
    from backtest.studies.release import replay

    replayed = replay(workspace(ctx), write=not check, progress=progress_enabled(), allow_endpoint=allow_endpoint)
    changed = [r for r in replayed if r.changed]
    if as_json:
        echo_json({"runs": len(replayed), "changed": {str(r.run_dir): r.changed for r in changed}})
    else:
        click.echo(f"replayed {len(replayed)} committed run(s); {len(changed)} changed")
    if changed and check:
        message = f"{len(changed)} replayed run(s) differ from the committed files"
        raise CheckFailed(message, [message, *(f"{r.run_dir}: {', '.join(r.changed)}" for r in changed)])


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [release_group]
