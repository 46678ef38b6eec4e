"""Helpers shared by the tests of the reference-release import, compare and agree.

``imported_release()`` imports ``../shared/reference/sqb`` once per test session into a
temporary folder (the import is deterministic, so every test may read the same copy;
tests that modify anything copy it first).
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import pytest

from .conftest import SQB

needs_sqb = pytest.mark.skipif(not (SQB / "submissions").is_dir(), reason=f"reference release not found at {SQB}")

V1L = "results/sqb-astronomy-v1L"
RUNS = {
    name: f"{V1L}/{name}/sqb-release"
    for name in ("random_claim", "citation_leader", "direct_llm", "review_future_work")
}
RUNS["evidence_graph_v1"] = "results/sqb-astronomy-v1/evidence_graph_v1/sqb-release-adjudicated"


@functools.lru_cache(maxsize=1)
def imported_release() -> Path:
    """The release imported with ``backtest.interop.sqb.import_sqb`` (once per session)."""
    from backtest.interop.sqb import import_sqb

    out = Path(tempfile.mkdtemp(prefix="sqb-import-"))
    atexit.register(shutil.rmtree, out, True)
    import_sqb(SQB, out)
    return out
