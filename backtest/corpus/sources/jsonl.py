"""``jsonl``: our own ``CorpusRecord`` lines (what ``corpus fetch`` writes), validated.

An arXiv id written with a version (``2604.21892v1``) loses it (:meth:`RowSource.canonical_id`);
``corpus fetch`` already writes arXiv ids without one, and other ids (bibcodes, OpenAlex) are kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from backtest.core.fileio import iter_jsonl
from backtest.core.records import CorpusRecord, parse_record
from backtest.corpus.sources import RowSource, expand_inputs, named


@named("jsonl")
class JsonlRecords(RowSource):
    """Reads files of ``CorpusRecord`` JSON lines (optionally ``.xz``)."""

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """Folders expand to their ``*.jsonl*`` files."""
        return expand_inputs(inputs, "*.jsonl*")

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream and validate each line; an arXiv id loses its version suffix."""
        for path in files:
            for lineno, obj in iter_jsonl(path):
                row = dict(parse_record(CorpusRecord, obj, f"{path}:{lineno}"))
                row["id"] = self.canonical_id(row["id"])
                yield row

    def records(self, files: list[Path]) -> Iterator[CorpusRecord]:
        """Stream and validate each line; an arXiv id loses its version suffix."""
        for path in files:
            for lineno, obj in iter_jsonl(path):
                record = parse_record(CorpusRecord, obj, f"{path}:{lineno}")
                identifier = self.canonical_id(record.id)
                yield record if identifier == record.id else record.model_copy(update={"id": identifier})
