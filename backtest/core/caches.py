"""Where derived caches live: one owner for the shared cache's variable and the per-user cache folder.

``BACKTEST_INDEX_CACHE`` (optional) names a folder shared between workspaces (CI, a replay's
scratch workspace, the attack table): vector stores, model exports, retrieval indexes and term
indexes go under it, each in its own sub-folder, so nothing is computed twice. Without it each
lives in its workspace's ``.cache/`` (:attr:`Workspace.cache`), or, for model exports that
belong to no workspace, in the user's cache folder (``$XDG_CACHE_HOME/backtest``, else
``~/.cache/backtest``).
"""

from __future__ import annotations

import os
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
