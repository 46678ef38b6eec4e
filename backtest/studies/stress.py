"""The temporal stress test: the same generators at several cutoffs, one table of rates.

For each cutoff T the same source is cut into a full instance: a past corpus over
``years_before`` ending on T and a future corpus over ``years_after`` starting on
T + 1 day (calendar months, so a cutoff on 2016-12-31 with one year after gives
2017-01-01..2017-12-31). Each generator writes a submission from the past corpus
only; it is frozen against that instance and scored (the offline judge unless a
config is given). Rates over all frozen questions — coverage (1 − not_addressed),
answered, premise refuted — carry exact Clopper–Pearson 95% intervals
(:func:`backtest.core.stats.proportion`). Output: ``STRESS.md`` and ``STRESS.json``.

Corpora are named ``<id>-<YYYYMMDD>-past|future`` and instances ``<id>-<YYYYMMDD>``;
an intact earlier build with the same settings is reused, and a frozen set sealed from
byte-identical questions and metadata (:func:`backtest.submit.freeze.freeze_once`) is
reused instead of frozen again, so a rerun adds nothing to the ledger.

:func:`stress_from_runs` builds the same table from runs that already exist — the
reference release's stress test as ``backtest import sqb`` writes it (one instance
``sqb-stress-c<YYYY>`` per cutoff), or any scored runs: a row per run, its cutoff and
windows read from its instance, nothing generated, frozen or scored.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.core.errors import BacktestError, BadInput
from backtest.core.fileio import atomic_write_text
from backtest.core.records import Instance, RetrievalSettings, check_safe_name, write_output
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_or_reuse, load_manifest
from backtest.corpus.instance import create_instance, load_instance
from backtest.scoring.metrics import format_rate
from backtest.studies.outputs import Stress
from backtest.studies.pipeline import freeze_or_reuse, rates_of_run, score
from backtest.validity.runfolder import RunFolder

RATE_KEYS = ("coverage", "answered", "refuted")
INTERVAL = "exact Clopper-Pearson 95% (backtest.core.stats.proportion)"
RATES = {
    "coverage": "engaged outcomes (metrics.json coverage)",
    "answered": "outcome answered",
    "refuted": "premise_status refuted",
}


@dataclass
class StressOptions:
    """What ``backtest stress`` runs."""

    generators: list[str]
    cutoffs: list[dt.date]
    source: str
    inputs: list[str]
    categories: list[str] = field(default_factory=list)
    query: str | None = None
    years_before: float = 2.0
    years_after: float = 2.0
    n: int = 50
    seed: int = 0
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    judge_config: str | None = None
    stress_id: str = "stress"
    out: Path | None = None


def add_months(day: dt.date, months: int) -> dt.date:
    """``day`` moved by ``months`` calendar months, clamped to the month's last day."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    return dt.date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _month_end_aware(day: dt.date, months: int) -> dt.date:
    """Like :func:`add_months`, but a month's last day maps to the target month's last day."""
    moved = add_months(day, months)
    if day.day == calendar.monthrange(day.year, day.month)[1]:
        moved = moved.replace(day=calendar.monthrange(moved.year, moved.month)[1])
    return moved


def cutoff_windows(
    cutoff: dt.date, years_before: float, years_after: float
) -> tuple[tuple[dt.date, dt.date], tuple[dt.date, dt.date]]:
    """``((past_start, cutoff), (cutoff + 1 day, future_end))`` in whole calendar months."""
    past_start = _month_end_aware(cutoff, -round(years_before * 12)) + dt.timedelta(days=1)
    future_end = _month_end_aware(cutoff, round(years_after * 12))
    return (past_start, cutoff), (cutoff + dt.timedelta(days=1), future_end)


def _corpus(opts: StressOptions, corpus_id: str, role: str, start: dt.date, end: dt.date, ws: Workspace) -> str:
    return build_or_reuse(
        BuildOptions(
            source=opts.source,
            inputs=[Path(p) for p in opts.inputs],
            corpus_id=corpus_id,
            role=role,
            start=start,
            end=end,
            categories=list(opts.categories),
            query=opts.query,
        ),
        ws,
    )


def build_cutoff_instance(opts: StressOptions, cutoff: dt.date, ws: Workspace):
    """The full instance for one cutoff (past and future corpora built from the same source)."""
    (past_start, _), (future_start, future_end) = cutoff_windows(cutoff, opts.years_before, opts.years_after)
    base = f"{opts.stress_id}-{cutoff:%Y%m%d}"
    past = _corpus(opts, f"{base}-past", "past", past_start, cutoff, ws)
    future = _corpus(opts, f"{base}-future", "future", future_start, future_end, ws)
    domain = f"{opts.source} {', '.join(opts.categories) or 'all categories'}" + (
        f" matching {opts.query!r}" if opts.query else ""
    )
    return create_instance(
        base, cutoff, past, future, ws, retrieval=opts.retrieval, judge_config=opts.judge_config, domain=domain
    )


def generate_submission(name: str, instance_id: str, ws: Workspace, n: int, seed: int, out_dir: Path) -> Path:
    """Run generator ``name`` on the instance's past corpus (only) and write a submission folder."""
    from backtest.generators import run_generator

    summary = run_generator(name, instance_id, ws, n=n, seed=seed, out=out_dir)
    if not summary["n_questions"]:
        raise BadInput(f"generator {name} produced no question on {instance_id}")
    return Path(summary["out"])


def run_stress(opts: StressOptions, ws: Workspace, progress=None) -> dict[str, Any]:
    """Run every generator at every cutoff; write and return the table (``STRESS.json`` content)."""
    check_safe_name(opts.stress_id, "stress id")
    if not opts.generators:
        raise BadInput("name at least one generator")
    if opts.cutoffs != sorted(set(opts.cutoffs)):
        raise BadInput("--cutoffs: dates must be distinct and in increasing order")
    out = Path(opts.out) if opts.out else ws.results / "stress" / opts.stress_id
    rows: list[dict[str, Any]] = []
    for cutoff in opts.cutoffs:
        instance = build_cutoff_instance(opts, cutoff, ws)
        n_past = load_manifest(instance.past.corpus_id, ws).n_records
        n_future = load_manifest(instance.future.corpus_id, ws).n_records
        for name in opts.generators:
            row: dict[str, Any] = {
                "generator": name,
                "cutoff": cutoff.isoformat(),
                "instance_id": instance.instance_id,
                "past_window": [instance.past.window.start.isoformat(), instance.past.window.end.isoformat()],
                "future_window": [instance.future.window.start.isoformat(), instance.future.window.end.isoformat()],
                "n_past": n_past,
                "n_future": n_future,
            }
            try:
                sub = generate_submission(
                    name,
                    instance.instance_id,
                    ws,
                    opts.n,
                    opts.seed,
                    ws.root / "submissions" / opts.stress_id / f"{cutoff:%Y%m%d}" / name,
                )
                frozen, _ = freeze_or_reuse(sub, instance.instance_id, ws)
                run_dir = Path(score(frozen, ws, run_id=f"{opts.stress_id}-seed{opts.seed}").run_dir)
            except BacktestError as exc:
                row.update(status="skipped", reason=exc.message)
                rows.append(row)
                if progress:
                    progress(row)
                continue
            run_info = RunFolder.open(run_dir).run
            row.update(
                status="scored",
                frozen=ws.relative(frozen),
                run=ws.relative(run_dir),
                valid=run_info.valid,
                **rates_of_run(run_dir).model_dump(mode="json"),
            )
            rows.append(row)
            if progress:
                progress(row)
    table = {
        "schema_version": "1",
        "kind": "stress",
        "stress_id": opts.stress_id,
        "source": {
            "kind": opts.source,
            "inputs": list(opts.inputs),
            "categories": list(opts.categories),
            "query": opts.query,
        },
        "years_before": opts.years_before,
        "years_after": opts.years_after,
        "n": opts.n,
        "seed": opts.seed,
        "retrieval": opts.retrieval.model_dump(mode="json"),
        "judge": opts.judge_config or "offline",
        "interval": INTERVAL,
        "rates": RATES,
        "rows": rows,
    }
    return _write_table(table, out)


def _write_table(table: dict[str, Any], out: Path) -> dict[str, Any]:
    """Write ``STRESS.md`` and ``STRESS.json`` (checked against :class:`Stress`) into ``out``; return the table."""
    md_path, json_path = out / "STRESS.md", out / "STRESS.json"
    write_output(json_path, Stress, table)
    atomic_write_text(md_path, render_markdown(table))
    table["markdown_path"], table["json_path"] = str(md_path), str(json_path)
    return table


def _instance_of(run_dir: Path, instance_id: str, ws: Workspace) -> Instance:
    """The run's instance: from ``ws``, else from the workspace the run folder sits in."""
    try:
        return load_instance(instance_id, ws)
    except BadInput as missing:
        try:
            own = Workspace.of_run(run_dir)
        except BadInput:
            raise missing from None
        if own.root == ws.root.resolve():
            raise
        return load_instance(instance_id, own)


def _n_records(corpus_id: str, ws: Workspace) -> int | None:
    try:
        return load_manifest(corpus_id, ws).n_records
    except BacktestError:  # an imported instance names corpora that are not held here
        return None


def _years(window: list[str]) -> float:
    start, end = (dt.date.fromisoformat(d) for d in window)
    return round(((end - start).days + 1) / 365.25, 2)


def stress_from_runs(
    run_dirs: list[str | Path], ws: Workspace, stress_id: str = "stress", out: Path | None = None
) -> dict[str, Any]:
    """The stress table of existing scored runs (a row per run; module docstring); written like :func:`run_stress`.

    Runs of one system at one instance twice are refused (the row would be ambiguous). The table-level
    ``years_before``/``years_after`` are the longest windows and ``n`` the largest set (each row has its own);
    ``seed`` does not apply (0)."""
    check_safe_name(stress_id, "stress id")
    if not run_dirs:
        raise BadInput("--from-runs: name at least one run folder (results/<instance>/<system>/<run_id>)")
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}
    judges, retrievers = set(), set()
    for run_dir in map(Path, run_dirs):
        run = RunFolder.open(run_dir).run
        key = (run.system, run.instance_id)
        if key in seen:
            raise BadInput(f"{run_dir}: a second run of {key[0]} on {key[1]} (first: {seen[key]})")
        seen[key] = str(run_dir)
        instance = _instance_of(run_dir, run.instance_id, ws)
        judges.add(run.judge.name or "unknown judge")
        retriever = run.retriever
        named = [value for value in (retriever.method, retriever.model) if value] if retriever else []
        retrievers.add(" ".join(named) or "none recorded")
        future = instance.future
        rows.append(
            {
                "generator": run.system,
                "cutoff": instance.cutoff.isoformat(),
                "instance_id": instance.instance_id,
                "past_window": [instance.past.window.start.isoformat(), instance.past.window.end.isoformat()],
                "future_window": [future.window.start.isoformat(), future.window.end.isoformat()] if future else None,
                "n_past": _n_records(instance.past.corpus_id, ws),
                "n_future": _n_records(future.corpus_id, ws) if future else None,
                "status": "scored",
                "frozen": run.frozen_path,
                "run": str(run_dir),
                "valid": run.valid,
                **rates_of_run(run_dir).model_dump(mode="json"),
            }
        )
    table = {
        "schema_version": "1",
        "kind": "stress",
        "stress_id": stress_id,
        "source": {"kind": "runs", "inputs": [str(d) for d in run_dirs], "categories": [], "query": None},
        "years_before": max(_years(r["past_window"]) for r in rows),
        "years_after": max((_years(r["future_window"]) for r in rows if r["future_window"]), default=0.0),
        "n": max(r["n"] for r in rows),
        "seed": 0,
        "retrieval": {"method": ", ".join(sorted(retrievers))},
        "judge": ", ".join(sorted(judges)),
        "interval": INTERVAL,
        "rates": RATES,
        "rows": rows,
    }
    return _write_table(table, Path(out) if out else ws.results / "stress" / stress_id)


def render_markdown(table: dict[str, Any]) -> str:
    """One Markdown table: a row per generator per cutoff, rates with their 95% intervals."""
    src = table["source"]
    if src["kind"] == "runs":
        setting = (
            f"Rows from {len(table['rows'])} existing scored runs (`backtest stress --from-runs`); each row's cutoff "
            f"and windows are its instance's; retriever {table['retrieval']['method']}, judge {table['judge']}."
        )
        corpora = "past / future window"
    else:
        setting = (
            f"Source `{src['kind']}` {', '.join(src['categories']) or 'all categories'}"
            + (f", query `{src['query']}`" if src.get("query") else "")
            + f"; past {table['years_before']:g} y before each cutoff, future {table['years_after']:g} y after; "
            f"n = {table['n']} per generator, seed {table['seed']}; "
            f"retriever {table['retrieval']['method']}, judge {table['judge']}."
        )
        corpora = "past / future papers"
    lines = [
        f"# Temporal stress test `{table['stress_id']}`",
        "",
        setting,
        f"Rates over all frozen questions with {table['interval']} intervals (k/n); "
        "valid: the run passed the mechanical leakage checks.",
        "",
        f"| generator | cutoff | {corpora} | n | coverage | answered | premise refuted | valid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(table["rows"], key=lambda r: (r["generator"], r["cutoff"])):
        papers = f"{row['n_past']} / {row['n_future']}"
        if row.get("n_past") is None and row.get("past_window"):
            future = "..".join(row["future_window"]) if row.get("future_window") else "–"
            papers = f"{'..'.join(row['past_window'])} / {future}"
        if row["status"] != "scored":
            lines.append(f"| {row['generator']} | {row['cutoff']} | {papers} | – | skipped: {row['reason']} | | | |")
            continue
        valid = {True: "yes", False: "NO (leakage check failed)"}.get(row.get("valid"), "not checked")
        lines.append(
            f"| {row['generator']} | {row['cutoff']} | {papers} | {row['n']} | "
            + " | ".join(format_rate(row[k]) for k in RATE_KEYS)
            + f" | {valid} |"
        )
    return "\n".join(lines) + "\n"
