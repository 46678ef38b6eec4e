"""``jsonl``: our own ``CorpusRecord`` lines (what ``corpus fetch`` writes), validated."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ...fileio import iter_jsonl
from ...records import CorpusRecord, parse_record
from . import RowSource, expand_inputs, register


@register("jsonl")
class JsonlRecords(RowSource):
    """Reads files of ``CorpusRecord`` JSON lines (optionally ``.xz``)."""

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """Folders expand to their ``*.jsonl*`` files."""
        return expand_inputs(inputs, "*.jsonl*")

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream and validate each line."""
        for path in files:
            for lineno, obj in iter_jsonl(path):
                yield dict(parse_record(CorpusRecord, obj, f"{path}:{lineno}"))

    def records(self, files: list[Path]) -> Iterator[CorpusRecord]:
        """Stream and validate each line."""
        for path in files:
            for lineno, obj in iter_jsonl(path):
                yield parse_record(CorpusRecord, obj, f"{path}:{lineno}")
