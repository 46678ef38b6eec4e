"""``score`` runs the leakage checks and marks a leaking run invalid in metrics.json, RUN.json and
the report; ``compare`` then refuses it unless --allow-invalid.

The leak planted here is a real path: ``score`` reuses a complete sibling run's
``retrieval.jsonl``; a tampered sibling (one document swapped for a past-corpus paper)
flows into the new run, and check 3 (``retrieved_in_future``) must catch it.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from backtest.analysis.compare import compare_runs
from backtest.core.errors import CheckFailed
from backtest.core.records import EvidenceItem, JudgeInfo, Judgment, RetrievalSettings
from backtest.core.workspace import Workspace
from backtest.corpus.instance import create_instance, load_instance
from backtest.judge import Judge
from backtest.scoring.score import score_frozen
from backtest.submit.freeze import freeze_submission

from .submission_helpers import metadata, past_records, question_rows, write_submission

BASE = "astro-2025-ep"
INSTANCE = "astro-2025-ep-bm25"  # the same sealed corpora, scored with BM25 (no dense index of the future side)


class TopDocJudge(Judge):
    """A transparent stand-in judge (no model): cites the top document shown as partially_addressed."""

    name = "topdoc"

    def info(self) -> JudgeInfo:
        return JudgeInfo(name=self.name, protocol="cite-top-1")

    def settings(self) -> dict[str, Any]:
        return {"kind": "topdoc"}

    def judge(self, question, documents) -> Judgment:
        top = documents[:1]
        return Judgment(
            question_id=question.question_id,
            outcome="partially_addressed" if top else "not_addressed",
            premise_status="still_plausible",
            evidence=[EvidenceItem(id=d.id) for d in top],
            supporting_ids=[d.id for d in top],
            judge=self.info(),
        )


@pytest.fixture
def frozen_ws(astro_ep_ws, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(astro_ep_ws.root, root)
    ws = Workspace(root)
    base = load_instance(BASE, ws)
    create_instance(
        INSTANCE,
        base.cutoff,
        base.past.corpus_id,
        base.future.corpus_id,
        ws,
        retrieval=RetrievalSettings(method="bm25"),
        domain=base.domain,
    )
    rows = question_rows(past_records(ws, INSTANCE, n=5, seed=11), system="hand_score")
    write_submission(tmp_path / "sub", rows, metadata(len(rows), system="hand_score"))
    return ws, freeze_submission(tmp_path / "sub", INSTANCE, ws)


def test_score_marks_a_leaking_run_invalid(frozen_ws):
    ws, frozen = frozen_ws
    clean = score_frozen(frozen, ws, judge=TopDocJudge(), run_id="clean")
    assert clean.valid is True
    for name in ("metrics.json", "RUN.json"):
        doc = json.loads((clean.run_dir / name).read_text())
        assert doc["valid"] is True and [c["status"] for c in doc["leakage"]] == ["passed"] * 8

    # plant: the clean run's retrieval now shows a past-corpus paper (last rank, not cited)
    past = past_records(ws, INSTANCE, n=1, seed=12)[0]
    path = clean.run_dir / "retrieval.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[2]["documents"][-1].update(id=past.id, published=past.published.isoformat())
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    leaky = score_frozen(frozen, ws, judge=TopDocJudge(), run_id="leaky")  # reuses the sibling's retrieval
    assert leaky.valid is False
    for name in ("metrics.json", "RUN.json"):
        doc = json.loads((leaky.run_dir / name).read_text())
        assert doc["valid"] is False
        failed = {c["name"]: c for c in doc["leakage"] if c["status"] == "failed"}
        assert set(failed) == {"retrieved_in_future"}
        assert failed["retrieved_in_future"]["offenders"] == [
            f"{rows[2]['question_id']}: {past.id} not in future corpus {BASE}-future"
        ]
    report = (leaky.run_dir / "report.md").read_text()
    assert "valid (leakage checks): False" in report and "retrieved_in_future: failed" in report

    with pytest.raises(CheckFailed, match="refusing invalid run"):
        compare_runs([leaky.run_dir])
    assert compare_runs([leaky.run_dir], allow_invalid=True).any_invalid is True
