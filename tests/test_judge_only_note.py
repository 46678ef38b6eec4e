"""Every table ranked by the judge alone says that a submission can move it (issue 39, item 7).

Keyword stuffing raised the default judge's coverage of random_claims v3 from 14.4% to 50.4%; the freeze gate
``term_stuffing`` refuses the plain forms (``tests/test_freeze_screens.py``), but a judge-only rate stays
movable, so ``score``'s summary, ``report.md``/``report.html``, ``compare`` and the leaderboard without
``--labels`` say so. Checked on the committed space-2016 runs, in a workspace of their own.
"""

from __future__ import annotations

import html
import shutil

import pytest

from backtest.analysis.leaderboard import build_site
from backtest.scoring.metrics import JUDGE_ONLY_NOTE
from tests.conftest import REPO, run_cli

RUNS = sorted(p.parent for p in (REPO / "results" / "space-2016").glob("*/*/RUN.json"))


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    if not (REPO / "corpora" / "space-2016-future" / "records.jsonl").is_file():
        pytest.skip("the space-2016 corpora are not built here (make instances)")
    root = tmp_path_factory.mktemp("note") / "ws"
    root.mkdir()
    for name in ("corpora", "manifests", "judges"):
        (root / name).symlink_to((REPO / name).resolve())
    shutil.copytree(REPO / "frozen", root / "frozen")
    for run in RUNS:
        shutil.copytree(run, root / run.relative_to(REPO))
    return root


def test_score_summary_says_it(ws, capsys):
    run = ws / RUNS[0].relative_to(REPO)
    frozen = ws / "frozen" / "space-2016" / run.parent.name / "v3"
    code, out, err = run_cli(
        ["score", frozen, "--judge", "judges/offline-v2.toml", "--run-id", run.name], root=ws, capsys=capsys
    )
    assert code == 0 and "already complete" in out, err
    assert "coverage, judge only: " in out and JUDGE_ONLY_NOTE in out


def test_the_run_report_says_it(ws, capsys):
    run = ws / RUNS[0].relative_to(REPO)
    code, _, err = run_cli(["report", run], root=ws, capsys=capsys)
    assert code == 0, err
    assert f"Judge-only rates: {JUDGE_ONLY_NOTE}." in (run / "report.md").read_text()
    assert f"Judge-only rates: {html.escape(JUDGE_ONLY_NOTE)}." in (run / "report.html").read_text()


def test_compare_and_leaderboard_without_labels_say_it(ws, tmp_path, capsys):
    runs = [ws / r.relative_to(REPO) for r in RUNS]
    code, out, err = run_cli(["compare", *runs, "--out", tmp_path / "cmp"], root=ws, capsys=capsys)
    assert code == 0, err
    assert JUDGE_ONLY_NOTE in out
    assert JUDGE_ONLY_NOTE in (tmp_path / "cmp" / "compare.md").read_text()
    assert html.escape(JUDGE_ONLY_NOTE) in (tmp_path / "cmp" / "compare.html").read_text()
    pages = build_site(runs, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    instance = (tmp_path / "site" / "space-2016" / "index.html").read_text()
    assert pages and html.escape(JUDGE_ONLY_NOTE) in index and html.escape(JUDGE_ONLY_NOTE) in instance
