"""Validity cards: a judge's measured agreement with careful reading, printed next to every rate.

A card lives at ``judges/cards/<fingerprint>.json``. The fingerprint is the sha256 of the
judge's identity (name, model, protocol, prompt and config sha256), so a changed lexicon,
prompt, threshold or weight file is a different judge with no card until it is validated.
A card holds one entry per labelled set it was validated on (keyed by the items' and
labels' sha256); validating again on the same set replaces that entry.

:func:`card_line` is the one-line summary that ``score``, reports, ``compare``, the arena
and the leaderboard print: engagement and outcome kappa with their 95% intervals, n, the
labelled set and how the numbers were made — or ``not validated``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backtest.core.records import read_output, write_output
from backtest.core.seal import sha256_json
from backtest.judge.outputs import ValidityCard

NOT_VALIDATED = "judge not validated: no validity card (run `backtest judge validate`)"


def fingerprint(info: Any) -> str:
    """The judge's identity hash: the first 16 hex of the sha256 of its whole info (name, model, protocol,
    prompt and config sha256 for a judge; name, kind, settings and hashes for a pairwise judge)."""
    data = info if isinstance(info, dict) else info.model_dump(mode="json")
    return sha256_json(data)[:16]


def card_path(cards_dir: Path, info: Any, pairwise: bool = False) -> Path:
    """Where the card of a judge (``info``: JudgeInfo or dict) lives."""
    return Path(cards_dir) / f"{'pairwise-' if pairwise else ''}{fingerprint(info)}.json"


def _summary(report: dict[str, Any], set_name: str) -> dict[str, Any]:
    fields = report["fields"]

    def pick(field: str) -> dict[str, Any]:
        c = fields[field]["consensus"]
        return {"kappa": c["kappa"], "kappa_ci": c["kappa_ci"], "agreement": c["agreement"], "n": c["n"]}

    return {
        "set": set_name,
        "items_sha256": report["items"]["sha256"],
        "labels_sha256": {k: v["sha256"] for k, v in report["labels"].items()},
        "evaluation": report["evaluation"],
        "n": fields["engaged"]["consensus"]["n"],
        "engaged": pick("engaged"),
        "outcome": pick("outcome"),
        "premise_status": pick("premise_status"),
        "engaged_rate": report["engaged_rate"],
        "judge_flags": fields["premise_status"]["distribution"]["judge"]["flags"],
    }


def _pair_summary(report: dict[str, Any], set_name: str) -> dict[str, Any]:
    c = report["consensus"]
    return {
        "set": set_name,
        "items_sha256": report["items"]["sha256"],
        "labels_sha256": {k: v["sha256"] for k, v in report["labels"].items()},
        "evaluation": report["evaluation"],
        "n": c["n_decided"],
        "agreement": c["agreement"],
        "ci95": c["ci95"],
        "judge_ties_on_decided": c["judge_ties_on_decided"],
    }


def write_card(cards_dir: Path, report: dict[str, Any], set_name: str) -> Path:
    """Add (or replace) this validation's entry on the judge's card; return the card's path."""
    pairwise = report["kind"] == "pairwise-judge-validation"
    info = report["judge"]
    path = card_path(cards_dir, info, pairwise)
    card = (
        read_output(ValidityCard, path)
        if path.is_file()
        else {
            "schema_version": "1",
            "kind": "validity-card" if not pairwise else "pairwise-validity-card",
            "fingerprint": fingerprint(info),
            "judge": info,
            "validations": [],
        }
    )
    entry = (_pair_summary if pairwise else _summary)(report, set_name)
    card["validations"] = [v for v in card["validations"] if v["items_sha256"] != entry["items_sha256"]] + [entry]
    card["validations"].sort(key=lambda v: v["set"])
    write_output(path, ValidityCard, card)
    return path


def load_card(cards_dir: Path, info: Any, pairwise: bool = False) -> dict[str, Any] | None:
    """The judge's card, or None where it has none."""
    path = card_path(cards_dir, info, pairwise)
    return read_output(ValidityCard, path) if path.is_file() else None


def _ci(entry: dict[str, Any]) -> str:
    lo, hi = entry["kappa_ci"]
    return f"{entry['kappa']:.2f} [{lo:.2f}, {hi:.2f}]" if entry["kappa"] is not None and lo is not None else "n/a"


def card_line(card: dict[str, Any] | None) -> str:
    """One line for reports: the card's kappas (engaged, outcome) with intervals, n and set; or 'not validated'."""
    if not card or not card.get("validations"):
        return NOT_VALIDATED
    parts = []
    for v in card["validations"]:
        if card.get("kind") == "pairwise-validity-card":
            lo, hi = v["ci95"]
            parts.append(
                f"agrees with careful reading on {v['agreement']:.0%} [{lo:.0%}, {hi:.0%}] of {v['n']} decided "
                f"pairs ({v['set']}, {v['evaluation']})"
            )
        else:
            parts.append(
                f"κ engaged {_ci(v['engaged'])}, outcome {_ci(v['outcome'])} vs careful reading, "
                f"n={v['n']} ({v['set']}, {v['evaluation']})"
            )
    return "judge validity: " + "; ".join(parts)


def run_validity(ws, judge: dict[str, Any]) -> dict[str, Any]:
    """For a run's RUN.json ``judge`` entry: the card's path (None when there is none) and its one-line summary."""
    from backtest.core.records import JudgeInfo

    info = {k: judge.get(k) for k in JudgeInfo.model_fields}
    path = card_path(ws.judges / "cards", info)
    card = read_output(ValidityCard, path) if path.is_file() else None
    return {
        "card": ws.relative(path) if card else None,
        "line": card_line(card),
        "validations": card["validations"] if card else [],
    }
