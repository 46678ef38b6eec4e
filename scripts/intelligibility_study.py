"""The intelligibility study (issue 17, item 5): rates, agreement and the clarity score's AUC from committed labels.

Reads a study folder (default ``judges/validation/intelligibility-v2/``): ``items.jsonl`` (the blinded
questions), ``key.json`` (item -> instance, generator, question id, a plain mapping rather than an
``annotate export`` decode record), ``sources.json`` (what was generated, and the clarity version the labels
were read under); ``labels/reader_a.jsonl``, ``labels/reader_b.jsonl``: the two independent passes;
``labels/adjudicated.jsonl``: the final labels) and writes ``results.json`` and
``results.md`` beside them:

- agreement between the passes: raw agreement and Cohen's kappa on ``intelligible`` (all items) and on
  ``real_conflict`` (the items neither pass marked ``na``);
- per instance and generator, the share of questions read as intelligible and, where questions present two
  findings, the share whose conflict is real, each with a 95% Clopper-Pearson interval;
- the clarity score (``backtest.text.clarity.clarity_score``) against the adjudicated labels: the ROC AUC of
  ``1 - score`` for "unintelligible", with a seeded case bootstrap interval, and how many each side the freeze
  gate's threshold flags; over every item, over the ``*-unfiltered`` questions alone and over ``direct_llm``'s
  (a model's questions, which no clarity check chose) where a study holds them. The report says whether the
  score's version was fixed before the labels were read (a measurement) or changed after (in-sample).

Usage: ``python scripts/intelligibility_study.py [FOLDER]``; the same labels give the same bytes.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "judges" / "validation" / "intelligibility-v2"
N_BOOT = 2000
SCORE_BLIND = ("direct_llm",)  # generators whose questions no clarity check chose (the model's, as it wrote them)


def _read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["item_id"]: r for r in rows}


def _labels(path: Path) -> dict[str, dict[str, Any]]:
    """A pass's labels (or the adjudicated ones) read as their typed records (``QuestionLabel``: an unknown
    schema_version or a value outside the guide's is refused), as plain fields by item id."""
    from backtest.analysis.reading.intelligibility import read_question_labels

    return {
        k: label.model_dump(exclude={"schema_version", "seconds"}) for k, label in read_question_labels(path).items()
    }


def study(folder: Path) -> dict[str, Any]:
    """The results (module docstring) from the labels in ``folder``."""
    from backtest.core.stats import cohen_kappa, proportion, raw_agreement
    from backtest.text.clarity import CLARITY_THRESHOLD, CLARITY_VERSION, clarity_score

    items = _read_jsonl(folder / "items.jsonl")
    decode = json.loads((folder / "key.json").read_text(encoding="utf-8"))
    a = _labels(folder / "labels" / "reader_a.jsonl")
    b = _labels(folder / "labels" / "reader_b.jsonl")
    final = _labels(folder / "labels" / "adjudicated.jsonl")
    for name, labels in (("reader_a", a), ("reader_b", b), ("adjudicated", final)):
        if set(labels) != set(items):
            raise SystemExit(f"{name}: labels for {len(labels)} items, expected the {len(items)} of items.jsonl")
    ids = sorted(items)
    conflict_ids = [i for i in ids if "na" not in (a[i]["real_conflict"], b[i]["real_conflict"])]
    pair = {
        i: ((a[i]["intelligible"], a[i]["real_conflict"]), (b[i]["intelligible"], b[i]["real_conflict"])) for i in ids
    }
    agreement = {
        "intelligible": {
            "n": len(ids),
            "raw": raw_agreement([a[i]["intelligible"] for i in ids], [b[i]["intelligible"] for i in ids]),
            "kappa": cohen_kappa([a[i]["intelligible"] for i in ids], [b[i]["intelligible"] for i in ids]),
        },
        "real_conflict": {
            "n": len(conflict_ids),
            "raw": raw_agreement(
                [a[i]["real_conflict"] for i in conflict_ids], [b[i]["real_conflict"] for i in conflict_ids]
            )
            if conflict_ids
            else None,
        },
        "disagreements": sum(1 for i in ids if pair[i][0] != pair[i][1]),
    }
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for i in ids:
        groups[(decode[i]["instance"], decode[i]["generator"])].append(i)
    rates = []
    for (instance, generator), members in sorted(groups.items()):
        conflicts = [i for i in members if final[i]["real_conflict"] != "na"]
        reasons: dict[str, int] = defaultdict(int)
        for i in members:
            if final[i]["intelligible"] == "no":
                reasons[final[i]["reason"] or "other"] += 1
        rates.append(
            {
                "instance": instance,
                "generator": generator,
                "intelligible": proportion(
                    sum(final[i]["intelligible"] == "yes" for i in members), len(members)
                ).model_dump(mode="json"),
                "unintelligible_reasons": dict(sorted(reasons.items())),
                "real_conflict": proportion(
                    sum(final[i]["real_conflict"] == "yes" for i in conflicts), len(conflicts)
                ).model_dump(mode="json")
                if conflicts
                else None,
            }
        )
    cases = {i: (clarity_score(items[i]["question"]).score, final[i]["intelligible"] == "no") for i in ids}
    clarity = _clarity([cases[i] for i in ids])
    unfiltered = [i for i in ids if decode[i]["generator"].endswith("-unfiltered")]
    if unfiltered:  # the questions no quality filter saw: the score's AUC where it did not choose the sample
        clarity["unfiltered"] = _clarity([cases[i] for i in unfiltered])
    model_written = [i for i in ids if decode[i]["generator"] in SCORE_BLIND]
    if model_written:  # a language model's questions, which the score did not choose either
        clarity["model_written"] = _clarity([cases[i] for i in model_written])
    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    read_under = sources.get("clarity_version_at_reading", "clarity-v1")
    return {
        "schema_version": "1",
        "set": folder.name,
        "items": len(ids),
        "agreement": agreement,
        "rates": rates,
        "clarity": {
            "version": CLARITY_VERSION,
            "version_at_reading": read_under,
            "threshold": CLARITY_THRESHOLD,
            "bootstrap": {"n_boot": N_BOOT, "seed": 0, "level": "case"},
            **clarity,
        },
    }


def _clarity(cases: list[tuple[float, bool]]) -> dict[str, Any]:
    """AUC of the clarity score for "unintelligible" over ``cases`` (score, unintelligible), with a seeded case
    bootstrap interval, and how many each side the gate's threshold flags."""
    from backtest.core.stats import bootstrap
    from backtest.text.clarity import CLARITY_THRESHOLD as threshold
    from backtest.text.clarity import clarity_auc

    def auc(sample: list[tuple[float, bool]]) -> float:
        labels = [u for _, u in sample]
        if all(labels) or not any(labels):
            return float("nan")
        return clarity_auc([s for s, _ in sample], labels)

    boot = bootstrap(cases, auc, n_boot=N_BOOT, seed=0)
    return {
        "auc_unintelligible": boot["estimate"],
        "auc_ci95": boot["ci"],
        "unintelligible_flagged": sum(1 for s, u in cases if u and s < threshold),
        "unintelligible": sum(1 for _, u in cases if u),
        "intelligible_flagged": sum(1 for s, u in cases if not u and s < threshold),
        "intelligible": sum(1 for _, u in cases if not u),
    }


def _pct(p: dict[str, Any] | None) -> str:
    if not p:
        return "–"
    lo, hi = p["ci95"]
    return f"{p['rate']:.0%} [{lo:.0%}, {hi:.0%}] ({p['k']}/{p['n']})"


def render(results: dict[str, Any]) -> str:
    ag, cl = results["agreement"], results["clarity"]
    rc = ag["real_conflict"]
    conflict = f"{rc['raw']:.0%} raw (n = {rc['n']})" if rc["n"] else "none"
    lines = [
        f"# Intelligibility of the reference generators' questions ({results['set']})",
        "",
        f"{results['items']} blinded questions, two independent reading passes, adjudicated (see README.md).",
        "",
        f"- agreement between the passes on `intelligible`: {ag['intelligible']['raw']:.1%} raw, "
        f"Cohen's kappa {ag['intelligible']['kappa']:.2f} (n = {ag['intelligible']['n']})",
        "- on `real_conflict` (items both passes judged to present two findings): " + conflict,
        f"- items with any disagreement, adjudicated: {ag['disagreements']}",
        "",
        "| instance | generator | intelligible | unintelligible, by reason | real conflict on one quantity |",
        "|---|---|---|---|---|",
    ]
    for r in results["rates"]:
        reasons = ", ".join(f"{k} {v}" for k, v in r["unintelligible_reasons"].items()) or "–"
        cells = [r["instance"], r["generator"], _pct(r["intelligible"]), reasons, _pct(r["real_conflict"])]
        lines.append("| " + " | ".join(cells) + " |")
    when = (
        "fixed before these labels existed"
        if cl["version"] == cl["version_at_reading"]
        else f"changed after these labels were read under {cl['version_at_reading']}, partly from their failures: "
        "in-sample, not a measurement"
    )
    lines += ["", f"The clarity score ({cl['version']}, {when}) against the adjudicated labels:", ""]
    for what, c in (
        ("every item", cl),
        ("the unfiltered questions only", cl.get("unfiltered")),
        ("direct_llm's questions only (a model's, which no clarity check chose)", cl.get("model_written")),
    ):
        if c:
            lo, hi = c["auc_ci95"]
            lines.append(
                f"- {what}: AUC {c['auc_unintelligible']:.2f} [{lo:.2f}, {hi:.2f}] for picking out the "
                f"unintelligible questions (case bootstrap, {cl['bootstrap']['n_boot']} draws, seed 0); the freeze "
                f"gate's threshold {cl['threshold']} flags {c['unintelligible_flagged']} of the {c['unintelligible']} "
                f"unintelligible and {c['intelligible_flagged']} of the {c['intelligible']} intelligible questions."
            )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else FOLDER
    results = study(folder)
    (folder / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (folder / "results.md").write_text(render(results), encoding="utf-8")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
