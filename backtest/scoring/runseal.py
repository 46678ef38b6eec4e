"""A finished run's seal (``SEAL.json``) and its checks: what ``backtest verify RUN_DIR`` and the run readers ask.

A complete run folder gets ``SEAL.json`` (:class:`~backtest.scoring.outputs.RunSeal`) beside its files: the
sha256 of each of :data:`SEALED` it holds. It is written when ``score`` finishes the run and again when
``release compact`` rewrites it (the compact files' own hashes), and never inside ``RUN.json``: a seal of its
own file leaves ``RUN.json`` as it was, so the committed runs gained a file, not changed bytes, and
``release replay`` re-makes it like every other compact file.

A seal names what a run held when it was finished; it is no signature (who rewrites the files can rewrite it),
so :func:`run_problems` also checks every judgment against the constraint rules and the documents its
retrieval holds (:func:`backtest.judge.constraints.stored_problems`), which a hand-edited ``judgments.jsonl``
breaks unless it is rewritten consistently, citations included.
"""

from __future__ import annotations

from pathlib import Path

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.records import Judgment, output_dict, parse_record, read_output
from backtest.core.seal import sha256_bytes, sha256_file
from backtest.scoring.outputs import Run, RunSeal

SEAL_FILE = "SEAL.json"
#: the files a seal covers (those a run holds; the reports are redrawn from them and are not sealed)
SEALED = ("RUN.json", "judgments.jsonl", "retrieval.jsonl", "metrics.json", "contamination.json")


def seal_bytes(run_id: str, files: dict[str, bytes]) -> bytes:
    """``SEAL.json``'s bytes for a run's files (name -> bytes; names outside :data:`SEALED` are left out)."""
    import json

    seal = RunSeal(schema_version="1", run_id=run_id, files={n: sha256_bytes(files[n]) for n in SEALED if n in files})
    return (json.dumps(output_dict(seal), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def write_seal(run_dir: Path, run_id: str) -> Path:
    """Seal the files ``run_dir`` holds now (atomically)."""
    from backtest.core.fileio import atomic_write_bytes

    files = {name: (run_dir / name).read_bytes() for name in SEALED if (run_dir / name).is_file()}
    return atomic_write_bytes(run_dir / SEAL_FILE, seal_bytes(run_id, files))


def seal_problems(run_dir: Path, required: bool = False) -> list[str]:
    """How ``run_dir``'s files differ from its seal, one line each; a missing seal is a problem when
    ``required``."""
    path = run_dir / SEAL_FILE
    if not path.is_file():
        return [f"{SEAL_FILE} is missing: the run was not sealed when it finished"] if required else []
    seal = read_output(RunSeal, path)
    problems = [
        f"{name} differs from its seal ({SEAL_FILE})"
        if (run_dir / name).is_file()
        else f"{name} is missing (its seal names it)"
        for name, digest in sorted(seal.files.items())
        if not (run_dir / name).is_file() or sha256_file(run_dir / name) != digest
    ]
    problems += [
        f"{name} is not in its seal ({SEAL_FILE})"
        for name in SEALED
        if (run_dir / name).is_file() and name not in seal.files
    ]
    return problems


def check_seal(run_dir: str | Path) -> None:
    """CheckFailed naming the first file of ``run_dir`` that differs from its seal (nothing when unsealed)."""
    problems = seal_problems(Path(run_dir))
    if problems:
        raise CheckFailed(f"{run_dir}: {problems[0]}; the run was changed after it was finished", problems)


def run_problems(run_dir: str | Path) -> list[str]:
    """Everything ``backtest verify RUN_DIR`` finds wrong with a finished run: its seal (required), and each
    judgment against the constraint rules and its question's retrieved documents."""
    from backtest.judge.constraints import stored_problems

    run_dir = Path(run_dir)
    run = read_output(Run, run_dir / "RUN.json")
    if run.status != "complete":
        raise BadInput(f"{run_dir}: not a finished run (status {run.status!r}); a run is sealed when it completes")
    problems = seal_problems(run_dir, required=True)
    for name in ("judgments.jsonl", "retrieval.jsonl"):
        if not (run_dir / name).is_file():
            return problems + [f"{name} is missing"]
    retrieved = {}
    for n, row in iter_jsonl(run_dir / "retrieval.jsonl"):
        docs = row.get("documents")
        if "question_id" not in row or not isinstance(docs, list):
            return problems + [f"retrieval.jsonl:{n}: not a retrieval line"]
        retrieved[row["question_id"]] = [str(d.get("id")) for d in docs if isinstance(d, dict)]
    judged = []
    for n, row in iter_jsonl(run_dir / "judgments.jsonl"):
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
    if not (path / "RUN.json").is_file():
        return False
    data = read_json(path / "RUN.json")
    return isinstance(data, dict) and "run_id" in data and "judge" in data
