"""``backtest judge validate``: a judge against careful reading, on a labelled set of items.

The judge labels exactly the items' documents (no retrieval). Against every rater and
against the raters' **consensus** (the majority label per item; items where the raters
tie are left out of the consensus and counted), it reports for ``outcome``,
``premise_status`` and ``engaged`` (any engaged outcome vs ``not_addressed``): n, raw
agreement, Cohen's kappa with a seeded case-bootstrap 95% interval, the confusion
matrix, and each label distribution; the raters' agreement with each other too. A
judge that never uses ``refuted`` or ``weakened`` is flagged.

A **fitted** judge (one that says it was trained on some items) is never scored on its
own training items: it is validated **as-is**, its shipped weights on the items it never saw,
and the report says how many items were set aside because they were in its training set. With
``cross_validate`` it is refitted per fold on the set's own labels instead (k-fold), a measure of
the method rather than of the shipped weights, and the report says so.

:func:`validate_pairs` does the same for a pairwise (arena) judge on blinded pairs: both
presentation orders are judged and folded as the arena does; agreement is reported on
the cases the readers decided, with a Clopper–Pearson 95% interval.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any, Sequence, TypedDict

from backtest.analysis.reading.items import AnnotationItem, Label, PairItem, PairLabel
from backtest.arena.pairwise import PairwiseJudge
from backtest.core.errors import BadInput
from backtest.core.records import ENGAGED_OUTCOMES, OUTCOMES, PREMISE_STATUSES
from backtest.core.seal import sha256_file
from backtest.core.stats import bootstrap, cohen_kappa, proportion, raw_agreement
from backtest.judge.protocol import Judge

FIELDS: dict[str, tuple[str, ...]] = {
    "outcome": OUTCOMES,
    "premise_status": PREMISE_STATUSES,
    "engaged": ("engaged", "not_addressed"),
}
RARE_PREMISE_LABELS = ("refuted", "weakened")
DEFAULT_BOOT = 2000


class Confusion(TypedDict):
    """A confusion matrix: ``matrix[r][c]`` counts items ``a`` labelled ``labels[r]`` and ``b`` ``labels[c]``."""

    labels: list[str]
    matrix: list[list[int]]


class AgreementBlock(TypedDict):
    """:func:`agreement_block`: n, raw agreement, Cohen's kappa with its bootstrap CI, the confusion matrix."""

    n: int
    agreement: float | None
    kappa: float | None
    kappa_ci: list[float | None]
    confusion: Confusion | None


class Distribution(TypedDict):
    """:func:`distribution`: counts per label, the labels used, the share of the label space used, and flags."""

    counts: dict[str, int]
    labels_used: list[str]
    label_space_usage: float
    flags: list[str]


class DecidedAgreement(TypedDict):
    """:func:`_decided`: agreement on the pairs the truth decided (CI: Clopper-Pearson)."""

    n: int
    n_decided: int
    agree: int
    judge_ties_on_decided: int
    agreement: float | None
    ci95: list[float | None]


def label_of(record: Any, field: str) -> str:
    """A label record's (or judgment's) value for ``field``; ``engaged`` is derived from the outcome."""
    if field == "engaged":
        return "engaged" if record.outcome in ENGAGED_OUTCOMES else "not_addressed"
    return str(getattr(record, field))


def agreement_block(
    a: Sequence[str], b: Sequence[str], labels: Sequence[str], n_boot: int = DEFAULT_BOOT, seed: int = 0
) -> AgreementBlock:
    """n, raw agreement, Cohen's kappa with a seeded bootstrap 95% CI, and the confusion matrix (rows: ``a``)."""
    pairs = list(zip(a, b))
    if not pairs:
        return {"n": 0, "agreement": None, "kappa": None, "kappa_ci": [None, None], "confusion": None}
    kappa = cohen_kappa(list(a), list(b))
    boot = bootstrap(pairs, lambda s: cohen_kappa([x for x, _ in s], [y for _, y in s]), n_boot=n_boot, seed=seed)
    space = list(labels) + sorted({*a, *b} - set(labels))
    matrix = [[sum(1 for x, y in pairs if x == r and y == c) for c in space] for r in space]
    return {
        "n": len(pairs),
        "agreement": raw_agreement(list(a), list(b)),
        "kappa": _clean(kappa),
        "kappa_ci": [_clean(boot["ci"][0]), _clean(boot["ci"][1])],
        "confusion": {"labels": space, "matrix": matrix},
    }


def _clean(x: float) -> float | None:
    return None if x != x else round(float(x), 4)


def distribution(values: Sequence[str], labels: Sequence[str], field: str) -> Distribution:
    """Counts per label, the labels used, and flags (a premise rater that never says refuted/weakened)."""
    counts = Counter(values)
    used = [lab for lab in labels if counts.get(lab)]
    flags = [f"never uses {lab}" for lab in RARE_PREMISE_LABELS if field == "premise_status" and not counts.get(lab)]
    flags += [f"unknown label {lab!r}" for lab in sorted(set(counts) - set(labels))]
    return {
        "counts": {lab: counts.get(lab, 0) for lab in [*labels, *sorted(set(counts) - set(labels))]},
        "labels_used": used,
        "label_space_usage": round(len(used) / len(labels), 4),
        "flags": flags,
    }


def consensus(raters: dict[str, dict[str, Any]], field: str) -> dict[str, str]:
    """Per item, the majority label (``field`` of Labels or PairLabels) among the raters who labelled it;
    ties are left out."""
    items = sorted(set().union(*(set(r) for r in raters.values())))
    out = {}
    for item in items:
        votes = Counter(label_of(r[item], field) for r in raters.values() if item in r)
        (top, n_top), *rest = votes.most_common()
        if not rest or rest[0][1] < n_top:
            out[item] = top
    return out


def load_raters(
    label_specs: Sequence[str], items_path: Path, item_ids: Sequence[str] | None, pairwise: bool
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Per reader (``NAME=FILE`` specs): their labels by item id, and where they came from (the file, its sha256
    and how many labels: what a report cites). Labels for items not in ``item_ids`` are refused."""
    from backtest.analysis.reading.items import read_labels

    known = None if item_ids is None else set(item_ids)
    out: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, Any]] = {}
    for spec in label_specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise BadInput(f"--labels {spec!r}: give NAME=FILE")
        if name in out:
            raise BadInput(f"--labels: rater {name!r} given twice")
        labels = read_labels(path, pairwise=pairwise)
        unknown = [lab.item_id for lab in labels if known is not None and lab.item_id not in known]
        if unknown:
            raise BadInput(f"{path}: labels for item(s) not in {items_path.name}: {', '.join(unknown[:5])}")
        out[name] = {lab.item_id: lab for lab in labels}
        sources[name] = {"path": str(Path(path)), "sha256": sha256_file(path), "n": len(labels)}
    if not out:
        raise BadInput("give at least one --labels NAME=FILE")
    return out, sources


def truth_labels(raters: dict[str, dict[str, Label]]) -> dict[str, Label]:
    """Per item, the readers' consensus as one Label: majority outcome and premise (ties left out), and the
    documents cited by at least half of the readers who found the item engaged."""
    outcome, premise = consensus(raters, "outcome"), consensus(raters, "premise_status")
    out = {}
    for item in sorted(set(outcome) & set(premise)):
        engaged = [r[item] for r in raters.values() if item in r and r[item].outcome in ENGAGED_OUTCOMES]
        votes = Counter(c for lab in engaged for c in lab.cited)
        cited = [c for c, k in votes.items() if 2 * k >= len(engaged)] if outcome[item] in ENGAGED_OUTCOMES else []
        out[item] = Label(item_id=item, outcome=outcome[item], premise_status=premise[item], cited=cited)
    return out


def unseen(judge: Judge | PairwiseJudge, things: Sequence[Any]) -> list[int]:
    """Indexes of ``things`` (items, or pairs) a fitted judge was not trained on (all, for any other judge)."""
    return [k for k, was in enumerate(judge.trained_on(things)) if not was]


def _as_is_or_cv(judge: Judge | PairwiseJudge, n: int, kept: int, cross_validate: bool, folds: int) -> str:
    """How a validation was made, or BadInput when there is nothing left to validate the shipped weights on (a
    judge that cannot be refitted says so itself when its ``cross_validate`` is called)."""
    if cross_validate:
        return f"cross-validated ({folds}-fold, refit per fold on this set's labels)"
    if kept == 0:
        raise BadInput(
            f"all {n} labelled items were in judge {judge.name!r}'s training set: validate its shipped weights on "
            "items it never saw, or pass --cross-validate to measure the method by refitting per fold"
        )
    return "as-is" + (f" ({n - kept} of {n} items set aside: in the judge's training set)" if kept < n else "")


def judge_items(
    judge: Judge,
    items: Sequence[AnnotationItem],
    raters: dict[str, dict[str, Label]],
    folds: int = 5,
    seed: int = 0,
    cross_validate: bool = False,
) -> tuple[list[AnnotationItem], list[Any], str]:
    """The items judged, the judge's judgments of them, and how they were made: ``as-is`` on the items a fitted
    judge never saw (the rest set aside), or with ``cross_validate`` refitted per fold on the readers' consensus."""
    evaluation = _as_is_or_cv(judge, len(items), len(unseen(judge, items)), cross_validate, folds)
    if cross_validate:
        return list(items), judge.cross_validate(items, truth_labels(raters), folds=folds, seed=seed), evaluation
    from backtest.validity.controls import judge_all

    kept = [items[k] for k in unseen(judge, items)]
    return kept, judge_all(judge, [(item.question, item.retrieved()) for item in kept]), evaluation


def validate_items(
    items_path: str | Path,
    label_specs: Sequence[str],
    judge,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    folds: int = 5,
    progress: bool = False,
    cross_validate: bool = False,
) -> dict[str, Any]:
    """The validation report of ``judge`` on the items at ``items_path`` against the named label files."""
    from backtest.analysis.reading.items import read_items

    items_path = Path(items_path)
    items = read_items(items_path)
    raters, sources = load_raters(label_specs, items_path, [it.item_id for it in items], pairwise=False)
    labelled = [it for it in items if any(it.item_id in r for r in raters.values())]
    n_labelled = len(labelled)
    labelled, judgments, evaluation = judge_items(
        judge, labelled, raters, folds=folds, seed=seed, cross_validate=cross_validate
    )
    judged = {it.item_id: j for it, j in zip(labelled, judgments)}
    info = judge.info()
    report: dict[str, Any] = {
        "schema_version": "1",
        "kind": "judge-validation",
        "judge": info.model_dump(mode="json"),
        "evaluation": evaluation,
        "items": {
            "path": str(items_path),
            "sha256": sha256_file(items_path),
            "n": len(items),
            "n_labelled": n_labelled,
            "n_set_aside": n_labelled - len(labelled),  # in a fitted judge's training set (as-is validation)
            "n_judge_failed": sum(1 for j in judgments if j.failed),
        },
        "labels": sources,
        "n_boot": n_boot,
        "seed": seed,
        "fields": {},
    }
    for field, space in FIELDS.items():
        block: dict[str, Any] = {"vs_rater": {}, "between_raters": {}, "distribution": {}}
        judge_vals = {i: label_of(j, field) for i, j in judged.items()}
        block["distribution"]["judge"] = distribution(list(judge_vals.values()), space, field)
        for name, labs in raters.items():
            ids = [i for i in judged if i in labs]
            block["vs_rater"][name] = agreement_block(
                [label_of(labs[i], field) for i in ids], [judge_vals[i] for i in ids], space, n_boot, seed
            )
            block["distribution"][name] = distribution([label_of(labs[i], field) for i in ids], space, field)
        cons = consensus(raters, field)
        ids = [i for i in judged if i in cons]
        block["consensus"] = {
            **agreement_block([cons[i] for i in ids], [judge_vals[i] for i in ids], space, n_boot, seed),
            "n_ties_left_out": sum(1 for i in judged if i not in cons and sum(i in r for r in raters.values()) > 1),
        }
        block["distribution"]["consensus"] = distribution([cons[i] for i in ids], space, field)
        for (na, la), (nb, lb) in itertools.combinations(raters.items(), 2):
            shared = [i for i in judged if i in la and i in lb]
            block["between_raters"][f"{na}~{nb}"] = agreement_block(
                [label_of(la[i], field) for i in shared], [label_of(lb[i], field) for i in shared], space, n_boot, seed
            )
        report["fields"][field] = block
    eng = report["fields"]["engaged"]
    report["engaged_rate"] = {who: _rate(d["counts"]) for who, d in eng["distribution"].items()}
    report["judgments"] = {
        i: {
            "outcome": j.outcome,
            "premise_status": j.premise_status,
            "cited": list(j.supporting_ids),
            "needs_review": list(j.needs_review),
        }
        for i, j in judged.items()
    }
    return report


def _rate(counts: dict[str, int]) -> float | None:
    total = sum(counts.values())
    return round(counts.get("engaged", 0) / total, 4) if total else None


# --------------------------------------------------------------------------- pairs


def pair_context(pair: PairItem):
    """A PairItem as the arena judges it: (context, output a, output b)."""
    from backtest.arena.contexts import ArenaContext, ArenaOutput

    def output(side: str, q) -> ArenaOutput:
        text = q.question + (f"\nPremise: {q.premise}" if q.premise else "")
        return ArenaOutput(system=side, output=text, evidence_ids=list(q.evidence_ids))

    text = "Past literature (published on or before the cutoff):\n" + "\n".join(
        f"[{d.id}] {d.title} — {d.abstract}" for d in pair.context
    )
    a, b = output("a", pair.a), output("b", pair.b)
    ctx = ArenaContext(
        context_id=pair.item_id,
        text=text,
        source="validation",
        evidence_ids=[d.id for d in pair.context],
        outputs={"a": a, "b": b},
    )
    return ctx, a, b


def pair_verdict(judge, pair: PairItem) -> tuple[str, float, list[str]]:
    """Both presentation orders judged and folded (average share for ``a``): ``a``/``b``/``tie``,
    the share, verdicts."""
    from backtest.arena.pairwise import SHARES

    ctx, a, b = pair_context(pair)
    first, second = judge.compare(ctx, a, b), judge.compare(ctx, b, a)
    share = (SHARES[first.verdict] + 1 - SHARES[second.verdict]) / 2
    better = "a" if share > 0.5 else "b" if share < 0.5 else "tie"
    return better, share, [first.verdict, second.verdict]


def pair_truth(raters: dict[str, dict[str, PairLabel]]) -> dict[str, str]:
    """Per pair, the readers' majority verdict (ties between readers left out)."""
    return consensus(raters, "better")


def validate_pairs(
    pairs_path: str | Path,
    label_specs: Sequence[str],
    judge,
    folds: int = 5,
    seed: int = 0,
    cross_validate: bool = False,
) -> dict[str, Any]:
    """The pairwise judge against readers' verdicts on blinded pairs (agreement on decided cases, with a 95% CI)."""
    from backtest.analysis.reading.items import read_pairs

    pairs_path = Path(pairs_path)
    pairs = read_pairs(pairs_path)
    raters, sources = load_raters(label_specs, pairs_path, [p.item_id for p in pairs], pairwise=True)
    labelled = [p for p in pairs if any(p.item_id in r for r in raters.values())]
    cons = pair_truth(raters)
    n_labelled = len(labelled)
    as_pairs = [(p.item_id, *pair_context(p)) for p in labelled]
    kept = unseen(judge, as_pairs)
    evaluation = _as_is_or_cv(judge, n_labelled, len(kept), cross_validate, folds)
    if cross_validate:
        verdicts = judge.cross_validate(as_pairs, cons, folds=folds, seed=seed)
    else:
        labelled = [labelled[k] for k in kept]
        verdicts = [pair_verdict(judge, p) for p in labelled]
    judged = {p.item_id: v for p, v in zip(labelled, verdicts)}
    info = judge.info()
    report: dict[str, Any] = {
        "schema_version": "1",
        "kind": "pairwise-judge-validation",
        "judge": info,
        "evaluation": evaluation,
        "seed": seed,
        "n_boot": None,
        "items": {
            "path": str(pairs_path),
            "sha256": sha256_file(pairs_path),
            "n": len(pairs),
            "n_labelled": n_labelled,
            "n_set_aside": n_labelled - len(labelled),
        },
        "labels": sources,
        "vs_rater": {
            name: _decided(judged, {i: lab.better for i, lab in labs.items()}) for name, labs in raters.items()
        },
        "consensus": _decided(judged, cons),
        "between_raters": {
            f"{na}~{nb}": _decided({i: (la[i].better,) for i in la if i in lb}, {i: lb[i].better for i in lb})
            for (na, la), (nb, lb) in itertools.combinations(raters.items(), 2)
        },
        "judgments": {
            i: {"better": v[0], "share_a": round(v[1], 4), "verdicts": list(v[2]) if len(v) > 2 else []}
            for i, v in judged.items()
        },
    }
    return report


def _decided(judged: dict[str, tuple], truth: dict[str, str]) -> DecidedAgreement:
    """Agreement on the cases ``truth`` decided (a or b): a judge's tie counts as a miss; CI is Clopper–Pearson."""
    decided = [i for i in judged if truth.get(i) in ("a", "b")]
    hits = sum(1 for i in decided if judged[i][0] == truth[i])
    ties = sum(1 for i in decided if judged[i][0] == "tie")
    rate = proportion(hits, len(decided)) if decided else None
    return {
        "n": len(judged),
        "n_decided": len(decided),
        "agree": hits,
        "judge_ties_on_decided": ties,
        "agreement": rate.rate if rate else None,
        "ci95": list(rate.ci95) if rate else [None, None],
    }


def fit_judge_weights(
    items_path: str | Path,
    label_specs: Sequence[str],
    pairwise: bool = False,
    model: str = "all-MiniLM-L6-v2",
    features: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Weights for the offline judge (or, with ``pairwise``, the offline pairwise judge)
    fitted on the readers' consensus."""
    from backtest.analysis.reading.items import read_items, read_pairs

    raters, _ = load_raters(label_specs, Path(items_path), None, pairwise=pairwise)
    if pairwise:
        from backtest.arena.fitted_pairwise import fit_pair_weights

        pairs = read_pairs(items_path)
        return fit_pair_weights([(p.item_id, *pair_context(p)) for p in pairs], pair_truth(raters), model=model)
    from backtest.judge.features import DOC_FEATURES, KNOWN_FEATURES
    from backtest.judge.fitted import fit_weights

    unknown = sorted(set(features or ()) - set(KNOWN_FEATURES))
    if unknown or features == ():
        raise BadInput(
            f"--features: unknown or none ({', '.join(unknown) or 'empty'}); known: {', '.join(KNOWN_FEATURES)}"
        )
    return fit_weights(read_items(items_path), truth_labels(raters), model=model, features=features or DOC_FEATURES)
