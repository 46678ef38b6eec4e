"""A finished run's seal (``SEAL.json``) and its checks: what ``backtest verify RUN_DIR`` and the run readers ask.

A complete run folder gets ``SEAL.json`` (:class:`~backtest.core.runs.RunSeal`) beside its files: the
sha256 of each of :data:`SEALED` it holds. It is written when ``score`` finishes the run and again when
``release compact`` rewrites it (the compact files' own hashes), and never inside ``RUN.json``: a seal of its
own file leaves ``RUN.json`` as it was, so the committed runs gained a file, not changed bytes, and
``release replay`` re-makes it like every other compact file.

A seal names what a run held when it was finished; it is no signature (who rewrites the files can rewrite it),
so :func:`run_problems` also checks every judgment against the constraint rules and the documents its
retrieval holds (:func:`backtest.judge.constraints.stored_problems`), which a hand-edited ``judgments.jsonl``
breaks unless it is rewritten consistently, citations included.

The seal itself is written and checked by :mod:`backtest.validity.runfolder` (the run folder's one reader and
writer, which every reader checks it through); its names are kept here for the callers that import them.
"""

from __future__ import annotations

from pathlib import Path

from backtest.core.errors import BadInput
from backtest.core.records import Judgment, parse_record
from backtest.validity.runfolder import SEAL_FILE, SEALED, RunFolder, check_seal, seal_bytes, seal_problems, write_seal

__all__ = [
    "SEALED",
    "SEAL_FILE",
    "check_seal",
    "is_run_folder",
    "run_problems",
    "seal_bytes",
    "seal_problems",
    "write_seal",
]


def run_problems(run_dir: str | Path) -> list[str]:
    """Everything ``backtest verify RUN_DIR`` finds wrong with a finished run: its seal (required), and each
    judgment against the constraint rules and its question's retrieved documents."""
    from backtest.judge.constraints import stored_problems

    run_dir = Path(run_dir)
    folder = RunFolder.open(run_dir)
    run = folder.run
    if run.status != "complete":
        raise BadInput(f"{run_dir}: not a finished run (status {run.status!r}); a run is sealed when it completes")
    problems = seal_problems(run_dir, required=True)
    for name in ("judgments.jsonl", "retrieval.jsonl"):
        if not (run_dir / name).is_file():
            return problems + [f"{name} is missing"]
    retrieved = {}
    for n, row in folder.rows("retrieval.jsonl"):
        docs = row.get("documents")
        if "question_id" not in row or not isinstance(docs, list):
            return problems + [f"retrieval.jsonl:{n}: not a retrieval line"]
        retrieved[row["question_id"]] = [str(d.get("id")) for d in docs if isinstance(d, dict)]
    judged = []
    for n, row in folder.rows("judgments.jsonl"):
        where = f"judgments.jsonl:{n}"
        try:
            judgment = parse_record(Judgment, row, where)
        except BadInput as exc:
            problems.append(exc.message)
            continue
        judged.append(judgment.question_id)
        if judgment.question_id not in retrieved:
            problems.append(f"{where}: question {judgment.question_id} has no retrieval")
            continue
        problems += [f"{where}: {p}" for p in stored_problems(judgment, retrieved[judgment.question_id])]
    if sorted(judged) != sorted(retrieved):
        problems.append("judgments.jsonl and retrieval.jsonl name other questions")
    return problems


def is_run_folder(path: Path) -> bool:
    """True for a folder holding a run's ``RUN.json`` (what ``backtest verify`` then checks as a run)."""
    data = RunFolder(path).header_data()
    return isinstance(data, dict) and "run_id" in data and "judge" in data
