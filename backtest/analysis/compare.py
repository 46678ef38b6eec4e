"""Compare scored runs: systems x metrics with exact intervals, pairwise Fisher tests, a leaderboard.

``compare_runs(run_dirs)`` reads each run folder (``RUN.json`` + ``metrics.json``; when
``metrics.json`` is missing it is computed from ``judgments.jsonl``, ``retrieval.jsonl``
and the frozen questions) and returns one JSON-ready comparison:

* ``systems``: one row per run with every proportion metric as ``{k, n, rate, ci95}``
  (95% Clopper–Pearson) and the means (supporting papers, top-1 similarity, lag);
* ``tests``: for coverage, answered rate and premise-refutation rate, a two-sided Fisher
  exact test for every pair of runs, with Holm and Bonferroni corrections *within each
  metric's family of pairs* and the paper's band on the uncorrected p
  (``significant`` p < 0.01, ``suggestive`` 0.01 <= p < 0.05);
* ``leaderboard``: runs ranked by coverage, then answered rate, then refutation rate;
* ``warnings``: runs from different instances or judges (rates are rater-relative),
  and every invalid run admitted with ``allow_invalid``.

A run whose ``RUN.json`` (or ``metrics.json``) says ``valid: false`` is refused unless
``allow_invalid=True``; then it is marked invalid in every output.
``render_markdown``, ``render_html`` (with a forest plot as an embedded base64 PNG)
and ``write_outputs`` turn the comparison into files.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
from pathlib import Path
from typing import Any

from backtest.analysis.outputs import Comparison
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, iter_jsonl
from backtest.core.records import OUTCOMES, Judgment, Question, Retrieval, parse_record, read_output
from backtest.core.stats import adjust_pvalues, fisher_exact, significance_band
from backtest.core.workspace import Workspace
from backtest.scoring.metrics import compute_metrics
from backtest.scoring.outputs import Metrics, Run

TESTED = (("coverage", "coverage"), ("answered_rate", "answered"), ("premise_refutation_rate", "premise refutation"))
PROPORTION_ROWS = (
    ("coverage", "coverage (engaged)"),
    ("answered_rate", "answered"),
    ("partially_addressed", "partially addressed"),
    ("posed_but_open", "posed but open"),
    ("not_addressed", "not addressed"),
    ("premise_refutation_rate", "premise refuted"),
    ("multi_source_rate", "multi-source (>= 2 cited)"),
    ("specificity_rate", "names a catalogued object"),
    ("contamination_rate", "contamination probe (>= 1 future-only term)"),
)


def load_run(run_dir: str | Path) -> dict[str, Any]:
    """Read one run folder: ``{"path", "run", "metrics"}`` (metrics computed if absent)."""
    folder = Path(run_dir)
    if not (folder / "RUN.json").is_file():
        raise BadInput(f"{folder}: not a run folder (no RUN.json)")
    run = read_output(Run, folder / "RUN.json")
    if not isinstance(run, dict):
        raise BadInput(f"{folder / 'RUN.json'}: expected a JSON object")
    if (folder / "metrics.json").is_file():
        metrics = read_output(Metrics, folder / "metrics.json")
    else:
        metrics = _metrics_from_files(folder, run)
    for key in ("coverage", "answered_rate", "premise_refutation_rate", "n_questions"):
        if key not in metrics:
            raise BadInput(f"{folder / 'metrics.json'}: no {key!r} (not a backtest metrics file?)")
    return {"path": str(folder), "run": run, "metrics": metrics}


def compare_runs(run_dirs: list[str | Path], allow_invalid: bool = False, ws=None) -> dict[str, Any]:
    """Compare the runs in ``run_dirs`` (module docstring); refuses invalid runs unless allowed.

    Each row carries its judge's validity-card line (from ``ws``, else the runs' own workspace)."""
    from backtest.judge.cards import run_validity

    if not run_dirs:
        raise BadInput("compare needs at least one run folder")
    runs = [load_run(d) for d in run_dirs]
    invalid = [r for r in runs if r["run"].get("valid") is False or r["metrics"].get("valid") is False]
    if invalid and not allow_invalid:
        names = ", ".join(r["path"] for r in invalid)
        raise CheckFailed(
            f"refusing invalid run(s) (a leakage check failed): {names}; pass --allow-invalid to compare anyway",
            [f"{r['path']}: RUN.json valid=false" for r in invalid],
        )
    labels = _labels(runs)
    rows = []
    for label, r in zip(labels, runs):
        m = r["metrics"]
        row = {
            "label": label,
            "system": r["run"].get("system"),
            "run_id": r["run"].get("run_id"),
            "instance_id": r["run"].get("instance_id"),
            "path": r["path"],
            "valid": not (r["run"].get("valid") is False or m.get("valid") is False),
            "judge": r["run"].get("judge"),
            "judge_validity": run_validity(ws or Workspace.of_run(r["path"]), r["run"].get("judge") or {})["line"],
            "n_questions": m["n_questions"],
            "cost": r["run"].get("cost"),
        }
        for key, _ in PROPORTION_ROWS:
            row[key] = m["outcomes"][key] if key in OUTCOMES else m.get(key)
        row["mean_supporting_papers"] = m.get("mean_supporting_papers")
        row["mean_top1_similarity"] = m.get("mean_top1_similarity")
        row["first_engagement_lag_years"] = (m.get("first_engagement_lag_years") or {}).get("mean")
        row["first_engagement_lag_years_release"] = (
            (m.get("release") or {}).get("first_engagement_lag_years") or {}
        ).get("mean")
        row["contamination_rate"] = contamination_rate(r["path"], r["run"])
        rows.append(row)
    tests = _pairwise_tests(rows)
    board = sorted(
        rows,
        key=lambda r: (
            -(r["coverage"]["rate"] or 0),
            -(r["answered_rate"]["rate"] or 0),
            -(r["premise_refutation_rate"]["rate"] or 0),
            r["label"],
        ),
    )
    warnings = []
    for key, what in (("instance_id", "instances"), ("judge", "judges")):
        seen = {json.dumps(r[key], sort_keys=True) for r in rows}
        if len(seen) > 1:
            warnings.append(f"runs come from different {what}; rates are relative to corpus, retriever and judge")
    for r in rows:
        if not r["valid"]:
            warnings.append(f"INVALID run included by --allow-invalid: {r['label']} ({r['path']})")
    return {
        "schema_version": "1",
        "allow_invalid": allow_invalid,
        "any_invalid": any(not r["valid"] for r in rows),
        "systems": rows,
        "tests": tests,
        "leaderboard": [
            {
                "rank": i + 1,
                "label": r["label"],
                "valid": r["valid"],
                "coverage": r["coverage"]["rate"],
                "answered_rate": r["answered_rate"]["rate"],
                "premise_refutation_rate": r["premise_refutation_rate"]["rate"],
                "n": r["n_questions"],
                **_spend(r["cost"]),
            }
            for i, r in enumerate(board)
        ],
        "warnings": warnings,
        "notes": [
            "intervals: exact 95% Clopper-Pearson",
            "tests: two-sided Fisher exact on k/n per pair",
            "corrections: Holm and Bonferroni within each metric's family of pairs",
            "band (uncorrected p): significant < 0.01 <= suggestive < 0.05",
            "contamination: questions naming a term found in the future corpus and never in the past corpus "
            "(backtest.validity.contamination; RUN.json, else probed now; '–' where it cannot run)",
        ],
    }


def contamination_rate(run_dir: str | Path, run: dict[str, Any]) -> dict[str, Any] | None:
    """The run's contamination-probe rate ``{k, n, rate, ci95}``: from ``RUN.json`` when scoring recorded it,
    else probed now on the run's frozen set in the run's own workspace (cached term indexes); None when the
    probe cannot run there (no corpora, a set that is not frozen and intact)."""
    stored = (run.get("contamination") or {}).get("rate")
    if isinstance(stored, dict):
        return stored
    from backtest.core.errors import BacktestError
    from backtest.validity.contamination import frozen_of_run, probe_frozen

    try:
        ws = Workspace.of_run(run_dir)
        return probe_frozen(frozen_of_run(run_dir, ws), ws).rate.model_dump(mode="json")
    except BacktestError:
        return None


def _spend(cost: dict[str, Any] | None) -> dict[str, Any]:
    """A leaderboard row's judge tokens and cost (from RUN.json ``cost``; None where a run has none)."""
    if not cost:
        return {"judge_tokens": None, "cost": None, "currency": None}
    return {
        "judge_tokens": int(cost.get("prompt_tokens") or 0) + int(cost.get("completion_tokens") or 0),
        "cost": cost.get("total"),
        "currency": cost.get("currency"),
    }


def _spend_cell(entry: dict[str, Any]) -> str:
    """``tokens (cost currency)`` for the leaderboard table."""
    if entry.get("judge_tokens") is None:
        return "–"
    cell = str(entry["judge_tokens"])
    return cell + (f" ({entry['cost']:.4f} {entry['currency']})" if entry.get("cost") is not None else "")


def _pairwise_tests(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tests = []
    for key, name in TESTED:
        family = []
        for a, b in itertools.combinations(rows, 2):
            ka, na = a[key]["k"], a[key]["n"]
            kb, nb = b[key]["k"], b[key]["n"]
            result = fisher_exact(ka, na, kb, nb)
            family.append(
                {
                    "metric": key,
                    "metric_name": name,
                    "a": a["label"],
                    "b": b["label"],
                    "a_count": f"{ka}/{na}",
                    "b_count": f"{kb}/{nb}",
                    "p_value": result["p_value"],
                    "odds_ratio": result["odds_ratio"],
                    "band": significance_band(result["p_value"]),
                }
            )
        holm = adjust_pvalues([t["p_value"] for t in family], "holm")
        bonf = adjust_pvalues([t["p_value"] for t in family], "bonferroni")
        for t, h, bo in zip(family, holm, bonf):
            t["p_holm"], t["p_bonferroni"] = h, bo
        tests.extend(family)
    return tests


def _labels(runs: list[dict[str, Any]]) -> list[str]:
    systems = [str(r["run"].get("system") or Path(r["path"]).parent.name) for r in runs]
    labels = []
    for system, r in zip(systems, runs):
        label = (
            system if systems.count(system) == 1 else f"{system}@{r['run'].get('instance_id')}/{r['run'].get('run_id')}"
        )
        labels.append(label)
    if len(set(labels)) != len(labels):
        raise BadInput("the same run folder was given twice")
    return labels


def _questions_path(folder: Path, run: dict[str, Any]) -> Path:
    frozen = Path(run.get("frozen_path", ""))
    if not frozen.is_absolute():
        root = folder.parents[3] if len(folder.parents) > 3 else folder
        frozen = root / frozen
    return frozen / "questions.jsonl"


def run_questions(folder: Path, run: dict[str, Any]) -> list[Question] | None:
    """The frozen questions a run names (``RUN.json`` ``frozen_path``, relative to the run's workspace), or
    None when they are not there."""
    qpath = _questions_path(Path(folder), run)
    if not qpath.is_file():
        return None
    return [parse_record(Question, row, f"{qpath}:{n}") for n, row in iter_jsonl(qpath)]


def _metrics_from_files(folder: Path, run: dict[str, Any]) -> dict[str, Any]:
    questions = run_questions(folder, run)
    if questions is None:
        qpath = _questions_path(folder, run)
        raise BadInput(f"{folder}: no metrics.json and the frozen questions {qpath} are missing")
    judgments = [
        parse_record(Judgment, row, f"{folder}/judgments.jsonl:{n}")
        for n, row in iter_jsonl(folder / "judgments.jsonl")
    ]
    retrievals = []
    if (folder / "retrieval.jsonl").is_file():
        retrievals = [
            parse_record(Retrieval, row, f"{folder}/retrieval.jsonl:{n}")
            for n, row in iter_jsonl(folder / "retrieval.jsonl")
        ]
    cutoff = questions[0].cutoff_date if questions else str(run.get("cutoff") or "")
    return compute_metrics(questions, judgments, retrievals, cutoff)


# --------------------------------------------------------------------------- rendering


def _pct(p: dict[str, Any] | None) -> str:
    if not p or p.get("rate") is None:
        return "–"
    lo, hi = p["ci95"]
    return f"{100 * p['rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({p['k']}/{p['n']})"


def _num(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "< 1e-4" if x < 1e-4 else f"{x:.4f}"


def render_markdown(comparison: dict[str, Any]) -> str:
    """The comparison as Markdown: banner, leaderboard, metrics table, pairwise tests."""
    out = ["# Comparison", ""]
    if comparison["any_invalid"]:
        out += [
            "> **WARNING: invalid runs are included (--allow-invalid).** Their rates are not benchmark results.",
            "",
        ]
    for w in comparison["warnings"]:
        out.append(f"- warning: {w}")
    if comparison["warnings"]:
        out.append("")
    out += [
        "## Leaderboard",
        "",
        "| rank | system | n | coverage | answered | premise refuted | contamination | judge tokens (cost) | valid |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = {r["label"]: r for r in comparison["systems"]}
    for entry in comparison["leaderboard"]:
        r = rows[entry["label"]]
        out.append(
            f"| {entry['rank']} | {entry['label']} | {r['n_questions']} | {_pct(r['coverage'])} | "
            f"{_pct(r['answered_rate'])} | "
            f"{_pct(r['premise_refutation_rate'])} | {_pct(r.get('contamination_rate'))} | {_spend_cell(entry)} | "
            f"{'yes' if r['valid'] else '**INVALID**'} |"
        )
    out += ["", "## Judge validity (agreement with careful reading; rates are only as good as this)", ""]
    for line in dict.fromkeys(
        f"{(r['judge'] or {}).get('name')}: {r['judge_validity']}" for r in comparison["systems"]
    ):
        out.append(f"- {line}")
    out += ["", "## Metrics (rate, 95% Clopper–Pearson interval, k/n)", ""]
    labels = [r["label"] for r in comparison["systems"]]
    out.append("| metric | " + " | ".join(labels) + " |")
    out.append("|---" * (len(labels) + 1) + "|")
    for key, name in PROPORTION_ROWS:
        out.append(f"| {name} | " + " | ".join(_pct(r[key]) for r in comparison["systems"]) + " |")
    for key, name in (
        ("mean_supporting_papers", "mean supporting papers"),
        ("mean_top1_similarity", "mean top-1 similarity"),
        ("first_engagement_lag_years", "first-engagement lag, years (by day)"),
        ("first_engagement_lag_years_release", "first-engagement lag, years (release: bibcode year)"),
    ):
        out.append(f"| {name} | " + " | ".join(_num(r[key], 3) for r in comparison["systems"]) + " |")
    out += [
        "",
        "## Pairwise Fisher exact tests (two-sided)",
        "",
        "| metric | A | B | A k/n | B k/n | p | Holm | Bonferroni | band |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in comparison["tests"]:
        out.append(
            f"| {t['metric_name']} | {t['a']} | {t['b']} | {t['a_count']} | {t['b_count']} | {_p(t['p_value'])} | "
            f"{_p(t['p_holm'])} | {_p(t['p_bonferroni'])} | {t['band']} |"
        )
    out += ["", *[f"- {n}" for n in comparison["notes"]], ""]
    return "\n".join(out)


def forest_plot_png(comparison: dict[str, Any]) -> bytes:
    """A forest plot (rate and 95% interval per system, one panel per tested metric) as PNG bytes."""
    from backtest.core.plots import figure_png, pyplot

    plt = pyplot()

    systems = comparison["systems"]
    fig, axes = plt.subplots(1, len(TESTED), figsize=(4 * len(TESTED), 0.5 * len(systems) + 1.5), sharey=True)
    ys = list(range(len(systems)))[::-1]
    for ax, (key, name) in zip(axes, TESTED):
        for y, r in zip(ys, systems):
            p = r[key]
            if p.get("rate") is None:
                continue
            lo, hi = p["ci95"]
            color = "tab:red" if not r["valid"] else "tab:blue"
            ax.plot([lo, hi], [y, y], color=color, lw=2)
            ax.plot([p["rate"]], [y], "o", color=color)
        ax.set_title(name)
        ax.set_xlim(-0.02, 1.02)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels([r["label"] + ("" if r["valid"] else " (INVALID)") for r in systems])
    fig.tight_layout()
    return figure_png(fig, dpi=90)


def html_sections(comparison: dict[str, Any], links: dict[str, str] | None = None) -> list[str]:
    """The comparison's HTML sections (banner, sortable leaderboard, judge validity, forest plot, metrics,
    pairwise tests, notes); ``links`` maps a system's label to a page about it (the leaderboard site)."""
    from backtest.core.html import rate_cell, table

    png = base64.b64encode(forest_plot_png(comparison)).decode("ascii")
    esc = html.escape
    links = links or {}
    parts = []
    if comparison["any_invalid"]:
        parts.append(
            "<p class='banner'>WARNING: invalid runs are included (--allow-invalid). "
            "Their rates are not benchmark results.</p>"
        )
    parts += [f"<p>warning: {esc(w)}</p>" for w in comparison["warnings"]]
    rows = {r["label"]: r for r in comparison["systems"]}

    def name(label: str) -> str:
        return f"<a href='{esc(links[label])}'>{esc(label)}</a>" if label in links else esc(label)

    board = []
    for e in comparison["leaderboard"]:
        r = rows[e["label"]]
        board.append(
            [
                str(e["rank"]),
                name(e["label"]),
                str(r["n_questions"]),
                *(
                    rate_cell(_pct(r[k]), (r[k] or {}).get("rate"))
                    for k in ("coverage", "answered_rate", "premise_refutation_rate", "contamination_rate")
                ),
                esc(_spend_cell(e)),
                "yes" if r["valid"] else "<td class='invalid'>INVALID</td>",
            ]
        )
    headers = [
        "rank",
        "system",
        "n",
        "coverage",
        "answered",
        "premise refuted",
        "contamination",
        "judge tokens (cost)",
        "valid",
    ]
    parts += ["<h2>Leaderboard</h2>", table(headers, board, table_id="leaderboard")]
    parts.append("<h2>Judge validity</h2><ul id='judge-validity'>")
    parts += [
        f"<li>{esc(line)}</li>"
        for line in dict.fromkeys(
            f"{(r['judge'] or {}).get('name')}: {r['judge_validity']}" for r in comparison["systems"]
        )
    ]
    parts.append("</ul><h2>Forest plot</h2>")
    parts.append(
        f"<img alt='forest plot of rates with 95% Clopper-Pearson intervals' src='data:image/png;base64,{png}'>"
    )
    metric_rows = [
        [esc(label), *(rate_cell(_pct(r[key]), (r[key] or {}).get("rate")) for r in comparison["systems"])]
        for key, label in PROPORTION_ROWS
    ]
    parts += [
        "<h2>Metrics</h2>",
        table(["metric", *(r["label"] for r in comparison["systems"])], metric_rows, "metrics"),
    ]
    tests = [
        [
            esc(t["metric_name"]),
            esc(t["a"]),
            esc(t["b"]),
            esc(t["a_count"]),
            esc(t["b_count"]),
            *(f"<td data-sort='{t[k]}'>{_p(t[k])}</td>" for k in ("p_value", "p_holm", "p_bonferroni")),
            esc(t["band"]),
        ]
        for t in comparison["tests"]
    ]
    headers = ["metric", "A", "B", "A k/n", "B k/n", "p", "Holm", "Bonferroni", "band"]
    parts += ["<h2>Pairwise Fisher exact tests</h2>", table(headers, tests, table_id="tests")]
    parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in comparison["notes"]) + "</ul>")
    return parts


def render_html(comparison: dict[str, Any]) -> str:
    """A self-contained HTML page: the Markdown tables as HTML (sortable) plus the embedded forest plot."""
    from backtest.core.html import page

    return page("backtest comparison", ["<h1>Comparison</h1>", *html_sections(comparison)])


def write_outputs(comparison: dict[str, Any], out: str | Path) -> list[Path]:
    """Write the comparison. ``out`` ending in .md, .json or .html writes that file; any other
    path is a folder that receives ``compare.md``, ``compare.json`` and ``compare.html``."""
    out = Path(out)
    renderers = {
        ".md": render_markdown,
        ".json": lambda c: json.dumps(c, indent=2, sort_keys=True) + "\n",
        ".html": render_html,
    }
    parse_record(Comparison, comparison, "comparison (as written)")
    targets = [out] if out.suffix in renderers else [out / f"compare{s}" for s in (".md", ".json", ".html")]
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, renderers[path.suffix](comparison))
    return targets


__all__ = [
    "compare_runs",
    "load_run",
    "render_markdown",
    "render_html",
    "html_sections",
    "forest_plot_png",
    "write_outputs",
]
