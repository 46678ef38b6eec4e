"""evidence_graph's reading gate (issue 40) on the real astro-2025 past corpus and its committed decisions
(``gates/astro-2025/``): export, import, the refusals, and a set that is a function of the corpus, the seed and
the decisions."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.generators.candidates import author_rule
from backtest.generators.gate import (
    acceptance,
    check_decisions,
    draw_batch,
    export_batch,
    import_sheet,
    read_decisions,
    yield_table,
)
from tests.conftest import REPO, run_cli

GATE = REPO / "gates" / "astro-2025"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def found(astro_ws):
    """The candidates of astro-2025's past corpus and its seal (claims and dense vectors cached in the workspace)."""
    from backtest.generators import generation_context
    from backtest.generators.evidence_graph import EvidenceGraph

    ctx = generation_context("astro-2025", astro_ws)
    _, candidates, _ = EvidenceGraph().candidates(ctx)
    return candidates, ctx.past.seal


def test_author_stated_rules_follow_the_coded_studies():
    """Cue words next to a word for prior work fire; novelty claims, negations and expectations do not."""
    assert author_rule("Our value is in 3.1 sigma tension with the SH0ES measurement.")[0] == "sigma_tension_with"
    assert author_rule("Contrary to previous reports, we find no water.")[0] == "contrary_to_prior"
    assert author_rule("These results disagree with the published values of Smith.")[0] == "disagree_with_prior"
    assert author_rule("The two spectra disagree strongly.") is None  # no word for prior work
    assert author_rule("Unlike previous studies, we use a neural network.") is None  # a novelty claim
    assert author_rule("Our results do not contradict the earlier detection.") is None  # a negation
    assert author_rule("Contrary to expectations, the disc is cold.") is None


def test_every_committed_decision_matches_its_candidate(found):
    candidates, seal = found
    decisions = read_decisions(GATE)
    assert decisions, "gates/astro-2025 holds no decisions"
    decided = check_decisions(decisions, candidates, seal, str(GATE))
    assert len(decided) == len(decisions)  # one decision a candidate
    table = yield_table(decisions, candidates)
    assert table["read"] == len(decisions) and 0 < table["accepted"] < table["read"]
    random_draws = sum(ch["random_read"] for ch in table["channels"].values())
    assert random_draws >= 0.05 * len(decisions)  # about one in ten drawn at random


def test_export_is_blinded_ranked_and_seeded(found, tmp_path):
    candidates, seal = found
    folder = export_batch(tmp_path / "gate", "astro-2025", seal, candidates, 40, seed=3)
    items = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    decode = json.loads((folder / "decode.json").read_text())
    assert len(items) == 40 and decode["past_seal"] == seal
    shown = (folder / "items.jsonl").read_text() + (folder / "items.md").read_text()
    for c in candidates:
        for side in c.claims:
            assert side.paper_id not in shown  # no paper id reaches the reader
    assert not any(word in shown for word in ("author_stated", "dense_neighbour", "priority"))
    drawn = [i["drawn"] for i in decode["items"]]
    assert drawn.count("random") == 4
    ranked = [i["priority"] for i in decode["items"] if i["drawn"] == "ranked"]
    random_ids = {i["candidate_id"] for i in decode["items"] if i["drawn"] == "random"}
    prior = acceptance(candidates, [])
    pool = sorted((p for cid, p in prior.items() if cid not in random_ids), reverse=True)
    assert sorted(ranked, reverse=True) == pool[: len(ranked)]  # the best of the rest of the pool by the prior
    again = draw_batch(candidates, set(), [], 40, seed=3, batch="batch-001")
    assert [c.candidate_id for c, _, _ in again] == [i["candidate_id"] for i in decode["items"]]


def _filled(folder: Path, path: Path, edit=None) -> Path:
    items = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "decision", "type", "reason", "notes"])
        for k, item in enumerate(items):
            row = (
                [item["item_id"], "accept", item["proposed_type"], "", "ok"]
                if k % 2
                else [item["item_id"], "reject", "", "topic_neighbours", "same topic"]
            )
            writer.writerow(edit(k, row) if edit else row)
    return path


def test_import_refuses_what_it_cannot_trust(found, tmp_path):
    candidates, seal = found
    gate = tmp_path / "gate"
    folder = export_batch(gate, "astro-2025", seal, candidates, 10, seed=0)

    def refused(sheet: Path, match: str, past_seal: str = seal, batch: Path = folder) -> None:
        with pytest.raises(BadInput, match=match):
            import_sheet(gate, batch, sheet, "reader_x", candidates, past_seal)
        assert not (gate / "decisions").exists() or not any((gate / "decisions").iterdir())

    refused(
        _filled(folder, tmp_path / "unknown.csv", lambda k, r: ["zzz-001", *r[1:]] if k == 0 else r), "not in batch-001"
    )
    refused(
        _filled(folder, tmp_path / "undecided.csv", lambda k, r: [r[0], "", "", "", ""] if k == 3 else r),
        "decision must be accept or reject",
    )
    refused(
        _filled(folder, tmp_path / "notype.csv", lambda k, r: [r[0], "accept", "", "", ""] if k == 1 else r),
        "needs a type",
    )
    refused(_filled(folder, tmp_path / "ok.csv"), "another corpus", past_seal="0" * 64)
    changed = tmp_path / "changed"
    shutil.copytree(folder, changed)
    decode = json.loads((changed / "decode.json").read_text())
    decode["items"][0]["content_sha256"] = "f" * 64
    (changed / "decode.json").write_text(json.dumps(decode))
    refused(_filled(folder, tmp_path / "ok2.csv"), "unknown or changed", batch=changed)

    out = import_sheet(gate, folder, _filled(folder, tmp_path / "ok3.csv"), "reader_x", candidates, seal)
    decisions = read_decisions(gate)
    assert len(decisions) == 10 and {d.reader for d in decisions} == {"reader_x"}
    assert all(d.past_seal == seal and len(d.content_sha256) == 64 for d in decisions)
    with pytest.raises(BadInput, match="already recorded"):
        import_sheet(gate, folder, tmp_path / "ok3.csv", "reader_x", candidates, seal)
    # a decision on a candidate that has since changed is refused where the set is built
    lines = out.read_text().splitlines()
    row = json.loads(lines[0])
    row["content_sha256"] = "e" * 64
    out.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    with pytest.raises(BadInput, match="changed since it was read"):
        check_decisions(read_decisions(gate), candidates, seal, str(gate))


def test_reviewed_set_is_a_function_of_corpus_seed_and_decisions(astro_ws, found, tmp_path, capsys):
    """Two builds from the committed decisions are byte-identical; every question rests on an accepted candidate
    with the type its reader gave; no paper is the source of more than three."""
    args = ["generate", "evidence_graph", "--instance", "astro-2025", "--reviewed", str(GATE), "--n", "500"]
    first, second = tmp_path / "a", tmp_path / "b"
    assert run_cli([*args, "--out", str(first)], root=astro_ws.root)[0] == 0
    assert run_cli([*args, "--out", str(second)], root=astro_ws.root)[0] == 0
    for name in ("questions.jsonl", "metadata.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    accepted = {d.candidate_id: d.type for d in read_decisions(GATE) if d.decision == "accept"}
    questions = [json.loads(line) for line in (first / "questions.jsonl").read_text().splitlines()]
    assert questions
    sources: dict[str, int] = {}
    for q in questions:
        assert accepted[q["tension"]["candidate_id"]] == q["signal_type"]
        for pid in q["source_evidence_ids"]:
            sources[pid] = sources.get(pid, 0) + 1
    assert max(sources.values()) <= 3
    notes = json.loads((first / "metadata.json").read_text())["generator_notes"]
    assert notes["gate"].startswith("careful reading") and notes["readers_could_know_after_cutoff"] is True
    assert len(notes["decisions_sha256"]) == 64 and notes["accepted"] == len(accepted)
    # the committed claim notes: every question quotes its annotator's stated later finding, none is asked of a
    # tension its annotator found not askable
    from backtest.generators.claim_notes import read_notes

    stated = {n.candidate_id: n for n in read_notes(GATE)}
    assert notes["claims_stated"] == len(stated) == len(accepted) and len(notes["claim_notes_sha256"]) == 64
    for q in questions:
        note = stated[q["tension"]["candidate_id"]]
        assert note.askable and note.later in q["question"] and q["tension"]["stated_by"] == note.reader
    # without its claim notes the gate builds the set frozen before they were stated, byte for byte
    bare = tmp_path / "bare"
    shutil.copytree(GATE, bare, ignore=shutil.ignore_patterns("claim-notes"))
    assert (
        run_cli([*args[:4], "--reviewed", str(bare), "--n", "500", "--out", str(tmp_path / "c")], root=astro_ws.root)[0]
        == 0
    )
    frozen_v4 = REPO / "frozen" / "astro-2025" / "evidence_graph" / "v4" / "questions.jsonl"
    rebuilt, frozen = ((tmp_path / "c" / "questions.jsonl").read_text(), frozen_v4.read_text())
    # the test workspace's instance words its domain its own way; every other byte is the frozen set's
    domain = json.loads(frozen.splitlines()[0])["domain"]
    assert rebuilt.replace(json.loads(rebuilt.splitlines()[0])["domain"], domain) == frozen
    code, _, err = run_cli(
        ["generate", "random_claims", "--instance", "astro-2025", "--reviewed", str(GATE)],
        root=astro_ws.root,
        capsys=capsys,
    )
    assert code == 2 and "evidence_graph only" in err


def test_generate_review_export_writes_the_next_batch(astro_ws, found, tmp_path, capsys):
    """``generate evidence_graph --review-export`` is ``gate export``; a second call draws the next batch from what
    is left, and ``--review-export`` with ``--reviewed`` is a usage error."""
    gate = tmp_path / "gate"
    args = ["generate", "evidence_graph", "--instance", "astro-2025", "--review-export", str(gate), "--batch-size", "5"]
    assert run_cli(args, root=astro_ws.root, capsys=capsys)[0] == 0
    assert run_cli(args, root=astro_ws.root, capsys=capsys)[0] == 0
    first, second = (json.loads((gate / b / "decode.json").read_text()) for b in ("batch-001", "batch-002"))
    assert not {i["candidate_id"] for i in first["items"]} & {i["candidate_id"] for i in second["items"]}
    code, _, err = run_cli([*args, "--reviewed", str(GATE)], root=astro_ws.root, capsys=capsys)
    assert code == 2 and "--review-export" in err


def test_claims_export_and_import_refuse_what_they_cannot_trust(found, tmp_path):
    """The gate's second read: accepted tensions exported with their abstracts (no paper id), an annotator's
    answers checked whole and recorded once; a note on a candidate the gate did not accept is refused."""
    from backtest.generators.claim_notes import check_notes, export_claims, import_answers, read_notes

    candidates, seal = found
    gate = tmp_path / "gate"
    shutil.copytree(GATE / "decisions", gate / "decisions")
    decisions = read_decisions(gate)
    decided = check_decisions(decisions, candidates, seal, str(gate))
    folder = export_claims(gate, "astro-2025", seal, decisions, decided, {}, size=6)
    assert folder is not None and folder.name == "claims-001"
    items = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    accepted = [d for d in decisions if d.decision == "accept"][:6]
    assert [i["type"] for i in items] == [d.type for d in accepted]  # the type the gate gave, in decision order
    shown = (folder / "items.jsonl").read_text() + (folder / "items.md").read_text()
    assert not any(s.paper_id in shown for d in accepted for s in decided[d.candidate_id].claims)
    assert export_claims(gate, "astro-2025", seal, decisions, decided, {}, size=6).name == "claims-002"

    def answers(name: str, edit=None) -> Path:
        rows = []
        for k, item in enumerate(items):
            row = {
                "item_id": item["item_id"],
                "askable": True,
                "earlier": "an earlier finding about X",
                "later": "a later finding about X",
                "data_set": "the X survey",
                "reason": "",
            }
            rows.append(edit(k, row) if edit else row)
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r is not None))
        return path

    def refused(path: Path, match: str, past_seal: str = seal) -> None:
        with pytest.raises(BadInput, match=match):
            import_answers(gate, folder, path, "annotator_x", decisions, past_seal)
        assert not (gate / "claim-notes").exists()

    refused(answers("unknown.json", lambda k, r: {**r, "item_id": "c009-001"} if k == 0 else r), "not in claims-001")
    refused(answers("missing.json", lambda k, r: None if k == 2 else r), "unanswered")
    refused(answers("twice.json", lambda k, r: {**r, "item_id": items[0]["item_id"]} if k == 1 else r), "twice")
    refused(answers("noreason.json", lambda k, r: {**r, "askable": False} if k == 0 else r), "needs a reason")
    refused(answers("long.json", lambda k, r: {**r, "later": "x" * 181} if k == 0 else r), "at most 180")
    refused(answers("ok.json"), "another corpus", past_seal="0" * 64)
    out = import_answers(gate, folder, answers("ok.json"), "annotator_x", decisions, seal)
    notes = read_notes(gate)
    assert len(notes) == 6 and {n.reader for n in notes} == {"annotator_x"} and out.name == "claims-001.jsonl"
    assert set(check_notes(notes, decisions, str(gate))) == {d.candidate_id for d in accepted}
    with pytest.raises(BadInput, match="already recorded"):
        import_answers(gate, folder, answers("ok.json"), "annotator_x", decisions, seal)
    rejected = next(d for d in decisions if d.decision == "reject")
    stray = notes[0].model_copy(update={"candidate_id": rejected.candidate_id})
    with pytest.raises(BadInput, match="on no accepted candidate"):
        check_notes([stray], decisions, str(gate))
