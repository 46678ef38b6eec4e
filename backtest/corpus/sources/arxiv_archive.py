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
                col = {name: header.index(name) for name in REQUIRED}
                width = len(header)
                for row in reader:
                    line = reader.line_num
                    if len(row) != width:
                        raise BadInput(f"{path}:{line}: expected {width} tab-separated columns, got {len(row)}")
                    yield _record(row, col, path, line)
        except UnicodeDecodeError:
            raise BadInput(f"{path}:{reader.line_num + 1}: not valid UTF-8") from None
        except (lzma.LZMAError, EOFError) as exc:
            raise BadInput(f"{path}:{reader.line_num + 1}: corrupt or truncated xz data ({exc})") from None
        except csv.Error as exc:
            raise BadInput(f"{path}:{reader.line_num}: malformed TSV ({exc})") from None


def _record(row: list[str], col: dict[str, int], path: Path, line: int) -> dict:
    created = row[col["created"]].strip()
    try:
        published = dt.date.fromisoformat(created[:10])
    except ValueError:
        raise BadInput(f"{path}:{line}: bad 'created' date {created!r}") from None
    identifier = row[col["arxiv_id"]].strip()
    if not identifier:
        raise BadInput(f"{path}:{line}: empty arxiv_id")
    return dict(
        id=identifier,
        title=clean_text(row[col["title"]]),
        abstract=clean_text(row[col["abstract"]]),
        published=published,
        categories=[c.strip() for c in row[col["categories"]].split(",") if c.strip()],
        authors=[a.strip() for a in row[col["author_text"]].split(",") if a.strip()],
        doi=row[col["doi"]].strip() or None,
        references=None,
        citation_count=None,
        citation_count_as_of=None,
        source="arxiv-archive",
    )
