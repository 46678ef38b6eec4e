"""Distinct-question counts under the equivalence rules, the perturbation audit, and the llm rule's voting."""

from __future__ import annotations

import numpy as np
import pytest

from backtest.analysis.diversity import distinct_report, leader_clusters, make_variants, perturbation_audit
from backtest.llm.client import LLMResponse
from backtest.text.equivalence import get_rule

from .conftest import SQB

needs_sqb = pytest.mark.skipif(not (SQB / "submissions").is_dir(), reason=f"reference release not found at {SQB}")


def reference_questions(system: str, n: int | None = None) -> list[str]:
    from backtest.arena.contexts import load_question_set

    _, qs = load_question_set(SQB / "submissions" / system)
    return [q.question for q in qs][:n]


def test_leader_clustering_follows_rank_order():
    same = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 1]], dtype=bool)
    assert leader_clusters(same) == [[0, 1], [2], [3]]  # 2 is same as 1, but 1 is not a leader


def test_distinct_counts_on_a_crafted_set():
    texts = [
        "Does water vapour appear in the transmission spectrum of WASP-121 b?",
        "Is water vapour seen in the transmission spectrum of WASP-121 b?",
        "What sets the mass-loss rate of young mini-Neptunes around M dwarfs?",
        "Can radial velocities detect Earth analogues around Sun-like stars?",
    ]
    report = distinct_report({"crafted": texts}, [get_rule("tfidf")])
    entry = report["sets"]["crafted"]["rules"]["tfidf"]
    assert entry["distinct"] == {"components": 3, "complete": 3, "leader": 3}
    assert entry["same_pairs"] == 1 and entry["examples"][0]["i"] == 0 and entry["examples"][0]["j"] == 1


@needs_sqb
def test_distinct_counts_on_reference_sets():
    sets = {s: reference_questions(s) for s in ("citation_leader_L1", "direct_llm_L1")}
    report = distinct_report(sets, [get_rule("tfidf")])
    templated = report["sets"]["citation_leader_L1"]["rules"]["tfidf"]["distinct"]
    free = report["sets"]["direct_llm_L1"]["rules"]["tfidf"]["distinct"]
    # the templated set ("Does the central conclusion of ... hold ...") collapses under tfidf; the LLM's set does not
    assert templated["components"] < free["components"]
    for counts in (templated, free):
        assert counts["components"] <= counts["leader"] <= 125 and counts["components"] <= counts["complete"]


@needs_sqb
def test_perturbation_audit_types_and_rates():
    texts = reference_questions("direct_llm_L1", 30) + reference_questions("citation_leader_L1", 10)
    variants = make_variants(texts)
    kinds = {v.kind for v in variants}
    assert kinds == {"wording", "synonym", "object_swap", "method_swap"}
    assert all(v.text != texts[v.source] for v in variants)
    report = perturbation_audit(texts, [get_rule("tfidf")])
    per = report["rules"]["tfidf"]["per_kind"]
    assert per["wording"]["n"] == 40 and per["wording"]["same_rate"] >= 0.9
    assert all(per[k]["n"] > 0 for k in per)
    assert 0.0 <= report["rules"]["tfidf"]["agreement_with_intent"] <= 1.0
    # a strict rule treats small edits as different: the same-rate falls for every kind
    strict = perturbation_audit(texts, [get_rule("tfidf", threshold=0.99)])["rules"]["tfidf"]["per_kind"]
    assert strict["wording"]["same_rate"] < per["wording"]["same_rate"]


@needs_sqb
@pytest.mark.slow
def test_perturbation_audit_embedding_rule(tmp_path):
    texts = reference_questions("direct_llm_L1", 15)
    report = perturbation_audit(texts, [get_rule("embedding", cache_dir=tmp_path)])
    per = report["rules"]["embedding"]["per_kind"]
    assert per["wording"]["same_rate"] >= 0.9 and per["synonym"]["n"] > 0


class FakeClient:
    """Says "same" when the two questions start with the same word; records every request."""

    def __init__(self):
        self.requests = []

    def chat_many(self, requests):
        self.requests += requests
        out = []
        for req in requests:
            user = req.messages[1]["content"]
            first, second = [line.split(": ", 1)[1] for line in user.split("\n")[:2]]
            same = first.split()[0] == second.split()[0]
            if "Would a full answer" in user and "flip" in first:  # the third prompt disagrees on 'flip' pairs
                same = not same
            out.append(LLMResponse(content="", parsed={"same": same}, usage={}, cache_key="", cached=False, attempts=1))
        return out


def test_llm_rule_majority_of_three_with_order_reversed():
    import backtest.text.equivalence_llm  # noqa: F401  (registers the rule)

    client = FakeClient()
    rule = get_rule("llm", client=client, prefilter=0)
    texts = ["alpha one question", "alpha two question", "beta three question", "flip alpha", "flip beta"]
    sims = rule.similarity_matrix(texts)
    assert len(client.requests) == 3 * 10
    first, second = client.requests[0].messages[1]["content"], client.requests[1].messages[1]["content"]
    assert first.index("alpha one") < first.index("alpha two") and second.index("alpha two") < second.index("alpha one")
    assert sims[0, 1] == 1.0 and sims[0, 2] == 0.0
    assert sims[3, 4] == pytest.approx(2 / 3)  # two of three votes: still the same
    from backtest.text.equivalence import n_distinct

    assert n_distinct(texts, rule) == 3  # {alpha one, alpha two}, {beta}, {flip alpha, flip beta}
    fake = FakeClient()
    prefiltered = get_rule("llm", client=fake, prefilter=0.5)
    candidates = prefiltered.candidate_pairs(texts)
    assert 0 < len(candidates) < 10
    sims = prefiltered.similarity_matrix(texts)
    assert len(fake.requests) == 3 * len(candidates)
    asked = set(candidates)
    assert all(sims[i, j] == 0.0 for i in range(5) for j in range(i + 1, 5) if (i, j) not in asked)


@needs_sqb
def test_diversity_cli(cli, tmp_path):
    sets = [SQB / "submissions" / s for s in ("citation_leader_L1", "review_future_work_L1")]
    code, out, err = cli(
        ["diversity", *sets, "--rule", "tfidf", "--audit-max", "10", "--out", tmp_path / "d"], root=tmp_path
    )
    assert code == 0, err
    assert "| set | n | tfidf components | tfidf complete | tfidf leader |" in out
    assert "| citation_leader_L1 | 125 |" in out and "Perturbation audit" in out
    assert (tmp_path / "d" / "diversity.json").is_file() and (tmp_path / "d" / "diversity.md").is_file()
