"""Agreement studies between raters: judges, imported reference labels, human annotators.

A **rater** is one or more label files. Every line is a judgment-like JSON object with
``question_id`` and the label field (``outcome`` or ``premise_status``). Items are keyed
by ``(system, question_id)``; a line's system is, in order: its own ``system`` field; the
``system`` of a ``RUN.json`` next to the file (our run folders); the release's file name
``outcomes_<system>_L.jsonl`` (``outcomes_v1.jsonl`` is ``evidence_graph_v1``). A run
folder may be given instead of its ``judgments.jsonl``. ``NAME=PATH[,PATH...]`` names a
rater made of several files (e.g. the reference judge across four systems).

``agreement(raters, field)`` computes, **on the items every rater labels**: raw agreement
and Cohen's kappa for every pair, Fleiss' kappa and Krippendorff's alpha (nominal) across
all raters, each rater's label distribution and how much of the label space it uses.
A rater that never uses ``refuted`` or ``weakened`` (premise field) is flagged, as is any
label outside the taxonomy (kept as written, never mapped). Renderers: text, JSON-ready
dict, HTML heat map of pairwise kappa.
"""

from __future__ import annotations

import base64
import html
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl
from backtest.core.records import OUTCOMES, PREMISE_STATUSES
from backtest.core.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha, raw_agreement
from backtest.validity.runfolder import RunFolder

FIELDS = {"outcome": OUTCOMES, "premise_status": PREMISE_STATUSES}
RARE_PREMISE_LABELS = ("refuted", "weakened")
_RELEASE_NAME = re.compile(r"^outcomes_(?P<system>.+?)(?:_L)?$")
_RELEASE_SYSTEMS = {"v1": "evidence_graph_v1"}

Key = tuple[str, str]


@dataclass
class Rater:
    """One rater: a name, the files it came from, and its labels per (system, question_id)."""

    name: str
    sources: list[str]
    labels: dict[Key, dict[str, str]] = field(default_factory=dict)


def load_rater(spec: str) -> Rater:
    """Load ``PATH`` or ``NAME=PATH[,PATH...]`` (files or run folders) as one rater."""
    name, _, rest = spec.partition("=") if "=" in spec and not Path(spec).exists() else ("", "", spec)
    paths = [Path(p) for p in rest.split(",") if p]
    if not paths:
        raise BadInput(f"rater {spec!r}: no label file")
    rater = Rater(name=name, sources=[str(p) for p in paths])
    for path in paths:
        file, default_system, default_name = _resolve(path)
        rater.name = rater.name or default_name
        for lineno, row in iter_jsonl(file):
            qid = row.get("question_id")
            if not isinstance(qid, str):
                raise BadInput(f"{file}:{lineno}: no question_id")
            system = row.get("system") or default_system
            if not system:
                raise BadInput(f"{file}:{lineno}: no system (add a 'system' field or keep RUN.json next to the file)")
            key = (str(system), qid)
            if key in rater.labels:
                raise BadInput(f"{file}:{lineno}: item {system}/{qid} labelled twice by rater {rater.name}")
            rater.labels[key] = {f: str(row.get(f, "")) for f in FIELDS}
    return rater


def _resolve(path: Path) -> tuple[Path, str | None, str]:
    if path.is_dir():
        if not (path / "judgments.jsonl").is_file():
            raise BadInput(f"{path}: folder without judgments.jsonl")
        info = RunFolder(path).header_data() or {}
        system = info.get("system")
        return path / "judgments.jsonl", system, f"{system or path.parent.name}/{info.get('run_id') or path.name}"
    if not path.is_file():
        raise BadInput(f"{path}: no such label file")
    info = RunFolder(path.parent).header_data()
    if info is not None:
        return path, info.get("system"), f"{info.get('system')}/{info.get('run_id') or path.parent.name}"
    match = _RELEASE_NAME.match(path.stem)
    system = _RELEASE_SYSTEMS.get(match.group("system"), match.group("system")) if match else None
    return path, system, path.stem


def agreement(raters: list[Rater], field_name: str = "outcome") -> dict[str, Any]:
    """The agreement study on the items all ``raters`` share (module docstring)."""
    if field_name not in FIELDS:
        raise BadInput(f"--field must be one of {', '.join(FIELDS)}")
    if len(raters) < 2:
        raise BadInput("agreement needs at least two raters")
    names = [r.name for r in raters]
    if len(set(names)) != len(names):
        raise BadInput(f"two raters share a name ({', '.join(names)}); name them with NAME=PATH")
    shared = sorted(set.intersection(*(set(r.labels) for r in raters)))
    if not shared:
        raise BadInput("the raters share no (system, question_id) item")
    taxonomy = FIELDS[field_name]
    columns = {r.name: [r.labels[k][field_name] for k in shared] for r in raters}
    pairs = []
    for a, b in itertools.combinations(raters, 2):
        pairs.append(
            {
                "a": a.name,
                "b": b.name,
                "n": len(shared),
                "raw_agreement": raw_agreement(columns[a.name], columns[b.name]),
                "cohen_kappa": cohen_kappa(columns[a.name], columns[b.name]),
            }
        )
    items = [[columns[r.name][i] for r in raters] for i in range(len(shared))]
    per_rater = []
    for r in raters:
        counts = Counter(columns[r.name])
        all_counts = Counter(lab[field_name] for lab in r.labels.values())
        used = [lab for lab in taxonomy if counts.get(lab)]
        unknown = sorted(lab for lab in all_counts if lab not in taxonomy)
        flags = []
        if field_name == "premise_status":
            flags += [f"never uses {lab}" for lab in RARE_PREMISE_LABELS if not counts.get(lab)]
        flags += [f"unknown label {lab!r}" for lab in unknown]
        per_rater.append(
            {
                "rater": r.name,
                "sources": r.sources,
                "n_items": len(r.labels),
                "distribution": {lab: counts.get(lab, 0) for lab in [*taxonomy, *sorted(set(counts) - set(taxonomy))]},
                "distribution_all_items": dict(sorted(all_counts.items())),
                "labels_used": used,
                "label_space_usage": len(used) / len(taxonomy),
                "unused_labels": [lab for lab in taxonomy if not counts.get(lab)],
                "flags": flags,
            }
        )
    systems = Counter(k[0] for k in shared)
    return {
        "schema_version": "1",
        "field": field_name,
        "raters": names,
        "n_shared_items": len(shared),
        "items_by_system": dict(sorted(systems.items())),
        "pairs": pairs,
        "fleiss_kappa": fleiss_kappa(items),
        "krippendorff_alpha": krippendorff_alpha(items),
        "per_rater": per_rater,
        "items": [f"{s}/{q}" for s, q in shared],
    }


def render_text(result: dict[str, Any]) -> str:
    """A plain-text summary of an agreement study."""
    lines = [
        f"agreement on {result['field']}: {len(result['raters'])} raters, {result['n_shared_items']} shared items "
        f"({', '.join(f'{s} {n}' for s, n in result['items_by_system'].items())})",
        "",
    ]
    for p in result["pairs"]:
        lines.append(
            f"  {p['a']} vs {p['b']}: raw agreement {100 * p['raw_agreement']:.1f}%, "
            f"Cohen's kappa {_fmt(p['cohen_kappa'])}"
        )
    lines += [
        f"  Fleiss' kappa {_fmt(result['fleiss_kappa'])}; "
        f"Krippendorff's alpha (nominal) {_fmt(result['krippendorff_alpha'])}",
        "",
    ]
    for r in result["per_rater"]:
        dist = ", ".join(f"{k} {v}" for k, v in r["distribution"].items())
        lines.append(f"  {r['rater']}: {dist}; uses {len(r['labels_used'])}/{len(FIELDS[result['field']])} labels")
        for flag in r["flags"]:
            lines.append(f"    FLAG: {flag}")
    return "\n".join(lines) + "\n"


def _fmt(x: float) -> str:
    return "undefined" if x != x else f"{x:.3f}"


def heatmap_png(result: dict[str, Any]) -> bytes:
    """Pairwise Cohen's kappa as a heat map (PNG bytes)."""
    from backtest.core.plots import figure_png, pyplot

    plt = pyplot()
    import numpy as np

    names = result["raters"]
    index = {n: i for i, n in enumerate(names)}
    grid = np.eye(len(names))
    for p in result["pairs"]:
        i, j = index[p["a"]], index[p["b"]]
        grid[i, j] = grid[j, i] = p["cohen_kappa"]
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2.5, 1.0 * len(names) + 1.5))
    im = ax.imshow(grid, vmin=-0.2, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(
                j, i, "n/a" if grid[i, j] != grid[i, j] else f"{grid[i, j]:.2f}", ha="center", va="center", color="w"
            )
    ax.set_title(f"Cohen's kappa, {result['field']} (n = {result['n_shared_items']})")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return figure_png(fig, dpi=90)


def render_html(result: dict[str, Any]) -> str:
    """A self-contained HTML page: heat map of pairwise kappa plus the tables."""
    esc = html.escape
    png = base64.b64encode(heatmap_png(result)).decode("ascii")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>backtest agreement</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:4px 8px}.flag{color:#c00}</style></head><body>",
        f"<h1>Agreement on {esc(result['field'])}</h1><p>{result['n_shared_items']} items shared by all raters</p>",
        f"<img alt='heat map of pairwise Cohen kappa' src='data:image/png;base64,{png}'>",
        "<h2>Pairs</h2><table><tr><th>A</th><th>B</th><th>raw agreement</th><th>Cohen's kappa</th></tr>",
    ]
    for p in result["pairs"]:
        parts.append(
            f"<tr><td>{esc(p['a'])}</td><td>{esc(p['b'])}</td><td>{100 * p['raw_agreement']:.1f}%</td>"
            f"<td>{_fmt(p['cohen_kappa'])}</td></tr>"
        )
    parts.append(
        f"</table><p>Fleiss' kappa {_fmt(result['fleiss_kappa'])}; "
        f"Krippendorff's alpha (nominal) {_fmt(result['krippendorff_alpha'])}</p>"
    )
    labels = FIELDS[result["field"]]
    parts.append(
        "<h2>Label distributions</h2><table><tr><th>rater</th>"
        + "".join(f"<th>{esc(lab)}</th>" for lab in labels)
        + "<th>flags</th></tr>"
    )
    for r in result["per_rater"]:
        parts.append(
            f"<tr><td>{esc(r['rater'])}</td>"
            + "".join(f"<td>{r['distribution'].get(lab, 0)}</td>" for lab in labels)
            + f"<td class='flag'>{esc('; '.join(r['flags']))}</td></tr>"
        )
    parts.append("</table></body></html>\n")
    return "\n".join(parts)
