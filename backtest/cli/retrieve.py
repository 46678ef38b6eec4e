"""``backtest retrieve FROZEN_DIR [--out DIR]``: top-k from the future corpus for a frozen set."""

from __future__ import annotations

from pathlib import Path

import click

from backtest.cli.common import (
    OutPath,
    device_option,
    echo_json,
    executor_options,
    executor_spec,
    json_option,
    progress_enabled,
    workspace,
)


@click.command("retrieve")
@click.argument("frozen_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=OutPath(file_okay=False, path_type=Path),
    help="Folder for retrieval.jsonl (default: results/<instance>/<system>/retrieval-v<N>-<method>-k<k>/).",
)
@click.option(
    "--method", type=click.Choice(["bm25", "dense", "hybrid"]), default=None, help="Override the instance's retriever."
)
@click.option("--k", type=click.IntRange(1, 100), default=None, help="Override the instance's k.")
@click.option(
    "--index",
    "dense_index",
    type=click.Choice(["auto", "flat", "hnsw", "ivf"]),
    default="auto",
    show_default=True,
    help="faiss index for dense/hybrid: exact (flat), approximate (hnsw, ivf), or auto: exact up to "
    "1,000,000 documents, hnsw above.",
)
@device_option
@executor_options
@json_option
@click.pass_context
def retrieve(ctx, frozen_dir, out_dir, method, k, dense_index, executor_name, ray_address, ray_cpus, as_json):
    """Retrieve the top-k future documents for every question of FROZEN_DIR.

    Refuses (exit 1) a set that is not frozen or not intact, and a future corpus
    whose seal or records do not verify. Writes retrieval.jsonl (one Retrieval per
    question, in question order, canonical JSON: byte-identical across runs).
    """
    from backtest.core.executor import use
    from backtest.retrieve.pipeline import retrieve_frozen, write_retrievals
    from backtest.submit.freeze import load_frozen

    ws = workspace(ctx)
    settings = {"index": dense_index} if dense_index != "auto" else {}
    with use(executor_spec(executor_name, ray_address, ray_cpus)):
        retrievals = retrieve_frozen(frozen_dir, ws, method=method, k=k, progress=progress_enabled(), **settings)
    if out_dir is None:
        frozen = load_frozen(frozen_dir).frozen
        used = retrievals[0].retriever["method"] if retrievals else (method or "default")
        used_k = retrievals[0].k if retrievals else k
        out_dir = ws.results / frozen.instance_id / frozen.system / f"retrieval-v{frozen.version}-{used}-k{used_k}"
    path = write_retrievals(out_dir, retrievals)
    if as_json:
        echo_json(
            {
                "path": str(path),
                "n_questions": len(retrievals),
                "retriever": retrievals[0].retriever if retrievals else None,
            }
        )
        return
    n_docs = sum(len(r.documents) for r in retrievals)
    click.echo(f"retrieved {n_docs} documents for {len(retrievals)} questions -> {path}")


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [retrieve]
