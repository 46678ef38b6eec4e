"""Build, seal and verify corpora.

``build_corpus`` streams a source through the filters (window, categories, query),
drops records without an abstract, de-duplicates by id (first occurrence wins, in
the source's reading order), and writes ``corpora/<id>/records.jsonl`` (canonical
JSON lines), ``corpora/<id>/index.tsv`` (sorted ``id<TAB>date<TAB>sha256``) and
the sealed ``manifests/<id>.json``. Nothing is held in memory but the id index.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import BadInput, CheckFailed
from ..fileio import atomic_writer, read_json, write_json
from ..records import CorpusManifest, CorpusRecord, Window, parse_record
from ..seal import compute_seal, sha256_bytes, sha256_file, with_seal
from ..workspace import Workspace
from .categories import parse_categories
from .sources import arxiv_id_month, get_source

DEDUP_RULE = "keep the first occurrence of an id in reading order (files sorted by name; daily files by listing day)"
ID_MONTH_RULE = (
    "arXiv ids carry their submission month (yymm): a future corpus drops records whose id month is "
    "before its window's start month (old papers re-listed after the cutoff); a past corpus drops "
    "records whose id month is after its window's end month"
)
NO_ABSTRACT_RULE = "records with an empty abstract are dropped and counted"
QUERY_RULE = "query: '|' separates alternatives; a record matches when any alternative occurs (case-insensitive) in its title or abstract"
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
    return lambda rec: bool(pattern.search(rec.title) or pattern.search(rec.abstract))


def _id_month_ok(identifier: str, role: str, window_start: dt.date | None, window_end: dt.date | None) -> bool:
    month = arxiv_id_month(identifier)
    if month is None:
        return True
    if role == "future" and window_start is not None:
        return month >= (window_start.year, window_start.month)
    if role == "past" and window_end is not None:
        return month <= (window_end.year, window_end.month)
    return True


def _relisted(record: CorpusRecord) -> bool:
    month = arxiv_id_month(record.id)
    return month is not None and month < (record.published.year, record.published.month)


def filtered_records(opts: BuildOptions, files: list[Path], counts: dict[str, int]) -> Iterator[CorpusRecord]:
    """Stream ``files`` of the source through every filter, updating ``counts`` as it goes."""
    source = get_source(opts.source)
    wanted = set(opts.categories)
    matches = _query_matcher(opts.query)
    seen: set[str] = set()
    for record in source.records(files):
        counts["n_read"] += 1
        if record.id in seen:
            counts["n_duplicates"] += 1
            continue
        seen.add(record.id)
        if (opts.start and record.published < opts.start) or (opts.end and record.published > opts.end):
            counts["n_outside_window"] += 1
            continue
        if wanted and not wanted.intersection(record.categories):
            counts["n_other_categories"] += 1
            continue
        if matches and not matches(record):
            counts["n_query_mismatch"] += 1
            continue
        if not record.abstract:
            counts["n_no_abstract"] += 1
            continue
        if not _id_month_ok(record.id, opts.role, opts.start, opts.end):
            counts["n_id_month_dropped"] += 1
            continue
        if _relisted(record):
            counts["n_relisted_old_ids"] += 1
        yield record


def build_corpus(opts: BuildOptions, ws: Workspace, progress=None) -> CorpusManifest:
    """Build and seal a corpus; returns the manifest (also written to ``manifests/<id>.json``).

    Files are written atomically; a failure part-way leaves any earlier build untouched.
    """
    if opts.role not in ("past", "future"):
        raise BadInput(f"--role must be past or future, not {opts.role!r}")
    if opts.start and opts.end and opts.start > opts.end:
        raise BadInput(f"empty window: start {opts.start} is after end {opts.end}")
    opts.categories = parse_categories(",".join(opts.categories)) if opts.categories else []
    source = get_source(opts.source)
    files = source.input_files(opts.inputs)
    counts = {k: 0 for k in ("n_read", "n_duplicates", "n_outside_window", "n_other_categories",
                             "n_query_mismatch", "n_no_abstract", "n_id_month_dropped", "n_relisted_old_ids")}
    out_dir = ws.corpus_dir(opts.corpus_id)
    index: list[tuple[str, str, str]] = []
    first = last = None
    with atomic_writer(out_dir / RECORDS_FILE, "wb") as handle:
        for record in filtered_records(opts, files, counts):
            line = record.canonical_line().encode("utf-8")
            handle.write(line + b"\n")
            day = record.published
            index.append((record.id, day.isoformat(), sha256_bytes(line)))
            first = day if first is None or day < first else first
            last = day if last is None or day > last else last
            if progress:
                progress(1)
    if not index:
        (out_dir / RECORDS_FILE).unlink(missing_ok=True)
        raise BadInput(f"empty corpus: no record of {len(files)} input file(s) passed the filters ({_summary(counts)})")
    index.sort()
    index_bytes = "".join(f"{i}\t{d}\t{h}\n" for i, d, h in index).encode("utf-8")
    with atomic_writer(out_dir / INDEX_FILE, "wb") as handle:
        handle.write(index_bytes)
    window = Window(start=opts.start or first, end=opts.end or last)
    manifest = {
        "schema_version": CorpusManifest.SCHEMA_VERSION,
        "corpus_id": opts.corpus_id,
        "role": opts.role,
        "window": window.model_dump(mode="json"),
        "source": {
            "kind": opts.source,
            "inputs": [_portable(p) for p in opts.inputs],
            "input_sha256": {p.name: sha256_file(p) for p in files},
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
        },
        "counts": counts,
        "n_records": len(index),
        "index_sha256": sha256_bytes(index_bytes),
        "records_sha256": sha256_file(out_dir / RECORDS_FILE),
    }
    sealed = with_seal(manifest)
    result = parse_record(CorpusManifest, sealed, "manifest")
    write_json(ws.manifest_path(opts.corpus_id), sealed)
    return result


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
    expected: dict[str, str] = {}
    for row in index_bytes.decode("utf-8", "replace").splitlines():
        parts = row.split("\t")
        if len(parts) == 3:
            expected[parts[0]] = parts[2]
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
    report.missing = sorted(set(expected) - found)
    for name, ids in (("drifted", report.drifted), ("missing", report.missing), ("extra", report.extra)):
        for identifier in ids:
            report.problems.append(f"record {identifier}: {name}")
    if report.n_records != manifest.n_records:
        report.problems.append(f"{report.n_records} records on disk, manifest says {manifest.n_records}")
    if not report.problems and sha256_file(records_path) != manifest.records_sha256:
        report.problems.append(f"{records_path}: file sha256 differs from the manifest (line order or framing changed)")
    return report


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
    for name, ids in (("drifted", report.drifted), ("missing from rebuild", report.missing), ("new in rebuild", report.extra)):
        report.problems.extend(f"record {i}: {name}" for i in ids)
    return report


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
