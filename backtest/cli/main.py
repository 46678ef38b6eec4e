"""The ``backtest`` click group and the entry point that maps errors to exit codes."""

from __future__ import annotations

import errno
import os
import sys

import click

from backtest import __version__
from backtest.cli import (
    agree,
    annotate,
    arena,
    baselines,
    clarity,
    compare,
    contamination,
    control,
    corpus,
    demo,
    diversity,
    estimate,
    freeze,
    gate,
    generate,
    import_,
    instance,
    judge,
    leaderboard,
    leakage,
    prospective,
    release,
    report,
    retrieve,
    schema,
    score,
    stress,
    verify,
)
from backtest.core.errors import BacktestError
from backtest.core.text import visible
from backtest.core.workspace import Workspace

# One module per top-level command, in pipeline order; each lists its click command in ``COMMANDS``.
COMMAND_MODULES = [
    corpus,
    instance,
    generate,
    gate,
    baselines,
    freeze,
    verify,
    clarity,
    retrieve,
    score,
    report,
    demo,
    leakage,
    contamination,
    control,
    annotate,
    judge,
    arena,
    diversity,
    import_,
    compare,
    leaderboard,
    agree,
    estimate,
    stress,
    release,
    prospective,
    schema,
]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "BACKTEST"})
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    envvar="BACKTEST_HOME",
    default=None,
    help="Project folder holding corpora/, manifests/, frozen/, results/ (default: current directory).",
)
@click.version_option(__version__, prog_name="backtest")
@click.pass_context
def cli(ctx: click.Context, root: str | None) -> None:
    """Make claims about question-generating systems falsifiable.

    Freeze questions generated from a past corpus, then retrieve and judge what
    a temporally isolated future corpus says about them. Exit codes: 0 success,
    1 a check failed, 2 bad input or usage.
    """
    ctx.ensure_object(dict)
    ctx.obj["ws"] = Workspace.from_env(root)


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI; a failure is one line on stderr (no traceback) and its exit code."""
    try:
        cli.main(args=argv, prog_name="backtest", standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every failure ends in a line and a code
        code, lines = failure(exc)
        if code == 3 and os.environ.get("BACKTEST_DEBUG"):
            raise
        for line in lines:
            click.echo(line, err=True)
        sys.exit(code)


def failure(exc: BaseException) -> tuple[int, list[str]]:
    """The exit code of an exception that ended a command, and the lines it prints: 2 bad input or usage, 1 a
    check failed (or the machine ran out of space or memory), 130 interrupted, 3 an internal error."""
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code, []
    if isinstance(exc, (click.exceptions.Abort, KeyboardInterrupt)):
        return 130, ["aborted" if isinstance(exc, click.exceptions.Abort) else "interrupted"]
    if isinstance(exc, click.ClickException):
        return 2, [f"error: {visible(' '.join(exc.format_message().split()))}"]
    if isinstance(exc, BacktestError):
        lines = [f"error: {visible(exc.message)}"] + [f"  {visible(str(line))}" for line in exc.details[1:21]]
        if len(exc.details) > 21:
            lines.append(f"  … and {len(exc.details) - 21} more")
        return exc.exit_code, lines
    if isinstance(exc, RecursionError):
        return 2, ["error: input nested too deeply to read (a JSON document thousands of levels deep?)"]
    if isinstance(exc, MemoryError):
        return 1, ["error: out of memory: the input is too large for this machine (split it, or use a smaller --n)"]
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f" writing {exc.filename}" if exc.filename else ""
        return 1, [
            f"error: no space left on device{where}; nothing was half-written (writes are atomic): free space and rerun"
        ]
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return 2, [f"error: {exc.strerror}: {exc.filename}"]
    return 3, [
        f"internal error: {exc.__class__.__name__}: {' '.join(str(exc).split())} (set BACKTEST_DEBUG=1 for a traceback)"
    ]
