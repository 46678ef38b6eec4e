"""The on-disk cache of retrieval indexes and embeddings.

Layout: ``corpora/<corpus_id>/index/<method>/<key>/`` holding the index files and
``INDEX.json``. ``key`` is the first 20 hex digits of the sha256 of the canonical
JSON of everything that changes the index: the index format version, the method,
the corpus id and seal, and the method's parameters (for embeddings, the model
fingerprint: name + sha256 of its weights). ``INDEX.json``
(:class:`~backtest.retrieve.outputs.IndexMeta`) records those inputs, the number of
documents and the sha256 of every file.

An index is reused only when its ``INDEX.json`` names exactly the expected inputs
and every file still has its recorded sha256; anything else (stale, foreign,
truncated, edited) is deleted and rebuilt, never trusted. An ``INDEX.json`` of an
unknown ``schema_version`` (a newer backtest's) is refused, naming the file. Builds
write into a temporary folder beside the target and rename it into place, so a crash
never leaves a half-built index.

``BACKTEST_INDEX_CACHE`` (optional) names a second folder, laid out as
``<cache>/<corpus_id>/<method>/<key>/``, shared between workspaces (tests, benches):
an index missing here is copied from there when it passes the same checks, and a
freshly built one is copied there. Nothing from it is trusted without the checks.

Callers hand in documents from
:func:`~backtest.retrieve.protocol.load_future_docs`, i.e. only after the future
manifest seal and records were verified.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, TypedDict, cast

from backtest.core.caches import shared_cache
from backtest.core.errors import BadInput
from backtest.core.fileio import read_json
from backtest.core.records import parse_record, write_output
from backtest.core.seal import sha256_file, sha256_json
from backtest.retrieve.outputs import IndexMeta
from backtest.retrieve.protocol import FutureDocs

INDEX_FORMAT = "1"
META_FILE = "INDEX.json"


class IndexInputDict(TypedDict):
    """:func:`index_inputs`: the inputs an index key hashes, as ``INDEX.json`` records them
    (:class:`~backtest.retrieve.outputs.IndexInputs`)."""

    format: str
    method: str
    corpus_id: str
    corpus_seal: str
    params: Mapping[str, Any]


def index_inputs(docs: FutureDocs, method: str, params: Mapping[str, Any]) -> IndexInputDict:
    """Everything that identifies an index of ``method`` over ``docs`` with ``params``."""
    return {
        "format": INDEX_FORMAT,
        "method": method,
        "corpus_id": docs.corpus_id,
        "corpus_seal": docs.seal,
        "params": params,
    }


def index_key(inputs: IndexInputDict) -> str:
    """The cache key of an index: a short sha256 of its inputs."""
    return sha256_json(inputs)[:20]


def index_dir(docs: FutureDocs, method: str, key: str) -> Path:
    """``corpora/<corpus_id>/index/<method>/<key>/``."""
    return docs.ws.corpus_dir(docs.corpus_id) / "index" / method / key


def _files_of(folder: Path) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != META_FILE}


def read_meta(folder: Path) -> IndexMeta | None:
    """``folder``'s ``INDEX.json``, or None when it is missing or damaged (the index is then rebuilt).

    One written by a newer backtest (an unknown ``schema_version``) is refused: BadInput naming the file."""
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        return None
    try:
        data = read_json(meta_path)
    except BadInput:
        return None
    try:
        return cast(IndexMeta, parse_record(IndexMeta, data, str(meta_path)))
    except BadInput:
        version = data.get("schema_version", IndexMeta.SCHEMA_VERSION) if isinstance(data, dict) else None
        if version is not None and version not in IndexMeta.SUPPORTED_VERSIONS:
            raise
        return None


def is_valid(folder: Path, inputs: IndexInputDict, n_docs: int) -> bool:
    """True when ``folder`` holds an intact index built from exactly ``inputs`` over ``n_docs`` documents."""
    meta = read_meta(folder)
    if meta is None or meta.inputs.model_dump() != inputs or meta.key != index_key(inputs):
        return False
    if meta.n_docs != n_docs or not meta.files:
        return False
    try:
        return _files_of(folder) == meta.files
    except OSError:
        return False


def _shared_dir(docs: FutureDocs, method: str, key: str) -> Path | None:
    return shared_cache(docs.corpus_id, method, key)


_TMP_NAME = re.compile(r"\.(?P<name>.+)\.pid(?P<pid>\d+)\.[^.]+\.tmp")


def _tmp_dir(parent: Path, name: str) -> Path:
    """A fresh temp folder in ``parent`` whose name carries this process's id (so a dead owner can be told)."""
    parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(parent)
    return Path(tempfile.mkdtemp(prefix=f".{name}.pid{os.getpid()}.", suffix=".tmp", dir=parent))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(parent: Path) -> list[Path]:
    """Remove temp folders in ``parent`` left by killed builds (their process is gone); return what was removed.

    A temp folder of an older build without a process id in its name is removed too when
    it is over an hour old."""
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for path in parent.glob(".*.tmp"):
        match = _TMP_NAME.fullmatch(path.name)
        stale = (not _alive(int(match.group("pid")))) if match else (time.time() - path.stat().st_mtime > 3600)
        if stale and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _install(source: Path, folder: Path) -> None:
    """Copy a folder into place atomically (temp copy beside ``folder``, then rename)."""
    tmp = _tmp_dir(folder.parent, folder.name)
    try:
        shutil.rmtree(tmp)
        shutil.copytree(source, tmp)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)


def has_valid(docs: FutureDocs, method: str, params: Mapping[str, Any]) -> bool:
    """True when a valid index for these inputs exists here or in the shared cache (nothing is built)."""
    inputs = index_inputs(docs, method, params)
    key = index_key(inputs)
    shared = _shared_dir(docs, method, key)
    return is_valid(index_dir(docs, method, key), inputs, len(docs)) or (
        shared is not None and is_valid(shared, inputs, len(docs))
    )


def open_or_build(
    docs: FutureDocs, method: str, params: Mapping[str, Any], build: Callable[[Path], None]
) -> tuple[Path, str, bool]:
    """Return ``(folder, key, built)`` for a valid index, calling ``build(tmp_folder)`` when there is none.

    ``build`` writes the index files into the folder it is given. A stale or
    tampered folder under the same key is replaced.
    """
    inputs = index_inputs(docs, method, params)
    key = index_key(inputs)
    folder = index_dir(docs, method, key)
    if is_valid(folder, inputs, len(docs)):
        return folder, key, False
    shared = _shared_dir(docs, method, key)
    if shared is not None and is_valid(shared, inputs, len(docs)):
        _install(shared, folder)
        if is_valid(folder, inputs, len(docs)):
            return folder, key, False
    tmp = _tmp_dir(folder.parent, key)
    try:
        build(tmp)
        meta = {"schema_version": "1", "key": key, "inputs": inputs, "n_docs": len(docs), "files": _files_of(tmp)}
        write_output(tmp / META_FILE, IndexMeta, meta)
        if folder.exists():
            shutil.rmtree(folder)
        try:
            os.replace(tmp, folder)
        except OSError:
            # Another process renamed its build into place first; use it if it is valid.
            if not is_valid(folder, inputs, len(docs)):
                raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
    if shared is not None:
        with contextlib.suppress(OSError):
            _install(folder, shared)
    return folder, key, True
