"""A key is never written anywhere, even when the endpoint quotes it back.

A real HTTP server on 127.0.0.1 (``http.server`` in a thread) answers every chat request
with the request's own headers: as an HTTP 400 body (a non-retryable error), inside a
200 chat completion whose content is not a valid answer (retried, then failed), or as the key
written with JSON escapes inside the rationale of a valid answer (decoding would restore it). The real
``backtest score`` runs an LLM judge against it on a real frozen set; afterwards no file
under the workspace — judgments, metrics, reports, RUN.json, the LLM cache — and nothing
printed holds the key.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .conftest import frozen_copy
from .stub_llm import send_json

KEY = "sk-test-SECRET123-do-not-write"
KEY_ENV = "BACKTEST_ECHO_API_KEY"  # the variable the echo judge reads its key from
PROMPT = Path(__file__).resolve().parent.parent / "judges" / "prompts" / "outcome-premise-compact-v2.md"
INSTANCE = "astro-2025-ep"


def _echo_server(mode: str):
    class Echo(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            # the Authorization header first, so that it falls inside any prefix of the body an error message keeps
            echoed = "\n".join(
                f"{k}: {v}" for k, v in sorted(self.headers.items(), key=lambda kv: kv[0] != "Authorization")
            )
            if mode == "400":
                body, status = json.dumps({"error": {"message": f"bad request; you sent:\n{echoed}"}}), 400
            elif mode == "200-escaped":  # a valid answer quoting the key with JSON escapes: decoding restores it
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                escaped = "".join(f"\\u{ord(c):04x}" for c in key)
                content = (
                    '{"outcome": "not_addressed", "premise_status": "still_plausible", "evidence": [], '
                    f'"rationale": "the key is {escaped}"}}'
                )
                body = json.dumps(
                    {
                        "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 7},
                    }
                )
                status = 200
            else:
                body, status = (
                    json.dumps(
                        {
                            "choices": [
                                {"message": {"content": f"not json, headers were {echoed}"}, "finish_reason": "stop"}
                            ],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 7},
                        }
                    ),
                    200,
                )
            send_json(self, status, body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def echo_judge_config(ws, server, mode: str) -> Path:
    """judges/echo-MODE.toml: an LLM judge on the echo server whose key is read from $KEY_ENV."""
    config = ws.judges / f"echo-{mode}.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'kind = "llm"\nbase_url = "http://127.0.0.1:{server.server_address[1]}"\nmodel = "echo"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_retries = 1\nbackoff_s = 0.01\nconcurrency = 1\n'
        f'cache = ".cache/echo-{mode}.sqlite"\nprompt = "{PROMPT}"\n'
    )
    return config


@pytest.fixture(scope="module")
def frozen_set(astro_ep_ws, tmp_path_factory):
    ws, frozen, _ = frozen_copy(astro_ep_ws, tmp_path_factory.mktemp("secrets") / "ws", "random_claims", 3, 1)
    return ws, frozen


@pytest.mark.parametrize("mode", ["400", "200-echo", "200-escaped"])
def test_key_quoted_back_by_the_endpoint_is_never_written(frozen_set, cli, monkeypatch, mode):
    ws, frozen = frozen_set
    server = _echo_server(mode)
    try:
        config = echo_judge_config(ws, server, mode)
        monkeypatch.setenv(KEY_ENV, KEY)
        code, out, err = cli(["score", str(frozen), "--judge", str(config), "--run-id", f"echo-{mode}"], root=ws.root)
    finally:
        server.shutdown()
    assert KEY not in out + err
    run_dir = ws.results / INSTANCE / "random_claims" / f"echo-{mode}"
    judgments = (
        (run_dir / "judgments.jsonl").read_text()
        if (run_dir / "judgments.jsonl").is_file()
        else (run_dir / "judgments.partial.jsonl").read_text()
    )
    if mode == "200-escaped":  # a usable answer: judged, with the key (decoded) redacted from the rationale
        assert code == 0, err
        assert "judge_failed" not in judgments and "the key is [redacted]" in judgments
        assert "\\u0073\\u006b" not in judgments
    else:
        assert "judge_failed" in judgments
    if mode == "400":
        assert "[redacted]" in judgments  # the endpoint's error text is kept, the key in it is not
    leaked = [str(p) for p in ws.root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
