"""The first run a new user makes: ``make demo`` on a fresh clone, cold caches (issue 18: at most 3 min wall).

A ``git clone`` of this repository's HEAD into a temporary folder with ``../shared`` beside it (a link to
the real one), so nothing built or cached here is there: no ``corpora/``, no ``.cache/`` (embeddings,
vector store, indexes), ``BACKTEST_INDEX_CACHE`` unset and ``XDG_CACHE_HOME`` a fresh folder. The clone
uses this repository's virtual environment (``VENV=``: ``make install`` is not what is measured; its time
is in the commit that trimmed it) but runs the clone's code (``PYTHONPATH`` names the clone first).

Measured: ``make demo`` twice, cold then warm, wall seconds and the CPU seconds of everything it ran
(children's user + system), with the load average before each, and what the demo printed (its run folder
and the instance it used). ``--quick`` runs the cold demo only.
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_S = 180.0


def _make_demo(clone: Path, env: dict[str, str]) -> dict:
    load = [round(x, 2) for x in os.getloadavg()]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    command = ["make", "--no-print-directory", "demo", f"VENV={REPO / '.venv'}"]
    done = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench demo: make demo failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    lines = (done.stdout + done.stderr).splitlines()
    report = next((line.split(": ", 1)[1] for line in lines if line.startswith("report: ")), "")
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
        "load_average_before": load,
        "report": str(Path(report).relative_to(clone)) if report.startswith(str(clone)) else report,
    }


def run(args) -> dict:
    shared = Path(args.shared).resolve()
    if not (shared / "corpora").is_dir():
        raise SystemExit(f"bench demo: the real corpora are not at {shared / 'corpora'}")
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        root = Path(tmp)
        clone = root / "backtest"
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        (root / "shared").symlink_to(shared)
        env = {k: v for k, v in os.environ.items() if k != "BACKTEST_INDEX_CACHE"}
        env.update(PYTHONPATH=str(clone), XDG_CACHE_HOME=str(root / "xdg-cache"), HF_HUB_OFFLINE="1")
        cold = _make_demo(clone, env)
        warm = None if args.quick else _make_demo(clone, env)
        instance = cold["report"].split("/")[1] if cold["report"].startswith("results/") else None
    return {
        "commit": head.stdout.strip(),
        "cpus": os.cpu_count(),
        "instance": instance,
        "cold": cold,
        "warm": warm,
        "goal_cold_wall_s": GOAL_S,
        "cold_within_goal": cold["wall_s"] <= GOAL_S,
    }


def summary(results: dict) -> str:
    """The README's sentence (filled by ``scripts/gen_docs.py``) from a committed result."""
    cold, warm = results["cold"], results["warm"]
    text = (
        f"On a fresh clone with cold caches, `make demo` (instance `{results['instance']}`) took "
        f"{cold['wall_s']:.0f} s wall ({cold['cpu_s']:.0f} CPU-s, load {cold['load_average_before'][0]} before) "
        f"on this {results['cpus']}-core machine"
    )
    if warm:
        text += f"; run again, {warm['wall_s']:.0f} s"
    return text + f" (`bench/results/demo.json`, measured {results['_meta']['when'][:10]})."
