"""Tampering is caught: any single changed byte in a frozen file, and deleted, reordered or
edited ledger lines, make ``backtest verify`` fail naming the file (or the ledger line)."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from backtest.submit.freeze import freeze_submission, is_frozen_and_intact
from backtest.submit.ledger import append_entry, read_ledger

from .submission_helpers import make_submission, snapshot, writable_ws

FROZEN_FILES = ("questions.jsonl", "metadata.json", "FROZEN.json")


@pytest.fixture(scope="module")
def frozen_ws(astro_ws, tmp_path_factory):
    """A workspace with three frozen sets: hand_a v1, hand_a v2, hand_b v1 (three ledger lines)."""
    base = tmp_path_factory.mktemp("tamper")
    ws = writable_ws(astro_ws, base / "ws")
    sub_a = make_submission(ws, base / "sub_a", n=6, seed=1, system="hand_a")
    sub_b = make_submission(ws, base / "sub_b", n=6, seed=2, system="hand_b")
    freeze_submission(sub_a, "astro-2025", ws)
    freeze_submission(sub_a, "astro-2025", ws)
    freeze_submission(sub_b, "astro-2025", ws)
    return ws


@pytest.fixture
def ws(frozen_ws, tmp_path):
    """A private copy of the frozen workspace (corpora stay symlinked)."""
    dest = tmp_path / "ws"
    shutil.copytree(frozen_ws.root, dest, symlinks=True)
    from backtest.core.workspace import Workspace

    return Workspace(dest)


@pytest.mark.parametrize("name", FROZEN_FILES)
def test_any_single_byte_change_fails_verify_naming_the_file(ws, cli, name):
    folder = ws.frozen / "astro-2025" / "hand_a" / "v1"
    target = folder / name
    original = target.read_bytes()
    rng = random.Random(f"tamper-{name}")
    positions = sorted(rng.sample(range(len(original)), min(40, len(original))))
    positions[:2] = [0, len(original) - 1]  # the first and last bytes too
    for pos in positions:
        changed = bytearray(original)
        changed[pos] = (changed[pos] + rng.randrange(1, 256)) % 256
        target.write_bytes(bytes(changed))
        code, _, err = cli(["verify", folder], root=ws.root)
        assert code == 1, f"byte {pos} of {name} changed but verify passed"
        assert name in err.splitlines()[0], (pos, err)
        ok, reason = is_frozen_and_intact(folder, ws)
        assert not ok and name in reason
    target.write_bytes(original)
    code, _, err = cli(["verify", folder], root=ws.root)
    assert code == 0, err


def test_byte_changes_in_the_ledger_are_reported(ws, cli):
    original = ws.ledger.read_bytes()
    rng = random.Random("ledger")
    for pos in rng.sample(range(len(original)), 30):
        changed = bytearray(original)
        changed[pos] = (changed[pos] + rng.randrange(1, 256)) % 256
        ws.ledger.write_bytes(bytes(changed))
        code, _, err = cli(["verify", ws.frozen], root=ws.root)
        assert code == 1 and "LEDGER.jsonl" in err, (pos, err)
    ws.ledger.write_bytes(original)
    assert cli(["verify", ws.ledger], root=ws.root)[0] == 0


def _lines(ws) -> list[bytes]:
    return ws.ledger.read_bytes().splitlines(keepends=True)


def test_deleted_ledger_line_breaks_the_chain(ws, cli):
    lines = _lines(ws)
    ws.ledger.write_bytes(lines[0] + lines[2])
    code, _, err = cli(["verify", ws.frozen], root=ws.root)
    assert code == 1
    assert "LEDGER.jsonl:2: prev_hash does not match" in err
    assert "hand_a/v2: frozen set has no ledger entry" in err
    ok, reason = is_frozen_and_intact(ws.frozen / "astro-2025" / "hand_a" / "v2", ws)
    assert not ok and "LEDGER.jsonl" in reason


def test_reordered_ledger_lines_break_the_chain(ws, cli):
    lines = _lines(ws)
    ws.ledger.write_bytes(lines[0] + lines[2] + lines[1])
    code, _, err = cli(["verify", ws.ledger], root=ws.root)
    assert code == 1
    assert "LEDGER.jsonl:2: prev_hash does not match" in err and "seq 2, expected 1" in err


def test_truncated_ledger_is_reported(ws, cli):
    lines = _lines(ws)
    ws.ledger.write_bytes(lines[0] + lines[1])
    code, _, err = cli(["verify", ws.frozen], root=ws.root)
    assert code == 1 and "hand_b/v1: frozen set has no ledger entry" in err
    code, _, err = cli(["verify", ws.frozen / "astro-2025" / "hand_b" / "v1"], root=ws.root)
    assert code == 1 and "no ledger entry for frozen/astro-2025/hand_b/v1" in err


def test_broken_ledger_refuses_new_freezes_and_appends(ws, cli, tmp_path):
    lines = _lines(ws)
    ws.ledger.write_bytes(lines[1] + lines[0] + lines[2])
    before = snapshot(ws.frozen)
    sub = make_submission(ws, tmp_path / "sub", n=4, seed=5, system="hand_c")
    code, _, err = cli(["freeze", sub, "--instance", "astro-2025"], root=ws.root)
    assert code == 1 and "ledger" in err.splitlines()[0] and "broken" in err.splitlines()[0]
    assert snapshot(ws.frozen) == before
    with pytest.raises(Exception, match="broken"):
        append_entry(
            ws.ledger,
            {
                "kind": "freeze",
                "instance_id": "x",
                "system": "y",
                "version": 1,
                "path": "p",
                "frozen_seal": "s",
                "frozen_at": "t",
            },
        )
    assert snapshot(ws.frozen) == before


def test_moved_or_removed_frozen_sets_are_reported(ws, cli):
    shutil.rmtree(ws.frozen / "astro-2025" / "hand_b" / "v1")
    code, _, err = cli(["verify", ws.frozen], root=ws.root)
    assert code == 1 and "frozen set frozen/astro-2025/hand_b/v1 is missing" in err
    (ws.frozen / "astro-2025" / "hand_a" / "v2").rename(ws.frozen / "astro-2025" / "hand_a" / "v9")
    ok, reason = is_frozen_and_intact(ws.frozen / "astro-2025" / "hand_a" / "v9", ws)
    assert not ok and "moved or renamed" in reason


def test_an_extra_file_or_a_changed_instance_is_reported(ws):
    folder = ws.frozen / "astro-2025" / "hand_a" / "v1"
    (folder / "notes.txt").write_text("later edit\n")
    ok, reason = is_frozen_and_intact(folder, ws)
    assert not ok and "notes.txt" in reason
    (folder / "notes.txt").unlink()
    assert is_frozen_and_intact(folder, ws)[0]
    inst_path = ws.instance_path("astro-2025")
    data = json.loads(inst_path.read_text())
    data["domain"] = "changed"
    from backtest.core.fileio import write_json
    from backtest.core.seal import with_seal

    write_json(inst_path, with_seal(data))
    ok, reason = is_frozen_and_intact(folder, ws)
    assert not ok and "instance astro-2025: seal" in reason


def test_ledger_entries_round_trip(frozen_ws):
    entries, problems = read_ledger(frozen_ws.ledger)
    assert problems == []
    assert [(e.system, e.version) for e in entries] == [("hand_a", 1), ("hand_a", 2), ("hand_b", 1)]
