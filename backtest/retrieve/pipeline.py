"""Retrieve the top-k future documents for each question and record what the judge will see.

Query: the question text alone (``Question.question``); ``sub_questions``,
``premise`` and the contract fields are *not* appended, so every system is
searched on the same footing whatever optional fields it fills in.

Shown text (``SHOWN_RULE``): title and abstract with whitespace runs collapsed to
one space; only the instance's ``text_fields`` are shown (others are empty). The
title is cut to ``max_chars``; the abstract gets the rest of the budget,
``max_chars - len(title)``. A cut text ends at the last space that fits (if that
keeps at least half of the budget, else mid-word) followed by ``…``, the ellipsis
counted in the budget; so ``len(title) + len(abstract) <= max_chars`` always.

``top1_similarity`` is the cosine between the question and the best hit, both
embedded with the instance's dense model (``retrieval.model``) — for every
method, BM25 included: it is the "future-literature similarity" metric. Scores and
similarities are rounded to 6 decimals. The output is byte-identical across runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from tqdm import tqdm

from backtest.core.errors import BadInput
from backtest.core.fileio import write_jsonl
from backtest.core.records import Instance, Question, Retrieval, RetrievedDocument
from backtest.core.workspace import Workspace
from backtest.corpus.future import open_future_corpus
from backtest.retrieve.protocol import FutureDocs, Retriever, get_retriever, load_future_docs
from backtest.text.embed import embed_texts, model_fingerprint

QUERY_RULE = "question text only (sub_questions, premise and contract fields not appended)"
SHOWN_RULE = (
    "whitespace collapsed; title cut to max_chars; abstract cut to max_chars - len(title); "
    "a cut ends at the last space that keeps >= half the budget, then '…' (counted)"
)
ELLIPSIS = "…"
DECIMALS = 6
BATCH = 32

_CACHE: dict[tuple, tuple[FutureDocs, Retriever]] = {}


def clip(text: str, limit: int) -> str:
    """``text`` with whitespace collapsed, cut to at most ``limit`` characters by the SHOWN_RULE."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return ""
    budget = limit - len(ELLIPSIS)
    cut = text[:budget]
    space = cut.rfind(" ")
    if space >= budget // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def shown_text(
    title: str, abstract: str, max_chars: int, text_fields: Sequence[str] = ("title", "abstract")
) -> tuple[str, str]:
    """The exact (title, abstract) a judge is shown for a document."""
    shown_title = clip(title, max_chars) if "title" in text_fields else ""
    shown_abstract = clip(abstract, max_chars - len(shown_title)) if "abstract" in text_fields else ""
    return shown_title, shown_abstract


def query_text(question: Question) -> str:
    """The retrieval query for a question (QUERY_RULE)."""
    return question.question


def open_retriever(
    instance: Instance, ws: Workspace, method: str | None = None, progress: bool = False, **settings: Any
) -> tuple[FutureDocs, Retriever]:
    """The verified future corpus of ``instance`` and a retriever over it (kept per process).

    The future manifest must match the instance's seal and every record must verify
    (``open_future_corpus``) before any index is opened or built.
    """
    store = open_future_corpus(instance, ws, verify=True)
    method = method or instance.retrieval.method
    options = {"model": instance.retrieval.model, "text_fields": tuple(instance.retrieval.text_fields), **settings}
    key = (str(ws.root), store.corpus_id, store.seal, method, tuple(sorted((k, repr(v)) for k, v in options.items())))
    if key not in _CACHE:
        docs = load_future_docs(store, ws, verify=False)  # verified just above
        _CACHE.clear()
        _CACHE[key] = (docs, get_retriever(method, docs, progress=progress, **options))
    return _CACHE[key]


def top1_similarities(queries: Sequence[str], texts: Sequence[str | None], model: str) -> list[float | None]:
    """Cosine of each query with its best hit's text (None where there is no hit)."""
    present = [i for i, t in enumerate(texts) if t is not None]
    out: list[float | None] = [None] * len(queries)
    if not present:
        return out
    qv = embed_texts([queries[i] for i in present], model=model)
    dv = embed_texts([str(texts[i]) for i in present], model=model)
    for i, sim in zip(present, np.einsum("ij,ij->i", qv, dv)):
        out[i] = round(float(sim), DECIMALS)
    return out


def retrieve_questions(
    questions: Sequence[Question],
    instance: Instance,
    ws: Workspace,
    method: str | None = None,
    k: int | None = None,
    progress: bool = False,
    **settings: Any,
) -> list[Retrieval]:
    """One :class:`Retrieval` per question, in question order, from the instance's future corpus only.

    ``method``/``k`` default to the instance's retrieval settings; ``settings`` go to
    the retriever (e.g. ``index="hnsw"`` for dense).
    """
    k = k or instance.retrieval.k
    if k < 1:
        raise BadInput(f"k must be at least 1, not {k}")
    docs, retriever = open_retriever(instance, ws, method, progress=progress, **settings)
    rs = instance.retrieval
    sim_model = rs.model
    spec = dict(
        retriever.spec(),
        query=QUERY_RULE,
        shown={"max_chars": rs.max_chars, "text_fields": list(rs.text_fields), "rule": SHOWN_RULE},
        similarity={
            "model": sim_model,
            "model_fingerprint": model_fingerprint(sim_model),
            "of": "question vs top-1 hit",
        },
    )
    queries = [query_text(q) for q in questions]
    hits: list = []
    with tqdm(
        total=len(queries),
        desc=f"retrieving ({spec['method']}, k={k})",
        unit=" q",
        file=sys.stderr,
        disable=not progress,
    ) as bar:
        for start in range(0, len(queries), BATCH):
            batch = queries[start : start + BATCH]
            hits.extend(retriever.search(batch, k))
            bar.update(len(batch))
    best = [docs.text(h[0][0], rs.text_fields) if h else None for h in hits]
    sims = top1_similarities(queries, best, sim_model)
    out = []
    for question, query, ranked, sim in zip(questions, queries, hits, sims):
        documents = []
        for rank, (row, score) in enumerate(ranked, start=1):
            title, abstract = shown_text(docs.titles[row], docs.abstracts[row], rs.max_chars, rs.text_fields)
            documents.append(
                RetrievedDocument(
                    rank=rank,
                    id=docs.ids[row],
                    score=round(score, DECIMALS),
                    published=docs.published[row],
                    title=title,
                    abstract=abstract,
                )
            )
        out.append(
            Retrieval(
                question_id=question.question_id,
                retriever=spec,
                corpus_id=docs.corpus_id,
                corpus_seal=docs.seal,
                k=k,
                documents=documents,
                top1_similarity=sim,
                query=query,
            )
        )
    return out


def write_retrievals(path: str | Path, retrievals: Sequence[Retrieval]) -> Path:
    """Write ``retrieval.jsonl`` (canonical JSON lines, atomically); ``path`` may be a folder."""
    path = Path(path)
    if path.is_dir() or path.suffix != ".jsonl":
        path = path / "retrieval.jsonl"
    return write_jsonl(path, [r.model_dump(mode="json") for r in retrievals])


def retrieve_frozen(
    frozen_path: str | Path,
    ws: Workspace,
    out_path: str | Path | None = None,
    method: str | None = None,
    k: int | None = None,
    progress: bool = False,
    **settings: Any,
) -> list[Retrieval]:
    """Retrieve for every question of a frozen set; refuses a set that is not frozen or not intact (exit 1).

    Writes ``retrieval.jsonl`` under ``out_path`` when given (a folder or a ``.jsonl`` file).
    """
    from backtest.submit.freeze import open_intact_frozen

    _, bundle, instance = open_intact_frozen(frozen_path, ws, "retrieval reads frozen sets only")
    retrievals = retrieve_questions(bundle.questions, instance, ws, method=method, k=k, progress=progress, **settings)
    if out_path is not None:
        write_retrievals(out_path, retrievals)
    return retrievals
