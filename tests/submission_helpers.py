"""Helpers shared by the freeze tests: a writable workspace over the built astro-2025
instance, hand-made submissions from real past records, and a snapshot of ``frozen/``; one frozen
question record for the judge tests."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from backtest.core.records import Question
from backtest.core.workspace import Workspace
from backtest.corpus.instance import load_instance, open_past_corpus

TEMPLATES = (
    "Does the main result of '{t}' hold when tested with independent data?",
    "What physical mechanism explains the finding reported in '{t}'?",
    "Will follow-up observations confirm the central claim of '{t}'?",
    "Can the tension raised by '{t}' be resolved by improved models?",
)


def question_record(text: str, premise: str | None = None) -> Question:
    """One frozen astro-2025 question (id q1, cutoff 2025-10-31, one past evidence id) asking ``text``."""
    return Question(
        question_id="q1",
        question=text,
        domain="astro",
        cutoff_date="2025-10-31",
        generated_at="2025-10-31",
        generation_system="s",
        source_evidence_ids=["2501.00001"],
        rank=1,
        frozen=True,
        premise=premise,
    )


def writable_ws(source: Workspace, dest: Path) -> Workspace:
    """A fresh workspace reading ``source``'s built corpora (symlinked) with its own manifests copy,
    so a test may freeze, tamper and add instances without touching the session workspace."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "corpora").symlink_to(source.corpora, target_is_directory=True)
    shutil.copytree(source.manifests, dest / "manifests")
    return Workspace(dest)


def past_records(ws: Workspace, instance_id: str = "astro-2025", n: int = 12, seed: int = 0):
    """``n`` past-corpus records of the instance, sampled with ``seed`` (deterministic)."""
    inst = load_instance(instance_id, ws)
    past = open_past_corpus(inst, ws)
    ids = sorted(past.dates)
    chosen = random.Random(seed).sample(ids, n)
    return [past.get(i) for i in chosen]


def question_rows(records, cutoff: str = "2025-10-31", system: str = "hand_v1") -> list[dict]:
    """One question per record, citing it as evidence, in the reference release's field layout."""
    rows = []
    for k, rec in enumerate(records):
        title = " ".join(rec.title.replace("?", "").split())
        rows.append(
            {
                "question_id": f"q_{k + 1:03d}",
                "question": TEMPLATES[k % len(TEMPLATES)].format(t=title),
                "domain": "astrophysics",
                "cutoff_date": cutoff,
                "generated_at": "2025-11-02T10:00:00Z",
                "generation_system": system,
                "source_evidence_ids": [rec.id],
                "rank": k + 1,
                "frozen": True,
            }
        )
    return rows


def metadata(n: int, cutoff: str = "2025-10-31", system: str = "hand_v1", **extra) -> dict:
    """A metadata.json body for a hand-made submission (no LLM used)."""
    data = {
        "system_name": system,
        "description": "Questions written by hand from past-corpus titles; no LLM used.",
        "repository": "https://example.org/hand",
        "cutoff_date": cutoff,
        "domain": "astrophysics",
        "n_questions": n,
        "frozen": True,
    }
    data.update(extra)
    return data


def write_submission(folder: Path, rows: list[dict], meta: dict) -> Path:
    """Write questions.jsonl (one JSON object per line) and metadata.json into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    (folder / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return folder


def make_submission(ws: Workspace, folder: Path, n: int = 12, seed: int = 0, system: str = "hand_v1") -> Path:
    """A valid hand-made astro-2025 submission of ``n`` questions."""
    rows = question_rows(past_records(ws, n=n, seed=seed), system=system)
    return write_submission(folder, rows, metadata(len(rows), system=system))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones included) with its bytes; empty when ``root`` is absent."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
