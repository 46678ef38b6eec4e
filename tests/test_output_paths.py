"""Where an output goes (issue 39, item 4): ``atomic_writer`` writes through a FIFO or character device instead of
replacing it, follows a symbolic link instead of replacing it, refuses a folder, and makes new files with the
umask's mode (an existing file keeps its own). Everything happens in ``tmp_path``: never on ``/dev``."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text
from tests.conftest import REPO, run_cli

FROZEN = REPO / "frozen" / "astro-2025" / "random_claims" / "v3"


def _read_fifo_in_background(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader of ``fifo`` on a daemon thread (opening a FIFO blocks until a writer opens it too)."""
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = _read_fifo_in_background(fifo)
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert got == [b"through the pipe\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temp file left beside it


def test_a_cli_out_to_a_fifo_streams_into_it(tmp_path, capsys):
    """``--out`` of a real command (clarity score of a committed frozen set) into a FIFO: the reader gets every
    line and the FIFO is still a FIFO."""
    fifo = tmp_path / "scores.jsonl"
    os.mkfifo(fifo)
    reader, got = _read_fifo_in_background(fifo)
    code, _, err = run_cli(["clarity", "score", FROZEN, "--out", fifo], root=REPO, capsys=capsys)
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    rows = [json.loads(line) for line in got[0].decode().splitlines()]
    n_questions = sum(1 for line in (FROZEN / "questions.jsonl").read_text().splitlines() if line.strip())
    assert len(rows) == n_questions and all("score" in r for r in rows)


def test_a_symlink_is_followed_not_replaced(tmp_path):
    target = tmp_path / "real" / "report.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    # a dangling link is followed too: the file it names is made
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "real" / "made.json")
    atomic_write_text(dangling, "made\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "made.json").read_text() == "made\n"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_honours_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "new.txt", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == mode


def test_an_existing_file_keeps_its_mode(tmp_path):
    path = tmp_path / "kept.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    old = os.umask(0o077)
    try:
        atomic_write_text(path, "new\n")
    finally:
        os.umask(old)
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_folder_or_socket_is_refused_in_one_line(tmp_path, capsys):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(BadInput, match="not a regular file"):
        atomic_write_text(folder, "x")
    assert folder.is_dir() and not list(folder.iterdir())
    code, _, err = run_cli(["clarity", "score", FROZEN, "--out", tmp_path / "plain.jsonl"], root=REPO, capsys=capsys)
    assert code == 0 and (tmp_path / "plain.jsonl").is_file(), err  # a plain new path still works
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "sock"))
        code, _, err = run_cli(["clarity", "score", FROZEN, "--out", tmp_path / "sock"], root=REPO, capsys=capsys)
        assert stat.S_ISSOCK(os.lstat(tmp_path / "sock").st_mode)  # not replaced
    assert code == 2 and err.startswith("error: ") and "not a regular file" in err and len(err.splitlines()) == 1
