"""``backtest prospective commit | verify | grade``."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import (
    DATE,
    OutPath,
    echo_json,
    embedding_model_option,
    given_options,
    json_option,
    k_option,
    llm_options,
    retriever_option,
    split_values,
    workspace,
)
from backtest.core.errors import CheckFailed
from backtest.core.records import RetrievalSettings


@click.group()
def prospective() -> None:
    """Commit questions now; verify the commitment; grade it when the future arrives."""


@prospective.command("commit")
@click.argument("commitment_id")
@click.option("--cutoff", type=DATE, required=True, help="The cutoff date T: the past corpus ends here.")
@click.option("--window", required=True, help="The future window START..END (inclusive) that will be graded.")
@click.option("--schedule", required=True, help="Comma-separated grading dates; grading before the first is refused.")
@click.option(
    "--submissions",
    "submissions",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Submission folder(s) (questions.jsonl + metadata.json); repeatable.",
)
@click.option(
    "--generate",
    "generate",
    multiple=True,
    help="Also generate this reference system against the past-only instance and commit it (repeatable).",
)
@click.option("--n", type=click.IntRange(1, 10000), default=50, show_default=True, help="Questions per --generate.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the --generate systems.")
@click.option(
    "--source",
    required=True,
    help="Source kind that will build the future corpus (arxiv-daily, arxiv-archive, arxiv-oai, jsonl).",
)
@click.option("--input", "inputs", multiple=True, required=True, help="Source input path(s); repeatable.")
@click.option(
    "--categories", multiple=True, help="Keep records in any of these categories (comma-separated or repeated)."
)
@click.option("--query", help="Keep records whose title or abstract contains any '|'-separated phrase.")
@click.option(
    "--past",
    help="An existing past corpus (manifest path or id); default: build <ID>-past from the source up to the cutoff.",
)
@click.option("--past-start", type=DATE, help="First day of the past corpus when it is built here.")
@retriever_option
@embedding_model_option
@k_option()
@click.option(
    "--judge", "judge_config", type=click.Path(), help="Judge config (judges/NAME.toml); default: the offline judge."
)
@click.option("--domain", default="", help="A short description of the domain.")
@click.option("--out", type=OutPath(path_type=Path), help="Commitment folder (default: prospective/<ID>/).")
@llm_options
@json_option
@click.pass_context
def commit_cmd(
    ctx,
    commitment_id,
    cutoff,
    window,
    schedule,
    submissions,
    generate,
    n,
    seed,
    source,
    inputs,
    categories,
    query,
    past,
    past_start,
    retriever,
    model,
    k,
    judge_config,
    domain,
    out,
    llm_base_url,
    llm_model,
    llm_api_key_env,
    llm_training_cutoff,
    as_json,
):
    """Freeze submissions against a past-only instance and write a sealed commitment with SHA256SUMS and a Merkle root.

    The submissions are folders (--submissions) and/or reference systems generated here against the
    past-only instance (--generate, --n questions each, generated_at the wall-clock time). Prints the one
    line to publish (the root and the date).
    """
    from backtest.studies.prospective.commit import CommitOptions, commit, parse_dates, parse_window, publish_line

    ws = workspace(ctx)
    opts = CommitOptions(
        commitment_id=commitment_id,
        cutoff=cutoff,
        window=parse_window(window),
        schedule=parse_dates(schedule),
        submissions=list(submissions),
        source=source,
        inputs=list(inputs),
        categories=split_values(categories),
        query=query,
        past=past,
        past_start=past_start,
        retrieval=RetrievalSettings(method=retriever, model=model, k=k),
        judge_config=judge_config,
        domain=domain,
        out=out,
        generate=list(generate),
        n=n,
        seed=seed,
        generator_options=given_options(
            llm_base_url=llm_base_url,
            llm_model=llm_model,
            llm_api_key_env=llm_api_key_env,
            llm_training_cutoff=llm_training_cutoff,
        ),
    )
    folder, commitment = commit(opts, ws)
    if as_json:
        echo_json(
            {
                "folder": str(folder),
                "root": commitment.root,
                "committed_at": commitment.committed_at,
                "publish": publish_line(commitment),
                "commitment": commitment.model_dump(mode="json"),
            }
        )
        return
    click.echo(
        f"committed {len(commitment.systems)} submission(s), {commitment.n_files} files, into {folder}", err=True
    )
    click.echo(publish_line(commitment))


@prospective.command("verify")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--expect-root",
    default=None,
    metavar="HASH",
    help="The Merkle root published when the commitment was made: a folder rewritten and re-sealed since fails.",
)
@click.option(
    "--ledger",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The frozen ledger the committed sets were sealed in (frozen/LEDGER.jsonl of the workspace that made "
    "the commitment): every committed frozen seal must be a line of it, and the folder must hold its "
    "COMMITMENT.json.",
)
@click.option(
    "--expect-committed",
    type=DATE,
    default=None,
    metavar="YYYY-MM-DD",
    help="The day the publish line names ('committed YYYY-MM-DD'): COMMITMENT.json's committed_at, which the "
    "Merkle root does not cover, must be that day.",
)
@json_option
def verify_cmd(folder, expect_root, ledger, expect_committed, as_json):
    """Check a folder's SHA256SUMS (ours or anyone's), the Merkle root and the commitment;
    exit 1 naming each bad file. A folder rewritten and wholly re-sealed verifies against itself: give
    --expect-root (the published root), --expect-committed (the published day) and --ledger to check it against
    what cannot be re-sealed; with --ledger or --expect-committed a missing COMMITMENT.json fails."""
    from backtest.studies.prospective.verify import verify_folder

    result = verify_folder(folder, expect_root, ledger, expect_committed)
    if as_json:
        echo_json(result.as_dict())
    elif result.ok:
        what = f"commitment {result.commitment.commitment_id}" if result.commitment else "SHA256SUMS"
        click.echo(f"OK {folder}: {result.n_files} files match {what}; merkle root {result.root}")
    if not result.ok:
        failures = result.failures()
        raise CheckFailed(f"{folder} does not verify ({len(failures)} problem(s)): {failures[0]}", failures)


@prospective.command("grade")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--as-of", "as_of", type=DATE, required=True, help="Grade with the future corpus up to this day.")
@click.option(
    "--provisional", is_flag=True, help="Allow grading before the first scheduled date; every output says provisional."
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    help="Where the committed source input lives now (its content is sealed at build).",
)
@json_option
@click.pass_context
def grade_cmd(ctx, folder, as_of, provisional, inputs, as_json):
    """Build the declared future corpus up to --as-of and score every committed submission
    with the committed settings."""
    from backtest.studies.prospective.grade import grade

    ws = workspace(ctx)
    summary = grade(folder, as_of, ws, provisional=provisional, inputs=list(inputs) or None)
    if as_json:
        echo_json(summary)
        return
    click.echo(summary["status"])
    for row in summary["systems"]:
        click.echo(
            f"  {row['system']}: n={row['n']} coverage={row['coverage']['rate']:.3f} "
            f"answered={row['answered']['rate']:.3f} "
            f"refuted={row['refuted']['rate']:.3f}  run {row['graded_run']}"
        )
    click.echo(f"graded runs: {summary['folder']}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [prospective]
