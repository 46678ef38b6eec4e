"""Read access to a built corpus, and the split that keeps generators on the past side.

``CorpusStore`` opens any built corpus after checking its manifest seal.
``PastCorpus`` is the only corpus object handed to generators: it refuses a
manifest whose role is not ``past``. The future corpus is opened by the scorer
(``backtest.scoring.score``/``backtest.retrieve``) through :func:`open_future_corpus`.
"""

from __future__ import annotations

import datetime as dt
import json
from functools import cached_property
from pathlib import Path
from typing import Iterator

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.records import CorpusManifest, CorpusRecord
from backtest.core.seal import compute_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import INDEX_FILE, RECORDS_FILE, iter_index, load_manifest, verify_corpus


class CorpusStore:
    """A built, sealed corpus on disk: its manifest, index and records."""

    def __init__(self, manifest: CorpusManifest, ws: Workspace, verify: bool = False):
        if compute_seal(manifest.model_dump(mode="json")) != manifest.seal:
            raise CheckFailed(f"corpus {manifest.corpus_id}: manifest seal does not verify")
        self.manifest = manifest
        self.ws = ws
        self.dir = ws.corpus_dir(manifest.corpus_id)
        if not (self.dir / RECORDS_FILE).is_file() or not (self.dir / INDEX_FILE).is_file():
            raise BadInput(
                f"corpus {manifest.corpus_id} is not built here ({self.dir}); "
                "run `make instances` or `backtest corpus build`"
            )
        if verify:
            verify_corpus(manifest, ws).raise_if_failed()

    @classmethod
    def open(cls, corpus_id: str, ws: Workspace, verify: bool = False) -> "CorpusStore":
        """Open a corpus by id (``manifests/<id>.json``)."""
        return cls(load_manifest(corpus_id, ws), ws, verify=verify)

    @property
    def corpus_id(self) -> str:
        return self.manifest.corpus_id

    @property
    def seal(self) -> str:
        return self.manifest.seal

    @cached_property
    def dates(self) -> dict[str, dt.date]:
        """Every id's date, read from the index file."""
        return {i: d for i, d, _ in iter_index(self.dir / INDEX_FILE)}

    def __contains__(self, identifier: str) -> bool:
        return identifier in self.dates

    def __len__(self) -> int:
        return self.manifest.n_records

    def iter_records(self) -> Iterator[CorpusRecord]:
        """Stream every record in file order."""
        with open(self.dir / RECORDS_FILE, encoding="utf-8") as handle:
            for line in handle:
                yield CorpusRecord.model_validate(json.loads(line))

    @cached_property
    def _by_id(self) -> dict[str, CorpusRecord]:
        return {r.id: r for r in self.iter_records()}

    def get(self, identifier: str) -> CorpusRecord | None:
        """The record with ``identifier`` (loads the corpus into memory on first use)."""
        return self._by_id.get(identifier)

    def records(self) -> list[CorpusRecord]:
        """All records, in file order (cached)."""
        return list(self._by_id.values())

    @property
    def records_path(self) -> Path:
        return self.dir / RECORDS_FILE


class PastCorpus(CorpusStore):
    """The past corpus of an instance: the only corpus a generator ever receives."""

    def __init__(self, manifest: CorpusManifest, ws: Workspace, cutoff: dt.date, verify: bool = False):
        if manifest.role != "past":
            raise CheckFailed(
                f"corpus {manifest.corpus_id} has role {manifest.role!r}; generators read past corpora only"
            )
        super().__init__(manifest, ws, verify=verify)
        self.cutoff = cutoff
