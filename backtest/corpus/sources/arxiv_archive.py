"""``arxiv-archive``: per-category TSV (xz) files of arXiv metadata, one row per paper.

Columns (header row; the first column is an unnamed row number): ``abstract,
acm_class, arxiv_id, author_text, categories, comments, created, doi, ...,
title, ...``. Fields may hold quoted newlines, so rows are read with ``csv``.
The date is ``created`` (the first version's submission day).
"""

from __future__ import annotations

import csv
import datetime as dt
import lzma
import operator
from pathlib import Path
from typing import Iterator

from ...errors import BadInput
from . import RowSource, clean_text, expand_inputs, open_text_prefetched, register

REQUIRED = ("arxiv_id", "abstract", "title", "created", "categories", "author_text", "doi")
csv.field_size_limit(1 << 26)


@register("arxiv-archive")
class ArxivArchive(RowSource):
    """Reads a folder of ``<category>.tsv.xz`` files, or a list of them."""

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """Folders expand to their ``*.tsv.xz`` / ``*.tsv`` files; all files are read sorted by name.

        Sorting makes the reading order (and so which row of a cross-listed paper is kept)
        independent of the order the inputs were given in; a file given twice is read once.
        """
        files = {p.name: p for p in expand_inputs(inputs, "*.tsv*")}
        return [files[name] for name in sorted(files)]

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream every row of every file as a record."""
        for path in files:
            yield from self._file_rows(path)

    def _file_rows(self, path: Path) -> Iterator[dict]:
        handle = open_text_prefetched(path)
        reader = csv.reader(handle, delimiter="\t")
        line = 0
        try:
            with handle:
                header = next(reader, None)
                if header is None:
                    raise BadInput(f"{path}:1: empty file (expected a header row)")
                missing = [c for c in REQUIRED if c not in header]
                if missing:
                    raise BadInput(f"{path}:1: header lacks column(s) {', '.join(missing)}")
                pick = operator.itemgetter(*(header.index(name) for name in REQUIRED))
                width = len(header)
                days: dict[str, dt.date] = {}
                for row in reader:
                    if len(row) != width:
                        raise BadInput(f"{path}:{reader.line_num}: expected {width} tab-separated columns, got {len(row)}")
                    yield _record(pick(row), days, path, reader.line_num)
        except UnicodeDecodeError:
            raise BadInput(f"{path}:{reader.line_num + 1}: not valid UTF-8") from None
        except (lzma.LZMAError, EOFError) as exc:
            raise BadInput(f"{path}:{reader.line_num + 1}: corrupt or truncated xz data ({exc})") from None
        except csv.Error as exc:
            raise BadInput(f"{path}:{reader.line_num}: malformed TSV ({exc})") from None


def _record(fields: tuple[str, ...], days: dict[str, dt.date], path: Path, line: int) -> dict:
    """One row's fields (in ``REQUIRED`` order) as a record dict; optional fields left out when empty."""
    identifier, abstract, title, created, categories, authors, doi = fields
    identifier = identifier.strip()
    if not identifier:
        raise BadInput(f"{path}:{line}: empty arxiv_id")
    day = created.strip()[:10]
    published = days.get(day)
    if published is None:
        try:
            published = days[day] = dt.date.fromisoformat(day)
        except ValueError:
            raise BadInput(f"{path}:{line}: bad 'created' date {created.strip()!r}") from None
    row = {
        "id": identifier,
        "title": clean_text(title),
        "abstract": clean_text(abstract),
        "published": published,
        "categories": [c for c in map(str.strip, categories.split(",")) if c],
        "authors": [a for a in map(str.strip, authors.split(",")) if a],
        "source": "arxiv-archive",
    }
    doi = doi.strip()
    if doi:
        row["doi"] = doi
    return row
