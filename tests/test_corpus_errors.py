"""Malformed inputs to `corpus build`: exit 2, one line naming file and line, nothing half-written.

Every case starts from a workspace that already holds a good build of the same corpus id,
and checks that the failed build changed no file and added none under corpora/ or manifests/.
"""

from __future__ import annotations

import csv
import json
import lzma
import os
from pathlib import Path

import pytest

from backtest.core.workspace import Workspace

from .conftest import ARCHIVE, needs_shared

DAILY_ROWS = [
    {"id": f"2511.0000{i}", "title": f"Paper {i}", "summary": f"Abstract {i}.", "categories": ["astro-ph.EP"]}
    for i in range(1, 6)
]


def _daily_folder(root: Path) -> Path:
    folder = root / "daily"
    folder.mkdir(parents=True)
    for day in ("2025-11-03", "2025-11-04"):
        with lzma.open(folder / f"{day}.jsonl.xz", "wt") as handle:
            handle.write("".join(json.dumps(r) + "\n" for r in DAILY_ROWS))
    return folder


def _snapshot(ws: Workspace) -> dict[str, bytes]:
    out = {}
    for top in (ws.corpora, ws.manifests):
        for path in sorted(top.rglob("*")):
            out[str(path.relative_to(ws.root))] = path.read_bytes() if path.is_file() else b"<dir>"
    return out


@pytest.fixture
def good(tmp_path, cli):
    """A workspace with a good build of corpus `c`, the daily folder it came from, and a build command."""
    folder = _daily_folder(tmp_path)
    ws = Workspace(tmp_path / "ws")

    def build(*extra, source="arxiv-daily", inputs=(folder,)):
        args = ["corpus", "build", "--source", source, "--id", "c", "--role", "future"]
        for item in inputs:
            args += ["--input", item]
        return cli(args + list(extra), root=ws.root)

    assert build()[0] == 0
    return ws, folder, build


def _assert_refused(ws, before, result, *needles):
    code, _, err = result
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert _snapshot(ws) == before, "a failed build changed or added files"


def test_truncated_xz(good):
    ws, folder, build = good
    before = _snapshot(ws)
    path = folder / "2025-11-04.jsonl.xz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _assert_refused(ws, before, build(), "2025-11-04.jsonl.xz:1:", "truncated xz")


def test_bad_json_line(good):
    ws, folder, build = good
    before = _snapshot(ws)
    with lzma.open(folder / "2025-11-04.jsonl.xz", "wt") as handle:
        handle.write(
            json.dumps(DAILY_ROWS[0]) + "\n" + json.dumps(DAILY_ROWS[1]) + "\n" + '{"id": "2511.9", "title": \n'
        )
    _assert_refused(ws, before, build(), "2025-11-04.jsonl.xz:3:", "bad JSON")


@needs_shared
def test_tsv_row_with_missing_columns(good, tmp_path):
    """A real archive header and rows, then a row cut short."""
    ws, _, build = good
    before = _snapshot(ws)
    with lzma.open(ARCHIVE / "physics.space-ph.tsv.xz", "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader)
        row = next(r for r in reader if not any("\n" in f or '"' in f for f in r))  # a one-line row
    bad = tmp_path / "physics.bad-ph.tsv"
    bad.write_text(
        "\t".join(header) + "\n" + "\t".join(row) + "\n" + "123\tan abstract\t\t1501.00001\n", encoding="utf-8"
    )
    _assert_refused(ws, before, build(source="arxiv-archive", inputs=(bad,)), "physics.bad-ph.tsv:3:", "columns")


@needs_shared
def test_truncated_real_archive_file(good, tmp_path):
    ws, _, build = good
    before = _snapshot(ws)
    cut = tmp_path / "physics.space-ph.tsv.xz"
    data = (ARCHIVE / "physics.space-ph.tsv.xz").read_bytes()
    cut.write_bytes(data[: len(data) // 3])
    _assert_refused(
        ws, before, build(source="arxiv-archive", inputs=(cut,)), "physics.space-ph.tsv.xz:", "truncated xz"
    )


def test_unknown_category(good):
    ws, _, build = good
    before = _snapshot(ws)
    _assert_refused(
        ws, before, build("--categories", "astro-ph.EP,astro-hp.SR"), "unknown arXiv category 'astro-hp.SR'"
    )


def test_empty_window(good):
    ws, _, build = good
    before = _snapshot(ws)
    _assert_refused(ws, before, build("--start", "2025-12-01", "--end", "2025-11-01"), "empty window")
    _assert_refused(
        ws, before, build("--start", "2026-01-01", "--end", "2026-02-01"), "empty corpus", "n_outside_window=5"
    )


def test_unreadable_paths(good, tmp_path):
    ws, folder, build = good
    before = _snapshot(ws)
    missing = tmp_path / "nowhere" / "2025-11-05.jsonl.xz"
    _assert_refused(ws, before, build(inputs=(missing,)), str(missing), "no such file")
    empty = tmp_path / "empty"
    empty.mkdir()
    _assert_refused(ws, before, build(inputs=(empty,)), str(empty), "no files matching")
    misnamed = tmp_path / "listing.jsonl"
    misnamed.write_text(json.dumps(DAILY_ROWS[0]) + "\n")
    _assert_refused(ws, before, build(inputs=(misnamed,)), "listing.jsonl", "not a listing day")
    if os.geteuid() != 0:  # root reads any file, so this case only runs as a normal user
        locked = folder / "2025-11-04.jsonl.xz"
        locked.chmod(0)
        try:
            _assert_refused(ws, before, build(), "2025-11-04.jsonl.xz", "cannot")
        finally:
            locked.chmod(0o644)


def test_bad_record_fields_name_the_line(good, tmp_path):
    ws, _, build = good
    before = _snapshot(ws)
    src = tmp_path / "records.jsonl"
    src.write_text(
        json.dumps({"id": "a", "title": "t", "abstract": "x", "published": "2025-11-03", "source": "s"})
        + "\n"
        + json.dumps({"id": "b", "title": "t", "abstract": "x", "published": "not-a-day", "source": "s"})
        + "\n"
    )
    _assert_refused(ws, before, build(source="jsonl", inputs=(src,)), "records.jsonl:2:")
    _assert_refused(ws, before, build(source="no-such-source"), "unknown source")
