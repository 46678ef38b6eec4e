"""The leaderboard site: scored runs as a static, self-contained website a reviewer can re-litigate.

``build_site(run_dirs, out)`` writes, from run folders (``RUN.json``, ``metrics.json``,
``judgments.jsonl``, ``retrieval.jsonl`` and the frozen questions they name):

* ``index.html``: the instances, each with its cutoff, systems, judges and retrievers;
* ``<instance>/index.html``: the comparison of that instance's runs (:func:`compare_runs`): the
  leaderboard and every metric with 95% intervals, the forest plot, pairwise Fisher tests with Holm and
  Bonferroni bands, and the judge and retriever each number depends on (rates are rater-relative);
* ``<instance>/<system>.html``: one page per run: every question with its labels, the judge's rationale
  and **the documents the judge was shown** (rank, id, date, title, the text shown, score, whether the
  judge cited it), so any label can be checked against what the judge saw. A committed (compact) run keeps
  only the documents' hashes; their text is cut again from the sealed future corpus and checked
  (:func:`backtest.retrieve.compact.rematerialise`).

Tables sort by a click (:mod:`backtest.core.html`); images are inline PNG; nothing is fetched, so the
site opens from ``file://`` or any static host. Pages are written atomically, and the same runs give the
same bytes.
"""

from __future__ import annotations

import html
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from backtest.analysis.compare import compare_runs, html_sections, run_questions
from backtest.analysis.outputs import Comparison, SystemRow
from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text
from backtest.core.html import page, rate_cell, table
from backtest.core.records import Rate, output_dict
from backtest.core.runs import RunJudge, RunRetriever
from backtest.core.workspace import Workspace
from backtest.scoring.metrics import JUDGE_ONLY_NOTE
from backtest.validity.runfolder import RunFolder

esc = html.escape


def discover_runs(ws: Workspace) -> list[Path]:
    """Every complete run folder under ``ws.results`` (``<instance>/<system>/<run>/`` with RUN.json and
    metrics.json), in path order."""
    return sorted(p.parent for p in ws.results.glob("*/*/*/metrics.json") if (p.parent / "RUN.json").is_file())


def _page_name(label: str) -> str:
    """A run's page file name: its comparison label (a system name, or ``system@run``) made file-safe."""
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in label) + ".html"


def _judge_cell(judge: RunJudge) -> str:
    return esc(f"{judge.name} ({judge.protocol}, config {str(judge.config_sha256)[:12]})")


def _retriever_cell(r: RunRetriever) -> str:
    index = (r.params or {}).get("index")
    return esc(
        f"{r.method}"
        + (f" {r.model}" if r.model else "")
        + (f", k={r.k}" if r.k else "")
        + (f", {index} index" if index else "")
    )


def _run_retriever(folder: RunFolder) -> RunRetriever:
    """What retrieved the documents: the run's record of it, over the first retrieval line's."""
    recorded = output_dict(folder.run.retriever) if folder.run.retriever else {}
    first = next(iter(folder.retrievals(text=False)), None)
    if first is None:
        return RunRetriever.model_validate(recorded)
    return RunRetriever.model_validate({**first.retriever, **recorded, "k": first.k})


def _documents_html(retrieval: dict[str, Any] | None, cited: set[str]) -> str:
    if not retrieval or not retrieval.get("documents"):
        return "<p class='muted'>no documents recorded for this question</p>"
    items = []
    for doc in retrieval["documents"]:
        was_cited = doc.get("id") in cited
        missing = (
            f"<span class='muted'>text not shown: {esc(doc['text_missing'])}</span>" if doc.get("text_missing") else ""
        )
        items.append(
            f"<li class='doc{' cited' if was_cited else ''}' data-doc-id='{esc(str(doc.get('id')))}'>"
            f"<b>#{doc.get('rank')}</b> <span class='date'>{esc(str(doc.get('published') or 'date unknown'))}</span> "
            f"<code>{esc(str(doc.get('id')))}</code> score {doc.get('score')}"
            f"{' <b>cited by the judge</b>' if was_cited else ''}<br><i>{esc(str(doc.get('title') or ''))}</i>"
            f"<br>{esc(str(doc.get('abstract') or ''))}"
            f"{missing}</li>"
        )
    return f"<ul class='documents'>{''.join(items)}</ul>"


def system_page(row: SystemRow, instance_href: str) -> str:
    """A run's page: its settings, its rates, and every question with its labels and the documents shown."""
    folder = RunFolder.open(row.path)
    run = folder.run
    questions = {q.question_id: q for q in (run_questions(folder.path, run) or [])}
    retrievals = {r["question_id"]: r for r in folder.shown_retrievals()}
    label = row.label
    parts = [
        f"<h1>{esc(label)}</h1>",
        "<ul>",
        f"<li>instance <code>{esc(run.instance_id)}</code>, cutoff {esc(str(run.cutoff))}</li>",
        f"<li>run <code>{esc(run.run_id)}</code>, "
        f"frozen set <code>{esc(run.frozen_path)}</code> "
        f"(seal <code>{esc(run.frozen_seal[:16])}…</code>)</li>",
        f"<li>judge {_judge_cell(run.judge)}; {esc(row.judge_validity)}</li>",
        f"<li>retriever {_retriever_cell(_run_retriever(folder))}</li>",
        "</ul>",
    ]
    grounded = (row.grounded or {}).get("rates") or {}
    rates = []
    for (key, name), gkey in zip(
        (
            ("coverage", "coverage (engaged)"),
            ("answered_rate", "answered"),
            ("premise_refutation_rate", "premise refuted"),
        ),
        ("coverage", "answered", "premise_refuted"),
    ):
        g = grounded.get(gkey)
        rates.append(
            [
                esc(name),
                rate_cell(_grounded_text(g), g["estimate"] if g else None),
                rate_cell(_pct_text(judged := row.rate(key)), judged.rate if judged else None),
            ]
        )
    headers = ["metric", "grounded in careful reading [95%] (n read, effective n)", "judge only [95% CI] (k/n)"]
    parts += ["<h2>Rates</h2>", table(headers, rates, sortable=False)]
    index_rows = []
    details = []
    for j in folder.judgments:
        qid = j.question_id
        anchor = "q-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in qid)
        retrieval = retrievals.get(qid)
        q = questions.get(qid)
        text = q.question if q else str((retrieval or {}).get("query") or "")
        cited = {e.id for e in j.evidence} | set(j.supporting_ids)
        index_rows.append(
            [
                f"<a href='#{anchor}'>{esc(qid)}</a>",
                esc(j.outcome),
                esc(j.premise_status),
                str(len(cited)),
                esc(text[:160] + ("…" if len(text) > 160 else "")),
            ]
        )
        premise = f"<p><b>premise</b>: {esc(q.premise)}</p>" if q and q.premise else ""
        review = ", <b>needs review</b>: " + esc(", ".join(j.needs_review)) if j.needs_review else ""
        details.append(
            f"<section id='{anchor}' class='question'><h3>{esc(qid)}</h3><p>{esc(text)}</p>{premise}"
            f"<p><b>outcome</b> <code>{esc(j.outcome)}</code>, "
            f"<b>premise</b> <code>{esc(j.premise_status)}</code>{review}</p>"
            f"<p><b>rationale</b>: {esc(j.rationale)}</p>"
            f"<p><b>documents shown to the judge</b> ({len((retrieval or {}).get('documents') or [])}):</p>"
            f"{_documents_html(retrieval, cited)}</section>"
        )
    headers = ["question", "outcome", "premise", "cited", "text"]
    parts += ["<h2>Questions</h2>", table(headers, index_rows, table_id="questions"), *details]
    return page(
        f"{label} on {run.instance_id}",
        parts,
        nav=[("all instances", "../index.html"), (run.instance_id, instance_href)],
    )


def _grounded_text(rate: dict[str, Any] | None) -> str:
    if not rate:
        return "not read (no labelled sample of this run)"
    lo, hi = rate["ci95"]
    return (
        f"{rate['estimate']:.1%} [{lo:.1%}, {hi:.1%}] (n read {rate['n_labelled']} of {rate['n']}, "
        f"effective n {rate['effective_n']:.1f})"
    )


def _first(comparison: Comparison) -> str:
    """The index's "first" cell: the top system and the rate it is ranked by (grounded when read)."""
    top = comparison.leaderboard[0]
    if top.grounded_coverage is not None and top.grounded_coverage_ci95 is not None:
        lo, hi = top.grounded_coverage_ci95
        judged = "n/a" if top.coverage is None else f"{top.coverage:.1%}"
        return f"{top.label} ({top.grounded_coverage:.1%} [{lo:.1%}, {hi:.1%}] grounded coverage; judge only {judged})"
    return f"{top.label} ({top.coverage:.1%} coverage, judge only)" if top.coverage is not None else top.label


def _pct_text(p: Rate | None) -> str:
    if p is None or p.rate is None:
        return "n/a"
    lo, hi = p.ci95
    return f"{p.rate:.1%} [{lo:.1%}, {hi:.1%}] ({p.k}/{p.n})"


def build_site(
    run_dirs: list[Path], out: Path, allow_invalid: bool = False, labels: Sequence[str | Path] = ()
) -> list[Path]:
    """Write the site for ``run_dirs`` into ``out`` (module docstring); returns the pages written. With
    ``labels`` (annotate exports with readers' labels) every table ranks by rates grounded in careful reading."""
    if not run_dirs:
        raise BadInput("leaderboard: no run folders (name some, or use --all in a workspace with scored runs)")
    by_instance: dict[str, list[str | Path]] = defaultdict(list)
    for folder in run_dirs:
        by_instance[RunFolder.open(folder).check_seal().run.instance_id].append(Path(folder))
    out = Path(out)
    written: list[Path] = []
    summary_rows = []
    for instance in sorted(by_instance):
        comparison = compare_runs(by_instance[instance], allow_invalid=allow_invalid, labels=labels)
        runs = {Path(r.path): r for r in comparison.systems}
        links = {r.label: _page_name(r.label) for r in comparison.systems}
        settings = []
        cutoff = None
        for row in comparison.systems:
            run_folder = RunFolder(row.path)
            cutoff = cutoff or run_folder.run.cutoff
            settings.append(
                [
                    f"<a href='{esc(links[row.label])}'>{esc(row.label)}</a>",
                    _judge_cell(run_folder.run.judge),
                    _retriever_cell(_run_retriever(run_folder)),
                    esc(row.judge_validity),
                ]
            )
        parts = [
            f"<h1>{esc(instance)}</h1>",
            f"<p>cutoff {esc(str(cutoff))}; {len(runs)} run(s). Rates are relative to this instance's corpus, "
            "its retriever and the judge: compare rows only where those agree.</p>",
            *html_sections(comparison, links),
            "<h2>Judge and retriever of each row</h2>",
            table(["system", "judge", "retriever", "judge validity"], settings, table_id="settings"),
        ]
        folder = out / instance
        written.append(
            atomic_write_text(
                folder / "index.html", page(f"{instance}: leaderboard", parts, nav=[("all instances", "../index.html")])
            )
        )
        for row in comparison.systems:
            written.append(atomic_write_text(folder / links[row.label], system_page(row, "index.html")))
        summary_rows.append(
            [
                f"<a href='{esc(instance)}/index.html'>{esc(instance)}</a>",
                esc(str(cutoff)),
                str(len(runs)),
                esc(", ".join(sorted({r.judge.name or "?" for r in comparison.systems}))),
                esc(_first(comparison)),
            ]
        )
    grounded = bool(labels)
    index = [
        "<h1>backtest leaderboard</h1>",
        "<p>Each instance's page ranks its systems with 95% intervals"
        + (
            " by coverage grounded in careful reading (PPI++ per run: the judge's labels on every question and "
            "readers' labels on a random sample of each run); the judge-only rates stand beside it"
            if grounded
            else f"; the ranking is the judge's alone, not grounded in careful reading ({esc(JUDGE_ONLY_NOTE)})"
        )
        + "; each system's page shows every question, its labels and the documents the judge was shown.</p>",
        table(
            [
                "instance",
                "cutoff",
                "runs",
                "judges",
                "first by grounded coverage" if grounded else "first by coverage (judge only)",
            ],
            summary_rows,
            table_id="instances",
        ),
    ]
    written.insert(0, atomic_write_text(out / "index.html", page("backtest leaderboard", index)))
    return written


__all__ = ["build_site", "discover_runs", "system_page"]
