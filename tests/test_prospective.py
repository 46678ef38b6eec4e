"""Prospective instances end to end on real data: commit from astro-2025 PAST data (astro-ph.EP),
verify, refuse grading before the schedule, grade with the offline judge once the window has passed,
and refuse a committed setting that can no longer be honoured."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from backtest.core.errors import CheckFailed
from backtest.core.fileio import read_json, write_json, write_jsonl
from backtest.core.records import Window, read_output
from backtest.core.seal import with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.store import CorpusStore
from backtest.studies.outputs import Grade, GradeNote
from backtest.studies.prospective.commit import publish_line
from backtest.studies.prospective.grade import plan_grade, window_fraction
from backtest.studies.prospective.records import Commitment
from backtest.studies.prospective.verify import verify_folder

from .conftest import DAILY, run_cli

CUTOFF = "2025-10-31"
WINDOW = "2025-11-01..2026-07-01"
SCHEDULE = "2026-01-01,2026-07-01"
TEMPLATES = (
    "Will independent follow-up observations confirm the central measurement reported in {t}?",
    "Does the interpretation proposed in {t} survive a retrieval with different atmospheric assumptions?",
    "Can a second instrument reproduce the detection claimed in {t}?",
    "Is the trend described in {t} still present in a larger, homogeneous sample?",
)


# The listing at hand ends on 2026-07-01, so no window after today can be graded here: these tests commit as of
# the cutoff day (the commit's clock, and only it, is set back), when 2025-11-01..2026-07-01 was the future.
COMMIT_DAY = dt.datetime(2025, 10, 31, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module", autouse=True)
def committed_on_the_cutoff_day():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("backtest.studies.prospective.commit.utc_now", lambda: COMMIT_DAY)
        yield


def make_submission(folder: Path, ws, n: int = 4, system: str = "hand_ep") -> Path:
    """A small real submission: one question per past astro-ph.EP paper, citing it."""
    past = CorpusStore.open("astro-2025-ep-past", ws)
    records = sorted(past.records(), key=lambda r: r.id)[::97][:n]
    rows = []
    for i, rec in enumerate(records):
        title = " ".join(rec.title.split())[:90]
        rows.append(
            {
                "question_id": f"q_{i + 1:03d}",
                "question": TEMPLATES[i % len(TEMPLATES)].format(t=f"'{title}'"),
                "domain": "exoplanets",
                "cutoff_date": CUTOFF,
                "generated_at": CUTOFF,
                "generation_system": system,
                "source_evidence_ids": [rec.id],
                "rank": i + 1,
                "frozen": True,
            }
        )
    folder.mkdir(parents=True)
    write_jsonl(folder / "questions.jsonl", rows)
    write_json(
        folder / "metadata.json",
        {
            "system_name": system,
            "description": "hand-made questions from astro-2025 past astro-ph.EP papers",
            "cutoff_date": CUTOFF,
            "domain": "exoplanets",
            "n_questions": len(rows),
            "frozen": True,
        },
    )
    return folder


def commit_args(ws, subs, cid="prosp-ep", extra=()):
    return [
        "prospective",
        "commit",
        cid,
        "--cutoff",
        CUTOFF,
        "--window",
        WINDOW,
        "--schedule",
        SCHEDULE,
        *[a for s in subs for a in ("--submissions", s)],
        "--source",
        "arxiv-daily",
        "--input",
        DAILY,
        "--categories",
        "astro-ph.EP",
        "--past",
        "astro-2025-ep-past",
        "--retriever",
        "bm25",
        "--k",
        "4",
        *extra,
    ]


@pytest.fixture(scope="module")
def base_commitment(astro_ep_ws, tmp_path_factory):
    """One commitment made from the astro-2025-ep past corpus, in a module-wide copy of its workspace.

    Tests that only read or refuse use it as is; tests that tamper copy the commitment folder,
    tests that grade copy the workspace."""
    ws = Workspace(tmp_path_factory.mktemp("prosp") / "ws")
    shutil.copytree(astro_ep_ws.root, ws.root)
    sub = make_submission(ws.root / "submissions" / "hand_ep", ws)
    code, out, err = run_cli(commit_args(ws, [sub]), root=ws.root)
    assert code == 0, err
    return ws, ws.root / "prospective" / "prosp-ep"


@pytest.fixture
def committed(base_commitment):
    return base_commitment


@pytest.fixture
def tampered(base_commitment, tmp_path):
    """A writable copy of the commitment folder alone (verify needs nothing else)."""
    _, folder = base_commitment
    dest = tmp_path / folder.name
    shutil.copytree(folder, dest)
    return dest


def test_commit_writes_a_sealed_verifiable_commitment(committed, cli):
    ws, folder = committed
    data = read_json(folder / "COMMITMENT.json")
    commitment = Commitment.model_validate(data)
    # the published line: root and date, one line
    out = publish_line(commitment)
    assert commitment.root in out and commitment.committed_at[:10] in out and "\n" not in out
    assert commitment.cutoff == dt.date(2025, 10, 31)
    assert commitment.window == Window(start=dt.date(2025, 11, 1), end=dt.date(2026, 7, 1))
    assert commitment.schedule == [dt.date(2026, 1, 1), dt.date(2026, 7, 1)]
    decl = commitment.future_declaration
    assert decl["source"] == "arxiv-daily" and decl["categories"] == ["astro-ph.EP"] and decl["inputs"] == [str(DAILY)]
    assert commitment.retrieval.method == "bm25" and commitment.retrieval.k == 4 and commitment.judge.name == "offline"
    assert [s.system for s in commitment.systems] == ["hand_ep"]
    listed = [line.split("  ", 1)[1] for line in (folder / "SHA256SUMS").read_text().splitlines()]
    assert listed == sorted(listed)
    assert {
        "instance.json",
        "past_manifest.json",
        "submissions/hand_ep/questions.jsonl",
        "submissions/hand_ep/metadata.json",
        "submissions/hand_ep/FROZEN.json",
    } == set(listed)
    # the instance is past-only: the future is declared, not built
    instance = read_json(folder / "instance.json")
    assert instance["future"] is None and instance["future_declaration"]["window"] == {
        "start": "2025-11-01",
        "end": "2026-07-01",
    }
    code, vout, err = cli(["prospective", "verify", folder])
    assert code == 0, err
    assert commitment.root in vout and "prosp-ep" in vout


def test_commit_tampering_is_named(tampered, cli):
    folder = tampered
    target = folder / "submissions" / "hand_ep" / "questions.jsonl"
    data = bytearray(target.read_bytes())
    data[40] ^= 0x20
    target.write_bytes(bytes(data))
    code, _, err = cli(["prospective", "verify", folder])
    assert code == 1 and "changed: submissions/hand_ep/questions.jsonl" in err


def test_resealed_commitment_with_a_new_schedule_is_caught(committed, tampered, cli):
    """Editing COMMITMENT.json and resealing it does not help: the committed instance.json disagrees."""
    ws, _ = committed
    folder = tampered
    data = read_json(folder / "COMMITMENT.json")
    data["schedule"] = ["2025-11-15", "2026-07-01"]
    write_json(folder / "COMMITMENT.json", with_seal(data))
    result = verify_folder(folder)
    assert not result.ok and any("schedule" in p for p in result.problems)
    code, _, err = cli(["prospective", "grade", folder, "--as-of", "2025-12-01"], root=ws.root)
    assert code == 1 and "does not verify" in err


def test_commit_refuses_bad_window_and_existing_folder(committed, cli):
    ws, folder = committed
    sub = ws.root / "submissions" / "hand_ep"
    code, _, err = cli(commit_args(ws, [sub]), root=ws.root)
    assert code == 2 and "already exists" in err
    args = commit_args(ws, [sub], cid="prosp-bad")
    args[args.index("--window") + 1] = "2025-10-01..2026-07-01"
    code, _, err = cli(args, root=ws.root)
    assert code == 2 and "not after the cutoff" in err


def test_commit_refuses_a_window_that_is_not_in_the_future(committed, cli, monkeypatch):
    """On the real clock (today is after 2025-11-01), the window the other tests commit to already exists: a
    commitment to it would seal questions after their 'future' was published. Refused, nothing written."""
    from backtest.studies.prospective import commit as commit_module

    ws, _ = committed
    sub = ws.root / "submissions" / "hand_ep"
    monkeypatch.setattr(commit_module, "utc_now", lambda: dt.datetime.now(dt.timezone.utc).replace(microsecond=0))
    code, _, err = cli(commit_args(ws, [sub], cid="prosp-past"), root=ws.root)
    assert code == 2 and "on or before today" in err and len(err.strip().splitlines()) == 1
    assert not (ws.root / "prospective" / "prosp-past").exists()
    # and a commitment that says it was made once its window had started is never graded (a hand-made one)
    commitment = Commitment.model_validate(read_json(committed[1] / "COMMITMENT.json"))
    late = commitment.model_copy(update={"committed_at": "2025-11-02T00:00:00Z"})
    with pytest.raises(CheckFailed, match="already existed when the questions were sealed"):
        plan_grade(late, dt.date(2026, 7, 1), provisional=False, today=dt.date(2026, 12, 3))


def test_commit_generates_reference_systems_against_the_past_only_instance(astro_ep_ws, copy_ws, cli):
    """--generate runs a reference system on the past-only instance the commit creates, stamps generated_at with
    the wall-clock time (the questions are written now, after the cutoff) and commits it beside a submission."""
    ws = copy_ws(astro_ep_ws)
    sub = make_submission(ws.root / "submissions" / "hand_ep", ws)
    before = dt.datetime.now(dt.timezone.utc)
    code, out, err = cli(
        commit_args(ws, [sub], cid="prosp-gen", extra=("--generate", "random_claims", "--n", "6")), root=ws.root
    )
    assert code == 0, err
    folder = ws.root / "prospective" / "prosp-gen"
    commitment = Commitment.model_validate(read_json(folder / "COMMITMENT.json"))
    assert sorted(s.system for s in commitment.systems) == ["hand_ep", "random_claims"]
    questions = folder / "submissions" / "random_claims" / "questions.jsonl"
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    assert len(rows) == 6
    stamps = {dt.datetime.fromisoformat(r["generated_at"].replace("Z", "+00:00")) for r in rows}
    assert all(s >= before.replace(microsecond=0) for s in stamps)
    assert verify_folder(folder).ok


def test_commit_refuses_an_unknown_or_unreachable_system(committed, cli):
    ws, _ = committed
    sub = ws.root / "submissions" / "hand_ep"
    code, _, err = cli(commit_args(ws, [sub], cid="prosp-x", extra=("--generate", "oracle")), root=ws.root)
    assert code == 2 and "--generate 'oracle': unknown system" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli(commit_args(ws, [sub], cid="prosp-y", extra=("--generate", "direct_llm")), root=ws.root)
    assert code == 2 and "needs an LLM endpoint" in err
    assert not (ws.root / "prospective" / "prosp-x").exists() and not (ws.root / "prospective" / "prosp-y").exists()


def test_grading_before_the_schedule_is_refused(committed, cli):
    ws, folder = committed
    code, out, err = cli(["prospective", "grade", folder, "--as-of", "2025-12-15"], root=ws.root)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "not due" in err and "2026-01-01" in err
    assert not (folder / "graded").exists()


def test_grade_plan_fraction_and_provisional_flag(committed):
    _, folder = committed
    commitment = Commitment.model_validate(read_json(folder / "COMMITMENT.json"))
    plan = plan_grade(commitment, dt.date(2025, 12, 15), provisional=True, today=dt.date(2026, 8, 1))
    assert plan.provisional and plan.label == "2025-12-15-provisional" and "PROVISIONAL" in plan.describe()
    assert plan.fraction == pytest.approx(45 / 243)
    due = plan_grade(commitment, dt.date(2026, 3, 1), provisional=False, today=dt.date(2026, 8, 1))
    assert not due.provisional and due.scheduled == dt.date(2026, 1, 1)
    assert window_fraction(commitment.window, dt.date(2027, 1, 1)) == 1.0


@pytest.mark.slow
def test_grade_end_to_end_with_the_offline_judge(committed, cli, tmp_path):
    pytest.importorskip("backtest.scoring.score", reason="scoring (backtest.scoring.score) is not in this build yet")
    ws = Workspace(tmp_path / "ws")
    shutil.copytree(committed[0].root, ws.root)
    folder = ws.root / "prospective" / "prosp-ep"
    # provisional first: every output says so and gives the share of the window that has passed
    code, out, err = cli(["prospective", "grade", folder, "--as-of", "2025-12-15", "--provisional"], root=ws.root)
    assert code == 0, err
    assert "PROVISIONAL" in out and "18.5%" in out
    prov = folder / "graded" / "2025-12-15-provisional"
    grade = read_output(Grade, prov / "GRADE.json")
    assert grade.provisional is True and grade.window_end_graded == "2025-12-15"
    assert "PROVISIONAL" in (prov / "GRADE.md").read_text()
    assert read_output(GradeNote, prov / "hand_ep" / "GRADE_NOTE.json").provisional is True
    # the scheduled grade once the whole window has passed
    code, out, err = cli(["prospective", "grade", folder, "--as-of", "2026-07-01", "--json"], root=ws.root)
    assert code == 0, err
    summary = json.loads(out)
    assert (
        summary["provisional"] is False and summary["window_fraction"] == 1.0 and summary["scheduled"] == "2026-07-01"
    )
    row = summary["systems"][0]
    assert row["system"] == "hand_ep" and row["n"] == 4 and row["valid"] is True
    run = folder / row["graded_run"]
    judgments = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == 4 and all(j["judge"]["name"].startswith("offline") for j in judgments)
    future = CorpusStore.open(summary["future_corpus"]["corpus_id"], ws)
    assert min(future.dates.values()) > dt.date(2025, 10, 31) and max(future.dates.values()) <= dt.date(2026, 7, 1)
    retrieved = [json.loads(line) for line in (run / "retrieval.jsonl").read_text().splitlines()]
    assert all(doc["id"] in future for r in retrieved for doc in r["documents"])
    # graded runs sit beside the commitment, which still verifies
    assert verify_folder(folder).ok
    code, _, err = cli(["prospective", "grade", folder, "--as-of", "2026-07-01"], root=ws.root)
    assert code == 2 and "already graded" in err


def test_changed_judge_config_is_reported_not_swapped(astro_ep_ws, copy_ws, cli, tmp_path):
    ws = copy_ws(astro_ep_ws)
    sub = make_submission(ws.root / "submissions" / "hand_ep", ws, n=2)
    judge = ws.root / "judges" / "pinned.toml"
    judge.parent.mkdir(parents=True, exist_ok=True)
    judge.write_text('kind = "offline-cues-v1"\nname = "pinned"\nengage_doc_sim = 0.45\n')
    code, out, err = cli(commit_args(ws, [sub], cid="prosp-judge", extra=("--judge", str(judge))), root=ws.root)
    assert code == 0, err
    folder = ws.root / "prospective" / "prosp-judge"
    # stdout is exactly the one line to publish: the root and the date
    assert out == publish_line(Commitment.model_validate(read_json(folder / "COMMITMENT.json"))) + "\n"
    assert (folder / "judge" / "pinned.toml").read_bytes() == judge.read_bytes()
    judge.write_text('kind = "offline-cues-v1"\nname = "pinned"\nengage_doc_sim = 0.5\n')
    code, _, err = cli(["prospective", "grade", folder, "--as-of", "2026-07-01"], root=ws.root)
    assert code == 1 and "pinned.toml changed" in err
    judge.unlink()
    code, _, err = cli(["prospective", "grade", folder, "--as-of", "2026-07-01"], root=ws.root)
    assert code == 1 and "pinned.toml is missing" in err
    assert not (folder / "graded").exists()


def test_missing_retriever_model_is_reported(astro_ep_ws, copy_ws, cli, monkeypatch):
    ws = copy_ws(astro_ep_ws)
    sub = make_submission(ws.root / "submissions" / "hand_ep", ws, n=2)
    args = commit_args(ws, [sub], cid="prosp-dense")
    args[args.index("--retriever") + 1] = "dense"
    code, _, err = cli(args, root=ws.root)
    assert code == 0, err
    folder = ws.root / "prospective" / "prosp-dense"
    assert read_json(folder / "instance.json")["future_declaration"]["retrieval_model_fingerprint"].startswith(
        "all-MiniLM-L6-v2:"
    )
    import backtest.text.embed as embed
    from backtest.core.errors import BadInput

    def gone(name):
        raise BadInput(f"embedding model {name!r}: no such folder on disk")

    monkeypatch.setattr(embed, "resolve_model_path", gone)
    monkeypatch.setattr(embed, "model_fingerprint", lambda name: embed.resolve_model_path(name))
    code, _, err = cli(["prospective", "grade", folder, "--as-of", "2026-07-01"], root=ws.root)
    assert code == 1 and "retriever model all-MiniLM-L6-v2 is not available" in err


def test_changed_judge_code_is_reported_not_swapped(committed, cli, monkeypatch):
    """The offline judge's identity (protocol, lexicon and settings hashes) is committed; if the code that
    would label the questions changed since, grading refuses instead of using the new judge."""
    ws, folder = committed
    assert (
        Commitment.model_validate(read_json(folder / "COMMITMENT.json")).future_declaration["judge_info"]["name"]
        == "offline"
    )
    import backtest.judge.fitted as fitted

    monkeypatch.setattr(fitted, "PROTOCOL", fitted.PROTOCOL + "-edited")
    code, _, err = cli(["prospective", "grade", folder, "--as-of", "2026-07-01"], root=ws.root)
    assert code == 1 and "would now label differently" in err and "-edited" in err
    assert not (folder / "graded").exists()


def test_failed_commit_leaves_nothing_and_can_be_retried(astro_ep_ws, copy_ws, cli):
    """A commit that fails part-way writes no commitment folder (it is assembled aside and renamed in whole);
    before, a half commitment (instance file, ledger lines, no COMMITMENT.json) blocked a retry."""
    ws = copy_ws(astro_ep_ws)
    good = make_submission(ws.root / "submissions" / "good_ep", ws, system="good_ep")
    bad = make_submission(ws.root / "submissions" / "bad_ep", ws, system="bad_ep")
    rows = [json.loads(line) for line in (bad / "questions.jsonl").read_text().splitlines()]
    rows[0]["source_evidence_ids"] = ["2601.99999"]  # not in the past corpus: the freeze gate fails
    write_jsonl(bad / "questions.jsonl", rows)
    code, out, err = cli(commit_args(ws, [good, bad], cid="half-ep"), root=ws.root)
    assert code == 1, err
    folder = ws.root / "prospective" / "half-ep"
    assert not folder.exists() and not list((ws.root / "prospective").glob(".half-ep.*"))
    code, out, err = cli(commit_args(ws, [good], cid="half-ep"), root=ws.root)
    assert code == 0, err
    assert (folder / "COMMITMENT.json").is_file()
    assert cli(["prospective", "verify", folder], root=ws.root)[0] == 0
