"""Source adapters: each turns one input format into a stream of ``CorpusRecord``s.

Register an adapter with :func:`register`; ``backtest corpus build --source KIND``
looks it up in :data:`SOURCES`. Adapters stream: none may load a whole input.
"""

from __future__ import annotations

import io
import lzma
import queue
import re
import threading
from pathlib import Path
from typing import Callable, Iterator, Protocol

from backtest.core.errors import BadInput
from backtest.core.fileio import open_text
from backtest.core.records import CorpusRecord
from backtest.core.registry import Registry


class Source(Protocol):
    """A corpus source: a name and a function from input paths to records."""

    name: str
    count_keys: tuple[str, ...]  # manifest counts this source adds to (``counts``)
    counts: dict[str, int]
    rules: dict[str, str]  # the source's own rules, recorded in the manifest
    last_id_repaired: bool  # whether the id of the row last yielded was repaired (RowSource)
    last_id_stripped: bool  # whether it lost a version suffix (RowSource.canonical_id)

    def input_files(self, inputs: list[Path]) -> list[Path]:
        """The concrete files this source will read, in the order it reads them."""

    def rows(self, files: list[Path]) -> Iterator[dict]:
        """Stream records from ``files`` as plain dicts of CorpusRecord fields (``published`` a date).

        This is the builder's fast path (no model objects per record); raise BadInput
        naming file and line on bad data.
        """

    def records(self, files: list[Path]) -> Iterator[CorpusRecord]:
        """Stream records from ``files`` as CorpusRecords."""


class RowSource:
    """Base for adapters: ``records`` wraps ``rows`` in CorpusRecords.

    An adapter that changes what it reads (``arxiv-archive`` repairs float-mangled ids)
    names its own manifest counts in ``count_keys`` and its rules in ``rules``; it adds to
    ``counts`` (the builder hands in the manifest's dict) and sets ``last_id_repaired`` for
    the row it last yielded, so the builder can count repaired ids that meet a correct one.

    Every arXiv adapter passes its ids through :meth:`canonical_id`, which strips a version
    suffix (:func:`strip_arxiv_version`), counts it in ``n_id_versions_stripped`` and sets
    ``last_id_stripped``; those counts and :data:`ID_VERSION_RULE` are written into a
    manifest only when an id was stripped (:data:`ID_VERSION_COUNT_KEYS`), so the manifests
    of sources without versioned ids do not change.
    """

    name: str
    count_keys: tuple[str, ...] = ()
    rules: dict[str, str] = {}

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.last_id_repaired = False
        self.last_id_stripped = False

    def canonical_id(self, identifier: str) -> str:
        """``identifier`` without an arXiv version suffix; a stripped id is counted and flagged."""
        bare = strip_arxiv_version(identifier)
        self.last_id_stripped = bare is not identifier
        if self.last_id_stripped:
            self.counts["n_id_versions_stripped"] = self.counts.get("n_id_versions_stripped", 0) + 1
        return bare

    def rows(self, files: list[Path]) -> Iterator[dict]:  # pragma: no cover - overridden
        raise NotImplementedError

    def records(self, files: list[Path]) -> Iterator[CorpusRecord]:
        """Stream records from ``files``; raise BadInput naming file and line on bad data."""
        for row in self.rows(files):
            yield CorpusRecord.model_construct(**row)


# Source adapters (``corpus build --source NAME``). Plugins: entry-point group ``backtest.corpus_sources``.
SOURCES: Registry[Callable[[], Source]] = Registry(
    "source",
    "corpus_sources",
    {
        "arxiv-archive": "backtest.corpus.sources.arxiv_archive:ArxivArchive",
        "arxiv-daily": "backtest.corpus.sources.arxiv_daily:ArxivDaily",
        "arxiv-oai": "backtest.corpus.sources.arxiv_oai:ArxivOai",
        "jsonl": "backtest.corpus.sources.jsonl:JsonlRecords",
    },
)


def named(name: str) -> Callable:
    """Class decorator setting ``cls.name = name`` (the name records and manifests carry)."""

    def deco(cls):
        cls.name = name
        return cls

    return deco


def get_source(name: str) -> Source:
    """Instantiate the adapter called ``name`` or raise BadInput listing the known ones."""
    return SOURCES.get(name)()


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


def clean_text(text: str | None) -> str:
    """Collapse runs of whitespace (arXiv abstracts are hard-wrapped) and strip.

    ``str.split()`` splits on exactly the characters ``re``'s ``\\s`` matches
    (``str.isspace``), so this equals ``re.sub(r"\\s+", " ", text).strip()``, only faster.

    Fast path: the only whitespace character that ``str.isprintable`` accepts is the plain
    space (every other one is a control, line or paragraph separator, or a ``Zs`` space,
    none printable), so a printable text without two spaces in a row is already collapsed
    and only needs its ends stripped; most abstracts of ``arxiv-archive`` are (tested).
    """
    if not text:
        return ""
    if text.isprintable() and "  " not in text:
        return text.strip(" ")
    return " ".join(text.split())


ID_VERSION_RULE = (
    "canonical record ids carry no version: a trailing version suffix vN (N from 1) on an arXiv id, "
    "new-style (2604.21892v1 -> 2604.21892) or old-style (astro-ph/0601001v2 -> astro-ph/0601001), "
    "is stripped as the id is read (n_id_versions_stripped, counted over rows read), so the first "
    "occurrence of a paper wins whatever version it was listed with; a stripped id that meets the same "
    "paper listed without a version, in either order, is a duplicate like any other and is also counted "
    "in n_stripped_id_collisions; this rule and both counts are written only when an id was stripped"
)
ID_VERSION_COUNT_KEYS = ("n_id_versions_stripped", "n_stripped_id_collisions")
_VERSIONED_ARXIV_ID = re.compile(
    r"((?:arXiv:)?(?:\d{4}\.\d{4,5}|[a-z][a-z.-]*(?:\.[A-Z]{2})?/\d{7}))v[1-9]\d*", re.ASCII
)


def strip_arxiv_version(identifier: str) -> str:
    """An arXiv id without its version suffix (:data:`ID_VERSION_RULE`): ``2604.21892v1`` -> ``2604.21892``.

    New-style (``NNNN.NNNN[N]``) and old-style (``archive[.XX]/NNNNNNN``) ids, with or without an
    ``arXiv:`` prefix (kept); anything else, an unversioned id included, is returned as is (the same object).
    """
    if "v" not in identifier:
        return identifier
    match = _VERSIONED_ARXIV_ID.fullmatch(identifier)
    return match.group(1) if match else identifier


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


class _PrefetchedXz(io.RawIOBase):
    """The decompressed bytes of an ``.xz`` file, produced by a background thread.

    ``lzma`` releases the GIL while it decompresses, so decompression runs on another
    core while this thread parses: a two-stage pipeline. The thread decompresses in large
    steps (``RAW_BLOCK`` compressed bytes in, at most ``block`` out), so it needs the GIL,
    which a parsing thread holds for a switch interval at a time, about once per megabyte
    rather than once per 8 KiB as ``lzma.open`` does. Streams are read as ``lzma.open``
    reads them (``_compression.DecompressReader``): concatenated streams in turn, trailing
    data that is no stream ignored, a stream cut short an ``EOFError``. A decompression
    error is raised to the reader at the point in the stream where it happened, as a
    plain read would.
    """

    RAW_BLOCK = 1 << 18

    def __init__(self, path: Path, block: int = 1 << 20, depth: int = 8):
        super().__init__()
        self._file = open(path, "rb")
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._view = memoryview(b"")
        self._done = False
        self._thread = threading.Thread(target=self._produce, args=(block,), daemon=True)
        self._thread.start()

    def _produce(self, block: int) -> None:
        try:
            for data in self._decompressed(block):
                if self._stop.is_set():
                    return
                self._put(data)
            self._put(b"")
        except BaseException as exc:  # noqa: BLE001 - handed to the reader
            self._put(exc)

    def _decompressed(self, block: int) -> Iterator[bytes]:
        """The file's decompressed bytes in pieces of at most ``block`` (DecompressReader's loop, larger steps)."""
        read = self._file.read
        decompressor = lzma.LZMADecompressor()
        while True:
            if decompressor.eof:
                raw = decompressor.unused_data or read(self.RAW_BLOCK)
                if not raw:
                    return
                decompressor = lzma.LZMADecompressor()  # the next stream
                try:
                    data = decompressor.decompress(raw, block)
                except lzma.LZMAError:  # trailing data that is not a stream: ignored, as lzma.open does
                    return
            else:
                if decompressor.needs_input:
                    raw = read(self.RAW_BLOCK)
                    if not raw:
                        raise EOFError("Compressed file ended before the end-of-stream marker was reached")
                else:
                    raw = b""
                data = decompressor.decompress(raw, block)
            if data:
                yield data

    def _put(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not len(self._view):
            if self._done:
                return 0
            item = self._queue.get()
            if isinstance(item, BaseException):
                self._done = True
                raise item
            if not item:
                self._done = True
                return 0
            self._view = memoryview(item)
        n = min(len(buffer), len(self._view))
        buffer[:n] = self._view[:n]
        self._view = self._view[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            self._stop.set()
            self._thread.join()
            self._file.close()
        super().close()


def open_text_prefetched(path: Path):
    """Open a UTF-8 text file for streaming; ``.xz`` files are decompressed on a background thread."""
    if path.suffix != ".xz":
        return open_text(path)
    try:
        raw = _PrefetchedXz(path)
    except (OSError, lzma.LZMAError) as exc:
        raise BadInput(f"{path}: cannot open ({exc.__class__.__name__}: {exc})") from None
    return io.TextIOWrapper(io.BufferedReader(raw, buffer_size=1 << 16), encoding="utf-8", newline="")
