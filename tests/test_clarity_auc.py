"""Does the clarity score separate the questions careful readers found unintelligible from the rest?

The readers of ``judges/validation/`` were not asked about clarity, but they wrote, in their notes, when a
question could not be understood. Those notes are the only per-question intelligibility labels committed,
so they are read here by a fixed rule (stated below, written before the scores of these items were looked
at): a question is *unintelligible* when a note on it says so, *the rest* otherwise. An absent note is not a
reading of intelligibility, so the labels under-count unintelligible questions, and the AUC is a lower-ish
bound of what a dedicated labelling would show.

* ``pairs-v1`` (80 arena pairs, 2 readers): a note clause naming a side (``a ...`` / ``b ...``, or ``both
  ...``) with garbled / unintelligible / unclear / undefined / unnamed / dangling / lacks object / no
  identifiable object flags that side's question; a flagging clause naming no side flags both.
* ``outcomes-v1`` and ``outcomes-heldout-v1`` (items of a question and its documents, 2 readers plus
  adjudication): a note or an adjudication reason saying the *question* is garbled or unclear (``garbled
  question``, ``question unclear``, ``context unclear``, ``referent of 'their' unclear``, ``the object is
  unclear``, ...). ``garbled premise`` does not count: the premise is a separate field the score never reads.

The score's checks and threshold were set from the issue's failure modes and the reference sets'
distributions, not from these items, and were not changed after the AUCs below were first computed;
``python -m tests.test_clarity_auc`` prints them with bootstrap intervals (docs/submit.md quotes them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from backtest.core.errors import BadInput
from backtest.text.clarity import clarity_auc, clarity_score

VALIDATION = Path(__file__).resolve().parents[1] / "judges" / "validation"
_SIDE_FLAG = re.compile(
    r"garbled|unintelligible|unclear|undefined|unnamed|dangling|lacks object|no identifiable object", re.I
)
_QUESTION_UNCLEAR = re.compile(
    r"garbled question|garbled;|question (?:context )?unclear|^context unclear|unclear what|unclear which|"
    r"referent of .{0,30}unclear|object is unclear|sample is unclear|source identity uncertain",
    re.I,
)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def flagged_sides(note: str) -> set[str]:
    """The sides ('a', 'b') a pair note calls unintelligible."""
    sides: set[str] = set()
    for clause in re.split(r";|,\s(?=[ab]\s)", note):
        clause = clause.strip()
        if not _SIDE_FLAG.search(clause):
            continue
        side = re.match(r"(a|b|both)\b", clause)
        sides |= {"a", "b"} if side is None or side.group(1) == "both" else {side.group(1)}
    return sides


def pair_labels() -> dict[str, bool]:
    """question text -> unintelligible, over every question of pairs-v1."""
    folder = VALIDATION / "pairs-v1"
    pairs = {p["item_id"]: p for p in _jsonl(folder / "pairs.jsonl")}
    labels = {side[k]["question"]: False for side in pairs.values() for k in ("a", "b")}
    notes = [
        (r["item_id"], r.get("notes") or "")
        for name in ("reader_a", "reader_b")
        for r in _jsonl(folder / "labels" / f"{name}.jsonl")
    ]
    notes += [(r["item_id"], r.get("reason") or "") for r in _jsonl(folder / "adjudication.jsonl")]
    for item_id, note in notes:
        for side in flagged_sides(note):
            labels[pairs[item_id][side]["question"]] = True
    return labels


def outcome_labels(name: str) -> dict[str, bool]:
    """question text -> unintelligible, over every item of an outcomes set."""
    folder = VALIDATION / name
    items = {i["item_id"]: i["question"]["question"] for i in _jsonl(folder / "items.jsonl")}
    labels = {q: False for q in items.values()}
    notes = [
        (r["item_id"], r.get("notes") or "")
        for n in ("reader_a", "reader_b")
        for r in _jsonl(folder / "labels" / f"{n}.jsonl")
    ]
    notes += [(r["item_id"], r.get("reason") or "") for r in _jsonl(folder / "adjudication.jsonl")]
    for item_id, note in notes:
        if _QUESTION_UNCLEAR.search(note):
            labels[items[item_id]] = True
    return labels


def auc_with_interval(labels: dict[str, bool], n_boot: int = 2000, seed: int = 0) -> dict:
    """AUC of ``1 - score`` against the labels, with a 95% percentile bootstrap interval over questions."""
    texts = sorted(labels)
    scores = np.array([clarity_score(t).score for t in texts])
    y = np.array([labels[t] for t in texts])
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(texts), len(texts))
        if y[idx].all() or not y[idx].any():
            continue
        boots.append(clarity_auc(scores[idx].tolist(), y[idx].tolist()))
    threshold_recall = float((scores[y] < 0.5).mean())
    return {
        "n": len(texts),
        "unintelligible": int(y.sum()),
        "auc": round(clarity_auc(scores.tolist(), y.tolist()), 3),
        "ci95": [round(float(np.percentile(boots, 2.5)), 3), round(float(np.percentile(boots, 97.5)), 3)],
        "flagged_share_unintelligible": round(threshold_recall, 3),
        "flagged_share_rest": round(float((scores[~y] < 0.5).mean()), 3),
    }


def test_pair_notes_are_read_by_side():
    assert flagged_sides("a clear specific claim; b garbled") == {"b"}
    assert flagged_sides("a lacks object; b garbled but specific") == {"a", "b"}
    assert flagged_sides("b clear and grounded; a context unclear") == {"a"}
    assert flagged_sides("both unintelligible (unresolved reference)") == {"a", "b"}
    assert flagged_sides("identical garbled truncated claim") == {"a", "b"}
    assert flagged_sides("a garbled 'such waves'; b broad but clear") == {"a"}
    assert flagged_sides("a garbled: galaxy unnamed and relations truncated; b intelligible though broad") == {"a"}
    assert flagged_sides("a vague 'main result'; b grounded though broad") == set()


def test_the_labels_exist_and_hold_both_classes():
    for labels in (pair_labels(), outcome_labels("outcomes-v1"), outcome_labels("outcomes-heldout-v1")):
        assert 0 < sum(labels.values()) < len(labels)


def test_the_score_separates_what_pair_readers_found_unintelligible():
    """On pairs-v1, where readers compared two questions side by side and said which one could not be
    understood, the AUC is clearly above chance: measured 0.679 [0.591, 0.769] (clarity-v1) and 0.669 [0.579, 0.76]
    (clarity-v2), so the floor is
    0.6; two in three of the questions called unintelligible fall below the gate's 0.5, one in four of the rest.

    Not asserted, reported (docs/submit.md): on outcomes-v1 the AUC is 0.33. Its readers called "garbled"
    mostly evidence_graph questions that are well formed but pair a quantity with the wrong thing ("the
    density of turbulence", "the reported magnetic field of magnetic reconnection"), which no surface check
    sees, and left the lifted-clause questions the score flags without a note. outcomes-heldout-v1 has 3
    such notes (AUC 0.84 [0.61, 1.0]): too few to assert on."""
    result = auc_with_interval(pair_labels(), n_boot=300)
    assert result["auc"] >= 0.6, result
    assert result["flagged_share_unintelligible"] > 2 * result["flagged_share_rest"], result


def test_auc_refuses_one_class_and_ranks_correctly():
    assert clarity_auc([0.1, 0.9, 0.4, 1.0], [True, False, True, False]) == 1.0
    assert clarity_auc([0.9, 0.1], [True, False]) == 0.0
    with pytest.raises(BadInput, match="both"):
        clarity_auc([0.2, 0.3], [True, True])
    with pytest.raises(BadInput, match="labels"):
        clarity_auc([0.2, 0.3], [True])


if __name__ == "__main__":  # the numbers docs/submit.md quotes
    everything: dict[str, bool] = {}
    for set_name in ("pairs-v1", "outcomes-v1", "outcomes-heldout-v1"):
        set_labels = pair_labels() if set_name == "pairs-v1" else outcome_labels(set_name)
        for text, flag in set_labels.items():
            everything[text] = everything.get(text, False) or flag
        print(set_name, json.dumps(auc_with_interval(set_labels)))
    print("all (union, by question text)", json.dumps(auc_with_interval(everything)))
