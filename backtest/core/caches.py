"""Where derived caches live: one owner for the shared cache's variable and the per-user cache folder.

``BACKTEST_INDEX_CACHE`` (optional) names a folder shared between workspaces (CI, a replay's
scratch workspace, the attack table): vector stores, model exports, retrieval indexes and term
indexes go under it, each in its own sub-folder, so nothing is computed twice. Without it each
lives in its workspace's ``.cache/`` (:attr:`Workspace.cache`), or, for model exports that
belong to no workspace, in the user's cache folder (``$XDG_CACHE_HOME/backtest``, else
``~/.cache/backtest``).

A cache derived by code (claims extracted from a corpus) is keyed by :func:`source_fingerprint` of the
modules whose rules shape it, never by a version number someone must remember to bump.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

SHARED_CACHE_ENV = "BACKTEST_INDEX_CACHE"


def shared_cache(*parts: str) -> Path | None:
    """``$BACKTEST_INDEX_CACHE/<parts...>``, or None when no shared cache is set."""
    root = os.environ.get(SHARED_CACHE_ENV)
    return Path(root, *parts) if root else None


def user_cache(*parts: str) -> Path:
    """The user's cache folder for backtest, ``<parts...>`` under it."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "backtest", *parts)


def source_fingerprint(*modules: str) -> str:
    """sha256 of the source files of ``modules`` (imported names, e.g. ``"backtest.text.lexicon"``), in the order
    given: the key of a cache those modules' rules and tables shape. Any edit to them (a comment too) rebuilds it;
    a stale cache is never served."""
    digest = hashlib.sha256()
    for name in modules:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        source = Path(str(module.__file__)).read_bytes()
        digest.update(f"{name}\0{len(source)}\0".encode())
        digest.update(source)
    return digest.hexdigest()
