"""``backtest stress``: the same generators at several cutoffs of space-2016's categories, one table."""

from __future__ import annotations

import datetime as dt

import pytest

from backtest.core.records import read_output
from backtest.core.workspace import Workspace
from backtest.corpus.store import CorpusStore
from backtest.scoring.metrics import format_rate
from backtest.studies.outputs import Stress
from backtest.studies.stress import cutoff_windows, render_markdown

from .conftest import ARCHIVE

FILES = [ARCHIVE / f"physics.{c}.tsv.xz" for c in ("space-ph", "ao-ph", "geo-ph")]
CUTOFFS = ("2012-12-31", "2014-12-31", "2016-12-31")


def test_cutoff_windows_are_whole_calendar_months():
    past, future = cutoff_windows(dt.date(2016, 12, 31), 2, 1)
    assert past == (dt.date(2015, 1, 1), dt.date(2016, 12, 31))
    assert future == (dt.date(2017, 1, 1), dt.date(2017, 12, 31))
    past, future = cutoff_windows(dt.date(2016, 2, 29), 1, 0.5)
    assert past == (dt.date(2015, 3, 1), dt.date(2016, 2, 29)) and future == (dt.date(2016, 3, 1), dt.date(2016, 8, 31))
    past, future = cutoff_windows(dt.date(2016, 6, 15), 1, 1)
    assert past[0] == dt.date(2015, 6, 16) and future == (dt.date(2016, 6, 16), dt.date(2017, 6, 15))


def test_markdown_table_has_a_row_per_generator_and_cutoff():
    rate = {"k": 3, "n": 10, "rate": 0.3, "ci95": [0.0667, 0.6525]}
    rows = [
        {
            "generator": g,
            "cutoff": c,
            "n_past": 100,
            "n_future": 50,
            "status": "scored",
            "n": 10,
            "coverage": rate,
            "answered": rate,
            "refuted": rate,
        }
        for g in ("b", "a")
        for c in ("2014-12-31", "2012-12-31")
    ]
    rows.append(
        {
            "generator": "c",
            "cutoff": "2012-12-31",
            "n_past": 100,
            "n_future": 50,
            "status": "skipped",
            "reason": "no endpoint configured",
        }
    )
    table = {
        "stress_id": "t",
        "source": {"kind": "arxiv-archive", "categories": ["x"], "query": None},
        "years_before": 1,
        "years_after": 1,
        "n": 10,
        "seed": 0,
        "retrieval": {"method": "bm25"},
        "judge": "offline",
        "interval": "exact Clopper-Pearson 95%",
        "rows": rows,
    }
    md = render_markdown(table).splitlines()
    body = [line for line in md if line.startswith("| ") and not line.startswith("| generator")]
    assert [line.split(" | ")[0:2] for line in body] == [
        ["| a", "2012-12-31"],
        ["| a", "2014-12-31"],
        ["| b", "2012-12-31"],
        ["| b", "2014-12-31"],
        ["| c", "2012-12-31"],
    ]
    assert "0.300 [0.067, 0.652] (3/10)" in body[0] and "skipped: no endpoint configured" in body[-1]
    assert format_rate({"k": 0, "n": 0, "rate": None, "ci95": [0.0, 1.0]}) == "–"


@pytest.mark.slow
def test_stress_on_space_categories_at_three_cutoffs(cli, tmp_path):
    pytest.importorskip("backtest.scoring.score", reason="scoring (backtest.scoring.score) is not in this build yet")
    if not all(f.is_file() for f in FILES):
        pytest.skip(f"arxiv-archive-2020 space files not found under {ARCHIVE}")
    ws = Workspace(tmp_path / "ws")
    args = [
        "stress",
        "random_claims",
        "--cutoffs",
        ",".join(CUTOFFS),
        "--source",
        "arxiv-archive",
        *[a for f in FILES for a in ("--input", f)],
        "--categories",
        "physics.space-ph,physics.ao-ph,physics.geo-ph",
        "--years-before",
        "1",
        "--years-after",
        "1",
        "--n",
        "4",
        "--retriever",
        "bm25",
        "--k",
        "3",
        "--id",
        "st",
    ]
    code, out, err = cli(args, root=ws.root)
    assert code == 0, err
    table = read_output(Stress, ws.results / "stress" / "st" / "STRESS.json")
    rows = table.rows
    assert [(r.generator, r.cutoff) for r in rows] == [("random_claims", c) for c in CUTOFFS]
    for row in rows:
        assert row.status == "scored", row.reason
        extra = row.model_extra or {}  # a scored row's counts and paths
        assert extra["n"] == 4
        for rate in (row.coverage, row.answered, row.refuted):
            assert rate is not None and rate.rate is not None
            lo, hi = rate.ci95
            assert 0.0 <= lo <= rate.rate <= hi <= 1.0 and hi - lo > 0.3  # n = 4: wide exact intervals
        cutoff = dt.date.fromisoformat(row.cutoff)
        past = CorpusStore.open(f"st-{cutoff:%Y%m%d}-past", ws)
        future = CorpusStore.open(f"st-{cutoff:%Y%m%d}-future", ws)
        assert max(past.dates.values()) <= cutoff < min(future.dates.values())
        assert max(future.dates.values()) <= cutoff.replace(year=cutoff.year + 1)
        assert extra["n_past"] == len(past) and extra["n_future"] == len(future)
    # the Markdown table printed and written: one row per generator per cutoff, each with intervals
    md = (ws.results / "stress" / "st" / "STRESS.md").read_text()
    assert md in out
    body = [line for line in md.splitlines() if line.startswith("| random_claims")]
    assert len(body) == 3 and all(line.count("[") == 3 for line in body)
    # a rerun reuses the corpora and frozen sets: the ledger does not grow, the table is identical
    ledger = (ws.frozen / "LEDGER.jsonl").read_text()
    code, out2, err = cli(args, root=ws.root)
    assert code == 0, err
    assert (ws.frozen / "LEDGER.jsonl").read_text() == ledger
    assert read_output(Stress, ws.results / "stress" / "st" / "STRESS.json").rows == rows
