"""The ``backtest`` click group and the entry point that maps errors to exit codes."""

from __future__ import annotations

import errno
import os
import sys

import click

from backtest import __version__
from backtest.cli import (
    analysis,
    arena,
    clarity,
    corpus,
    estimate,
    freeze,
    generate,
    instance,
    leakage,
    prospective,
    release,
    retrieve,
    schema,
    score,
    validation,
)
from backtest.core.errors import BacktestError
from backtest.core.text import visible
from backtest.core.workspace import Workspace

# Command modules in pipeline order; each lists its click commands in ``COMMANDS``.
COMMAND_MODULES = [
    corpus,
    instance,
    generate,
    freeze,
    clarity,
    retrieve,
    score,
    leakage,
    validation,
    arena,
    analysis,
    estimate,
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
    """Console entry point: run the CLI, printing BacktestErrors as one line (no traceback)."""
    try:
        cli.main(args=argv, prog_name="backtest", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"error: {visible(' '.join(exc.format_message().split()))}", err=True)
        sys.exit(2)
    except BacktestError as exc:
        click.echo(f"error: {visible(exc.message)}", err=True)
        for line in exc.details[1:21]:
            click.echo(f"  {visible(str(line))}", err=True)
        if len(exc.details) > 21:
            click.echo(f"  … and {len(exc.details) - 21} more", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except RecursionError:
        click.echo("error: input nested too deeply to read (a JSON document thousands of levels deep?)", err=True)
        sys.exit(2)
    except MemoryError:
        click.echo(
            "error: out of memory: the input is too large for this machine (split it, or use a smaller --n)", err=True
        )
        sys.exit(1)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            click.echo(
                f"error: no space left on device{f' writing {exc.filename}' if exc.filename else ''}; nothing was "
                "half-written (writes are atomic): free space and rerun",
                err=True,
            )
            sys.exit(1)
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            click.echo(f"error: {exc.strerror}: {exc.filename}", err=True)
            sys.exit(2)
        if os.environ.get("BACKTEST_DEBUG"):
            raise
        click.echo(
            f"internal error: {exc.__class__.__name__}: {' '.join(str(exc).split())} "
            "(set BACKTEST_DEBUG=1 for a traceback)",
            err=True,
        )
        sys.exit(3)
    except Exception as exc:  # noqa: BLE001 - last resort: one line, never a traceback
        if os.environ.get("BACKTEST_DEBUG"):
            raise
        click.echo(
            f"internal error: {exc.__class__.__name__}: {' '.join(str(exc).split())} "
            "(set BACKTEST_DEBUG=1 for a traceback)",
            err=True,
        )
        sys.exit(3)
