"""Compare scored runs: systems x metrics with exact intervals, pairwise Fisher tests, a leaderboard.

``compare_runs(run_dirs)`` reads each run folder (``RUN.json`` + ``metrics.json``; when
``metrics.json`` is missing it is computed from ``judgments.jsonl``, ``retrieval.jsonl``
and the frozen questions) and returns one :class:`~backtest.analysis.outputs.Comparison` (``compare.json``):

* ``systems``: one row per run with every proportion metric as ``{k, n, rate, ci95}``
  (95% Clopper–Pearson) and the means (supporting papers, top-1 similarity, lag);
* ``tests``: for coverage, answered rate and premise-refutation rate, a two-sided Fisher
  exact test for every pair of runs, with Holm and Bonferroni corrections *within each
  metric's family of pairs* and the paper's band on the uncorrected p
  (``significant`` p < 0.01, ``suggestive`` 0.01 <= p < 0.05);
* ``leaderboard``: runs ranked by coverage, then answered rate, then refutation rate;
* ``warnings``: runs from different instances or judges (rates are rater-relative),
  and every invalid run admitted with ``allow_invalid``.

**Grounded in careful reading.** With ``labels`` (annotate export folders holding readers' labels of a simple
random sample of each run: :mod:`backtest.analysis.estimate`), every row also carries its label-grounded
rates (PPI++ per run) for coverage, answered and premise refuted, the leaderboard ranks by the grounded
coverage (runs no label set sampled come after, marked "not read"), and ``grounded_tests`` holds the
differences between the read runs with Holm-corrected p-values. Without labels the leaderboard is the judge's
alone and says so. Every row carries the judge's outcome counts and the flags of a collapsed judge.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from backtest.analysis.outputs import Comparison, LeaderboardRow, PairTest, SystemRow
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, iter_jsonl
from backtest.core.html import markdown_cell, markdown_text
from backtest.core.records import OUTCOMES, Question, Rate, output_dict, parse_record
from backtest.core.runs import Metrics, Run, RunCost
from backtest.core.stats import adjust_pvalues, fisher_exact, significance_band
from backtest.core.workspace import Workspace
from backtest.scoring.metrics import JUDGE_ONLY_NOTE, compute_metrics
from backtest.validity.runfolder import RunFolder

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


@dataclass(frozen=True)
class LoadedRun:
    """One run folder read: where it is, its ``RUN.json`` and its ``metrics.json`` (computed when absent)."""

    path: str
    run: Run
    metrics: Metrics


def load_run(run_dir: str | Path) -> LoadedRun:
    """Read one run folder (metrics computed from its files when it has no metrics.json)."""
    folder = RunFolder.open(run_dir).check_seal()
    metrics = folder.metrics if folder.has("metrics.json") else _metrics_from_files(folder)
    return LoadedRun(str(folder.path), folder.run, metrics)


#: the judge's rates of a row (every proportion row but the contamination probe's)
JUDGE_RATES = tuple(key for key, _ in PROPORTION_ROWS if key != "contamination_rate")
GROUNDED = (("coverage", "coverage"), ("answered", "answered"), ("premise_refuted", "premise refuted"))


def compare_runs(
    run_dirs: list[str | Path], allow_invalid: bool = False, ws=None, labels: Sequence[str | Path] = ()
) -> Comparison:
    """Compare the runs in ``run_dirs`` (module docstring); refuses invalid runs unless allowed.

    Each row carries its judge's validity-card line (from ``ws``, else the runs' own workspace) and, with
    ``labels``, its label-grounded rates."""
    from backtest.analysis.estimate import collapse_flags, estimate_run, load_label_set
    from backtest.judge.cards import run_validity

    if not run_dirs:
        raise BadInput("compare needs at least one run folder")
    runs = [load_run(d) for d in run_dirs]
    invalid = [r for r in runs if r.run.valid is False or r.metrics.valid is False]
    if invalid and not allow_invalid:
        names = ", ".join(r.path for r in invalid)
        raise CheckFailed(
            f"refusing invalid run(s) (a leakage check failed): {names}; pass --allow-invalid to compare anyway",
            [f"{r.path}: RUN.json valid=false" for r in invalid],
        )
    label_sets = [load_label_set(p) for p in labels]
    rows = []
    for label, r in zip(_labels(runs), runs):
        m, run = r.metrics, r.run
        run_ws = ws or Workspace.of_run(r.path)
        estimate = estimate_run(r.path, label_sets, run_ws) if label_sets else None
        judge_outcomes = {o: m.outcomes[o].k for o in OUTCOMES}
        # the judge's rates; contamination_rate is the probe's, below
        rates = {key: m.outcomes[key] if key in OUTCOMES else getattr(m, key) for key in JUDGE_RATES}
        rows.append(
            SystemRow(
                label=label,
                system=run.system,
                run_id=run.run_id,
                instance_id=run.instance_id,
                path=r.path,
                valid=not (run.valid is False or m.valid is False),
                judge=run.judge,
                judge_validity=run_validity(run_ws, run.judge).line,
                grounded=None if estimate is None else estimate.model_dump(mode="json", by_alias=True),
                judge_outcomes=judge_outcomes,
                judge_flags=estimate.flags if estimate is not None else collapse_flags(judge_outcomes),
                n_questions=m.n_questions,
                cost=run.cost,
                **rates,
                mean_supporting_papers=m.mean_supporting_papers,
                mean_top1_similarity=m.mean_top1_similarity,
                first_engagement_lag_years=m.first_engagement_lag_years.mean,
                first_engagement_lag_years_release=m.release.first_engagement_lag_years.mean,
                contamination_rate=contamination_rate(r.path, run),
            )
        )
    tests = _pairwise_tests(rows)
    grounded = bool(label_sets)
    board = sorted(rows, key=_grounded_order if grounded else _judge_order)
    warnings = []
    for what, seen in (
        ("instances", {r.instance_id for r in rows}),
        ("judges", {json.dumps(output_dict(r.judge), sort_keys=True) for r in rows}),
    ):
        if len(seen) > 1:
            warnings.append(f"runs come from different {what}; rates are relative to corpus, retriever and judge")
    for row in rows:
        if not row.valid:
            warnings.append(f"INVALID run included by --allow-invalid: {row.label} ({row.path})")
        warnings += [f"{row.label}: {note}" for note in (row.grounded or {}).get("notes", [])]
        warnings += [f"{row.label}: {flag}" for flag in row.judge_flags]
        if grounded and row.grounded is None:
            warnings.append(f"{row.label}: not read (no --labels folder sampled this run): ranked after the read runs")
    return Comparison(
        schema_version="1",
        allow_invalid=allow_invalid,
        any_invalid=any(not r.valid for r in rows),
        systems=rows,
        tests=tests,
        leaderboard=[
            LeaderboardRow(
                rank=i + 1,
                label=r.label,
                valid=r.valid,
                coverage=r.coverage.rate,
                answered_rate=r.answered_rate.rate,
                premise_refutation_rate=r.premise_refutation_rate.rate,
                n=r.n_questions,
                **_spend(r.cost),
                **_grounded_cells(r),
            )
            for i, r in enumerate(board)
        ],
        warnings=warnings,
        grounded=grounded,
        grounded_tests=_grounded_tests(rows) if grounded else None,
        notes=[
            *(
                [
                    "ranked by coverage grounded in careful reading: PPI++ per run (the judge's labels on every "
                    "question, readers' on a simple random sample), 95% interval exact-binomial at the effective n "
                    "(backtest.core.ppi); judge-only rates stand beside it, labelled as such",
                    "rank: by the lower end of the grounded coverage interval (what careful reading lets a system "
                    "claim at least), then by its estimate",
                    "grounded tests: z-test of the difference per pair, Holm within each rate's family of pairs",
                ]
                if grounded
                else [
                    "ranked by the judge's labels alone: not grounded in careful reading "
                    "(give --labels DIR: an annotate export with readers' labels of each run)",
                    JUDGE_ONLY_NOTE,
                ]
            ),
            "intervals: exact 95% Clopper-Pearson",
            "tests: two-sided Fisher exact on k/n per pair",
            "corrections: Holm and Bonferroni within each metric's family of pairs",
            "band (uncorrected p): significant < 0.01 <= suggestive < 0.05",
            "contamination: questions naming a term found in the future corpus and never in the past corpus "
            "(backtest.validity.contamination; RUN.json, else probed now; '–' where it cannot run)",
        ],
    )


def _judge_order(r: SystemRow) -> tuple:
    return (
        -(r.coverage.rate or 0),
        -(r.answered_rate.rate or 0),
        -(r.premise_refutation_rate.rate or 0),
        r.label,
    )


def _grounded_order(r: SystemRow) -> tuple:
    """Read runs first, by the lower end of the grounded coverage interval (what careful reading lets a system
    claim at least: a 2-question set does not top 40-question ones on a wide interval), then by its estimate,
    then grounded answered and premise refuted."""
    g = r.grounded
    if g is None:
        return (1, *_judge_order(r))
    cov = g["rates"]["coverage"]
    return (0, -cov["ci95"][0], *(-g["rates"][key]["estimate"] for key, _ in GROUNDED), r.label)


def _grounded_cells(r: SystemRow) -> dict[str, Any]:
    """A leaderboard row's grounded columns (None where the run was not read)."""
    g = r.grounded
    if g is None:
        return {}
    cov = g["rates"]["coverage"]
    return {
        "grounded_coverage": cov["estimate"],
        "grounded_coverage_ci95": list(cov["ci95"]),
        "n_labelled": cov["n_labelled"],
        "effective_n": cov["effective_n"],
        "kappa": cov["kappa"],
        "grounded_answered": g["rates"]["answered"]["estimate"],
        "grounded_premise_refuted": g["rates"]["premise_refuted"]["estimate"],
    }


def _grounded_tests(rows: list[SystemRow]) -> list[dict[str, Any]]:
    """Differences of the grounded rates between every pair of read runs, Holm within each rate."""
    from backtest.analysis.estimate import RunEstimate, differences

    read = [(r.label, r.grounded) for r in rows if r.grounded is not None]
    label = {grounded["run"]: name for name, grounded in read}
    diffs = differences([RunEstimate.model_validate(grounded) for _, grounded in read], [k for k, _ in GROUNDED])
    return [{**d.model_dump(mode="json"), "a": label[d.a], "b": label[d.b]} for d in diffs]


def contamination_rate(run_dir: str | Path, run: Run) -> Rate | None:
    """The run's contamination-probe rate ``{k, n, rate, ci95}``: from ``RUN.json`` when scoring recorded it,
    else probed now on the run's frozen set in the run's own workspace (cached term indexes); None when the
    probe cannot run there (no corpora, a set that is not frozen and intact)."""
    if run.contamination is not None and run.contamination.rate is not None:
        return run.contamination.rate
    from backtest.core.errors import BacktestError
    from backtest.validity.contamination import frozen_of_run, probe_frozen

    try:
        ws = Workspace.of_run(run_dir)
        return probe_frozen(frozen_of_run(run_dir, ws), ws).rate
    except BacktestError:
        return None


def _spend(cost: RunCost | None) -> dict[str, Any]:
    """A leaderboard row's judge tokens and cost (from RUN.json ``cost``; None where a run has none)."""
    if not cost:
        return {"judge_tokens": None, "cost": None, "currency": None}
    return {"judge_tokens": cost.prompt_tokens + cost.completion_tokens, "cost": cost.total, "currency": cost.currency}


def _spend_cell(entry: LeaderboardRow) -> str:
    """``tokens (cost currency)`` for the leaderboard table."""
    if entry.judge_tokens is None:
        return "–"
    return str(entry.judge_tokens) + (f" ({entry.cost:.4f} {entry.currency})" if entry.cost is not None else "")


def _pairwise_tests(rows: list[SystemRow]) -> list[PairTest]:
    tests = []
    for key, name in TESTED:
        family: list[tuple[SystemRow, SystemRow, dict[str, float]]] = []
        for a, b in itertools.combinations(rows, 2):
            ra, rb = getattr(a, key), getattr(b, key)
            family.append((a, b, fisher_exact(ra.k, ra.n, rb.k, rb.n)))
        p_values = [result["p_value"] for _, _, result in family]
        holm = adjust_pvalues(p_values, "holm")
        bonf = adjust_pvalues(p_values, "bonferroni")
        for (a, b, result), h, bo in zip(family, holm, bonf):
            ra, rb = getattr(a, key), getattr(b, key)
            tests.append(
                PairTest(
                    metric=key,
                    metric_name=name,
                    a=a.label,
                    b=b.label,
                    a_count=f"{ra.k}/{ra.n}",
                    b_count=f"{rb.k}/{rb.n}",
                    p_value=result["p_value"],
                    odds_ratio=result["odds_ratio"],
                    band=significance_band(result["p_value"]),
                    p_holm=h,
                    p_bonferroni=bo,
                )
            )
    return tests


def _labels(runs: list[LoadedRun]) -> list[str]:
    systems = [r.run.system or Path(r.path).parent.name for r in runs]
    labels = []
    for system, r in zip(systems, runs):
        label = system if systems.count(system) == 1 else f"{system}@{r.run.instance_id}/{r.run.run_id}"
        labels.append(label)
    if len(set(labels)) != len(labels):
        raise BadInput("the same run folder was given twice")
    return labels


def _questions_path(folder: Path, run: Run) -> Path:
    frozen = Path(run.frozen_path)
    if not frozen.is_absolute():
        root = folder.parents[3] if len(folder.parents) > 3 else folder
        frozen = root / frozen
    return frozen / "questions.jsonl"


def run_questions(folder: Path, run: Run) -> list[Question] | None:
    """The frozen questions a run names (``RUN.json`` ``frozen_path``, relative to the run's workspace), or
    None when they are not there."""
    qpath = _questions_path(Path(folder), run)
    if not qpath.is_file():
        return None
    return [parse_record(Question, row, f"{qpath}:{n}") for n, row in iter_jsonl(qpath)]


def _metrics_from_files(folder: RunFolder) -> Metrics:
    run = folder.run
    questions = run_questions(folder.path, run)
    if questions is None:
        qpath = _questions_path(folder.path, run)
        raise BadInput(f"{folder.path}: no metrics.json and the frozen questions {qpath} are missing")
    cutoff = questions[0].cutoff_date if questions else str(run.cutoff or "")
    return compute_metrics(questions, folder.judgments, folder.retrievals(text=False), cutoff)


# --------------------------------------------------------------------------- rendering


def _pct(p: Rate | None) -> str:
    if p is None or p.rate is None:
        return "–"
    lo, hi = p.ci95
    return f"{100 * p.rate:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({p.k}/{p.n})"


def _num(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "< 1e-4" if x < 1e-4 else f"{x:.4f}"


def render_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: banner, leaderboard, metrics table, pairwise tests."""
    out = ["# Comparison", ""]
    if comparison.any_invalid:
        out += [
            "> **WARNING: invalid runs are included (--allow-invalid).** Their rates are not benchmark results.",
            "",
        ]
    for w in comparison.warnings:
        out.append(f"- warning: {markdown_text(w)}")
    if comparison.warnings:
        out.append("")
    rows = {r.label: r for r in comparison.systems}
    headers, cells = leaderboard_columns(comparison)
    out += ["## Leaderboard", "", "| " + " | ".join(headers) + " |", "|---" * len(headers) + "|"]
    for entry in comparison.leaderboard:
        r = rows[entry.label]
        row = [markdown_cell(c) if h == "system" else c for h, (c, _) in zip(headers, cells(entry, r))]
        out.append("| " + " | ".join(row) + " |")
    if not comparison.grounded:
        out += [
            "",
            "> Ranked by the judge's labels alone: not grounded in careful reading (`--labels DIR`); "
            f"{JUDGE_ONLY_NOTE}.",
        ]
    if comparison.grounded_tests:
        out += [
            "",
            "## Grounded differences (a - b; z-test, Holm within each rate)",
            "",
            "| rate | A | B | difference [95%] | p | Holm |",
            "|---|---|---|---|---|---|",
        ]
        for t in comparison.grounded_tests:
            lo, hi = t["ci95"]
            out.append(
                f"| {t['rate']} | {markdown_cell(t['a'])} | {markdown_cell(t['b'])} | "
                f"{100 * t['difference']:+.1f} points "
                f"[{100 * lo:+.1f}, {100 * hi:+.1f}] | {_p(t['p_value'])} | {_p(t['p_holm'])} |"
            )
    out += ["", "## The judge's labels per run (a judge on one label, or missing a label readers use, is flagged)", ""]
    out += ["| system | " + " | ".join(OUTCOMES) + " | flags |", "|---" * (len(OUTCOMES) + 2) + "|"]
    for r in comparison.systems:
        counts = " | ".join(str(r.judge_outcomes[o]) for o in OUTCOMES)
        out.append(f"| {markdown_cell(r.label)} | {counts} | {markdown_cell('; '.join(r.judge_flags) or '–')} |")
    out += ["", "## Judge validity (agreement with careful reading; rates are only as good as this)", ""]
    for line in dict.fromkeys(f"{r.judge.name}: {r.judge_validity}" for r in comparison.systems):
        out.append(f"- {markdown_text(line)}")
    out += ["", "## Metrics (rate, 95% Clopper–Pearson interval, k/n)", ""]
    labels = [r.label for r in comparison.systems]
    out.append("| metric | " + " | ".join(labels) + " |")
    out.append("|---" * (len(labels) + 1) + "|")
    for key, name in PROPORTION_ROWS:
        out.append(f"| {name} | " + " | ".join(_pct(r.rate(key)) for r in comparison.systems) + " |")
    for key, name in (
        ("mean_supporting_papers", "mean supporting papers"),
        ("mean_top1_similarity", "mean top-1 similarity"),
        ("first_engagement_lag_years", "first-engagement lag, years (by day)"),
        ("first_engagement_lag_years_release", "first-engagement lag, years (release: bibcode year)"),
    ):
        out.append(f"| {name} | " + " | ".join(_num(getattr(r, key), 3) for r in comparison.systems) + " |")
    out += [
        "",
        "## Pairwise Fisher exact tests (two-sided)",
        "",
        "| metric | A | B | A k/n | B k/n | p | Holm | Bonferroni | band |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for test in comparison.tests:
        out.append(
            f"| {test.metric_name} | {test.a} | {test.b} | {test.a_count} | {test.b_count} | {_p(test.p_value)} | "
            f"{_p(test.p_holm)} | {_p(test.p_bonferroni)} | {test.band} |"
        )
    out += ["", *[f"- {n}" for n in comparison.notes], ""]
    return "\n".join(out)


def _grounded_pct(rate: dict[str, Any] | None) -> str:
    if not rate:
        return "not read"
    lo, hi = rate["ci95"]
    return f"{100 * rate['estimate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def leaderboard_columns(comparison: Comparison):
    """The leaderboard's headers and a function (entry, row) -> [(text, sort value)]: grounded columns first
    when the comparison has labels, the judge-only rates beside them labelled as such."""
    judge_only = [
        ("coverage, judge only", lambda e, r: (_pct(r.coverage), r.coverage.rate)),
        ("answered, judge only", lambda e, r: (_pct(r.answered_rate), r.answered_rate.rate)),
        ("premise refuted, judge only", lambda e, r: (_pct(r.premise_refutation_rate), r.premise_refutation_rate.rate)),
    ]
    tail = [
        (
            "contamination",
            lambda e, r: (_pct(r.contamination_rate), r.contamination_rate.rate if r.contamination_rate else None),
        ),
        ("judge tokens (cost)", lambda e, r: (_spend_cell(e), e.judge_tokens)),
        ("valid", lambda e, r: ("yes" if r.valid else "INVALID", None)),
    ]
    head = [
        ("rank", lambda e, r: (str(e.rank), e.rank)),
        ("system", lambda e, r: (e.label, None)),
        ("N", lambda e, r: (str(r.n_questions), r.n_questions)),
    ]
    if comparison.grounded:

        def g(key: str):
            return lambda e, r: (_grounded_pct(r.grounded_rate(key)), (r.grounded_rate(key) or {}).get("estimate"))

        def num(key: str, fmt: str):
            def cell(e, r):
                value = (r.grounded_rate("coverage") or {}).get(key)
                return ("–" if value is None else format(value, fmt), value)

            return cell

        grounded = [
            ("n read", num("n_labelled", "d")),
            ("coverage, grounded [95%]", g("coverage")),
            ("effective n", num("effective_n", ".1f")),
            ("κ judge vs readers", num("kappa", ".2f")),
            *judge_only[:1],
            ("answered, grounded", g("answered")),
            ("premise refuted, grounded", g("premise_refuted")),
        ]
        columns = head + grounded + judge_only[1:] + tail
    else:
        columns = head + judge_only + tail
    return [c for c, _ in columns], lambda e, r: [f(e, r) for _, f in columns]


def render_grounded_table(comparison: Comparison) -> str:
    """The headline table of a comparison with labels, as Markdown (what results/README.md quotes): per run in
    leaderboard order, N, n read, grounded coverage with its interval, effective n, the judge's kappa on the
    sample, the judge-only coverage beside it, and grounded answered and premise refuted."""
    if not comparison.grounded:
        raise BadInput("no labels: a grounded table needs compare --labels")
    rows = {r.label: r for r in comparison.systems}
    out = [
        "| rank | system | N | n read | coverage, grounded [95%] | effective n | κ judge vs readers "
        "| coverage, judge only | answered, grounded [95%] | premise refuted, grounded [95%] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in comparison.leaderboard:
        r = rows[e.label]
        g = (r.grounded or {}).get("rates") or {}
        cov = g.get("coverage") or {}
        kappa = cov.get("kappa")
        out.append(
            f"| {e.rank} | {markdown_cell(e.label)} | {r.n_questions} | {cov.get('n_labelled', '–')} "
            f"| {_grounded_pct(g.get('coverage'))} | "
            + (f"{cov['effective_n']:.1f}" if cov else "–")
            + f" | {'–' if kappa is None else f'{kappa:.2f}'} | {_pct(r.coverage)} "
            f"| {_grounded_pct(g.get('answered'))} | {_grounded_pct(g.get('premise_refuted'))} |"
        )
    return "\n".join(out) + "\n"


def forest_plot_png(comparison: Comparison) -> bytes:
    """A forest plot (rate and 95% interval per system, one panel per tested metric) as PNG bytes."""
    from backtest.core.plots import figure_png, pyplot

    plt = pyplot()

    systems = comparison.systems
    fig, axes = plt.subplots(1, len(TESTED), figsize=(4 * len(TESTED), 0.5 * len(systems) + 1.5), sharey=True)
    ys = list(range(len(systems)))[::-1]
    grounded = comparison.grounded
    for ax, (key, name), (gkey, _) in zip(axes, TESTED, GROUNDED):
        for y, r in zip(ys, systems):
            g = r.grounded_rate(gkey) if grounded else None
            judged = getattr(r, key)
            rate, (lo, hi) = (g["estimate"], g["ci95"]) if g else (judged.rate, judged.ci95)
            if rate is None or (grounded and g is None):
                continue
            color = "tab:red" if not r.valid else "tab:blue"
            ax.plot([lo, hi], [y, y], color=color, lw=2)
            ax.plot([rate], [y], "o", color=color)
        ax.set_title(f"{name}, {'grounded' if grounded else 'judge only'}")
        ax.set_xlim(-0.02, 1.02)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels([r.label + ("" if r.valid else " (INVALID)") for r in systems])
    fig.tight_layout()
    return figure_png(fig, dpi=90)


def html_sections(comparison: Comparison, links: dict[str, str] | None = None) -> list[str]:
    """The comparison's HTML sections (banner, sortable leaderboard, judge validity, forest plot, metrics,
    pairwise tests, notes); ``links`` maps a system's label to a page about it (the leaderboard site)."""
    from backtest.core.html import rate_cell, table

    png = base64.b64encode(forest_plot_png(comparison)).decode("ascii")
    esc = html.escape
    links = links or {}
    parts = []
    if comparison.any_invalid:
        parts.append(
            "<p class='banner'>WARNING: invalid runs are included (--allow-invalid). "
            "Their rates are not benchmark results.</p>"
        )
    parts += [f"<p>warning: {esc(w)}</p>" for w in comparison.warnings]
    rows = {r.label: r for r in comparison.systems}

    def name(label: str) -> str:
        return f"<a href='{esc(links[label])}'>{esc(label)}</a>" if label in links else esc(label)

    headers, cells = leaderboard_columns(comparison)
    board = []
    for e in comparison.leaderboard:
        r = rows[e.label]
        row = []
        for header, (text, value) in zip(headers, cells(e, r)):
            if header == "system":
                row.append(name(text))
            elif header == "valid":
                row.append("yes" if r.valid else "<td class='invalid'>INVALID</td>")
            else:
                row.append(rate_cell(text, value if isinstance(value, (int, float)) else None))
        board.append(row)
    parts += ["<h2>Leaderboard</h2>", table(headers, board, table_id="leaderboard")]
    if not comparison.grounded:
        parts.append("<p class='banner'>Ranked by the judge's labels alone: not grounded in careful reading.</p>")
    if comparison.grounded_tests:
        diffs = [
            [
                esc(t["rate"]),
                esc(t["a"]),
                esc(t["b"]),
                rate_cell(
                    f"{100 * t['difference']:+.1f} points [{100 * t['ci95'][0]:+.1f}, {100 * t['ci95'][1]:+.1f}]",
                    t["difference"],
                ),
                *(f"<td data-sort='{t[k]}'>{_p(t[k])}</td>" for k in ("p_value", "p_holm")),
            ]
            for t in comparison.grounded_tests
        ]
        parts += [
            "<h2>Grounded differences (a - b; z-test, Holm within each rate)</h2>",
            table(["rate", "A", "B", "difference [95%]", "p", "Holm"], diffs, table_id="grounded-tests"),
        ]
    judge_rows = [
        [esc(r.label), *(str(r.judge_outcomes[o]) for o in OUTCOMES), esc("; ".join(r.judge_flags) or "–")]
        for r in comparison.systems
    ]
    parts += [
        "<h2>The judge's labels per run</h2>",
        table(["system", *OUTCOMES, "flags"], judge_rows, table_id="judge-labels"),
    ]
    parts.append("<h2>Judge validity</h2><ul id='judge-validity'>")
    parts += [
        f"<li>{esc(line)}</li>"
        for line in dict.fromkeys(f"{r.judge.name}: {r.judge_validity}" for r in comparison.systems)
    ]
    parts.append("</ul><h2>Forest plot</h2>")
    parts.append(
        "<img alt='forest plot of rates with 95% intervals "
        f"({'grounded in careful reading' if comparison.grounded else 'judge only'})' "
        f"src='data:image/png;base64,{png}'>"
    )
    metric_rows = [
        [esc(label), *(_rate_cell(r.rate(key)) for r in comparison.systems)] for key, label in PROPORTION_ROWS
    ]
    parts += [
        "<h2>Metrics</h2>",
        table(["metric", *(r.label for r in comparison.systems)], metric_rows, "metrics"),
    ]
    tests = [
        [
            esc(t.metric_name),
            esc(t.a),
            esc(t.b),
            esc(t.a_count),
            esc(t.b_count),
            *(f"<td data-sort='{p}'>{_p(p)}</td>" for p in (t.p_value, t.p_holm, t.p_bonferroni)),
            esc(t.band),
        ]
        for t in comparison.tests
    ]
    headers = ["metric", "A", "B", "A k/n", "B k/n", "p", "Holm", "Bonferroni", "band"]
    parts += ["<h2>Pairwise Fisher exact tests</h2>", table(headers, tests, table_id="tests")]
    parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in comparison.notes) + "</ul>")
    return parts


def _rate_cell(rate: Rate | None) -> str:
    """A sortable table cell of one rate (sorted by its value)."""
    from backtest.core.html import rate_cell

    return rate_cell(_pct(rate), rate.rate if rate else None)


def render_html(comparison: Comparison) -> str:
    """A self-contained HTML page: the Markdown tables as HTML (sortable) plus the embedded forest plot."""
    from backtest.core.html import page

    return page("backtest comparison", ["<h1>Comparison</h1>", *html_sections(comparison)])


def write_outputs(comparison: Comparison, out: str | Path) -> list[Path]:
    """Write the comparison. ``out`` ending in .md, .json or .html writes that file; any other
    path is a folder that receives ``compare.md``, ``compare.json`` and ``compare.html``."""
    out = Path(out)
    renderers = {
        ".md": render_markdown,
        ".json": lambda c: json.dumps(output_dict(c), indent=2, sort_keys=True) + "\n",
        ".html": render_html,
    }
    targets = [out] if out.suffix in renderers else [out / f"compare{s}" for s in (".md", ".json", ".html")]
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, renderers[path.suffix](comparison))
    return targets


__all__ = [
    "compare_runs",
    "load_run",
    "render_markdown",
    "render_grounded_table",
    "render_html",
    "html_sections",
    "forest_plot_png",
    "write_outputs",
]
