"""End-to-end scoring on real data: the offline judge, SIGKILL-and-resume, the real LLM server, faults.

Everything runs on a copy of the small real instance ``astro-2025-ep`` (conftest), with a
demo submission made from claims in its past corpus, frozen by the real freeze code.
The LLM tests start llama-server with Gemma 3 270M (tests/llm_server.py).
"""

from __future__ import annotations

import html
import http.server
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.seal import sha256_file
from backtest.core.workspace import Workspace
from backtest.corpus.instance import load_instance, open_past_corpus
from backtest.scoring.runseal import write_seal
from backtest.scoring.score import score_frozen
from backtest.studies.demo import make_demo_submission
from backtest.submit.freeze import freeze_submission
from tests.browser import chromium, run_chromium
from tests.conftest import REPO, assert_key_written_nowhere, run_cli
from tests.llm_server import COMPACT_PROMPT, LLM_MODEL, judge_config

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("shared_index_cache")]

INSTANCE = "astro-2025-ep"
API_KEY = "sk-fake-test-key-DO-NOT-WRITE-7f3a9c"


@pytest.fixture(scope="module")
def score_ws(astro_ep_ws, tmp_path_factory):
    """A private copy of astro-2025-ep with two frozen demo sets: 5 questions and 3 questions."""
    root = tmp_path_factory.mktemp("score") / "ws"
    shutil.copytree(astro_ep_ws.root, root)
    ws = Workspace(root)
    past = open_past_corpus(load_instance(INSTANCE, ws), ws)
    five = freeze_submission(make_demo_submission(past, root / "submissions" / "five", n=5, seed=3), INSTANCE, ws)
    three = freeze_submission(make_demo_submission(past, root / "submissions" / "three", n=3, seed=11), INSTANCE, ws)
    return ws, five, three


def judgment_bytes(run_dir: Path) -> bytes:
    return (run_dir / "judgments.jsonl").read_bytes()


# --------------------------------------------------------------------------- offline pipeline


def test_offline_score_writes_a_complete_valid_run(score_ws, capsys):
    ws, five, _ = score_ws
    code, out, err = run_cli(["score", str(five), "--run-id", "offline-a", "--json"], root=ws.root, capsys=capsys)
    assert code == 0, err
    summary = json.loads(out)
    run_dir = Path(summary["run_dir"])
    assert summary["status"] == "complete" and summary["n_questions"] == 5 and summary["judged_now"] == 5
    for name in ("RUN.json", "retrieval.jsonl", "judgments.jsonl", "metrics.json", "report.md", "report.html"):
        assert (run_dir / name).is_file(), name
    assert not (run_dir / "judgments.partial.jsonl").exists()
    run = read_json(run_dir / "RUN.json")
    assert run["status"] == "complete" and run["valid"] is True and run["system"] == "demo_claims"
    assert {c["name"] for c in run["leakage"]} >= {"citations_shown", "retrieved_in_future", "integrity"}
    assert all(c["status"] == "passed" for c in run["leakage"])
    assert run["judge"]["name"] == "offline" and len(run["judge"]["prompt_sha256"]) == 64
    judgments = [o for _, o in iter_jsonl(run_dir / "judgments.jsonl")]
    retrievals = [o for _, o in iter_jsonl(run_dir / "retrieval.jsonl")]
    questions = [o["question_id"] for _, o in iter_jsonl(five / "questions.jsonl")]
    assert [j["question_id"] for j in judgments] == [r["question_id"] for r in retrievals] == questions
    for j, r in zip(judgments, retrievals):
        assert set(j["supporting_ids"]) <= {d["id"] for d in r["documents"]}
        assert j["judge"]["config_sha256"] == run["judge"]["config_sha256"]
    metrics = read_json(run_dir / "metrics.json")
    assert abs(sum(v["rate"] for v in metrics["outcomes"].values()) - 1) < 1e-9
    assert metrics["mean_lead_time_years"] is None and metrics["valid"] is True
    page = (run_dir / "report.html").read_text()
    assert page.count("src='data:image/png;base64,") == 3 and "Clopper" in page
    assert f"<p class='note' id='judge-validity'>{html.escape(summary['judge_validity'])}</p>" in page
    assert all(q in page for q in questions)

    # a rerun of a complete run does nothing and changes nothing
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    code, out, _ = run_cli(["score", str(five), "--run-id", "offline-a", "--json"], root=ws.root, capsys=capsys)
    assert code == 0 and json.loads(out)["status"] == "already complete"
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before

    # the default run id is derived from the settings, and reuses the sibling's retrieval
    code, out, _ = run_cli(["score", str(five), "--json"], root=ws.root, capsys=capsys)
    default = json.loads(out)
    assert code == 0 and default["run_id"].startswith("offline-") and default["run_id"] != "offline-a"
    assert judgment_bytes(Path(default["run_dir"])) == judgment_bytes(run_dir)
    assert (Path(default["run_dir"]) / "retrieval.jsonl").read_bytes() == (run_dir / "retrieval.jsonl").read_bytes()

    # `backtest report` redraws the same report from the run's files
    (run_dir / "report.html").unlink()
    code, _, err = run_cli(["report", str(run_dir)], root=ws.root, capsys=capsys)
    assert code == 0, err
    assert (run_dir / "report.html").read_text().count("data:image/png;base64,") == 3


# Every file a run writes, and the model it is read through (report.md/.html are renderings, not records).
RUN_FILE_MODELS = {
    "RUN.json": "run",
    "metrics.json": "metrics",
    "judgments.jsonl": "judgment",
    "retrieval.jsonl": "retrieval",
    "contamination.json": "contamination",  # the contamination probe (backtest.validity.contamination)
    "SEAL.json": "run-seal",  # the finished run's seal (backtest.scoring.runseal)
}
RENDERINGS = {"report.md", "report.html"}


def test_every_output_file_of_a_run_loads_through_its_model(score_ws, capsys):
    from backtest.cli.schema import ALL_SCHEMAS
    from backtest.core.records import parse_record, read_output
    from backtest.scoring.outputs import Metrics

    ws, five, _ = score_ws
    code, out, err = run_cli(["score", str(five), "--run-id", "typed", "--json"], root=ws.root, capsys=capsys)
    assert code == 0, err
    run_dir = Path(json.loads(out)["run_dir"])
    files = sorted(p.name for p in run_dir.iterdir())
    assert set(files) - RENDERINGS == set(RUN_FILE_MODELS), files  # a new output file needs a model here
    for name, kind in RUN_FILE_MODELS.items():
        model = ALL_SCHEMAS[kind]
        if name.endswith(".jsonl"):
            rows = [parse_record(model, row, f"{name}:{n}") for n, row in iter_jsonl(run_dir / name)]
            assert len(rows) == 5
        else:
            parse_record(model, read_json(run_dir / name), name)
        code, schema, _ = run_cli(["schema", kind], root=ws.root, capsys=capsys)
        assert code == 0 and json.loads(schema)["title"] == model.__name__
    # a reader refuses a version it does not know, naming the file, in one line
    metrics = read_json(run_dir / "metrics.json")
    (run_dir / "metrics.json").write_text(json.dumps({**metrics, "schema_version": "9"}))
    with pytest.raises(BadInput, match=r"metrics.json: schema_version: .*unknown schema_version '9'"):
        read_output(Metrics, run_dir / "metrics.json")
    code, _, err = run_cli(["compare", str(run_dir), str(run_dir)], root=ws.root, capsys=capsys)
    assert code == 1 and "metrics.json" in err and "seal" in err  # an edited run differs from its seal first
    write_seal(run_dir, run_dir.name)  # sealed as edited: the unknown version itself is what is refused
    code, _, err = run_cli(["compare", str(run_dir), str(run_dir)], root=ws.root, capsys=capsys)
    assert code == 2 and "unknown schema_version '9'" in err and len(err.strip().splitlines()) == 1


def test_score_refuses_unfrozen_tampered_and_clashing_runs(score_ws, tmp_path, capsys):
    ws, five, _ = score_ws
    code, _, err = run_cli(["score", str(ws.root / "submissions" / "five")], root=ws.root, capsys=capsys)
    assert code in (1, 2) and "frozen" in err and "Traceback" not in err
    with pytest.raises(CheckFailed, match="not a frozen, intact set"):
        copy = tmp_path / "v1"
        shutil.copytree(five, copy)
        data = (copy / "questions.jsonl").read_bytes()
        (copy / "questions.jsonl").write_bytes(data.replace(b"Will later", b"Will LATER", 1))
        score_frozen(copy, ws)
    # a run folder is never reused for other settings
    cfg = tmp_path / "other.toml"
    cfg.write_text('kind = "offline-cues-v1"\nname = "offline"\nengage_doc_sim = 0.5\n')
    with pytest.raises(BadInput, match="never overwritten"):
        score_frozen(five, ws, judge_spec=str(cfg), run_id="offline-a")


# --------------------------------------------------------------------------- SIGKILL and resume


def _score_cmd(ws: Workspace, frozen: Path, run_id: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from backtest.cli.main import main; main()",
        "--root",
        str(ws.root),
        "score",
        str(frozen),
        "--run-id",
        run_id,
        "--no-progress",
    ]


@pytest.mark.timeout(3600)
def test_sigkill_at_random_moments_then_resume_is_byte_identical(score_ws):
    """Kill `backtest score` 10 times at random moments; every run resumed to the end equals the uninterrupted one."""
    ws, _, three = score_ws
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    ref = subprocess.run(_score_cmd(ws, three, "ref"), env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - start
    assert ref.returncode == 0, ref.stderr
    ref_dir = ws.results / INSTANCE / "demo_claims" / "ref"
    reference = judgment_bytes(ref_dir)
    assert reference.count(b"\n") == 3

    rng = random.Random(20261129)
    kills, finished, seen_lines = 0, [], []
    serial = 0
    run_id = f"kill{serial}"
    while kills < 10:
        proc = subprocess.Popen(
            _score_cmd(ws, three, run_id), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            _, err = proc.communicate(timeout=rng.uniform(0.5, wall * 1.1))
            assert proc.returncode == 0, err.decode()
            finished.append(run_id)  # completed before the kill: start a fresh run for the next kills
            serial += 1
            run_id = f"kill{serial}"
        except subprocess.TimeoutExpired:
            partial = ws.results / INSTANCE / "demo_claims" / run_id / "judgments.partial.jsonl"
            seen_lines.append(partial.read_bytes().count(b"\n") if partial.is_file() else -1)
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
            kills += 1
    last = subprocess.run(_score_cmd(ws, three, run_id), env=env, capture_output=True, text=True, timeout=900)
    assert last.returncode == 0, last.stderr
    finished.append(run_id)
    for rid in finished:
        run_dir = ws.results / INSTANCE / "demo_claims" / rid
        assert judgment_bytes(run_dir) == reference, rid
        assert read_json(run_dir / "RUN.json")["status"] == "complete"
        assert not (run_dir / "judgments.partial.jsonl").exists()
    print(f"kill test: reference run {wall:.1f} s; 10 kills with partial lines at kill {seen_lines}; runs {finished}")


def test_torn_partial_line_is_cut_and_rejudged(score_ws):
    """A write torn by SIGKILL leaves half a line: resume cuts it and judges that question again."""
    from backtest.core.records import Judgment
    from backtest.scoring.judging import PARTIAL, partial_line, recover_partial

    ws, five, _ = score_ws
    ref_dir = ws.results / INSTANCE / "demo_claims" / "offline-a"
    if not (ref_dir / "judgments.jsonl").is_file():
        score_frozen(five, ws, run_id="offline-a")
    lines = judgment_bytes(ref_dir).splitlines(keepends=True)
    seed = read_json(ref_dir / "RUN.json")["settings_sha256"]
    chained, chain = [], seed
    for line in lines:
        raw, chain = partial_line(Judgment.model_validate_json(line), chain)
        chained.append(raw)
    run_dir = ws.results / INSTANCE / "demo_claims" / "torn"
    run_dir.mkdir(parents=True)
    shutil.copy(ref_dir / "retrieval.jsonl", run_dir / "retrieval.jsonl")
    (run_dir / PARTIAL).write_bytes(chained[0] + chained[1] + chained[2][: len(chained[2]) // 2])
    qids = [json.loads(x)["question_id"] for x in lines]
    assert [j.question_id for j in recover_partial(run_dir / PARTIAL, qids, seed)[0]] == qids[:2]
    assert (run_dir / PARTIAL).read_bytes() == chained[0] + chained[1]
    (run_dir / PARTIAL).write_bytes(chained[0] + chained[2])  # out of order: cut at the first misplaced line
    assert len(recover_partial(run_dir / PARTIAL, qids, seed)[0]) == 1
    result = score_frozen(five, ws, run_id="torn")
    assert result.judged_now == 4 and judgment_bytes(run_dir) == b"".join(lines)


def test_edited_partial_line_is_rejudged_not_kept(score_ws):
    """An outcome edited in the partial file (its chain hash no longer matches) is judged again on resume.

    Before the partial lines were chained, the edit survived the resume and the run was valid."""
    from backtest.core.records import Judgment
    from backtest.scoring.judging import PARTIAL, partial_line

    ws, five, _ = score_ws
    ref_dir = ws.results / INSTANCE / "demo_claims" / "offline-a"
    if not (ref_dir / "judgments.jsonl").is_file():
        score_frozen(five, ws, run_id="offline-a")
    lines = judgment_bytes(ref_dir).splitlines(keepends=True)
    seed = read_json(ref_dir / "RUN.json")["settings_sha256"]
    chained, chain = [], seed
    for line in lines[:3]:
        raw, chain = partial_line(Judgment.model_validate_json(line), chain)
        chained.append(raw)
    first = json.loads(lines[0])
    forged = {**first, "outcome": "answered" if first["outcome"] != "answered" else "posed_but_open"}
    edited = (
        chained[0].split(b" ", 1)[0] + b" " + json.dumps(forged, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    )
    run_dir = ws.results / INSTANCE / "demo_claims" / "edited"
    run_dir.mkdir(parents=True)
    shutil.copy(ref_dir / "retrieval.jsonl", run_dir / "retrieval.jsonl")
    (run_dir / PARTIAL).write_bytes(edited + chained[1] + chained[2])
    result = score_frozen(five, ws, run_id="edited")
    assert result.judged_now == 5  # the broken chain at line 1 sends every question back to the judge
    assert judgment_bytes(run_dir) == b"".join(lines)


# --------------------------------------------------------------------------- the real LLM server


@pytest.mark.llm
@pytest.mark.timeout(3600)  # a 270M model on a loaded 2-core CPU took 22 min here
def test_llm_judge_end_to_end_then_rerun_is_all_cache_hits(score_ws, llm_server, tmp_path, monkeypatch, capsys):
    ws, five, _ = score_ws
    monkeypatch.setenv("BACKTEST_TEST_LLM_API_KEY", API_KEY)
    cfg = judge_config(tmp_path / "gemma-test.toml", llm_server, ws.cache / "llm-e2e.sqlite")
    code, out, err = run_cli(
        ["score", str(five), "--judge", str(cfg), "--run-id", "llm-a", "--json"], root=ws.root, capsys=capsys
    )
    assert code == 0, err
    first = json.loads(out)
    assert first["status"] == "complete" and first["judged_now"] == 5
    assert first["http_calls"] >= 5 and first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    run_dir = Path(first["run_dir"])
    judgments = [o for _, o in iter_jsonl(run_dir / "judgments.jsonl")]
    retrievals = {o["question_id"]: o for _, o in iter_jsonl(run_dir / "retrieval.jsonl")}
    assert len(judgments) == 5
    for j in judgments:
        assert j["judge"]["name"] == "gemma-test" and j["judge"]["model"] == LLM_MODEL
        assert j["judge"]["prompt_sha256"] == sha256_file(COMPACT_PROMPT) and j["judge"][
            "config_sha256"
        ] == sha256_file(cfg)
        assert j["tokens"]["prompt_tokens"] > 0
        shown = [d["id"] for d in retrievals[j["question_id"]]["documents"][:2]]
        assert set(j["supporting_ids"]) <= set(shown)
        assert j["outcome"] in ("answered", "partially_addressed", "posed_but_open", "not_addressed")
        # the model's own answer stands only when it obeys the constraints; otherwise it is flagged
        assert not (j["outcome"] != "not_addressed" and not j["supporting_ids"])
        if "raw_answer" in j:
            assert j["needs_review"]
    run = read_json(run_dir / "RUN.json")
    assert run["valid"] is True and run["tokens_total"]["prompt_tokens"] > 0

    code, out, err = run_cli(
        ["score", str(five), "--judge", str(cfg), "--run-id", "llm-b", "--json"], root=ws.root, capsys=capsys
    )
    assert code == 0, err
    second = json.loads(out)
    assert second["http_calls"] == 0 and second["cache_hits"] >= 5 and second["judged_now"] == 5
    assert judgment_bytes(Path(second["run_dir"])) == judgment_bytes(run_dir)
    assert assert_key_written_nowhere(API_KEY, ws.results, ws.cache) > 10
    print(
        f"llm e2e: {first['http_calls']} HTTP calls, {first['prompt_tokens']} prompt + {first['completion_tokens']} "
        f"completion tokens; rerun {second['http_calls']} calls, {second['cache_hits']} cache hits; "
        f"outcomes {[j['outcome'] for j in judgments]}, flagged {sum(bool(j['needs_review']) for j in judgments)}"
    )


def shown(question: str, prompt: str) -> bool:
    """Whether ``question`` is in ``prompt``, as itself or as the JSON string the judge quotes submitted text as
    (a backslash or a quote is escaped there)."""
    return question in prompt or json.dumps(question, ensure_ascii=False)[1:-1] in prompt


class FaultProxy:
    """An HTTP proxy in front of the real server that injects faults into chosen requests.

    ``plan`` lists the fault for each incoming request in order ("500", "429", "hang",
    "badjson", "pass"); questions whose text contains ``foreign_always`` get a citation of
    a document that was not shown in every answer, ``foreign_once`` only in the first
    answer (not in the constraint retry). Upstream answers are remembered by request body,
    so a repeated request (a retry) is served again without another generation.
    """

    def __init__(
        self,
        upstream: str,
        plan: list[str],
        foreign_always: str = "",
        foreign_once: str = "",
        hang_s: float = 0.0,
        memo: dict | None = None,
    ):
        self.upstream, self.plan, self.hang_s = upstream, list(plan), hang_s
        self.foreign_always, self.foreign_once = foreign_always, foreign_once
        self.memo = memo if memo is not None else {}
        self.log: list[tuple[float, str]] = []
        self.upstream_calls = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body=b"", headers=None):
                try:
                    self.send_response(status)
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                with outer.lock:
                    fault = outer.plan.pop(0) if outer.plan else "pass"
                    outer.log.append((time.monotonic(), fault))
                if fault == "500":
                    return self._send(500, b'{"error": "injected"}')
                if fault == "429":
                    return self._send(429, b'{"error": "slow down"}', {"Retry-After": "1"})
                if fault == "hang":
                    time.sleep(outer.hang_s)
                    return self._send(504, b"")
                if raw not in outer.memo:
                    up = requests.post(
                        outer.upstream + self.path, data=raw, headers={"Content-Type": "application/json"}, timeout=1800
                    )
                    with outer.lock:
                        outer.upstream_calls += 1
                    outer.memo[raw] = (up.status_code, up.content)
                status, content = outer.memo[raw]
                data = json.loads(content)
                user = body["messages"][1]["content"]
                first_try = len(body["messages"]) == 2
                if fault == "badjson":
                    data["choices"][0]["message"]["content"] = '{"outcome": "answered", "evid'
                elif (outer.foreign_always and shown(outer.foreign_always, user)) or (
                    outer.foreign_once and shown(outer.foreign_once, user) and first_try
                ):
                    answer = json.loads(data["choices"][0]["message"]["content"])
                    answer["outcome"] = "answered"
                    answer["evidence"] = [{"id": "9999.99999", "relevance": "injected: not shown"}]
                    data["choices"][0]["message"]["content"] = json.dumps(answer)
                    with outer.lock:
                        outer.log.append((time.monotonic(), "foreign"))
                self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json"})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _judgments(run_dir: Path) -> dict[str, dict]:
    return {o["question_id"]: o for _, o in iter_jsonl(run_dir / "judgments.jsonl")}


@pytest.mark.llm
@pytest.mark.timeout(3600)
def test_llm_faults_end_retried_and_correct_or_flagged(score_ws, llm_server, tmp_path, monkeypatch):
    """500, 429 + Retry-After, invalid JSON, foreign citations, then a timeout: retried-and-correct or flagged."""
    from backtest.judge import get_judge

    ws, _, three = score_ws
    monkeypatch.setenv("BACKTEST_TEST_LLM_API_KEY", API_KEY)
    questions = [o for _, o in iter_jsonl(three / "questions.jsonl")]
    memo: dict = {}
    proxy = FaultProxy(
        llm_server,
        ["500", "429", "badjson"],
        foreign_always=questions[0]["question"],
        foreign_once=questions[1]["question"],
        memo=memo,
    )
    try:
        cfg = judge_config(
            tmp_path / "faulty.toml", proxy.url, ws.cache / "llm-faults.sqlite", concurrency=1, name="gemma-faulty"
        )
        judge = get_judge(str(cfg), ws)
        result = score_frozen(three, ws, run_id="llm-faults", judge=judge)
    finally:
        proxy.close()
    reasons = judge.stats()["retry_reasons"]
    assert reasons.get("http_500") == 1 and reasons.get("http_429") == 1 and reasons.get("invalid_json", 0) >= 1
    faults = [f for _, f in proxy.log if f != "foreign"]
    times = [t for t, f in proxy.log if f != "foreign"]
    i429 = faults.index("429")
    assert times[i429 + 1] - times[i429] >= 0.9  # Retry-After: 1 honoured
    judgments = _judgments(result.run_dir)
    assert len(judgments) == 3 and not any(j.get("judge_failed") for j in judgments.values())
    always, once = judgments[questions[0]["question_id"]], judgments[questions[1]["question_id"]]
    # persistent foreign citation: retried once with the error, still wrong -> flagged, the foreign id dropped
    assert always["constraint_retry"]["fixed"] is False
    assert any("not among the documents shown: 9999.99999" in r for r in always["needs_review"])
    assert "9999.99999" not in always["supporting_ids"]
    # one-time foreign citation: the retry with the error message fixed it (or whatever remains is flagged)
    assert "9999.99999" not in once["supporting_ids"]
    assert not any("9999.99999" in r for r in once["needs_review"])
    assert once["constraint_retry"]["after"] and once["constraint_retry"]["fixed"] == (not once.get("raw_answer"))
    for j in judgments.values():
        assert not (j["outcome"] != "not_addressed" and not j["supporting_ids"])
        if j.get("raw_answer"):
            assert j["needs_review"]
    assert read_json(result.run_dir / "RUN.json")["valid"] is True

    # a timeout: the first request hangs past the client's timeout, the retry succeeds
    hang = FaultProxy(
        llm_server,
        ["hang"],
        foreign_always=questions[0]["question"],
        foreign_once=questions[1]["question"],
        hang_s=6,
        memo=memo,
    )
    try:
        cfg2 = judge_config(
            tmp_path / "faulty2.toml",
            hang.url,
            ws.cache / "llm-faults-2.sqlite",
            concurrency=1,
            name="gemma-faulty",
            timeout_s=4,
        )
        judge2 = get_judge(str(cfg2), ws)
        result2 = score_frozen(three, ws, run_id="llm-faults-timeout", judge=judge2)
    finally:
        hang.close()
    assert judge2.stats()["retry_reasons"] == {"timeout": 1}
    again = _judgments(result2.run_dir)
    # the labels are the same; the tokens are what each run paid: the first run also paid for the unusable
    # (bad JSON) answer it retried, which the second never got
    strip = lambda j: {k: v for k, v in j.items() if k not in ("judge", "tokens")}  # noqa: E731 - config hash differs
    assert {q: strip(j) for q, j in again.items()} == {q: strip(j) for q, j in judgments.items()}
    paid = {q: sum(j["tokens"].values()) for q, j in judgments.items()}
    assert all(paid[q] >= sum(j["tokens"].values()) for q, j in again.items())
    assert sum(paid.values()) > sum(sum(j["tokens"].values()) for j in again.values())
    assert hang.upstream_calls == 0  # every answer came from the proxy's memory of the real server's answers
    assert assert_key_written_nowhere(API_KEY, ws.results, ws.cache) > 10
    print(
        f"fault test: retry reasons {reasons}; upstream generations {proxy.upstream_calls}; "
        f"flagged {[q for q, j in judgments.items() if j['needs_review']]}"
    )


# --------------------------------------------------------------------------- the report in a browser


def _near(pixels, rgb: tuple[int, int, int], tol: int = 12) -> int:
    """How many pixels lie within ``tol`` of ``rgb`` in every channel."""
    return sum(count for count, px in pixels if all(abs(a - b) <= tol for a, b in zip(px, rgb)))


def _hex(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_report_renders_in_headless_chromium(score_ws, tmp_path):
    """report.html opens in a real browser and its charts are drawn (their bar colours are on screen).

    Needs Debian's chromium (`make install-browser`, which `.ci/run` calls); skips without it.
    """
    chromium()
    from backtest.scoring.report import _COLORS, HIST_COLOR

    ws, five, _ = score_ws
    run_dir = ws.results / INSTANCE / "demo_claims" / "offline-a"
    if not (run_dir / "report.html").is_file():
        score_frozen(five, ws, run_id="offline-a")
    shot = tmp_path / "report.png"
    page = (run_dir / "report.html").as_uri()
    run_chromium(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,2400")
    assert shot.is_file() and shot.stat().st_size > 20000
    from PIL import Image

    metrics = json.loads((run_dir / "metrics.json").read_text())
    with Image.open(shot) as img:
        assert img.size == (1200, 2400)
        pixels = img.convert("RGB").getcolors(maxcolors=1 << 24)
    assert pixels is not None
    # the similarity histogram's bars, and the bar of the most frequent outcome, are painted
    assert _near(pixels, _hex(HIST_COLOR)) > 2000
    top_outcome = max(metrics["outcomes"], key=lambda k: metrics["outcomes"][k]["k"])
    assert _near(pixels, _hex(_COLORS[top_outcome])) > 1000, top_outcome
