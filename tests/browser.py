"""Headless Chromium for the tests that open a page in a real browser (Debian's chromium: `make install-browser`,
which `.ci/run` calls; the tests skip without it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# the background-networking flags keep Chromium from dialling Google's hosts on this closed network
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    """The browser's path; skips the test when there is none."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium not installed (make install-browser)")
    return browser


def run_chromium(url: str, profile: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """Open ``url`` headless with a fresh profile folder and ``args`` (``--screenshot=...``, ``--dump-dom``)."""
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
