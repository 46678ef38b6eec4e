"""``make demo`` from a clean clone of this repository, with ``../shared`` beside it.

The clone is made with ``git clone`` of the committed HEAD (so nothing untracked or
ignored comes along: no corpora, and of frozen sets and results only the committed release) into a temporary folder
whose ``shared`` is a link to the real ``../shared``. It reuses this checkout's
virtual environment (``VENV=``) instead of installing a second one, and the suite's
index cache (``BACKTEST_INDEX_CACHE``). The demo's instance is ``astro-2025-ep`` (astro-2025's astro-ph.EP
slice, committed manifests reproduced byte for byte). Slow: it builds both corpora from the daily listings
and embeds the 625 future abstracts when the cache does not have them.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

SHARED = REPO.parent / "shared"


@pytest.mark.timeout(3600)  # idle 2 cores: ~2 min cold
def test_make_demo_from_a_clean_clone(tmp_path):
    if not (SHARED / "corpora" / "astro-ph-daily").is_dir():
        pytest.skip(f"{SHARED}/corpora/astro-ph-daily not found")
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "backtest"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True)
    (tmp_path / "shared").symlink_to(SHARED)
    # nothing built; the ledger holds only the committed release's lines (frozen/, results/README.md)
    ledger = clone / "frozen" / "LEDGER.jsonl"
    committed = ledger.read_text().splitlines() if ledger.exists() else []
    assert not (clone / "corpora" / "astro-2025-ep-future").exists()
    show = ["git", "-C", str(clone), "show", "HEAD:frozen/LEDGER.jsonl"]
    at_head = subprocess.run(show, capture_output=True, text=True)
    assert committed == (at_head.stdout.splitlines() if at_head.returncode == 0 else [])

    env = {
        **os.environ,
        "BACKTEST_INDEX_CACHE": os.environ.get("BACKTEST_INDEX_CACHE", str(REPO / ".cache" / "index-cache")),
    }
    env["PYTHONPATH"] = str(clone)  # the clone's own package, not the editable install's
    env.pop("BACKTEST_HOME", None)
    done = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={REPO / '.venv'}"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    match = re.search(r"^report: (\S+report\.html)$", done.stdout, re.MULTILINE)
    assert match, done.stdout[-2000:]
    report = Path(match.group(1))
    report = report if report.is_absolute() else clone / report
    assert report.is_file() and report.is_relative_to(clone / "results" / "astro-2025-ep" / "demo_claims")
    page = report.read_text()
    assert page.count("data:image/png;base64,") >= 3  # outcome bars, premise bars, similarity histogram
    assert (report.parent / "metrics.json").is_file() and (report.parent / "judgments.jsonl").stat().st_size > 0

    # the committed seals were reproduced, and the demo's freeze is on the clone's own ledger
    verify = subprocess.run(
        [str(REPO / ".venv" / "bin" / "backtest"), "verify", "frozen"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # a second run reuses the frozen set and the complete run
    again = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={REPO / '.venv'}"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert again.returncode == 0 and match.group(1) in again.stdout
    lines = ledger.read_text().splitlines()
    assert lines[: len(committed)] == committed and len(lines) == len(committed) + 1  # one demo freeze, appended
