"""``arxiv-oai``: the arXiv OAI metadata snapshot, one JSON record per line.

The common dump (``arxiv-metadata-oai-snapshot.json``) has ``id``, ``title``,
``abstract``, ``categories`` (space separated), ``authors`` (one string),
``doi``, ``versions`` ([{version, created: RFC 2822 date}]) and ``update_date``.
A record is dated by its first version (v1); ``update_date`` is used only when
``versions`` is absent. The file is streamed line by line, never loaded whole.
The snapshot's ids carry no version; one that does loses it (:meth:`RowSource.canonical_id`).
"""

from __future__ import annotations

import datetime as dt
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Iterator

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl
from backtest.corpus.sources import RowSource, clean_text, expand_inputs, named


@named("arxiv-oai")
class ArxivOai(RowSource):
    """Reads OAI snapshot JSONL files (optionally ``.xz``)."""

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """Folders expand to their ``*.json*`` files."""
        return expand_inputs(inputs, "*.json*")

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream one record per line, dated by version 1, its id without a version suffix."""
        for path in files:
            for lineno, obj in iter_jsonl(path):
                record = _record(obj, path, lineno)
                record["id"] = self.canonical_id(record["id"])
                yield record


def first_version_date(obj: dict) -> dt.date | None:
    """The day of the earliest listed version, else ``update_date``, else None."""
    days = []
    for version in obj.get("versions") or []:
        created = version.get("created") if isinstance(version, dict) else None
        if created:
            try:
                days.append(parsedate_to_datetime(created).date())
            except (TypeError, ValueError):
                continue
    if days:
        return min(days)
    if obj.get("update_date"):
        try:
            return dt.date.fromisoformat(str(obj["update_date"])[:10])
        except ValueError:
            return None
    return None


def _record(obj: dict, path: Path, lineno: int) -> dict:
    identifier = obj.get("id")
    if not isinstance(identifier, str) or not identifier.strip():
        raise BadInput(f"{path}:{lineno}: missing 'id'")
    published = first_version_date(obj)
    if published is None:
        raise BadInput(f"{path}:{lineno}: no usable date in 'versions' or 'update_date'")
    authors = obj.get("authors_parsed")
    if isinstance(authors, list):
        names = [
            " ".join(p for p in (parts[1:2] + parts[0:1]) if p).strip() for parts in authors if isinstance(parts, list)
        ]
    else:
        names = [a.strip() for a in str(obj.get("authors") or "").replace(" and ", ", ").split(",") if a.strip()]
    return dict(
        id=identifier.strip(),
        title=clean_text(str(obj.get("title") or "")),
        abstract=clean_text(str(obj.get("abstract") or "")),
        published=published,
        categories=str(obj.get("categories") or "").split(),
        authors=names,
        doi=(obj.get("doi") or None),
        references=None,
        citation_count=None,
        citation_count_as_of=None,
        source="arxiv-oai",
    )
