"""direct_llm and the evidence graph's LLM verbalizer, end to end against the real local llama.cpp
server (Gemma 3 270M). A 270M model's questions are not the point here; the plumbing is: prompts
go out, schema-constrained answers come back, evidence is attached from the past corpus, the
model is declared in llm_components, and the submission passes every freeze gate."""

from __future__ import annotations

import json

import pytest

from backtest.corpus.instance import load_instance, open_past_corpus
from backtest.submit.freeze import check_gates
from tests.conftest import run_cli
from tests.llm_server import LLM_MODEL


def _run(ws, name, out, base_url, *extra, instance="astro-2025-ep"):
    code = run_cli(
        [
            "generate",
            name,
            "--instance",
            instance,
            "--out",
            str(out),
            "--llm-base-url",
            base_url,
            "--llm-model",
            LLM_MODEL,
            "--llm-training-cutoff",
            "2024-08",
            *extra,
        ],
        root=ws.root,
    )[0]
    assert code == 0
    questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    metadata = json.loads((out / "metadata.json").read_text())
    _, results = check_gates(out, instance, ws)
    failed = [(r.name, r.reason) for r in results if r.status == "failed"]
    assert not failed, failed
    past = open_past_corpus(load_instance(instance, ws), ws)
    for q in questions:
        assert q["question"].endswith("?") and q["question"].count("?") == 1
        assert all(i in past.dates for i in q["source_evidence_ids"])
    return questions, metadata


@pytest.mark.slow
@pytest.mark.llm
def test_direct_llm_end_to_end_against_local_server(astro_ep_ws, llm_server, tmp_path):
    questions, metadata = _run(astro_ep_ws, "direct_llm", tmp_path / "direct", llm_server, "--n", "5")
    assert 1 <= len(questions) <= 5
    assert metadata["llm_components"][0]["model"] == LLM_MODEL
    assert metadata["llm_components"][0]["training_cutoff"] == "2024-08"
    assert all(len(q["source_evidence_ids"]) == 3 and q["generation_system"] == "direct_llm" for q in questions)
    # a rerun is served from the answer cache and is byte-identical, metadata too (a frozen set is reused only
    # when both files are): no cache statistics in the generator's notes
    again = tmp_path / "again"
    _run(astro_ep_ws, "direct_llm", again, llm_server, "--n", "5")
    for name in ("questions.jsonl", "metadata.json"):
        assert (again / name).read_bytes() == (tmp_path / "direct" / name).read_bytes(), name


@pytest.mark.slow
@pytest.mark.llm
def test_evidence_graph_llm_verbalizer_keeps_the_structure(astro_ws, llm_server, tmp_path):
    """On astro-2025 (astro-2025-ep holds no real tension, so evidence_graph writes nothing there)."""
    template = tmp_path / "template"
    assert (
        run_cli(
            ["generate", "evidence_graph", "--instance", "astro-2025", "--out", str(template), "--n", "5"],
            root=astro_ws.root,
        )[0]
        == 0
    )
    questions, metadata = _run(
        astro_ws,
        "evidence_graph",
        tmp_path / "llm",
        llm_server,
        "--n",
        "5",
        "--verbalizer",
        "llm",
        instance="astro-2025",
    )
    base = [json.loads(line) for line in (template / "questions.jsonl").read_text().splitlines()]
    assert [q["source_evidence_ids"] for q in questions] == [q["source_evidence_ids"] for q in base]
    assert [q["signal_type"] for q in questions] == [q["signal_type"] for q in base]
    assert all(q["generation_system"] == "evidence_graph_llm" for q in questions)
    assert all(q["verbalizer"] in ("llm", "template") for q in questions)
    assert metadata["llm_components"][0]["role"].startswith("verbalizer")
