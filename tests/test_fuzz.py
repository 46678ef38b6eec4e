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
from pathlib import Path

import pytest

from backtest.corpus.build import load_manifest, verify_corpus
from backtest.submit.freeze import verify_frozen, verify_ledger_and_sets

from .conftest import frozen_copy

INSTANCE = "astro-2025-ep"


@pytest.fixture(scope="module")
def fuzz_ws(astro_ep_ws, tmp_path_factory):
    ws, frozen, submission = frozen_copy(astro_ep_ws, tmp_path_factory.mktemp("fuzz") / "ws", "random_claims", 4, 9)
    return ws, frozen, submission


def _snapshot(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} if folder.exists() else {}


def tamper_detected(path: Path, ws, frozen: Path, manifest: Path) -> bool:
    """Whether the verifier that owns ``path`` (the manifest's, the ledger's or the frozen set's) reports a problem."""
    if path == manifest:
        try:
            return bool(verify_corpus(load_manifest(manifest.name[:-5], ws), ws).problems)
        except Exception as exc:  # noqa: BLE001 - a refusal to load is a detection, if it is ours
            return exc.__class__.__name__ in ("BadInput", "CheckFailed")
    if path == ws.ledger:
        return bool(verify_ledger_and_sets(ws))
    return bool(verify_frozen(frozen, ws))


def flip_trials(
    ws, frozen: Path, manifest: Path, targets: list[Path], n: int, rng: random.Random
) -> list[tuple[Path, int, bool]]:
    """``n`` single-bit flips, each in a random byte of a random target and undone after: (file, byte, detected)."""
    out = []
    for _ in range(n):
        path = rng.choice(targets)
        original = path.read_bytes()
        pos = rng.randrange(len(original))
        flipped = bytearray(original)
        flipped[pos] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
        try:
            out.append((path, pos, tamper_detected(path, ws, frozen, manifest)))
        finally:
            path.write_bytes(original)
    return out


def test_random_bit_flips_are_all_detected(fuzz_ws):
    ws, frozen, _ = fuzz_ws
    manifest = ws.manifest_path(f"{INSTANCE}-past")
    targets = sorted(p for p in frozen.iterdir() if p.is_file()) + [ws.ledger, manifest]
    rng = random.Random(20261201)
    assert not verify_frozen(frozen, ws) and not verify_ledger_and_sets(ws)
    assert not verify_corpus(load_manifest(manifest.name[:-5], ws), ws).problems
    flips = flip_trials(ws, frozen, manifest, targets, 120, rng)
    assert [f"trial {k}: {path.name} byte {pos}" for k, (path, pos, detected) in enumerate(flips) if not detected] == []


MUTATIONS = ("drop_field", "retype", "huge", "empty", "binary", "nested", "dup_line", "cut_line", "bad_meta", "nul")


def _mutate(rng: random.Random, lines: list[str], meta: dict) -> tuple[bytes, bytes]:
    rows = [json.loads(line) for line in lines]
    kind = rng.choice(MUTATIONS)
    row = rng.choice(rows)
    key = rng.choice(sorted(row))
    if kind == "drop_field":
        row.pop(key)
    elif kind == "retype":
        row[key] = rng.choice([None, 7, 3.5, True, [], {}, ["x"], "2025-13-45"])
    elif kind == "huge":
        row[key] = "?" * rng.choice([10_000, 300_000])
    elif kind == "empty":
        row[key] = ""
    elif kind == "nested":
        row[key] = json.loads("[" * 50 + "]" * 50)
    elif kind == "bad_meta":
        meta = {**meta, rng.choice(sorted(meta)): rng.choice([None, -1, "", [1]])}
    body = "".join(json.dumps(r) + "\n" for r in rows)
    if kind == "dup_line":
        body += json.dumps(rows[0]) + "\n"
    elif kind == "cut_line":
        body = body[: rng.randrange(1, len(body))]
    data = body.encode()
    if kind == "binary":
        data = data[:20] + bytes(rng.randrange(256) for _ in range(40)) + data[20:]
    elif kind == "nul":
        data = data.replace(b'"', b'"\x00', 1)
    return data, json.dumps(meta).encode()


def test_hostile_submissions_never_crash_or_write(fuzz_ws, cli, tmp_path):
    ws, _, good = fuzz_ws
    lines = (good / "questions.jsonl").read_text().splitlines()
    meta = json.loads((good / "metadata.json").read_text())
    rng = random.Random(7)
    before = _snapshot(ws.frozen)
    for trial in range(40):
        sub = tmp_path / f"s{trial}"
        sub.mkdir()
        q, m = _mutate(rng, lines, meta)
        (sub / "questions.jsonl").write_bytes(q)
        (sub / "metadata.json").write_bytes(m)
        code, out, err = cli(["freeze", str(sub), "--instance", INSTANCE], root=ws.root)
        assert code in (0, 1, 2), (trial, code, err)
        assert "Traceback" not in err and "internal error" not in err, (trial, err)
        if code != 0:
            assert _snapshot(ws.frozen) == before, trial
        else:
            before = _snapshot(ws.frozen)  # a mutation that is still a valid submission froze legitimately
