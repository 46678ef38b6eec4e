"""Build, seal and verify corpora.

``build_corpus`` streams a source through the filters (window, categories, query),
drops records without an abstract, de-duplicates by id (first occurrence wins, in
the source's reading order), and writes ``corpora/<id>/records.jsonl`` (canonical
JSON lines), ``corpora/<id>/index.tsv`` (sorted ``id<TAB>date<TAB>sha256``) and
the sealed ``manifests/<id>.json``. Nothing is held in memory but the id index.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import heapq
import importlib
import json
import multiprocessing
import os
import re
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, read_json
from backtest.core.records import CorpusManifest, Window, parse_record
from backtest.core.seal import canonical_json, compute_seal, sha256_bytes, sha256_file, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.categories import parse_categories
from backtest.corpus.sources import ID_VERSION_COUNT_KEYS, ID_VERSION_RULE, arxiv_id_month, get_source

DEDUP_RULE = "keep the first occurrence of an id in reading order (files sorted by name; daily files by listing day)"
ID_MONTH_RULE = (
    "arXiv ids carry their submission month (yymm): a future corpus drops records whose id month is "
    "before its window's start month (old papers re-listed after the cutoff); a past corpus drops "
    "records whose id month is after its window's end month"
)
NO_ABSTRACT_RULE = "records with an empty abstract are dropped and counted"
QUERY_RULE = (
    "query: '|' separates alternatives; "
    "a record matches when any alternative occurs (case-insensitive) in its title or abstract"
)
RECORDS_FILE = "records.jsonl"
INDEX_FILE = "index.tsv"


@dataclass
class BuildOptions:
    """What to build: source, inputs, identity and filters."""

    source: str
    inputs: list[Path]
    corpus_id: str
    role: str
    start: dt.date | None = None
    end: dt.date | None = None
    categories: list[str] = field(default_factory=list)
    query: str | None = None


def _query_matcher(query: str | None):
    if not query:
        return None
    parts = [p.strip() for p in query.split("|") if p.strip()]
    if not parts:
        raise BadInput("empty --query")
    pattern = re.compile("|".join(re.escape(p) for p in parts), re.IGNORECASE)
    return lambda row: bool(pattern.search(row["title"]) or pattern.search(row["abstract"]))


def _id_month_ok(
    month: tuple[int, int] | None, role: str, window_start: dt.date | None, window_end: dt.date | None
) -> bool:
    if month is None:
        return True
    if role == "future" and window_start is not None:
        return month >= (window_start.year, window_start.month)
    if role == "past" and window_end is not None:
        return month <= (window_end.year, window_end.month)
    return True


# Id rewrites a source may make as it reads a row (the source's flag for the last row read)
# and the count of duplicates where one occurrence was rewritten and the other was not.
ID_REWRITES = (("last_id_repaired", "n_repaired_id_collisions"), ("last_id_stripped", "n_stripped_id_collisions"))


def filtered_rows(opts: BuildOptions, files: list[Path], counts: dict[str, int]) -> Iterator[dict]:
    """Stream ``files`` of the source as field dicts through every filter, updating ``counts``.

    Filters in order: repeated id (the first occurrence wins, even if it is then filtered
    out), window, categories, query, empty abstract, id month; kept re-listed old ids are counted.
    The source adds its own counts (``source.count_keys``); a duplicate where one occurrence's
    id was repaired by the source and the other's was not is also a repaired-id collision, and
    one where one occurrence's id lost a version suffix and the other's had none is also a
    stripped-id collision (``n_stripped_id_collisions``, see :func:`_id_version_rules`).
    """
    source = get_source(opts.source)
    for key in source.count_keys:
        counts.setdefault(key, 0)
    source.counts = counts
    wanted = set(opts.categories)
    matches = _query_matcher(opts.query)
    start, end = opts.start, opts.end
    seen: set[str] = set()
    # per id rewrite a source may make: the ids whose first occurrence it rewrote
    rewritten: dict[str, set[str]] = {flag: set() for flag, _ in ID_REWRITES}
    repaired, stripped = rewritten["last_id_repaired"], rewritten["last_id_stripped"]
    for row in source.rows(files):
        counts["n_read"] += 1
        identifier = row["id"]
        if identifier in seen:
            counts["n_duplicates"] += 1
            for flag, collisions in ID_REWRITES:
                if getattr(source, flag) != (identifier in rewritten[flag]):
                    counts[collisions] = counts.get(collisions, 0) + 1
            continue
        seen.add(identifier)
        # the two ID_REWRITES flags, spelled out: this loop runs once per row read
        if source.last_id_repaired:
            repaired.add(identifier)
        if source.last_id_stripped:
            stripped.add(identifier)
        day = row["published"]
        if (start and day < start) or (end and day > end):
            counts["n_outside_window"] += 1
            continue
        if wanted and not wanted.intersection(row["categories"]):
            counts["n_other_categories"] += 1
            continue
        if matches and not matches(row):
            counts["n_query_mismatch"] += 1
            continue
        if not row["abstract"]:
            counts["n_no_abstract"] += 1
            continue
        month = arxiv_id_month(identifier)
        if not _id_month_ok(month, opts.role, start, end):
            counts["n_id_month_dropped"] += 1
            continue
        if month is not None and month < (day.year, day.month):
            counts["n_relisted_old_ids"] += 1
        yield row


PIPELINE_BATCH = 256  # records per message from the reader process


def encoded_records(opts: BuildOptions, files: list[Path], counts: dict[str, int]) -> Iterator[tuple[str, str, bytes]]:
    """``(id, day, canonical line bytes)`` of every record that passes the filters, in reading order."""
    for row in filtered_rows(opts, files, counts):
        identifier = row["id"]
        if _BAD_ID.search(identifier):
            raise BadInput(f"record id {identifier!r} contains whitespace or control characters")
        yield identifier, row["published"].isoformat(), record_bytes(row)


def _pipelined_records(
    opts: BuildOptions, files: list[Path], counts: dict[str, int]
) -> Iterator[tuple[str, str, bytes]]:
    """:func:`encoded_records`, computed in a second process when that can help.

    A two-stage pipeline: a forked reader process decompresses (on a background
    thread), parses, filters and encodes, and sends batches of encoded lines; this
    process hashes, writes and indexes them. One producer and one FIFO pipe keep the
    order, so the output is byte-identical to the in-process path, which is used on one
    CPU, where ``fork`` is unavailable, or with ``BACKTEST_BUILD_PIPELINE=0``.
    """
    if (
        os.environ.get("BACKTEST_BUILD_PIPELINE", "1") == "0"
        or (os.cpu_count() or 1) < 2
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        yield from encoded_records(opts, files, counts)
        return
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_reader, args=(opts, files, sender), daemon=True)
    process.start()
    sender.close()
    try:
        while True:
            try:
                kind, payload = receiver.recv()
            except EOFError:
                raise BadInput(f"the reader process stopped unexpectedly (exit code {process.exitcode})") from None
            if kind == "records":
                yield from payload
            elif kind == "error":
                raise payload
            else:
                counts.update(payload)
                return
    finally:
        receiver.close()
        if process.is_alive():
            process.terminate()
        process.join()


def _reader(opts: BuildOptions, files: list[Path], conn) -> None:
    """Reader process: send encoded records in batches, then the counts (or the error, once)."""
    counts = new_counts(opts.source)
    try:
        batch: list[tuple[str, str, bytes]] = []
        for item in encoded_records(opts, files, counts):
            batch.append(item)
            if len(batch) >= PIPELINE_BATCH:
                conn.send(("records", batch))
                batch = []
        conn.send(("records", batch))
        conn.send(("done", counts))
    except BaseException as exc:  # noqa: BLE001 - handed to the builder, which raises it
        try:
            conn.send(("error", exc))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            conn.send(("error", BadInput(f"{exc.__class__.__name__}: {exc}")))
    finally:
        conn.close()


def _json_data(row: dict) -> dict:
    """A record's field dict as JSON-ready data: absent optionals dropped, dates as ISO days."""
    data = {k: v for k, v in row.items() if v is not None} if None in row.values() else dict(row)
    data["published"] = data["published"].isoformat()
    if "citation_count_as_of" in data:
        data["citation_count_as_of"] = data["citation_count_as_of"].isoformat()
    return data


def record_line(row: dict) -> str:
    """The canonical JSON line of a record given as a field dict; equal to ``CorpusRecord.canonical_line()``.

    The fast path of the builder: no model object, and NFC normalisation only when the
    line is not already NFC (a JSON text is NFC exactly when all its strings are, as
    JSON's own characters never combine); otherwise the exact per-string path is taken.
    """
    data = _json_data(row)
    text = _dumps(data)
    if not unicodedata.is_normalized("NFC", text):
        text = canonical_json(data)
    return text


def record_bytes(row: dict) -> bytes:
    """``record_line(row)`` encoded as UTF-8, the bytes the builder writes and hashes.

    With ``orjson`` installed it encodes (faster than ``json``'s C encoder); its
    output for key-sorted dicts of strings, lists, ints, booleans and None (a record's
    field types) is the same bytes as :func:`record_line`'s (every code point checked,
    tests/test_corpus_fast.py). What it refuses (an int past 64 bits, a lone surrogate, and,
    as ``json`` does, dates, dataclasses and subclasses of str, int, list and dict) takes
    :func:`record_line`'s path, so the result, or the error, is that path's. An all-ASCII
    line is NFC as it stands.
    """
    if _orjson is None:
        return record_line(row).encode("utf-8")
    data = _json_data(row)
    try:
        line = _orjson.dumps(data, default=_no_default, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: what it cannot encode, json decides
        return record_line(row).encode("utf-8")
    if line.isascii() or unicodedata.is_normalized("NFC", line.decode("utf-8")):
        return line
    return canonical_json(data).encode("utf-8")


def _no_default(obj):
    raise TypeError(f"{obj.__class__.__name__} is not JSON serialisable")


def _make_dumps():
    """Compact, key-sorted, UTF-8-preserving JSON: ``json.dumps``'s C encoder, built once, not per call."""
    try:
        from json.encoder import c_make_encoder, encode_basestring

        encoder = c_make_encoder(None, _no_default, encode_basestring, None, ":", ",", True, False, True)
        if encoder is not None and "".join(encoder({"b": [1, "é\n"], "a": None}, 0)) == '{"a":null,"b":[1,"é\\n"]}':
            return lambda obj: "".join(encoder(obj, 0))
    except (ImportError, TypeError):  # no C accelerator, or another signature: the plain encoder
        pass
    return json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


_dumps = _make_dumps()


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - the tests also run record_bytes with _orjson set to None
        return None


_orjson = _optional_module("orjson")  # optional: the same bytes without it, only slower (record_bytes)
_ORJSON_OPTIONS = (
    _orjson.OPT_SORT_KEYS
    | _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
    if _orjson is not None
    else 0
)


def build_or_reuse(opts: BuildOptions, ws: Workspace) -> str:
    """Build the corpus unless one with exactly these settings (role, window, source, inputs, categories,
    query) is already there and verifies; return its id. The one reuse rule of stress and prospective grading."""
    if ws.manifest_path(opts.corpus_id).is_file():
        manifest = load_manifest(opts.corpus_id, ws)
        same = (
            manifest.role == opts.role
            and manifest.window.start == opts.start
            and manifest.window.end == opts.end
            and manifest.source.get("kind") == opts.source
            and list(manifest.source.get("inputs") or []) == [str(Path(p)) for p in opts.inputs]
            and sorted(manifest.source.get("categories") or []) == sorted(opts.categories)
            and manifest.source.get("query") == opts.query
        )
        if same and verify_corpus(manifest, ws).ok:
            return opts.corpus_id
    build_corpus(opts, ws)
    return opts.corpus_id


def build_corpus(opts: BuildOptions, ws: Workspace, progress=None, reproduce: bool = False) -> CorpusManifest:
    """Build and seal a corpus; returns the manifest (also written to ``manifests/<id>.json``).

    Everything is written into a staging folder under ``corpora/`` first and moved into
    place only when the build succeeded, so a failure part-way leaves no new file and any
    earlier build untouched. With ``reproduce`` the manifest already in
    ``manifests/<id>.json`` must come out byte for byte; otherwise CheckFailed is raised
    and nothing is installed (this is how ``make instances`` proves a rebuild).
    """
    if opts.role not in ("past", "future"):
        raise BadInput(f"--role must be past or future, not {opts.role!r}")
    if opts.start and opts.end and opts.start > opts.end:
        raise BadInput(f"empty window: start {opts.start} is after end {opts.end}")
    opts.categories = parse_categories(",".join(opts.categories)) if opts.categories else []
    manifest_path = ws.manifest_path(opts.corpus_id)
    expected = _expected_manifest(manifest_path) if reproduce else None
    source = get_source(opts.source)
    files = source.input_files(opts.inputs)
    input_sha256 = {p.name: _input_sha256(p) for p in files}
    ws.corpora.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{opts.corpus_id}.", suffix=".building", dir=ws.corpora))
    try:
        counts = new_counts(opts.source)
        n_records, first, last = _write_records(opts, files, counts, staging, progress)
        if not n_records:
            raise BadInput(
                f"empty corpus: no record of {len(files)} input file(s) passed the filters ({_summary(counts)})"
            )
        version_rules = _id_version_rules(counts)
        index_sha256 = _sort_index(staging)
        window = Window(start=opts.start or dt.date.fromisoformat(first), end=opts.end or dt.date.fromisoformat(last))
        manifest = {
            "schema_version": CorpusManifest.SCHEMA_VERSION,
            "corpus_id": opts.corpus_id,
            "role": opts.role,
            "window": window.model_dump(mode="json"),
            "source": {
                "kind": opts.source,
                "inputs": [_portable(p) for p in opts.inputs],
                "input_sha256": input_sha256,
                "categories": opts.categories,
                "query": opts.query,
            },
            "rules": {
                "dedup": DEDUP_RULE,
                "date": _DATE_RULES.get(opts.source, "the source's publication date"),
                "id_month": ID_MONTH_RULE,
                "no_abstract": NO_ABSTRACT_RULE,
                "query": QUERY_RULE,
                "window": "inclusive, compared by day",
                **source.rules,
                **version_rules,
            },
            "counts": counts,
            "n_records": n_records,
            "index_sha256": index_sha256,
            "records_sha256": sha256_file(staging / RECORDS_FILE),
        }
        sealed = with_seal(manifest)
        result = parse_record(CorpusManifest, sealed, "manifest")
        text = manifest_text(sealed)
        if expected is not None and text != expected:
            raise CheckFailed(_reproduce_failure(manifest_path, expected, sealed))
        out_dir = ws.corpus_dir(opts.corpus_id)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in (RECORDS_FILE, INDEX_FILE):
            os.replace(staging / name, out_dir / name)
        if expected is None:
            atomic_write_text(manifest_path, text)
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)


COUNT_KEYS = (
    "n_read",
    "n_duplicates",
    "n_outside_window",
    "n_other_categories",
    "n_query_mismatch",
    "n_no_abstract",
    "n_id_month_dropped",
    "n_relisted_old_ids",
)


def new_counts(source: str) -> dict[str, int]:
    """The manifest's counts, all zero: :data:`COUNT_KEYS` and the source's own (``count_keys``)."""
    return {k: 0 for k in COUNT_KEYS + get_source(source).count_keys}


def _id_version_rules(counts: dict[str, int]) -> dict[str, str]:
    """``{"id_version": ID_VERSION_RULE}`` when the source stripped a version from an id, else ``{}``.

    The version counts (:data:`ID_VERSION_COUNT_KEYS`) are kept in ``counts`` (both, zero or
    not) only when an id was stripped, so a corpus without versioned ids has the same manifest
    as before the rule existed.
    """
    if counts.get("n_id_versions_stripped"):
        for key in ID_VERSION_COUNT_KEYS:
            counts.setdefault(key, 0)
        return {"id_version": ID_VERSION_RULE}
    for key in ID_VERSION_COUNT_KEYS:
        counts.pop(key, None)
    return {}


INDEX_CHUNK = 25_000  # index rows sorted in memory at once (~4 MB); longer indexes are merged from sorted runs


def manifest_text(sealed: dict) -> str:
    """The exact text a manifest is stored as (indented, key-sorted JSON and a newline)."""
    return json.dumps(sealed, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _expected_manifest(path: Path) -> str:
    if not path.is_file():
        raise BadInput(f"{path}: no committed manifest to reproduce (build once without --reproduce)")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None


def _reproduce_failure(path: Path, expected: str, sealed: dict) -> str:
    try:
        old = json.loads(expected)
    except json.JSONDecodeError:
        return f"{path}: the committed manifest is not valid JSON; the rebuild was not installed"
    changed = sorted(k for k in set(old) | set(sealed) if k != "seal" and old.get(k) != sealed.get(k))
    detail = (
        ", ".join(f"{k} {old.get(k)} -> {sealed.get(k)}" if k == "n_records" else k for k in changed) or "formatting"
    )
    return (
        f"{path}: rebuild does not reproduce the committed manifest (seal {str(old.get('seal'))[:12]}… -> "
        f"{sealed['seal'][:12]}…; differs in {detail}); nothing was installed"
    )


def _input_sha256(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None


def _write_records(opts: BuildOptions, files: list[Path], counts: dict[str, int], staging: Path, progress):
    """Stream filtered records into ``staging/records.jsonl`` and sorted index runs; return (n, first, last)."""
    n = 0
    first = last = None
    chunk: list[bytes] = []
    runs = 0
    with open(staging / RECORDS_FILE, "wb", buffering=1 << 20) as handle:
        for identifier, day, line in _pipelined_records(opts, files, counts):
            handle.write(line + b"\n")
            chunk.append(f"{identifier}\t{day}\t{sha256(line).hexdigest()}\n".encode("utf-8"))
            if len(chunk) >= INDEX_CHUNK:
                _write_run(staging / f"run{runs:05d}", chunk)
                runs += 1
                chunk = []
            n += 1
            if first is None or day < first:
                first = day
            if last is None or day > last:
                last = day
            if progress:
                progress(1)
        handle.flush()
        os.fsync(handle.fileno())
    _write_run(staging / f"run{runs:05d}", chunk)
    return n, first, last


def _write_run(path: Path, rows: list[bytes]) -> None:
    rows.sort()
    with open(path, "wb") as handle:
        handle.writelines(rows)


def _sort_index(staging: Path) -> str:
    """Merge the sorted runs into ``staging/index.tsv`` (an external sort); return its sha256.

    Rows are ``id<TAB>date<TAB>sha256``; ids are unique and hold no tab, so sorting the
    rows' bytes sorts by id (UTF-8 byte order is code-point order).
    """
    runs = sorted(staging.glob("run*"))
    digest = hashlib.sha256()
    handles = [open(p, "rb") for p in runs]
    try:
        with open(staging / INDEX_FILE, "wb") as out:
            for row in heapq.merge(*handles):
                out.write(row)
                digest.update(row)
            out.flush()
            os.fsync(out.fileno())
    finally:
        for handle in handles:
            handle.close()
    for path in runs:
        path.unlink()
    return digest.hexdigest()


_BAD_ID = re.compile(r"[\s\x00-\x1f]")


_DATE_RULES = {
    "arxiv-archive": "the 'created' day (first version)",
    "arxiv-daily": "the first listing day (the file name); re-listed papers keep their first listing",
    "arxiv-oai": "the first version's day (versions[v1].created)",
    "jsonl": "the record's 'published' field",
}


def _portable(path: Path) -> str:
    """A path as given, normalised; relative paths stay relative so rebuilds elsewhere match."""
    return os.path.normpath(str(path))


def _summary(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in counts.items() if v)


# --------------------------------------------------------------------------- loading and verifying


def load_manifest(path_or_id: str | Path, ws: Workspace) -> CorpusManifest:
    """Load a manifest by path or corpus id; raise BadInput if unreadable or malformed."""
    path = Path(path_or_id)
    if not path.suffix == ".json":
        path = ws.manifest_path(str(path_or_id))
    data = read_json(path)
    if not isinstance(data, dict):
        raise BadInput(f"{path}: a manifest must be a JSON object")
    return parse_record(CorpusManifest, data, str(path))


@dataclass
class VerifyReport:
    """What ``verify_corpus`` found: an empty ``problems`` list means the corpus is intact."""

    corpus_id: str
    n_records: int = 0
    problems: list[str] = field(default_factory=list)
    drifted: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_failed(self) -> None:
        """Raise CheckFailed with one line per problem when the corpus does not verify."""
        if self.problems:
            raise CheckFailed(f"corpus {self.corpus_id} does not verify: {self.problems[0]}", self.problems)


_ID_IN_LINE = re.compile(rb'"id":"((?:[^"\\]|\\.)*)"')


def _line_id(line: bytes) -> str | None:
    try:
        value = json.loads(line).get("id")
        return value if isinstance(value, str) else None
    except (ValueError, AttributeError):
        match = _ID_IN_LINE.search(line)
        return match.group(1).decode("utf-8", "replace") if match else None


def verify_corpus(manifest: CorpusManifest, ws: Workspace, records_path: Path | None = None) -> VerifyReport:
    """Recompute every hash of a built corpus against its manifest, naming each bad id."""
    report = VerifyReport(manifest.corpus_id)
    if compute_seal(manifest.model_dump(mode="json")) != manifest.seal:
        report.problems.append(f"manifest seal does not match its contents ({manifest.corpus_id})")
    out_dir = ws.corpus_dir(manifest.corpus_id)
    records_path = records_path or out_dir / RECORDS_FILE
    index_path = out_dir / INDEX_FILE
    for path in (records_path, index_path):
        if not path.is_file():
            report.problems.append(f"{path}: missing (rebuild with `backtest corpus build` or `make instances`)")
    if report.problems:
        return report
    index_bytes = index_path.read_bytes()
    if sha256_bytes(index_bytes) != manifest.index_sha256:
        report.problems.append(f"{index_path}: index sha256 differs from the manifest")
    expected = _index_hashes(index_bytes)
    found = _check_records(records_path, expected, report)
    report.missing = sorted(set(expected) - found)
    for name, ids in (("drifted", report.drifted), ("missing", report.missing), ("extra", report.extra)):
        for identifier in ids:
            report.problems.append(f"record {identifier}: {name}")
    if report.n_records != manifest.n_records:
        report.problems.append(f"{report.n_records} records on disk, manifest says {manifest.n_records}")
    if not report.problems and sha256_file(records_path) != manifest.records_sha256:
        report.problems.append(f"{records_path}: file sha256 differs from the manifest (line order or framing changed)")
    return report


def _index_hashes(index_bytes: bytes) -> dict[str, str]:
    """id -> record sha256, from a corpus index (``id<TAB>published<TAB>sha256`` rows)."""
    expected: dict[str, str] = {}
    for row in index_bytes.decode("utf-8", "replace").splitlines():
        parts = row.split("\t")
        if len(parts) == 3:
            expected[parts[0]] = parts[2]
    return expected


def _check_records(records_path: Path, expected: dict[str, str], report: VerifyReport) -> set[str]:
    """Hash every line of the records file against ``expected``; count it in ``report`` and note each line without
    an id, each id the index lacks (extra) and each whose bytes changed (drifted). Returns the ids seen."""
    found: set[str] = set()
    with open(records_path, "rb") as handle:
        for raw in handle:
            line = raw.rstrip(b"\n")
            identifier = _line_id(line)
            if identifier is None:
                report.problems.append(f"{records_path}: a line without a readable id")
                continue
            found.add(identifier)
            report.n_records += 1
            if identifier not in expected:
                report.extra.append(identifier)
            elif sha256_bytes(line) != expected[identifier]:
                report.drifted.append(identifier)
    return found


def rebuild_and_compare(manifest: CorpusManifest, ws: Workspace, scratch: Workspace) -> VerifyReport:
    """Rebuild a corpus from its recorded source into ``scratch`` and compare seals and records by id."""
    opts = BuildOptions(
        source=manifest.source["kind"],
        inputs=[Path(p) for p in manifest.source["inputs"]],
        corpus_id=manifest.corpus_id,
        role=manifest.role,
        start=manifest.window.start,
        end=manifest.window.end,
        categories=list(manifest.source.get("categories") or []),
        query=manifest.source.get("query"),
    )
    with contextlib.chdir(_inputs_base(opts.inputs, ws)):
        rebuilt = build_corpus(opts, scratch)
    report = VerifyReport(manifest.corpus_id, n_records=rebuilt.n_records)
    if rebuilt.seal == manifest.seal:
        return report
    old = _read_index(ws.corpus_dir(manifest.corpus_id) / INDEX_FILE)
    new = _read_index(scratch.corpus_dir(manifest.corpus_id) / INDEX_FILE)
    report.drifted = sorted(i for i in set(old) & set(new) if old[i] != new[i])
    report.missing = sorted(set(old) - set(new))
    report.extra = sorted(set(new) - set(old))
    report.problems.append(f"rebuild from source gives seal {rebuilt.seal[:12]}…, manifest has {manifest.seal[:12]}…")
    for name, ids in (
        ("drifted", report.drifted),
        ("missing from rebuild", report.missing),
        ("new in rebuild", report.extra),
    ):
        report.problems.extend(f"record {i}: {name}" for i in ids)
    return report


def _inputs_base(inputs: list[Path], ws: Workspace) -> Path:
    """The folder that relative inputs recorded in a manifest are read from for a rebuild.

    A manifest names its inputs as given (the seal covers them), so a rebuild must name them
    the same way: from the current folder when they are there, else from the workspace root
    (where `make instances` builds), so `--root` works from anywhere. When neither holds
    them all, the current folder: the build then names the missing input.
    """
    here = Path.cwd()
    if all(p.is_absolute() or p.exists() for p in inputs):
        return here
    if all((ws.root / p).exists() for p in inputs):
        return ws.root
    return here


def _read_index(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if path.is_file():
        for row in path.read_text(encoding="utf-8").splitlines():
            parts = row.split("\t")
            if len(parts) == 3:
                out[parts[0]] = f"{parts[1]}\t{parts[2]}"
    return out


def iter_index(path: Path) -> Iterable[tuple[str, dt.date, str]]:
    """Yield ``(id, date, sha256)`` rows of an index file."""
    with open(path, encoding="utf-8") as handle:
        for row in handle:
            identifier, day, digest = row.rstrip("\n").split("\t")
            yield identifier, dt.date.fromisoformat(day), digest
