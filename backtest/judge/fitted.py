"""The ``offline`` judge (v2): small logistic models over document features, fitted on careful reading.

Why: the cue-and-similarity rules of ``offline-cues-v1`` call most topic overlap
"engagement" (kappa about 0.1 against careful reading). This judge learns from a
labelled development set what careful readers count as engagement.

How it decides, per question (all arithmetic is numpy on the committed weights, so
the same input gives the same labels on every machine):

1. **Does a document engage the question?** Every shown document gets the features of
   :mod:`backtest.judge.features`; a logistic model (``engage``), fitted on documents
   readers cited (positives) and documents of questions they found not addressed
   (negatives), gives each a probability. The question is engaged when the best
   probability reaches the fitted threshold; the documents above it are the evidence
   (at most ``max_evidence``, the best first).
2. **Outcome** of an engaged question (answered / partially_addressed /
   posed_but_open): a multinomial logistic model over the evidence's pooled features;
   labels seen too rarely in the development set to fit are never predicted, and with
   fewer than two learnable labels the most common engaged outcome is used.
3. **Premise status**: the same kind of model over the pooled features plus whether
   the question is engaged and states a premise; same rule for rare labels.
4. **Abstention.** When the best probability is within ``review_margin`` of the
   threshold the judgment is flagged ``needs_review`` (it still carries a label).

The weights file (``weights/offline-v3.json``, versioned) records the features, the
scaler, the coefficients, the threshold, and the sha256 of every training item, so
``judge validate`` never scores the judge on items it was fitted to: it validates the shipped
weights as-is on the items they never saw and sets the rest aside, or, asked to
(``--cross-validate``), refits per fold (:meth:`FittedJudge.cross_validate`). The default weights are
fitted on every labelled outcome set (``scripts/judge_system_study.py``; its card's headline is nested
leave-one-system-out agreement); ``weights/offline-v2.json``, fitted on ``outcomes-v1`` only, judged the
committed release runs and is kept for their replay (``judges/offline-v2.toml``).
``backtest judge fit`` refits on a user's own labelled set (:func:`fit_weights`).
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backtest.core.errors import BadInput
from backtest.core.records import ENGAGED_OUTCOMES, JudgeInfo, Judgment, Question, RetrievedDocument
from backtest.core.seal import canonical_json, sha256_json, sha256_text
from backtest.judge.constraints import to_judgment
from backtest.judge.features import DOC_FEATURES, KNOWN_FEATURES, document_features
from backtest.judge.protocol import Judge

PROTOCOL = "offline-fit-v2"
WEIGHTS_FORMAT = "offline-fit-v2-weights"  # what a weights file says it is (checked on load)
WEIGHTS_VERSION = "1"
DEFAULT_WEIGHTS = Path(__file__).with_name("weights") / "offline-v3.json"
MIN_CLASS = 3  # a label needs this many training examples to be predicted


def item_hash(question: Question, documents: Sequence[RetrievedDocument]) -> str:
    """sha256 of what the judge reads of one item (question text, premise, document ids and text)."""
    return sha256_text(
        canonical_json(
            {
                "q": question.question,
                "p": question.premise or question.hypothesis or "",
                "d": [[d.id, d.title, d.abstract] for d in documents],
            }
        )
    )


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return out


def _linear(model: dict[str, Any], x: np.ndarray) -> np.ndarray:
    z = (x - np.asarray(model["mean"])) / np.asarray(model["scale"])
    out: np.ndarray = z @ np.asarray(model["coef"]).T + np.asarray(model["intercept"])
    return out


def pooled(features: np.ndarray, probs: np.ndarray, engaged: np.ndarray) -> np.ndarray:
    """Item-level features: the best document's row, the mean over engaging documents, and counts."""
    best = int(np.argmax(probs)) if len(probs) else 0
    top = features[best] if len(features) else np.zeros(features.shape[1])
    sel = features[engaged] if engaged.any() else features[best : best + 1]
    mean = sel.mean(axis=0) if len(sel) else np.zeros(features.shape[1])
    return np.concatenate([top, mean, [float(probs.max()) if len(probs) else 0.0, float(engaged.sum())]])


def item_features(pool: np.ndarray, is_engaged: bool, has_premise: bool) -> np.ndarray:
    """The premise model's input: the pooled features plus engagement and premise flags."""
    return np.concatenate([pool, [float(is_engaged), float(has_premise)]])


def read_weights(path: str | Path) -> dict[str, Any]:
    """A fitted judge's weights file as a dict (BadInput naming it when missing or not JSON)."""
    try:
        weights: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
        return weights
    except FileNotFoundError:
        raise BadInput(f"{path}: no such weights file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: not a JSON weights file ({exc})") from None


def check_weights(
    weights: dict[str, Any], path: Path | None, fmt: str, version: str, features: Sequence[str], exact: bool = True
) -> None:
    """Refuse weights of another format or version, or fitted on features this build does not compute
    (``exact``: the weights must use exactly ``features``, in order; else any of them)."""
    if weights.get("schema_version") != version or weights.get("format") != fmt:
        raise BadInput(f"{path or 'weights'}: not an {fmt} file of schema_version {version}")
    used = tuple(weights.get("features", ()))
    if (used != tuple(features)) if exact else (not used or not set(used) <= set(features)):
        raise BadInput(f"{path or 'weights'}: its features {list(used)} do not match this build's {list(features)}")


class FittedJudge(Judge):
    """The fitted offline judge. See the module docstring."""

    name = "offline"

    def __init__(self, weights: dict[str, Any], weights_path: Path | None = None):
        check_weights(weights, weights_path, WEIGHTS_FORMAT, WEIGHTS_VERSION, KNOWN_FEATURES, exact=False)
        self.weights = weights
        self.features = tuple(weights["features"])
        self.weights_path = weights_path
        self._calls = 0
        self.model = str(weights["model"])

    @classmethod
    def from_file(cls, path: Path = DEFAULT_WEIGHTS) -> "FittedJudge":
        """Load a weights file (BadInput naming it when missing or malformed)."""
        return cls(read_weights(path), Path(path))

    @cached_property
    def config_sha256(self) -> str:
        """sha256 of the weights (which name the embedding model) and the model's fingerprint."""
        from backtest.text.embed import model_fingerprint

        return sha256_json({"weights": self.weights, "model": model_fingerprint(self.model)})

    @property
    def prompt_sha256(self) -> str:
        from backtest.judge.offline import LEXICONS
        from backtest.text.terms import GENERIC_TERMS

        return sha256_json(
            {
                "protocol": PROTOCOL,
                "features": list(self.features),
                "lexicons": LEXICONS,
                "generic": sorted(GENERIC_TERMS),
            }
        )

    def info(self) -> JudgeInfo:
        """Name, model, protocol, feature-set and weights hashes."""
        return JudgeInfo(
            name=self.name,
            model=self.model,
            protocol=PROTOCOL,
            prompt_sha256=self.prompt_sha256,
            config_sha256=self.config_sha256,
        )

    def settings(self) -> dict[str, Any]:
        """What changes the labels: protocol, model, hashes of features and weights."""
        return {
            "kind": "offline",
            "protocol": PROTOCOL,
            "model": self.model,
            "prompt_sha256": self.prompt_sha256,
            "config_sha256": self.config_sha256,
        }

    def stats(self) -> dict[str, Any]:
        """Questions judged so far (no network, no tokens)."""
        return {"judged": self._calls, "http_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0}

    # ----------------------------------------------------------------- judging

    def decide(
        self, question: Question, features: np.ndarray, notes: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], list[str]]:
        """The raw answer from a question's document features, and any needs_review reasons."""
        w = self.weights
        probs = _sigmoid(_linear(w["engage"], features)).ravel() if len(features) else np.zeros(0)
        tau = float(w["engage"]["threshold"])
        engaged = probs >= tau
        has_premise = bool(question.premise or question.hypothesis)
        pool = pooled(features, probs, engaged)
        best = float(probs.max()) if len(probs) else 0.0
        reasons = []
        if abs(best - tau) < float(w.get("review_margin", 0.0)):
            reasons.append(f"uncertain: best engagement probability {best:.2f} is near the threshold {tau:.2f}")
        premise = _predict(w["premise"], item_features(pool, bool(engaged.any()), has_premise))
        if not engaged.any():
            return (
                {
                    "outcome": "not_addressed",
                    "premise_status": premise,
                    "evidence": [],
                    "rationale": f"offline judge (fitted): no document engages the question (best engagement "
                    f"probability {best:.2f} < {tau:.2f}).",
                },
                reasons,
            )
        outcome = _predict(w["outcome"], pool)
        order = [i for i in np.argsort(-probs, kind="stable") if engaged[i]][: int(w.get("max_evidence", 5))]
        evidence = []
        for i in order:
            note = notes[i]
            terms = ", ".join((note["objects"] + [t for t in note["shared"] if t not in note["objects"]])[:6])
            cues = sorted(
                {
                    c
                    for name in ("resolution", "open_question", "refute", "weaken", "support")
                    for c in note["cues"][name]
                }
            )
            evidence.append(
                {
                    "id": note["id"],
                    "relevance": f"engagement probability {probs[i]:.2f}; shared terms: {terms}"
                    + (f"; cues: {', '.join(cues[:4])}" if cues else ""),
                }
            )
        rationale = (
            f"offline judge (fitted): {int(engaged.sum())} of {len(probs)} documents engage the question "
            f"(best probability {best:.2f}, threshold {tau:.2f}); outcome and premise from the fitted models."
        )
        return {"outcome": outcome, "premise_status": premise, "evidence": evidence, "rationale": rationale}, reasons

    def judge(self, question: Question, documents: list[RetrievedDocument]) -> Judgment:
        """Label one question from the documents shown (deterministic)."""
        self._calls += 1
        features, notes = document_features(question, documents, self.model, self.features)
        answer, reasons = self.decide(question, features, notes)
        return to_judgment(
            question.question_id, answer, [d.id for d in documents], self.info(), {}, extra_reasons=reasons
        )

    # ----------------------------------------------------------------- validation

    def trained_on(self, items: Sequence[Any]) -> list[bool]:
        """Per item (AnnotationItem): whether it was in this judge's training set."""
        trained = set(self.weights.get("trained_on", {}).get("item_sha256", []))
        return [item_hash(it.question, it.retrieved()) in trained for it in items]

    def training_overlap(self, items: Sequence[Any]) -> bool:
        """True when any of ``items`` (AnnotationItems) was in this judge's training set."""
        return any(self.trained_on(items))

    def cross_validate(
        self, items: Sequence[Any], truth: dict[str, Any], folds: int = 5, seed: int = 0
    ) -> list[Judgment]:
        """Judgments of ``items``, each by a judge refitted without the fold it is in (``truth``: item id → Label)."""
        rows = [(it, *document_features(it.question, it.retrieved(), self.model, self.features)) for it in items]
        return self.cross_validate_rows(rows, truth, folds=folds, seed=seed)

    def cross_validate_rows(
        self,
        rows: Sequence[tuple[Any, np.ndarray, list[dict[str, Any]]]],
        truth: dict[str, Any],
        folds: int = 5,
        seed: int = 0,
    ) -> list[Judgment]:
        """:meth:`cross_validate` from (item, this judge's document features, notes) rows already computed."""
        labelled = [k for k, (it, _, _) in enumerate(rows) if it.item_id in truth]
        fold_of = _folds([truth[rows[k][0].item_id] for k in labelled], folds, seed)
        out: dict[int, Judgment] = {}
        params = self.weights.get("fit", {})
        for f in range(folds):
            train = [labelled[j] for j in range(len(labelled)) if fold_of[j] != f]
            test = [labelled[j] for j in range(len(labelled)) if fold_of[j] == f]
            weights = fit_from_rows(
                [(rows[k][0], rows[k][1], truth[rows[k][0].item_id]) for k in train],
                self.model,
                features=self.features,
                **params,
            )
            judge = FittedJudge(weights)
            for k in test:
                it, feats, notes = rows[k]
                answer, reasons = judge.decide(it.question, feats, notes)
                out[k] = to_judgment(
                    it.question.question_id,
                    answer,
                    [d.id for d in it.documents],
                    self.info(),
                    {},
                    extra_reasons=reasons,
                )
        for k, (it, feats, notes) in enumerate(rows):
            if k not in out:  # unlabelled items: the full judge
                answer, reasons = self.decide(it.question, feats, notes)
                out[k] = to_judgment(
                    it.question.question_id,
                    answer,
                    [d.id for d in it.documents],
                    self.info(),
                    {},
                    extra_reasons=reasons,
                )
        return [out[k] for k in range(len(rows))]


def _folds(labels: Sequence[Any], folds: int, seed: int) -> list[int]:
    """Fold index per item, stratified by engaged vs not (scikit-learn StratifiedKFold, shuffled by seed)."""
    from sklearn.model_selection import StratifiedKFold

    y = [lab.outcome in ENGAGED_OUTCOMES for lab in labels]
    if len(y) < folds or min(sum(y), len(y) - sum(y)) < folds:
        raise BadInput(f"cross-validation needs at least {folds} engaged and {folds} not-addressed items")
    fold_of = [0] * len(y)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for f, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
        for i in test:
            fold_of[i] = f
    return fold_of


def _predict(model: dict[str, Any], x: np.ndarray) -> str:
    classes = model["classes"]
    if len(classes) == 1:
        return str(classes[0])
    scores = _linear(model, x[None, :]).ravel()
    if len(classes) == 2:  # binary logistic: one score for classes[1]
        return str(classes[1] if scores[0] >= 0 else classes[0])
    return str(classes[int(np.argmax(scores))])


def _fit_logistic(
    x: np.ndarray, y: Sequence[str], c: float, balanced: bool = False, default: str = "not_applicable"
) -> dict[str, Any]:
    """A standardised logistic regression (scikit-learn, lbfgs: deterministic) as plain lists.

    Labels with fewer than MIN_CLASS examples are left out; with fewer than two left, the
    model is a constant: the most common label (``default`` when there is none)."""
    from sklearn.linear_model import LogisticRegression

    counts = {lab: list(y).count(lab) for lab in sorted(set(y))}
    keep = [lab for lab, k in counts.items() if k >= MIN_CLASS]
    if len(keep) < 2:
        majority = max(counts, key=lambda lab: (counts[lab], lab)) if counts else default
        return {"classes": [majority], "counts": counts}
    mask = np.array([lab in keep for lab in y])
    xs, ys = x[mask], [lab for lab in y if lab in keep]
    mean, scale = xs.mean(axis=0), xs.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced" if balanced else None)
    model.fit((xs - mean) / scale, ys)
    return {
        "classes": [str(k) for k in model.classes_],
        "mean": mean.round(8).tolist(),
        "scale": scale.round(8).tolist(),
        "coef": model.coef_.round(8).tolist(),
        "intercept": model.intercept_.round(8).tolist(),
        "counts": counts,
    }


def fit_from_rows(
    rows: Sequence[tuple[Any, np.ndarray, Any]],
    model: str,
    c_engage: float = 0.5,
    c_outcome: float = 0.5,
    c_premise: float = 0.5,
    review_margin: float = 0.1,
    max_evidence: int = 5,
    features: Sequence[str] = DOC_FEATURES,
) -> dict[str, Any]:
    """Fit the three models from (item, document features, truth label) rows; return the weights dict.

    Documents a reader cited are positives; documents of a not_addressed item are
    negatives; uncited documents of an engaged item are left out (a reader cites the
    clearest evidence, not every engaging document). The threshold maximises Cohen's
    kappa of engaged vs not on the training items.
    """
    from backtest.core.stats import cohen_kappa

    xs, ys = [], []
    for item, feats, lab in rows:
        engaged = lab.outcome in ENGAGED_OUTCOMES
        for doc, f in zip(item.documents, feats):
            if not engaged:
                xs.append(f)
                ys.append("0")
            elif doc.id in lab.cited:
                xs.append(f)
                ys.append("1")
    if len(set(ys)) < 2:
        raise BadInput(
            "fitting needs items readers found engaged (with cited documents) and items they found not addressed"
        )
    engage = _fit_logistic(np.asarray(xs), ys, c_engage, balanced=True)
    probs = [_sigmoid(_linear(engage, f)).ravel() if len(f) else np.zeros(0) for _, f, _ in rows]
    truth = [lab.outcome in ENGAGED_OUTCOMES for _, _, lab in rows]
    best = [float(p.max()) if len(p) else 0.0 for p in probs]
    candidates = sorted(set(round(b, 4) for b in best))
    tau = max(
        candidates, key=lambda t: (np.nan_to_num(cohen_kappa(truth, [b >= t for b in best]), nan=-1.0), -abs(t - 0.5))
    )
    pools, outcomes, premise_x, premises = [], [], [], []
    for (item, f, lab), p in zip(rows, probs):
        eng = p >= tau
        pool = pooled(f, p, eng)
        if lab.outcome in ENGAGED_OUTCOMES:
            pools.append(pool)
            outcomes.append(lab.outcome)
        premise_x.append(item_features(pool, bool(eng.any()), bool(item.question.premise or item.question.hypothesis)))
        premises.append(lab.premise_status)
    width = len(features) * 2 + 2
    outcome = _fit_logistic(
        np.asarray(pools) if pools else np.zeros((0, width)), outcomes, c_outcome, default="partially_addressed"
    )
    premise = _fit_logistic(np.asarray(premise_x), premises, c_premise)
    return {
        "schema_version": WEIGHTS_VERSION,
        "format": WEIGHTS_FORMAT,
        "model": model,
        "features": list(features),
        "engage": {**engage, "threshold": tau},
        "outcome": outcome,
        "premise": premise,
        "review_margin": review_margin,
        "max_evidence": max_evidence,
        "fit": {
            "c_engage": c_engage,
            "c_outcome": c_outcome,
            "c_premise": c_premise,
            "review_margin": review_margin,
            "max_evidence": max_evidence,
        },
        "trained_on": {
            "n_items": len(rows),
            "n_documents": len(ys),
            "n_positive_documents": ys.count("1"),
            "item_sha256": sorted(item_hash(it.question, it.retrieved()) for it, _, _ in rows),
        },
    }


def fit_weights(
    items: Sequence[Any],
    truth: dict[str, Any],
    model: str = "all-MiniLM-L6-v2",
    features: Sequence[str] = DOC_FEATURES,
    **params: Any,
) -> dict[str, Any]:
    """Fit weights on labelled AnnotationItems (``truth``: item id → Label); items without a label are skipped."""
    rows = [
        (it, document_features(it.question, it.retrieved(), model, features)[0], truth[it.item_id])
        for it in items
        if it.item_id in truth
    ]
    return fit_from_rows(rows, model, features=features, **params)


def make_fitted(config: dict[str, Any], config_path: Path | None, ws: Any) -> FittedJudge:
    """The default offline judge from the packaged weights, or from ``weights = "PATH"`` in a judges/*.toml config."""
    unknown = sorted(set(config) - {"kind", "name", "description", "weights"})
    if unknown:
        raise BadInput(f"{config_path}: unknown offline judge setting(s) {', '.join(unknown)}")
    path = DEFAULT_WEIGHTS
    if config.get("weights"):
        path = Path(config["weights"])
        if not path.is_absolute() and config_path is not None:
            path = config_path.parent / path
    judge = FittedJudge.from_file(path)
    if config.get("name"):
        judge.name = str(config["name"])
    judge.config_path = config_path
    return judge
