"""A fitted judge measured where users meet it: on a system it never saw.

Every user's system is a new system, so the number that says how a fitted offline judge will do on one is its
agreement with careful reading on a system it was not fitted on. :func:`leave_one_system_out` pools labelled
sets (annotate exports with readers' labels and their ``decode.json``, which names each item's system), and
for each system fits the judge on the items of every other system and judges the held-out system's items with
that fit. It reports Cohen's kappa (engaged vs not, and outcome) and the engaged rates per held-out system and
pooled over every held-out prediction, with seeded bootstrap intervals.

An item's truth is the set's adjudicated label (``labels/adjudicated.jsonl``) when there is one, else the
readers' consensus (ties left out). The same (question, documents) read in two sets counts once (the first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from backtest.analysis.outputs import Decode
from backtest.analysis.reading.items import AnnotationItem, Label, read_items, read_labels
from backtest.analysis.reading.validate import DEFAULT_BOOT, AgreementBlock, agreement_block, label_of, truth_labels
from backtest.core.errors import BadInput
from backtest.core.records import ENGAGED_OUTCOMES, OUTCOMES, Judgment, read_output


@dataclass(frozen=True)
class LabelledItem:
    """One read item with its truth and the system that wrote its question."""

    set_name: str
    item: AnnotationItem
    truth: Label
    system: str

    @property
    def key(self) -> str:
        return f"{self.set_name}/{self.item.item_id}"


def labelled_items(folders: Sequence[str | Path]) -> list[LabelledItem]:
    """The items of the labelled sets with their truth and system, each (question, documents) once."""
    from backtest.judge.fitted import item_hash

    out, seen = [], set()
    for folder in map(Path, folders):
        if not (folder / "decode.json").is_file() or not (folder / "items.jsonl").is_file():
            raise BadInput(f"{folder}: not a labelled set (needs items.jsonl, decode.json and labels/)")
        decode = read_output(Decode, folder / "decode.json")
        adjudicated = folder / "labels" / "adjudicated.jsonl"
        if adjudicated.is_file():
            truth = {lab.item_id: lab for lab in read_labels(adjudicated)}
        else:
            readers = {
                p.stem: {lab.item_id: lab for lab in read_labels(p)} for p in (folder / "labels").glob("*.jsonl")
            }
            if not readers:
                raise BadInput(f"{folder}: no readers' labels")
            truth = truth_labels(readers)
        for item in read_items(folder / "items.jsonl"):
            source = decode.items.get(item.item_id)
            digest = item_hash(item.question, item.retrieved())
            if item.item_id not in truth or source is None or digest in seen:
                continue
            seen.add(digest)
            out.append(LabelledItem(folder.name, item, truth[item.item_id], str(source.system)))  # type: ignore[union-attr]
    if not out:
        raise BadInput("no labelled items in the given sets")
    return out


class KappaLine(TypedDict):
    kappa: float | None
    kappa_ci: list[float | None]
    agreement: float | None


class EngagedRate(TypedDict):
    readers: float | None
    judge: float | None


class AgreementSummary(TypedDict):
    """:func:`agreement_summary`: n, kappa and agreement on engaged and on the outcome, and both engaged rates."""

    n: int
    engaged: KappaLine
    outcome: KappaLine
    engaged_rate: EngagedRate


class SystemsReport(TypedDict):
    """:func:`report_of`: the agreement summary per system and pooled."""

    systems: dict[str, AgreementSummary]
    pooled: AgreementSummary


class LeaveOneOutReport(SystemsReport):
    """:func:`leave_one_system_out`."""

    evaluation: str
    features: list[str]
    sets: list[str]
    judgments: dict[str, str]


class NestedReport(SystemsReport):
    """:func:`nested_leave_one_system_out`."""

    evaluation: str
    candidates: list[list[str]]
    chosen_per_held_out_system: dict[str, list[str]]


def _kappa_line(block: AgreementBlock) -> KappaLine:
    return KappaLine(kappa=block["kappa"], kappa_ci=block["kappa_ci"], agreement=block["agreement"])


def agreement_summary(truths: Sequence[Label], judged: Sequence[Any], n_boot: int, seed: int) -> AgreementSummary:
    engaged = agreement_block(
        [label_of(t, "engaged") for t in truths],
        [label_of(j, "engaged") for j in judged],
        ("engaged", "not_addressed"),
        n_boot,
        seed,
    )
    outcome = agreement_block([t.outcome for t in truths], [j.outcome for j in judged], OUTCOMES, n_boot, seed)
    n = len(truths)
    return AgreementSummary(
        n=n,
        engaged=_kappa_line(engaged),
        outcome=_kappa_line(outcome),
        engaged_rate=EngagedRate(
            readers=round(sum(t.outcome in ENGAGED_OUTCOMES for t in truths) / n, 4) if n else None,
            judge=round(sum(j.outcome in ENGAGED_OUTCOMES for j in judged) / n, 4) if n else None,
        ),
    )


def item_rows(items: Sequence[LabelledItem], model: str, names: Sequence[str]) -> list[tuple[LabelledItem, Any]]:
    """Each item with its documents' features (``names``) and notes, as the fitted judge computes them."""
    from backtest.judge.features import document_features

    return [(li, document_features(li.item.question, li.item.retrieved(), model, names)) for li in items]


def judge_held_out(
    rows: list[tuple[LabelledItem, Any]],
    system: str,
    names: Sequence[str],
    model: str = "all-MiniLM-L6-v2",
    fit: dict[str, Any] | None = None,
) -> dict[str, Judgment]:
    """Item key -> judgment, for ``system``'s items, by a judge fitted on every other system's rows (``names``: the
    rows' feature columns)."""
    from backtest.judge.constraints import to_judgment
    from backtest.judge.fitted import FittedJudge, fit_from_rows

    train = [(li.item, feats, li.truth) for li, (feats, _) in rows if li.system != system]
    judge = FittedJudge(fit_from_rows(train, model, features=tuple(names), **(fit or {})))
    judged: dict[str, Judgment] = {}
    for li, (feats, notes) in rows:
        if li.system == system:
            answer, reasons = judge.decide(li.item.question, feats, notes)
            documents = [d.id for d in li.item.documents]
            judged[li.key] = to_judgment(
                li.item.question.question_id, answer, documents, judge.info(), {}, extra_reasons=reasons
            )
    return judged


def held_out_judgments(
    items: Sequence[LabelledItem],
    rows: list[tuple[LabelledItem, Any]],
    names: Sequence[str],
    model: str = "all-MiniLM-L6-v2",
    fit: dict[str, Any] | None = None,
) -> dict[str, Judgment]:
    """Item key -> the judgment of a judge fitted (on ``rows``' features ``names``) without the item's system."""
    systems = sorted({li.system for li in items})
    if len(systems) < 2:
        raise BadInput("leave-one-system-out needs items of at least two systems")
    keep = {li.key for li in items}
    rows = [r for r in rows if r[0].key in keep]
    judged: dict[str, Judgment] = {}
    for system in systems:
        judged.update(judge_held_out(rows, system, names, model, fit))
    return judged


def report_of(items: Sequence[LabelledItem], judged: dict[str, Any], n_boot: int, seed: int) -> SystemsReport:
    """Agreement per system and pooled of held-out judgments (:func:`agreement_summary`)."""
    systems = sorted({li.system for li in items})
    return {
        "systems": {
            s: agreement_summary(
                [li.truth for li in items if li.system == s],
                [judged[li.key] for li in items if li.system == s],
                n_boot,
                seed,
            )
            for s in systems
        },
        "pooled": agreement_summary([li.truth for li in items], [judged[li.key] for li in items], n_boot, seed),
    }


def leave_one_system_out(
    items: Sequence[LabelledItem],
    model: str = "all-MiniLM-L6-v2",
    features: Sequence[str] | None = None,
    fit: dict[str, Any] | None = None,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    rows: list[tuple[LabelledItem, Any]] | None = None,
) -> LeaveOneOutReport:
    """Fit on every other system, judge the held-out one (module docstring): per system and pooled. ``rows``:
    :func:`item_rows` already computed for ``features``."""
    from backtest.judge.features import DOC_FEATURES

    names = tuple(features or DOC_FEATURES)
    rows = rows if rows is not None else item_rows(items, model, names)
    judged = held_out_judgments(items, rows, names, model, fit)
    return {
        "evaluation": "leave-one-system-out (fit on the other systems' items, judge the held-out system's)",
        "features": list(names),
        "sets": sorted({li.set_name for li in items}),
        **report_of(items, judged, n_boot, seed),
        "judgments": {li.key: judged[li.key].outcome for li in items},
    }


def feature_columns(rows: list[tuple[LabelledItem, Any]], all_names: Sequence[str], names: Sequence[str]) -> list:
    """``rows`` computed for ``all_names`` cut down to the columns of ``names`` (in that order)."""
    idx = [list(all_names).index(n) for n in names]
    return [(li, (feats[:, idx] if len(feats) else feats[:, :0], notes)) for li, (feats, notes) in rows]


def choose_features(
    items: Sequence[LabelledItem],
    rows: list[tuple[LabelledItem, Any]],
    all_names: Sequence[str],
    candidates: Sequence[Sequence[str]],
    fit: dict[str, Any] | None = None,
    model: str = "all-MiniLM-L6-v2",
) -> tuple[tuple[str, ...], dict[tuple[str, ...], float]]:
    """The candidate feature set with the best pooled leave-one-system-out kappa (engaged) on ``items``, and
    every candidate's kappa (ties: the earlier candidate)."""
    from backtest.core.stats import cohen_kappa

    scores: dict[tuple[str, ...], float] = {}
    for names in map(tuple, candidates):
        judged = held_out_judgments(items, feature_columns(rows, all_names, names), names, model, fit)
        kappa = cohen_kappa(
            [label_of(li.truth, "engaged") for li in items], [label_of(judged[li.key], "engaged") for li in items]
        )
        scores[names] = -1.0 if kappa != kappa else float(kappa)
    best = max(scores, key=lambda n: (scores[n], -list(map(tuple, candidates)).index(n)))
    return best, scores


def nested_leave_one_system_out(
    items: Sequence[LabelledItem],
    rows: list[tuple[LabelledItem, Any]],
    all_names: Sequence[str],
    candidates: Sequence[Sequence[str]],
    fit: dict[str, Any] | None = None,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    model: str = "all-MiniLM-L6-v2",
) -> NestedReport:
    """Leave one system out with the feature set itself chosen without it: for each held-out system the
    candidates are compared by leave-one-system-out on the other systems only (:func:`choose_features`), the
    winner is fitted on all of them and judges the held-out system. What this reports is the agreement the whole
    procedure (choose features, fit) reaches on a system it never saw: no number here was chosen on the items
    it is reported on."""
    systems = sorted({li.system for li in items})
    judged: dict[str, Judgment] = {}
    chosen: dict[str, list[str]] = {}
    for system in systems:
        others = [li for li in items if li.system != system]
        names, _ = choose_features(others, rows, all_names, candidates, fit, model)
        chosen[system] = list(names)
        judged.update(judge_held_out(feature_columns(rows, all_names, names), system, names, model, fit))
    return {
        "evaluation": "nested leave-one-system-out (features chosen by leave-one-system-out on the other systems)",
        "candidates": [list(c) for c in candidates],
        "chosen_per_held_out_system": chosen,
        **report_of(items, judged, n_boot, seed),
    }


# --------------------------------------------------------------------------- the pooled study of the offline judge

# The labelled outcome sets the study pools (folders under judges/validation/), the embedding model, and the
# candidate feature sets: the previous default, and counts of the question's specific phrases a document shares
# (a share of a generic question's handful of phrases is high by topic alone; a count is not).
STUDY_SETS = ("outcomes-v1", "outcomes-heldout-v1", "release-astro-2025-v1", "release-space-2016-v1")
STUDY_MODEL = "all-MiniLM-L6-v2"
CANDIDATES: list[tuple[str, ...]] = [
    ("claim_sim", "bigram_coverage"),
    ("claim_sim", "bigram_matches"),
    ("claim_sim", "term_matches", "bigram_matches"),
    ("claim_sim", "bigram_coverage", "bigram_matches"),
    ("claim_sim", "bigram_coverage", "term_matches", "bigram_matches"),
    ("claim_sim", "claim_sim_margin", "term_matches", "bigram_matches"),
]
ALL_FEATURES = tuple(dict.fromkeys(n for c in CANDIDATES for n in c))  # none adds a text to embed
NESTED_EVALUATION = "nested leave-one-system-out: features chosen and the judge fitted without the held-out system"
NEVER_TESTED_ON = (
    "systems whose questions are neither sentence lifts nor the small local LLM's (a strong LLM's questions, "
    "an evidence-graph generator at scale), instances outside astro-ph and space/atmospheric physics, and any "
    "reading by domain experts: every label is a language-model reader's"
)


def nested_study(folders: Sequence[Path]) -> tuple[list[LabelledItem], list[tuple[LabelledItem, Any]], NestedReport]:
    """The pooled items of ``folders``, their feature rows, and the nested leave-one-system-out report on them."""
    items = labelled_items(folders)
    rows = item_rows(items, STUDY_MODEL, ALL_FEATURES)
    return items, rows, nested_leave_one_system_out(items, rows, ALL_FEATURES, CANDIDATES, model=STUDY_MODEL)


def pooled_card_entry(folders: Sequence[Path], items: Sequence[LabelledItem], nested: NestedReport) -> dict[str, Any]:
    """The validity-card entry of the nested study: its headline is the agreement on systems never seen."""
    from backtest.core.seal import sha256_file, sha256_json

    pooled = nested["pooled"]
    return {
        "set": "all labelled outcome sets, by system (" + ", ".join(Path(p).name for p in folders) + ")",
        "items_sha256": sha256_json(sorted(li.key for li in items)),
        "labels_sha256": {Path(p).name: sha256_file(Path(p) / "labels" / "adjudicated.jsonl") for p in folders},
        "evaluation": NESTED_EVALUATION,
        "n": pooled["n"],
        "engaged": {**pooled["engaged"], "n": pooled["n"]},
        "outcome": {**pooled["outcome"], "n": pooled["n"]},
        "engaged_rate": pooled["engaged_rate"],
        "per_system": {
            s: {"n": b["n"], "engaged_kappa": b["engaged"]["kappa"], "engaged_rate": b["engaged_rate"]}
            for s, b in nested["systems"].items()
        },
        "never_tested_on": NEVER_TESTED_ON,
    }
