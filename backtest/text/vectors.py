"""Vectors computed once: a store of unit vectors keyed by the sha256 of the exact text embedded.

Corpora and instances that share papers (the past and future windows of one source, stress
cutoffs, a prospective instance, the tests' small instance inside the big one) share their
vectors: :func:`embed_cached` embeds only texts the store has not seen, per model fingerprint.

Layout: ``<root>/<model fingerprint>/<sha256 of the file, 32 hex>.npz``, each file a shard
holding ``keys`` (the texts' sha256) and ``vectors``. A shard is written whole (temp file,
fsync, rename) under the name of its own content's hash, so concurrent writers never clash
(each adds its own shard; equal content lands on the same name) and a killed writer leaves
only a temp file, which is ignored. Every shard is checked against its name when read; a
damaged one is skipped (its texts are embedded again) and reported once.

The root is ``$BACKTEST_INDEX_CACHE/vectors`` when that shared cache is set, else the
workspace's ``.cache/vectors``.

A text's vector is the one computed the first time the store saw it. Embedding pads each
batch to its longest text, which moves the last bit of a float32 (measured: at most
1.2e-7) with the company a text keeps; so the store, not the batch, decides the bits, and
a rerun with the same store gives the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from backtest.core.caches import shared_cache
from backtest.core.fileio import atomic_write_bytes
from backtest.core.workspace import Workspace


@dataclass
class EmbedCount:
    """Texts served from the store and texts embedded, summed over this process (for logs and tests)."""

    reused: int = 0
    embedded: int = 0


COUNT = EmbedCount()
_LOCK = threading.Lock()
_LOADED: dict[tuple[str, frozenset[str]], dict[bytes, np.ndarray]] = {}


def store_root(ws: Workspace | None = None) -> Path:
    """Where the vector store lives (module docstring)."""
    return shared_cache("vectors") or (ws or Workspace.from_env()).cache / "vectors"


def text_key(text: str) -> bytes:
    """The store key of a text: the hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest().encode("ascii")


def _safe(fingerprint: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in fingerprint)


class VectorStore:
    """The shards of one model fingerprint."""

    def __init__(self, root: Path, fingerprint: str):
        self.dir = root / _safe(fingerprint)

    def _shards(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.glob("*.npz") if not p.name.startswith("."))

    def load(self) -> dict[bytes, np.ndarray]:
        """Every stored key and vector (verified shards only), kept in this process until a shard is added or
        changed."""
        shards = self._shards()
        memo_key = (str(self.dir), frozenset(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in shards))
        with _LOCK:
            if memo_key in _LOADED:
                return _LOADED[memo_key]
        found: dict[bytes, np.ndarray] = {}
        for shard in shards:
            data = shard.read_bytes()
            if hashlib.sha256(data).hexdigest()[:32] != shard.stem:
                print(f"warning: vector store shard {shard} is damaged; its texts are embedded again", file=sys.stderr)
                continue
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                for key, vector in zip(arrays["keys"], arrays["vectors"]):
                    found.setdefault(bytes(key), vector)
        with _LOCK:
            _LOADED[memo_key] = found
        return found

    def add(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path | None:
        """Write one new shard holding ``keys`` and their ``vectors``; None when there is nothing to add."""
        if not len(keys):
            return None
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(keys, dtype="S64"), vectors=np.ascontiguousarray(vectors, dtype=np.float32))
        data = buffer.getvalue()
        return atomic_write_bytes(self.dir / f"{hashlib.sha256(data).hexdigest()[:32]}.npz", data)


def embed_cached(
    texts: Sequence[str],
    model: str,
    fingerprint: str,
    ws: Workspace | None = None,
    progress: bool = False,
) -> tuple[np.ndarray, EmbedCount]:
    """Unit vectors of ``texts``: from the store where it has them, the rest embedded (on the current
    executor) and added as one shard. Returns the vectors and this call's count."""
    from backtest.text.embed import embed_texts

    store = VectorStore(store_root(ws), fingerprint)
    known = store.load()
    keys = [text_key(t) for t in texts]
    todo: dict[bytes, str] = {}
    for key, text in zip(keys, texts):
        if key not in known and key not in todo:
            todo[key] = text
    fresh: dict[bytes, np.ndarray] = {}
    if todo:
        vectors = embed_texts(list(todo.values()), model=model, progress=progress)
        store.add(list(todo), vectors)
        fresh = dict(zip(todo, vectors))
    count = EmbedCount(reused=len(texts) - len(todo), embedded=len(todo))
    with _LOCK:
        COUNT.reused += count.reused
        COUNT.embedded += count.embedded
    if progress:
        print(
            f"embedding: {len(texts)} texts, {count.reused} from the vector store, {count.embedded} new",
            file=sys.stderr,
        )
    if not texts:
        return embed_texts([], model=model), count
    out = np.stack([fresh[k] if k in fresh else known[k] for k in keys]).astype(np.float32, copy=False)
    return np.ascontiguousarray(out), count
