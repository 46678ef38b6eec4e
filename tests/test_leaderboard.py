"""backtest leaderboard: a static site from real scored runs, checked as files and in headless Chromium.

Two systems on the small real instance astro-2025-ep (a demo submission of 8 questions and random_claims
with 6), frozen and scored offline in a private workspace; the site must rank them, give every question
its labels and the 8 documents the judge was shown (dated after the cutoff), fetch nothing, sort its
tables in a real browser and come out byte-identical when rebuilt.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil

import pytest

from backtest.analysis.leaderboard import build_site, discover_runs
from backtest.core.fileio import iter_jsonl
from backtest.core.workspace import Workspace
from backtest.corpus.instance import load_instance, open_past_corpus
from backtest.generators import run_generator
from backtest.scoring.score import score_frozen
from backtest.studies.demo import make_demo_submission
from backtest.submit.freeze import freeze_once, freeze_submission
from tests.browser import run_chromium
from tests.conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("shared_index_cache")]
INSTANCE = "astro-2025-ep"


@pytest.fixture(scope="module")
def site_ws(astro_ep_ws, tmp_path_factory):
    root = tmp_path_factory.mktemp("leaderboard") / "ws"
    shutil.copytree(astro_ep_ws.root, root)
    ws = Workspace(root)
    past = open_past_corpus(load_instance(INSTANCE, ws), ws)
    demo = freeze_submission(make_demo_submission(past, root / "submissions" / "demo", n=8, seed=3), INSTANCE, ws)
    made = run_generator("random_claims", INSTANCE, ws, n=6, seed=0)
    claims, _ = freeze_once(made["out"], INSTANCE, ws)
    for frozen in (demo, claims):
        score_frozen(frozen, ws, run_id="site")
    return ws


def test_the_site_has_every_question_with_the_documents_the_judge_saw(site_ws, tmp_path):
    runs = discover_runs(site_ws)
    assert len(runs) == 2
    pages = build_site(runs, tmp_path / "site")
    names = sorted(p.relative_to(tmp_path / "site").as_posix() for p in pages)
    assert names == sorted(
        ["index.html", f"{INSTANCE}/index.html", f"{INSTANCE}/demo_claims.html", f"{INSTANCE}/random_claims.html"]
    )
    cutoff = load_instance(INSTANCE, site_ws).cutoff
    for page in pages:
        text = page.read_text()
        assert not re.search(r"""(?:src|href)=['"](?:https?:)?//""", text), f"{page.name} fetches from the network"
    board = (tmp_path / "site" / INSTANCE / "index.html").read_text()
    assert "id='leaderboard' class='sortable'" in board and "data:image/png;base64," in board  # the forest plot
    assert "href='demo_claims.html'" in board and "href='random_claims.html'" in board
    assert "Holm" in board and "dense all-MiniLM-L6-v2, k=8" in board  # the tests and the retriever

    for run in runs:
        page = (tmp_path / "site" / INSTANCE / f"{run.parent.name}.html").read_text()
        judgments = [j for _, j in iter_jsonl(run / "judgments.jsonl")]
        retrievals = {r["question_id"]: r for _, r in iter_jsonl(run / "retrieval.jsonl")}
        sections = re.findall(r"<section id='q-([^']+)' class='question'>(.*?)</section>", page, re.S)
        assert [qid for qid, _ in sections] == [j["question_id"] for j in judgments]
        for (qid, body), j in zip(sections, judgments):
            assert f"<code>{j['outcome']}</code>" in body and f"<code>{j['premise_status']}</code>" in body
            shown = re.findall(r"data-doc-id='([^']+)'", body)
            assert shown == [d["id"] for d in retrievals[qid]["documents"]] and len(shown) == 8
            dates = [dt.date.fromisoformat(d) for d in re.findall(r"<span class='date'>([\d-]+)</span>", body)]
            assert len(dates) == 8 and all(d > cutoff for d in dates), qid

    again = build_site(runs, tmp_path / "again")
    assert [p.read_bytes() for p in pages] == [p.read_bytes() for p in again]


def test_the_cli_builds_from_all_runs_and_refuses_bad_calls(site_ws, tmp_path, capsys):
    code, out, _ = run_cli(["leaderboard", "--all", "--out", tmp_path / "site"], root=site_ws.root, capsys=capsys)
    assert code == 0 and "wrote 4 pages" in out
    code, _, err = run_cli(["leaderboard", "--out", tmp_path / "x"], root=site_ws.root, capsys=capsys)
    assert code == 2 and "name run folders or pass --all" in err
    code, _, err = run_cli(["leaderboard", tmp_path / "nowhere", "--out", tmp_path / "x"], capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a run folder" in err
    assert not (tmp_path / "x").exists()


def test_the_site_sorts_and_shows_documents_in_headless_chromium(site_ws, tmp_path):
    site = tmp_path / "site"
    build_site(discover_runs(site_ws), site)
    board = (site / INSTANCE / "index.html").as_uri()
    orders = {}
    for direction in ("asc", "desc"):  # column 2 is n: 6 for random_claims, 8 for demo_claims
        dom = run_chromium(f"{board}#sort=leaderboard:2:{direction}", tmp_path / f"p-{direction}", "--dump-dom")
        table = re.search(r"<table id=\"leaderboard\".*?</table>", dom.stdout, re.S)
        assert table, dom.stderr[-1000:]
        orders[direction] = re.findall(r"href=\"(\w+)\.html\"", table.group(0))
        assert f'data-dir="{direction}"' in table.group(0)
    assert orders["asc"] == ["random_claims", "demo_claims"] and orders["desc"] == ["demo_claims", "random_claims"]

    page = (site / INSTANCE / "demo_claims.html").as_uri()
    dom = run_chromium(page, tmp_path / "p-page", "--dump-dom").stdout
    first = re.search(r"<section id=\"q-[^\"]+\" class=\"question\">.*?</section>", dom, re.S)
    assert first and len(re.findall(r"data-doc-id=", first.group(0))) == 8
    shot = tmp_path / "page.png"
    run_chromium(page, tmp_path / "p-shot", f"--screenshot={shot}", "--window-size=1200,1600")
    assert shot.is_file() and shot.stat().st_size > 50_000  # text and tables painted, not a blank page
