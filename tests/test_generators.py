"""End-to-end generator tests on real instances: the output passes every freeze gate, cites only
past records dated on or before the cutoff, and reruns are byte-identical.

The full-corpus runs (astro-2025: 5,847 abstracts; space-2016: 4,858) are slow: claim extraction
and the selection's embeddings are cached in the session workspace, so each instance pays once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backtest.corpus.instance import load_instance, open_past_corpus
from backtest.generators.evidence_graph import TENSION_TYPES
from backtest.submit.freeze import check_gates
from backtest.text.objects import names_object
from tests.conftest import run_cli

BASELINES = ["random_claims", "citation_leaders", "review_future_work", "evidence_graph"]
_RUNS: dict[tuple, Path] = {}


def generate(ws, instance_id: str, name: str, out: Path, *extra: str) -> Path:
    """Run ``backtest generate`` in-process; return the submission folder."""
    code = run_cli(["generate", name, "--instance", instance_id, "--out", str(out), *extra], root=ws.root)[0]
    assert code == 0, f"backtest generate {name} exited {code}"
    return out


def cached_run(ws, instance_id, name, tmp_path_factory) -> Path:
    """Each (instance, generator) is generated once per session."""
    key = (str(ws.root), instance_id, name)
    if key not in _RUNS:
        _RUNS[key] = generate(ws, instance_id, name, tmp_path_factory.mktemp(f"{instance_id}-{name}"))
    return _RUNS[key]


def load(folder: Path) -> tuple[list[dict], dict]:
    questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    metadata = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    return questions, metadata


def assert_freezes_cleanly(folder: Path, instance_id: str, ws, minimum: int = 50) -> list[dict]:
    """Every freeze gate passes (or is skipped as not applicable); evidence is past and <= cutoff."""
    _, results = check_gates(folder, instance_id, ws)
    statuses = {r.name: r.status for r in results}
    assert not [r for r in results if r.status == "failed"], [
        (r.name, r.reason) for r in results if r.status == "failed"
    ]
    assert statuses["near_duplicates"] == "passed", statuses
    assert statuses["evidence_in_past"] == "passed" and statuses["clarity"] == "passed", statuses
    questions, metadata = load(folder)
    assert len(questions) >= minimum and metadata["n_questions"] == len(questions)
    instance = load_instance(instance_id, ws)
    past = open_past_corpus(instance, ws)
    for q in questions:
        assert q["question"].endswith("?") and q["question"].count("?") == 1
        assert q["cutoff_date"] == instance.cutoff.isoformat() == metadata["cutoff_date"]
        assert q["generated_at"] == instance.cutoff.isoformat()
        for ident in q["source_evidence_ids"]:
            assert ident in past.dates and past.dates[ident] <= instance.cutoff, (q["question_id"], ident)
    return questions


def specificity(questions: list[dict]) -> float:
    return sum(names_object(q["question"]) for q in questions) / len(questions)


# --------------------------------------------------------------------------- fast: a small real instance


def test_random_claims_small_instance_freezes_and_reruns_identically(astro_ep_ws, tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    a = generate(astro_ep_ws, "astro-2025-ep", "random_claims", tmp_path / "a", "--n", "30", "--seed", "7")
    b = generate(astro_ep_ws, "astro-2025-ep", "random_claims", tmp_path / "b", "--n", "30", "--seed", "7")
    c = generate(astro_ep_ws, "astro-2025-ep", "random_claims", tmp_path / "c", "--n", "30", "--seed", "8")
    for name in ("questions.jsonl", "metadata.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "questions.jsonl").read_bytes() != (c / "questions.jsonl").read_bytes()
    questions = assert_freezes_cleanly(a, "astro-2025-ep", astro_ep_ws, minimum=30)
    assert all(len(q["source_evidence_ids"]) == 1 and q["generation_system"] == "random_claims" for q in questions)


# --------------------------------------------------------------------------- slow: the two full instances


@pytest.mark.slow
@pytest.mark.parametrize("name", BASELINES)
def test_astro_2025_generators_freeze_cleanly(name, astro_ws, tmp_path_factory):
    questions = assert_freezes_cleanly(
        cached_run(astro_ws, "astro-2025", name, tmp_path_factory), "astro-2025", astro_ws
    )
    assert len(questions) == 125


@pytest.mark.slow
@pytest.mark.parametrize("name", BASELINES)
def test_space_2016_generators_freeze_cleanly(name, space_ws, tmp_path_factory):
    assert_freezes_cleanly(cached_run(space_ws, "space-2016", name, tmp_path_factory), "space-2016", space_ws)


@pytest.mark.slow
def test_evidence_graph_is_specific_typed_and_cites_both_papers(astro_ws, tmp_path_factory):
    eg, _ = load(cached_run(astro_ws, "astro-2025", "evidence_graph", tmp_path_factory))
    rc, _ = load(cached_run(astro_ws, "astro-2025", "random_claims", tmp_path_factory))
    eg_rate, rc_rate = specificity(eg), specificity(rc)
    assert eg_rate >= 0.80 and eg_rate > rc_rate + 0.5, (eg_rate, rc_rate)
    assert {q["signal_type"] for q in eg} <= set(TENSION_TYPES)
    assert len({q["signal_type"] for q in eg}) == 4
    for q in eg:
        assert len(q["source_evidence_ids"]) == 2 and q["objects"]
        t = q["tension"]
        assert t["claims"][0].startswith(q["source_evidence_ids"][0] + "#s")
        assert t["claims"][1].startswith(q["source_evidence_ids"][1] + "#s")
    scores = [q["tension"]["score"] for q in eg]
    assert all(0.0 <= s <= 1.0 for s in scores)


@pytest.mark.slow
def test_evidence_graph_reruns_are_byte_identical(space_ws, tmp_path_factory, tmp_path):
    first = cached_run(space_ws, "space-2016", "evidence_graph", tmp_path_factory)
    again = generate(space_ws, "space-2016", "evidence_graph", tmp_path / "again")
    for name in ("questions.jsonl", "metadata.json"):
        assert (first / name).read_bytes() == (again / name).read_bytes()
