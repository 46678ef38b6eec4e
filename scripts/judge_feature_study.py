"""Which document features help the fitted offline judge? Measured, not guessed.

For each candidate feature set of :mod:`backtest.judge.features` this refits the
``offline`` judge's models (``backtest.judge.fitted``, the code ``backtest judge fit``
runs) and reports, against the readers' consensus:

* cross-validated agreement on the development set (``judges/validation/outcomes-v1``):
  5-fold, refit per fold, for fold seeds 0-4 (mean, min, max) — the fold seed alone moves
  kappa by up to 0.1 on 160 items, so one seed says little;
* agreement on the held-out set (``judges/validation/outcomes-heldout-v1``) of the judge
  fitted on the whole development set — items no feature set was chosen on;
* cross-validated agreement on both sets pooled (228 items), 5-fold, fold seeds 0-4: the
  most labelled data any fit here can use, so the best estimate of what refitting the
  judge on every labelled item would give (it is no longer held out then).

Writes ``judges/validation/feature-study.{json,md}``. Deterministic (seeds fixed, features
computed once per item). Run: ``HF_HUB_OFFLINE=1 .venv/bin/python scripts/judge_feature_study.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from backtest.analysis.reading.items import read_items
from backtest.analysis.reading.validate import load_raters, truth_labels
from backtest.core.fileio import atomic_write_text
from backtest.core.records import ENGAGED_OUTCOMES
from backtest.core.stats import cohen_kappa
from backtest.judge.features import DOC_FEATURES, KNOWN_FEATURES, document_features
from backtest.judge.fitted import FittedJudge, fit_from_rows

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "judges" / "validation"
MODEL = "all-MiniLM-L6-v2"
SEEDS = range(5)
CANDIDATES: list[tuple[str, ...]] = [
    DOC_FEATURES,
    (*DOC_FEATURES, "claim_sim_margin"),
    (*DOC_FEATURES, "claim_sim_z"),
    (*DOC_FEATURES, "question_sim"),
    (*DOC_FEATURES, "title_sim"),
    (*DOC_FEATURES, "term_coverage"),
    (*DOC_FEATURES, "claim_sim_margin", "title_sim"),
    (*DOC_FEATURES, "question_sim", "title_sim"),
    ("claim_sim", "claim_sim_margin", "bigram_coverage", "term_coverage", "question_sim", "title_sim"),
]


def load(name: str) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """Items, consensus labels and every item's features (all known features, computed once)."""
    folder = SETS / name
    items = read_items(folder / "items.jsonl")
    specs = [f"{r}={folder / 'labels' / (r + '.jsonl')}" for r in ("reader_a", "reader_b", "adjudicated")]
    raters, _ = load_raters(specs, folder / "items.jsonl", [it.item_id for it in items], False)
    rows = [(it, *document_features(it.question, it.retrieved(), MODEL, KNOWN_FEATURES)) for it in items]
    return items, truth_labels(raters), rows


def columns(rows: list[Any], names: tuple[str, ...]) -> list[Any]:
    idx = [KNOWN_FEATURES.index(n) for n in names]
    return [(it, feats[:, idx], notes) for it, feats, notes in rows]


def agreement(items: list[Any], truth: dict[str, Any], outcomes: list[str]) -> dict[str, float]:
    pairs = [(truth[it.item_id].outcome, o) for it, o in zip(items, outcomes) if it.item_id in truth]
    t = [a for a, _ in pairs]
    p = [b for _, b in pairs]
    return {
        "kappa_engaged": float(cohen_kappa([x in ENGAGED_OUTCOMES for x in t], [x in ENGAGED_OUTCOMES for x in p])),
        "kappa_outcome": float(cohen_kappa(t, p)),
        "engaged_rate": float(np.mean([x in ENGAGED_OUTCOMES for x in p])),
        "readers_engaged_rate": float(np.mean([x in ENGAGED_OUTCOMES for x in t])),
        "n": len(pairs),
    }


def pooled(*sets: tuple[str, dict[str, Any], list[Any]]) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """Several labelled sets as one, item ids prefixed by the set's tag (the sets reuse ``itemNNN``)."""
    items, truth, rows = [], {}, []
    for tag, set_truth, set_rows in sets:
        for it, feats, notes in set_rows:
            renamed = it.model_copy(update={"item_id": f"{tag}-{it.item_id}"})
            items.append(renamed)
            rows.append((renamed, feats, notes))
        truth.update({f"{tag}-{k}": v for k, v in set_truth.items()})
    return items, truth, rows


def summary(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean, min and max over fold seeds of each agreement number."""
    return {
        key: {
            "mean": float(np.mean([c[key] for c in runs])),
            "min": float(min(c[key] for c in runs)),
            "max": float(max(c[key] for c in runs)),
        }
        for key in ("kappa_engaged", "kappa_outcome", "engaged_rate")
    }


def cross_validated(judge: FittedJudge, items: list[Any], truth: dict[str, Any], rows: list[Any]) -> list[dict]:
    return [agreement(items, truth, [j.outcome for j in judge.cross_validate_rows(rows, truth, seed=s)]) for s in SEEDS]


def study() -> dict[str, Any]:
    dev_items, dev_truth, dev_all = load("outcomes-v1")
    held_items, held_truth, held_all = load("outcomes-heldout-v1")
    all_items, all_truth, all_rows = pooled(("dev", dev_truth, dev_all), ("held", held_truth, held_all))
    results = []
    for names in CANDIDATES:
        dev_rows = columns(dev_all, names)
        fit_rows = [(it, f, dev_truth[it.item_id]) for it, f, _ in dev_rows if it.item_id in dev_truth]
        judge = FittedJudge(fit_from_rows(fit_rows, MODEL, features=names))
        cv = cross_validated(judge, dev_items, dev_truth, dev_rows)
        pooled_cv = cross_validated(judge, all_items, all_truth, columns(all_rows, names))
        held = [judge.decide(it.question, f, notes)[0]["outcome"] for it, f, notes in columns(held_all, names)]
        results.append(
            {
                "features": list(names),
                "dev_cv": summary(cv),
                "dev_readers_engaged_rate": cv[0]["readers_engaged_rate"],
                "heldout": agreement(held_items, held_truth, held),
                "pooled_cv": summary(pooled_cv),
                "pooled_readers_engaged_rate": pooled_cv[0]["readers_engaged_rate"],
                "pooled_n": pooled_cv[0]["n"],
            }
        )
        print(f"{' '.join(names)}: done", file=sys.stderr, flush=True)
    return {
        "schema_version": "1",
        "what": "fitted offline judge (offline-fit-v2 models) per candidate feature set",
        "development_set": "judges/validation/outcomes-v1 (5-fold CV, fold seeds 0-4)",
        "heldout_set": "judges/validation/outcomes-heldout-v1 (judge fitted on the whole development set)",
        "pooled_set": "outcomes-v1 and outcomes-heldout-v1 together (5-fold CV, fold seeds 0-4)",
        "truth": "readers' consensus of reader_a, reader_b and adjudicated",
        "model": MODEL,
        "results": results,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        "# Feature study of the fitted offline judge",
        "",
        "Generated by `scripts/judge_feature_study.py`; do not edit by hand. Development set: "
        f"{report['development_set']}; held-out: {report['heldout_set']}; pooled: {report['pooled_set']}. "
        f"Truth: {report['truth']}.",
        "",
        "| features | dev CV κ engaged, mean [min, max] | dev CV κ outcome, mean | dev CV engaged rate "
        "| held-out κ engaged | held-out κ outcome | held-out engaged rate (readers) "
        "| pooled CV κ engaged, mean [min, max] | pooled CV κ outcome, mean | pooled CV engaged rate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        d, h, p = r["dev_cv"], r["heldout"], r["pooled_cv"]
        ke, pe = d["kappa_engaged"], p["kappa_engaged"]
        lines.append(
            f"| {', '.join(r['features'])} | {ke['mean']:.2f} [{ke['min']:.2f}, {ke['max']:.2f}] "
            f"| {d['kappa_outcome']['mean']:.2f} | {d['engaged_rate']['mean']:.1%} "
            f"(readers {r['dev_readers_engaged_rate']:.1%}) | {h['kappa_engaged']:.2f} | {h['kappa_outcome']:.2f} "
            f"| {h['engaged_rate']:.1%} ({h['readers_engaged_rate']:.1%}) "
            f"| {pe['mean']:.2f} [{pe['min']:.2f}, {pe['max']:.2f}] | {p['kappa_outcome']['mean']:.2f} "
            f"| {p['engaged_rate']['mean']:.1%} (readers {r['pooled_readers_engaged_rate']:.1%}, n {r['pooled_n']}) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    report = study()
    atomic_write_text(SETS / "feature-study.json", json.dumps(report, indent=2, sort_keys=True) + "\n")
    atomic_write_text(SETS / "feature-study.md", render(report))
    print(render(report))


if __name__ == "__main__":
    main()
