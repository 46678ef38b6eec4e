"""Instances: the cutoff is enforced by day, seals are checked, and the committed instances verify."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from backtest.core.errors import CheckFailed
from backtest.core.seal import with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus
from backtest.corpus.instance import create_instance, load_instance, open_past_corpus, verify_instance

from .conftest import REPO, needs_shared


def _corpus(ws: Workspace, tmp: Path, cid: str, role: str, rows: list[tuple[str, str]], **kw) -> str:
    src = tmp / f"{cid}.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": i, "title": f"T {i}", "abstract": f"A {i}", "published": d, "source": "test"}) + "\n"
            for i, d in rows
        )
    )
    build_corpus(BuildOptions("jsonl", [src], cid, role, **kw), ws)
    return cid


@pytest.fixture
def small(tmp_path):
    ws = Workspace(tmp_path / "ws")
    _corpus(ws, tmp_path, "good-past", "past", [("p1", "2025-10-01"), ("p2", "2025-10-31")])
    _corpus(ws, tmp_path, "good-future", "future", [("f1", "2025-11-01"), ("f2", "2026-01-05")])
    return ws, tmp_path


def test_create_and_verify_small_instance(small, cli):
    ws, _ = small
    code, out, err = cli(
        [
            "instance",
            "create",
            "i",
            "--cutoff",
            "2025-10-31",
            "--past",
            "good-past",
            "--future",
            "good-future",
            "--k",
            "5",
        ],
        root=ws.root,
    )
    assert code == 0, err
    inst = load_instance("i", ws)
    assert inst.retrieval.k == 5 and inst.past.corpus_id == "good-past" and inst.cutoff == dt.date(2025, 10, 31)
    assert inst.retrieval.model == "all-MiniLM-L6-v2"  # torch fp32: a bare name
    assert cli(["instance", "verify", "i"], root=ws.root)[0] == 0
    assert open_past_corpus(inst, ws).corpus_id == "good-past"
    code, _, err = cli(
        [
            "instance",
            "create",
            "i",
            "--cutoff",
            "2025-10-31",
            "--past",
            "good-past",
            "--future",
            "good-future",
            "--k",
            "6",
            "--reproduce",
        ],
        root=ws.root,
    )
    assert code == 1 and "does not reproduce" in err and "retrieval" in err
    assert load_instance("i", ws).retrieval.k == 5


def test_past_record_after_cutoff_is_refused(small, cli):
    ws, tmp = small
    _corpus(ws, tmp, "late-past", "past", [("p1", "2025-10-01"), ("late1", "2025-11-02")])
    code, _, err = cli(
        ["instance", "create", "i", "--cutoff", "2025-10-31", "--past", "late-past", "--future", "good-future"],
        root=ws.root,
    )
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert "late1 (2025-11-02)" in err and "after the cutoff 2025-10-31" in err
    assert not ws.instance_path("i").exists()


def test_future_record_on_the_cutoff_day_is_refused(small, cli):
    ws, tmp = small
    _corpus(ws, tmp, "early-future", "future", [("f1", "2025-11-01"), ("same-day", "2025-10-31")])
    code, _, err = cli(
        ["instance", "create", "i", "--cutoff", "2025-10-31", "--past", "good-past", "--future", "early-future"],
        root=ws.root,
    )
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert "same-day (2025-10-31)" in err and "on or before the cutoff" in err
    assert not ws.instance_path("i").exists()


def test_swapped_roles_and_tampered_corpora_are_refused(small, cli):
    ws, _ = small
    code, _, err = cli(
        ["instance", "create", "i", "--cutoff", "2025-10-31", "--past", "good-future", "--future", "good-past"],
        root=ws.root,
    )
    assert code == 1 and "expected past" in err
    records = ws.corpus_dir("good-future") / "records.jsonl"
    records.write_text(records.read_text().replace('"A f2"', '"A f3"'))
    code, _, err = cli(
        ["instance", "create", "i", "--cutoff", "2025-10-31", "--past", "good-past", "--future", "good-future"],
        root=ws.root,
    )
    assert code == 1 and "record f2: drifted" in err


@needs_shared
def test_instance_verify_astro_and_detects_a_changed_manifest(astro_ws, copy_ws, cli):
    code, out, err = cli(["instance", "verify", "astro-2025"], root=astro_ws.root)
    assert code == 0 and out.startswith("OK astro-2025"), err
    ws = copy_ws(astro_ws)
    # a re-sealed future manifest (say, a rebuild with another window) no longer matches the instance
    manifest = json.loads(ws.manifest_path("astro-2025-future").read_text())
    manifest["window"]["end"] = "2026-06-30"
    ws.manifest_path("astro-2025-future").write_text(json.dumps(with_seal(manifest)))
    problems = verify_instance(load_instance("astro-2025", ws), ws)
    assert problems and "future corpus astro-2025-future: manifest seal" in problems[0]
    code, _, err = cli(["instance", "verify", "astro-2025"], root=ws.root)
    assert code == 1 and "does not verify" in err
    inst_path = ws.instance_path("astro-2025")
    data = json.loads(inst_path.read_text())
    data["cutoff"] = "2025-11-30"
    inst_path.write_text(json.dumps(data))
    code, _, err = cli(["instance", "verify", "astro-2025"], root=ws.root)
    assert code == 1 and "seal does not match" in err


def test_committed_instances_are_sealed_and_consistent():
    """The committed instance files name the committed manifests' seals and respect their cutoffs."""
    ws = Workspace(REPO)
    for name, cutoff in (("astro-2025", dt.date(2025, 10, 31)), ("space-2016", dt.date(2016, 12, 31))):
        inst = load_instance(name, ws)
        assert inst.cutoff == cutoff
        for ref, role in ((inst.past, "past"), (inst.future, "future")):
            manifest = json.loads((REPO / "manifests" / f"{ref.corpus_id}.json").read_text())
            assert manifest["seal"] == ref.seal and manifest["role"] == role
        assert inst.past.window.end <= cutoff < inst.future.window.start


def test_library_refusal_lists_every_problem(small):
    ws, tmp = small
    _corpus(ws, tmp, "late-past", "past", [("late1", "2025-11-02")])
    with pytest.raises(CheckFailed) as info:
        create_instance("i", dt.date(2025, 10, 31), "late-past", "good-past", ws)
    message = info.value.message
    assert "late-past window ends 2025-11-02" in message and "role is 'past', expected future" in message
