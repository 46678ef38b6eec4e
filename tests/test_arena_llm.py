"""The LLM pairwise judge and rubric over the shared client, against a local OpenAI-compatible stub.

The stub plays an honest but position-blind judge: it prefers the output whose text
says "strong", and it checks that every request carries the json_schema answer format.
A real-model run uses the same code with ``base_url`` pointed at llama.cpp or a vendor.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from backtest.arena.contexts import ArenaContext, ArenaOutput
from backtest.arena.pairwise import get_pairwise_judge, judge_contexts
from backtest.arena.rubric import get_rubric
from backtest.arena.run import run_arena


class Handler(BaseHTTPRequestHandler):
    calls: list[dict] = []

    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.calls.append(body)
        fmt = body["response_format"]["json_schema"]
        user = body["messages"][-1]["content"]
        if fmt["name"] == "pairwise_verdict":
            a = user.split("Output A:\n", 1)[1].split("\n\nOutput B:", 1)[0]
            b = user.split("Output B:\n", 1)[1]
            verdict = (
                "A>B"
                if "strong" in a and "strong" not in b
                else "B>A"
                if "strong" in b and "strong" not in a
                else "A=B"
            )
            answer = {"rationale": "stub", "verdict": verdict}
        elif fmt["name"] == "output_scores":
            answer = {"grounding": 4, "insight": 3, "justification": 2}
        else:
            answer = {"breadth": 5, "distinctness": 4, "utility": 3}
        payload = {
            "choices": [{"message": {"content": json.dumps(answer)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def stub_config(tmp_path, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Handler.calls = []
    monkeypatch.setenv("BACKTEST_HOME", str(tmp_path))
    config = tmp_path / "judges" / "stub.toml"
    config.parent.mkdir()
    config.write_text(
        f'kind = "llm"\nbase_url = "http://127.0.0.1:{server.server_port}"\nmodel = "stub"\n'
        f'max_retries = 0\ncache = "{tmp_path / "cache.sqlite"}"\n'
    )
    yield config
    server.shutdown()
    server.server_close()


def contexts():
    names = {"s1": "a strong question {k}?", "s2": "a weak question {k}?", "s3": "another weak question {k}?"}
    return [
        ArenaContext(
            context_id=f"c{k}",
            text=f"Past literature {k}",
            outputs={s: ArenaOutput(system=s, output=t.format(k=k)) for s, t in names.items()},
        )
        for k in range(6)
    ]


def test_llm_pairwise_judge_both_orders_and_cache(stub_config, tmp_path):
    judge = get_pairwise_judge("stub", root=tmp_path)
    assert judge.info()["model"] == "stub" and judge.info()["prompt_sha256"]
    cases = judge_contexts(contexts(), judge)
    assert len(cases) == 18 and len(Handler.calls) == 36
    assert all(
        call["temperature"] == 0.0 and call["response_format"]["type"] == "json_schema" for call in Handler.calls
    )
    by_pair = {(c.system_a, c.system_b): c for c in cases if c.context_id == "c0"}
    assert by_pair[("s1", "s2")].share == 0.75 and by_pair[("s1", "s2")].consistent
    assert by_pair[("s2", "s3")].share == 0.5
    result = run_arena(contexts(), judge, n_boot=200, seed=0)
    assert len(Handler.calls) == 36  # every answer came from the cache the second time
    assert result["btd"]["ordering"][0] == "s1" and result["judge"]["kind"] == "llm"


def test_llm_rubric(stub_config):
    rubric = get_rubric("llm", config=stub_config)
    ctx = contexts()[0]
    scores = rubric.score_output(ctx, ctx.outputs["s1"])
    assert (scores.grounding, scores.insight, scores.justification) == (4.0, 3.0, 2.0) and scores.q_pair == 3.0
    one = rubric.score_set([ctx.outputs["s1"]])
    assert one.distinctness is None and one.q_set == 4.0  # (b + u) / 2
    many = rubric.score_set(list(ctx.outputs.values()))
    assert many.q_set == 4.0 and many.size == 3


@pytest.mark.slow
@pytest.mark.llm
def test_arena_and_llm_rule_with_the_real_local_server(llm_server, cli, tmp_path, monkeypatch):
    """Plumbing against llama.cpp + Gemma 3 270M: the verdicts' quality does not matter, their form does."""
    import backtest.text.equivalence_llm  # noqa: F401
    from backtest.text.equivalence import get_rule

    from .llm_server import LLM_MODEL

    monkeypatch.setenv("BACKTEST_HOME", str(tmp_path))
    config = tmp_path / "local.toml"
    config.write_text(f'kind = "llm"\nbase_url = "{llm_server}"\nmodel = "{LLM_MODEL}"\nmax_tokens = 120\n')
    rows = []
    for k in range(2):
        for system, text in (
            ("x", f"Does WASP-{k + 10} b have water vapour?"),
            ("y", f"Why are hot Jupiters inflated {k}?"),
            ("z", f"What limits transit timing precision {k}?"),
        ):
            rows.append({"context": f"Exoplanet atmospheres, case {k}", "system": system, "output": text})
    path = tmp_path / "ctx.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli(
        [
            "arena",
            "--contexts",
            path,
            "--judge",
            config,
            "--bootstrap",
            "200",
            "--rubric",
            "none",
            "--out",
            tmp_path / "run",
            "--json",
        ],
        root=tmp_path,
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["n_cases"] == 6 and data["n_judgments"] == 12 and data["judge"]["model"] == LLM_MODEL
    cases = [json.loads(line) for line in (tmp_path / "run" / "cases.jsonl").read_text().splitlines()]
    assert all(c["verdict_ab"] in ("A>>B", "A>B", "A=B", "B>A", "B>>A") for c in cases)
    rule = get_rule("llm", config=config, prefilter=0)
    sims = rule.similarity_matrix([r["output"] for r in rows[:3]])
    assert sims.shape == (3, 3) and set(np.unique(sims)) <= {0.0, 1 / 3, 2 / 3, 1.0}
