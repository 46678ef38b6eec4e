"""Freeze 1,000 questions against astro-2025, near-duplicate screen included.

The questions are made from real past-corpus records (seeded), 2% of them
deliberate paraphrases so that the screen has pairs to find. A pair is reported
only when it is above the TF-IDF *and* the embedding threshold, so the freeze runs
TF-IDF first (milliseconds) and embeds only the questions that sit in a TF-IDF
candidate pair; the vectors are cached in ``.cache/embeddings``.

Measured, in one process:

- ``model_load``: loading all-MiniLM once (paid once per process);
- ``cold``: the first freeze (empty embedding cache, prefilter on);
- ``cached``: freezing the same submission again (embeddings read back);
- ``naive_screen``: the screen without either trick: TF-IDF plus embedding every
  question from scratch (what a freeze pays without prefilter and cache).

Wall and CPU seconds with a per-gate breakdown; ratios compare the naive screen
with the dedup gate of the cold and cached freezes. The workspace is temporary:
the corpora come from the repo's built ``corpora/`` when present, else they are
built from ``../shared`` (setup time reported separately, not counted).
``--quick`` freezes 200 questions.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = (
    "Does the main result of '{t}' hold when tested with independent data?",
    "What physical mechanism explains the finding reported in '{t}'?",
    "Will follow-up observations confirm the central claim of '{t}'?",
    "Can the tension raised by '{t}' be resolved by improved models?",
    "Which measurement would most sharply test the conclusion of '{t}'?",
)


def _workspace(tmp: Path, shared: Path):
    """A temp workspace over built astro-2025 corpora; returns (workspace, setup seconds)."""
    from backtest.core.workspace import Workspace
    from backtest.corpus.build import BuildOptions, build_corpus
    from backtest.corpus.instance import create_instance
    from backtest.corpus.store import CorpusStore

    repo_ws = Workspace(REPO)
    started = time.perf_counter()
    try:
        CorpusStore.open("astro-2025-past", repo_ws)
        (tmp / "corpora").symlink_to(repo_ws.corpora, target_is_directory=True)
        shutil.copytree(repo_ws.manifests, tmp / "manifests")
        return Workspace(tmp), {"source": "repo corpora/", "setup_s": round(time.perf_counter() - started, 2)}
    except Exception:  # noqa: BLE001 - not built in the repo: build from ../shared
        pass
    import datetime as dt

    ws = Workspace(tmp)
    daily = shared / "corpora" / "astro-ph-daily"
    cutoff = dt.date(2025, 10, 31)
    build_corpus(BuildOptions("arxiv-daily", [daily], "astro-2025-past", "past", end=cutoff), ws)
    build_corpus(
        BuildOptions(
            "arxiv-daily",
            [daily],
            "astro-2025-future",
            "future",
            start=cutoff + dt.timedelta(days=1),
            end=dt.date(2026, 7, 1),
        ),
        ws,
    )
    create_instance("astro-2025", cutoff, "astro-2025-past", "astro-2025-future", ws)
    return ws, {"source": f"built from {daily}", "setup_s": round(time.perf_counter() - started, 2)}


def _submission(ws, folder: Path, n: int, seed: int = 0) -> int:
    from backtest.corpus.instance import load_instance, open_past_corpus

    past = open_past_corpus(load_instance("astro-2025", ws), ws)
    rng = random.Random(seed)
    n_dup = max(1, n // 50)
    records = [past.get(i) for i in rng.sample(sorted(past.dates), n - n_dup)]
    rows = []
    for k, rec in enumerate(records):
        title = " ".join(rec.title.replace("?", "").split())
        rows.append(
            {
                "question_id": f"q_{k + 1:04d}",
                "question": TEMPLATES[k % len(TEMPLATES)].format(t=title),
                "domain": "astrophysics",
                "cutoff_date": "2025-10-31",
                "generated_at": "2025-11-02T10:00:00Z",
                "generation_system": "bench_hand_v1",
                "source_evidence_ids": [rec.id],
                "rank": k + 1,
                "frozen": True,
            }
        )
    for d, src in enumerate(rng.sample(rows, n_dup)):
        rows.append(
            dict(
                src,
                question_id=f"q_dup_{d + 1:03d}",
                rank=len(rows) + 1,
                question=src["question"].replace("the ", "the reported ", 1),
            )
        )
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "metadata.json").write_text(
        json.dumps(
            {
                "system_name": "bench_hand_v1",
                "description": "benchmark questions from past titles; no LLM used",
                "cutoff_date": "2025-10-31",
                "domain": "astrophysics",
                "n_questions": len(rows),
                "frozen": True,
            }
        )
    )
    return n_dup


def _freeze(ws, sub: Path) -> dict:
    from backtest.submit.freeze import FROZEN_FILE, freeze_submission

    timings: dict[str, dict[str, float]] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    path = freeze_submission(sub, "astro-2025", ws, dedup="report", timings=timings)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    frozen = json.loads((path / FROZEN_FILE).read_text())
    dedup = next(g for g in frozen["gates"] if g["name"] == "near_duplicates")
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "gates": timings,
        "load_and_write_s": round(wall - sum(t["wall_s"] for t in timings.values()), 3),
        "dedup_cpu_s": timings["near_duplicates"]["cpu_s"],
        "dedup_reason": dedup["reason"],
        "version": frozen["version"],
        "near_duplicate_pairs": len(dedup["details"]),
        "dedup_status": dedup["status"],
    }


def _naive_screen(sub: Path) -> dict:
    from backtest.submit.loading import load_submission
    from backtest.text.equivalence import get_rule, pairs_above_all

    texts = [q.question for q in load_submission(sub).questions]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    pairs = pairs_above_all(texts, [get_rule("tfidf"), get_rule("embedding")], prefilter=False)
    return {
        "wall_s": round(time.perf_counter() - wall0, 3),
        "cpu_s": round(time.process_time() - cpu0, 3),
        "embedded": len(texts),
        "near_duplicate_pairs": len(pairs),
    }


def run(args) -> dict:
    """Time the model load, a cold and a cached freeze of the same set, and the naive screen."""
    from backtest.text.embed import load_model

    n = 200 if getattr(args, "quick", False) else 1000
    shared = Path(getattr(args, "shared", REPO.parent / "shared"))
    with tempfile.TemporaryDirectory(prefix="bench_freeze_") as tmp:
        ws, setup = _workspace(Path(tmp) / "ws", shared)
        sub = Path(tmp) / "submission"
        n_dup = _submission(ws, sub, n)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        load_model()
        model_load = {"wall_s": round(time.perf_counter() - wall0, 3), "cpu_s": round(time.process_time() - cpu0, 3)}
        shutil.rmtree(ws.cache / "embeddings", ignore_errors=True)
        cold = _freeze(ws, sub)
        cached = _freeze(ws, sub)
        naive = _naive_screen(sub)
    return {
        "n_questions": n,
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
        "cpu_cores": os.cpu_count(),
        "planted_paraphrases": n_dup,
        "workspace": setup,
        "model_load": model_load,
        "cold": cold,
        "cached": cached,
        "naive_screen": naive,
        "ratio_naive_screen_over_cold_dedup_cpu": round(naive["cpu_s"] / max(cold["dedup_cpu_s"], 1e-3), 2),
        "ratio_naive_screen_over_cached_dedup_cpu": round(naive["cpu_s"] / max(cached["dedup_cpu_s"], 1e-3), 2),
        "cold_wall_s": cold["wall_s"],
        "cold_cpu_s": cold["cpu_s"],
        "cached_wall_s": cached["wall_s"],
        "naive_screen_cpu_s": naive["cpu_s"],
    }
