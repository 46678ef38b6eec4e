"""The reading desk in a real browser (issue 41): Debian's chromium driven by Selenium through Debian's
chromium-driver (`make install-browser`; no browser is downloaded, and the tests skip without them).

One browser for the module; each test starts the desk (`backtest annotate serve`) as its own process on an export
of a committed run, or on a copy of a committed pairs set or review batch. Every label is given by keyboard only.
With ``BACKTEST_DESK_SHOTS=docs/images`` the screenshots the tests take are copied there (the images of
``docs/grounded.md``)."""

from __future__ import annotations

import json
import os
import shutil
import shutil as sh
from pathlib import Path

import pytest

from backtest.analysis.reading.annotate import adjudicate, import_sheet
from backtest.analysis.reading.items import read_labels
from tests.browser import FLAGS
from tests.conftest import REPO
from tests.desk_helpers import (
    INTELLIGIBILITY_SET,
    QUESTION_SET,
    answers_for,
    call,
    export_five,
    intelligibility_copy,
    items_of,
    start_desk,
    without_seconds,
    write_sheet,
)

#: keys that give each answer of answers_for(): outcome 1-4, premise status q-t, confidence z/x/c, cite Shift+n
OUTCOME_KEY = {"answered": "1", "partially_addressed": "2", "posed_but_open": "3", "not_addressed": "4"}
PREMISE_KEY = {"supported": "q", "refuted": "w", "weakened": "e", "still_plausible": "r", "not_applicable": "t"}
CONFIDENCE_KEY = {"1": "z", "2": "x", "3": "c"}


@pytest.fixture(scope="module")
def browser():
    chrome = sh.which("chromium") or sh.which("chromium-browser")
    driver_path = sh.which("chromedriver")
    if chrome is None or driver_path is None:
        pytest.skip("chromium and chromium-driver not installed (make install-browser)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for flag in (*FLAGS, "--window-size=1280,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    yield driver
    driver.quit()


@pytest.fixture
def desks():
    """Start desks (``desks(folder, *args)`` -> url); every one is stopped at the end of the test."""
    procs = []

    def start(folder: Path, *args: str) -> str:
        proc, url = start_desk(folder, *args)
        procs.append(proc)
        return url

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def shown(driver, item: str, timeout: float = 15) -> None:
    """Wait until the page shows ``item`` ("done" when every item is labelled)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.shown") == item)
    except TimeoutException:
        on = driver.execute_script("return document.body.dataset.shown")
        raise AssertionError(f"waited for {item}, the page shows {on} ({text(driver, 'status')!r})") from None


def keys(driver, *sequence: str) -> int:
    """Press ``sequence`` on the page (a key, or "shift+N"); returns how many key presses that was."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    chain = ActionChains(driver)
    for k in sequence:
        if k.startswith("shift+"):
            chain.key_down(Keys.SHIFT).send_keys(k[6:]).key_up(Keys.SHIFT)
        elif k == "enter":
            chain.send_keys(Keys.ENTER)
        elif k == "right":
            chain.send_keys(Keys.ARROW_RIGHT)
        else:
            chain.send_keys(k)
    chain.perform()
    return len(sequence)


def saved(driver, timeout: float = 15) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: text(d, "status").startswith("saved"))


def text(driver, element_id: str) -> str:
    """The text of an element now (read in the page: the panel is drawn again after each key)."""
    return driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e ? e.innerText : ''", element_id
    )


def answer_keys(answer: dict[str, str], documents: list[str]) -> list[str]:
    seq = [OUTCOME_KEY[answer["outcome"]], PREMISE_KEY[answer["premise_status"]]]
    if answer["cited"]:
        seq.append(f"shift+{documents.index(answer['cited']) + 1}")
    seq.append(CONFIDENCE_KEY[answer["confidence"]])
    return seq


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"desk-{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 20000
    target = os.environ.get("BACKTEST_DESK_SHOTS")
    if target:
        shutil.copy(path, Path(target) / path.name)
    return path


def test_five_items_by_keyboard_with_a_reload_equal_what_import_makes(browser, desks, tmp_path, capsys):
    """Five outcome items labelled by keys alone, the page reloaded after the third: it resumes at the fourth,
    and the labels file is the one `annotate import` writes from a sheet of the same answers, plus seconds."""
    folder = export_five(tmp_path / "five", capsys)
    answers = answers_for(folder)
    docs = {i["item_id"]: [d["id"] for d in i["documents"]] for i in items_of(folder)}
    browser.get(desks(folder, "--reader", "desk"))
    items = list(answers)
    shown(browser, items[0])
    for k, item in enumerate(items):
        if k == 3:
            browser.refresh()
            shown(browser, items[3])  # resumes at the first unlabelled item
            assert text(browser, "progress").startswith("3 of 5 labelled")
        a = answers[item]
        keys(browser, *answer_keys(a, docs[item]))
        if a["notes"]:
            keys(browser, "n", a["notes"])
        if k == 0:
            saved(browser)
            screenshot(browser, tmp_path, "outcome")
        keys(browser, "enter")
        shown(browser, items[k + 1] if k + 1 < len(items) else "done")
    import_sheet(write_sheet(tmp_path / "sheet.csv", answers), folder, "sheet")
    desk = folder / "labels" / "desk.jsonl"
    assert without_seconds(desk) == [
        json.loads(line) for line in (folder / "labels" / "sheet.jsonl").read_text().splitlines()
    ]
    assert all(lab.seconds is not None and lab.seconds > 0 for lab in read_labels(desk))

    # the fewest keys that label an outcome item: an outcome, a premise status, Enter (not_addressed cites nothing)
    (folder / "labels" / "desk.jsonl").unlink()
    browser.refresh()
    shown(browser, items[0])
    pressed = keys(browser, "4", "t", "enter")
    shown(browser, items[1])
    (label,) = read_labels(desk)
    assert pressed == 3 and (label.outcome, label.premise_status, label.cited) == (
        "not_addressed",
        "not_applicable",
        [],
    )
    # undo takes it back and shows it again
    keys(browser, "u")
    shown(browser, items[0])
    assert not desk.exists()


def test_hostile_text_does_nothing(browser, desks, tmp_path, capsys):
    """Script tags, event handlers and a right-to-left override in the question and an abstract are shown as
    text: nothing runs, no element is made from them, the override is shown as its escape."""
    folder = export_five(tmp_path / "five", capsys)
    items = items_of(folder)
    hostile = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    items[0]["question"]["question"] = f"Is {hostile} \u202eright-to-left\u202c a question?"
    items[0]["documents"][0]["abstract"] = f'<svg onload="window.__pwned=3"></svg> {hostile} \u202eevil'
    items[0]["documents"][0]["title"] = '"><iframe src="javascript:window.__pwned=4"></iframe>'
    (folder / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    browser.get(desks(folder, "--reader", "desk"))
    shown(browser, "item001")
    assert browser.execute_script("return window.__pwned") is None
    counts = browser.execute_script(
        "return [document.scripts.length, document.images.length, document.querySelectorAll('svg,iframe').length,"
        " [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length]"
    )
    assert counts == [1, 0, 0, 0]  # the page's own script only
    seen = text(browser, "item")
    assert "<script>window.__pwned=1</script>" in seen and 'onerror="window.__pwned=2"' in seen
    assert "\u202e" not in seen and "\\u202e" in seen
    keys(browser, "4", "t", "enter")  # the page still works
    shown(browser, "item002")
    screenshot(browser, tmp_path, "hostile")
    assert browser.execute_script("return window.__pwned") is None


def test_the_second_reader_sees_nothing_of_the_first(browser, desks, tmp_path, capsys):
    folder = export_five(tmp_path / "five", capsys)
    first = desks(folder, "--reader", "reader_a")
    answers = answers_for(folder)
    for item, row in answers.items():
        assert (
            call(first, "api/label", {"item_id": item, "row": {**row, "notes": f"SECRET-A {item}"}, "seconds": 9})[0]
            == 200
        )
    decode = json.loads((folder / "decode.json").read_text())
    browser.get(desks(folder, "--reader", "reader_b"))
    shown(browser, "item001")  # reader_b starts at the first item: reader_a's labels are not theirs
    page = browser.page_source + browser.find_element("tag name", "body").text
    state = browser.execute_script("return JSON.stringify(S)")
    for leak in ("SECRET-A", "reader_a", decode["items"]["item001"]["system"], "judge_outcome", decode["runs"][0]):
        assert leak not in page and leak not in state, leak
    assert text(browser, "progress").startswith("0 of 5 labelled")


def test_two_tabs_lose_nothing(browser, desks, tmp_path, capsys):
    """Two tabs of one reader, each opened before the other saved: every label given in either is kept."""
    folder = export_five(tmp_path / "five", capsys)
    url = desks(folder, "--reader", "desk")
    first = browser.current_window_handle
    browser.get(url)
    shown(browser, "item001")
    browser.switch_to.new_window("tab")
    browser.get(url)
    shown(browser, "item001")
    keys(browser, "right")  # → to item002 (this tab never heard of item001's label)
    shown(browser, "item002")
    keys(browser, "4", "t")
    saved(browser)
    browser.switch_to.window(first)
    keys(browser, "4", "r")
    saved(browser)
    keys(browser, "enter")  # this tab still thinks item002 is open
    shown(browser, "item002")
    keys(browser, "right")
    shown(browser, "item003")
    keys(browser, "4", "e")
    saved(browser)
    browser.switch_to.window(browser.window_handles[1])
    browser.close()
    browser.switch_to.window(first)
    got = {lab.item_id: lab.premise_status for lab in read_labels(folder / "labels" / "desk.jsonl")}
    assert got == {"item001": "still_plausible", "item002": "not_applicable", "item003": "weakened"}


def test_adjudicating_two_readers_by_keyboard(browser, desks, tmp_path, capsys):
    """Only the disagreements, both readings side by side; each decision by key with its reason; the files are
    what `annotate adjudicate --readers` writes from the same decisions."""
    folder = export_five(tmp_path / "five", capsys)
    answers = answers_for(folder)
    url_a = desks(folder, "--reader", "ann")
    url_b = desks(folder, "--reader", "bob")
    for k, (item, row) in enumerate(answers.items()):
        assert call(url_a, "api/label", {"item_id": item, "row": row, "seconds": 40})[0] == 200
        other = dict(row, premise_status="supported") if k in (0, 2) else row
        assert call(url_b, "api/label", {"item_id": item, "row": other, "seconds": 50})[0] == 200
    browser.get(desks(folder, "--adjudicate", "ann", "bob"))
    shown(browser, "item001")
    assert "they differ on: premise_status" in text(browser, "panel")
    screenshot(browser, tmp_path, "adjudicate")
    keys(browser, "1", "the abstracts bear on the premise without settling it", "enter")
    shown(browser, "item003")
    keys(browser, "2", "the first document supports it", "enter")
    shown(browser, "done")
    decisions = [json.loads(line) for line in (folder / "adjudication.jsonl").read_text().splitlines()]
    assert [(d["item_id"], d["adjudicated"], d["readers"]) for d in decisions] == [
        ("item001", "still_plausible", ["ann", "bob"]),
        ("item003", "supported", ["ann", "bob"]),
    ]
    again = tmp_path / "again"
    shutil.copytree(folder, again, ignore=shutil.ignore_patterns("adjudication.jsonl", "adjudicated.jsonl"))
    plain = tmp_path / "decisions.jsonl"
    plain.write_text(
        "".join(json.dumps({k: v for k, v in d.items() if k not in ("seconds", "readers")}) + "\n" for d in decisions)
    )
    adjudicate(again, plain, ("ann", "bob"))
    assert (again / "labels" / "adjudicated.jsonl").read_bytes() == (
        folder / "labels" / "adjudicated.jsonl"
    ).read_bytes()


def test_pairs_and_review_items_at_the_desk(browser, desks, tmp_path):
    """The other kinds an export folder holds: an arena pair (committed pairs-v1, three of its pairs) and an
    evidence-graph review item (committed gates/astro-2025/batch-001), each labelled by key."""
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    source = REPO / "judges" / "validation" / "pairs-v1"
    lines = (source / "pairs.jsonl").read_text().splitlines()[:3]
    (pairs / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    decode = json.loads((source / "decode.json").read_text())
    kept = [json.loads(line)["item_id"] for line in lines]
    decode["items"] = {k: v for k, v in decode["items"].items() if k in kept}
    decode["n"] = len(kept)
    (pairs / "decode.json").write_text(json.dumps(decode))
    shutil.copy(source / "guide.md", pairs / "guide.md")
    browser.get(desks(pairs, "--reader", "desk"))
    shown(browser, kept[0])
    keys(browser, "2", "x")
    saved(browser)
    screenshot(browser, tmp_path, "pair")
    (label,) = read_labels(pairs / "labels" / "desk.jsonl", pairwise=True)
    assert (label.better, label.confidence) == ("b", 2)

    batch = tmp_path / "batch-001"
    shutil.copytree(REPO / "gates" / "astro-2025" / "batch-001", batch)
    browser.get(desks(batch, "--reader", "desk"))
    shown(browser, "001-001")
    keys(browser, "2")  # accept as methodological_challenge
    saved(browser)
    screenshot(browser, tmp_path, "review")
    keys(browser, "enter")
    shown(browser, "001-002")
    keys(browser, "w", "enter")  # reject: not_a_finding
    shown(browser, "001-003")
    rows = [json.loads(line) for line in (batch / "labels" / "desk.jsonl").read_text().splitlines()]
    assert [(r["decision"], r.get("type"), r.get("reason")) for r in rows] == [
        ("accept", "methodological_challenge", None),
        ("reject", None, "not_a_finding"),
    ]
    # the codebook is one key away
    keys(browser, "?")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda d: "How to decide" in text(d, "guide"))


#: an intelligibility item's keys: intelligible 1 yes / 2 no, real 3 yes / 4 no
JUDGEMENT_KEY = {("intelligible", True): "1", ("intelligible", False): "2", ("real", True): "3", ("real", False): "4"}


def test_an_intelligibility_set_by_keyboard_resumes_and_shows_hostile_text_inert(browser, desks, tmp_path):
    """The committed evidence-graph-v4 set (hostile text put in one item's question and claim): three items
    labelled by keys alone (two yes/no keys, n, the reason, Enter), the page reloaded after the second resumes at
    the third; the labels file, read as the results script reads it, holds exactly those answers with their
    seconds; the hostile text does nothing; the guide is one key away."""
    from backtest.analysis.reading.intelligibility import read_labels

    folder = intelligibility_copy(tmp_path / "eg")
    items = items_of(folder)
    hostile = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    items[3]["question"] = f"Is {hostile} \u202eright-to-left\u202c a question?"
    items[3]["claims"][0]["sentence"] = f'<svg onload="window.__pwned=3"></svg> {hostile}'
    items[3]["claims"][0]["title"] = '"><iframe src="javascript:window.__pwned=4"></iframe>'
    (folder / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    answers = {
        "eh-001": (True, False, "clear question; the stances do not conflict as stated"),
        "eh-002": (False, True, "'the sample' is never named; the values conflict"),
        "eh-003": (True, True, "names both values of one quantity, which conflict"),
    }
    browser.get(desks(folder, "--reader", "pass-c"))
    shown(browser, "eh-001")
    for k, (intelligible, real, reason) in enumerate(answers.values()):
        if k == 2:
            browser.refresh()
            shown(browser, "eh-003")  # resumes at the first unlabelled item
            assert text(browser, "progress").startswith("2 of 39 labelled")
        keys(browser, JUDGEMENT_KEY[("intelligible", intelligible)], JUDGEMENT_KEY[("real", real)], "n", reason)
        if k == 0:
            on = browser.execute_script(
                "return [[...document.querySelectorAll('#panel .key.on')].map(e => e.innerText.replace(/\\s+/g, ' ')),"
                " document.getElementById('notes').value]"
            )
            assert on == [["1 yes", "4 no"], reason]  # the answers given are marked, the reason is in its box
            screenshot(browser, tmp_path, "intelligibility")
        keys(browser, "enter")
        shown(browser, items[k + 1]["id"])
    got = read_labels(folder / "labels" / "pass-c.jsonl")
    assert {k: (lab.intelligible, lab.real, lab.reason) for k, lab in got.items()} == answers
    assert all(lab.seconds is not None and lab.seconds > 0 for lab in got.values())

    assert browser.execute_script("return window.__pwned") is None  # eh-004, the hostile one, is on screen
    counts = browser.execute_script(
        "return [document.scripts.length, document.images.length, document.querySelectorAll('svg,iframe').length,"
        " [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length]"
    )
    assert counts == [1, 0, 0, 0]
    seen = text(browser, "item")
    assert "<script>window.__pwned=1</script>" in seen and "\\u202e" in seen and "\u202e" not in seen
    keys(browser, "?")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda d: "Reading guide: evidence-graph tensions" in text(d, "guide"))


def test_adjudicating_two_passes_of_an_intelligibility_set_by_keyboard(browser, desks, tmp_path):
    """The committed set's two passes, adjudicated by keys (1 or 2, the reason, Enter) as their committed
    adjudication decided: the five disagreements of four items, and the adjudication.jsonl written is the
    committed one byte for byte."""
    folder = intelligibility_copy(tmp_path / "eg", "labels/pass-a.jsonl", "labels/pass-b.jsonl")
    final = {
        row["id"]: row for row in map(json.loads, (INTELLIGIBILITY_SET / "adjudication.jsonl").read_text().splitlines())
    }
    url = desks(folder, "--adjudicate", "pass-a", "pass-b")
    disputes = call(url, "api/state")[1]["disputes"]
    browser.get(url)
    for k, d in enumerate(disputes):
        shown(browser, d["item_id"])
        assert f"they differ on: {d['field']}" in text(browser, "panel")
        keys(browser, "1" if d["reader_a"] == final[d["item_id"]][d["field"]] else "2", final[d["item_id"]]["reason"])
        keys(browser, "enter")
        if k == 0:
            from selenium.webdriver.support.ui import WebDriverWait

            WebDriverWait(browser, 10).until(lambda b: "1 of 5" in text(b, "progress"))
    shown(browser, "done")
    assert (folder / "adjudication.jsonl").read_bytes() == (INTELLIGIBILITY_SET / "adjudication.jsonl").read_bytes()


def test_a_generated_question_set_by_keyboard_and_its_adjudication(browser, desks, tmp_path):
    """The committed intelligibility-v6 set: two questions labelled by keys alone (`1` `c` `Enter`: intelligible,
    no conflict presented, the fewest keys; `q` `x` `n` note `Enter`: unresolved_reference, no real conflict),
    read back as the study script reads them; then its two passes' two disagreements decided by keys as the
    committed adjudication decided them: adjudication.jsonl and labels/adjudicated.jsonl are the committed files."""
    from backtest.analysis.reading.intelligibility import read_question_labels

    folder = intelligibility_copy(
        tmp_path / "iv6", "labels/reader_a.jsonl", "labels/reader_b.jsonl", source=QUESTION_SET
    )
    order = [i["item_id"] for i in items_of(folder)]
    browser.get(desks(folder, "--reader", "pass-c"))
    shown(browser, order[0])
    assert keys(browser, "1", "c", "enter") == 3
    shown(browser, order[1])
    keys(browser, "q", "x", "n", "the survey is never named")
    screenshot(browser, tmp_path, "question")
    keys(browser, "enter")
    shown(browser, order[2])
    got = read_question_labels(folder / "labels" / "pass-c.jsonl")
    assert [(k, lab.intelligible, lab.reason, lab.real_conflict, lab.note) for k, lab in got.items()] == [
        (order[0], "yes", None, "na", ""),
        (order[1], "no", "unresolved_reference", "no", "the survey is never named"),
    ]

    final = {
        row["item_id"]: row for row in map(json.loads, (QUESTION_SET / "adjudication.jsonl").read_text().splitlines())
    }
    browser.get(desks(folder, "--adjudicate", "reader_a", "reader_b"))
    for item in sorted(final):
        shown(browser, item)
        assert "they differ on: " in text(browser, "panel")
        keys(browser, "1" if final[item]["reader_a"] == final[item]["decision"] else "2", final[item]["why"], "enter")
    shown(browser, "done")
    for name in ("adjudication.jsonl", "labels/adjudicated.jsonl"):
        assert (folder / name).read_bytes() == (QUESTION_SET / name).read_bytes(), name
