"""``backtest corpus build | verify | export | fetch``."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
from tqdm import tqdm

from backtest.cli.common import DATE, OutPath, echo_json, json_option, progress_enabled, workspace
from backtest.core.errors import BadInput
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus, load_manifest, rebuild_and_compare, verify_corpus


@click.group()
def corpus() -> None:
    """Build, verify and export sealed corpora."""


@corpus.command("build")
@click.option("--source", "source", required=True, help="Source adapter: arxiv-archive, arxiv-daily, arxiv-oai, jsonl.")
@click.option(
    "--input",
    "inputs",
    required=True,
    multiple=True,
    type=click.Path(path_type=Path),
    help="Input file or folder (repeatable).",
)
@click.option("--id", "corpus_id", required=True, help="Corpus id: names corpora/<id>/ and manifests/<id>.json.")
@click.option("--role", type=click.Choice(["past", "future"]), required=True)
@click.option("--start", type=DATE, help="First day of the window (inclusive).")
@click.option("--end", type=DATE, help="Last day of the window (inclusive).")
@click.option("--categories", help="Keep records in any of these comma-separated arXiv categories.")
@click.option("--query", help="Keep records whose title or abstract contains any '|'-separated phrase.")
@click.option(
    "--reproduce",
    is_flag=True,
    help="The committed manifests/<ID>.json must come out byte for byte (exit 1 and install nothing if not).",
)
@json_option
@click.pass_context
def build(ctx, source, inputs, corpus_id, role, start, end, categories, query, reproduce, as_json):
    """Build corpora/<ID>/ from a source and seal manifests/<ID>.json."""
    ws = workspace(ctx)
    opts = BuildOptions(
        source=source,
        inputs=list(inputs),
        corpus_id=corpus_id,
        role=role,
        start=start,
        end=end,
        categories=[c for c in (categories or "").split(",") if c.strip()],
        query=query,
    )
    with tqdm(desc=f"building {corpus_id}", unit=" rec", disable=not progress_enabled()) as bar:
        manifest = build_corpus(opts, ws, progress=bar.update, reproduce=reproduce)
    if as_json:
        echo_json(manifest.model_dump(mode="json"))
    else:
        if reproduce:
            click.echo(f"reproduced {ws.manifest_path(corpus_id)} byte for byte")
        click.echo(
            f"built {manifest.corpus_id}: {manifest.n_records} records, "
            f"window {manifest.window.start}..{manifest.window.end}, seal {manifest.seal}"
        )
        click.echo(f"manifest: {ws.manifest_path(corpus_id)}")


@corpus.command("verify")
@click.argument("manifest")
@click.option("--rebuild", is_flag=True, help="Also rebuild from the recorded source and compare record by record.")
@json_option
@click.pass_context
def verify(ctx, manifest, rebuild, as_json):
    """Recompute every hash of a corpus; name each drifted, missing or extra id (exit 1)."""
    ws = workspace(ctx)
    loaded = load_manifest(manifest, ws)
    report = verify_corpus(loaded, ws)
    if report.ok and rebuild:
        with tempfile.TemporaryDirectory() as tmp:
            report = rebuild_and_compare(loaded, ws, Workspace(Path(tmp)))
    if as_json:
        echo_json(
            {
                "corpus_id": report.corpus_id,
                "ok": report.ok,
                "n_records": report.n_records,
                "problems": report.problems,
                "drifted": report.drifted,
                "missing": report.missing,
                "extra": report.extra,
            }
        )
    elif report.ok:
        click.echo(f"OK {loaded.corpus_id}: {report.n_records} records, seal {loaded.seal}")
    report.raise_if_failed()


@corpus.command("export")
@click.argument("instance_id")
@click.option(
    "--role",
    type=click.Choice(["past"]),
    default="past",
    show_default=True,
    help="Only the past corpus can be exported: generators never see the future.",
)
@click.option("--out", type=OutPath(path_type=Path), help="Output JSONL file (default: stdout).")
@click.pass_context
def export(ctx, instance_id, role, out):
    """Write the past corpus of an instance as JSONL, for generators outside this tool."""
    from backtest.core.fileio import atomic_writer
    from backtest.corpus.instance import load_instance, open_past_corpus

    ws = workspace(ctx)
    past = open_past_corpus(load_instance(instance_id, ws), ws, verify=True)
    if out is None:
        with open(past.records_path, encoding="utf-8") as handle:
            for line in handle:
                click.echo(line, nl=False)
        return
    with atomic_writer(out, "wb") as dst, open(past.records_path, "rb") as src:
        while block := src.read(1 << 20):
            dst.write(block)
    click.echo(f"wrote {len(past)} past records of {instance_id} to {out}", err=True)


@corpus.command("fetch")
@click.argument("service", type=click.Choice(["arxiv", "ads", "openalex"]))
@click.option("--query", required=True, help="The service's search query.")
@click.option("--start", type=DATE, required=True)
@click.option("--end", type=DATE, required=True)
@click.option("--out", type=OutPath(path_type=Path), required=True, help="JSONL file of CorpusRecords.")
@click.option("--max-records", type=int, default=10000, show_default=True)
@click.pass_context
def fetch(ctx, service, query, start, end, out, max_records):
    """Download records from arXiv, ADS (token in ADS_API_TOKEN) or OpenAlex into JSONL.

    Build a corpus from the result with `backtest corpus build --source jsonl`.
    """
    from backtest.corpus.fetch import fetch_to_jsonl

    if start > end:
        raise BadInput(f"empty window: {start} is after {end}")
    n = fetch_to_jsonl(service, query, start, end, out, max_records=max_records)
    click.echo(f"fetched {n} records from {service} into {out}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [corpus]
