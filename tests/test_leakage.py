"""The eight leakage checks on a real astro-2025 (astro-ph.EP) run: a clean run passes all of
them, and each planted violation is caught by its check.

The clean run: 12 questions hand-made from real past-corpus records, frozen with
``freeze_submission``, real BM25 retrieval from the future corpus, and hand-written
judgments citing the top document each question was shown. Each test copies that
workspace, plants one violation and asserts exactly which checks fail (tampering with
a sealed file also breaks ``integrity``, which is expected and asserted).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from backtest.core.fileio import write_json, write_jsonl
from backtest.core.records import EvidenceItem, JudgeInfo, Judgment
from backtest.core.seal import sha256_bytes, sha256_file, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import INDEX_FILE, RECORDS_FILE, load_manifest, manifest_text
from backtest.corpus.instance import load_instance
from backtest.retrieve import retrieve_frozen
from backtest.submit.freeze import freeze_submission
from backtest.validity.leakage import CHECKS, check_run, leakage_record

from .submission_helpers import metadata, past_records, question_rows, write_submission

INSTANCE = "astro-2025-ep"
CUTOFF = dt.date(2025, 10, 31)
ALL = [
    "cutoff",
    "evidence_in_past",
    "retrieved_in_future",
    "citations_shown",
    "ids_aligned",
    "windows",
    "corpora_disjoint",
    "integrity",
]


def hand_judgments(retrievals) -> list[dict]:
    """One judgment per question citing the top document it was shown (or none when nothing was shown)."""
    info = JudgeInfo(name="hand", model=None, protocol="hand-written for the leakage tests")
    out = []
    for r in retrievals:
        top = r.documents[:1]
        out.append(
            Judgment(
                question_id=r.question_id,
                outcome="partially_addressed" if top else "not_addressed",
                premise_status="still_plausible",
                evidence=[EvidenceItem(id=d.id, relevance="top-ranked later paper") for d in top],
                supporting_ids=[d.id for d in top],
                rationale="hand label",
                judge=info,
                provenance="human",
            ).model_dump(mode="json")
        )
    return out


def build_clean_run(ws: Workspace, sub_dir: Path, n: int = 12) -> Path:
    """Freeze a hand-made submission, retrieve with BM25, write hand judgments and RUN.json; return the run folder."""
    rows = question_rows(past_records(ws, INSTANCE, n=n, seed=3), system="hand_leak")
    write_submission(sub_dir, rows, metadata(len(rows), system="hand_leak"))
    frozen = freeze_submission(sub_dir, INSTANCE, ws)
    run_dir = ws.results / INSTANCE / "hand_leak" / "bm25-hand"
    retrievals = retrieve_frozen(frozen, ws, out_path=run_dir, method="bm25")
    write_jsonl(run_dir / "judgments.jsonl", hand_judgments(retrievals))
    instance = load_instance(INSTANCE, ws)
    write_json(
        run_dir / "RUN.json",
        {
            "schema_version": "1",
            "run_id": "bm25-hand",
            "instance_id": INSTANCE,
            "instance_seal": instance.seal,
            "system": "hand_leak",
            "frozen_path": frozen.relative_to(ws.root).as_posix(),
            "frozen_seal": json.loads((frozen / "FROZEN.json").read_text())["seal"],
            "retriever": retrievals[0].retriever,
            "judge": {"name": "hand"},
            "valid": True,
            "leakage": [],
        },
    )
    return run_dir


@pytest.fixture(scope="module")
def clean_ws(astro_ep_ws, tmp_path_factory) -> Workspace:
    """A private copy of the astro-2025-ep workspace holding one clean scored run."""
    root = tmp_path_factory.mktemp("leak") / "ws"
    shutil.copytree(astro_ep_ws.root, root)
    ws = Workspace(root)
    build_clean_run(ws, root.parent / "submission")
    return ws


RUN_REL = Path("results") / INSTANCE / "hand_leak" / "bm25-hand"


@pytest.fixture
def tampered(clean_ws, copy_ws):
    """A fresh copy of the clean workspace and its run folder, to plant a violation in."""
    ws = copy_ws(clean_ws)
    return ws, ws.root / RUN_REL


def failed(ws: Workspace, run_dir: Path) -> dict[str, list[str]]:
    return {r.name: r.offenders for r in check_run(run_dir, ws) if not r.passed}


# --------------------------------------------------------------------------- file surgery


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def frozen_dir(ws: Workspace) -> Path:
    return ws.root / json.loads((ws.root / RUN_REL / "RUN.json").read_text())["frozen_path"]


def edit_question(ws: Workspace, index: int, **changes) -> str:
    path = frozen_dir(ws) / "questions.jsonl"
    rows = read_lines(path)
    rows[index].update(changes)
    write_lines(path, rows)
    return rows[index]["question_id"]


def corpus_lines(ws: Workspace, corpus_id: str) -> list[bytes]:
    return (ws.corpus_dir(corpus_id) / RECORDS_FILE).read_bytes().splitlines()


def reseal_corpus_with(ws: Workspace, corpus_id: str, extra_lines: list[bytes]) -> None:
    """Append record lines to a built corpus and rewrite its index and manifest so they seal again."""
    folder = ws.corpus_dir(corpus_id)
    lines = corpus_lines(ws, corpus_id) + extra_lines
    (folder / RECORDS_FILE).write_bytes(b"".join(line + b"\n" for line in lines))
    rows = sorted(f"{json.loads(l)['id']}\t{json.loads(l)['published']}\t{sha256_bytes(l)}\n".encode() for l in lines)
    (folder / INDEX_FILE).write_bytes(b"".join(rows))
    manifest = load_manifest(corpus_id, ws).model_dump(mode="json")
    manifest.update(
        n_records=len(lines),
        index_sha256=sha256_bytes(b"".join(rows)),
        records_sha256=sha256_file(folder / RECORDS_FILE),
    )
    manifest.pop("seal")
    ws.manifest_path(corpus_id).write_text(manifest_text(with_seal(manifest)), encoding="utf-8")


def future_line(ws: Workspace) -> bytes:
    return corpus_lines(ws, f"{INSTANCE}-future")[0]


# --------------------------------------------------------------------------- the clean run


def test_clean_run_passes_all_eight(clean_ws, cli):
    run_dir = clean_ws.root / RUN_REL
    results = check_run(run_dir, clean_ws)
    assert [r.name for r in results] == ALL == [c.__name__.removeprefix("check_") for c in CHECKS]
    assert all(r.passed for r in results), [r.summary for r in results if not r.passed]
    assert leakage_record(results)["valid"] is True
    # the clean run is real: 12 frozen questions, 8 future documents each, all cited ids shown
    retrievals = read_lines(run_dir / "retrieval.jsonl")
    assert len(retrievals) == 12 and all(len(r["documents"]) == 8 for r in retrievals)
    assert all(dt.date.fromisoformat(d["published"]) > CUTOFF for r in retrievals for d in r["documents"])
    code, out, err = cli(["leakage", str(run_dir)], root=clean_ws.root)
    assert code == 0, err
    assert out.count("ok  ") == 8 and "FAIL" not in out
    code, out, _ = cli(["leakage", str(run_dir), "--json"], root=clean_ws.root)
    data = json.loads(out)
    assert code == 0 and data["valid"] is True and [c["status"] for c in data["leakage"]] == ["passed"] * 8


# --------------------------------------------------------------------------- planted violations


def test_wrong_cutoff_in_a_question(tampered, cli):
    ws, run_dir = tampered
    qid = edit_question(ws, 0, cutoff_date="2025-11-30")
    bad = failed(ws, run_dir)
    assert set(bad) == {"cutoff", "integrity"}  # the edit also breaks the frozen set's hash
    assert bad["cutoff"] == [f"{qid}: cutoff_date 2025-11-30 != {CUTOFF}"]
    code, out, err = cli(["leakage", str(run_dir)], root=ws.root)
    assert code == 1
    failures = [line.removeprefix("error:").strip() for line in err.splitlines()]
    assert [line.split()[1] for line in failures] == ["cutoff", "integrity"]
    assert all(line.startswith("leakage ") and " failed: " in line for line in failures)
    assert "FAIL cutoff" in out and qid in out


def test_evidence_from_the_future_corpus(tampered):
    ws, run_dir = tampered
    future_id = json.loads(future_line(ws))["id"]
    qid = edit_question(ws, 1, source_evidence_ids=[future_id])
    bad = failed(ws, run_dir)
    assert set(bad) == {"evidence_in_past", "integrity"}
    assert bad["evidence_in_past"] == [f"{qid}: {future_id} not in past corpus {INSTANCE}-past"]


def test_evidence_dated_after_the_cutoff(tampered):
    # a past corpus that (re-sealed) holds a record dated after the cutoff, cited as evidence
    ws, run_dir = tampered
    late = json.loads(future_line(ws))
    late["id"] = "2511.99999"
    reseal_corpus_with(ws, f"{INSTANCE}-past", [json.dumps(late, sort_keys=True, separators=(",", ":")).encode()])
    qid = edit_question(ws, 2, source_evidence_ids=["2511.99999"])
    bad = failed(ws, run_dir)
    assert set(bad) == {"evidence_in_past", "corpora_disjoint", "integrity"}
    assert bad["evidence_in_past"] == [f"{qid}: 2511.99999 dated {late['published']}, after cutoff {CUTOFF}"]


def test_retrieved_document_from_the_past_corpus(tampered):
    ws, run_dir = tampered
    past_rec = past_records(ws, INSTANCE, n=1, seed=99)[0]
    path = run_dir / "retrieval.jsonl"
    rows = read_lines(path)
    rows[0]["documents"][-1].update(id=past_rec.id, published=past_rec.published.isoformat())  # not the cited top-1
    rows[1]["documents"][-1]["published"] = CUTOFF.isoformat()  # a future id shown with a date on the cutoff
    write_lines(path, rows)
    bad = failed(ws, run_dir)
    assert set(bad) == {"retrieved_in_future"}  # retrieval.jsonl is not sealed: integrity still holds
    assert bad["retrieved_in_future"] == [
        f"{rows[0]['question_id']}: {past_rec.id} not in future corpus {INSTANCE}-future",
        f"{rows[1]['question_id']}: {rows[1]['documents'][-1]['id']} dated {CUTOFF}, not after cutoff {CUTOFF}",
    ]


def test_citation_of_a_document_not_shown(tampered):
    ws, run_dir = tampered
    retrievals = read_lines(run_dir / "retrieval.jsonl")
    shown0 = {d["id"] for d in retrievals[0]["documents"]}
    foreign = next(d["id"] for r in retrievals[1:] for d in r["documents"] if d["id"] not in shown0)
    path = run_dir / "judgments.jsonl"
    rows = read_lines(path)
    rows[0]["evidence"].append({"id": foreign, "relevance": "planted"})
    write_lines(path, rows)
    bad = failed(ws, run_dir)
    assert set(bad) == {"citations_shown"}
    assert bad["citations_shown"] == [f"{rows[0]['question_id']}: cites {foreign}, which it was not shown"]


@pytest.mark.parametrize("kind", ["missing", "duplicate"])
def test_missing_or_duplicate_judgment(tampered, kind):
    ws, run_dir = tampered
    path = run_dir / "judgments.jsonl"
    rows = read_lines(path)
    qid = rows[5]["question_id"]
    rows = rows[:5] + rows[6:] if kind == "missing" else rows[:6] + [rows[5]] + rows[6:]
    write_lines(path, rows)
    bad = failed(ws, run_dir)
    assert set(bad) == {"ids_aligned"}
    assert bad["ids_aligned"] == [
        f"judgments: missing {qid}" if kind == "missing" else f"judgments: {qid} appears 2 times"
    ]


def test_window_violation_in_a_resealed_instance(tampered):
    ws, run_dir = tampered
    path = ws.instance_path(INSTANCE)
    data = json.loads(path.read_text())
    data["future"]["window"]["start"] = "2025-10-15"
    data.pop("seal")
    path.write_text(manifest_text(with_seal(data)), encoding="utf-8")
    assert load_instance(INSTANCE, ws).future.window.start == dt.date(2025, 10, 15)  # the seal verifies
    bad = failed(ws, run_dir)
    assert set(bad) == {"windows", "integrity"}  # the frozen set and RUN.json name the old instance seal
    assert bad["windows"] == [
        f"future window (instance {INSTANCE}-future) starts 2025-10-15, not after cutoff {CUTOFF}"
    ]


def test_record_in_both_corpora_and_a_past_id_from_a_later_month(tampered):
    ws, run_dir = tampered
    shared = future_line(ws)
    shared_id = json.loads(shared)["id"]
    early = json.loads(corpus_lines(ws, f"{INSTANCE}-past")[0])
    early["id"] = "2512.99998"  # yymm 2512 > cutoff month 2025-10, dated on or before the cutoff
    reseal_corpus_with(
        ws, f"{INSTANCE}-past", [shared, json.dumps(early, sort_keys=True, separators=(",", ":")).encode()]
    )
    bad = failed(ws, run_dir)
    assert set(bad) == {"corpora_disjoint", "integrity"}  # the re-sealed manifest no longer matches the instance
    assert f"{shared_id}: in both corpora" in bad["corpora_disjoint"]
    assert (
        "2512.99998: arXiv id month 2025-12 is after the cutoff month, yet in the past corpus"
        in bad["corpora_disjoint"]
    )
    assert any("seal differs from the instance's" in o for o in bad["integrity"])


def test_changed_byte_in_a_frozen_file(tampered):
    ws, run_dir = tampered
    path = frozen_dir(ws) / "questions.jsonl"
    data = bytearray(path.read_bytes())
    pos = data.index(b"Does")
    data[pos + 2] = ord("z")  # "Dzes": still valid JSON, still a question
    path.write_bytes(bytes(data))
    bad = failed(ws, run_dir)
    assert set(bad) == {"integrity"}
    assert "questions.jsonl: sha256 differs from FROZEN.json" in bad["integrity"][0]


def test_changed_byte_in_a_corpus_record(tampered):
    ws, run_dir = tampered
    path = ws.corpus_dir(f"{INSTANCE}-future") / RECORDS_FILE
    lines = path.read_bytes().split(b"\n")
    victim = json.loads(lines[10])["id"]
    pos = lines[10].index(b'"abstract":"') + len(b'"abstract":"')
    while not lines[10][pos : pos + 1].isalpha():
        pos += 1
    lines[10] = lines[10][:pos] + (b"Q" if lines[10][pos : pos + 1] != b"Q" else b"R") + lines[10][pos + 1 :]
    path.write_bytes(b"\n".join(lines))
    bad = failed(ws, run_dir)
    assert set(bad) == {"integrity"}
    assert f"future corpus: record {victim}: drifted" in bad["integrity"]
