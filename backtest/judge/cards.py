"""Validity cards: a judge's measured agreement with careful reading, printed next to every rate.

A card lives at ``judges/cards/<fingerprint>.json``. The fingerprint is the sha256 of the
judge's identity (name, model, protocol, prompt and config sha256), so a changed lexicon,
prompt, threshold or weight file is a different judge with no card until it is validated.
A card holds one entry per labelled set it was validated on (keyed by the items' and
labels' sha256); validating again on the same set replaces that entry.

A card is never trusted as written. :func:`card_problems` checks, wherever a card is read, that it
names the judge it is filed under (its fingerprint, its file name and the fingerprint of its
``judge`` entry agree, and match the run's judge), that every labelled set it cites is here (the
items' and labels' sha256 match files under ``judges/validation/``, or the files the entry names as
where it was validated) and that its figures are
possible there (n at most the set's items, each kappa inside its interval). A card that fails is
shown as "card invalid", never its numbers. ``backtest judge verify-card`` goes further: it re-runs
the judge on the cited sets and compares every figure.

:func:`card_line` is the one-line summary that ``score``, reports, ``compare``, the arena
and the leaderboard print: engagement and outcome kappa with their 95% intervals, n, the
labelled set and how the numbers were made — or ``not validated``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput
from backtest.core.records import read_output, write_output
from backtest.core.runs import RunJudge
from backtest.core.seal import sha256_file, sha256_json
from backtest.core.workspace import Workspace
from backtest.judge.outputs import RunValidity, ValidityCard

NOT_VALIDATED = "judge not validated: no validity card (run `backtest judge validate`)"
CARD_INVALID = "judge validity: card invalid"


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


def card_entry(report: dict[str, Any], set_name: str) -> dict[str, Any]:
    """The card entry a validation report (judge or pairwise) makes for the labelled set ``set_name``."""
    pairwise = report["kind"] == "pairwise-judge-validation"
    return (_pair_summary if pairwise else _summary)(report, set_name)


def _where(path: str, root: Path) -> str:
    """``path`` relative to the workspace ``root`` when inside it, else absolute (how a card names a file)."""
    full = Path(path).resolve()
    return full.relative_to(root.resolve()).as_posix() if full.is_relative_to(root.resolve()) else str(full)


def entry_files(entry: dict[str, Any], sets: dict[str, Path], root: Path) -> dict[str, Path]:
    """sha256 -> file for what one entry may cite: the committed labelled sets (``sets``) and the files the entry
    names (``files``: its items and labels where they were validated, inside the workspace or not)."""
    named = entry.get("files") or {}
    paths = [named.get("items"), *(named.get("labels") or {}).values()]
    found = dict(sets)
    for rel in filter(None, paths):
        path = Path(rel) if Path(rel).is_absolute() else root / rel
        if path.is_file() and not path.is_symlink():
            found.setdefault(sha256_file(path), path)
    return found


def write_card(cards_dir: Path, report: dict[str, Any], set_name: str) -> Path:
    """Add (or replace) this validation's entry on the judge's card; return the card's path."""
    entry = card_entry(report, set_name)
    root = Path(cards_dir).parent.parent
    entry["files"] = {
        "items": _where(report["items"]["path"], root),
        "labels": {name: _where(src["path"], root) for name, src in report["labels"].items()},
    }
    return put_entry(cards_dir, report["judge"], report["kind"] == "pairwise-judge-validation", entry)


def put_entry(cards_dir: Path, info: dict[str, Any], pairwise: bool, entry: dict[str, Any]) -> Path:
    """Put ``entry`` on the card of judge ``info`` (made when it has none), replacing an entry of the same items;
    entries in set order. Returns the card's path."""
    path = card_path(cards_dir, info, pairwise)
    card = (
        read_output(ValidityCard, path)
        if path.is_file()
        else ValidityCard(
            schema_version="1",
            kind="validity-card" if not pairwise else "pairwise-validity-card",
            fingerprint=fingerprint(info),
            judge=info,
            validations=[],
        )
    )
    kept = [v for v in card.validations if v["items_sha256"] != entry["items_sha256"]]
    card = card.model_copy(update={"validations": sorted([*kept, entry], key=lambda v: v["set"])})
    write_output(path, ValidityCard, card)
    return path


def load_card(cards_dir: Path, info: Any, pairwise: bool = False) -> ValidityCard | None:
    """The judge's card as written, or None where it has none (check it with :func:`card_problems`)."""
    path = card_path(cards_dir, info, pairwise)
    return read_output(ValidityCard, path) if path.is_file() else None


def committed_sets(validation_dir: Path) -> dict[str, Path]:
    """sha256 -> file, for every committed labelled set's items (``items.jsonl``, ``pairs.jsonl``) and labels."""
    files = [
        p for pattern in ("*/items.jsonl", "*/pairs.jsonl", "*/labels/*.jsonl") for p in validation_dir.glob(pattern)
    ]
    return {sha256_file(p): p for p in sorted(files) if p.is_file() and not p.is_symlink()}


def _rows(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def _figure_problems(name: str, block: dict[str, Any], n: int) -> list[str]:
    """A kappa block (``kappa``, ``kappa_ci``, ``agreement``, ``n``) that cannot be: out of range or outside its CI."""
    out = []
    kappa, ci = block.get("kappa"), block.get("kappa_ci") or [None, None]
    if kappa is not None and not -1.0 <= kappa <= 1.0:
        out.append(f"{name} κ {kappa} is not a kappa")
    if kappa is not None and None not in ci and not ci[0] <= kappa <= ci[1]:
        out.append(f"{name} κ {kappa} lies outside its interval {ci}")
    if not 0.0 <= float(block.get("agreement", 0.0)) <= 1.0:
        out.append(f"{name} agreement {block.get('agreement')} is not a share")
    if int(block.get("n", 0)) > n:
        out.append(f"{name} n={block.get('n')} exceeds the entry's n={n}")
    return out


def _entry_problems(entry: dict[str, Any], sets: dict[str, Path], validation_dir: Path) -> list[str]:
    """What is wrong with one validation entry: labelled sets not committed (nor where the entry says it was
    validated, with the same sha256), figures impossible on them."""
    sets = entry_files(entry, sets, validation_dir.parent.parent)
    where = f"set {entry.get('set')!r}"
    labels = entry.get("labels_sha256") or {}
    if not labels:
        return [f"{where}: names no labels' sha256"]
    out = [
        f"{where}: labels {name!r} are not a labelled set here (sha256)" for name, h in labels.items() if h not in sets
    ]
    items = sets.get(entry.get("items_sha256", ""))
    if items is not None:
        n_items = _rows(items)
    elif all((validation_dir / name / "labels" / "adjudicated.jsonl") in sets.values() for name in labels):
        # a pooled study (scripts/judge_system_study.py): its labels are keyed by the committed sets they pool
        n_items = sum(_rows(validation_dir / name / "items.jsonl") for name in labels)
    else:
        return out + [f"{where}: items sha256 {str(entry.get('items_sha256'))[:12]} is not a labelled set here"]
    n = int(entry.get("n", 0))
    if not 0 < n <= n_items:
        out.append(f"{where}: n={n} is impossible on a set of {n_items} items")
    if "ci95" in entry:  # pairwise
        lo, hi = entry["ci95"]
        if not 0.0 <= lo <= entry["agreement"] <= hi <= 1.0:
            out.append(f"{where}: agreement {entry['agreement']} lies outside its interval {entry['ci95']}")
    for field in ("engaged", "outcome", "premise_status"):
        if field in entry:
            out += [f"{where}: {p}" for p in _figure_problems(field, entry[field], n)]
    return out


def card_problems(path: Path, card: ValidityCard, info: Any = None) -> list[str]:
    """Why the card at ``path`` (under ``judges/cards/``) cannot be trusted; empty when it passes every check
    that needs no judge run. ``info``: the judge it is read for (a run's judge), when there is one."""
    fp = card.fingerprint
    pairwise = card.kind == "pairwise-validity-card"
    out = []
    if path.stem != f"{'pairwise-' if pairwise else ''}{fp}":
        out.append(f"its fingerprint {fp} is not its file name {path.name}")
    if fingerprint(card.judge) != fp:
        out.append(f"its judge entry does not have the fingerprint {fp} it claims")
    if info is not None and fingerprint(info) != fp:
        out.append(f"it is for judge {fp}, not this judge ({fingerprint(info)})")
    if not card.validations:
        out.append("it has no validations")
    validation_dir = path.parent.parent / "validation"
    sets = committed_sets(validation_dir)
    for entry in card.validations:
        out += _entry_problems(entry, sets, validation_dir)
    return out


def checked_card(cards_dir: Path, info: Any, pairwise: bool = False) -> tuple[Path, ValidityCard | None, list[str]]:
    """The judge's card path, the card (None when it has none or it cannot be read) and why it cannot be trusted
    (empty when it can)."""
    path = card_path(cards_dir, info, pairwise)
    if not path.is_file():
        return path, None, []
    try:
        card = read_output(ValidityCard, path)
    except (BadInput, ValueError, json.JSONDecodeError) as err:
        return path, None, [f"unreadable: {str(err).splitlines()[0]}"]
    return path, card, card_problems(path, card, info)


def validity_line(cards_dir: Path, info: Any, pairwise: bool = False) -> str:
    """The one-line validity summary of the judge ``info`` (checked; 'card invalid' when its card fails)."""
    _path, card, problems = checked_card(cards_dir, info, pairwise)
    return card_line(card, problems)


def _ci(entry: dict[str, Any]) -> str:
    lo, hi = entry["kappa_ci"]
    return f"{entry['kappa']:.2f} [{lo:.2f}, {hi:.2f}]" if entry["kappa"] is not None and lo is not None else "n/a"


def card_line(card: ValidityCard | None, problems: list[str] | tuple[str, ...] = ()) -> str:
    """One line for reports: the card's kappas (engaged, outcome) with intervals, n and set; 'not validated'; or,
    where the card failed its checks (``problems``), 'card invalid' with the first reason and never its numbers."""
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"{CARD_INVALID}: {problems[0]}{more}; run `backtest judge verify-card`"
    if card is None or not card.validations:
        return NOT_VALIDATED
    parts = []
    for v in card.validations:
        if card.kind == "pairwise-validity-card":
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


def run_validity(ws: Workspace, judge: RunJudge) -> RunValidity:
    """For a run's RUN.json ``judge`` entry: the card's path (None when there is none), its one-line summary
    ('card invalid' when it fails its checks), its validations (none when invalid) and its problems."""
    path, card, problems = checked_card(ws.judges / "cards", judge.info())
    return RunValidity(
        card=ws.relative(path) if path.is_file() else None,
        line=card_line(card, problems),
        validations=card.validations if card and not problems else [],
        problems=problems,
    )
