"""Judge-validation controls on real astro-2025 (astro-ph.EP) runs: the seeded derangement,
the mismatch control's folder and statistics, the rerun control's agreement, the prompt
control's refusal of a non-LLM judge, the CLI, and (slow) the offline judge's separation
of true from mismatched evidence.

The fast tests label with :class:`SharedTermsJudge`, a transparent stand-in registered as
the judge kind ``shared-terms-test`` (no model: it cites shown documents that share at
least two specific terms with the question), so they test the controls' mechanics in
seconds; the slow test uses the real offline judge.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from backtest.core.errors import BadInput
from backtest.core.fileio import write_json, write_jsonl
from backtest.core.records import EvidenceItem, JudgeInfo, Judgment
from backtest.core.workspace import Workspace
from backtest.corpus.instance import load_instance
from backtest.judge import Judge, get_judge, register_judge
from backtest.retrieve import retrieve_frozen
from backtest.submit.freeze import freeze_submission, load_frozen
from backtest.text.terms import specific_terms
from backtest.validity.controls import agreement_of, control_mismatch, control_rerun, derangement, engagement
from backtest.validity.leakage import check_run

from .submission_helpers import metadata, past_records, question_rows, snapshot, write_submission

INSTANCE = "astro-2025-ep"


class SharedTermsJudge(Judge):
    """Cites the shown documents sharing >= 2 specific terms with the question (partially_addressed),
    else not_addressed."""

    name = "shared-terms-test"

    def info(self) -> JudgeInfo:
        return JudgeInfo(name=self.name, protocol="shared specific terms >= 2")

    def settings(self) -> dict[str, Any]:
        return {"kind": self.name}

    def judge(self, question, documents) -> Judgment:
        terms = specific_terms(question.question)
        cited = [d for d in documents if len(terms & specific_terms(f"{d.title} {d.abstract}")) >= 2][:3]
        return Judgment(
            question_id=question.question_id,
            outcome="partially_addressed" if cited else "not_addressed",
            premise_status="still_plausible",
            evidence=[EvidenceItem(id=d.id) for d in cited],
            supporting_ids=[d.id for d in cited],
            judge=self.info(),
        )


register_judge(SharedTermsJudge.name)(lambda config, path, ws: SharedTermsJudge())


def build_run(
    ws: Workspace, sub_dir: Path, instance: str, n: int, judge_spec: str, seed: int = 5, system: str = "hand_ctl"
) -> Path:
    """Freeze ``n`` hand-made questions from real past records, retrieve with BM25, judge, write RUN.json."""
    rows = question_rows(past_records(ws, instance, n=n, seed=seed), system=system)
    write_submission(sub_dir, rows, metadata(len(rows), system=system))
    frozen = freeze_submission(sub_dir, instance, ws)
    run_dir = ws.results / instance / system / f"bm25-{judge_spec}"
    retrievals = retrieve_frozen(frozen, ws, out_path=run_dir, method="bm25")
    bundle = load_frozen(frozen)
    judge = get_judge(judge_spec, ws)
    judgments = [judge.judge(q, r.documents) for q, r in zip(bundle.questions, retrievals)]
    write_jsonl(run_dir / "judgments.jsonl", [j.model_dump(mode="json") for j in judgments])
    write_json(
        run_dir / "RUN.json",
        {
            "schema_version": "1",
            "run_id": run_dir.name,
            "instance_id": instance,
            "instance_seal": load_instance(instance, ws).seal,
            "system": system,
            "frozen_path": frozen.relative_to(ws.root).as_posix(),
            "frozen_seal": bundle.frozen.seal,
            "retriever": retrievals[0].retriever,
            "judge": judge.info().model_dump(mode="json"),
            "judge_settings": judge.settings(),
            "valid": True,
            "leakage": [],
        },
    )
    return run_dir


def private_ws(source: Workspace, tmp_path_factory, name: str) -> Workspace:
    root = tmp_path_factory.mktemp(name) / "ws"
    shutil.copytree(source.root, root)
    return Workspace(root)


@pytest.fixture(scope="module")
def term_run(astro_ep_ws, tmp_path_factory) -> tuple[Workspace, Path]:
    """A private astro-2025-ep workspace with one 10-question run labelled by SharedTermsJudge."""
    ws = private_ws(astro_ep_ws, tmp_path_factory, "ctl")
    return ws, build_run(ws, ws.root.parent / "submission", INSTANCE, n=10, judge_spec=SharedTermsJudge.name)


# --------------------------------------------------------------------------- pieces


def test_derangement_is_seeded_and_has_no_fixed_point():
    for n in (2, 3, 7, 60):
        for seed in range(5):
            perm = derangement(n, seed)
            assert sorted(perm) == list(range(n)) and all(p != i for i, p in enumerate(perm))
            assert derangement(n, seed) == perm
    assert derangement(60, 0) != derangement(60, 1)
    assert derangement(2, 0) == [1, 0]
    with pytest.raises(BadInput):
        derangement(1, 0)


def _judgment(qid: str, outcome: str, premise: str = "still_plausible") -> Judgment:
    return Judgment(
        question_id=qid,
        outcome=outcome,
        premise_status=premise,
        judge=JudgeInfo(name="t"),
        evidence=[{"id": "x"}] if outcome != "not_addressed" else [],
    )


def test_engagement_and_agreement_arithmetic():
    a = [
        _judgment("q1", "answered"),
        _judgment("q2", "not_addressed"),
        _judgment("q3", "posed_but_open", "refuted"),
        _judgment("q4", "partially_addressed"),
    ]
    b = [
        _judgment("q1", "answered"),
        _judgment("q2", "answered"),
        _judgment("q3", "posed_but_open"),
        _judgment("q4", "not_addressed"),
    ]
    rate = engagement(a)
    assert (rate.k, rate.n, rate.rate) == (3, 4, 0.75)
    agree = agreement_of(a, b)
    assert agree["outcome"]["raw_agreement"] == 0.5
    assert [c["question_id"] for c in agree["outcome"]["changed"]] == ["q2", "q4"]
    assert agree["premise_status"]["raw_agreement"] == 0.75
    assert agree["outcome"]["cohen_kappa"] == pytest.approx(1 / 3)  # by hand: p_o = 0.5, p_e = 4/16, (0.5-0.25)/0.75
    with pytest.raises(BadInput):
        agreement_of(a, b[::-1])


# --------------------------------------------------------------------------- controls on a real run


def test_mismatch_control_writes_its_own_run(term_run, cli):
    ws, run_dir = term_run
    before = snapshot(run_dir)
    result = control_mismatch(run_dir, ws, seed=3)
    out = Path(result["out"])
    assert out == run_dir.parent / f"{run_dir.name}-control-mismatch-s3"
    assert snapshot(run_dir) == before  # the original run is untouched
    pairing = result["pairing"]
    assert len(pairing) == 10 and all(p["question_id"] != p["shown_from"] for p in pairing)
    assert sorted(p["shown_from"] for p in pairing) == sorted(p["question_id"] for p in pairing)
    assert result["true_judgments"] == "original run"  # same judge: its labels are reused
    originals = [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert result["true"]["k"] == sum(j["outcome"] != "not_addressed" for j in originals)
    # the control's retrieval.jsonl is exactly what the judge was shown: another question's documents
    shown = {
        json.loads(l)["question_id"]: json.loads(l) for l in (run_dir / "retrieval.jsonl").read_text().splitlines()
    }
    ctl = [json.loads(l) for l in (out / "retrieval.jsonl").read_text().splitlines()]
    for row, pair in zip(ctl, pairing):
        assert row["question_id"] == pair["question_id"] and row["shown_from"] == pair["shown_from"]
        assert row["documents"] == shown[pair["shown_from"]]["documents"]
    mis = [json.loads(l) for l in (out / "judgments.jsonl").read_text().splitlines()]
    assert result["mismatched"]["k"] == sum(j["outcome"] != "not_addressed" for j in mis)
    assert 0 <= result["fisher"]["p_value"] <= 1
    assert json.loads((out / "control.json").read_text())["pairing"] == pairing
    assert json.loads((out / "RUN.json").read_text())["control"]["kind"] == "mismatch"
    assert all(r.passed for r in check_run(out, ws))  # a control run obeys the isolation rules too
    # same seed again (CLI, the judge read from RUN.json): a new version folder with identical labels
    code, text, err = cli(["control", "mismatch", str(run_dir), "--seed", "3"], root=ws.root)
    assert code == 0, err
    assert "engagement, true pairings" in text and "generosity floor" in text and "-control-mismatch-s3-v2" in text
    assert (out.parent / f"{out.name}-v2" / "judgments.jsonl").read_bytes() == (out / "judgments.jsonl").read_bytes()
    code, text, err = cli(["control", "mismatch", str(run_dir), "--seed", "4", "--json"], root=ws.root)
    data = json.loads(text)
    assert code == 0 and data["seed"] == 4 and data["out"].endswith("-control-mismatch-s4")
    assert [p["shown_from"] for p in data["pairing"]] != [p["shown_from"] for p in pairing]


def test_rerun_control_agrees_fully_for_the_deterministic_judge(term_run, cli):
    ws, run_dir = term_run
    result = control_rerun(run_dir, ws)
    agree = result["agreement"]
    assert agree["n"] == 10
    for field in ("outcome", "premise_status"):
        assert agree[field]["raw_agreement"] == 1.0 and agree[field]["changed"] == []
        assert agree[field]["cohen_kappa"] in (1.0, None)  # None when a single label is used throughout
    assert result["cache"].startswith("none")
    out = Path(result["out"])
    assert out.name == f"{run_dir.name}-control-rerun"
    assert (out / "judgments.jsonl").read_bytes() == (run_dir / "judgments.jsonl").read_bytes()
    code, text, err = cli(["control", "rerun", str(run_dir)], root=ws.root)
    assert code == 0, err
    assert "outcome: raw agreement 100.0%" in text and "-control-rerun-v2" in text
    # a RUN.json naming another judge than the one that labelled the run: refused, not compared
    other = run_dir.parent / "relabelled"
    shutil.copytree(run_dir, other)
    meta = json.loads((other / "RUN.json").read_text())
    meta["judge"] = {"name": "offline", "spec": "offline"}
    write_json(other / "RUN.json", meta)
    code, _, err = cli(["control", "rerun", str(other)], root=ws.root)
    assert code == 2 and "not the one that labelled this run" in err


def test_prompt_control_needs_an_llm_judge(term_run, cli):
    ws, run_dir = term_run
    prompt = Path(__file__).resolve().parent.parent / "judges" / "prompts" / "outcome-premise-reworded-v2.md"
    code, _, err = cli(["control", "prompt", str(run_dir), "--prompt", str(prompt)], root=ws.root)
    assert code == 2 and "needs an llm judge" in err
    code, _, err = cli(["control", "mismatch", str(run_dir.parent / "nope")], root=ws.root)
    assert code == 2


def test_prompt_control_swaps_only_the_prompt_of_the_llm_judge(term_run, cli):
    # an llm judge whose endpoint is closed: every answer is a flagged judge_failed label, but
    # the plumbing is real (judges/NAME.toml found from RUN.json, prompt swapped, hashes recorded)
    ws, _ = term_run
    repo = Path(__file__).resolve().parent.parent
    ws.judges.mkdir(exist_ok=True)
    (ws.judges / "closed-llm.toml").write_text(
        'kind = "llm"\nname = "closed-llm"\nbase_url = "http://127.0.0.1:9"\nmodel = "none"\napi_key_env = ""\n'
        f'max_retries = 0\ntimeout_s = 5\nprompt = "{(repo / "judges/prompts/outcome-premise-v2.md").as_posix()}"\n'
    )
    run_dir = build_run(
        ws, ws.root.parent / "submission-llm", INSTANCE, n=3, judge_spec="closed-llm", system="hand_llmctl_x"
    )
    reworded = repo / "judges" / "prompts" / "outcome-premise-reworded-v2.md"
    code, text, err = cli(["control", "prompt", str(run_dir), "--prompt", str(reworded), "--json"], root=ws.root)
    assert code == 0, err
    result = json.loads(text)
    from backtest.core.seal import sha256_file

    assert result["prompt_sha256"] == sha256_file(reworded) != result["original_prompt_sha256"]
    out = Path(result["out"])
    assert out.name == f"{run_dir.name}-control-prompt-outcome-premise-reworded-v2"
    relabelled = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(relabelled) == 3 and {j["judge"]["prompt_sha256"] for j in relabelled} == {sha256_file(reworded)}
    assert {j["judge"]["name"] for j in relabelled} == {"closed-llm+outcome-premise-reworded-v2"}
    assert result["agreement"]["n"] == 3
    code, _, err = cli(
        ["control", "prompt", str(run_dir), "--prompt", str(repo / "judges/prompts/outcome-premise-v2.md")],
        root=ws.root,
    )
    assert code == 2 and "the prompt the run was judged with" in err


# --------------------------------------------------------------------------- the offline judge, for real


@pytest.mark.slow
def test_offline_judge_separates_true_from_mismatched_evidence(astro_ep_ws, tmp_path_factory):
    """random_claims questions (24) on astro-2025-ep, BM25, the offline-cues-v1 judge: engagement on the
    true pairings must exceed engagement on mismatched ones at p < 0.01 (Fisher, two-sided).

    (The fitted default judge engages far fewer questions, as careful readers do, so 24 questions
    cannot reach p < 0.01 for it; its control is run on the 125-question baseline runs.)"""
    from backtest.generators import run_generator

    ws = private_ws(astro_ep_ws, tmp_path_factory, "sep")
    summary = run_generator("random_claims", INSTANCE, ws, n=24, seed=0, out=ws.root.parent / "submission")
    frozen = freeze_submission(summary["out"], INSTANCE, ws)
    run_dir = ws.results / INSTANCE / "random_claims" / "bm25-offline"
    retrievals = retrieve_frozen(frozen, ws, out_path=run_dir, method="bm25")
    bundle = load_frozen(frozen)
    judge = get_judge("offline-cues-v1", ws)
    write_jsonl(
        run_dir / "judgments.jsonl",
        [judge.judge(q, r.documents).model_dump(mode="json") for q, r in zip(bundle.questions, retrievals)],
    )
    write_json(
        run_dir / "RUN.json",
        {
            "schema_version": "1",
            "run_id": run_dir.name,
            "instance_id": INSTANCE,
            "instance_seal": load_instance(INSTANCE, ws).seal,
            "system": "random_claims",
            "frozen_path": frozen.relative_to(ws.root).as_posix(),
            "frozen_seal": bundle.frozen.seal,
            "retriever": retrievals[0].retriever,
            "judge": judge.info().model_dump(mode="json"),
            "judge_settings": judge.settings(),
            "valid": True,
            "leakage": [],
        },
    )
    result = control_mismatch(run_dir, ws, seed=0)
    print(json.dumps({k: result[k] for k in ("true", "mismatched", "fisher")}))
    assert result["n"] == 24 and result["true_judgments"] == "original run"
    assert result["true"]["rate"] > result["mismatched"]["rate"]
    assert result["fisher"]["p_value"] < 0.01 and result["separated"] is True
