"""Pairwise judging in both orders, order folding, position debiasing and the bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from backtest.arena.bootstrap import bootstrap_btd
from backtest.arena.btd import fit_btd, table_from_outcomes
from backtest.arena.contexts import ArenaContext, ArenaOutput, load_user_contexts
from backtest.arena.pairwise import (
    PairVerdict,
    PairwiseJudge,
    fold_cases,
    get_pairwise_judge,
    judge_contexts,
    make_case,
    normalise_verdict,
)
from backtest.arena.run import run_arena
from backtest.core.errors import BadInput

SYSTEMS = ["alpha", "beta", "gamma", "delta"]
QUALITY = {"alpha": 4, "beta": 3, "gamma": 2, "delta": 1}


def contexts(n=30):
    """Synthetic contexts: every system answers every context; output text carries its quality."""
    return [
        ArenaContext(
            context_id=f"c{k:03d}",
            text=f"context {k}",
            outputs={s: ArenaOutput(system=s, output=f"{s} quality {QUALITY[s]} item {k}") for s in SYSTEMS},
        )
        for k in range(n)
    ]


class QualityJudge(PairwiseJudge):
    """An honest judge: prefers the higher quality, strongly when the gap is 2 or more; noisy by context."""

    name = "quality"

    def info(self):
        return {"name": self.name}

    def compare(self, context, a, b):
        qa, qb = QUALITY[a.system], QUALITY[b.system]
        k = int(context.context_id[1:])
        if (k + qa + qb) % 7 == 0:  # an occasional upset keeps the fit finite
            qa, qb = qb, qa
        gap = qa - qb
        verdict = "A>>B" if gap >= 2 else "A>B" if gap == 1 else "A=B" if gap == 0 else "B>A" if gap == -1 else "B>>A"
        return PairVerdict(verdict=verdict)


def test_verdicts_and_case_folding():
    assert (
        normalise_verdict("A≫B") == "A>>B"
        and normalise_verdict("A ≈ B") == "A=B"
        and normalise_verdict("B≫A") == "B>>A"
    )
    with pytest.raises(BadInput):
        normalise_verdict("A>>>B")
    # alpha shown first wins strongly; shown second it still wins (B>A from the judge's view): consistent
    case = make_case("c", "alpha", "beta", PairVerdict(verdict="A>>B"), PairVerdict(verdict="B>A"))
    assert (case.share_ab, case.share_ba, case.share, case.consistent) == (1.0, 0.75, 0.875, True)
    flipped = make_case("c", "alpha", "beta", PairVerdict(verdict="A>B"), PairVerdict(verdict="A>B"))
    assert (flipped.share, flipped.consistent) == (0.5, False)
    tie_vs_win = make_case("c", "alpha", "beta", PairVerdict(verdict="A=B"), PairVerdict(verdict="B>A"))
    assert not tie_vs_win.consistent


def test_position_biased_judge_yields_ties_not_a_ranking():
    ctx = contexts(20)
    biased = get_pairwise_judge("position-a")
    cases = judge_contexts(ctx, biased)
    assert len(cases) == 20 * 6
    assert all(c.share == 0.5 and not c.consistent for c in cases)
    for fold in ("average", "strict"):
        result = run_arena(ctx, biased, fold=fold, n_boot=200, seed=1)
        ratings = result["btd"]["ratings"]
        assert max(ratings.values()) - min(ratings.values()) < 1e-6, fold
        assert {row["rank"] for row in result["leaderboard"]} == {1}
        assert result["bootstrap"]["full_ordering_recovery"] is None
        assert result["position_a_share"] == 0.75
        assert result["consistency_rate"] == 0.0
    strict = run_arena(ctx, biased, fold="strict", n_boot=0)
    assert strict["n_fitted"] == 0 and len(strict["order_sensitive"]) == 120
    for refit in strict["sensitivity"].values():
        assert max(refit["ratings"].values()) - min(refit["ratings"].values()) < 1e-6
    average = run_arena(ctx, biased, fold="average", n_boot=0)
    assert average["condorcet"]["winner"] is None
    assert all(r["relation"] == "=" for r in average["condorcet"]["relations"])


def test_honest_judge_recovers_quality_order():
    result = run_arena(contexts(30), QualityJudge(), n_boot=300, seed=2)
    assert result["btd"]["ordering"] == ["alpha", "beta", "gamma", "delta"]
    assert result["condorcet"]["winner"] == "alpha" and result["condorcet"]["loser"] == "delta"
    assert result["consistency_rate"] == 1.0
    boot = result["bootstrap"]
    assert 0.5 < boot["full_ordering_recovery"] <= 1.0
    for row in result["leaderboard"]:
        assert row["ci_low"] <= row["rating"] <= row["ci_high"]


class SometimesBiasedJudge(QualityJudge):
    """Honest, except that on every third context it always prefers position A."""

    def compare(self, context, a, b):
        if int(context.context_id[1:]) % 3 == 0:
            return PairVerdict(verdict="A>B")
        return super().compare(context, a, b)


def test_strict_fold_sets_aside_order_sensitive_cases():
    ctx = contexts(30)
    result = run_arena(ctx, SometimesBiasedJudge(), fold="strict", n_boot=0)
    sensitive = result["order_sensitive"]
    assert sensitive and all(c["context_id"] in {f"c{k:03d}" for k in range(0, 30, 3)} for c in sensitive)
    assert result["n_fitted"] == result["n_cases"] - len(sensitive)
    assert result["btd"]["ordering"] == ["alpha", "beta", "gamma", "delta"]
    sens = result["sensitivity"]
    assert set(sens) == {"as_ties", "as_losses_for_higher_ranked"}
    # treating the set-aside cases as losses for the higher-ranked system narrows the spread
    spread = lambda r: max(r.values()) - min(r.values())  # noqa: E731
    assert spread(sens["as_losses_for_higher_ranked"]["ratings"]) < spread(result["btd"]["ratings"])
    included, aside = fold_cases(judge_contexts(ctx, SometimesBiasedJudge()), "strict")
    assert len(aside) == len(sensitive) and all(c.consistent for c in included)


def test_bootstrap_is_reproducible_and_reports_recovery():
    rng = np.random.default_rng(0)
    systems = ["a", "b", "c"]
    rows = [
        (x, y, float(rng.choice([1.0, 0.75, 0.5, 0.25, 0.0], p=p)))
        for x, y, p in [
            ("a", "b", [0.3, 0.3, 0.2, 0.1, 0.1]),
            ("b", "c", [0.3, 0.3, 0.2, 0.1, 0.1]),
            ("a", "c", [0.5, 0.3, 0.1, 0.05, 0.05]),
        ]
        for _ in range(40)
    ]
    point = fit_btd(table_from_outcomes(systems, rows))
    clusters = [f"ctx{k % 40}" for k in range(len(rows))]
    one = bootstrap_btd(systems, rows, point, n_boot=1000, seed=7).to_dict()
    two = bootstrap_btd(systems, rows, point, n_boot=1000, seed=7).to_dict()
    other = bootstrap_btd(systems, rows, point, n_boot=1000, seed=8).to_dict()
    assert one == two
    assert one != other
    assert one["ordering"] == point.ordering() == ["a", "b", "c"]
    assert 0.0 < one["full_ordering_recovery"] <= 1.0
    assert one["prob_above"]["a"]["c"] > 0.95
    clustered = bootstrap_btd(systems, rows, point, clusters=clusters, n_boot=1000, seed=7).to_dict()
    assert clustered["resampling"] == "contexts (cluster)" and clustered["n_units"] == 40
    for s in systems:
        lo, hi = one["intervals"][s]
        assert lo <= point.rating_of()[s] <= hi


def test_user_contexts_jsonl(tmp_path):
    path = tmp_path / "ctx.jsonl"
    path.write_text(
        '{"context": "Q1 text", "system": "x", "output": "answer one"}\n'
        '{"context": "Q1 text", "system": "y", "output": "answer two"}\n'
        '{"context": {"id": "k2", "text": "Q2"}, "system": "x", "output": "three"}\n'
    )
    ctx = load_user_contexts(path)
    assert [len(c.outputs) for c in ctx] == [2, 1] and ctx[1].context_id == "k2"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": "c", "system": "x", "output": "a"}\n{"context": "c", "system": "x", "output": "b"}\n')
    with pytest.raises(BadInput, match=r"bad.jsonl:2"):
        load_user_contexts(bad)


def _q(system, k, text, evidence, cutoff="2025-10-31"):
    from backtest.core.records import Question

    return Question(
        question_id=f"{system}_{k}",
        question=text,
        domain="astro",
        cutoff_date=cutoff,
        generated_at=cutoff,
        generation_system=system,
        source_evidence_ids=evidence,
        rank=k,
        frozen=True,
    )


class FakePast:
    """A past corpus stand-in: ``get(id)`` returns a record with a title and abstract."""

    def __init__(self, papers):
        from types import SimpleNamespace

        self.papers = {i: SimpleNamespace(title=t, abstract=a) for i, (t, a) in papers.items()}

    def get(self, identifier):
        return self.papers.get(identifier)


def test_neighbourhood_contexts_from_evidence():
    from backtest.arena.contexts import neighbourhood_contexts

    past = FakePast(
        {
            "p1": (
                "Water in WASP-121 b",
                "JWST transmission spectrum of the ultra-hot Jupiter WASP-121 b shows water.",
            ),
            "p2": ("WASP-121 b revisited", "A second JWST transmission spectrum of the ultra-hot Jupiter WASP-121 b."),
            "p3": ("Galaxy quenching", "Star formation quenching in massive galaxies at cosmic noon."),
            "p4": ("Pulsar timing", "Nanohertz gravitational waves from pulsar timing arrays."),
        }
    )
    sets = {
        "x": [_q("x", 1, "Is water real in WASP-121 b?", ["p1"]), _q("x", 2, "What quenches galaxies?", ["p3"])],
        "y": [
            _q("y", 1, "Does the WASP-121 b spectrum hold?", ["p2"]),
            _q("y", 2, "Why do galaxies quench early?", ["p3"]),
        ],
        "z": [_q("z", 1, "Are pulsar timing signals astrophysical?", ["p4"])],
    }
    contexts = neighbourhood_contexts(sets, past, threshold=0.3)
    groups = sorted(sorted(o.question_id for o in c.outputs.values()) for c in contexts)
    assert groups == [["x_1", "y_1"], ["x_2", "y_2"]]  # shared id p3; near texts p1~p2; z has no neighbour
    shared = next(c for c in contexts if "x_2" in {o.question_id for o in c.outputs.values()})
    assert "Galaxy quenching" in shared.text and shared.evidence_ids == ["p3"]
    again = neighbourhood_contexts(sets, past, threshold=0.3)
    assert [c.context_id for c in again] == [c.context_id for c in contexts]
    with pytest.raises(BadInput, match="different cutoffs"):
        neighbourhood_contexts({"x": sets["x"], "w": [_q("w", 1, "Q?", ["p1"], cutoff="2020-12-31")]}, past)
