"""Arena contexts: the shared inputs on which two systems' outputs are compared.

Two sources:

* **User JSONL** — one line per output, ``{"context": ..., "system": ..., "output": ...}``.
  ``context`` is the shared input text (or an object ``{"id": ..., "text": ...}``);
  lines with the same context form one context. An optional ``context_id`` names it.
* **Backtest neighbourhoods** — question sets of several systems on the same instance.
  Each question is represented by the text of its past-evidence papers (title +
  abstract from the instance's past corpus; the question text itself when an id is
  not in the corpus). Two questions of different systems are neighbours when their
  evidence overlaps (a shared evidence id: similarity 1) or their evidence texts are
  near each other (TF-IDF cosine ≥ ``threshold``). Contexts are formed greedily,
  tightest neighbourhood first: an anchor question takes, from every other system,
  its most similar unused neighbour. Each question joins at most one context, so
  contexts are disjoint and can be resampled as clusters by the bootstrap.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl
from backtest.core.records import Question, Versioned
from backtest.core.seal import sha256_text

DEFAULT_THRESHOLD = 0.15
MAX_CONTEXT_PAPERS = 6
MAX_ABSTRACT_CHARS = 600


class ArenaOutput(BaseModel):
    """One system's output in a context (for backtests, one question)."""

    model_config = ConfigDict(extra="forbid")

    system: str
    output: str
    question_id: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)


class ArenaContext(Versioned):
    """A shared input and the outputs of the systems compared on it."""

    model_config = ConfigDict(extra="forbid")

    context_id: str
    text: str
    source: str = "user"
    evidence_ids: list[str] = Field(default_factory=list)
    outputs: dict[str, ArenaOutput]

    def systems(self) -> list[str]:
        """The systems present, sorted by name."""
        return sorted(self.outputs)


def load_user_contexts(path: str | Path) -> list[ArenaContext]:
    """Read a JSONL of ``{context, system, output}`` lines into contexts (order of first appearance)."""
    grouped: dict[str, dict[str, Any]] = {}
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        missing = [k for k in ("context", "system", "output") if k not in row]
        if missing:
            raise BadInput(f"{where}: missing field(s) {', '.join(missing)} (need context, system, output)")
        ctx, system, output = row["context"], row["system"], row["output"]
        if isinstance(ctx, dict):
            text, cid = str(ctx.get("text", "")), ctx.get("id")
        else:
            text, cid = str(ctx), None
        cid = str(row.get("context_id") or cid or "c_" + sha256_text(text)[:12])
        if not isinstance(system, str) or not system.strip():
            raise BadInput(f"{where}: 'system' must be a non-empty string")
        if not isinstance(output, str) or not output.strip():
            raise BadInput(f"{where}: 'output' must be a non-empty string")
        entry = grouped.setdefault(cid, {"text": text, "outputs": {}})
        if entry["text"] != text:
            raise BadInput(f"{where}: context {cid!r} appears with two different texts")
        if system in entry["outputs"]:
            raise BadInput(f"{where}: system {system!r} has two outputs for context {cid!r}")
        entry["outputs"][system] = ArenaOutput(system=system, output=output)
    if not grouped:
        raise BadInput(f"{path}: no contexts")
    return [
        ArenaContext(context_id=cid, text=e["text"], source="user", outputs=e["outputs"]) for cid, e in grouped.items()
    ]


def question_output_text(q: Question) -> str:
    """The text a judge sees for a question: the question, plus its hypothesis/premise when given."""
    parts = [q.question.strip()]
    if q.hypothesis:
        parts.append(f"Hypothesis: {q.hypothesis.strip()}")
    elif q.premise:
        parts.append(f"Premise: {q.premise.strip()}")
    return "\n".join(parts)


def _paper_text(record) -> str:
    return f"{record.title}. {record.abstract}"


def neighbourhood_contexts(
    question_sets: dict[str, Sequence[Question]],
    past=None,
    threshold: float = DEFAULT_THRESHOLD,
    min_systems: int = 2,
) -> list[ArenaContext]:
    """Group questions of several systems into disjoint past-evidence neighbourhoods.

    ``past`` is the instance's past corpus (anything with ``get(id)`` returning a
    record with ``title``/``abstract``) or None. Every question set must share one
    cutoff date (the same instance). Returns contexts with at least ``min_systems``
    systems, ordered by decreasing neighbourhood similarity.
    """
    from scipy.sparse import csr_matrix
    from sklearn.feature_extraction.text import TfidfVectorizer

    systems = sorted(question_sets)
    if len(systems) < 2:
        raise BadInput("an arena needs question sets from at least two systems")
    cutoffs = {q.cutoff_date for s in systems for q in question_sets[s]}
    if len(cutoffs) > 1:
        raise BadInput(
            f"question sets have different cutoffs ({', '.join(sorted(map(str, cutoffs)))}); "
            "arena contexts need one instance"
        )
    items: list[tuple[str, Question]] = [
        (s, q) for s in systems for q in sorted(question_sets[s], key=lambda q: (q.rank, q.question_id))
    ]
    if not items:
        raise BadInput("the question sets are empty")
    texts, evid = [], []
    for _, q in items:
        papers = [past.get(i) for i in q.source_evidence_ids] if past is not None else []
        found = [p for p in papers if p is not None]
        texts.append(" ".join(_paper_text(p) for p in found) if found else q.question)
        evid.append(set(q.source_evidence_ids))
    vectors = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(texts)
    sim = (vectors @ vectors.T).toarray()
    owner = np.array([systems.index(s) for s, _ in items])
    ids = sorted(set().union(*evid))
    col = {i: k for k, i in enumerate(ids)}
    rows = [r for r, e in enumerate(evid) for _ in e]
    incidence = csr_matrix(
        (np.ones(len(rows)), (rows, [col[i] for e in evid for i in e])), shape=(len(items), len(ids))
    )
    sim[(incidence @ incidence.T).toarray() > 0] = 1.0  # shared evidence id: same neighbourhood
    sim[owner[:, None] == owner[None, :]] = -1.0  # never pair a system with itself
    best = sim.max(axis=1)
    anchors = sorted(
        range(len(items)),
        key=lambda k: (-round(float(best[k]), 12), items[k][1].rank, items[k][0], items[k][1].question_id),
    )
    used = np.zeros(len(items), dtype=bool)
    contexts: list[tuple[float, ArenaContext]] = []
    for anchor in anchors:
        if used[anchor] or best[anchor] < threshold:
            continue
        members = [anchor]
        for k in range(len(systems)):
            if k == owner[anchor]:
                continue
            cand = np.where((owner == k) & ~used & (sim[anchor] >= threshold))[0]
            if len(cand):
                members.append(int(cand[np.argmax(sim[anchor, cand])]))
        if len(members) < min_systems:
            continue
        used[members] = True
        contexts.append((float(np.mean([sim[anchor, m] for m in members[1:]])), _make_context(items, members, past)))
    return [c for _, c in contexts]


def _make_context(items: list[tuple[str, Question]], members: list[int], past) -> ArenaContext:
    evidence: list[str] = []
    for m in members:
        for i in items[m][1].source_evidence_ids:
            if i not in evidence:
                evidence.append(i)
    lines = []
    for i in evidence[:MAX_CONTEXT_PAPERS]:
        rec = past.get(i) if past is not None else None
        if rec is not None:
            lines.append(f"[{i}] {rec.title} — {rec.abstract[:MAX_ABSTRACT_CHARS]}")
        else:
            lines.append(f"[{i}]")
    text = "Past literature (published on or before the cutoff):\n" + "\n".join(lines)
    outputs = {
        items[m][0]: ArenaOutput(
            system=items[m][0],
            output=question_output_text(items[m][1]),
            question_id=items[m][1].question_id,
            evidence_ids=list(items[m][1].source_evidence_ids),
        )
        for m in members
    }
    key = "|".join(sorted(f"{items[m][0]}:{items[m][1].question_id}" for m in members))
    return ArenaContext(
        context_id="n_" + sha256_text(key)[:12],
        text=text,
        source="neighbourhood",
        evidence_ids=evidence,
        outputs=outputs,
    )


def load_question_set(path: str | Path) -> tuple[str, list[Question]]:
    """Read a question set from a submission/frozen folder or a ``questions.jsonl`` file.

    A frozen folder (with ``FROZEN.json``) is verified first (CheckFailed when tampered).
    The system name is the folder's ``metadata.json`` ``system_name`` when present,
    else the folder name (a frozen ``.../<system>/v<N>/`` folder gives ``<system>``).
    """
    from backtest.core.fileio import read_json
    from backtest.core.records import parse_record

    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if path.is_dir() and (path / "FROZEN.json").is_file():
        from backtest.submit.freeze import load_frozen

        bundle = load_frozen(path)  # verifies the seal and file hashes
        return bundle.metadata.system_name, list(bundle.questions)
    qfile = path / "questions.jsonl" if path.is_dir() else path
    if not qfile.is_file():
        raise BadInput(f"{path}: no questions.jsonl")
    questions = [parse_record(Question, row, f"{qfile}:{n}") for n, row in iter_jsonl(qfile)]
    name = None
    meta = folder / "metadata.json"
    if meta.is_file():
        data = read_json(meta)
        if isinstance(data, dict) and isinstance(data.get("system_name"), str):
            name = data["system_name"]
    if name is None:
        name = folder.parent.name if folder.name.startswith("v") and folder.name[1:].isdigit() else folder.name
    return name, questions


def cutoff_of(question_sets: dict[str, Sequence[Question]]) -> dt.date | None:
    """The shared cutoff date of the question sets (None when empty)."""
    days = {q.cutoff_date for qs in question_sets.values() for q in qs}
    return next(iter(days)) if len(days) == 1 else None
