"""``backtest arena`` end to end with the offline pairwise judge, on real question sets."""

from __future__ import annotations

import json

import pytest

from backtest.core.fileio import read_json

from .conftest import SQB

needs_sqb = pytest.mark.skipif(not (SQB / "submissions").is_dir(), reason=f"reference release not found at {SQB}")
SETS = ["citation_leader_L1", "direct_llm_L1", "random_claim_L1", "review_future_work_L1"]


@needs_sqb
def test_arena_end_to_end_offline_judge(cli, tmp_path):
    args = [
        "arena",
        *[SQB / "submissions" / s for s in SETS],
        "--bootstrap",
        "500",
        "--seed",
        "3",
        "--out",
        tmp_path / "run",
    ]
    code, out, err = cli(args, root=tmp_path)
    assert code == 0, err
    assert "| rank | system | rating | 95% interval | win rate |" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "_L1" in line]
    assert len(rows) >= 4 and all("[" in r and "]" in r for r in rows[:4])
    assert "full ordering recovered in" in out and "Rubric diagnostics" in out
    data = read_json(tmp_path / "run" / "arena.json")
    assert data["judge"]["name"] == "offline" and data["n_cases"] > 20
    assert {r["system"] for r in data["leaderboard"]} == set(SETS)
    for row in data["leaderboard"]:
        assert row["ci_low"] <= row["rating"] <= row["ci_high"]
    assert data["consistency_rate"] == 1.0  # the offline judge never looks at the position
    cases = (tmp_path / "run" / "cases.jsonl").read_text().splitlines()
    assert len(cases) == data["n_cases"] and all(json.loads(c)["verdict_ab"] for c in cases)
    first = (tmp_path / "run" / "arena.json").read_bytes()
    code, _, err = cli(args, root=tmp_path)
    assert code == 0, err
    assert (tmp_path / "run" / "arena.json").read_bytes() == first  # seeded: byte-identical rerun


def test_arena_user_contexts_position_bias_folds_to_ties(cli, tmp_path):
    rows = []
    for k in range(8):
        for system, text in (("x", f"a careful question {k}?"), ("y", f"another question {k}?"), ("z", f"third {k}?")):
            rows.append({"context": f"shared input {k}", "system": system, "output": text})
    path = tmp_path / "ctx.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for fold in ("average", "strict"):
        code, out, err = cli(
            [
                "arena",
                "--contexts",
                path,
                "--judge",
                "position-a",
                "--fold",
                fold,
                "--bootstrap",
                "200",
                "--rubric",
                "none",
                "--out",
                tmp_path / fold,
                "--json",
            ],
            root=tmp_path,
        )
        assert code == 0, err
        data = json.loads(out)
        assert set(data["btd"]["ratings"].values()) == {1500.0}
        assert [r["rank"] for r in data["leaderboard"]] == [1, 1, 1]
        assert data["consistency_rate"] == 0.0
    assert len(data["order_sensitive"]) == 24


def test_arena_bad_input(cli, tmp_path):
    code, _, err = cli(["arena"], root=tmp_path)
    assert code == 2 and "either question SETS or --contexts" in err
    path = tmp_path / "one.jsonl"
    path.write_text('{"context": "c", "system": "x", "output": "only one system"}\n')
    code, _, err = cli(["arena", "--contexts", path], root=tmp_path)
    assert code == 2 and "no context holds outputs of two systems" in err
    code, _, err = cli(["arena", "--contexts", path, "--judge", "nope"], root=tmp_path)
    assert code == 2


@pytest.mark.slow
def test_arena_on_generated_sets_with_past_evidence(cli, astro_ep_ws, tmp_path):
    """Generators on the small real instance, then the arena with evidence text from its past corpus."""
    from backtest.generators import get_generator

    def importable(name):
        try:
            get_generator(name)
        except Exception:  # not written yet, or needs options: leave it out
            return False
        return True

    # citation_leaders before review_future_work: on this exoplanet-only slice review_future_work now asks only 4
    # self-contained questions (intelligibility-v4/-v5's checks), too few to share 3 contexts with another set
    wanted = [g for g in ("random_claims", "citation_leaders", "review_future_work") if importable(g)][:2]
    if len(wanted) < 2:
        pytest.skip("fewer than two offline generators are available")
    dirs = []
    for name in wanted:
        out = tmp_path / "subs" / name
        code, _, err = cli(
            ["generate", name, "--instance", "astro-2025-ep", "--n", "40", "--out", out], root=astro_ep_ws.root
        )
        assert code == 0, err
        dirs.append(out)
    code, out, err = cli(
        [
            "arena",
            *dirs,
            "--instance",
            "astro-2025-ep",
            "--bootstrap",
            "1000",
            "--threshold",
            "0.1",
            "--out",
            tmp_path / "run",
        ],
        root=astro_ep_ws.root,
    )
    assert code == 0, err
    data = read_json(tmp_path / "run" / "arena.json")
    assert data["n_contexts"] >= 3 and len(data["leaderboard"]) == len(wanted)
    contexts = [json.loads(line) for line in (tmp_path / "run" / "contexts.jsonl").read_text().splitlines()]
    assert all("Past literature" in c["text"] and c["evidence_ids"] for c in contexts)
    assert any(" — " in c["text"] for c in contexts)  # evidence titles and abstracts came from the past corpus
    code, _, err = cli(["arena", *dirs, "--instance", "astro-2025-ep", "--bootstrap", "0"], root=tmp_path)
    assert code == 2 and "unknown instance" in err
