"""Shared pieces of the CLI: the workspace option, date parsing, output helpers."""

from __future__ import annotations

import datetime as dt
import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable

import click

from backtest.core.errors import BadInput
from backtest.core.workspace import Workspace


class DateType(click.ParamType):
    """A click parameter type for ISO dates."""

    name = "DATE"

    def convert(self, value, param, ctx):
        if isinstance(value, dt.date):
            return value
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            self.fail(f"{value!r} is not a date (YYYY-MM-DD)", param, ctx)


DATE = DateType()


def workspace(ctx: click.Context) -> Workspace:
    """The workspace chosen by ``--root`` / ``BACKTEST_HOME`` / the current directory."""
    return ctx.find_root().obj["ws"]


def echo_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (for ``--json``)."""
    click.echo(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str))


def progress_enabled() -> bool:
    """Progress bars only on an interactive terminal, so logs and CI stay clean."""
    return sys.stderr.isatty()


class OutPath(click.Path):
    """A ``click.Path`` for outputs: refused (exit 2) inside frozen/, manifests/ or corpora/ of the workspace."""

    def convert(self, value, param, ctx):
        path = super().convert(value, param, ctx)
        if ctx is not None and ctx.find_root().obj:
            try:
                workspace(ctx).check_output(path)
            except BadInput as exc:
                self.fail(exc.message, param, ctx)
        return path


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


# Retrieval options shared by ``instance create``, ``prospective commit`` and ``stress``.
retriever_option = click.option(
    "--retriever", type=click.Choice(["dense", "bm25", "hybrid"]), default="dense", show_default=True
)


def embedding_model_option(command: Callable) -> Callable:
    """``--model``: a new instance's dense model spec, ``NAME[@BACKEND]`` (docs/retrieve.md)."""
    from backtest.text.embed import BACKENDS, DEFAULT_MODEL

    return click.option(
        "--model",
        default=DEFAULT_MODEL,
        show_default=True,
        help="Sentence-transformers model for dense and hybrid retrieval, NAME[@BACKEND], BACKEND one of "
        f"{', '.join(BACKENDS)} (torch when omitted; @bf16 is about twice as fast on a CPU with native bf16, "
        "with a slightly different ranking; see docs/retrieve.md).",
    )(command)


def k_option(help: str | None = None) -> Callable:
    """The ``--k`` option: documents retrieved per question (1 to 100, default 8)."""
    return click.option("--k", type=click.IntRange(1, 100), default=8, show_default=True, help=help)


def executor_options(command: Callable) -> Callable:
    """``--executor local|ray``, ``--ray-address`` and ``--ray-cpus``; the command gets ``executor_spec``."""

    command = click.option(
        "--ray-cpus",
        type=click.IntRange(1, None),
        default=None,
        help="CPUs of the local Ray cluster started when no --ray-address is given (default: all).",
    )(command)
    command = click.option(
        "--ray-address",
        default=None,
        envvar="RAY_ADDRESS",
        help="A running Ray cluster (`ray start --head` prints it; 'auto': the one on this machine). "
        "Default: start a local cluster for this command.",
    )(command)
    return click.option(
        "--executor",
        "executor_name",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where embedding and judging run: this process, or a Ray cluster (pip install -e '.[scale]'); "
        "the outputs are byte-identical.",
    )(command)


def executor_spec(executor_name: str, ray_address: str | None, ray_cpus: int | None):
    """The :class:`~backtest.core.executor.ExecutorSpec` of the executor options."""
    from backtest.core.executor import ExecutorSpec

    if executor_name != "ray" and (ray_cpus is not None):
        raise click.UsageError("--ray-cpus needs --executor ray")
    return ExecutorSpec(executor_name, ray_address if executor_name == "ray" else None, ray_cpus)


def device_option(command: Callable) -> Callable:
    """``--device auto|cpu|cuda`` (``BACKTEST_DEVICE``): where the torch embedding backend runs
    (:mod:`backtest.text.device`); the command body runs under that choice and does not get the option.
    ``cuda`` on a machine without a GPU is refused (exit 2) before the command starts, unless the command runs
    on a Ray cluster (``--executor ray``), whose actors decide."""
    from backtest.text.device import DEVICE_ENV, DEVICES

    @functools.wraps(command)
    def under_device(*args, device: str, **kwargs):
        from backtest.text.device import use

        with use(device, check=kwargs.get("executor_name") != "ray"):
            return command(*args, **kwargs)

    return click.option(
        "--device",
        type=click.Choice(DEVICES),
        default="auto",
        envvar=DEVICE_ENV,
        show_default=True,
        show_envvar=True,
        help="Where the fp32 torch embedding model runs: auto takes a CUDA GPU when torch sees one, else the "
        "CPU; cuda without one is refused. The device is in no cache key or result record; a GPU's scores differ "
        "from the CPU's by float rounding (docs/retrieve.md).",
    )(under_device)


def llm_options(command):
    """The generators' LLM endpoint options (``direct_llm``, ``--verbalizer llm``),
    each also read from the environment."""
    for option in reversed(
        [
            click.option(
                "--llm-base-url",
                envvar="BACKTEST_LLM_BASE_URL",
                default=None,
                help="OpenAI-compatible endpoint (direct_llm, --verbalizer llm).",
            ),
            click.option("--llm-model", envvar="BACKTEST_LLM_MODEL", default=None, help="Model name at that endpoint."),
            click.option(
                "--llm-api-key-env",
                envvar="BACKTEST_LLM_API_KEY_ENV",
                default=None,
                help="Name of the environment variable holding the API key: OPENAI_API_KEY or BACKTEST_<NAME>_API_KEY "
                "(docs/judges.md).",
            ),
            click.option(
                "--llm-training-cutoff",
                envvar="BACKTEST_LLM_TRAINING_CUTOFF",
                default=None,
                help="The model's stated training cutoff (recorded in llm_components).",
            ),
        ]
    ):
        command = option(command)
    return command


def given_options(**options) -> dict:
    """The options that were given (not None)."""
    return {k: v for k, v in options.items() if v is not None}


#: a run folder argument (``RUN_DIR``): an existing folder
RUN_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


def split_values(values: tuple[str, ...] | str | None) -> list[str]:
    """Comma-separated and/or repeated option values, flattened, blanks dropped."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def run_validity_line(ws: Workspace, run_dir: Path) -> str:
    """The judge-validity line of a finished run (its judge's card, or that it has none)."""
    from backtest.judge.cards import run_validity
    from backtest.validity.runfolder import RunFolder

    return run_validity(ws, RunFolder.open(run_dir).run.judge).line
