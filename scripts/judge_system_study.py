"""The offline judge measured on systems it never saw, and refitted on every labelled set.

Pools every labelled outcome set under ``judges/validation/`` (``outcomes-v1``, ``outcomes-heldout-v1``,
``release-astro-2025-v1``, ``release-space-2016-v1``: 551 distinct items of six systems) and reports, against
the readers' adjudicated labels (:mod:`backtest.analysis.reading.systems`):

* **as-is**: the previous default weights (``offline-v2``, fitted on ``outcomes-v1`` only) on the two release
  reads, which they never saw;
* **leave one system out** for each candidate feature set: fit on the other systems, judge the held-out one;
  per system and pooled;
* **nested leave one system out**: the candidate chosen without the held-out system (by leave-one-system-out
  on the others), then fitted on the others: the number no choice was made on, the card's headline;
* the candidate chosen on all systems, fitted on all 551 items: the new default weights,
  ``backtest/judge/weights/offline-v3.json``, and its validity card.

Writes ``judges/validation/system-study.{json,md}``, the weights and the card. Deterministic. Run:
``HF_HUB_OFFLINE=1 .venv/bin/python scripts/judge_system_study.py`` (about 5 minutes here: every item's
documents are embedded once).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backtest.analysis.reading.systems import (  # noqa: E402
    ALL_FEATURES,
    CANDIDATES,
    NEVER_TESTED_ON,
    STUDY_MODEL,
    STUDY_SETS,
    agreement_summary,
    choose_features,
    feature_columns,
    item_rows,
    labelled_items,
    leave_one_system_out,
    nested_leave_one_system_out,
    pooled_card_entry,
)
from backtest.core.fileio import atomic_write_text, write_json  # noqa: E402
from backtest.core.seal import sha256_file  # noqa: E402

SETS = [ROOT / "judges" / "validation" / n for n in STUDY_SETS]
MODEL = STUDY_MODEL
ALL = ALL_FEATURES


def as_is(items, rows, weights_path: Path) -> dict[str, Any]:
    """A weights file judging the items of the release reads as they are (they never saw them)."""
    from backtest.judge.constraints import to_judgment
    from backtest.judge.fitted import FittedJudge

    judge = FittedJudge.from_file(weights_path)
    cut = feature_columns(rows, ALL, judge.features)
    out = {}
    for set_name in ("release-astro-2025-v1", "release-space-2016-v1"):
        chosen = [(li, f, notes) for li, (f, notes) in cut if li.set_name == set_name]
        judged = []
        for li, f, notes in chosen:
            answer, reasons = judge.decide(li.item.question, f, notes)
            judged.append(
                to_judgment(
                    li.item.question.question_id,
                    answer,
                    [d.id for d in li.item.documents],
                    judge.info(),
                    {},
                    extra_reasons=reasons,
                )
            )
        out[set_name] = agreement_summary([li.truth for li, _, _ in chosen], judged, 2000, 0)
    return out


def main() -> int:
    from backtest.judge.fitted import DEFAULT_WEIGHTS, FittedJudge, fit_from_rows

    items = labelled_items(SETS)
    rows = item_rows(items, MODEL, ALL)
    previous = DEFAULT_WEIGHTS.with_name("offline-v2.json")
    study: dict[str, Any] = {
        "sets": [p.name for p in SETS],
        "n_items": len(items),
        "systems": {s: sum(li.system == s for li in items) for s in sorted({li.system for li in items})},
        "as_is_offline_v2_on_release_reads": as_is(items, rows, previous),
        "leave_one_system_out": {},
    }
    for names in CANDIDATES:
        report = leave_one_system_out(items, MODEL, features=names, rows=feature_columns(rows, ALL, names))
        study["leave_one_system_out"][",".join(names)] = {k: report[k] for k in ("systems", "pooled")}
    nested = nested_leave_one_system_out(items, rows, ALL, CANDIDATES, model=MODEL)
    study["nested"] = nested
    chosen, scores = choose_features(items, rows, ALL, CANDIDATES, model=MODEL)
    study["chosen_on_all_systems"] = list(chosen)
    weights = fit_from_rows(
        [(li.item, f, li.truth) for li, (f, _) in feature_columns(rows, ALL, chosen)], MODEL, features=chosen
    )
    weights["trained_on"]["sets"] = [p.name for p in SETS]
    target = DEFAULT_WEIGHTS.with_name("offline-v3.json")
    write_json(target, weights)
    judge = FittedJudge.from_file(target)
    study["weights"] = {
        "path": str(target.relative_to(ROOT)),
        "sha256": sha256_file(target),
        "fingerprint_info": judge.info().model_dump(mode="json"),
    }
    write_json(ROOT / "judges" / "validation" / "system-study.json", study)
    atomic_write_text(ROOT / "judges" / "validation" / "system-study.md", render(study))
    write_card(judge, nested, items)
    print(render(study))
    return 0


def write_card(judge, nested: dict[str, Any], items) -> Path:
    """The new default judge's card: its headline is the nested leave-one-system-out agreement."""
    from backtest.judge.cards import put_entry

    entry = pooled_card_entry(SETS, items, nested)
    return put_entry(ROOT / "judges" / "cards", judge.info().model_dump(mode="json"), False, entry)


def _k(block: dict[str, Any], field: str) -> str:
    b = block[field]
    lo, hi = b["kappa_ci"]
    return "n/a" if b["kappa"] is None else f"{b['kappa']:.2f} [{lo:.2f}, {hi:.2f}]"


def render(study: dict[str, Any]) -> str:
    lines = [
        "# The offline judge on systems it never saw (`scripts/judge_system_study.py`)",
        "",
        f"{study['n_items']} distinct labelled items ({', '.join(f'{s} {n}' for s, n in study['systems'].items())}) "
        f"from {', '.join(study['sets'])}; truth: the adjudicated labels.",
        "",
        "## The previous default (`offline-v2`, fitted on `outcomes-v1`) as-is on the release reads",
        "",
        "| set | n | κ engaged [95%] | κ outcome [95%] | engaged: judge / readers |",
        "|---|---|---|---|---|",
    ]
    for name, b in study["as_is_offline_v2_on_release_reads"].items():
        r = b["engaged_rate"]
        lines.append(
            f"| {name} | {b['n']} | {_k(b, 'engaged')} | {_k(b, 'outcome')} | {r['judge']:.1%} / {r['readers']:.1%} |"
        )
    nested = study["nested"]
    lines += [
        "",
        "## Nested leave one system out (the card's headline)",
        "",
        "For each held-out system the feature set is chosen by leave-one-system-out on the other systems, "
        "fitted on them, and judges the held-out system.",
        "",
        "| held-out system | n | features chosen without it | κ engaged [95%] | κ outcome [95%] "
        "| engaged: judge / readers |",
        "|---|---|---|---|---|---|",
    ]
    for s, b in nested["systems"].items():
        r = b["engaged_rate"]
        lines.append(
            f"| {s} | {b['n']} | {', '.join(nested['chosen_per_held_out_system'][s])} | {_k(b, 'engaged')} | "
            f"{_k(b, 'outcome')} | {r['judge']:.1%} / {r['readers']:.1%} |"
        )
    b = nested["pooled"]
    rate = b["engaged_rate"]
    lines.append(
        f"| **pooled** | {b['n']} | | {_k(b, 'engaged')} | {_k(b, 'outcome')} | "
        f"{rate['judge']:.1%} / {rate['readers']:.1%} |"
    )
    lines += [
        "",
        "## Leave one system out, per candidate feature set (what the choice was made on)",
        "",
        "| features | pooled κ engaged [95%] | pooled κ outcome | " + " | ".join(study["systems"]) + " |",
        "|---|---|---|" + "---|" * len(study["systems"]),
    ]
    for names, rep in study["leave_one_system_out"].items():
        per = " | ".join(
            "n/a" if rep["systems"][s]["engaged"]["kappa"] is None else f"{rep['systems'][s]['engaged']['kappa']:.2f}"
            for s in study["systems"]
        )
        lines.append(f"| {names} | {_k(rep['pooled'], 'engaged')} | {_k(rep['pooled'], 'outcome')} | {per} |")
    lines += [
        "",
        f"Chosen on all systems and fitted on all {study['n_items']} items: "
        f"**{', '.join(study['chosen_on_all_systems'])}** "
        f"(`{study['weights']['path']}`, the default `offline` judge). It has no items left that it never saw, so "
        "its card's headline is the nested leave-one-system-out row above.",
        "",
        f"Never tested on: {NEVER_TESTED_ON}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
