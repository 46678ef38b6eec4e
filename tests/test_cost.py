"""The cost ledger: prices in judge configs, ``score --dry-run`` before any call, ``--max-cost`` that stops a run
cleanly and resumably, and tokens and cost per question and in total in RUN.json, the report and compare.

The dry run against OpenAI's config needs no key and makes no chat call. The budget test runs the real
local llama-server (Gemma 3 270M) with a made-up price, so the stop happens on real token counts; it also
checks that the dry run's token count, taken with the server's own tokenizer, is the prompt size the
server then reports for the same call.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.records import JudgeInfo, Judgment
from backtest.core.workspace import Workspace
from backtest.corpus.instance import load_instance, open_past_corpus
from backtest.llm.pricing import CallEstimate, Price, price_from_config
from backtest.scoring.cost import Ledger, run_cost
from backtest.studies.demo import make_demo_submission
from backtest.submit.freeze import freeze_submission
from tests.conftest import REPO, run_cli
from tests.llm_server import LLM_MODEL
from tests.stub_llm import stub_judge_config, usage_stub

INSTANCE = "astro-2025-ep"
API_KEY = "sk-fake-cost-test-key-NEVER-WRITTEN-51c2"


def test_price_table_is_read_and_checked():
    price = price_from_config({"price": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}}, "x.toml")
    assert price == Price(input_per_mtok=2.0, output_per_mtok=8.0, currency="USD")
    assert price.cost(1_000_000, 0) == pytest.approx(2.0) and price.cost(1000, 500) == pytest.approx(0.006)
    assert price_from_config({}, "x.toml") is None and price.batch_factor == 1.0
    for bad in (
        {"input_per_mtok": -1, "output_per_mtok": 1},
        {"input_per_mtok": 1},
        {"in": 1, "out": 2},
        {"input_per_mtok": 1, "output_per_mtok": 1, "batch_factor": 0},
    ):
        with pytest.raises(BadInput, match="x.toml: bad price"):
            price_from_config({"price": bad}, "x.toml")


def judgment(qid: str, prompt: int, completion: int) -> Judgment:
    return Judgment(
        question_id=qid,
        outcome="not_addressed",
        premise_status="untested",
        judge=JudgeInfo(name="j", model="m", protocol="p"),
        tokens={"prompt_tokens": prompt, "completion_tokens": completion},
    )


def test_ledger_admits_within_the_budget_counting_calls_in_flight():
    price = Price(input_per_mtok=1_000_000, output_per_mtok=2_000_000)  # 1 per prompt token, 2 per completion
    ledger = Ledger(price, limit=100.0)
    call = CallEstimate(prompt_tokens=20, max_completion_tokens=10, exact=True, cached=False)  # bound 40
    first = ledger.admit("q1", call)
    second = ledger.admit("q2", call)
    assert first == second == 40.0 and ledger.admit("q3", call) is None and ledger.stopped_at == "q3"
    assert ledger.admit("q4", CallEstimate(0, 0, True, cached=True)) == 0.0  # a cached answer costs nothing
    ledger.settle(first, judgment("q1", 20, 5), cached=False)  # spent 30 of the 40 reserved
    assert ledger.spent == pytest.approx(30.0) and ledger.reserved == pytest.approx(40.0)
    ledger.settle(0.0, judgment("q4", 20, 5), cached=True)
    assert ledger.spent == pytest.approx(30.0)
    assert Ledger(price).admit("q", call) == 0.0  # no limit: everything is admitted, only counted


def test_run_cost_per_question_and_total():
    price = Price(input_per_mtok=2.0, output_per_mtok=8.0, currency="USD")
    rows = [judgment("a", 1000, 100), judgment("b", 3000, 0)]
    cost = run_cost(rows, price, spent=0.001)
    assert [q.cost for q in cost.per_question] == [pytest.approx(0.0028), pytest.approx(0.006)]
    assert cost.total == pytest.approx(0.0088) and cost.prompt_tokens == 4000 and cost.priced
    unpriced = run_cost(rows, None)
    assert unpriced.total is None and unpriced.completion_tokens == 100 and not unpriced.priced


@pytest.fixture(scope="module")
def cost_ws(astro_ep_ws, tmp_path_factory):
    """A private copy of astro-2025-ep with a frozen demo set of 3 questions."""
    root = tmp_path_factory.mktemp("cost") / "ws"
    shutil.copytree(astro_ep_ws.root, root)
    ws = Workspace(root)
    past = open_past_corpus(load_instance(INSTANCE, ws), ws)
    frozen = freeze_submission(make_demo_submission(past, root / "submissions" / "three", n=3, seed=11), INSTANCE, ws)
    return ws, frozen


@pytest.mark.slow
def test_dry_run_prices_openai_without_a_key_and_writes_nothing(cost_ws, capsys, monkeypatch):
    ws, frozen = cost_ws
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = REPO / "judges" / "openai-gpt-4.1.toml"
    code, out, err = run_cli(["score", frozen, "--judge", config, "--dry-run", "--json"], root=ws.root, capsys=capsys)
    assert code == 0, err
    est = json.loads(out)
    assert est["n_questions"] == 3 and est["n_calls"] == 3 and est["n_cached"] == 0
    assert est["priced"] and est["currency"] == "USD" and est["input_per_mtok"] == 2.0
    assert est["prompt_tokens_exact"] is False  # OpenAI offers no tokenizer endpoint: estimated, and said so
    assert est["prompt_tokens"] > 3 * 200 and est["max_completion_tokens"] == 3 * 800
    assert est["batch_factor"] == 0.5 and est["cost_at_most_batch"] == pytest.approx(est["cost_at_most"] / 2, abs=1e-6)
    assert est["cost_at_most"] == pytest.approx(
        (est["prompt_tokens"] * 2.0 + est["max_completion_tokens"] * 8.0) / 1e6, abs=1e-6
    )
    assert not (ws.results / INSTANCE).exists() or not any((ws.results / INSTANCE).rglob("RUN.json"))
    code, out, err = run_cli(["score", frozen, "--judge", config, "--dry-run"], root=ws.root, capsys=capsys)
    assert code == 0 and "estimated from characters" in out and "through provider batch files" in out, out + err
    print(out)


def test_max_cost_needs_a_price_and_dry_run_refuses_a_budget(cost_ws, capsys):
    ws, frozen = cost_ws
    code, _, err = run_cli(["score", frozen, "--max-cost", "1"], root=ws.root, capsys=capsys)
    assert code == 2 and "needs prices" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["score", frozen, "--dry-run", "--max-cost", "1"], root=ws.root, capsys=capsys)
    assert code == 2 and "--dry-run estimates only" in err


def priced_config(path: Path, server: str, cache: Path) -> Path:
    """A compact Gemma judge config with a made-up price (so a few calls cost whole cents)."""
    prompt = REPO / "judges" / "prompts" / "outcome-premise-compact-v2.md"
    path.write_text(
        f'kind = "llm"\nname = "gemma-priced"\nbase_url = "{server}"\nmodel = "{LLM_MODEL}"\n'
        f'api_key_env = "BACKTEST_TEST_COST_API_KEY"\ntemperature = 0.0\nmax_tokens = 200\nseed = 0\n'
        f'concurrency = 1\ntimeout_s = 300\nmax_retries = 3\nprompt = "{prompt}"\nmax_doc_chars = 300\n'
        f'max_documents = 2\ncache = "{cache}"\n'
        'price = { input_per_mtok = 10000.0, output_per_mtok = 30000.0, currency = "EUR" }\n'
    )
    return path


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.timeout(2400)
def test_max_cost_stops_cleanly_then_resumes_and_the_ledger_adds_up(cost_ws, llm_server, tmp_path, capsys, monkeypatch):
    ws, frozen = cost_ws
    monkeypatch.setenv("BACKTEST_TEST_COST_API_KEY", API_KEY)
    cfg = priced_config(tmp_path / "gemma-priced.toml", llm_server, tmp_path / "cache.sqlite")

    code, out, err = run_cli(["score", frozen, "--judge", cfg, "--dry-run", "--json"], root=ws.root, capsys=capsys)
    assert code == 0, err
    est = json.loads(out)
    assert est["prompt_tokens_exact"] is True, "llama-server tokenizes: the count must be exact"
    worst = {q["question_id"]: q["cost_worst_case"] for q in est["per_question"]}
    first = est["per_question"][0]["question_id"]
    assert all(worst[q["question_id"]] >= q["cost_at_most"] for q in est["per_question"])

    # room for the first question's worst case, not for all three: the run stops before the last
    budget = worst[first] + 1e-5
    code, out, err = run_cli(
        ["score", frozen, "--judge", cfg, "--run-id", "budget", "--max-cost", f"{budget:.6f}"],
        root=ws.root,
        capsys=capsys,
    )
    assert code == 1 and "stopped before the budget" in err and len(err.strip().splitlines()) == 1, err
    run_dir = ws.results / INSTANCE / "demo_claims" / "budget"
    run = read_json(run_dir / "RUN.json")
    assert run["status"] == "incomplete" and not (run_dir / "judgments.jsonl").exists()
    assert 0 < run["cost"]["spent_last_invocation"] <= budget
    assert 1 <= len((run_dir / "judgments.partial.jsonl").read_bytes().splitlines()) < 3

    code, out, err = run_cli(
        ["score", frozen, "--judge", cfg, "--run-id", "budget", "--max-cost", "1000", "--json"],
        root=ws.root,
        capsys=capsys,
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["status"] == "complete" and 1 <= summary["judged_now"] <= 2
    cost = read_json(run_dir / "RUN.json")["cost"]
    judgments = [o for _, o in iter_jsonl(run_dir / "judgments.jsonl")]
    price = Price(input_per_mtok=10000.0, output_per_mtok=30000.0, currency="EUR")
    assert cost["currency"] == "EUR" and len(cost["per_question"]) == 3
    for row, j in zip(cost["per_question"], judgments):
        assert row["prompt_tokens"] == j["tokens"]["prompt_tokens"] > 0
        assert row["cost"] == pytest.approx(price.cost(row["prompt_tokens"], row["completion_tokens"]), abs=1e-6)
    assert cost["total"] == pytest.approx(sum(r["cost"] for r in cost["per_question"]), abs=1e-5)
    # the dry run counted exactly the prompt the server then received (first calls without a constraint retry)
    counted = {q["question_id"]: q["prompt_tokens"] for q in est["per_question"]}
    plain = [j for j in judgments if "constraint_retry" not in j]
    for j in plain:
        assert j["tokens"]["prompt_tokens"] == counted[j["question_id"]]
    report = (run_dir / "report.md").read_text()
    assert f"cost of the labels {cost['total']:.4f} EUR" in report
    code, out, err = run_cli(["compare", run_dir, "--out", tmp_path / "cmp", "--json"], root=ws.root, capsys=capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "cmp" / "compare.json").read_text())["leaderboard"][0]
    assert board["cost"] == pytest.approx(cost["total"]) and board["currency"] == "EUR"
    for f in [*run_dir.iterdir(), tmp_path / "cache.sqlite", *(tmp_path / "cmp").iterdir()]:
        if f.is_file():
            assert API_KEY.encode() not in f.read_bytes(), f"API key found in {f}"
    print(
        f"budget {budget:.4f} EUR: stopped after {3 - summary['judged_now']} question(s); "
        f"resumed: {summary['judged_now']} more; "
        f"run cost {cost['total']:.4f} EUR, {cost['prompt_tokens']}+{cost['completion_tokens']} tokens; "
        f"{len(plain)} of 3 dry-run counts checked against the server's"
    )


def _stub_config(ws: Workspace, server, name: str) -> Path:
    """An LLM judge on the stub: default document settings (a prompt of several thousand bytes), 1 retry."""
    config = ws.judges / f"{name}.toml"
    prompt = REPO / "judges" / "prompts" / "outcome-premise-compact-v2.md"
    price = 'price = { input_per_mtok = 1.44, output_per_mtok = 4.0, currency = "USD" }\n'
    stub_judge_config(config, server, name, prompt, price)
    return config


@pytest.mark.parametrize("bad_first", [False, True], ids=["plain", "retried"])
def test_max_cost_admits_a_question_on_its_worst_case_and_counts_every_billed_attempt(
    cost_ws, tmp_path, capsys, bad_first
):
    """Issue 32, item 8. An endpoint reporting 5,000 prompt tokens a call: before, ``--max-cost 0.02`` admitted
    calls on a characters / 4 estimate and spent 0.0216 (again on rerun), and an unusable answer's tokens were
    missing from the cost. Now a question is admitted on its worst case (every attempt, the constraint retry,
    prompts bounded by their bytes), no invocation spends past its budget, and the retried attempt is paid for."""
    base, frozen = cost_ws
    root = tmp_path / "ws"
    shutil.copytree(base.root, root)
    ws = Workspace(root)
    frozen = root / Path(frozen).relative_to(base.root)
    price = Price(input_per_mtok=1.44, output_per_mtok=4.0)
    server = usage_stub(5000, bad_first=bad_first)
    try:
        cfg = _stub_config(ws, server, "stub")
        code, out, err = run_cli(["score", frozen, "--judge", cfg, "--dry-run", "--json"], root=ws.root, capsys=capsys)
        assert code == 0, err
        worst = [q["cost_worst_case"] for q in json.loads(out)["per_question"]]
        assert min(worst) > price.cost(5000 * 2, 60 * 2)  # the bound covers two billed attempts as reported
        room = worst[0] * 1.05  # the first question's worst case fits; after it, the second's does not
        assert room < price.cost(5000, 60) + worst[1]
        for run_id, budget in (("tight", 0.02), ("tight", 0.02), ("room", room)):
            code, out, err = run_cli(
                ["score", frozen, "--judge", cfg, "--run-id", run_id, "--max-cost", f"{budget:.6f}"],
                root=ws.root,
                capsys=capsys,
            )
            assert code == 1 and "stopped before the budget" in err and "at its worst case" in err, err
            run = read_json(ws.results / INSTANCE / "demo_claims" / run_id / "RUN.json")
            assert run["cost"]["spent_last_invocation"] <= budget + 1e-9
    finally:
        server.shutdown()
    run_dir = ws.results / INSTANCE / "demo_claims" / "room"
    # the partial file's lines are "<chain hash> <judgment>"
    rows = [
        json.loads(line.split(" ", 1)[1]) for line in (run_dir / "judgments.partial.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 1  # room for one question's worst case, not two
    attempts = 2 if bad_first else 1
    assert rows[0]["tokens"] == {"prompt_tokens": 5000 * attempts, "completion_tokens": 60 * attempts}
    spent = read_json(run_dir / "RUN.json")["cost"]["spent_last_invocation"]
    assert spent == pytest.approx(price.cost(5000 * attempts, 60 * attempts), abs=1e-6)
