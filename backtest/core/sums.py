"""``SHA256SUMS`` files in ``sha256sum`` format: parse, verify, write.

A line is ``<64 hex digits><space><space or *><relative path>`` (the format of GNU
``sha256sum``; ``*`` marks binary mode and is accepted). Paths are relative to the
folder holding the file, use ``/``, and may not escape it. Verifying names every
changed, missing or extra file, one problem per line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, read_text_file
from backtest.core.seal import sha256_file

SUMS_FILE = "SHA256SUMS"
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


@dataclass
class SumsReport:
    """The outcome of checking a folder against its ``SHA256SUMS``."""

    folder: Path
    n_files: int = 0
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.extra)

    @property
    def problems(self) -> list[str]:
        """One line per failure, naming the file."""
        return (
            [f"{self.folder / p}: sha256 differs from {SUMS_FILE}" for p in self.changed]
            + [f"{self.folder / p}: listed in {SUMS_FILE} but missing" for p in self.missing]
            + [f"{self.folder / p}: not listed in {SUMS_FILE} (extra file)" for p in self.extra]
        )

    def raise_if_failed(self) -> None:
        """Raise CheckFailed with one line per changed, missing or extra file."""
        if not self.ok:
            raise CheckFailed(
                f"{self.folder}: {len(self.problems)} file(s) do not match {SUMS_FILE}: {self.problems[0]}",
                self.problems,
            )


def _safe_relpath(text: str, where: str) -> str:
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts or "\\" in text or not path.parts:
        raise BadInput(f"{where}: path {text!r} must be relative and stay inside the folder")
    return path.as_posix()


def parse_sums(path: str | Path) -> dict[str, str]:
    """Read a ``SHA256SUMS`` file into ``{relative path: lowercase hex digest}``.

    Raises BadInput naming file and line for a malformed line, an unsafe path or a
    path listed twice.
    """
    path = Path(path)
    text = read_text_file(path)
    sums: dict[str, str] = {}
    # split on newlines only: str.splitlines would also break a line at \v, \f or \x1c, which a file name may hold
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        match = _LINE.match(line)
        if not match:
            raise BadInput(f"{path}:{lineno}: not a sha256sum line ('<64 hex>  <path>')")
        rel = _safe_relpath(match.group(2), f"{path}:{lineno}")
        if rel in sums:
            raise BadInput(f"{path}:{lineno}: {rel} is listed twice")
        sums[rel] = match.group(1).lower()
    return sums


def _files_under(folder: Path, skip: set[str]) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() not in skip
    )


def verify_sums(folder: str | Path, sums_name: str = SUMS_FILE, extra: bool = True) -> SumsReport:
    """Check every file listed in ``folder/SHA256SUMS``; with ``extra``, unlisted files are failures too."""
    folder = Path(folder)
    expected = parse_sums(folder / sums_name)
    report = SumsReport(folder)
    for rel, digest in expected.items():
        target = folder / rel
        if not target.is_file():
            report.missing.append(rel)
            continue
        report.n_files += 1
        if sha256_file(target) != digest:
            report.changed.append(rel)
    if extra:
        report.extra = [rel for rel in _files_under(folder, {sums_name}) if rel not in expected]
    return report


def format_sums(sums: dict[str, str]) -> str:
    """Render ``{path: digest}`` as sha256sum text, sorted by path."""
    return "".join(f"{digest}  {rel}\n" for rel, digest in sorted(sums.items()))


def compute_sums(folder: str | Path, files: list[str] | None = None, sums_name: str = SUMS_FILE) -> dict[str, str]:
    """sha256 of ``files`` (relative paths; default: every file under ``folder`` but the sums file)."""
    folder = Path(folder)
    chosen = files if files is not None else _files_under(folder, {sums_name})
    return {_safe_relpath(rel, str(folder)): sha256_file(folder / rel) for rel in chosen}


def write_sums(folder: str | Path, files: list[str] | None = None, sums_name: str = SUMS_FILE) -> Path:
    """Write ``folder/SHA256SUMS`` atomically for ``files`` (default: every file in the folder)."""
    folder = Path(folder)
    return atomic_write_text(folder / sums_name, format_sums(compute_sums(folder, files, sums_name)))
