"""``backtest baselines``: reference systems generated, frozen, scored offline and compared, on real data.

Runs two of the five generators on the astro-ph.EP slice of astro-2025 (``astro_ep_ws``)
with a small n, so the whole pipeline (generation, freeze gates, dense retrieval,
offline judge, compare, diversity, arena) runs in minutes; ``direct_llm`` has no
endpoint here and ``evidence_graph`` no real tension in this slice's past corpus: both must be skipped
with their reasons, the others compared.
"""

from __future__ import annotations

import json

from backtest.core.records import read_output
from backtest.studies.outputs import Baselines

INSTANCE = "astro-2025-ep"
ARGS = [
    "baselines",
    "--instance",
    INSTANCE,
    "--n",
    "20",
    "--bootstrap",
    "200",
    "--generator",
    "random_claims",
    "--generator",
    "direct_llm",
    "--generator",
    "citation_leaders",
    "--generator",
    "evidence_graph",
]


def test_baselines_end_to_end_and_rerun(astro_ep_ws, copy_ws, cli, monkeypatch):
    monkeypatch.delenv("BACKTEST_LLM_BASE_URL", raising=False)
    ws = copy_ws(astro_ep_ws)
    code, out, err = cli(ARGS, root=ws.root)
    assert code == 0, err
    assert "direct_llm: skipped: no LLM endpoint configured" in out
    assert "evidence_graph: skipped: evidence_graph: the past corpus of astro-2025-ep holds no typed tension" in out
    folder = ws.results / INSTANCE / "baselines"
    summary = read_output(Baselines, folder / "BASELINES.json")
    rows = {r["generator"]: r for r in summary.systems}
    assert set(rows) == {"random_claims", "direct_llm", "citation_leaders", "evidence_graph"}
    for name in ("direct_llm", "evidence_graph"):
        assert "skipped" in rows[name] and "run" not in rows[name]
    for name in ("random_claims", "citation_leaders"):
        row = rows[name]
        assert row["n_questions"] == 20 and row["run_status"] == "complete" and row["valid"] is True
        metrics = json.loads((ws.root / row["run"] / "metrics.json").read_text())
        assert metrics["n_questions"] == 20
        assert abs(sum(v["rate"] for v in metrics["outcomes"].values()) - 1) < 1e-9

    compare_md = (folder / "compare.md").read_text()
    assert "random_claims" in compare_md and "citation_leaders" in compare_md
    diversity = json.loads((folder / "diversity" / "diversity.json").read_text())
    assert set(diversity["distinct"]["sets"]) == {"random_claims", "citation_leaders"}
    for entry in diversity["distinct"]["sets"].values():
        for rule in ("tfidf", "embedding"):
            assert 1 <= entry["rules"][rule]["distinct"]["components"] <= entry["n"] == 20
    assert set(diversity["audit"]["rules"]) == {"tfidf", "embedding"}
    arena = json.loads((folder / "arena" / "arena.json").read_text())
    assert arena["systems"] == ["citation_leaders", "random_claims"] and arena["n_cases"] >= 1
    assert {r["system"] for r in arena["leaderboard"]} == {"random_claims", "citation_leaders"}

    # a rerun seals nothing new and judges nothing again; its outputs are byte-identical
    ledger = ws.ledger.read_bytes()
    first = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code, out, err = cli(ARGS, root=ws.root)
    assert code == 0, err
    assert ws.ledger.read_bytes() == ledger
    again = json.loads((folder / "BASELINES.json").read_text())
    assert all(r["frozen_reused"] and r["run_status"] == "already complete" for r in again["systems"] if "run" in r)
    second = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert set(second) == set(first)
    changed = sorted(str(p) for p in first if first[p] != second[p])
    assert changed == ["BASELINES.json"]  # only the frozen_reused / run_status fields differ


def test_baselines_rejects_an_unknown_generator(astro_ep_ws, cli):
    code, out, err = cli(["baselines", "--instance", INSTANCE, "--generator", "oracle"], root=astro_ep_ws.root)
    assert code == 2 and "unknown generator 'oracle'" in err and len(err.strip().splitlines()) == 1


def test_llm_options_reach_only_the_llm_generator(astro_ep_ws, copy_ws, cli):
    """An endpoint given for direct_llm is not written into the other systems' metadata (the freeze gate would
    refuse a set whose metadata names a model that llm_components does not declare)."""
    ws = copy_ws(astro_ep_ws)
    code, out, err = cli(
        [
            "baselines",
            "--instance",
            INSTANCE,
            "--n",
            "5",
            "--generator",
            "random_claims",
            "--llm-base-url",
            "http://127.0.0.1:9",
            "--llm-model",
            "gemma-3-270m",
        ],
        root=ws.root,
    )
    assert code == 0, err
    assert "fewer than two systems scored" in out
    metadata = json.loads((ws.root / "submissions" / INSTANCE / "random_claims" / "metadata.json").read_text())
    assert "llm_base_url" not in json.dumps(metadata) and "gemma" not in json.dumps(metadata)
    summary = read_output(Baselines, ws.results / INSTANCE / "baselines" / "BASELINES.json")
    assert [r["generator"] for r in summary.systems] == ["random_claims"] and summary.compare is None
