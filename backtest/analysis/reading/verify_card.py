"""``backtest judge verify-card``: a validity card re-derived from the committed labelled sets.

:func:`backtest.judge.cards.card_problems` checks what needs no judge (the card names its judge,
cites committed labelled sets, holds possible figures). This module re-runs the judge the card is
for on each cited set, the way the card says it was measured (as-is, or cross-validated with K
folds; the pooled nested leave-one-system-out study re-run from its sets, a few minutes), and
compares every field of the new entry with the card's. An entry that cannot be re-derived here
(an LLM judge with no endpoint or cache, a procedure it does not know) is reported as "not
recomputed" with why; the card's sha256 can then be checked against a published one
(``--expect-sha256``). A judge that calls an endpoint is called only when ``allow_endpoint`` says so:
the cards and ``judges/*.toml`` are committed files anyone can edit, so by default none of its entries
is recomputed and no request is made.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from backtest.core.errors import BadInput
from backtest.core.records import read_output
from backtest.core.seal import sha256_file
from backtest.judge.cards import card_entry, card_problems, committed_sets, entry_files, fingerprint
from backtest.judge.outputs import ValidityCard

TOLERANCE = 1e-6
_CV = re.compile(r"cross-validated \((\d+)-fold")


def _differences(recorded: Any, recomputed: Any, where: str = "") -> list[str]:
    """Every place two JSON values differ (numbers within TOLERANCE are equal)."""
    if isinstance(recorded, dict) and isinstance(recomputed, dict):
        out = []
        for key in sorted(set(recorded) | set(recomputed)):
            out += _differences(recorded.get(key), recomputed.get(key), f"{where}.{key}" if where else str(key))
        return out
    if isinstance(recorded, list) and isinstance(recomputed, list) and len(recorded) == len(recomputed):
        return [d for i, (a, b) in enumerate(zip(recorded, recomputed)) for d in _differences(a, b, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(recorded, numbers) and isinstance(recomputed, numbers) and not isinstance(recorded, bool):
        return [] if abs(float(recorded) - float(recomputed)) <= TOLERANCE else [f"{where} {recorded} != {recomputed}"]
    return [] if recorded == recomputed else [f"{where} {recorded!r} != {recomputed!r}"]


def find_judge(ws, card: ValidityCard, spec: str | None = None):
    """The judge the card is for: ``spec`` when given (it must have the card's fingerprint), else the registered
    judge or ``judges/*.toml`` config whose fingerprint is the card's; None when the workspace has none."""
    pairwise = card.kind == "pairwise-validity-card"
    if pairwise:
        from backtest.arena.pairwise import PAIRWISE_JUDGES, get_pairwise_judge

        def build(s):
            return get_pairwise_judge(s, ws.root)

        names = list(PAIRWISE_JUDGES.names())
    else:
        from backtest.judge import get_judge, judge_names

        def build(s):
            return get_judge(s, ws)

        names = [n for n in judge_names() if n != "llm"]
    candidates = [spec] if spec else names + [str(p) for p in sorted(ws.judges.glob("*.toml"))]
    for candidate in candidates:
        try:
            judge = build(candidate)
        except BadInput:
            if spec:
                raise
            continue
        if fingerprint(judge.info()) == card.fingerprint:
            return judge
    if spec:
        raise BadInput(f"--judge {spec}: its fingerprint is not the card's ({card.fingerprint})")
    return None


class NotRecomputable(Exception):
    """An entry this machine cannot re-derive (why is the message)."""


class EntryCheck(TypedDict):
    """One card entry re-derived: ``matches``, ``differs`` (with the differences) or ``not recomputed`` (``why``)."""

    set: str
    status: str
    why: NotRequired[str]
    differences: list[str]


class CardCheck(TypedDict):
    """:func:`verify_card`: the card, its sha256, whether it holds, its status and problems, each entry's check."""

    card: str
    sha256: str
    ok: bool
    status: str
    problems: list[str]
    entries: list[EntryCheck]


def recompute_entry(
    judge, entry: dict[str, Any], sets: dict[str, Path], validation_dir: Path, pairwise: bool
) -> dict[str, Any]:
    """The entry the judge gives today on the entry's committed set, measured the way the entry says; the pooled
    nested study re-run from its committed sets. NotRecomputable where that cannot be done here."""
    from backtest.analysis.reading.systems import NESTED_EVALUATION, STUDY_SETS, nested_study, pooled_card_entry
    from backtest.analysis.reading.validate import validate_items, validate_pairs

    evaluation = entry["evaluation"]
    if evaluation == NESTED_EVALUATION:
        # pooled in the study's order (the card's JSON sorts the names; the first of two equal items is kept)
        order = {name: k for k, name in enumerate(STUDY_SETS)}
        folders = [validation_dir / n for n in sorted(entry["labels_sha256"], key=lambda n: (order.get(n, 99), n))]
        pooled, _, nested = nested_study(folders)
        return pooled_card_entry(folders, pooled, nested)
    cv = _CV.match(evaluation)
    if evaluation != "as-is" and not cv:
        raise NotRecomputable(f"made by a procedure this command does not know ({evaluation[:60]})")
    sets = entry_files(entry, sets, validation_dir.parent.parent)
    items = sets[entry["items_sha256"]]
    labels = [f"{name}={sets[h]}" for name, h in entry["labels_sha256"].items()]
    folds = int(cv.group(1)) if cv else 5
    if pairwise:
        report = validate_pairs(items, labels, judge, folds=folds, cross_validate=bool(cv))
    else:
        _answers_at_all(judge, items)
        report = validate_items(items, labels, judge, folds=folds, cross_validate=bool(cv))
        failed = report["items"].get("n_judge_failed", 0)
        if failed:
            raise NotRecomputable(
                f"the judge gave no answer for {failed} of {report['items']['n_labelled']} items (is its endpoint "
                "up, or its answer cache here?)"
            )
    return card_entry(report, entry["set"])


def _answers_at_all(judge, items_path: Path) -> None:
    """NotRecomputable, after one item, when the judge gives no answer (an LLM judge whose endpoint is down and
    whose answers are not cached here): not after every item has spent its retries."""
    from backtest.analysis.reading.items import read_items

    first = read_items(items_path)[0]
    judgment = judge.judge(first.question, first.retrieved())
    if judgment.failed:
        raise NotRecomputable(f"the judge gave no answer for the first item ({judgment.needs_review[0][:160]})")


def verify_card(
    ws, path: Path, judge_spec: str | None = None, expect_sha256: str | None = None, allow_endpoint: bool = False
) -> CardCheck:
    """Check the card at ``path``: the judge-free checks, then each entry re-derived by its judge (one that calls
    an endpoint only with ``allow_endpoint``).

    Returns ``{"card", "sha256", "ok", "problems", "entries": [{"set", "status", "differences"}]}``; ``ok`` is
    False when any check fails or any recomputed figure differs; an entry that cannot be recomputed here is
    "not recomputed" (with why) and does not by itself fail the card, unless no entry at all was recomputed and
    no published sha256 was checked.
    """
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{path}: no such validity card")
    card = read_output(ValidityCard, path)
    digest = sha256_file(path)
    problems = card_problems(path, card)
    if expect_sha256 and digest != expect_sha256.lower():
        problems.append(f"its sha256 {digest[:16]} is not the published {expect_sha256[:16]}")
    entries: list[EntryCheck] = []
    judge = None if problems else find_judge(ws, card, judge_spec)
    if not problems and judge is None:
        problems.append(f"no judge in this workspace has the card's fingerprint {card.fingerprint}")
    if not problems and judge is not None:
        validation_dir = path.parent.parent / "validation"
        sets = committed_sets(validation_dir)
        pairwise = card.kind == "pairwise-validity-card"
        refused = judge.calls_endpoint and not allow_endpoint
        for entry in card.validations:
            try:
                if refused:
                    raise NotRecomputable(f"its judge {judge.name} calls an endpoint: --allow-endpoint to call it")
                fresh = recompute_entry(judge, entry, sets, validation_dir, pairwise)
            except NotRecomputable as why:
                entries.append({"set": entry["set"], "status": "not recomputed", "why": str(why), "differences": []})
                continue
            diffs = _differences({k: v for k, v in entry.items() if k != "files"}, fresh)
            entries.append({"set": entry["set"], "status": "matches" if not diffs else "differs", "differences": diffs})
        problems += [f"set {e['set']!r}: {d}" for e in entries for d in e["differences"]]
        if not expect_sha256 and entries and all(e["status"] == "not recomputed" for e in entries):
            problems.append("no figure could be recomputed here and no published sha256 was given")
    unverified = problems == ["no figure could be recomputed here and no published sha256 was given"]
    status = "ok" if not problems else "unverified" if unverified else "invalid"
    return CardCheck(card=str(path), sha256=digest, ok=not problems, status=status, problems=problems, entries=entries)
