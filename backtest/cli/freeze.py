"""``backtest freeze SUBMISSION_DIR --instance ID``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from backtest.cli.common import echo_json, json_option, workspace
from backtest.submit.loading import CLARITY_MODES, DEDUP_MODES, FreezeSettings
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


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [freeze]
