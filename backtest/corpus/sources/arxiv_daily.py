"""``arxiv-daily``: a folder of daily listing files ``YYYY-MM-DD.jsonl.xz``.

Each line: ``id``, ``title``, ``summary`` (the abstract), ``categories`` and
usually ``authors``. The file name's day is the only date, so a record is dated by
its listing day. Files are read in day order; a paper listed again later
(revision or cross-list) appears again and the corpus builder keeps its first
listing (the rule is written into the manifest).

From 2026-04-25 the listings write versioned ids (``2604.21892v1``; also ``v2``, ``v3`` and
old-style ``astro-ph/9605168v1``); a paper listed before that day without a version may be
listed again with one. Ids are read without their version (:meth:`RowSource.canonical_id`),
so both listings are the same paper and the first one is kept.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Iterator

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl
from backtest.corpus.sources import RowSource, clean_text, expand_inputs, named

DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.jsonl(?:\.xz)?$")


@named("arxiv-daily")
class ArxivDaily(RowSource):
    """Reads daily listing files; the listing day is the record's date; ids lose their version suffix."""

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """Listing files sorted by day; a file whose name is not a day is refused."""
        files = expand_inputs(inputs, "*.jsonl*")
        for path in files:
            if not DAY_FILE.match(path.name):
                raise BadInput(f"{path}: file name is not a listing day (expected YYYY-MM-DD.jsonl[.xz])")
        return sorted(files, key=lambda p: p.name)

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream records, dated by their file's listing day, their ids without a version suffix."""
        for path in files:
            match = DAY_FILE.match(path.name)
            try:
                if match is None:
                    raise ValueError(path.name)
                day = dt.date.fromisoformat(match.group(1))
            except ValueError:
                raise BadInput(f"{path}: file name is not a valid day") from None
            for lineno, obj in iter_jsonl(path):
                record = _record(obj, day, path, lineno)
                record["id"] = self.canonical_id(record["id"])
                yield record


def _record(obj: dict, day: dt.date, path: Path, lineno: int) -> dict:
    identifier = obj.get("id")
    if not isinstance(identifier, str) or not identifier.strip():
        raise BadInput(f"{path}:{lineno}: missing 'id'")
    if "title" not in obj:
        raise BadInput(f"{path}:{lineno}: missing 'title'")
    categories = obj.get("categories") or []
    if isinstance(categories, str):
        categories = categories.split()
    authors = obj.get("authors") or []
    if isinstance(authors, str):
        authors = [a.strip() for a in authors.split(",") if a.strip()]
    if not isinstance(categories, list) or not isinstance(authors, list):
        raise BadInput(f"{path}:{lineno}: 'categories' and 'authors' must be lists")
    return dict(
        id=identifier.strip(),
        title=clean_text(str(obj.get("title") or "")),
        abstract=clean_text(str(obj.get("summary") or obj.get("abstract") or "")),
        published=day,
        categories=[str(c) for c in categories],
        authors=[str(a) for a in authors],
        doi=obj.get("doi") or None,
        references=None,
        citation_count=None,
        citation_count_as_of=None,
        source="arxiv-daily",
    )
