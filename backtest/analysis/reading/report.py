"""Rendering a judge-validation report: a text table, and an HTML page with confusion heat maps."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from backtest.analysis.outputs import ValidationReport
from backtest.core.fileio import atomic_write_text
from backtest.core.records import write_output


def _k(block: dict[str, Any]) -> str:
    if block.get("kappa") is None:
        return "undefined"
    lo, hi = block["kappa_ci"]
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None else ""
    return f"{block['kappa']:.2f}{ci}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def render_text(report: dict[str, Any]) -> str:
    """A plain-text summary: kappa with 95% intervals per field, per reader and against consensus."""
    judge = report["judge"]
    lines = [
        f"judge {judge.get('name')} ({judge.get('protocol')}), {report['evaluation']}; "
        f"{report['items']['n_labelled']} labelled items of {report['items']['n']}"
    ]
    if report["kind"] == "pairwise-judge-validation":
        for who, block in [("consensus", report["consensus"]), *report["vs_rater"].items()]:
            lo, hi = block["ci95"]
            lines.append(
                f"  vs {who}: agrees on {block['agree']} of {block['n_decided']} decided pairs "
                f"({_pct(block['agreement'])}, 95% CI {_pct(lo)}–{_pct(hi)}); "
                f"judge ties {block['judge_ties_on_decided']}"
            )
        for pair, block in report["between_raters"].items():
            lines.append(
                f"  readers {pair}: agree on {block['agree']} of {block['n_decided']} pairs the second decided"
            )
        return "\n".join(lines) + "\n"
    header = f"  {'field':<15} {'vs':<14} {'n':>4} {'agree':>7}  kappa [95% CI]"
    lines.append(header)
    for field, block in report["fields"].items():
        for who, b in [("consensus", block["consensus"]), *block["vs_rater"].items()]:
            lines.append(f"  {field:<15} {who:<14} {b['n']:>4} {_pct(b['agreement']):>7}  {_k(b)}")
        for pair, b in block["between_raters"].items():
            lines.append(f"  {field:<15} {'readers ' + pair:<14} {b['n']:>4} {_pct(b['agreement']):>7}  {_k(b)}")
    rates = ", ".join(f"{who} {_pct(r)}" for who, r in report["engaged_rate"].items())
    lines.append(f"  engaged rate: {rates}")
    for who, dist in report["fields"]["premise_status"]["distribution"].items():
        for flag in dist["flags"]:
            lines.append(f"  FLAG premise_status ({who}): {flag}")
    return "\n".join(lines) + "\n"


def confusion_png(block: dict[str, Any], title: str, xlabel: str = "judge", ylabel: str = "readers") -> bytes:
    """A confusion matrix as a heat map (PNG bytes); rows are the readers, columns the judge."""
    from backtest.core.plots import figure_png, pyplot

    plt = pyplot()
    import numpy as np

    labels, grid = block["confusion"]["labels"], np.asarray(block["confusion"]["matrix"], dtype=float)
    fig, ax = plt.subplots(figsize=(1.0 * len(labels) + 3, 0.8 * len(labels) + 2))
    im = ax.imshow(grid, cmap="Blues")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=40, ha="right")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(
                j,
                i,
                str(int(grid[i, j])),
                ha="center",
                va="center",
                color="black" if grid[i, j] < grid.max() / 2 else "white",
            )
    ax.set_title(title)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return figure_png(fig, dpi=80)


def render_html(report: dict[str, Any]) -> str:
    """A self-contained page: the kappa table and a confusion heat map per field (judge vs consensus)."""
    esc = html.escape
    judge = report["judge"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>backtest judge validation</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:4px 8px}</style></head><body>",
        f"<h1>Judge validation: {esc(str(judge.get('name')))}</h1>",
        f"<p>{esc(str(judge.get('protocol')))}; {esc(report['evaluation'])}; "
        f"{report['items']['n_labelled']} labelled items "
        f"({esc(report['items']['path'])})</p>",
    ]
    if report["kind"] == "pairwise-judge-validation":
        parts.append("<table><tr><th>vs</th><th>decided pairs</th><th>agree</th><th>agreement [95% CI]</th></tr>")
        for who, b in [("consensus", report["consensus"]), *report["vs_rater"].items()]:
            lo, hi = b["ci95"]
            parts.append(
                f"<tr><td>{esc(who)}</td><td>{b['n_decided']}</td><td>{b['agree']}</td>"
                f"<td>{_pct(b['agreement'])} [{_pct(lo)}, {_pct(hi)}]</td></tr>"
            )
        parts.append("</table></body></html>\n")
        return "\n".join(parts)
    parts.append(
        "<table><tr><th>field</th><th>vs</th><th>n</th><th>raw agreement</th><th>Cohen's kappa [95% CI]</th></tr>"
    )
    for field, block in report["fields"].items():
        rows = [
            ("consensus", block["consensus"]),
            *block["vs_rater"].items(),
            *((f"readers {k}", v) for k, v in block["between_raters"].items()),
        ]
        for who, b in rows:
            parts.append(
                f"<tr><td>{esc(field)}</td><td>{esc(who)}</td><td>{b['n']}</td><td>{_pct(b['agreement'])}</td>"
                f"<td>{esc(_k(b))}</td></tr>"
            )
    parts.append("</table>")
    for field, block in report["fields"].items():
        if block["consensus"].get("confusion"):
            png = base64.b64encode(confusion_png(block["consensus"], f"{field}: readers' consensus vs judge")).decode(
                "ascii"
            )
            parts.append(
                f"<h2>{esc(field)}</h2><img alt='confusion matrix, {esc(field)}' src='data:image/png;base64,{png}'>"
            )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(report: dict[str, Any], out: str | Path) -> Path:
    """Write ``validation.json`` and ``validation.html`` into ``out``."""
    out = Path(out)
    write_output(out / "validation.json", ValidationReport, report)
    atomic_write_text(out / "validation.html", render_html(report))
    return out
