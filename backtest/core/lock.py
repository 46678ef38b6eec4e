"""An exclusive advisory lock on a file (``flock``), held for the length of a ``with`` block.

Writers that read, decide and then write (``annotate import`` checking that a reader's file is new,
``annotate adjudicate``, an ONNX export) hold it so that two processes never decide on the same state and
both write: the second waits until the first has written, then sees what it wrote.
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its folder, when missing) until the block ends."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
