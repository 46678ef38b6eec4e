"""Retrieval lines without the documents' text, and the text put back from the sealed corpus.

A committed run (:mod:`backtest.studies.release`) keeps, for each document the judge was shown, its id,
rank, score and date and ``shown_sha256``: the sha256 of the title and abstract exactly as shown
(:func:`~backtest.retrieve.pipeline.shown_text`). :func:`rematerialise` cuts the same text again from the
sealed future corpus and checks it against that hash, so a reader (the leaderboard site) sees what the
judge saw without the repository holding every abstract.

:func:`read_retrievals` is what everything else that reads a run's retrieval text calls (a rescoring that
reuses a sibling run's retrieval, ``control``, ``report``, ``annotate export``): the same re-cut, but strict:
a document whose text cannot be recovered, or does not match its hash, stops the read with one line naming
it, so no judge or reader is ever handed a compact document as if it had no text.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import iter_jsonl
from backtest.core.records import Retrieval, RetrievedDocument, parse_record
from backtest.core.workspace import Workspace

DOC_KEYS = ("id", "rank", "score", "published")


def shown_sha256(title: str, abstract: str) -> str:
    """The sha256 of a document's shown title and abstract (the JSON of the pair)."""
    return hashlib.sha256(json.dumps([title, abstract], ensure_ascii=False).encode()).hexdigest()


def document_shown_sha256(document: RetrievedDocument) -> str:
    """The ``shown_sha256`` of a retrieved document: the one a compact run keeps, else computed from its text."""
    kept = (document.model_extra or {}).get("shown_sha256")
    if isinstance(kept, str) and not document.title and not document.abstract:
        return kept
    return shown_sha256(document.title, document.abstract)


def compact_retrieval(row: dict[str, Any]) -> dict[str, Any]:
    """A retrieval line with each document reduced to :data:`DOC_KEYS` and ``shown_sha256``."""
    docs = [
        {**{k: d.get(k) for k in DOC_KEYS}, "shown_sha256": shown_sha256(d.get("title", ""), d.get("abstract", ""))}
        for d in row["documents"]
    ]
    return {**row, "documents": docs}


def is_compact_retrieval(row: dict[str, Any]) -> bool:
    """Whether a retrieval line's documents carry hashes instead of their text."""
    return any("shown_sha256" in d and not d.get("title") and not d.get("abstract") for d in row.get("documents", []))


def rematerialise(run_dir: Path, instance_id: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (retrieval lines of a run of ``instance_id``) with each compact document's shown title and
    abstract cut again from the instance's sealed future corpus (the run's workspace) and checked against
    ``shown_sha256``; a document whose text is not there or does not match keeps no text and a
    ``text_missing`` saying why."""
    if not any(is_compact_retrieval(r) for r in rows):
        return rows
    try:
        ws = Workspace.of_run(run_dir)
    except BadInput as exc:
        why = f"the future corpus is not available here ({exc})"
        return [{**r, "documents": [{**d, "text_missing": why} for d in r["documents"]]} for r in rows]
    return _rematerialise_in(ws, instance_id, rows)


def _rematerialise_in(ws: Workspace, instance_id: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from backtest.corpus.future import open_future_corpus
    from backtest.corpus.instance import load_instance
    from backtest.retrieve.pipeline import shown_text
    from backtest.retrieve.protocol import load_future_docs

    try:
        docs = load_future_docs(open_future_corpus(load_instance(instance_id, ws), ws), ws)
    except BadInput as exc:
        why = f"the future corpus is not available here ({exc})"
        return [{**r, "documents": [{**d, "text_missing": why} for d in r["documents"]]} for r in rows]
    out = []
    for r in rows:
        shown = (r.get("retriever") or {}).get("shown") or {}
        fields, max_chars = shown.get("text_fields", ["title", "abstract"]), int(shown.get("max_chars", 1200))
        documents = []
        for d in r["documents"]:
            row = docs.row_of(d["id"])
            if "shown_sha256" not in d or d.get("title") or d.get("abstract"):
                documents.append(d)
            elif row is None:
                documents.append({**d, "text_missing": "not in the future corpus"})
            else:
                title, abstract = shown_text(docs.titles[row], docs.abstracts[row], max_chars, fields)
                if d["shown_sha256"] == shown_sha256(title, abstract):
                    documents.append({**d, "title": title, "abstract": abstract})
                else:
                    documents.append({**d, "text_missing": "the corpus text does not match what the judge was shown"})
        out.append({**r, "documents": documents})
    return out


def is_compact_file(path: Path) -> bool:
    """Whether a ``retrieval.jsonl`` is in the compact form (its documents carry hashes, not text)."""
    return any(is_compact_retrieval(row) for _, row in iter_jsonl(Path(path)))


def read_retrievals(path: Path, instance_id: str, ws: Workspace | None = None) -> list[Retrieval]:
    """The retrievals of ``path`` (a run's ``retrieval.jsonl``, of ``instance_id``) with their text: a compact
    file has every document's shown text cut again from the sealed future corpus, checked against its
    ``shown_sha256`` and then given as retrieval wrote it (the hash dropped: the text it vouched for is back).
    CheckFailed, one line, when any document's text cannot be recovered or does not match."""
    path = Path(path)
    rows = [row for _, row in iter_jsonl(path)]
    parsed = [parse_record(Retrieval, row, f"{path}:{n}") for n, row in enumerate(rows, start=1)]
    if not any(is_compact_retrieval(r) for r in rows):
        return parsed
    restored = []
    for row in _rematerialise_in(ws or Workspace.of_run(path.parent), instance_id, rows):
        documents = []
        for d in row["documents"]:
            if "text_missing" in d:
                raise CheckFailed(
                    f"{path}: question {row['question_id']}, document {d['id']}: the text the judge was shown "
                    f"cannot be recovered ({d['text_missing']}); refusing to read this run as if it had none"
                )
            documents.append({k: v for k, v in d.items() if k != "shown_sha256"})
        restored.append(Retrieval.model_validate({**row, "documents": documents}))
    return restored
