"""Run reports: ``report.md`` and a self-contained ``report.html`` (charts embedded as base64 PNG).

Charts (matplotlib, Agg backend): outcome rates and premise-status rates as bars with
95% Clopper–Pearson intervals (from ``metrics.json``; counted from the judgments when a
rate is missing), and a histogram of the top-1 retrieval similarity. Then a
per-question table: question, outcome, premise, top-1 similarity, cited ids, flags.
A contamination-probe line and section come from ``RUN.json``'s ``contamination``
(:mod:`backtest.validity.contamination`). Everything is rendered from the run's own files, so
``backtest report RUN_DIR`` can redraw a report at any time.
"""

from __future__ import annotations

import base64
import html
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from backtest.core.fileio import atomic_write_text
from backtest.core.html import markdown_cell
from backtest.core.records import OUTCOMES, PREMISE_STATUSES, Judgment, Question, Rate, Retrieval
from backtest.core.stats import clopper_pearson
from backtest.judge.cards import NOT_VALIDATED
from backtest.scoring.metrics import JUDGE_ONLY_NOTE
from backtest.scoring.outputs import Metrics, Run

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_COLORS = {
    "answered": "#2b8a3e",
    "partially_addressed": "#74b816",
    "posed_but_open": "#f59f00",
    "not_addressed": "#adb5bd",
    "supported": "#1971c2",
    "refuted": "#c92a2a",
    "weakened": "#e8590c",
    "still_plausible": "#74c0fc",
    "not_applicable": "#ced4da",
}
HIST_COLOR = "#5c7cfa"  # the top-1 similarity histogram's bars


def _rate_rows(section: dict[str, Rate], labels: Sequence[str], values: Sequence[str], n: int) -> list[dict[str, Any]]:
    """(label, k, rate, lo, hi) per label, from a metrics section or counted from ``values``."""
    counts = Counter(values)
    rows = []
    for label in labels:
        entry = section.get(label)
        k = entry.k if entry is not None else counts.get(label, 0)
        lo, hi = clopper_pearson(k, n) if n else (0.0, 0.0)
        rows.append({"label": label, "k": k, "n": n, "rate": k / n if n else 0.0, "lo": lo, "hi": hi})
    return rows


def _png(fig: Figure) -> str:
    from backtest.core.plots import figure_png

    return base64.b64encode(figure_png(fig, dpi=110, tight=True)).decode("ascii")


def bar_chart(rows: list[dict[str, Any]], title: str) -> str:
    """A horizontal bar chart of rates with 95% Clopper–Pearson error bars, as base64 PNG."""
    from backtest.core.plots import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.45 * len(rows)))
    labels = [r["label"] for r in rows][::-1]
    rates = [r["rate"] for r in rows][::-1]
    err = [[r["rate"] - r["lo"] for r in rows][::-1], [r["hi"] - r["rate"] for r in rows][::-1]]
    ax.barh(
        labels,
        rates,
        xerr=err,
        color=[_COLORS.get(lab, "#868e96") for lab in labels],
        capsize=4,
        error_kw={"elinewidth": 1, "ecolor": "#343a40"},
    )
    for y, r in enumerate(rows[::-1]):
        ax.text(min(r["hi"] + 0.02, 0.98), y, f"{r['k']}/{r['n']}", va="center", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("rate over all frozen questions (bars: 95% Clopper–Pearson)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def similarity_histogram(values: Sequence[float], title: str = "top-1 retrieval similarity") -> str:
    """A histogram of top-1 similarities, as base64 PNG."""
    from backtest.core.plots import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    if values:
        ax.hist(values, bins=[i / 20 for i in range(21)], color=HIST_COLOR, edgecolor="white")
        mean = sum(values) / len(values)
        ax.axvline(mean, color="#343a40", linestyle="--", linewidth=1)
        ax.text(mean, ax.get_ylim()[1] * 0.9, f" mean {mean:.3f}", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no similarities", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlim(0, 1)
    ax.set_xlabel("cosine similarity (question vs best future document)")
    ax.set_ylabel("questions")
    ax.set_title(title, fontsize=10)
    return _png(fig)


def _fmt_rate(entry: Rate | float | None) -> str:
    """A rate as ``rate [lo, hi] (k/n)`` (``– (k/n)`` when n = 0), a mean to 4 decimals, ``–`` for none."""
    if isinstance(entry, Rate):
        if entry.rate is None:
            return f"– ({entry.k}/{entry.n})"
        lo, hi = entry.ci95
        return f"{entry.rate:.3f} [{lo:.3f}, {hi:.3f}] ({entry.k}/{entry.n})"
    return "–" if entry is None else f"{entry:.4f}"


def headline_rows(metrics: Metrics) -> list[tuple[str, str]]:
    """(name, formatted value) for the headline metrics."""
    rows = [(f"outcome: {k}", _fmt_rate(metrics.outcomes.get(k))) for k in OUTCOMES]
    rows += [("coverage (1 − not_addressed; read with the outcome split)", _fmt_rate(metrics.coverage))]
    rows += [(f"premise: {k}", _fmt_rate(metrics.premise.get(k))) for k in PREMISE_STATUSES]
    rows += [
        ("premise refutation rate", _fmt_rate(metrics.premise_refutation_rate)),
        ("mean supporting papers per question", _fmt_rate(metrics.mean_supporting_papers)),
        ("multi-source rate (≥ 2 cited papers)", _fmt_rate(metrics.multi_source_rate)),
        ("first-engagement lag, years (mean)", _fmt_rate(metrics.first_engagement_lag_years.mean)),
        ("mean top-1 similarity", _fmt_rate(metrics.mean_top1_similarity)),
        ("specificity rate (names a catalogued object)", _fmt_rate(metrics.specificity_rate)),
        ("mean lead time, years", "null — " + metrics.mean_lead_time_reason),
        ("judgments flagged needs_review", str(metrics.needs_review.n)),
    ]
    return rows


def _question_rows(
    questions: Sequence[Question], retrievals: Sequence[Retrieval], judgments: Sequence[Judgment]
) -> list[dict[str, Any]]:
    by_r = {r.question_id: r for r in retrievals}
    by_j = {j.question_id: j for j in judgments}
    rows = []
    for q in questions:
        r, j = by_r.get(q.question_id), by_j.get(q.question_id)
        rows.append(
            {
                "id": q.question_id,
                "question": q.question,
                "outcome": j.outcome if j else "(missing)",
                "premise": j.premise_status if j else "(missing)",
                "top1": r.top1_similarity if r else None,
                "cited": list(j.supporting_ids) if j else [],
                "flags": list(j.needs_review) if j else ["no judgment"],
                "rationale": j.rationale if j else "",
            }
        )
    return rows


def cost_line(run: Run) -> str | None:
    """The run's tokens and cost in one line (None for a judge that spent no tokens)."""
    cost = run.cost
    if cost is None or not cost.prompt_tokens + cost.completion_tokens:
        return None
    line = f"judge tokens: {cost.prompt_tokens} prompt + {cost.completion_tokens} completion"
    if not cost.priced or cost.total is None:
        return line + " (no price in the judge config)"
    line += f"; cost of the labels {cost.total:.4f} {cost.currency}"
    line += f" (at {cost.input_per_mtok:g} / {cost.output_per_mtok:g} {cost.currency} per M tokens in / out)"
    if cost.spent_last_invocation is not None:
        line += f"; spent by the last invocation {cost.spent_last_invocation:.4f} {cost.currency}"
    return line


def question_costs(run: Run) -> dict[str, str]:
    """Each question's judge tokens (and cost, when priced) as a short cell text, by question id."""
    cost = run.cost
    out: dict[str, str] = {}
    for row in cost.per_question if cost else []:
        text = f"{row.prompt_tokens}+{row.completion_tokens}"
        if row.cost is not None and cost is not None:
            text += f" ({row.cost:.4f} {cost.currency})"
        out[row.question_id] = text
    return out


def retriever_cells(run: Run) -> tuple[str, str]:
    """The run's retrieval method and k as report cells ('?' where the run recorded none)."""
    retriever = run.retriever
    method = retriever.method if retriever and retriever.method is not None else "?"
    return str(method), str(retriever.k if retriever and retriever.k is not None else "?")


def contamination_lines(run: Run) -> tuple[str, list[str]]:
    """The contamination probe of a run (``RUN.json`` ``contamination``): a headline and one line per flagged
    question (``backtest.validity.contamination``); ("not run: why", []) when it could not run."""
    probe = run.contamination
    if not probe:
        return "not run (a run scored before the probe existed: `backtest contamination RUN_DIR`)", []
    if probe.not_run or probe.rate is None:
        return f"not run: {probe.not_run}", []
    kinds = ", ".join(f"{k} {v.k}" for k, v in (probe.by_kind or {}).items())
    head = (
        f"{_fmt_rate(probe.rate)} questions name a term found in the future corpus {probe.future} and never in "
        f"the past corpus {probe.past} (by kind: {kinds}; n-grams need >= "
        f"{(probe.min_future_docs or {}).get('ngram')} future records)"
    )
    return head, [f"{qid}: {'; '.join(terms)}" for qid, terms in (probe.flagged or {}).items()]


def judge_labels_line(judgments: Sequence[Judgment]) -> str:
    """How the judge spread the run over the outcome labels (its rates are its own, not careful reading's)."""
    counts = Counter(j.outcome for j in judgments)
    spread = ", ".join(f"{o} {counts.get(o, 0)}" for o in OUTCOMES)
    return (
        f"the judge's outcome labels: {spread} (judge-only rates; grounded rates: "
        "`backtest estimate RUN --labels DIR` with a read sample of this run)"
    )


def judge_flags(judgments: Sequence[Judgment]) -> list[str]:
    """The flags of a collapsed judge on this run (:func:`backtest.scoring.metrics.collapse_flags`)."""
    from backtest.scoring.metrics import collapse_flags

    return collapse_flags(dict(Counter(j.outcome for j in judgments)))


def render_markdown(
    run: Run,
    questions: Sequence[Question],
    retrievals: Sequence[Retrieval],
    judgments: Sequence[Judgment],
    metrics: Metrics,
    validity: str | None = None,
) -> str:
    """The Markdown report. ``validity`` is the judge's validity-card line (``not validated`` when None)."""
    c = markdown_cell
    lines = [f"# Run {c(run.run_id)}: {c(run.system)} on {c(run.instance_id)}", ""]
    judge, method, k = run.judge, *retriever_cells(run)
    lines += [
        f"- frozen set: `{c(run.frozen_path)}` (seal `{c(str(run.frozen_seal)[:16])}…`)",
        f"- cutoff: {c(run.cutoff)}; questions: {len(questions)}",
        f"- retriever: {c(method)} (k={c(k)})",
        f"- judge: {c(judge.name)} (model {c(judge.model)}, protocol {c(judge.protocol)}, "
        f"prompt `{c(str(judge.prompt_sha256)[:12])}…`, config `{c(str(judge.config_sha256)[:12])}…`)",
        f"- valid (leakage checks): {c(run.valid)}",
        f"- contamination probe: {c(contamination_lines(run)[0])}",
        f"- {c(judge_labels_line(judgments))}",
        *(f"- **flag**: {c(flag)}" for flag in judge_flags(judgments)),
    ]
    spend = cost_line(run)
    lines += ([f"- {spend}"] if spend else []) + [""]
    lines += [f"> {validity or NOT_VALIDATED}", ""]
    lines += [
        "## Metrics (over all frozen questions; 95% Clopper–Pearson intervals)",
        "",
        f"> Judge-only rates: {JUDGE_ONLY_NOTE}.",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {name} | {value} |" for name, value in headline_rows(metrics)]
    lines += [
        "",
        "## Questions",
        "",
    ]
    costs = question_costs(run) if spend else {}
    extra = " tokens (cost) |" if costs else ""
    lines += [
        f"| id | outcome | premise | top-1 sim | cited | flags |{extra} question |",
        "|---|---|---|---|---|---|" + ("---|" if costs else "") + "---|",
    ]
    for row in _question_rows(questions, retrievals, judgments):
        sim = f"{row['top1']:.3f}" if isinstance(row["top1"], float) else "–"
        spent = f" {markdown_cell(costs.get(row['id'], '–'))} |" if costs else ""
        lines.append(
            f"| {c(row['id'])} | {c(row['outcome'])} | {c(row['premise'])} | {sim} | "
            f"{c(', '.join(row['cited']))} | {c('; '.join(row['flags']))} |{spent} {c(row['question'])} |"
        )
    leak = run.leakage or []
    if leak:
        lines += ["", "## Leakage checks", ""] + [f"- {check.name}: {check.status} — {check.summary}" for check in leak]
    head, flagged = contamination_lines(run)
    lines += ["", "## Contamination probe", "", head, ""] + [f"- {markdown_cell(line)}" for line in flagged]
    return "\n".join(lines) + "\n"


_CSS = (
    """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;"""
    """max-width:1100px;color:#212529}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #dee2e6}
table{border-collapse:collapse;width:100%;font-size:.85em}td,th{border:1px solid #dee2e6;"""
    """padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f1f3f5}.charts{display:flex;flex-wrap:wrap;gap:12px}.charts img{max-width:540px;border:1px solid #e9ecef}
.note{background:#fff9db;border-left:4px solid #fab005;padding:6px 10px}.flag{color:#c92a2a}.meta li{margin:2px 0}
code{font-size:.9em}"""
)


def render_html(
    run: Run,
    questions: Sequence[Question],
    retrievals: Sequence[Retrieval],
    judgments: Sequence[Judgment],
    metrics: Metrics,
    validity: str | None = None,
) -> str:
    """The self-contained HTML report (charts inline as base64 PNG); ``validity`` as in :func:`render_markdown`."""
    esc = html.escape
    n = len(questions)
    outcome_rows = _rate_rows(metrics.outcomes, OUTCOMES, [j.outcome for j in judgments], n)
    premise_rows = _rate_rows(metrics.premise, PREMISE_STATUSES, [j.premise_status for j in judgments], n)
    sims = [r.top1_similarity for r in retrievals if r.top1_similarity is not None]
    charts = [
        ("outcome", bar_chart(outcome_rows, "What became of the questions (outcome)")),
        ("premise", bar_chart(premise_rows, "What became of their premises (premise_status)")),
        ("similarity", similarity_histogram(sims)),
    ]
    judge, method, k = run.judge, *retriever_cells(run)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(str(run.run_id))} — backtest report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Run <code>{esc(str(run.run_id))}</code>: {esc(str(run.system))} on {esc(str(run.instance_id))}</h1>",
        "<ul class='meta'>",
        f"<li>frozen set <code>{esc(str(run.frozen_path))}</code>, "
        f"seal <code>{esc(str(run.frozen_seal)[:16])}…</code></li>",
        f"<li>cutoff {esc(str(run.cutoff))}; {n} questions</li>",
        f"<li>retriever {esc(method)}, k={esc(k)}</li>",
        f"<li>judge <b>{esc(judge.name)}</b> (model {esc(str(judge.model))}, "
        f"protocol {esc(str(judge.protocol))}, "
        f"prompt <code>{esc(str(judge.prompt_sha256)[:12])}…</code>, "
        f"config <code>{esc(str(judge.config_sha256)[:12])}…</code>)</li>",
        f"<li>valid (leakage checks passed): <b>{esc(str(run.valid))}</b></li>",
        f"<li>contamination probe: {esc(contamination_lines(run)[0])}</li>",
        f"<li id='judge-labels'>{esc(judge_labels_line(judgments))}</li>",
        *(f"<li class='flag'><b>flag</b>: {esc(flag)}</li>" for flag in judge_flags(judgments)),
    ]
    spend = cost_line(run)
    parts.append((f"<li id='judge-cost'>{esc(spend)}</li>" if spend else "") + "</ul>")
    costs = question_costs(run) if spend else {}
    parts.append(f"<p class='note' id='judge-validity'>{esc(validity or NOT_VALIDATED)}</p>")
    parts.append("<h2>Charts</h2><div class='charts'>")
    parts += [f"<img id='chart-{name}' alt='{name} chart' src='data:image/png;base64,{data}'>" for name, data in charts]
    parts.append(
        "</div><h2>Metrics</h2><p>Rates are over all frozen questions, with 95% Clopper–Pearson intervals.</p>"
        f"<p class='note' id='judge-only'>Judge-only rates: {esc(JUDGE_ONLY_NOTE)}.</p>"
        "<table><tr><th>metric</th><th>value</th></tr>"
    )
    parts += [f"<tr><td>{esc(name)}</td><td>{esc(value)}</td></tr>" for name, value in headline_rows(metrics)]
    parts.append(
        "</table><h2>Questions</h2><table><tr><th>id</th><th>question</th><th>outcome</th><th>premise</th>"
        "<th>top-1 sim</th><th>cited</th><th>flags / rationale</th>"
        + ("<th>tokens (cost)</th>" if costs else "")
        + "</tr>"
    )
    for row in _question_rows(questions, retrievals, judgments):
        sim = f"{row['top1']:.3f}" if isinstance(row["top1"], float) else "–"
        flags = "".join(f"<div class='flag'>{esc(f)}</div>" for f in row["flags"])
        parts.append(
            f"<tr><td>{esc(row['id'])}</td><td>{esc(row['question'])}</td><td>{esc(row['outcome'])}</td>"
            f"<td>{esc(row['premise'])}</td><td>{sim}</td><td>{esc(', '.join(row['cited']))}</td>"
            f"<td>{flags}<div>{esc(row['rationale'])}</div></td>"
            + (f"<td>{esc(costs.get(row['id'], '–'))}</td>" if costs else "")
            + "</tr>"
        )
    parts.append("</table>")
    leak = run.leakage or []
    if leak:
        parts.append("<h2>Leakage checks</h2><ul>")
        parts += [f"<li>{esc(check.name)}: <b>{esc(check.status)}</b> — {esc(check.summary)}</li>" for check in leak]
        parts.append("</ul>")
    head, flagged = contamination_lines(run)
    parts.append(f"<h2>Contamination probe</h2><p id='contamination'>{esc(head)}</p><ul>")
    parts += [f"<li>{esc(line)}</li>" for line in flagged]
    parts.append("</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_reports(
    run_dir: Path,
    run: Run,
    questions: Sequence[Question],
    retrievals: Sequence[Retrieval],
    judgments: Sequence[Judgment],
    metrics: Metrics,
    validity: str | None = None,
) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into ``run_dir`` (atomically)."""
    run_dir = Path(run_dir)
    md = atomic_write_text(
        run_dir / "report.md", render_markdown(run, questions, retrievals, judgments, metrics, validity)
    )
    page = atomic_write_text(
        run_dir / "report.html", render_html(run, questions, retrievals, judgments, metrics, validity)
    )
    return md, page
