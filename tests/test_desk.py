"""The reading desk (issue 41) without a browser: its server as a real process on 127.0.0.1, on exports of the
committed runs and the committed review batches; what it refuses; two processes and a killed one; reading time in
``annotate plan`` and ``estimate``; Label Studio out and back. The page itself: ``tests/test_desk_browser.py``."""

from __future__ import annotations

import http.client
import json
import shutil
import signal
import statistics
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from backtest.analysis.reading.annotate import import_sheet
from backtest.analysis.reading.items import read_labels
from tests.conftest import REPO, run_cli
from tests.desk_helpers import (
    INTELLIGIBILITY_SET,
    QUESTION_SET,
    RUN,
    answers_for,
    call,
    export_five,
    intelligibility_copy,
    intelligibility_row,
    items_of,
    question_row,
    script,
    start_desk,
    without_seconds,
    write_sheet,
)

GATE_BATCH = REPO / "gates" / "astro-2025" / "batch-001"


@pytest.fixture
def five(tmp_path, capsys) -> Path:
    return export_five(tmp_path / "five", capsys)


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


def test_saved_labels_are_what_import_writes_plus_seconds(five, tmp_path):
    """Each answer given at the desk is checked as a sheet row and saved at once; the file is line for line the
    one `annotate import` writes from a sheet of the same answers, plus each item's seconds."""
    answers = answers_for(five)
    proc, url = start_desk(five, "--reader", "desk")
    try:
        for k, (item, row) in enumerate(reversed(list(answers.items()))):  # any order: the file is in item order
            status, body = call(url, "api/label", {"item_id": item, "row": row, "seconds": 10.0 + k})
            assert status == 200, body
        # an engaged outcome citing nothing is refused, as import refuses it, and changes nothing
        status, body = call(
            url,
            "api/label",
            {"item_id": "item001", "row": {"outcome": "answered", "premise_status": "supported"}, "seconds": 1},
        )
        assert status == 422 and "needs at least one cited document" in body["error"]
        status, body = call(
            url, "api/label", {"item_id": "item001", "row": {**answers["item001"], "notes": "\u202e"}, "seconds": 1}
        )
        assert status == 422 and "control character" in body["error"]
    finally:
        _stop(proc)
    import_sheet(write_sheet(tmp_path / "sheet.csv", answers), five, "sheet")
    desk, sheet = five / "labels" / "desk.jsonl", five / "labels" / "sheet.jsonl"
    assert without_seconds(desk) == [json.loads(line) for line in sheet.read_text().splitlines()]
    assert [lab.seconds for lab in read_labels(desk)] == [14.0, 13.0, 12.0, 11.0, 10.0]


def test_the_server_refuses_what_is_not_its_page(five):
    """A wrong token is refused; no path reaches a file (decode.json, another reader's labels, anything outside
    the folder); it listens on 127.0.0.1 unless told otherwise."""
    (five / "labels").mkdir()
    shutil.copy(
        REPO / "judges" / "validation" / "release-space-2016-v1" / "labels" / "reader_a.jsonl",
        five / "labels" / "other.jsonl",
    )
    proc, url = start_desk(five, "--reader", "desk")
    try:
        assert url.startswith("http://127.0.0.1:")
        host, port = url[7:].split("/")[0].split(":")
        token = url.rstrip("/").rsplit("/", 1)[1]
        assert len(token) >= 24
        status, _ = call(url.replace(token, "x" * len(token)), "api/state")
        assert status == 403
        secret = json.loads((five / "decode.json").read_text())["items"]["item001"]["system"]
        for path in (
            "../decode.json",
            "api/item/../../decode.json",
            "%2e%2e/decode.json",
            "..%2fdecode.json",
            "api/item/-1",
            "api/item/5",
            "labels/other.jsonl",
            "decode.json",
            "api/../../../etc/passwd",
        ):
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            conn.request("GET", f"/{token}/{path}")  # sent as written: no client-side normalising
            resp = conn.getresponse()
            body = resp.read().decode()
            conn.close()
            assert resp.status == 404, (path, resp.status)
            assert secret not in body and "judge_outcome" not in body and "root:" not in body
        status, state = call(url, "api/state")
        assert status == 200 and state["labels"] == {} and secret not in json.dumps(state)
        status, body = call(url, "api/label", {"item_id": "../../x", "row": {}, "seconds": 1})
        assert status == 400 and "no item" in body["error"]
    finally:
        _stop(proc)


def test_bad_folders_and_names_are_refused_in_one_line(five, tmp_path, capsys):
    def refused(args, match):
        code, _, err = run_cli(["annotate", "serve", *map(str, args)], capsys=capsys)
        assert code == 2 and match in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err

    refused([tmp_path, "--reader", "x"], "no decode.json")
    refused([five, "--reader", "adjudicated"], "reserved")
    refused([five, "--reader", "../x"], "reader name")
    refused([five], "give --reader")
    # items that no longer match decode.json (one dropped since the export)
    changed = tmp_path / "changed"
    shutil.copytree(five, changed)
    lines = (changed / "items.jsonl").read_text().splitlines()
    (changed / "items.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    refused([changed, "--reader", "x"], "no longer matches decode.json")
    # a labels file of another export: the committed release's reader_a under this reader's name
    (five / "labels").mkdir()
    shutil.copy(
        REPO / "judges" / "validation" / "release-space-2016-v1" / "labels" / "reader_a.jsonl",
        five / "labels" / "x.jsonl",
    )
    refused([five, "--reader", "x"], "a labels file of another export")
    refused([five, "--adjudicate", "x", "x"], "two different readers")


def test_two_processes_and_a_killed_one_lose_no_label(tmp_path, capsys):
    """Two desk processes write one reader's file at once, and one is killed (SIGKILL) while they write: every
    label a process acknowledged is in the file, and every line is whole."""
    folder = export_five(tmp_path / "forty", capsys, per_run=40)
    answers = answers_for(folder)
    items = list(answers)
    procs = [start_desk(folder, "--reader", "same") for _ in range(2)]
    acked: list[str] = []

    def writer(url: str, mine: list[str]) -> None:
        for item in mine:
            try:
                status, _ = call(url, "api/label", {"item_id": item, "row": answers[item], "seconds": 3})
            except OSError:
                return  # the process was killed
            if status == 200:
                acked.append(item)

    threads = [threading.Thread(target=writer, args=(url, items[k::2])) for k, (_, url) in enumerate(procs)]
    for t in threads:
        t.start()
    while len(acked) < 12:
        threads[0].join(0.01)
    procs[0][0].send_signal(signal.SIGKILL)
    for t in threads:
        t.join(60)
    for proc, _ in procs:
        _stop(proc)
    saved = read_labels(folder / "labels" / "same.jsonl")  # every line parses as a Label
    assert set(acked) <= {lab.item_id for lab in saved}
    assert set(items[1::2]) <= set(acked)  # the survivor wrote all of its own
    assert len(saved) == len({lab.item_id for lab in saved})


def test_a_review_batch_is_saved_as_the_rows_gate_import_takes(tmp_path):
    """The committed batch's filled sheet, given at the desk, comes back from its labels file (what `gate import`
    reads for a .jsonl SHEET) as the same rows."""
    import csv

    from backtest.generators.gate import desk_rows, row_decision

    batch = tmp_path / "batch-001"
    shutil.copytree(GATE_BATCH, batch)
    with open(batch / "filled.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))[:12]
    proc, url = start_desk(batch, "--reader", "gate-x")
    try:
        status, state = call(url, "api/state")
        assert state["kind"] == "evidence_graph_review" and state["total"] == 120
        for row in rows:
            answer = {k: v for k, v in row.items() if k != "item_id"}
            status, body = call(url, "api/label", {"item_id": row["item_id"], "row": answer, "seconds": 20})
            assert status == 200, body
        refused = {"item_id": rows[0]["item_id"], "row": {"decision": "accept"}, "seconds": 1}
        status, body = call(url, "api/label", refused)
        assert status == 422 and "needs a type" in body["error"]
    finally:
        _stop(proc)
    got = [row_decision(r, "") for _, r in desk_rows(batch / "labels" / "gate-x.jsonl")]
    assert got == [row_decision(r, "") for r in rows]


def _committed(name: str, source: Path = INTELLIGIBILITY_SET) -> list[dict]:
    return [json.loads(line) for line in (source / name).read_text().splitlines()]


def _give(url: str, labels: list[dict], id_key: str, row_of) -> None:
    """Every committed label of one pass given at the desk as an answer (timed 5 s, 6 s, ...)."""
    for k, label in enumerate(labels):
        status, body = call(url, "api/label", {"item_id": label[id_key], "row": row_of(label), "seconds": 5 + k})
        assert status == 200, body


def _adjudicate_at_desk(folder: Path, readers: tuple[str, str], choose) -> tuple[list[dict], dict]:
    """Every disagreement of ``readers`` decided at the desk: ``choose(dispute)`` -> (pick, reason); the
    disputes and the last decision's answer."""
    proc, url = start_desk(folder, "--adjudicate", *readers)
    try:
        disputes = call(url, "api/state")[1]["disputes"]
        for d in disputes:
            pick, reason = choose(d)
            body = {"item_id": d["item_id"], "field": d["field"], "pick": pick, "reason": reason, "seconds": 9}
            status, result = call(url, "api/decide", body)
            assert status == 200, result
    finally:
        _stop(proc)
    return disputes, result


def test_an_intelligibility_set_read_and_adjudicated_at_the_desk_gives_its_committed_results(tmp_path):
    """The committed evidence-graph-v4 set, read again at the desk: both passes' committed answers given as
    answers, and the committed adjudication's choices as decisions. The labels files read back (by the typed
    model the results script reads) as the committed passes plus seconds, the adjudication.jsonl written is the
    committed file byte for byte, and the results script makes the committed results.json of them. The page never
    gets key.json's content; a judgement not yes or no, or no reason, is refused."""
    from backtest.analysis.reading.intelligibility import read_labels

    folder = intelligibility_copy(tmp_path / "eg", "key.json")
    instances = {v["instance"] for v in json.loads((folder / "key.json").read_text()).values()}
    passes = {name: _committed(f"labels/{name}.jsonl") for name in ("pass-a", "pass-b")}
    for name, labels in passes.items():
        proc, url = start_desk(folder, "--reader", name)
        try:
            status, state = call(url, "api/state")
            assert (state["kind"], state["total"], state["first_unlabelled"]) == ("intelligibility", 39, 0)
            views = [call(url, f"api/item/{k}")[1] for k in range(39)]
            assert views[0]["question"].startswith("Will the finding") and views[0]["claims"][0]["date"]
            assert not any(i in json.dumps([state, views]) for i in instances)  # blind: nothing of key.json
            _give(url, labels, "id", intelligibility_row)
            bad = {"item_id": "eh-001", "row": {"intelligible": "maybe", "real": "true", "reason": "x"}, "seconds": 1}
            status, body = call(url, "api/label", bad)
            assert status == 422 and "must be true or false" in body["error"]
            status, body = call(url, "api/label", {**bad, "row": {"intelligible": "true", "real": "true"}})
            assert status == 422 and "give the reason" in body["error"]
            assert call(url, "api/state")[1]["done"] == 39
        finally:
            _stop(proc)
        saved = read_labels(folder / "labels" / f"{name}.jsonl")
        assert [lab.model_dump(exclude={"seconds", "schema_version"}) for lab in saved.values()] == sorted(
            labels, key=lambda r: r["id"]
        )
        assert all(lab.seconds is not None for lab in saved.values())

    decided = {row["id"]: row for row in _committed("adjudication.jsonl")}
    disputes, result = _adjudicate_at_desk(
        folder,
        ("pass-a", "pass-b"),
        lambda d: ("a" if d["reader_a"] == decided[d["item_id"]][d["field"]] else "b", decided[d["item_id"]]["reason"]),
    )
    assert [(d["item_id"], d["field"]) for d in disputes] == [
        ("eh-001", "intelligible"),
        ("eh-001", "real"),
        ("eh-009", "real"),
        ("eh-017", "intelligible"),
        ("eh-025", "intelligible"),
    ]
    assert result["written"] == {"n": 4, "decided": 5} and result["state"]["written"]
    assert result["state"]["columns"] == ["intelligible", "real", "reason"]
    assert (folder / "adjudication.jsonl").read_bytes() == (INTELLIGIBILITY_SET / "adjudication.jsonl").read_bytes()
    script("evidence_graph_reading").results(folder)  # reads the passes and the adjudication the desk wrote
    assert (folder / "results.json").read_bytes() == (INTELLIGIBILITY_SET / "results.json").read_bytes()


def test_a_generated_question_set_read_and_adjudicated_at_the_desk_gives_its_committed_results(tmp_path):
    """The committed intelligibility-v6 set (80 generated questions), read again at the desk: both passes'
    committed labels given as answers, the committed adjudication's readings taken. The labels read back (as the
    study script reads them) as the committed ones, adjudication.jsonl and labels/adjudicated.jsonl are the
    committed files byte for byte, and the study makes the committed results of them; a reason with a yes, or
    none with a no, is refused."""
    from backtest.analysis.reading.intelligibility import read_question_labels

    folder = intelligibility_copy(tmp_path / "intelligibility-v6", "key.json", "sources.json", source=QUESTION_SET)
    for name in ("reader_a", "reader_b"):
        labels = _committed(f"labels/{name}.jsonl", QUESTION_SET)
        proc, url = start_desk(folder, "--reader", name)
        try:
            state = call(url, "api/state")[1]
            assert (state["kind"], state["total"], state["notes"]) == ("question_intelligibility", 80, "note")
            view = call(url, "api/item/0")[1]
            assert set(view) == {"item_id", "question", "premise"}  # blind: nothing of key.json
            _give(url, labels, "item_id", question_row)
            for row, match in (
                ({"intelligible": "yes", "reason": "garbled", "real_conflict": "na"}, "none when it is yes"),
                ({"intelligible": "no", "real_conflict": "na"}, "give the first that applies"),
                ({"intelligible": "yes", "real_conflict": "maybe"}, "real_conflict"),
            ):
                status, body = call(url, "api/label", {"item_id": labels[0]["item_id"], "row": row, "seconds": 1})
                assert status == 422 and match in body["error"], body
        finally:
            _stop(proc)
        saved = read_question_labels(folder / "labels" / f"{name}.jsonl")
        assert {k: lab.model_dump(exclude={"seconds", "schema_version"}) for k, lab in saved.items()} == {
            r["item_id"]: r for r in labels
        }
    adjudication = {r["item_id"]: r for r in _committed("adjudication.jsonl", QUESTION_SET)}
    disputes, result = _adjudicate_at_desk(
        folder,
        ("reader_a", "reader_b"),
        lambda d: (
            "a" if d["reader_a"] == adjudication[d["item_id"]]["decision"] else "b",
            adjudication[d["item_id"]]["why"],
        ),
    )
    assert [d["item_id"] for d in disputes] == sorted(adjudication) and result["written"] == {"n": 80, "decided": 2}
    for name in ("adjudication.jsonl", "labels/adjudicated.jsonl"):
        assert (folder / name).read_bytes() == (QUESTION_SET / name).read_bytes(), name
    study = script("intelligibility_study")
    assert study.study(folder) == json.loads((QUESTION_SET / "results.json").read_text())


def test_intelligibility_records_are_typed_and_every_committed_set_has_its_decode(tmp_path):
    """Every committed evidence-graph reading set's decode.json is the one its key.json and items.jsonl give (the
    data unchanged), and its labels read as typed labels; a label of an unknown schema_version, a yes/no written
    as a word (the intelligibility-v* sets' format) or without a reason is refused naming file and line; the
    script that writes such sets writes decode.json beside key.json. The label sets that ground estimates
    (`leaderboard --all`) are found beside them, and they are not among them."""
    import random

    from backtest.analysis.estimate import discover_label_sets
    from backtest.analysis.reading.intelligibility import (
        decode_from_key,
        question_decode_from_key,
        read_labels,
        read_question_labels,
    )
    from backtest.core.errors import BadInput
    from backtest.core.workspace import Workspace

    found = {p.name for p in discover_label_sets(Workspace(REPO))}
    assert "release-astro-2025-v1" in found and not any(name.startswith(("evidence-graph", "intell")) for name in found)
    for folder in sorted((REPO / "judges" / "validation").glob("intelligibility-v*")):
        assert json.loads((folder / "decode.json").read_text()) == question_decode_from_key(folder).model_dump(
            mode="json", exclude_unset=True
        ), folder
        for path in sorted((folder / "labels").glob("*.jsonl")):
            assert read_question_labels(path), path

    for folder in sorted((REPO / "judges" / "validation").glob("evidence-graph-v*")):
        assert json.loads((folder / "decode.json").read_text()) == decode_from_key(folder).model_dump(
            mode="json", exclude_unset=True
        ), folder
        for path in [*sorted((folder / "labels").glob("*.jsonl")), folder / "adjudication.jsonl"]:
            assert read_labels(path), path
    good = '{"id": "eh-001", "intelligible": true, "real": false, "reason": "r"}'
    for line, match in (
        (good.replace('"id"', '"schema_version": "9", "id"'), "unknown schema_version '9'"),
        (good.replace("true", '"yes"'), "intelligible"),
        (good.replace(', "reason": "r"', ""), "reason"),
    ):
        path = tmp_path / "labels.jsonl"
        path.write_text(good.replace("001", "002") + "\n" + line + "\n")
        with pytest.raises(BadInput, match=f"labels.jsonl:2: .*{match}"):
            read_labels(path)

    key = json.loads((INTELLIGIBILITY_SET / "key.json").read_text())
    items = [
        {k: v for k, v in row.items() if k != "id"} | {"_instance": key[row["id"]]["instance"]}
        for row in items_of(INTELLIGIBILITY_SET)
    ]
    out = tmp_path / "written"
    out.mkdir()
    script("evidence_graph_reading").write_blinded(out, items, random.Random(7), "eh")
    decode = json.loads((out / "decode.json").read_text())
    assert decode["kind"] == "intelligibility" and decode["judgements"] == ["intelligible", "real"]
    assert [i["id"] for i in decode["items"]] == [i["id"] for i in items_of(out)]
    assert {i["id"]: {"instance": i["instance"], "type": i["type"]} for i in decode["items"]} == json.loads(
        (out / "key.json").read_text()
    )


def test_plan_and_estimate_speak_in_reader_hours(five, capsys):
    """`annotate plan --budget HOURS` turns hours into items at the readers' median seconds; `estimate --json`
    says what the grounded rates cost in reader-hours. Without timed labels --budget is refused."""
    answers = answers_for(five)
    code, _, err = run_cli(
        ["annotate", "plan", str(RUN), "--labels", str(five), "--budget", "2"], root=REPO, capsys=capsys
    )
    assert code == 2 and "no readers' labels" in err  # nothing read yet
    seconds = [30.0, 50.0, 70.0, 90.0, 110.0]
    proc, url = start_desk(five, "--reader", "desk")
    try:
        for (item, row), s in zip(answers.items(), seconds):
            assert call(url, "api/label", {"item_id": item, "row": row, "seconds": s})[0] == 200
    finally:
        _stop(proc)
    code, out, err = run_cli(
        ["annotate", "plan", str(RUN), "--labels", str(five), "--budget", "2", "--json"], root=REPO, capsys=capsys
    )
    assert code == 0, err
    (plan,) = json.loads(out)
    median = statistics.median(seconds)
    assert plan["seconds_per_item"] == median and plan["budget_share"] == int(2 * 3600 // median)
    assert plan["hours_to_read"] == round(plan["n_to_read"] * median / 3600, 2)
    code, out, err = run_cli(["estimate", str(RUN), "--labels", str(five), "--json"], root=REPO, capsys=capsys)
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["reading"] == {
        "labels": 5,
        "timed": 5,
        "decisions": 0,
        "seconds": sum(seconds),
        "hours": round(sum(seconds) / 3600, 3),
    }
    code, out, _ = run_cli(["estimate", str(RUN), "--labels", str(five)], root=REPO, capsys=capsys)
    assert f"{sum(seconds) / 3600:.2f} reader-hours" in out
    # the committed release's labels were imported from sheets: no hours, and --budget says why
    release = REPO / "judges" / "validation" / "release-space-2016-v1"
    code, _, err = run_cli(
        ["annotate", "plan", str(RUN), "--labels", str(release), "--budget", "2"], root=REPO, capsys=capsys
    )
    assert code == 2 and "reader-hours" in err and "--budget-items" in err


def test_label_studio_out_and_back(five, tmp_path, capsys):
    """`--format label-studio` writes tasks and a labelling configuration with one control a sheet column;
    Label Studio's JSON export of the same answers imports to the sheet's labels, lead_time as the seconds."""
    ls = tmp_path / "ls"
    export_five(ls, capsys, 41, 5, "--format", "label-studio")
    tasks = json.loads((ls / "label-studio" / "tasks.json").read_text())
    view = ET.fromstring((ls / "label-studio" / "config.xml").read_text())
    controls = {e.get("name"): e for e in view if e.tag in ("Choices", "TextArea")}
    assert set(controls) == {"outcome", "premise_status", "confidence", "cited", "notes"}
    assert [c.get("value") for c in controls["outcome"]] == [
        "answered",
        "partially_addressed",
        "posed_but_open",
        "not_addressed",
    ]
    assert controls["cited"].get("value") == "$cited_options" and controls["cited"].get("choice") == "multiple"
    assert not view.findall("HyperText")  # item text is shown as text, never as HTML
    assert [t["data"]["item_id"] for t in tasks] == [i["item_id"] for i in items_of(ls)]
    secret = json.loads((ls / "decode.json").read_text())["items"]["item001"]["system"]
    assert secret not in (ls / "label-studio" / "tasks.json").read_text()
    answers = answers_for(ls)

    def region(name, kind, value):
        return {
            "id": f"r-{name}",
            "from_name": name,
            "to_name": "question",
            "type": kind,
            "value": value,
            "origin": "manual",
        }

    exported = []
    for k, (task, a) in enumerate(zip(tasks, answers.values()), start=1):
        result = [
            region("outcome", "choices", {"choices": [a["outcome"]]}),
            region("premise_status", "choices", {"choices": [a["premise_status"]]}),
            region("confidence", "choices", {"choices": [a["confidence"]]}),
        ]
        if a["cited"]:
            result.append(region("cited", "choices", {"choices": a["cited"].split()}))
        if a["notes"]:
            result.append(region("notes", "textarea", {"text": [a["notes"]]}))
        annotation = {
            "id": 1000 + k,
            "result": result,
            "was_cancelled": False,
            "ground_truth": False,
            "created_at": "2026-12-05T10:00:00Z",
            "updated_at": "2026-12-05T10:00:00Z",
            "lead_time": 20.5 + k,
            "result_count": 0,
            "task": k,
            "completed_by": 7,
        }
        cancelled = dict(annotation, id=2000 + k, was_cancelled=True, completed_by=8, result=[])
        exported.append({"id": k, "data": task["data"], "annotations": [annotation, cancelled], "predictions": []})
    export = tmp_path / "project-1-at-2026-12-05.json"
    export.write_text(json.dumps(exported))
    code, out, err = run_cli(["annotate", "import", str(export), "--items", str(ls), "--rater", "ls"], capsys=capsys)
    assert code == 0, err
    import_sheet(write_sheet(tmp_path / "sheet.csv", answers), ls, "sheet")
    assert without_seconds(ls / "labels" / "ls.jsonl") == without_seconds(ls / "labels" / "sheet.jsonl")
    assert [lab.seconds for lab in read_labels(ls / "labels" / "ls.jsonl")] == [21.5, 22.5, 23.5, 24.5, 25.5]
    # two live annotations of one task: one annotator at a time
    exported[0]["annotations"][1]["was_cancelled"] = False
    export.write_text(json.dumps(exported))
    code, _, err = run_cli(["annotate", "import", str(export), "--items", str(ls), "--rater", "ls2"], capsys=capsys)
    assert code == 2 and "--completed-by" in err
    code, _, err = run_cli(
        ["annotate", "import", str(export), "--items", str(ls), "--rater", "ls2", "--completed-by", "7"], capsys=capsys
    )
    assert code == 0, err
