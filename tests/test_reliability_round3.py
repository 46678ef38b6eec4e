"""Reliability, round three (the issue's numbered defects), each reproduced on real parts.

Item 1 (compact runs read blind) is ``tests/test_estimate.py``; item 2 (a key behind JSON escapes) is
``tests/test_secrets.py``; item 4 (a past prospective window) is ``tests/test_prospective.py``. Here: item 9,
Markdown outputs rendered by a real Markdown library and opened in headless Chromium, where no injected
script may run; item 13, a record dated with a UTC offset kept on its UTC day; item 3, validity cards checked
before they are shown and re-derived by ``judge verify-card``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from backtest.core.records import CorpusRecord
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus
from tests.browser import run_chromium

REPO = Path(__file__).resolve().parent.parent
HOSTILE = (
    "<script>document.title='PWNED'</script>",
    "</td></tr></table><h1 id='injected'>x</h1>",
    '"><svg onload="document.title=\'PWNED\'">',
    "[click](javascript:document.title='PWNED')",
)


def test_a_utc_offset_moves_a_record_to_its_utc_day(tmp_path):
    """``2025-11-01T00:00:00+14:00`` is 2025-10-31 in UTC: it belongs to a past corpus ending on the 31st and
    never to a future corpus starting on 1 November (before, it was kept as 2025-11-01 and entered it)."""
    rows = [
        {"id": "tz-1", "title": "t", "abstract": "a", "published": "2025-11-01T00:00:00+14:00", "source": "test"},
        {"id": "tz-2", "title": "t", "abstract": "b", "published": "2025-11-01T12:00:00Z", "source": "test"},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = Workspace(tmp_path / "ws")
    future = build_corpus(
        BuildOptions("jsonl", [src], "tz-future", "future", start=dt.date(2025, 11, 1), end=dt.date(2025, 12, 1)), ws
    )
    past = build_corpus(BuildOptions("jsonl", [src], "tz-past", "past", end=dt.date(2025, 10, 31)), ws)
    ids = {
        m.corpus_id: [json.loads(line)["id"] for line in (ws.corpora / m.corpus_id / "records.jsonl").open()]
        for m in (future, past)
    }
    assert ids == {"tz-future": ["tz-2"], "tz-past": ["tz-1"]}
    assert CorpusRecord(
        id="x", title="t", abstract="a", published="2025-11-01T23:00:00-05:00", source="s"
    ).published == dt.date(2025, 11, 2)


def _no_script_ran(html_path: Path, tmp_path: Path) -> str:
    """The DOM Chromium ends with after opening the page (its title must not say PWNED)."""
    done = run_chromium(html_path.as_uri(), tmp_path / "profile", "--dump-dom", "--virtual-time-budget=3000")
    assert done.returncode == 0, done.stderr[-500:]
    return done.stdout


def hostile_item(question: str, premise: str, title: str, abstract: str):
    """An annotation item whose user-supplied fields (question, premise, one document's title and abstract) are
    the given texts, as an export would build it."""
    from backtest.analysis.reading.items import AnnotationItem, ShownDocument
    from backtest.core.records import Question

    shown = Question(
        question_id="item001",
        question=question,
        domain="d",
        cutoff_date="2025-10-31",
        generated_at="2025-10-31",
        generation_system="blinded",
        source_evidence_ids=["p1"],
        rank=1,
        frozen=True,
        premise=premise,
    )
    doc = ShownDocument(id="2601.00001", title=title, abstract=abstract, published=dt.date(2026, 1, 1))
    return AnnotationItem(item_id="item001", question=shown, documents=[doc])


@pytest.mark.slow
def test_markdown_outputs_render_no_injected_html(tmp_path, capsys):
    """A question, a premise and a document title holding script, table-breaking HTML, an SVG handler and a
    javascript: link: the annotation export's items.md, rendered by python-markdown and opened in headless
    Chromium, runs none of it and shows it as text (before, the script ran and the link was live)."""
    import markdown

    from backtest.analysis.reading.annotate import render_item

    item = hostile_item(" ".join(HOSTILE) + "?", HOSTILE[3], HOSTILE[0], HOSTILE[1])
    page = tmp_path / "items.html"
    page.write_text(
        "<html><head><title>safe</title></head><body>" + markdown.markdown(render_item(item)) + "</body></html>"
    )
    dom = _no_script_ran(page, tmp_path)
    assert "<title>safe</title>" in dom and "PWNED" not in dom.split("<body>")[0]
    assert 'id="injected"' not in dom and "<svg" not in dom and 'href="javascript:' not in dom
    assert "&lt;script&gt;" in dom  # shown to the reader as text


def _sheet_rows(folder: Path) -> list[list[str]]:
    """A complete, valid sheet of a committed export: its adjudicated labels written back as rows."""
    rows = []
    for line in (folder / "labels" / "adjudicated.jsonl").read_text().splitlines():
        lab = json.loads(line)
        rows.append([lab["item_id"], lab["outcome"], lab["premise_status"], "2", " ".join(lab["cited"]), "ok"])
    return rows


SHEET_DAMAGES = {
    "comma": "fields where the header has 6 (an unquoted comma in the notes? quote the field)",
    "two-notes": "column(s) notes appear twice in the header",
    "nul": "control character U+0000",
    "ansi": "control character U+001B",
    "rtl": "control character U+202E",
}


def damaged_sheet(folder: Path, damage: str) -> tuple[str, str]:
    """A readers' sheet for the committed labelled set copied at ``folder``: (the sheet before the damage, after).
    ``damage``: one of :data:`SHEET_DAMAGES` (the two-notes sheet is damaged in both)."""
    import csv
    import io

    header = ["item_id", "outcome", "premise_status", "confidence", "cited", "notes"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header + (["notes"] if damage == "two-notes" else []))
    for row in _sheet_rows(folder):
        writer.writerow(row + (["second"] if damage == "two-notes" else []))
    text = buf.getvalue()
    marker = {"comma": "ok,", "nul": "ok\x00", "ansi": "ok\x1b[31m", "rtl": "ok\u202e"}.get(damage)
    if marker is None:
        return text, text
    lines = text.splitlines()
    lines[7] = lines[7][: -len("ok")] + marker + "but unquoted" * (damage == "comma")
    return text, "\n".join(lines) + "\n"


@pytest.mark.parametrize("damage,expect", list(SHEET_DAMAGES.items()))
def test_a_damaged_annotation_sheet_is_refused_with_one_line(tmp_path, capsys, damage, expect):
    """Item 12: an unquoted comma in the notes used to shift fields silently, a second notes column to win
    silently, and NUL, ANSI and right-to-left-override characters to be kept."""
    import shutil

    from tests.conftest import run_cli

    folder = tmp_path / "set"
    shutil.copytree(REPO / "judges" / "validation" / "release-space-2016-v1", folder)
    before, after = damaged_sheet(folder, damage)
    good = tmp_path / "good.csv"
    good.write_text(before)
    code, _, err = run_cli(["annotate", "import", good, "--items", folder, "--rater", "clean"], capsys=capsys)
    assert (code == 0) == (damage != "two-notes"), err
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(after)
    code, _, err = run_cli(["annotate", "import", sheet, "--items", folder, "--rater", "dmg"], capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and expect in err, err
    assert not (folder / "labels" / "dmg.jsonl").exists()


def test_a_rewritten_commitment_fails_against_the_published_root_and_the_ledger(tmp_path, capsys):
    """Item 5: a commitment folder rewritten and re-sealed verifies against itself; the root published for the
    committed live instance (prospective/README.md) and frozen/LEDGER.jsonl are the anchors it cannot re-seal.
    Here the anchors are shown to bite: a wrong root, and a ledger without the committed sets, each fail."""
    import re
    import shutil

    from tests.conftest import run_cli

    live = REPO / "prospective" / "astro-ph-live-2026"
    published = re.search(
        r"astro-ph-live-2026: sha256 merkle root ([0-9a-f]{64})", (REPO / "prospective" / "README.md").read_text()
    ).group(1)
    ledger = REPO / "frozen" / "LEDGER.jsonl"
    code, out, err = run_cli(
        ["prospective", "verify", live, "--expect-root", published, "--ledger", ledger], capsys=capsys
    )
    assert code == 0 and published in out, err
    code, _, err = run_cli(["prospective", "verify", live, "--expect-root", "0" * 64], capsys=capsys)
    assert code == 1 and "is not the published root" in err
    partial = tmp_path / "LEDGER.jsonl"  # the ledger's first line only: none of the live sets
    partial.write_text(ledger.read_text().splitlines()[0] + "\n")
    folder = tmp_path / "live"
    shutil.copytree(live, folder)
    code, _, err = run_cli(["prospective", "verify", folder, "--ledger", partial], capsys=capsys)
    assert code == 1 and "is not in LEDGER.jsonl: not the set that was frozen" in err


def _card_workspace(tmp_path: Path, sets: tuple[str, ...]) -> Workspace:
    """A workspace holding the committed cards and the named committed labelled sets (copied, not linked)."""
    import shutil

    ws = Workspace(tmp_path / "ws")
    shutil.copytree(REPO / "judges" / "cards", ws.judges / "cards")
    for name in sets:
        shutil.copytree(REPO / "judges" / "validation" / name, ws.judges / "validation" / name)
    return ws


def test_a_forged_or_borrowed_validity_card_is_shown_as_invalid_never_its_numbers(tmp_path):
    """Item 3. Before: a card edited to claim κ 0.97 on n=5,000, or a card copied to another judge's file name,
    was printed by score, compare and the leaderboard as it was written."""
    from backtest.core.runs import RunJudge
    from backtest.judge.cards import run_validity

    ws = _card_workspace(
        tmp_path, ("outcomes-heldout-v1", "outcomes-v1", "release-astro-2025-v1", "release-space-2016-v1")
    )
    run_file = next((REPO / "results/astro-2025/direct_llm").glob("*/RUN.json"))
    run_judge = RunJudge.model_validate(json.loads(run_file.read_text())["judge"])
    honest = run_validity(ws, run_judge)
    assert honest.problems == [] and "κ engaged 0.26" in honest.line

    card_file = REPO / honest.card
    forged = json.loads(card_file.read_text())
    forged["validations"][0]["engaged"].update(kappa=0.97, kappa_ci=[0.95, 0.99])
    forged["validations"][0]["n"] = 5000
    (ws.root / honest.card).write_text(json.dumps(forged))
    shown = run_validity(ws, run_judge)
    assert shown.line.startswith("judge validity: card invalid") and "0.97" not in shown.line
    assert "n=5000 is impossible on a set of 68 items" in shown.line and shown.validations == []

    # the same (honest) card filed under the fingerprint of another judge, the offline-cues-v1 one
    other = RunJudge(name="offline-cues-v1", model="m", protocol="p", prompt_sha256="x", config_sha256="y")
    from backtest.judge.cards import card_path

    card_path(ws.judges / "cards", other.info()).write_text(card_file.read_text())
    borrowed = run_validity(ws, other)
    assert "card invalid" in borrowed.line and "is not its file name" in borrowed.line


def test_verify_card_recomputes_every_figure_and_catches_a_plausible_forgery(tmp_path, capsys):
    """Item 3. A forged figure that is still possible (inside its interval, n unchanged) passes the checks that
    need no judge; ``judge verify-card`` re-runs the judge on the committed set and names the difference."""
    from tests.conftest import run_cli

    ws = _card_workspace(tmp_path, ("pairs-v1",))
    card = ws.judges / "cards" / "pairwise-74e85a9f32a40cdd.json"
    code, out, err = run_cli(["judge", "verify-card", card], root=ws.root, capsys=capsys)
    assert code == 0 and "matches: pairs-v1" in out, err
    published = out.split("sha256 ")[1].split()[0]

    data = json.loads(card.read_text())
    data["validations"][0]["agreement"] = round(data["validations"][0]["ci95"][1] - 0.01, 4)
    card.write_text(json.dumps(data))
    code, out, err = run_cli(["judge", "verify-card", card], root=ws.root, capsys=capsys)
    assert code == 1 and "CARD INVALID" in out and "agreement" in out
    assert err.startswith("error: 1 of 1 validity card(s) invalid")  # through the real entry point: exit 1
    code, out, err = run_cli(["judge", "verify-card", card, "--expect-sha256", published], root=ws.root, capsys=capsys)
    assert code == 1 and "is not the published" in out


def _release_copy(tmp_path: Path) -> Path:
    import shutil

    from tests.conftest import SQB

    if not (SQB / "submissions").is_dir():
        pytest.skip(f"reference release not found at {SQB}")
    release = tmp_path / "sqb"
    shutil.copytree(SQB, release)
    return release


LABELS = "data/annotations/outcomes_direct_llm_L.jsonl"


def _conflicting_label(release: Path) -> None:
    first = json.loads((release / LABELS).read_text().splitlines()[0])
    first["outcome"] = "answered" if first["outcome"] != "answered" else "not_addressed"
    with (release / LABELS).open("a") as handle:
        handle.write(json.dumps(first) + "\n")


def _stray_label(release: Path) -> None:
    first = json.loads((release / LABELS).read_text().splitlines()[0])
    first["question_id"] = "not-in-the-set"
    with (release / LABELS).open("a") as handle:
        handle.write(json.dumps(first) + "\n")


def _outside_link(release: Path) -> None:
    target = release / "submissions" / "direct_llm_L1" / "questions.jsonl"
    outside = release.parent / "elsewhere.jsonl"
    outside.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(outside)


def _ansi_folder(release: Path) -> None:
    (release / "submissions" / "\x1b[31mred\x1b[0m_L1").mkdir()


# a damage to a copy of the release: (what it does, the exit code it must get, what the error must say)
RELEASE_DAMAGES = {
    "link-out": (_outside_link, 2, "outside the release: refused"),
    "conflicting-duplicate": (_conflicting_label, 2, "a second, different row for question"),
    "ansi-name": (_ansi_folder, 2, "holds a control character"),
    "invalid-run": (_stray_label, 1, "imported runs are invalid"),
}


@pytest.mark.parametrize("damage, code, expect", list(RELEASE_DAMAGES.values()), ids=list(RELEASE_DAMAGES))
def test_import_sqb_refuses_a_tree_it_cannot_trust(tmp_path, cli, damage, code, expect):
    """Item 10. Before: a questions.jsonl linked to a file outside the release was imported; a second, conflicting
    label row silently won; a run made invalid by a stray label still exited 0; ANSI escapes in a folder name
    were printed raw."""
    release = _release_copy(tmp_path)
    damage(release)
    out = tmp_path / "out"
    got, stdout, stderr = cli(["import", "sqb", str(release), "--out", str(out)])
    assert got == code and expect in stderr, (got, stderr)
    assert "\x1b" not in stdout + stderr
    if code == 2:  # refused before anything was written
        assert not out.exists() or not any(out.rglob("*.json*"))
