"""A small OpenAI-compatible chat server on 127.0.0.1 for tests that need an endpoint's behaviour, not a model's.

It answers every chat completion with a valid judge answer (``not_addressed``, no evidence) and reports the
token usage it is told to, so cost and counting can be checked exactly. Real HTTP (``http.server`` in a
thread); a real model is ``tests/llm_server.py``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = {"outcome": "not_addressed", "premise_status": "still_plausible", "evidence": [], "rationale": "r"}


class StubServer(ThreadingHTTPServer):
    """The running stub: ``url`` to put in a judge config, ``requests`` answered so far (any method, any path),
    ``bodies`` the JSON body of each chat request and ``keys`` its Authorization header (or None); ``shutdown()``
    it."""

    requests = 0
    bodies: list[dict] = []
    keys: list[str | None] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def usage_stub(
    prompt_tokens: int, completion_tokens: int = 60, bad_first: bool = False, delay_s: float = 0.0
) -> StubServer:
    """Start a stub answering with ``prompt_tokens``/``completion_tokens`` usage; with ``bad_first`` the first
    answer to each distinct request is not JSON (billed all the same, then retried); ``delay_s`` per answer."""
    seen: set[bytes] = set()
    lock = threading.Lock()

    class Stub(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - counted, so a test can say that nothing at all reached the stub
            with lock:
                server.requests += 1
            send_json(self, 404, "{}")

        def do_POST(self):  # noqa: N802 - http.server's naming
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                first = raw not in seen
                seen.add(raw)
                server.requests += 1
                server.bodies.append(json.loads(raw or b"{}"))
                server.keys.append(self.headers.get("Authorization"))
            time.sleep(delay_s)
            content = "not json" if bad_first and first else json.dumps(ANSWER)
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            body = json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": usage})
            send_json(self, 200, body)

        def log_message(self, *args):
            pass

    server = StubServer(("127.0.0.1", 0), Stub)
    server.bodies, server.keys = [], []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def send_json(handler: BaseHTTPRequestHandler, status: int, body: str) -> None:
    """Answer a request with a JSON ``body`` and ``status`` (for every test server speaking the chat API)."""
    data = body.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def stub_judge_config(path, server: StubServer, name: str, prompt, extra: str = "") -> None:
    """Write an LLM judge config at ``path`` for the stub (1 retry, no backoff to speak of), plus ``extra`` lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'kind = "llm"\nname = "{name}"\nbase_url = "{server.url}"\n'
        f'model = "stub-model"\nmax_tokens = 200\nmax_retries = 1\nbackoff_s = 0.01\nconcurrency = 1\n'
        f'cache = ".cache/{name}.sqlite"\nprompt = "{prompt}"\n{extra}'
    )
