"""Seeded fuzzing, bounded in size: tampering is always detected, hostile submissions never crash or write.

* 120 random single-bit flips, each in a random byte of a random file: the files of a real
  frozen set, a real corpus manifest and the ledger. Every flip is detected by the verifier
  that owns the file (``verify_frozen``, ``verify_ledger_and_sets``, ``verify_corpus``).
* 40 random hostile submissions made from a real one (fields deleted, retyped, swapped for
  huge, empty, binary or deeply nested values, lines duplicated or cut): ``backtest freeze``
  ends with exit 0, 1 or 2 and one line — never a traceback or an internal error — and a
  refused submission writes nothing under ``frozen/``.
"""

from __future__ import annotations

import json
import random

import pytest

from backtest.corpus.build import load_manifest, verify_corpus
from backtest.submit.freeze import verify_frozen, verify_ledger_and_sets

from .conftest import frozen_copy
from .fuzz_helpers import _snapshot, flip_trials, mutate

INSTANCE = "astro-2025-ep"


@pytest.fixture(scope="module")
def fuzz_ws(astro_ep_ws, tmp_path_factory):
    ws, frozen, submission = frozen_copy(astro_ep_ws, tmp_path_factory.mktemp("fuzz") / "ws", "random_claims", 4, 9)
    return ws, frozen, submission


def test_random_bit_flips_are_all_detected(fuzz_ws):
    ws, frozen, _ = fuzz_ws
    manifest = ws.manifest_path(f"{INSTANCE}-past")
    targets = sorted(p for p in frozen.iterdir() if p.is_file()) + [ws.ledger, manifest]
    rng = random.Random(20261201)
    assert not verify_frozen(frozen, ws) and not verify_ledger_and_sets(ws)
    assert not verify_corpus(load_manifest(manifest.name[:-5], ws), ws).problems
    flips = flip_trials(ws, frozen, manifest, targets, 120, rng)
    assert [f"trial {k}: {path.name} byte {pos}" for k, (path, pos, detected) in enumerate(flips) if not detected] == []


def test_hostile_submissions_never_crash_or_write(fuzz_ws, cli, tmp_path):
    ws, _, good = fuzz_ws
    lines = (good / "questions.jsonl").read_text().splitlines()
    meta = json.loads((good / "metadata.json").read_text())
    rng = random.Random(7)
    before = _snapshot(ws.frozen)
    for trial in range(40):
        sub = tmp_path / f"s{trial}"
        sub.mkdir()
        q, m = mutate(rng, lines, meta)
        (sub / "questions.jsonl").write_bytes(q)
        (sub / "metadata.json").write_bytes(m)
        code, out, err = cli(["freeze", str(sub), "--instance", INSTANCE], root=ws.root)
        assert code in (0, 1, 2), (trial, code, err)
        assert "Traceback" not in err and "internal error" not in err, (trial, err)
        if code != 0:
            assert _snapshot(ws.frozen) == before, trial
        else:
            before = _snapshot(ws.frozen)  # a mutation that is still a valid submission froze legitimately
