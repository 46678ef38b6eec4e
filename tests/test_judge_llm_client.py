"""The OpenAI-compatible client's retry, cache, key and concurrency rules, against a scripted local HTTP endpoint.

The real-server behaviour (llama-server + Gemma) is tested in test_score_e2e.py; here a
tiny in-process endpoint scripts exact failure sequences, so each rule is checked alone.
"""

from __future__ import annotations

import email.utils
import http.server
import json
import threading
import time
from pathlib import Path

import pytest

from backtest.core.seal import canonical_json, sha256_text
from backtest.llm.client import ChatRequest, LLMClient, LLMError, LLMSettings, _retry_after_seconds

KEY = "sk-test-NEVER-WRITE-ME-4242"


class Endpoint:
    """A scripted /v1/chat/completions: each request pops the next action from ``script``."""

    def __init__(self, script=None, delay=0.0):
        self.script = list(script or [])
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers))
                    action = outer.script.pop(0) if outer.script else "ok"
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    time.sleep(outer.delay)
                    if isinstance(action, tuple):  # (status, headers)
                        self.send_response(action[0])
                        for k, v in action[1].items():
                            self.send_header(k, v)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    content = (
                        "{not json" if action == "badjson" else json.dumps({"echo": body["messages"][-1]["content"]})
                    )
                    data = json.dumps(
                        {
                            "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
                        }
                    ).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    with outer.lock:
                        outer.in_flight -= 1

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    made = []

    def make(script=None, delay=0.0):
        made.append(Endpoint(script, delay))
        return made[-1]

    yield make
    for e in made:
        e.close()


def client(url, tmp_path, sleeps=None, **kw) -> LLMClient:
    settings = LLMSettings(base_url=url, model="m", api_key_env="BACKTEST_TEST_API_KEY", backoff_s=0.5, **kw)
    return LLMClient(
        settings,
        cache_path=tmp_path / "cache.sqlite",
        sleep=(sleeps.append if sleeps is not None else (lambda s: None)),
    )


MSG = [{"role": "user", "content": "hello"}]
SCHEMA = {"type": "object"}


def test_retries_500_429_and_invalid_json_then_caches(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("BACKTEST_TEST_API_KEY", KEY)
    ep = endpoint([(500, {}), (429, {"Retry-After": "7"}), "badjson", "ok"])
    sleeps: list[float] = []
    c = client(ep.url, tmp_path, sleeps)
    r = c.chat(MSG, schema=SCHEMA)
    assert r.parsed == {"echo": "hello"} and r.attempts == 4 and not r.cached
    assert sleeps == [0.5, 7.0, 2.0]  # exponential backoff, Retry-After honoured for the 429
    assert c.stats.retry_reasons == {"http_500": 1, "http_429": 1, "invalid_json": 1}
    assert ep.headers[0]["Authorization"] == f"Bearer {KEY}"
    body = ep.requests[0]
    assert body["temperature"] == 0.0 and body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    again = c.chat(MSG, schema=SCHEMA)
    assert again.cached and again.parsed == r.parsed and len(ep.requests) == 4
    # the answer cost both attempts that came back (the unusable one was billed too): so does its cached copy
    assert r.usage["prompt_tokens"] == 22 and again.usage["prompt_tokens"] == 22
    assert c.stats.cache_hits == 1 and c.stats.prompt_tokens == 22 and c.stats.cached_prompt_tokens == 22
    c.close()
    for f in tmp_path.iterdir():  # the database and any WAL/SHM files
        assert KEY.encode() not in f.read_bytes(), f


def test_gives_up_after_max_retries_and_does_not_cache(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("BACKTEST_TEST_API_KEY", KEY)
    ep = endpoint([(503, {})] * 3)
    c = client(ep.url, tmp_path, max_retries=2)
    with pytest.raises(LLMError, match="after 3 attempt"):
        c.chat(MSG, schema=SCHEMA)
    assert c.stats.failures == 1 and len(c.cache) == 0
    assert KEY not in str(c.stats.as_dict())


def test_tokens_of_unusable_answers_are_reported_with_the_failure(endpoint, tmp_path, monkeypatch):
    """A call that fails after answers that came back unusable still spent their tokens: LLMError.usage has them,
    and an LLM judge's failed judgment records them (found on a clean-clone CI run: a truncated answer four times,
    and the judgment said 0 tokens)."""
    from backtest.core.records import RetrievedDocument
    from backtest.core.workspace import Workspace
    from backtest.judge import get_judge
    from tests.submission_helpers import question_record

    monkeypatch.setenv("BACKTEST_TEST_API_KEY", KEY)
    ep = endpoint(["badjson", (503, {}), "badjson"])
    with pytest.raises(LLMError) as info:
        client(ep.url, tmp_path, max_retries=2).chat(MSG, schema=SCHEMA)
    assert info.value.usage == {"prompt_tokens": 22, "completion_tokens": 10}

    prompt = Path(__file__).resolve().parent.parent / "judges" / "prompts" / "outcome-premise-v2.md"
    cfg = tmp_path / "j.toml"
    cfg.write_text(
        f'kind = "llm"\nname = "scripted"\nbase_url = "{ep.url}"\nmodel = "m"\napi_key_env = "BACKTEST_TEST_API_KEY"\n'
        f'prompt = "{prompt.as_posix()}"\nmax_retries = 1\nbackoff_s = 0.0\n'
        f'cache = "{(tmp_path / "j.sqlite").as_posix()}"\n'
    )
    ep.script[:] = ["badjson", "badjson"]
    judge = get_judge(str(cfg), Workspace(tmp_path))
    q = question_record("Is WASP-39 b's SO2 photochemical?")
    doc = RetrievedDocument(
        rank=1, id="2511.00001", score=0.9, published="2025-11-05", title="SO2", abstract="We detect SO2."
    )
    j = judge.judge(q, [doc])
    assert j.outcome == "not_addressed" and j.model_dump()["judge_failed"] is True
    assert j.tokens == {"prompt_tokens": 22, "completion_tokens": 10}


def test_client_errors_are_not_retried(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("BACKTEST_TEST_API_KEY", KEY)
    ep = endpoint([(401, {})])
    with pytest.raises(LLMError, match="HTTP 401") as info:
        client(ep.url, tmp_path).chat(MSG)
    assert len(ep.requests) == 1 and KEY not in str(info.value)


def test_timeout_is_retried(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("BACKTEST_TEST_API_KEY", KEY)
    ep = endpoint(delay=0.0)
    slow = endpoint(delay=2.0)
    c = LLMClient(LLMSettings(base_url=slow.url, model="m", timeout_s=0.3, max_retries=1), sleep=lambda s: None)
    with pytest.raises(LLMError, match="timed out"):
        c.chat(MSG)
    assert c.stats.retry_reasons == {"timeout": 1}
    assert ep.requests == []


def test_missing_key_variable_is_bad_input(endpoint, tmp_path, monkeypatch):
    from backtest.core.errors import BadInput

    monkeypatch.delenv("BACKTEST_TEST_API_KEY", raising=False)
    ep = endpoint()
    with pytest.raises(BadInput, match="BACKTEST_TEST_API_KEY"):
        client(ep.url, tmp_path).chat(MSG)
    assert ep.requests == []


def test_cache_key_covers_answer_inputs_only(tmp_path, monkeypatch):
    base = LLMClient(
        LLMSettings(base_url="http://h:1", model="m", api_key_env="BACKTEST_A_API_KEY", timeout_s=5, concurrency=1)
    )
    key = base.cache_key(MSG, SCHEMA)
    same = [
        LLMSettings(
            base_url="http://h:1/",
            model="m",
            api_key_env="BACKTEST_B_API_KEY",
            timeout_s=99,
            concurrency=8,
            max_retries=0,
        )
    ]
    differ = [
        LLMSettings(base_url="http://h:1", model="m2"),
        LLMSettings(base_url="http://h:1", model="m", temperature=0.5),
        LLMSettings(base_url="http://h:1", model="m", max_tokens=9),
        LLMSettings(base_url="http://h:2", model="m"),
        LLMSettings(base_url="http://h:1", model="m", seed=1),
    ]
    assert all(LLMClient(s).cache_key(MSG, SCHEMA) == key for s in same)
    assert len({LLMClient(s).cache_key(MSG, SCHEMA) for s in differ} | {key}) == len(differ) + 1
    assert base.cache_key([{"role": "user", "content": "hello!"}], SCHEMA) != key
    assert base.cache_key(MSG, {"type": "object", "required": ["x"]}) != key
    assert base.cache_key(MSG, SCHEMA, key_extra={"prompt_sha256": "x"}) != key


def test_chat_many_keeps_order_and_bounds_concurrency(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("BACKTEST_TEST_API_KEY", KEY)
    ep = endpoint(delay=0.2)
    c = client(ep.url, tmp_path, concurrency=2)
    reqs = [ChatRequest(messages=({"role": "user", "content": f"q{i}"},), schema=SCHEMA) for i in range(6)]
    out = c.chat_many(reqs)
    assert [r.parsed["echo"] for r in out] == [f"q{i}" for i in range(6)]
    assert ep.max_in_flight == 2


def test_retry_after_forms():
    assert _retry_after_seconds("3") == 3.0
    assert _retry_after_seconds(None) is None and _retry_after_seconds("soon") is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 20 < _retry_after_seconds(future) <= 30


def test_a_per_call_seed_reaches_the_body_and_the_cache_key():
    """ChatRequest.seed / chat(seed=) override the settings' seed in the request and in the cache key,
    so sampled calls with different seeds are cached apart and a given seed is one cache entry."""
    client = LLMClient(LLMSettings(base_url="http://h:1", model="m", temperature=0.8, seed=0))
    msgs = [{"role": "user", "content": "q"}]
    assert client.request_body(msgs)["seed"] == 0 and client.request_body(msgs, seed=7)["seed"] == 7
    keys = {client.cache_key(msgs)} | {
        sha256_text(canonical_json(client.key_material(msgs, None, "answer", None, seed))) for seed in (7, 8)
    }
    assert len(keys) == 3
    assert ChatRequest(messages=tuple(msgs), seed=5).seed == 5
