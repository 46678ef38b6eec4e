"""Canonical JSON, sha256 digests, seals and Merkle roots.

A *seal* is the sha256 of an object's canonical JSON with its ``seal`` field removed.
Canonical JSON: keys sorted, UTF-8, strings NFC-normalised, no insignificant spaces.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path
from typing import Any


def _nfc(obj: Any) -> Any:
    if isinstance(obj, str):
        return unicodedata.normalize("NFC", obj)
    if isinstance(obj, dict):
        return {_nfc(k): _nfc(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nfc(v) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    """Return the canonical JSON text of ``obj`` (sorted keys, NFC, compact, UTF-8 characters kept)."""
    return json.dumps(_nfc(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of ``text`` encoded as UTF-8."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_json(obj: Any) -> str:
    """Hex sha256 of the canonical JSON of ``obj``."""
    return sha256_text(canonical_json(obj))


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def compute_seal(obj: dict[str, Any]) -> str:
    """The seal of a JSON object: sha256 of its canonical JSON without the ``seal`` key."""
    return sha256_json({k: v for k, v in obj.items() if k != "seal"})


def with_seal(obj: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``obj`` with ``seal`` set to its computed seal."""
    out = {k: v for k, v in obj.items() if k != "seal"}
    out["seal"] = compute_seal(out)
    return out


def merkle_root(hex_digests: list[str]) -> str:
    """Merkle root (sha256, pairwise, last node duplicated on odd levels) over hex digests.

    Leaves are taken in the given order; an empty list has the sha256 of the empty string.
    """
    if not hex_digests:
        return sha256_bytes(b"")
    level = [bytes.fromhex(d) for d in hex_digests]
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [hashlib.sha256(level[i] + level[i + 1]).digest() for i in range(0, len(level), 2)]
    return level[0].hex()
