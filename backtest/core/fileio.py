"""File helpers: atomic writes, compressed reading, JSONL with line-numbered errors.

Every file this project writes goes through :func:`atomic_write_bytes` (temp file in
the same folder, fsync, ``os.replace``) so a crash never leaves a half-written file; a link is followed, a
device or FIFO written through, a new file made with the umask's mode (:func:`atomic_writer`).
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Any, Iterator

from backtest.core.errors import BadInput


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename) and return the path."""
    with atomic_writer(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file beside ``path`` for streaming writes; rename it into place on success.

    On any exception the temp file is removed and ``path`` is left as it was. What ``path`` already is decides
    the rest, as a shell's ``>`` would:

    * a symbolic link is followed: the file it points to is replaced (the link stays a link);
    * a character device or a FIFO (``/dev/null``, a named pipe) is written through, never replaced (no temp
      file, no rename: there is nothing half-written to avoid);
    * any other path that is not a regular file (a folder, a socket, a block device) is refused (BadInput);
    * a new file gets the mode ``0666`` less the umask; an existing file keeps its mode.
    """
    target = Path(os.path.realpath(path))
    binary = "b" in mode
    try:
        found = os.stat(target)
    except FileNotFoundError:
        found = None
    except OSError as exc:  # a link loop, a path through a file
        raise BadInput(f"{path}: cannot write ({exc.strerror or exc})") from None
    if found is not None and (stat.S_ISCHR(found.st_mode) or stat.S_ISFIFO(found.st_mode)):
        with _open_fd(os.open(target, os.O_WRONLY | os.O_CLOEXEC), binary) as handle:
            yield handle
        return
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise BadInput(f"{path}: not a regular file (a folder, socket or block device): choose another output path")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(target, None if found is None else stat.S_IMODE(found.st_mode))
    try:
        with _open_fd(fd, binary) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _open_fd(fd: int, binary: bool) -> IO[Any]:
    return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def _temp_beside(target: Path, keep_mode: int | None) -> tuple[int, str]:
    """A new temp file in ``target``'s folder, open for writing: mode ``keep_mode`` (an existing file's), else
    ``0666`` less the umask (the kernel applies it to the mode ``open`` is given)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    while True:
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o600 if keep_mode is not None else 0o666)
        except FileExistsError:
            continue
        if keep_mode is not None:
            os.fchmod(fd, keep_mode)
        return fd, tmp


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open a UTF-8 text file, transparently decompressing ``.xz``; raise BadInput if unreadable."""
    path = Path(path)
    try:
        if path.suffix == ".xz":
            return io.TextIOWrapper(lzma.open(path, "rb"), encoding="utf-8", newline="")
        return open(path, encoding="utf-8", newline="")
    except (OSError, lzma.LZMAError) as exc:
        raise BadInput(f"{path}: cannot open ({exc.__class__.__name__}: {exc})") from None


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for a text file, mapping decode/xz errors to BadInput."""
    lineno = 0
    handle = open_text(path)
    try:
        with handle:
            for lineno, line in enumerate(handle, start=1):
                yield lineno, line
    except UnicodeDecodeError:
        raise BadInput(f"{path}:{lineno + 1}: not valid UTF-8") from None
    except (lzma.LZMAError, EOFError) as exc:
        raise BadInput(f"{path}:{lineno + 1}: corrupt or truncated xz data ({exc})") from None
    except OSError as exc:
        raise BadInput(f"{path}:{lineno + 1}: read error ({exc})") from None


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file (``.xz`` allowed)."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{lineno}: bad JSON ({exc.msg})") from None
        except RecursionError:
            raise BadInput(f"{path}:{lineno}: JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise BadInput(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def read_text_file(path: str | os.PathLike[str]) -> str:
    """A UTF-8 text file's contents, raising BadInput naming the file when it is missing, unreadable or not UTF-8."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not valid UTF-8") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read one JSON document, raising BadInput with the file name on any problem."""
    path = Path(path)
    text = read_text_file(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}:{exc.lineno}: bad JSON ({exc.msg})") from None
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply") from None


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON, atomically, with a trailing newline."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> Path:
    """Write rows as canonical JSON lines, atomically."""
    from backtest.core.seal import canonical_json

    return atomic_write_text(path, "".join(canonical_json(row) + "\n" for row in rows))


def read_toml(path: Path | str, what: str = "config") -> dict[str, Any]:
    """A TOML file as a dict, with BadInput naming the file on any problem (missing, unreadable, bad TOML)."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a folder, not a {what} file") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: bad TOML ({exc})") from None
