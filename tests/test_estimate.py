"""Label-grounded rates on the committed release: ``annotate export`` of compact runs, ``estimate``, ``compare
--labels``, ``annotate plan`` and ``annotate adjudicate``.

Real data throughout: the committed runs under ``results/`` and the readers' labels of their simple random
samples under ``judges/validation/release-*-v1/`` (two blind passes, adjudicated). The numbers each test checks
are recomputed here from those files, independently of ``backtest.analysis.estimate``. The export tests need
the sealed future corpora (``make instances``); they skip without them.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from backtest.core.fileio import iter_jsonl, read_json, write_json
from backtest.core.stats import clopper_pearson
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
VALIDATION = REPO / "judges" / "validation"
ASTRO_LABELS = VALIDATION / "release-astro-2025-v1"
SPACE_LABELS = VALIDATION / "release-space-2016-v1"
ENGAGED = {"answered", "partially_addressed", "posed_but_open"}
needs_corpora = pytest.mark.skipif(
    not (REPO / "corpora" / "astro-2025-future" / "records.jsonl").is_file()
    or not (REPO / "corpora" / "space-2016-future" / "records.jsonl").is_file(),
    reason="the sealed future corpora are not built here (make instances)",
)


def _committed_runs(instance: str) -> list[Path]:
    """Every committed run of ``instance``."""
    return sorted(p.parent for p in (REPO / "results" / instance).glob("*/*/RUN.json"))


def _runs(instance: str) -> list[Path]:
    """The committed runs that the release's own label set (release-<instance>-v1) sampled: the reference systems
    read system by system (a later run, such as the gated evidence_graph, is read in a label set of its own)."""
    labels = ASTRO_LABELS if instance == "astro-2025" else SPACE_LABELS
    return sorted(REPO / run for run in read_json(labels / "decode.json")["design"]["runs"])


def _estimate(capsys, runs, *labels) -> dict:
    args = ["estimate", *runs, *sum((["--labels", str(p)] for p in labels), []), "--json"]
    code, out, err = run_cli(args, root=REPO, capsys=capsys)
    assert code == 0, err
    return json.loads(out)


def test_every_committed_run_is_sampled_and_read(capsys):
    """Each committed run has a simple random sample of min(40, N) questions in one of its instance's committed
    label sets (release-<instance>-v1, and -eg-v1 / -eg-v2 for the gated evidence_graph runs), all read and
    adjudicated."""
    for labels, instance in ((ASTRO_LABELS, "astro-2025"), (SPACE_LABELS, "space-2016")):
        sampled: dict[str, dict] = {}
        for folder in sorted(labels.parent.glob(f"release-{instance}-*v[0-9]")):
            decode = read_json(folder / "decode.json")
            design = decode["design"]
            assert design["kind"] == "srs" and design["per_run"] == 40
            assert not set(design["runs"]) & set(sampled), f"{folder}: a run sampled twice"
            sampled.update(design["runs"])
            adjudicated = {row["item_id"] for _, row in iter_jsonl(folder / "labels" / "adjudicated.jsonl")}
            assert adjudicated == set(decode["items"])
        assert set(sampled) == {str(p.relative_to(REPO)) for p in _committed_runs(instance)}
        for run, sample in sampled.items():
            n_judged = sum(1 for _ in iter_jsonl(REPO / run / "judgments.jsonl"))
            assert sample["population"] == n_judged and len(sample["sampled"]) == min(40, n_judged)
            assert sample["inclusion_probability"] == pytest.approx(len(sample["sampled"]) / n_judged)


def test_estimate_reports_what_the_issue_names_and_follows_from_the_labels(capsys):
    report = _estimate(capsys, _runs("astro-2025"), ASTRO_LABELS)
    decode = read_json(ASTRO_LABELS / "decode.json")
    truth = {row["item_id"]: row for _, row in iter_jsonl(ASTRO_LABELS / "labels" / "adjudicated.jsonl")}
    assert len(report["runs"]) == 6
    for run in report["runs"]:
        assert {"run", "system", "instance", "judge", "rates"} <= set(run)
        assert set(run["rates"]) == {
            "coverage",
            "answered",
            "partially_addressed",
            "posed_but_open",
            "premise_refuted",
            "premise_supported",
            "premise_weakened",
        }
        cov = run["rates"]["coverage"]
        keys = {"estimate", "ci95", "n", "n_labelled", "effective_n", "lambda", "judge_only", "labels_only", "kappa"}
        assert keys <= set(cov)
        # recomputed from the files: the judge over the run, the readers over the sample
        judgments = [row for _, row in iter_jsonl(REPO / run["run"] / "judgments.jsonl")]
        items = [i for i, src in decode["items"].items() if src["run"] == run["run"]]
        engaged = sum(truth[i]["outcome"] in ENGAGED for i in items)
        assert cov["n"] == len(judgments) and cov["n_labelled"] == len(items) == min(40, len(judgments))
        assert cov["judge_only"] == pytest.approx(
            sum(j["outcome"] in ENGAGED for j in judgments) / len(judgments), abs=1e-6
        )
        assert cov["labels_only"] == pytest.approx(engaged / len(items), abs=1e-6)
        assert cov["ci95"][0] <= cov["estimate"] <= cov["ci95"][1]
        if cov["lambda"] == 0:  # the judge adds nothing: the estimate and interval are the labels' own
            assert cov["estimate"] == pytest.approx(engaged / len(items), abs=1e-6)
            assert cov["ci95"] == pytest.approx(list(clopper_pearson(engaged, len(items))), abs=1e-6)
        width = cov["ci95"][1] - cov["ci95"][0]
        assert width <= cov["labels_only_ci95"][1] - cov["labels_only_ci95"][0] + 1e-6
    by_system = {r["system"]: r for r in report["runs"]}
    # the judge's top system is the readers' bottom one: the reason the headline is grounded
    assert by_system["direct_llm"]["rates"]["coverage"]["judge_only"] == pytest.approx(21 / 50, abs=1e-6)
    assert by_system["direct_llm"]["rates"]["coverage"]["estimate"] < 0.1
    assert by_system["review_future_work"]["rates"]["coverage"]["estimate"] > 0.25
    pairs = [d for d in report["differences"] if d["rate"] == "coverage"]
    assert len(pairs) == 15 and all(d["p_holm"] >= d["p_value"] for d in pairs)


def test_compare_with_labels_ranks_by_the_grounded_rate_and_flags_a_collapsed_judge(capsys):
    code, out, err = run_cli(
        ["compare", *_runs("astro-2025"), "--labels", ASTRO_LABELS, "--json"], root=REPO, capsys=capsys
    )
    assert code == 0, err
    comparison = json.loads(out)
    board = comparison["leaderboard"]
    assert comparison["grounded"] and board[0]["label"] == "review_future_work"
    lows = [row["grounded_coverage_ci95"][0] for row in board]
    assert lows == sorted(lows, reverse=True)
    assert board[-1]["label"] == "direct_llm"  # first by the judge alone
    assert any(
        "random_claims: the judge puts 125 of 125 questions (100%) on not_addressed" in w
        for w in comparison["warnings"]
    )
    code, out, _ = run_cli(["compare", *_runs("astro-2025")], root=REPO, capsys=capsys)
    assert code == 0 and "not grounded in careful reading" in out and "coverage, judge only" in out


def test_estimate_refuses_what_it_cannot_use(capsys, tmp_path):
    def refused(args) -> str:
        code, out, err = run_cli(args, root=REPO, capsys=capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
        return err

    runs = _runs("astro-2025")
    assert "no sampling design" in refused(["estimate", *runs, "--labels", VALIDATION / "outcomes-v1"])
    assert "no --labels folder sampled this run" in refused(["estimate", *runs, "--labels", SPACE_LABELS])
    stratified = tmp_path / "stratified"
    shutil.copytree(ASTRO_LABELS, stratified)
    decode = read_json(stratified / "decode.json")
    decode["design"]["kind"] = "stratified"
    write_json(stratified / "decode.json", decode)
    assert "stratified" in refused(["estimate", *runs, "--labels", stratified])
    other = tmp_path / "other-version"
    shutil.copytree(ASTRO_LABELS, other)
    decode = read_json(other / "decode.json")
    decode["design"]["runs"][str(runs[0].relative_to(REPO))]["population"] += 1
    write_json(other / "decode.json", decode)
    assert "another version of this run" in refused(["estimate", *runs, "--labels", other])


def test_annotate_plan_on_a_committed_run(capsys):
    from backtest.core.ppi import samples_for_halfwidth

    run = next(p for p in _runs("astro-2025") if p.parent.name == "citation_leaders")
    code, out, err = run_cli(
        ["annotate", "plan", run, "--halfwidth", "0.1", "--labels", ASTRO_LABELS, "--budget-items", "60", "--json"],
        root=REPO,
        capsys=capsys,
    )
    assert code == 0, err
    (plan,) = json.loads(out)
    assert plan["rate_from"] == "the pilot's labels" and plan["rate"] == pytest.approx(0.2)
    assert 0 < plan["rho"] < 1 and plan["rho_from"].startswith("this run's pilot sample")
    assert plan["n_to_read"] == samples_for_halfwidth(plan["rate"], plan["rho"], 0.1, 125)
    assert plan["n_to_read"] < plan["n_labels_only"]  # a judge that correlates at all saves reading


def test_adjudication_needs_one_decision_per_disagreement_from_the_readings(capsys, tmp_path):
    folder = tmp_path / "set"
    shutil.copytree(SPACE_LABELS, folder)
    (folder / "labels" / "adjudicated.jsonl").unlink()
    code, out, _ = run_cli(["annotate", "adjudicate", folder], capsys=capsys)
    todo = [json.loads(line) for line in out.splitlines()]
    committed = [row for _, row in iter_jsonl(SPACE_LABELS / "adjudication.jsonl")]
    assert code == 0 and [(d["item_id"], d["field"]) for d in todo] == [(d["item_id"], d["field"]) for d in committed]
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text("".join(json.dumps(d) + "\n" for d in committed[:-1]))
    code, _, err = run_cli(["annotate", "adjudicate", folder, "--decisions", decisions], capsys=capsys)
    assert code == 1 and "no decision" in err and not (folder / "labels" / "adjudicated.jsonl").exists()
    decisions.write_text("".join(json.dumps(d) + "\n" for d in committed))
    code, out, err = run_cli(["annotate", "adjudicate", folder, "--decisions", decisions], capsys=capsys)
    assert code == 0, err
    assert (folder / "labels" / "adjudicated.jsonl").read_bytes() == (
        SPACE_LABELS / "labels" / "adjudicated.jsonl"
    ).read_bytes()
    bad = dict(committed[0], adjudicated="answered")
    decisions.write_text("".join(json.dumps(d) + "\n" for d in [bad, *committed[1:]]))
    code, _, err = run_cli(["annotate", "adjudicate", folder, "--decisions", decisions], capsys=capsys)
    assert code == 1 and "one of the two readings" in err


@needs_corpora
def test_annotate_export_of_every_committed_run_shows_the_text(capsys, tmp_path):
    code, out, err = run_cli(
        [
            "annotate",
            "export",
            *_committed_runs("astro-2025"),
            *_committed_runs("space-2016"),
            "--per-run",
            "3",
            "--seed",
            "1",
            "--out",
            tmp_path / "x",
        ],
        root=REPO,
        capsys=capsys,
    )
    assert code == 0, err
    items = [row for _, row in iter_jsonl(tmp_path / "x" / "items.jsonl")]
    assert len(items) == 3 * 12 + 2 * 2  # 3 of each run; the two 2-question evidence_graph runs give 2
    docs = [d for it in items for d in it["documents"]]
    assert docs and all(d["title"].strip() and d["abstract"].strip() for d in docs)
    shown = (tmp_path / "x" / "items.md").read_text()
    assert "the cutoff date each item names" in shown  # two instances: each item says its own
    assert "published after 2016-12-31" in shown and "published after 2025-10-31" in shown


@pytest.fixture
def copied_ws(tmp_path) -> Path:
    """A workspace with the committed direct_llm run of astro-2025 (compact), its frozen set and the corpora."""
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("corpora", "manifests", "judges", ".cache"):
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    shutil.copytree(REPO / "frozen", root / "frozen")
    run = next(p for p in _runs("astro-2025") if p.parent.name == "direct_llm")
    shutil.copytree(run, root / run.relative_to(REPO))
    return root


@needs_corpora
def test_a_damaged_committed_text_is_refused(capsys, copied_ws):
    run = next((copied_ws / "results" / "astro-2025" / "direct_llm").iterdir())
    rows = [row for _, row in iter_jsonl(run / "retrieval.jsonl")]
    rows[3]["documents"][2]["shown_sha256"] = "0" * 64
    (run / "retrieval.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    (run / "SEAL.json").unlink()  # the run's seal would refuse it first: the text's own hash is what is tested
    code, _, err = run_cli(
        ["annotate", "export", run, "--per-run", "50", "--out", copied_ws / "ann"], root=copied_ws, capsys=capsys
    )
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"document {rows[3]['documents'][2]['id']}" in err and "does not match" in err
    assert not (copied_ws / "ann" / "items.jsonl").exists()
    frozen = copied_ws / read_json(run / "RUN.json")["frozen_path"]
    code, _, err = run_cli(["score", frozen, "--run-id", "rerun"], root=copied_ws, capsys=capsys)
    assert code == 1 and "cannot be recovered" in err


@pytest.mark.slow
@needs_corpora
def test_rescoring_a_committed_run_judges_the_text_it_was_judged_on(capsys, copied_ws):
    """Scoring the committed direct_llm set again under a new run id reuses the compact run's retrieval with
    its text cut again from the sealed corpus: the same judgments, byte for byte (before the fix every
    document was '[id] (date)' and the rerun found 0 of 50 engaged where the committed run has 21)."""
    run = next((copied_ws / "results" / "astro-2025" / "direct_llm").iterdir())
    meta = read_json(run / "RUN.json")
    args = ["score", copied_ws / meta["frozen_path"], "--judge", meta["judge"]["spec"], "--run-id", "rerun"]
    code, _, err = run_cli(args, root=copied_ws, capsys=capsys)
    assert code == 0, err
    again = run.parent / "rerun"
    assert (again / "judgments.jsonl").read_bytes() == (run / "judgments.jsonl").read_bytes()
    shown = [d for _, row in iter_jsonl(again / "retrieval.jsonl") for d in row["documents"]]
    assert all(d["title"] and d["abstract"] and "shown_sha256" not in d for d in shown)
    engaged = Counter(row["outcome"] in ENGAGED for _, row in iter_jsonl(again / "judgments.jsonl"))
    assert engaged[True] == 21
