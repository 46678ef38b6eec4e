"""Judge validation end to end on a small real run: annotate export -> fill -> import -> judge validate.

The run is real: random_claims questions from the astro-ph.EP slice of astro-2025, frozen,
retrieved densely from the real future corpus and judged by the offline judges. The
sheets are filled by the test (a reader stand-in that is written down here: it marks an
item engaged when its first document shares the question's rarest term), because what is
under test is the workflow — blinding, validation of sheets, agreement arithmetic, cards
— not the reading.
"""

from __future__ import annotations

import csv
import json

import pytest

from backtest.analysis.outputs import Decode
from backtest.analysis.reading.intelligibility import READING_KINDS
from backtest.analysis.reading.items import read_items
from backtest.core.fileio import read_json
from backtest.core.records import read_output
from backtest.judge.cards import card_line, fingerprint, load_card

from .conftest import REPO, frozen_copy

INSTANCE = "astro-2025-ep"


@pytest.fixture(scope="module")
def scored(astro_ep_ws, tmp_path_factory):
    """A workspace copy with one complete run of 12 random_claims questions under offline-cues-v1."""
    from backtest.scoring.score import score_frozen

    ws, frozen, _ = frozen_copy(astro_ep_ws, tmp_path_factory.mktemp("validation") / "ws", "random_claims", 12, 3)
    result = score_frozen(frozen, ws, judge_spec="offline-cues-v1")
    return ws, result.run_dir


def _fill(sheet, items, rows_for):
    with open(sheet, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "outcome", "premise_status", "confidence", "cited", "notes"])
        for item in items:
            writer.writerow(rows_for(item))


def _reader(item):
    """A written-down stand-in reader (see the module docstring)."""
    from backtest.text.terms import specific_terms

    terms = specific_terms(item.question.question)
    first = item.documents[0]
    if terms and terms & specific_terms(first.title + " " + first.abstract):
        return [item.item_id, "partially_addressed", "still_plausible", "2", first.id, "shares a term"]
    return [item.item_id, "not_addressed", "still_plausible", "3", "", ""]


def test_export_is_blinded_and_complete(scored, cli, tmp_path):
    ws, run_dir = scored
    out = tmp_path / "export"
    code, stdout, err = cli(
        ["annotate", "export", str(run_dir), "--n", "8", "--seed", "1", "--stratify", "outcome", "--out", str(out)],
        root=ws.root,
    )
    assert code == 0, err
    items = read_items(out / "items.jsonl")
    assert [it.item_id for it in items] == [f"item{k:03d}" for k in range(1, 9)]
    text = (out / "items.jsonl").read_text() + (out / "items.md").read_text() + (out / "sheet.csv").read_text()
    assert "random_claims" not in text  # no system name anywhere readers look
    decode = json.loads((out / "decode.json").read_text())["items"]
    assert {d["system"] for d in decode.values()} == {"random_claims"}
    retrieval = {
        json.loads(line)["question_id"]: json.loads(line)
        for line in (run_dir / "retrieval.jsonl").read_text().splitlines()
    }
    for it in items:  # the documents exactly as the judge was shown them, in rank order
        shown = retrieval[decode[it.item_id]["question_id"]]["documents"]
        assert [(d.id, d.title, d.abstract) for d in it.documents] == [
            (d["id"], d["title"], d["abstract"]) for d in shown
        ]
    with open(out / "sheet.csv") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["item_id", "outcome", "premise_status", "confidence", "cited", "notes"] and len(rows) == 9
    # the same seed draws the same items; an export never overwrites
    again = tmp_path / "again"
    assert (
        cli(
            [
                "annotate",
                "export",
                str(run_dir),
                "--n",
                "8",
                "--seed",
                "1",
                "--stratify",
                "outcome",
                "--out",
                str(again),
            ],
            root=ws.root,
        )[0]
        == 0
    )
    assert (again / "items.jsonl").read_bytes() == (out / "items.jsonl").read_bytes()
    code, _, err = cli(["annotate", "export", str(run_dir), "--n", "8", "--out", str(out)], root=ws.root)
    assert code == 2 and "never overwritten" in err


def test_round_trip_and_validate(scored, cli, tmp_path):
    ws, run_dir = scored
    out = tmp_path / "export"
    assert (
        cli(["annotate", "export", str(run_dir), "--n", "10", "--seed", "2", "--out", str(out)], root=ws.root)[0] == 0
    )
    items = read_items(out / "items.jsonl")
    for rater in ("ann", "bob"):
        _fill(tmp_path / f"{rater}.csv", items, _reader)
        code, stdout, err = cli(
            ["annotate", "import", str(tmp_path / f"{rater}.csv"), "--items", str(out), "--rater", rater]
        )
        assert code == 0, err
        assert (out / "labels" / f"{rater}.jsonl").is_file()
    labels = [json.loads(line) for line in (out / "labels" / "ann.jsonl").read_text().splitlines()]
    assert [lab["item_id"] for lab in labels] == [it.item_id for it in items]

    code, stdout, err = cli(
        [
            "judge",
            "validate",
            str(out / "items.jsonl"),
            "--labels",
            f"ann={out}/labels/ann.jsonl",
            "--labels",
            f"bob={out}/labels/bob.jsonl",
            "--judge",
            "offline-cues-v1",
            "--n-boot",
            "200",
            "--out",
            str(tmp_path / "val"),
            "--json",
        ],
        root=ws.root,
    )
    assert code == 0, err
    report = json.loads(stdout)
    between = report["fields"]["outcome"]["between_raters"]["ann~bob"]
    assert between["n"] == 10 and between["agreement"] == 1.0  # the same reader twice agrees with itself
    cons = report["fields"]["engaged"]["consensus"]
    assert cons["n"] == 10 and sum(map(sum, cons["confusion"]["matrix"])) == 10
    # the judge's labels are what it says when run on the items' documents directly
    from backtest.judge import get_judge

    judge = get_judge("offline-cues-v1", ws)
    for it in items:
        j = judge.judge(it.question, it.retrieved())
        assert report["judgments"][it.item_id]["outcome"] == j.outcome
    expected_eng = sum(1 for it in items if report["judgments"][it.item_id]["outcome"] != "not_addressed") / 10
    assert report["engaged_rate"]["judge"] == pytest.approx(expected_eng)
    assert (tmp_path / "val" / "validation.html").read_text().count("<img") == 3
    card = load_card(ws.judges / "cards", judge.info())
    assert card is not None and card.fingerprint == fingerprint(judge.info())
    assert card.validations[0]["n"] == 10 and card.validations[0]["evaluation"] == "as-is"
    assert "κ engaged" in card_line(card)
    # the run report prints the card; a judge without one is marked not validated
    assert cli(["report", str(run_dir)], root=ws.root)[0] == 0
    assert "κ engaged" in (run_dir / "report.md").read_text()
    assert "not validated" in card_line(load_card(ws.judges / "cards", {"name": "nobody"}))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda rows: rows[1].__setitem__(1, "engaged"), "outcome 'engaged' is not one of"),
        (lambda rows: rows[1].__setitem__(2, "maybe"), "premise_status 'maybe' is not one of"),
        (lambda rows: rows[1].__setitem__(3, "5"), "confidence '5' must be 1, 2 or 3"),
        (lambda rows: rows.pop(2), "have no row"),
        (lambda rows: rows.append(list(rows[1])), "appears twice"),
        (
            lambda rows: rows.append(["item999", "not_addressed", "still_plausible", "", "", ""]),
            "unknown item 'item999'",
        ),
        (lambda rows: rows[1].__setitem__(4, "2999.00001"), "are not among the item's documents"),
        (
            lambda rows: (rows[1].__setitem__(1, "answered"), rows[1].__setitem__(4, "")),
            "needs at least one cited document",
        ),
    ],
)
def test_malformed_sheets_are_refused_cleanly(scored, cli, tmp_path, edit, message):
    ws, run_dir = scored
    out = tmp_path / "export"
    assert cli(["annotate", "export", str(run_dir), "--n", "4", "--seed", "5", "--out", str(out)], root=ws.root)[0] == 0
    items = read_items(out / "items.jsonl")
    rows = [["item_id", "outcome", "premise_status", "confidence", "cited", "notes"]]
    rows += [[it.item_id, "not_addressed", "still_plausible", "2", "", ""] for it in items]
    edit(rows)
    with open(tmp_path / "bad.csv", "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    code, stdout, err = cli(["annotate", "import", str(tmp_path / "bad.csv"), "--items", str(out), "--rater", "ann"])
    assert code == 1
    assert message in err and "Traceback" not in err
    assert not (out / "labels").exists()  # nothing half-written


def test_missing_columns_and_bad_rater_are_usage_errors(scored, cli, tmp_path):
    ws, run_dir = scored
    out = tmp_path / "export"
    assert cli(["annotate", "export", str(run_dir), "--n", "2", "--out", str(out)], root=ws.root)[0] == 0
    (tmp_path / "cols.csv").write_text("item_id,outcome\nitem001,answered\n")
    code, _, err = cli(["annotate", "import", str(tmp_path / "cols.csv"), "--items", str(out), "--rater", "ann"])
    assert code == 2 and "missing column(s) premise_status" in err
    code, _, err = cli(["annotate", "import", str(out / "sheet.csv"), "--items", str(out), "--rater", "../x"])
    assert code == 2 and "rater name" in err


def test_decode_is_typed_merged_and_an_unknown_version_refused(scored, cli, tmp_path):
    """decode.json is written and read through its model (analysis.outputs.Decode): batches merge into one,
    and a decode.json of an unknown schema_version is refused in one line naming the file."""
    ws, run_dir = scored
    first, second, merged = tmp_path / "b1", tmp_path / "b2", tmp_path / "merged"
    for out, start in ((first, "1"), (second, "4")):
        args = ["annotate", "export", str(run_dir), "--n", "3", "--first-item", start, "--out", str(out)]
        assert cli(args, root=ws.root)[0] == 0
    batch = read_output(Decode, first / "decode.json")
    assert (
        batch.schema_version == "1"
        and batch.kind == "items"
        and sorted(batch.items) == ["item001", "item002", "item003"]
    )
    code, _, err = cli(["annotate", "merge", str(first), str(second), "--out", str(merged)])
    assert code == 0, err
    decode = read_output(Decode, merged / "decode.json")
    assert len(decode.items) == 6 and [m["first_item"] for m in decode.merged_from or []] == [1, 4]
    (second / "decode.json").write_text(json.dumps({**read_json(second / "decode.json"), "schema_version": "9"}))
    code, _, err = cli(["annotate", "merge", str(first), str(second), "--out", str(tmp_path / "again")])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{second / 'decode.json'}: schema_version: " in err and "unknown schema_version '9'" in err


@pytest.mark.parametrize(
    "folder",
    sorted(
        p.parent.name
        for p in (REPO / "judges" / "validation").glob("*/decode.json")
        if read_json(p)["kind"] not in READING_KINDS  # those: tests/test_desk.py
    ),
)
def test_the_committed_decode_files_load(folder):
    decode = Decode.model_validate(read_json(REPO / "judges" / "validation" / folder / "decode.json"))
    assert decode.n == len(decode.items) and (decode.merged_from or decode.design)
    if decode.design is not None:  # a sample for estimates: every item is one of its runs' drawn questions
        drawn = {(run, q) for run, sample in decode.design.runs.items() for q in sample.sampled}
        assert {(src.run, src.question_id) for src in decode.items.values()} == drawn
