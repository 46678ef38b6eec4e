"""A replay and a card check call no judge a committed file names unless told to (issue 39, item 3).

``release replay`` scores each committed run with the judge its ``RUN.json`` names, and ``judge verify-card``
the judge of each card: files any pull request can edit. A real HTTP server on 127.0.0.1 (``tests/stub_llm.py``)
stands for the endpoint such a file points at and counts every request that reaches it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.seal import sha256_file
from backtest.core.workspace import Workspace
from backtest.llm.client import LLMSettings
from tests.conftest import REPO, run_cli
from tests.stub_llm import stub_judge_config, usage_stub

RUN = REPO / "results" / "space-2016" / "random_claims" / "offline-b589c41cf9ca"
PROMPT = REPO / "judges" / "prompts" / "outcome-premise-compact-v2.md"
TOKEN = "do-not-send-this-token"


@pytest.fixture
def server():
    stub = usage_stub(100)
    yield stub
    stub.shutdown()


def _replay_workspace(tmp_path: Path) -> Workspace:
    """A workspace that can replay the committed run ``RUN``: the repository's corpora, manifests and
    frozen sets (linked), judges of its own, and a copy of the run."""
    ws = Workspace(tmp_path / "ws")
    ws.root.mkdir()
    for name in ("corpora", "manifests", "frozen"):
        (ws.root / name).symlink_to((REPO / name).resolve())
    shutil.copytree(REPO / "judges", ws.judges, symlinks=True)
    shutil.copytree(REPO / "backtest" / "judge" / "weights", ws.root / "backtest" / "judge" / "weights")
    shutil.copytree(RUN, ws.root / RUN.relative_to(REPO))
    return ws


def _point_run_at(ws: Workspace, spec: str, config_sha256: str) -> Path:
    run_json = ws.root / RUN.relative_to(REPO) / "RUN.json"
    data = json.loads(run_json.read_text())
    data["judge"].update(spec=spec, config_sha256=config_sha256)
    run_json.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return run_json


@pytest.mark.parametrize("key_env", ["SECRET_TEST_TOKEN", "BACKTEST_EVIL_API_KEY"])
def test_a_replay_calls_no_judge_endpoint_a_run_json_names(tmp_path, server, monkeypatch, capsys, key_env):
    """Before: a RUN.json naming judges/evil.toml (with its own config sha256, so consistent) made
    ``SECRET_TEST_TOKEN=... release replay --check`` send the run's questions, with that bearer key, to the
    server. Now an arbitrary variable is refused as a key, and an endpoint judge is not called without
    --allow-endpoint: nothing reaches the server either way, and the refusal is one line."""
    ws = _replay_workspace(tmp_path)
    evil = ws.judges / "evil.toml"
    stub_judge_config(evil, server, "evil", PROMPT, f'api_key_env = "{key_env}"\n')
    _point_run_at(ws, "judges/evil.toml", sha256_file(evil))
    monkeypatch.setenv(key_env, TOKEN)

    code, out, err = run_cli(["release", "replay", "--check"], root=ws.root, capsys=capsys)
    assert server.requests == 0 and server.keys == []
    assert code == 2 and len(err.splitlines()) == 1 and "replayed" not in out
    if key_env == "SECRET_TEST_TOKEN":
        assert "api_key_env 'SECRET_TEST_TOKEN' is refused" in err
        code, _, err = run_cli(["release", "replay", "--check", "--allow-endpoint"], root=ws.root, capsys=capsys)
        assert code == 2 and server.requests == 0 and "is refused" in err  # even when endpoints are allowed
    else:
        assert "calls an endpoint" in err and "--allow-endpoint" in err
    assert not (ws.root / ".cache" / "evil.sqlite").exists()  # making the judge to check it created nothing


def test_a_replay_refuses_a_judge_that_is_not_the_runs(tmp_path, capsys):
    """The offline judge is named, but the run says it was judged by another config: refused before scoring."""
    ws = _replay_workspace(tmp_path)
    run_json = _point_run_at(ws, "judges/offline-v2.toml", "0" * 64)
    before = run_json.read_bytes()
    code, _, err = run_cli(["release", "replay", "--check"], root=ws.root, capsys=capsys)
    assert code == 1 and "is not the one the run was judged with" in err and len(err.splitlines()) == 1
    assert run_json.read_bytes() == before
    assert not (ws.results / "space-2016" / "random_claims").joinpath("x").exists()


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "BACKTEST_VLLM_API_KEY", "BACKTEST_A_B_API_KEY"])
def test_api_key_env_names_of_the_documented_pattern_are_kept(name):
    assert LLMSettings(base_url="http://127.0.0.1:9", model="m", api_key_env=name).api_key_env == name


@pytest.mark.parametrize(
    "name", ["SECRET_TEST_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "BACKTEST_API_KEY", "openai_api_key"]
)
def test_api_key_env_names_outside_the_pattern_are_refused(name):
    with pytest.raises(BadInput, match="is refused"):
        LLMSettings(base_url="http://127.0.0.1:9", model="m", api_key_env=name)


def test_verify_card_calls_no_endpoint_judge_unless_told(tmp_path, server, capsys):
    """A card filed for an LLM judge whose config (judges/*.toml, committed) points at the server: by default its
    figures are not recomputed and nothing reaches the server (before: the card's 160 items were sent)."""
    ws = Workspace(tmp_path / "ws")
    path = endpoint_card(ws, server)
    code, out, err = run_cli(["judge", "verify-card", path], root=ws.root, capsys=capsys)
    assert server.requests == 0
    assert code == 1 and "UNVERIFIED" in out and "calls an endpoint: --allow-endpoint to call it" in out
    assert err.startswith("error: 1 of 1 validity card(s) invalid or unverified")


def endpoint_card(ws: Workspace, server) -> Path:
    """A validity card in ``ws`` (with the outcomes-v1 set it cites) filed for an LLM judge whose config
    (judges/stubbed.toml) points at ``server``: offline-cues-v1's figures under that judge (also the attack
    table's)."""
    from backtest.judge import get_judge
    from backtest.judge.cards import fingerprint

    shutil.copytree(REPO / "judges" / "validation" / "outcomes-v1", ws.judges / "validation" / "outcomes-v1")
    stub_judge_config(ws.judges / "stubbed.toml", server, "stubbed", PROMPT)
    info = get_judge(str(ws.judges / "stubbed.toml"), ws).info()
    card = json.loads((REPO / "judges" / "cards" / "7b68d4788051a59c.json").read_text())  # offline-cues-v1's
    card["validations"] = [v for v in card["validations"] if v["set"] == "outcomes-v1"]
    card["judge"] = info.model_dump(mode="json")
    card["fingerprint"] = fingerprint(info)
    path = ws.judges / "cards" / f"{fingerprint(info)}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(card, indent=2))
    return path
