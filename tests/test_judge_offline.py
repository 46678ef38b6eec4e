"""The offline judge on real astro-ph.EP papers: deterministic, and true pairings engage more than mismatched ones."""

from __future__ import annotations

import datetime as dt

import pytest

from backtest.core.records import Question, RetrievedDocument
from backtest.core.seal import canonical_json
from backtest.corpus.store import CorpusStore
from backtest.judge import get_judge
from backtest.judge.offline import LEXICONS, OfflineJudge
from backtest.studies.demo import extract_claim
from backtest.text.terms import specific_terms, split_sentences


def doc(record, rank=1) -> RetrievedDocument:
    return RetrievedDocument(
        rank=rank,
        id=record.id,
        score=0.0,
        published=record.published,
        title=record.title,
        abstract=record.abstract[:1200],
    )


@pytest.fixture(scope="module")
def pairs(astro_ep_ws):
    """Six (question, its own paper + 3 others) pairs from real future-corpus papers."""
    store = CorpusStore.open("astro-2025-ep-future", astro_ep_ws)
    records = sorted(store.iter_records(), key=lambda r: r.id)
    with_claims = [(r, c) for r in records if (c := extract_claim(r.abstract))]
    picked = with_claims[:: max(1, len(with_claims) // 6)][:6]
    others = [r for r in records if r.id not in {p[0].id for p in picked}][:30]
    out = []
    for n, (record, claim) in enumerate(picked):
        q = Question(
            question_id=f"q{n}",
            question=f"Will later work confirm that {claim}?",
            domain="astro",
            cutoff_date=dt.date(2025, 10, 31),
            generated_at="2025-10-31",
            generation_system="t",
            source_evidence_ids=["x"],
            rank=n + 1,
            frozen=True,
            premise=claim,
        )
        fillers = others[3 * n : 3 * n + 3]
        out.append((q, [doc(record)] + [doc(r, i + 2) for i, r in enumerate(fillers)], fillers))
    return out


def test_offline_judge_is_deterministic(pairs):
    q, docs, _ = pairs[0]
    a = OfflineJudge().judge(q, docs)
    b = get_judge("offline-cues-v1").judge(q, docs)
    assert canonical_json(a.model_dump(mode="json")) == canonical_json(b.model_dump(mode="json"))
    assert a.judge.protocol == "offline-cues-v1" and len(a.judge.config_sha256) == 64


@pytest.mark.slow
def test_true_pairings_engage_clearly_more_than_mismatched(pairs):
    judge = OfflineJudge()
    true_engaged = mismatched_engaged = 0
    for n, (q, docs, _) in enumerate(pairs):
        rows = judge.score_documents(q, docs)
        true_engaged += rows[0]["engaged"]
        _, other_docs, _ = pairs[(n + 1) % len(pairs)]
        mismatched_engaged += sum(r["engaged"] for r in judge.score_documents(q, other_docs))
        j = judge.judge(q, docs)
        assert set(j.supporting_ids) <= {d.id for d in docs}
        if j.outcome != "not_addressed":
            assert j.supporting_ids and j.needs_review == []
    assert true_engaged >= len(pairs) - 1
    assert mismatched_engaged <= 1


def test_no_documents_means_not_addressed(pairs):
    q, _, _ = pairs[0]
    j = OfflineJudge().judge(q, [])
    assert (j.outcome, j.premise_status, j.supporting_ids) == ("not_addressed", "still_plausible", [])


def test_text_helpers_and_lexicons():
    terms = specific_terms("Does JWST detect SO2 in the atmospheres of WASP-39 b and TRAPPIST-1 planets?")
    assert {"jwst", "so2", "wasp-39", "trappist-1"} <= terms
    assert not terms & {"atmosphere", "planet", "detect", "does"}
    assert split_sentences("We detect CO2. The signal is 5 sigma! Is it real?") == [
        "We detect CO2.",
        "The signal is 5 sigma!",
        "Is it real?",
    ]
    judge = OfflineJudge()
    assert judge.lexicon.find("resolution", "We report the first detection of SO2 at 4.8 sigma")
    assert judge.lexicon.find("refute", "These data rule out a clear atmosphere")
    assert judge.lexicon.find("open_question", "The origin of the haze remains unclear")
    assert not judge.lexicon.find("refute", "We model the atmosphere")
    assert set(LEXICONS) == {"resolution", "open_question", "tentative", "support", "refute", "weaken"}


def _row(doc_id, doc_sim, **cues):
    """A scored document as ``OfflineJudge.score_documents`` gives it, with the named cues found."""
    names = ("resolution", "open_question", "tentative", "support", "refute", "weaken")
    return {
        "id": doc_id,
        "doc_sim": doc_sim,
        "sent_sim": doc_sim,
        "engaged": True,
        "objects": ["wasp-39"],
        "shared": ["so2"],
        "cues": {n: list(cues.get(n, [])) for n in names},
    }


@pytest.mark.parametrize(
    "rows, outcome, premise",
    [
        # two resolving documents, the best similar enough: answered; two refutation cues, no support: refuted
        (
            [
                _row("a", 0.7, resolution=["detect"], refute=["rule out"]),
                _row("b", 0.6, resolution=["measure"], refute=["exclude"]),
            ],
            "answered",
            "refuted",
        ),
        # one refutation cue is not enough to refute: weakened
        ([_row("a", 0.7, resolution=["detect"], refute=["rule out"])], "partially_addressed", "weakened"),
        # refutation outweighed by support: supported
        (
            [_row("a", 0.7, refute=["rule out"], support=["consistent with", "confirm"])],
            "partially_addressed",
            "supported",
        ),
        # a weakening cue beats no support
        ([_row("a", 0.5, weaken=["in tension with"])], "partially_addressed", "weakened"),
        # open-question cues without resolution: posed but open, no stance: still plausible
        ([_row("a", 0.5, open_question=["remains unclear"])], "posed_but_open", "still_plausible"),
    ],
)
def test_decide_follows_the_documented_rules(rows, outcome, premise):
    """The outcome and premise rules of the module docstring, on scored documents (no model needed)."""
    q = Question(
        question_id="q",
        question="Is SO2 present in WASP-39 b?",
        domain="astro",
        cutoff_date=dt.date(2025, 10, 31),
        generated_at="2025-10-31",
        generation_system="t",
        source_evidence_ids=["x"],
        rank=1,
        frozen=True,
        premise="SO2 is present in WASP-39 b",
    )
    answer = OfflineJudge().decide(q, rows)
    assert (answer["outcome"], answer["premise_status"]) == (outcome, premise)
    assert [e["id"] for e in answer["evidence"]] == [r["id"] for r in rows]
