"""``backtest judge batch export|import``: an LLM judge's requests as a provider batch file, and its answers back.

The group is attached to ``backtest judge`` by :mod:`backtest.cli.judge`; the logic is
:mod:`backtest.judge.batch`.
"""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import OutPath, echo_json, json_option, progress_enabled, workspace
from backtest.core.errors import CheckFailed


@click.group("batch")
def batch_group() -> None:
    """Provider batch files for an llm judge: export its requests, import the answers into its cache.

    export writes OpenAI Batch input (the OpenAI Batch API, `vllm run-batch`); import
    caches the provider's answers, so a following `backtest score` with the same judge
    asks nothing online for them.
    """


@batch_group.command("export")
@click.argument("frozen_dir", type=click.Path(path_type=Path))
@click.option(
    "--judge",
    "judge_spec",
    required=True,
    help="The llm judge config (judges/NAME.toml) that `score` will use.",
)
@click.option(
    "--out",
    type=OutPath(dir_okay=False, path_type=Path),
    required=True,
    help="Requests file to write (JSON Lines); its manifest goes beside it as NAME.manifest.json.",
)
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal)."
)
@json_option
@click.pass_context
def batch_export(ctx, frozen_dir, judge_spec, out, progress, as_json):
    """Write the judge's requests for FROZEN_DIR as an OpenAI Batch input file.

    Retrieves as `score` does and writes one line per question the judge's cache cannot
    answer yet: {"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"},
    the exact body the judge would send (never an API key). Questions already answered in
    the cache are skipped. The manifest beside OUT maps every custom_id to its question,
    the judge's cache key and the documents shown, with the judge config's sha256.
    """
    from backtest.judge.batch import export_batch

    summary = export_batch(
        frozen_dir, judge_spec, out, workspace(ctx), progress=progress_enabled() if progress is None else progress
    )
    if as_json:
        echo_json(summary.as_dict())
        return
    retries = f", {summary.n_constraint_retry} of them constraint retries" if summary.n_constraint_retry else ""
    click.echo(
        f"wrote {summary.n_requests} requests{retries} for {summary.n_questions} questions to {summary.requests} "
        f"and its manifest {summary.manifest}; skipped {summary.n_questions_cached} questions already answered "
        f"in the judge's cache" + (f" and {summary.n_duplicates} duplicates" if summary.n_duplicates else "")
    )
    if summary.n_requests:
        click.echo(
            f"next: run it (OpenAI Batch API, or `vllm run-batch -i {summary.requests} -o results.jsonl "
            f"--model {summary.model}`), then `backtest judge batch import results.jsonl --requests {summary.requests}`"
        )


@batch_group.command("import")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--requests",
    "requests_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The requests file export wrote; its manifest (NAME.manifest.json) beside it is read. "
    "Default: requests.jsonl in the folder of RESULTS.",
)
@json_option
@click.pass_context
def batch_import(ctx, results, requests_path, as_json):
    """Check a provider's batch output (RESULTS) and put its answers into the judge's cache.

    Every answer is checked as the judge checks it (a JSON object, the answer schema, the
    citation rules). A line with an error, a status other than 200, an unknown custom_id or
    an invalid answer is reported by its custom_id and not cached; a first answer that
    breaks a citation rule is cached and reported (its constraint retry is still to be
    asked: export again, or let `score` ask it). `score` asks whatever is not cached
    online. Exit 0 when every request of the manifest was imported cleanly, 1 when some
    were not (listed), 2 for an unusable results file or manifest (nothing imported).
    """
    from backtest.judge.batch import import_batch

    summary = import_batch(results, workspace(ctx), requests_path)
    if as_json:
        echo_json(summary.as_dict())
    else:
        for row in summary.failed:
            click.echo(f"failed  {row['custom_id']} ({_questions(row)}) line {row['line']}: {row['reason']}")
        for row in summary.constraint_retry:
            click.echo(f"retry   {row['custom_id']} ({_questions(row)}): cached, but {'; '.join(row['problems'])}")
        for row in summary.missing:
            click.echo(f"missing {row['custom_id']} ({_questions(row)}): no result line")
        click.echo(
            f"imported {summary.n_imported} answers ({summary.prompt_tokens} prompt + {summary.completion_tokens} "
            f"completion tokens) into {summary.cache}; {summary.n_already_cached} were cached already"
        )
    if not summary.ok:
        raise CheckFailed(summary.problem_line())


def _questions(row: dict) -> str:
    return ", ".join(row["question_ids"]) or "no question"
