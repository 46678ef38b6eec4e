"""Source adapters: each turns one input format into a stream of ``CorpusRecord``s.

Register an adapter with :func:`register`; ``backtest corpus build --source KIND``
looks it up in :data:`SOURCES`. Adapters stream: none may load a whole input.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator, Protocol

from ...errors import BadInput
from ...records import CorpusRecord


class Source(Protocol):
    """A corpus source: a name and a function from input paths to records."""

    name: str

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """The concrete files this source will read, in the order it reads them."""

    def records(self, files: list[Path]) -> Iterator[CorpusRecord]:
        """Stream records from ``files``; raise BadInput naming file and line on bad data."""


SOURCES: dict[str, Callable[[], Source]] = {}


def register(name: str) -> Callable:
    """Class decorator adding a source adapter to the registry under ``name``."""

    def deco(cls):
        cls.name = name
        SOURCES[name] = cls
        return cls

    return deco


def get_source(name: str) -> Source:
    """Instantiate the adapter called ``name`` or raise BadInput listing the known ones."""
    from . import arxiv_archive, arxiv_daily, arxiv_oai, jsonl  # noqa: F401  (registration)

    if name not in SOURCES:
        raise BadInput(f"unknown source {name!r}; known: {', '.join(sorted(SOURCES))}")
    return SOURCES[name]()


def expand_inputs(inputs: list[Path], pattern: str) -> list[Path]:
    """Folders become their files matching ``pattern`` (sorted); files are kept as given."""
    files: list[Path] = []
    for item in inputs:
        if item.is_dir():
            found = sorted(item.glob(pattern))
            if not found:
                raise BadInput(f"{item}: no files matching {pattern}")
            files.extend(found)
        elif item.is_file():
            files.append(item)
        else:
            raise BadInput(f"{item}: no such file or folder")
    return files


_WS = re.compile(r"\s+")


def clean_text(text: str | None) -> str:
    """Collapse runs of whitespace (arXiv abstracts are hard-wrapped) and strip."""
    return _WS.sub(" ", text or "").strip()


NEW_ARXIV_ID = re.compile(r"^(?:arXiv:)?(\d{2})(\d{2})\.\d{4,5}(?:v\d+)?$")
OLD_ARXIV_ID = re.compile(r"^(?:arXiv:)?[a-z\-]+(?:\.[A-Z]{2})?/(\d{2})(\d{2})\d{3}(?:v\d+)?$")


def arxiv_id_month(identifier: str) -> tuple[int, int] | None:
    """(year, month) encoded in an arXiv id's yymm prefix, or None for non-arXiv ids."""
    match = NEW_ARXIV_ID.match(identifier) or OLD_ARXIV_ID.match(identifier)
    if not match:
        return None
    yy, mm = int(match.group(1)), int(match.group(2))
    if not 1 <= mm <= 12:
        return None
    return (1900 + yy if yy >= 91 else 2000 + yy), mm
