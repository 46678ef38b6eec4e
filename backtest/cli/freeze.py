"""``backtest freeze SUBMISSION_DIR --instance ID`` and ``backtest verify PATH``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, workspace
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.workspace import Workspace
from backtest.submit.gates import CLARITY_MODES, DEDUP_MODES, FreezeSettings
from backtest.text.clarity import CLARITY_THRESHOLD


@click.command("freeze")
@click.argument("submission_dir", type=click.Path(path_type=Path))
@click.option("--instance", "instance_id", required=True, help="Instance id (manifests/instances/<ID>.json).")
@click.option(
    "--dedup",
    type=click.Choice(DEDUP_MODES),
    default="report",
    show_default=True,
    help="Near-duplicate pairs: record them, refuse the set, or drop the later question of each pair.",
)
@click.option("--tfidf-threshold", type=click.FloatRange(0, 1), default=0.25, show_default=True)
@click.option("--embedding-threshold", type=click.FloatRange(0, 1), default=0.77, show_default=True)
@click.option("--embedding-model", default="all-MiniLM-L6-v2", show_default=True)
@click.option(
    "--clarity",
    type=click.Choice(CLARITY_MODES),
    default="report",
    show_default=True,
    help="Questions flagged by the clarity gate (a clarity score below --clarity-threshold; double, empty, "
    "over-long or title-restating questions): record them (warned) or refuse the set.",
)
@click.option(
    "--clarity-threshold",
    type=click.FloatRange(0, 1),
    default=CLARITY_THRESHOLD,
    show_default=True,
    help="Flag a question whose clarity score (backtest clarity score) is below this: 0.5 flags one major problem "
    "(0.4) or three minor ones, never one or two minor ones.",
)
@click.option("--max-question-chars", type=click.IntRange(1), default=600, show_default=True)
@click.option("--strict", is_flag=True, help="A gate that could not run (skipped) refuses the freeze too.")
@click.option(
    "--new-version",
    is_flag=True,
    help="Seal a new version even when an identical frozen set exists (default: report and reuse that set).",
)
@json_option
@click.pass_context
def freeze(
    ctx,
    submission_dir,
    instance_id,
    dedup,
    tfidf_threshold,
    embedding_threshold,
    embedding_model,
    clarity,
    clarity_threshold,
    max_question_chars,
    strict,
    new_version,
    as_json,
):
    """Run every gate on SUBMISSION_DIR and seal it into frozen/<instance>/<system>/v<N>/.

    When an intact frozen set of the same system and instance holds byte-identical
    questions.jsonl and metadata.json, frozen under the same gate settings, it is
    reported and reused: nothing is written (no new version, no ledger line) unless
    --new-version. Exit 1 names the question and id of each failed gate; exit 2 means
    malformed input. In both cases nothing is written under frozen/.
    """
    from backtest.submit.freeze import FROZEN_FILE, freeze_once, freeze_submission

    ws = workspace(ctx)
    settings = FreezeSettings(
        dedup=dedup,
        tfidf_threshold=tfidf_threshold,
        embedding_threshold=embedding_threshold,
        embedding_model=embedding_model,
        clarity=clarity,
        clarity_threshold=clarity_threshold,
        max_question_chars=max_question_chars,
        strict=strict,
    )
    if new_version:
        path, reused = freeze_submission(submission_dir, instance_id, ws, settings=settings), False
    else:
        path, reused = freeze_once(submission_dir, instance_id, ws, settings=settings)
    frozen = json.loads((path / FROZEN_FILE).read_text(encoding="utf-8"))
    if as_json:
        echo_json({"path": str(path), "reused": reused, **frozen})
        return
    if reused:
        click.echo(
            f"reused frozen {frozen['system']} v{frozen['version']} for {frozen['instance_id']}: identical "
            f"questions.jsonl and metadata.json, same gate settings (frozen {frozen['frozen_at']}); nothing written "
            "(--new-version seals a new version)"
        )
    else:
        click.echo(
            f"frozen {frozen['system']} v{frozen['version']} for {frozen['instance_id']}: "
            f"{frozen['n_questions']} questions, seal {frozen['seal']}"
        )
    click.echo(f"folder: {path}")
    for gate in frozen["gates"]:
        click.echo(f"  {gate['status']:7} {gate['name']}: {gate['reason']}")
    click.echo(
        "  contamination probe: runs after freezing, never here (the future corpus stays sealed until scoring): "
        f"`backtest score` records it, or `backtest contamination {path}`"
    )


def _verify_target(path: Path, ws: Workspace) -> tuple[str, list[str]]:
    """Decide what PATH is and verify it; return (what was verified, problems)."""
    from backtest.core.sums import SUMS_FILE, verify_sums
    from backtest.submit.freeze import FROZEN_FILE, verify_frozen, verify_ledger_and_sets

    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    resolved = path.resolve()
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
    raise BadInput(f"{path}: not a frozen set, a ledger, a corpus or instance manifest, or a folder with SHA256SUMS")


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
    help="With the ledger: fail unless the chain still holds the published head HASH (a rewritten chain would not).",
)
@json_option
@click.pass_context
def verify(ctx, path, show_head, expect_head, as_json):
    """Verify PATH: a frozen set, the ledger (frozen/ or frozen/LEDGER.jsonl), a corpus or instance
    manifest, or any folder with a SHA256SUMS file, against the workspace given (--root).
    Exit 1 with one line per failure."""
    from backtest.submit.ledger import read_ledger

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
COMMANDS = [freeze, verify]
