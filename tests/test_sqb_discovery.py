"""``backtest import sqb`` discovers systems and stress-test cutoffs from the files present.

The upstream release holds more than the copy in ``../shared`` (further ``*_L1`` systems of
the paper's Section 9, and the temporal stress test under ``submissions/stress/``). Those
files are not here, so the tests build a release tree from the shared files: a renamed copy
of a system (``extra_leader``: citation_leader's questions, labels and retrieval), a stress
cutoff c2020 (random_claim and direct_llm with their labels and retrieval, the v1L corpus
manifests), a second cutoff c2015 (review_future_work's questions moved to 2015-12-31,
labels but no retrieval file, manifests with the release's stress fields), and two files no
rule knows. Expected rates are counted from the label files themselves.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backtest.core.fileio import read_json
from backtest.core.records import ENGAGED_OUTCOMES
from backtest.core.workspace import Workspace
from backtest.submit.freeze import is_frozen_and_intact
from backtest.submit.ledger import read_ledger

from .conftest import SQB, run_cli
from .sqb_common import RUNS, imported_release, needs_sqb

pytestmark = needs_sqb

STRESS_2020 = ("random_claim", "direct_llm")
UNEXPECTED = ("data/annotations/outcomes_orphan_L.jsonl", "submissions/notes.txt")


def _copy(release: Path, src: str, dst: str, replace: tuple[bytes, bytes] | None = None) -> None:
    target = release / dst
    target.parent.mkdir(parents=True, exist_ok=True)
    data = (SQB / src).read_bytes()
    target.write_bytes(data.replace(*replace) if replace else data)


def build_release(dest: Path) -> Path:
    """A release tree: the shared copy plus a synthetic extra system, two stress cutoffs and two stray files."""
    release = dest / "sqb"
    shutil.copytree(SQB, release)
    _copy(release, "submissions/citation_leader_L1/questions.jsonl", "submissions/extra_leader_L1/questions.jsonl")
    _copy(
        release, "data/annotations/outcomes_citation_leader_L.jsonl", "data/annotations/outcomes_extra_leader_L.jsonl"
    )
    _copy(release, "data/retrieval/citation_leader_L_top8.jsonl", "data/retrieval/extra_leader_L_top8.jsonl")
    for name in STRESS_2020:
        _copy(release, f"submissions/{name}_L1/questions.jsonl", f"submissions/stress/c2020_{name}/questions.jsonl")
        _copy(release, f"data/annotations/outcomes_{name}_L.jsonl", f"data/annotations/stress/c2020_{name}.jsonl")
        _copy(release, f"data/retrieval/{name}_L_top8.jsonl", f"data/retrieval/stress/c2020_{name}_top8.jsonl")
    _copy(release, "data/corpus_metadata/corpus_a_large_manifest.json", "data/corpus_metadata/stress/c2020_past.json")
    _copy(release, "data/corpus_metadata/corpus_b_large_manifest.json", "data/corpus_metadata/stress/c2020_future.json")
    _copy(
        release,
        "submissions/review_future_work_L1/questions.jsonl",
        "submissions/stress/c2015_review_future_work/questions.jsonl",
        (b'"cutoff_date": "2020-12-31"', b'"cutoff_date": "2015-12-31"'),
    )
    _copy(
        release,
        "data/annotations/outcomes_review_future_work_L.jsonl",
        "data/annotations/stress/c2015_review_future_work.jsonl",
    )
    # the release's stress manifests: cutoff_date + publication_year (past), validation_window years (future)
    past = {
        "corpus_id": "stress_c2015_past",
        "cutoff_date": "2015-12-31",
        "publication_year": {"min": 2010, "max": 2015},
    }
    future = {"corpus_id": "stress_c2015_future", "validation_window": {"min": 2016, "max": 2019}}
    (release / "data/corpus_metadata/stress/c2015_past.json").write_text(json.dumps(past))
    (release / "data/corpus_metadata/stress/c2015_future.json").write_text(json.dumps(future))
    _copy(release, "data/annotations/outcomes_random_claim_L.jsonl", UNEXPECTED[0])
    (release / UNEXPECTED[1]).write_text("notes\n")
    return release


def label_counts(path: Path) -> dict[str, tuple[int, int]]:
    """(k, n) of coverage, answered and premise refuted, counted from a release label file."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    n = len(rows)
    return {
        "coverage": (sum(r["outcome"] in ENGAGED_OUTCOMES for r in rows), n),
        "answered": (sum(r["outcome"] == "answered" for r in rows), n),
        "refuted": (sum(r["premise_status"] == "refuted" for r in rows), n),
    }


def run_counts(run_dir: Path) -> dict[str, tuple[int, int]]:
    m = read_json(run_dir / "metrics.json")
    keys = {"coverage": "coverage", "answered": "answered_rate", "refuted": "premise_refutation_rate"}
    return {ours: (m[theirs]["k"], m[theirs]["n"]) for ours, theirs in keys.items()}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    base = tmp_path_factory.mktemp("sqb-discovery")
    release = build_release(base)
    out = base / "ws"
    code, _, _ = run_cli(["import", "sqb", str(release), "--out", str(out)])
    assert code == 0
    return release, out


def test_extra_system_and_stress_cutoffs_are_imported_with_their_rates(imported):
    release, out = imported
    ws = Workspace(out)
    review = "review_future_work"
    cases = {
        "results/sqb-astronomy-v1L/extra_leader/sqb-release": "data/annotations/outcomes_extra_leader_L.jsonl",
        f"results/sqb-stress-c2015/{review}/sqb-release": f"data/annotations/stress/c2015_{review}.jsonl",
        **{
            f"results/sqb-stress-c2020/{name}/sqb-release": f"data/annotations/stress/c2020_{name}.jsonl"
            for name in STRESS_2020
        },
    }
    for run, labels in cases.items():
        assert run_counts(out / run) == label_counts(release / labels), run
        assert read_json(out / run / "RUN.json")["valid"] is True, run
        frozen = out / read_json(out / run / "RUN.json")["frozen_path"]
        ok, why = is_frozen_and_intact(frozen, ws)
        assert ok, why
    # one instance per cutoff, its windows from the manifests and the retrieval files
    c2020 = read_json(out / "manifests/instances/sqb-stress-c2020.json")
    assert c2020["cutoff"] == "2020-12-31" and c2020["future"]["window"] == {"start": "2021-01-01", "end": "2026-07-01"}
    c2015 = read_json(out / "manifests/instances/sqb-stress-c2015.json")
    assert c2015["cutoff"] == "2015-12-31"
    assert c2015["past"]["window"] == {"start": "2010-01-01", "end": "2015-12-31"}
    assert c2015["future"]["window"] == {"start": "2016-01-01", "end": "2019-12-31"}
    checks = {c["name"]: c for c in read_json(out / next(iter(cases)) / "RUN.json")["leakage"]}
    assert checks["citations_shown"]["status"] == "passed"
    no_retrieval = {
        c["name"]: c
        for c in read_json(out / "results/sqb-stress-c2015/review_future_work/sqb-release/RUN.json")["leakage"]
    }
    assert (
        no_retrieval["citations_shown"]["status"] == "skipped"
        and "no retrieval file" in no_retrieval["citations_shown"]["reason"]
    )
    assert no_retrieval["ids_aligned"]["status"] == "passed"
    entries, problems = read_ledger(ws.ledger)
    assert not problems and len(entries) == 13  # the 9 shared sets + extra_leader + 3 stress sets


def test_the_shared_sets_are_imported_exactly_as_without_the_extras(imported):
    _, out = imported
    shared = imported_release()
    files = [p for p in shared.rglob("*") if p.is_file() and p.parent != shared / "frozen"]
    assert len(files) > 40
    for path in files:
        rel = path.relative_to(shared)
        assert path.read_bytes() == (out / rel).read_bytes(), rel
    assert set(RUNS.values()) <= {str(p.relative_to(out)) for p in out.glob("results/*/*/*")}


def test_unexpected_files_are_reported_and_strict_refuses(imported, tmp_path, cli):
    release, _ = imported
    out = tmp_path / "again"
    code, stdout, stderr = cli(["import", "sqb", str(release), "--out", str(out), "--json"])
    assert code == 0
    summary = json.loads(stdout)
    assert sorted(u["path"] for u in summary["unexpected"]) == sorted(UNEXPECTED)
    assert {s["path"] for s in summary["skipped"]} >= {
        "submissions/example_system/questions.jsonl",
        "results/astronomy_v1L/comparison.json",
    }
    assert "sqb-stress-c2015" in summary["instances"] and "sqb-stress-c2020" in summary["instances"]
    code, stdout, stderr = cli(["import", "sqb", str(release), "--out", str(tmp_path / "text")])
    assert code == 0 and "5 instances, 13 frozen sets and 9 runs" in stdout
    warned = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 2 and all(any(p in line for line in warned) for p in UNEXPECTED)
    code, _, stderr = cli(["import", "sqb", str(release), "--out", str(tmp_path / "strict"), "--strict"])
    assert code == 1 and "unexpected" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "strict").exists()


def test_a_stress_cutoff_without_its_manifest_is_reported_not_dropped(imported, tmp_path, cli):
    release, _ = imported
    partial = tmp_path / "sqb"
    shutil.copytree(release, partial)
    (partial / "data/corpus_metadata/stress/c2015_past.json").unlink()
    code, stdout, _ = cli(["import", "sqb", str(partial), "--out", str(tmp_path / "ws"), "--json"])
    assert code == 0
    summary = json.loads(stdout)
    assert "sqb-stress-c2015" not in summary["instances"] and "sqb-stress-c2020" in summary["instances"]
    missing = {u["path"]: u["reason"] for u in summary["unexpected"]}
    for path in (
        "submissions/stress/c2015_review_future_work/questions.jsonl",
        "data/annotations/stress/c2015_review_future_work.jsonl",
        "data/corpus_metadata/stress/c2015_future.json",
    ):
        assert path in missing
    assert (
        "c2015_past.json is not in the release"
        in missing["submissions/stress/c2015_review_future_work/questions.jsonl"]
    )


def test_stress_and_compare_tables_from_the_imported_runs(imported, tmp_path, cli):
    release, out = imported
    runs = sorted(out.glob("results/sqb-stress-c*/*/sqb-release"))
    assert len(runs) == 3
    code, stdout, err = cli(
        ["stress", "--from-runs", *runs, "--id", "sqb", "--out", tmp_path / "stress", "--json"], root=out
    )
    assert code == 0, err
    table = json.loads(stdout)
    rows = {(r["generator"], r["cutoff"]): r for r in table["rows"]}
    assert set(rows) == {
        ("random_claim", "2020-12-31"),
        ("direct_llm", "2020-12-31"),
        ("review_future_work", "2015-12-31"),
    }
    for (name, cutoff), row in rows.items():
        labels = release / f"data/annotations/stress/c{cutoff[:4]}_{name}.jsonl"
        got = {key: (row[key]["k"], row[key]["n"]) for key in ("coverage", "answered", "refuted")}
        assert got == label_counts(labels), name
        assert row["valid"] is True and row["status"] == "scored"
    md = (tmp_path / "stress" / "STRESS.md").read_text()
    assert "| review_future_work | 2015-12-31 | 2010-01-01..2015-12-31 / 2016-01-01..2019-12-31 |" in md
    # a wrong combination is one line, exit 2
    code, _, err = cli(["stress", "--from-runs", runs[0], "--cutoffs", "2020-12-31"], root=out)
    assert code == 2 and err.startswith("error: --cutoffs does not apply with --from-runs")
    code, _, err = cli(["stress", "--from-runs", runs[0], runs[0]], root=out)
    assert code == 2 and "a second run of" in err

    extra = out / "results/sqb-astronomy-v1L/extra_leader/sqb-release"
    code, stdout, err = cli(["compare", extra, out / RUNS["citation_leader"], *runs, "--json"])
    assert code == 0, err
    systems = {(s["instance_id"], s["system"]): s for s in json.loads(stdout)["systems"]}
    assert len(systems) == 5
    row = systems[("sqb-astronomy-v1L", "extra_leader")]
    assert (row["coverage"]["k"], row["coverage"]["n"]) == label_counts(
        release / "data/annotations/outcomes_extra_leader_L.jsonl"
    )["coverage"]
