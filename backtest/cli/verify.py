"""``backtest verify PATH``: a frozen set, run, corpus or instance checked against its seal."""

from __future__ import annotations

import re
from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, workspace
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.workspace import Workspace


def _verify_target(path: Path, ws: Workspace) -> tuple[str, list[str]]:
    """Decide what PATH is and verify it; return (what was verified, problems)."""
    from backtest.core.sums import SUMS_FILE, verify_sums
    from backtest.scoring.runseal import is_run_folder, run_problems
    from backtest.submit.freeze import FROZEN_FILE, verify_frozen, verify_ledger_and_sets

    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    resolved = path.resolve()
    if resolved.is_dir() and is_run_folder(resolved):
        return f"run {path}", run_problems(resolved)
    if resolved.is_dir() and (resolved / FROZEN_FILE).is_file():
        # against the workspace given (--root, else the current folder), never one derived from the path:
        # a forged set elsewhere with a ledger of its own must not verify
        return f"frozen set {path}", verify_frozen(path, ws)
    if resolved.name == "LEDGER.jsonl" or (resolved.is_dir() and (resolved / "LEDGER.jsonl").is_file()):
        frozen_dir = resolved.parent if resolved.is_file() else resolved
        if frozen_dir != ws.frozen.resolve():
            raise BadInput(f"{path}: not the ledger of the workspace {ws.root} (give --root for another workspace)")
        return f"ledger {frozen_dir / 'LEDGER.jsonl'}", verify_ledger_and_sets(ws)
    if resolved.is_dir() and (resolved / SUMS_FILE).is_file():
        return f"{path}/{SUMS_FILE}", verify_sums(resolved).problems
    if resolved.is_file() and resolved.name == SUMS_FILE:
        return f"{path}", verify_sums(resolved.parent).problems
    if resolved.is_file() and resolved.suffix == ".json":
        return _verify_json(resolved, ws)
    raise BadInput(
        f"{path}: not a frozen set, a ledger, a run folder, a corpus or instance manifest, or a folder with SHA256SUMS"
    )


def _verify_json(path: Path, ws: Workspace) -> tuple[str, list[str]]:
    from backtest.core.fileio import read_json
    from backtest.corpus.build import load_manifest, verify_corpus
    from backtest.corpus.instance import load_instance, verify_instance

    data = read_json(path)
    if isinstance(data, dict) and "corpus_id" in data and "role" in data:
        manifest = load_manifest(path, ws)
        return f"corpus {manifest.corpus_id}", verify_corpus(manifest, ws).problems
    if isinstance(data, dict) and "instance_id" in data and "cutoff" in data:
        try:
            inst = load_instance(str(path), ws)
        except CheckFailed as exc:
            return f"instance {path}", [exc.message]
        return f"instance {inst.instance_id}", verify_instance(inst, ws)
    raise BadInput(f"{path}: a JSON file that is neither a corpus manifest nor an instance")


@click.command("verify")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--head",
    "show_head",
    is_flag=True,
    help="With the ledger: print its chain head (seq and hash), the line to publish outside the repository.",
)
@click.option(
    "--expect-head",
    default=None,
    metavar="HASH",
    help="With the ledger: fail unless the chain still holds the published head HASH, a sha256 (64 hex digits; a "
    "rewritten chain would not hold it).",
)
@json_option
@click.pass_context
def verify(ctx, path, show_head, expect_head, as_json):
    """Verify PATH: a frozen set, the ledger (frozen/ or frozen/LEDGER.jsonl), a finished run folder (its
    SEAL.json, and every judgment against the constraint rules and the documents its retrieval holds), a corpus
    or instance manifest, or any folder with a SHA256SUMS file, against the workspace given (--root).
    Exit 1 with one line per failure."""
    from backtest.submit.ledger import read_ledger

    if expect_head is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", expect_head.strip()):
        raise BadInput(f"--expect-head {expect_head!r}: not a sha256 (64 hex digits, as `verify frozen --head` prints)")
    ws = workspace(ctx)
    what, problems = _verify_target(path, ws)
    head = None
    if (show_head or expect_head) and not what.startswith("ledger"):
        raise BadInput("--head and --expect-head go with the ledger: backtest verify frozen --head")
    if show_head or expect_head:
        entries, _ = read_ledger(ws.ledger)
        head = {"seq": entries[-1].seq, "hash": entries[-1].hash} if entries else {"seq": -1, "hash": "0" * 64}
        if expect_head and not any(e.hash == expect_head.strip().lower() for e in entries):
            problems.append(f"{ws.ledger}: the published head {expect_head} is not in the chain (history rewritten?)")
    if as_json:
        echo_json(
            {
                "path": str(path),
                "what": what,
                "ok": not problems,
                "problems": problems,
                **({"head": head} if head else {}),
            }
        )
    elif not problems:
        click.echo(f"OK {what}")
        if head and show_head:
            click.echo(f"ledger head: seq {head['seq']} sha256 {head['hash']}")
    if problems:
        raise CheckFailed(f"{what}: {len(problems)} problem(s); {problems[0]}", problems)


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [verify]
