"""The report-or-refuse gates on real submissions: near-duplicates (report, fail, drop-later),
clarity flags, the falsifiable contract and the LLM declaration."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from backtest.core.records import LLMComponent
from backtest.submit.freeze import FROZEN_FILE, load_frozen
from backtest.submit.gates import id_scheme, llm_mentions, normalise_id, trained_after

from .submission_helpers import metadata, past_records, question_rows, snapshot, writable_ws, write_submission


@pytest.fixture(scope="module")
def ws(astro_ws, tmp_path_factory):
    return writable_ws(astro_ws, tmp_path_factory.mktemp("gates") / "ws")


@pytest.fixture(scope="module")
def records(ws):
    return past_records(ws, n=6, seed=11)


def gate(folder, name):
    return next(g for g in json.loads((folder / FROZEN_FILE).read_text())["gates"] if g["name"] == name)


def dup_submission(records, folder, system):
    rows = question_rows(records, system=system)
    paraphrase = dict(
        rows[0],
        question_id="q_007",
        rank=7,
        question=rows[0]["question"].replace("Does the main result", "Does the main result still"),
    )
    rows.append(paraphrase)
    return write_submission(folder, rows, metadata(len(rows), system=system))


@pytest.mark.parametrize("mode", ["report", "fail", "drop-later"])
def test_near_duplicates(ws, records, tmp_path, cli, mode):
    system = f"dup_{mode.replace('-', '_')}"
    sub = dup_submission(records, tmp_path / "sub", system)
    before = snapshot(ws.frozen)
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025", "--dedup", mode], root=ws.root)
    if mode == "fail":
        assert code == 1 and "q_007" in err.splitlines()[0] and "q_001" in err.splitlines()[0]
        assert snapshot(ws.frozen) == before
        return
    assert code == 0, err
    folder = ws.frozen / "astro-2025" / system / "v1"
    result = gate(folder, "near_duplicates")
    assert result["status"] == "warned"
    pair = result["details"][0]
    assert (pair["a"], pair["b"]) == ("q_001", "q_007") and pair["tfidf"] >= 0.25 and pair["embedding"] >= 0.77
    bundle = load_frozen(folder)
    if mode == "report":
        assert len(bundle.questions) == 7
        assert (folder / "questions.jsonl").read_bytes() == (sub / "questions.jsonl").read_bytes()
    else:
        assert [q.question_id for q in bundle.questions] == [f"q_{k:03d}" for k in range(1, 7)]
        assert bundle.frozen.n_questions == 6 and bundle.frozen.settings["dropped"] == ["q_007"]
        kept = (sub / "questions.jsonl").read_bytes().splitlines(keepends=True)[:6]
        assert (folder / "questions.jsonl").read_bytes() == b"".join(kept)


def test_thresholds_are_options(ws, records, tmp_path, cli):
    sub = dup_submission(records, tmp_path / "sub", "dup_strict_thresholds")
    code, _, err = cli(
        ["freeze", sub, "--instance", "astro-2025", "--dedup", "fail", "--embedding-threshold", "0.999"], root=ws.root
    )
    assert code == 0, err
    assert gate(ws.frozen / "astro-2025" / "dup_strict_thresholds" / "v1", "near_duplicates")["status"] == "passed"


def clarity_rows(records):
    rows = question_rows(records, system="clarity_sys")
    rows[1]["question"] = " ".join(records[1].title.split()) + "?"
    rows[2]["question"] = "Is the disk warped? And is it flaring?"
    rows[3]["question"] = "Why " + "is the signal so faint and " * 30 + "what does it mean?"
    return rows


def test_clarity_flags_are_reported_or_refused(ws, records, tmp_path, cli):
    rows = clarity_rows(records)
    sub = write_submission(tmp_path / "sub", rows, metadata(len(rows), system="clarity_sys"))
    before = snapshot(ws.frozen)
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025", "--clarity", "fail"], root=ws.root)
    assert code == 1 and "q_002" in err.splitlines()[0] and "restates the title" in err.splitlines()[0]
    assert "q_003" in err and "question marks" in err and "q_004" in err and "600-character limit" in err
    assert snapshot(ws.frozen) == before
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    result = gate(ws.frozen / "astro-2025" / "clarity_sys" / "v1", "clarity")
    assert result["status"] == "warned"
    assert [d["question_id"] for d in result["details"]] == ["q_002", "q_003", "q_004"]


def test_complete_contract_passes(ws, records, tmp_path, cli):
    rows = question_rows(records, system="contract_sys")
    for row in rows:
        row.update(
            literature_gap="No test of X yet.",
            hypothesis="X rises with Y.",
            minimal_test="Fit X against Y.",
            decisive_metric="slope of X on Y",
            supporting_result="slope > 0 at 3 sigma",
            falsifying_result="slope <= 0 at 3 sigma",
        )
    sub = write_submission(tmp_path / "sub", rows, metadata(len(rows), system="contract_sys"))
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    assert gate(ws.frozen / "astro-2025" / "contract_sys" / "v1", "falsifiable_contract")["status"] == "passed"


def test_declared_llm_components_pass(ws, records, tmp_path, cli):
    rows = question_rows(records, system="baseline_direct_llm_gpt-4.1_v1")
    meta = metadata(
        len(rows),
        system="llm_sys",
        description="Prompted an LLM with past abstracts.",
        llm_components=[{"model": "gpt-4.1", "role": "generation", "training_cutoff": "2024-06"}],
    )
    sub = write_submission(tmp_path / "sub", rows, meta)
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    assert gate(ws.frozen / "astro-2025" / "llm_sys" / "v1", "llm_components")["status"] == "passed"


def test_llm_trained_after_the_cutoff_is_warned(ws, records, tmp_path, cli):
    """A model whose stated training data reach past the instance's cutoff may have read the future: the set
    still freezes (the operator declared it), but the gate says so in FROZEN.json."""
    rows = question_rows(records, system="baseline_direct_llm_gpt-4.1_v1")
    components = [{"model": "gpt-4.1", "role": "generation", "training_cutoff": "2026-01"}]
    meta = metadata(len(rows), system="late_llm", description="Prompted an LLM.", llm_components=components)
    sub = write_submission(tmp_path / "sub", rows, meta)
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 0, err
    result = gate(ws.frozen / "astro-2025" / "late_llm" / "v1", "llm_components")
    assert result["status"] == "warned"
    assert "gpt-4.1 (training cutoff 2026-01)" in result["reason"]


def test_trained_after_reads_the_stated_precision():
    def comp(cutoff):
        return [LLMComponent(model="m", role="generation", training_cutoff=cutoff)]

    cutoff = dt.date(2016, 12, 31)
    assert trained_after(comp("2016-12"), cutoff) == [] and trained_after(comp("2016"), cutoff) == []
    assert trained_after(comp("2017-01-01"), cutoff) == ["m (training cutoff 2017-01-01)"]
    assert trained_after(comp("2024-08"), cutoff) == ["m (training cutoff 2024-08)"]
    assert trained_after(comp("not stated by the operator"), cutoff) == []
    assert trained_after({"free": "form"}, cutoff) == []


def test_llm_mentions_and_id_helpers():
    assert llm_mentions(["baseline_direct_llm_gpt-4.1_v1"]) == ["gpt", "llm"]
    assert llm_mentions(["Uses a large language model to draft"]) == ["large language model"]
    assert llm_mentions(["template generator, no LLM used", "without any language models"]) == []
    assert llm_mentions(["llama-3 and Claude"]) == ["claude", "llama"]
    assert llm_mentions(["evidence_graph_v1", "skillman et al."]) == []
    assert normalise_id("arXiv:2510.01234v3") == "2510.01234"
    assert normalise_id("astro-ph/0601001v1") == "astro-ph/0601001"
    assert id_scheme("2510.01234") == "arxiv" and id_scheme("2015A&A...576A.134M") == "ads-bibcode"
    assert id_scheme("W2741809807") == "openalex" and id_scheme("10.1093/mnras/stab123") == "doi"
    assert id_scheme("not an id") is None
