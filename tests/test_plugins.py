"""Third-party plugins through entry points: a tiny real package (tests/fixtures/plugin) is pip-installed into a
temporary folder and put on PYTHONPATH; its generator and judge are then used by the real CLI, end to end,
without editing backtest. Also: the registry's errors (typo suggestions, collisions, broken targets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.registry import Registry

PLUGIN = Path(__file__).parent / "fixtures" / "plugin"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(PLUGIN),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (target / "backtest_example_plugin" / "__init__.py").is_file()
    return target


BACKTEST = str(Path(sys.executable).parent / "backtest")  # the installed console script


def backtest(args: list[str], root: Path, plugin_path: Path | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if plugin_path is not None:
        env["PYTHONPATH"] = str(plugin_path)
    return subprocess.run([BACKTEST, "--root", str(root), *args], capture_output=True, text=True, env=env, timeout=1200)


def test_a_plugin_generator_and_judge_run_through_the_cli(plugin_path, astro_ep_ws, copy_ws):
    ws = copy_ws(astro_ep_ws)
    listed = backtest(["generate", "--help"], ws.root, plugin_path)
    assert listed.returncode == 0 and "newest_titles" in listed.stdout
    out = ws.root / "submissions" / "plugin"
    made = backtest(
        ["generate", "newest_titles", "--instance", "astro-2025-ep", "--n", "4", "--out", str(out)],
        ws.root,
        plugin_path,
    )
    assert made.returncode == 0, made.stderr
    questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(questions) == 4 and all(q["question"].startswith("Will independent work confirm") for q in questions)
    frozen = backtest(["freeze", str(out), "--instance", "astro-2025-ep", "--json"], ws.root, plugin_path)
    assert frozen.returncode == 0, frozen.stderr
    frozen_dir = json.loads(frozen.stdout)["path"]
    scored = backtest(["score", frozen_dir, "--judge", "always-open", "--json"], ws.root, plugin_path)
    assert scored.returncode == 0, scored.stderr
    run_dir = Path(json.loads(scored.stdout)["run_dir"])
    judgments = [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert [j["judge"]["name"] for j in judgments] == ["always-open"] * 4
    assert json.loads((run_dir / "metrics.json").read_text())["coverage"]["k"] == 0


def test_without_the_plugin_its_names_are_unknown(astro_ep_ws, tmp_path):
    result = backtest(["generate", "newest_titls", "--instance", "astro-2025-ep"], tmp_path, None)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "unknown generator 'newest_titls'" in result.stderr and "known: citation_leaders" in result.stderr


def test_registry_errors_are_one_clear_line() -> None:
    reg: Registry[int] = Registry("widget", "widgets_for_a_test", {"alpha": "json:loads", "beta": 2})
    assert reg.names() == ["alpha", "beta"] and reg.get("beta") == 2
    assert reg.get("alpha") is json.loads
    with pytest.raises(BadInput, match=r"unknown widget 'alpah' \(did you mean 'alpha'\?\); known: alpha, beta"):
        reg.get("alpah")
    with pytest.raises(ValueError, match="already registered"):
        reg.add("beta", 3)
    assert reg.unknown("alpah", what="widget kind").message.startswith("unknown widget kind 'alpah' (did you mean")
    reg.add("broken", "no_such_module_here:thing")
    with pytest.raises(BadInput, match="cannot be imported"):
        reg.get("broken")
    reg.add("missing", "json:no_such_attr")
    with pytest.raises(BadInput, match="has no 'no_such_attr'"):
        reg.get("missing")


def test_a_plugin_may_not_shadow_a_builtin(plugin_path) -> None:
    code = (
        "from backtest.core.registry import Registry\n"
        "r = Registry('generator', 'generators', {'newest_titles': 'json:loads'})\n"
        "r.names()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(plugin_path)},
    )
    assert result.returncode != 0 and "which backtest already has" in result.stderr


def test_a_config_of_an_unknown_kind_is_named_with_its_file(tmp_path) -> None:
    from backtest.arena.pairwise import get_pairwise_judge
    from backtest.judge import get_judge

    config = tmp_path / "odd.toml"
    config.write_text('kind = "offlin"\n')
    with pytest.raises(BadInput, match=r"odd.toml: unknown judge kind 'offlin' \(did you mean 'offline'"):
        get_judge(str(config))
    with pytest.raises(BadInput, match=r"odd.toml: unknown pairwise judge kind 'offlin' \(did you mean 'offline'"):
        get_pairwise_judge(str(config))


def test_a_factory_must_make_a_judge_subclass(monkeypatch) -> None:
    """A plugin factory returning an object that only looks like a judge is refused in one line, so the scorer
    never has to probe it for capabilities it may lack."""
    from backtest.arena.pairwise import PAIRWISE_JUDGES, get_pairwise_judge
    from backtest.judge import get_judge
    from backtest.judge.protocol import JUDGES

    class LooksLikeAJudge:
        name = "duck"

        def judge(self, question, documents):  # pragma: no cover - never called
            raise AssertionError

    monkeypatch.setitem(JUDGES._entries, "duck", lambda config, path, ws: LooksLikeAJudge())
    monkeypatch.setitem(PAIRWISE_JUDGES._entries, "duck", lambda config, path: LooksLikeAJudge())
    with pytest.raises(
        BadInput, match=r"^judge kind 'duck' made a LooksLikeAJudge, not a backtest.judge.protocol.Judge"
    ):
        get_judge("duck")
    with pytest.raises(BadInput, match=r"made a LooksLikeAJudge, not a backtest.arena.pairwise.PairwiseJudge subclass"):
        get_pairwise_judge("duck")


class NotAPlugin:
    """What a broken plugin's factory makes: none of a generator, an equivalence rule or a rubric scorer."""

    name = "duck"


def test_every_registry_refuses_what_is_not_its_kind(monkeypatch, tmp_path, capsys) -> None:
    """A generator, an equivalence rule or a rubric whose factory makes the wrong thing is refused in one line
    that names what it lacks, before anything calls it (as a judge's factory is)."""
    from backtest.arena.rubric import RUBRICS, get_rubric
    from backtest.generators.protocol import GENERATORS, get_generator
    from backtest.text.equivalence import RULES, get_rule
    from tests.conftest import run_cli

    for registry in (GENERATORS, RULES, RUBRICS):
        monkeypatch.setitem(registry._entries, "duck", lambda **_: NotAPlugin())
    with pytest.raises(BadInput) as refused:
        get_generator("duck")
    assert refused.value.message == (
        "generator 'duck' made a NotAPlugin, not a backtest.generators.protocol.Generator: it lacks generate, "
        "version (needs generate, name, version)"
    )
    with pytest.raises(
        BadInput,
        match=r"^equivalence rule 'duck' made a NotAPlugin, not a backtest\.text\.equivalence"
        r"\.EquivalenceRule: it lacks similarity_matrix, threshold \(needs name, similarity_matrix",
    ):
        get_rule("duck", threshold=0.5)
    with pytest.raises(
        BadInput,
        match=r"^rubric 'duck' made a NotAPlugin, not a backtest\.arena\.rubric\.RubricScorer: "
        r"it lacks score_output, score_set",
    ):
        get_rubric("duck")
    # through the CLI: exit 2, one line, nothing generated
    code, out, err = run_cli(
        ["generate", "duck", "--instance", "astro-2025-ep", "--out", tmp_path / "s"], tmp_path, capsys
    )
    assert code == 2 and out == "" and not (tmp_path / "s").exists()
    assert err.strip().splitlines() == [f"error: {refused.value.message}"]
    # the built-in entries still pass the check
    assert get_rule("tfidf").threshold == 0.25 and get_rubric("offline").name == "offline-rubric-v1"
    assert get_generator("random_claims").name == "random_claims"


def test_a_judge_that_cannot_be_refitted_says_so() -> None:
    from backtest.judge import get_judge

    with pytest.raises(BadInput, match="--cross-validate needs a fitted judge; 'offline-cues-v1' has no weights"):
        get_judge("offline-cues-v1").cross_validate([], {})
