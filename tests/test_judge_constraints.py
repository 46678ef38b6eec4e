"""Constraints on judge answers, the judge registry and the LLM judge's prompt rendering (no model, no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.records import OUTCOMES, PREMISE_STATUSES, JudgeInfo
from backtest.judge import get_judge, judge_names
from backtest.judge.constraints import check_answer, failed_judgment, retry_message, to_judgment
from backtest.judge.protocol import answer_schema

SHOWN = ["2511.00001", "2512.00002", "2601.00003"]
REPO_PROMPT = Path(__file__).resolve().parent.parent / "judges" / "prompts" / "outcome-premise-v2.md"
INFO = JudgeInfo(name="t", model="m", protocol="p", prompt_sha256="a" * 64, config_sha256="b" * 64)


def answer(outcome="answered", premise="supported", ids=("2511.00001",)):
    return {
        "outcome": outcome,
        "premise_status": premise,
        "evidence": [{"id": i, "relevance": "r"} for i in ids],
        "rationale": "because",
    }


def test_clean_answer_passes_unchanged():
    assert check_answer(answer(), SHOWN) == []
    j = to_judgment("q1", answer(ids=SHOWN[:2]), SHOWN, INFO, {"prompt_tokens": 3})
    assert (j.outcome, j.premise_status, j.supporting_ids, j.needs_review) == ("answered", "supported", SHOWN[:2], [])
    assert j.tokens == {"prompt_tokens": 3} and "raw_answer" not in j.model_dump()


def test_answered_and_refuted_is_expressible():
    j = to_judgment("q1", answer("answered", "refuted"), SHOWN, INFO)
    assert (j.outcome, j.premise_status, j.needs_review) == ("answered", "refuted", [])


def test_foreign_citation_is_dropped_and_flagged():
    j = to_judgment("q1", answer(ids=("2511.00001", "9999.99999")), SHOWN, INFO)
    assert j.supporting_ids == ["2511.00001"]
    assert any("9999.99999" in r and "not among the documents shown" in r for r in j.needs_review)
    assert [e["id"] for e in j.model_dump()["raw_answer"]["evidence"]] == ["2511.00001", "9999.99999"]


@pytest.mark.parametrize("outcome", ["answered", "partially_addressed", "posed_but_open"])
def test_engaged_without_valid_citation_is_counted_not_addressed_and_flagged(outcome):
    j = to_judgment("q1", answer(outcome, ids=("9999.99999",)), SHOWN, INFO)
    assert j.outcome == "not_addressed" and j.supporting_ids == []
    assert any("needs at least one cited document" in r for r in j.needs_review)
    assert any(r.startswith("counted as not_addressed") for r in j.needs_review)
    assert j.model_dump()["raw_answer"]["outcome"] == outcome


def test_not_addressed_carries_no_citations():
    j = to_judgment("q1", answer("not_addressed", "still_plausible", ids=("2511.00001",)), SHOWN, INFO)
    assert j.outcome == "not_addressed" and j.evidence == [] and j.supporting_ids == []
    assert "constraint: outcome 'not_addressed' must cite no documents" in j.needs_review


@pytest.mark.parametrize("field,label", [("outcome", "resolved"), ("premise_status", "confirmed")])
def test_unknown_labels_are_flagged_never_mapped(field, label):
    raw = answer()
    raw[field] = label
    j = to_judgment("q1", raw, SHOWN, INFO)
    assert getattr(j, field) == label
    assert any(f"unknown {field} label {label!r}" in r for r in j.needs_review)


def test_malformed_answer_raises_value_error():
    with pytest.raises(ValueError):
        to_judgment("q1", {"outcome": "answered"}, SHOWN, INFO)


def test_duplicate_citations_are_merged_and_flagged():
    # found by the real Gemma judge in CI: a merged duplicate left raw_answer with no reason
    j = to_judgment("q1", answer(ids=("2511.00001", "2511.00001", "2512.00002")), SHOWN, INFO)
    assert j.supporting_ids == ["2511.00001", "2512.00002"]
    assert j.needs_review == ["constraint: cited more than once (cite each document once): 2511.00001"]
    assert [e["id"] for e in j.model_dump()["raw_answer"]["evidence"]] == ["2511.00001", "2511.00001", "2512.00002"]


@pytest.mark.parametrize("outcome", OUTCOMES + ("solved",))
@pytest.mark.parametrize(
    "ids",
    [
        (),
        ("2511.00001",),
        ("2511.00001", "2512.00002"),
        ("9999.99999",),
        ("2511.00001", "2511.00001"),
        ("9999.99999", "2511.00001"),
        ("9999.99999", "9999.99999"),
    ],
)
def test_an_answer_is_changed_exactly_when_it_breaks_a_rule(outcome, ids):
    """Nothing silent: the unchanged answer is kept, and the judgment flagged, iff a constraint was broken."""
    raw = answer(outcome=outcome, ids=ids)
    j = to_judgment("q1", raw, SHOWN, INFO).model_dump()
    problems = check_answer(raw, SHOWN)
    assert ("raw_answer" in j) == bool(problems) == bool(j["needs_review"])
    if not problems:
        assert (j["outcome"], j["supporting_ids"]) == (outcome, list(ids))


def test_retry_message_names_problems_and_allowed_ids():
    msg = retry_message(check_answer(answer(ids=("x",)), SHOWN), SHOWN)
    assert "not among the documents shown: x" in msg and all(i in msg for i in SHOWN)


def test_failed_judgment_is_conservative_and_flagged():
    j = failed_judgment("q1", INFO, "HTTP 500 five times")
    assert j.outcome == "not_addressed" and j.supporting_ids == []
    assert j.needs_review[0].startswith("judge_failed: HTTP 500")


def test_answer_schema_enumerates_labels_and_shown_ids():
    schema = answer_schema(SHOWN)
    props = schema["properties"]
    assert props["outcome"]["enum"] == list(OUTCOMES)
    assert props["premise_status"]["enum"] == list(PREMISE_STATUSES)
    assert props["evidence"]["items"]["properties"]["id"]["enum"] == SHOWN
    assert set(schema["required"]) == {"outcome", "premise_status", "evidence", "rationale"}


def test_registry_and_config_errors(tmp_path):
    assert {"llm", "offline"} <= set(judge_names())
    assert get_judge(None).name == "offline"
    with pytest.raises(BadInput, match="unknown judge"):
        get_judge("nonesuch")
    with pytest.raises(BadInput, match="no such judge config"):
        get_judge(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "llm"\nmodel = "m"\n')
    with pytest.raises(BadInput, match="base_url"):
        get_judge(str(bad))
    hot = tmp_path / "hot.toml"
    hot.write_text(
        'kind = "llm"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\ntemperature = 0.7\n'
        'prompt = "%s"\n' % (REPO_PROMPT.as_posix())
    )
    with pytest.raises(BadInput, match="temperature 0"):
        get_judge(str(hot))
    typo = tmp_path / "typo.toml"
    typo.write_text('kind = "llm"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\nmax_token = 5\n')
    with pytest.raises(BadInput, match="unknown judge setting"):
        get_judge(str(typo))


def test_llm_judge_identity_and_prompt_rendering(tmp_path):
    from backtest.core.records import RetrievedDocument
    from backtest.core.seal import sha256_file
    from backtest.core.workspace import Workspace
    from tests.submission_helpers import question_record

    cfg = tmp_path / "j.toml"
    cfg.write_text(
        f'kind = "llm"\nname = "tiny"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\napi_key_env = ""\n'
        f'prompt = "{REPO_PROMPT.as_posix()}"\nmax_doc_chars = 40\n'
    )
    judge = get_judge(str(cfg), Workspace(tmp_path))
    info = judge.info()
    assert (
        info.name == "tiny"
        and info.prompt_sha256 == sha256_file(REPO_PROMPT)
        and info.config_sha256 == sha256_file(cfg)
    )
    q = question_record("Is WASP-39 b's SO2 photochemical?", premise="SO2 is photochemical")
    docs = [
        RetrievedDocument(
            rank=1,
            id="2511.00001",
            score=0.9,
            published="2025-11-05",
            title="SO2 in WASP-39 b",
            abstract="We detect sulfur dioxide in the transmission spectrum of WASP-39 b with JWST and model it.",
        )
    ]
    system, user = judge.messages(q, docs)
    assert system["role"] == "system" and "2025-10-31" in system["content"] and "{{" not in system["content"]
    assert (
        "[2511.00001] (2025-11-05) SO2 in WASP-39 b" in user["content"]
        and 'question: "Is WASP-39 b\'s SO2 photochemical?"' in user["content"]
        and 'premise: "SO2 is photochemical"' in user["content"]
    )
    assert "…" in user["content"] and "model it." not in user["content"]  # abstract cut to max_doc_chars
