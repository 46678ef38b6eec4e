"""``arxiv-archive``: per-category TSV (xz) files of arXiv metadata, one row per paper.

Columns (header row; the first column is an unnamed row number): ``abstract,
acm_class, arxiv_id, author_text, categories, comments, created, doi, ...,
title, ...``. Fields may hold quoted newlines, so rows are read with ``csv``.
The date is ``created`` (the first version's submission day).

The ``arxiv_id`` column of ``arxiv-archive-2020`` was written through a float: new-style
ids come as ``704.0303`` (``0704.0303``), ``1001.484`` (``1001.4840``), ``1501.0337``
(``1501.03370``) or ``1501.0398400000001`` (``1501.03984``). :func:`repair_float_id`
reads such an id back (:data:`ID_REPAIR_RULE`); old-style ids (``hep-th/9901001``) are
text and come through intact.
"""

from __future__ import annotations

import csv
import datetime as dt
import lzma
import operator
import re
from decimal import Decimal
from pathlib import Path
from typing import Iterator

from backtest.core.errors import BadInput
from backtest.corpus.sources import RowSource, clean_text, expand_inputs, named, open_text_prefetched

REQUIRED = ("arxiv_id", "abstract", "title", "created", "categories", "author_text", "doi")
csv.field_size_limit(1 << 26)

ID_REPAIR_RULE = (
    "arxiv_id values written through a float (a bare decimal number such as 704.0303, 1001.484, "
    "1501.0337 or 1501.0398400000001) are read back as the new-style id they stand for: the integer "
    "part, zero-padded to 4 digits, is the yymm (a valid month, 0704 or later); the fraction is rounded "
    "to the id's 4 digits (yymm up to 1412) or 5 digits (from 1501), and the id is repaired only when "
    "the written number is within 1e-9 of it and its paper number is not 0 (n_ids_repaired, counted "
    "over rows read); any other bare decimal number is kept as written and counted "
    "(n_ids_unrepairable); a repaired id that meets the same id written correctly, in either order, "
    "is a duplicate like any other (the first occurrence wins) and is also counted in "
    "n_repaired_id_collisions"
)
_FLOATED_ID = re.compile(r"(\d{3,4})\.(\d+)", re.ASCII)
_FLOAT_TOLERANCE = Decimal("1e-9")


def repair_float_id(identifier: str) -> str | None:
    """The arXiv id that ``identifier``, written through a float, stands for (:data:`ID_REPAIR_RULE`).

    ``identifier`` itself when it is not a bare decimal number (an old-style id, a versioned
    id) or already the correct id; None when it is a bare decimal number that reads back as
    no single new-style id (yymm not a month from 0704 on, more digits than float noise
    explains, number 0).
    """
    match = _FLOATED_ID.fullmatch(identifier)
    if match is None:
        return identifier
    whole, fraction = match.groups()
    yymm = whole.zfill(4)
    if not ("01" <= yymm[2:] <= "12" and yymm >= "0704"):
        return None
    digits = 4 if yymm < "1501" else 5
    if len(fraction) <= digits:
        number = int(fraction.ljust(digits, "0"))
    else:  # float noise past the id's digits: 1501.0398400000001, 1503.0316599999999
        scaled = Decimal("0." + fraction).scaleb(digits)
        number = int(scaled.to_integral_value())
        if abs(scaled - number) > _FLOAT_TOLERANCE.scaleb(digits) or number >= 10**digits:
            return None
    if number == 0:
        return None
    repaired = f"{yymm}.{number:0{digits}d}"
    return identifier if repaired == identifier else repaired


@named("arxiv-archive")
class ArxivArchive(RowSource):
    """Reads a folder of ``<category>.tsv.xz`` files, or a list of them; float-mangled ids are repaired."""

    count_keys = ("n_ids_repaired", "n_ids_unrepairable", "n_repaired_id_collisions")
    rules = {"id_repair": ID_REPAIR_RULE}

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """Folders expand to their ``*.tsv.xz`` / ``*.tsv`` files; all files are read sorted by name.

        Sorting makes the reading order (and so which row of a cross-listed paper is kept)
        independent of the order the inputs were given in; a file given twice is read once.
        """
        files = {p.name: p for p in expand_inputs(inputs, "*.tsv*")}
        return [files[name] for name in sorted(files)]

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream every row of every file as a record, its id repaired (:func:`repair_float_id`)."""
        for path in files:
            yield from self._file_rows(path)

    def _file_rows(self, path: Path) -> Iterator[dict]:
        handle = open_text_prefetched(path)
        reader = csv.reader(handle, delimiter="\t")
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
                counts = self.counts
                for row in reader:
                    if len(row) != width:
                        raise BadInput(
                            f"{path}:{reader.line_num}: expected {width} tab-separated columns, got {len(row)}"
                        )
                    record = _record(pick(row), days, path, reader.line_num)
                    written = record["id"]
                    identifier = repair_float_id(written)
                    self.last_id_repaired = identifier is not None and identifier != written
                    if identifier is None:
                        counts["n_ids_unrepairable"] = counts.get("n_ids_unrepairable", 0) + 1
                    elif self.last_id_repaired:
                        record["id"] = identifier
                        counts["n_ids_repaired"] = counts.get("n_ids_repaired", 0) + 1
                    # a version suffix is stripped (none of arxiv-archive-2020's 367,100 ids has one)
                    record["id"] = self.canonical_id(record["id"])
                    yield record
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
