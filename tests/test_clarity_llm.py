"""The optional LLM clarity rater (``backtest clarity rate``): plumbing against the real local llama-server with
Gemma 3 270M (parseable ratings, cached, key written nowhere; the ratings' values do not matter), and its bad
input without any server."""

from __future__ import annotations

import json

import pytest

from backtest.text.clarity_llm import RATER_PROBLEMS, RATER_VERSION
from tests.conftest import assert_key_written_nowhere
from tests.llm_server import KEY_ENV, LLM_MODEL, judge_config

API_KEY = "sk-clarity-test-0123456789abcdef"
QUESTIONS = [
    "Is the subsolar terminator water abundance retrieved for HD 209458 b an artifact of retrieval assumptions?",
    "What is the origin of these bars?",
]


def questions_file(folder):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "question_id": f"q_{k + 1:03d}",
            "question": q,
            "domain": "astrophysics",
            "cutoff_date": "2025-10-31",
            "generated_at": "2025-10-31",
            "generation_system": "hand_v1",
            "source_evidence_ids": ["2510.00001"],
            "rank": k + 1,
            "frozen": True,
        }
        for k, q in enumerate(QUESTIONS)
    ]
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.slow
@pytest.mark.llm
def test_rate_with_the_real_local_server(llm_server, cli, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    path = questions_file(tmp_path / "sub")
    config = judge_config(tmp_path / "gemma.toml", llm_server, tmp_path / "cache" / "clarity.sqlite")
    out = tmp_path / "out" / "ratings.jsonl"
    code, stdout, err = cli(["clarity", "rate", path, "--llm", config, "--out", out, "--json"], root=tmp_path)
    assert code == 0, err
    report = json.loads(stdout)
    assert report["summary"]["rated"] == len(QUESTIONS) and report["summary"]["failed"] == 0
    assert report["summary"]["rater"]["model"] == LLM_MODEL and report["summary"]["rater"]["rater"] == RATER_VERSION
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ["q_001", "q_002"]
    for row in rows:
        assert row["llm_clarity"] in (1, 2, 3, 4, 5) and row["llm_problem"] in RATER_PROBLEMS
        assert row["cached"] is False and row["score"] in (1.0, 0.4)
    # a rerun is answered from the cache: same ratings, no call
    code, stdout, err = cli(["clarity", "rate", path, "--llm", config, "--json"], root=tmp_path)
    assert code == 0, err
    again = json.loads(stdout)
    assert again["summary"]["cached"] == len(QUESTIONS)
    assert [q["llm_clarity"] for q in again["questions"]] == [r["llm_clarity"] for r in rows]
    assert (tmp_path / "cache" / "clarity.sqlite").is_file()
    assert assert_key_written_nowhere(API_KEY, tmp_path) >= 3


def test_rate_refuses_bad_input_in_one_line(cli, tmp_path, monkeypatch):
    path = questions_file(tmp_path / "sub")
    code, _, err = cli(["clarity", "rate", path, "--llm", tmp_path / "none.toml"], root=tmp_path)
    assert code == 2 and err.strip().count("\n") == 0 and "no such LLM config" in err
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "llm"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\ncolour = "blue"\n')
    code, _, err = cli(["clarity", "rate", path, "--llm", bad], root=tmp_path)
    assert code == 2 and "colour" in err and err.strip().count("\n") == 0
    keyed = tmp_path / "keyed.toml"
    keyed.write_text(f'kind = "llm"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\napi_key_env = "{KEY_ENV}"\n')
    monkeypatch.delenv(KEY_ENV, raising=False)
    code, _, err = cli(["clarity", "rate", path, "--llm", keyed], root=tmp_path)
    assert code == 2 and KEY_ENV in err and err.strip().count("\n") == 0


def test_unreachable_endpoint_is_a_failed_check_not_a_traceback(cli, tmp_path):
    path = questions_file(tmp_path / "sub")
    config = tmp_path / "down.toml"
    config.write_text('kind = "llm"\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\nmax_retries = 0\ntimeout_s = 2\n')
    code, out, err = cli(["clarity", "rate", path, "--llm", config], root=tmp_path)
    assert code == 1 and "2 of 2 questions got no usable rating" in err.splitlines()[0]
    assert "q_001  no rating" in out
