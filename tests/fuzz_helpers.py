"""The fuzzing helpers shared by tests/test_fuzz.py and scripts/attack_table.py: seeded single-bit flips
checked by the verifier that owns each file, and seeded hostile mutations of a submission."""

from __future__ import annotations

import json
import random
from pathlib import Path

from backtest.corpus.build import load_manifest, verify_corpus
from backtest.submit.freeze import verify_frozen, verify_ledger_and_sets


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


MUTATIONS = ("drop_field", "retype", "huge", "empty", "binary", "nested", "dup_line", "cut_line", "bad_meta", "nul")


def mutate(rng: random.Random, lines: list[str], meta: dict) -> tuple[bytes, bytes]:
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
