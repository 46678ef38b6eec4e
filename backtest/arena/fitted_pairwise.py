"""The ``offline`` pairwise judge (v2): a logistic model over question-quality features, fitted on careful reading.

The v1 judge (``offline-rubric-v1``) adds up surface features — named objects,
quantities, two cited papers — and prefers whatever has more of them, which careful
readers do not (it agreed with them on 33% of decided pairs). This one scores each
question by features of what readers reward — an intelligible, self-contained question
that names what it is about, grounded in the context, with one testable ask — and of
what they penalise (templated wording, sentences lifted from an abstract with their
anaphora, run-on length). Surface counts are left out — naming objects, citing more
papers (the guide: they do not make a question better) and the share of capitals (a proxy
for acronyms): with them the model learnt them anyway and agreed less with the readers
under 5-fold cross-validation on the same pairs (68% of decided pairs, mean over fold
seeds 0–9, against 71% without; a choice made on that set, so optimistic). A logistic
model on the *difference* of the two questions' features, without intercept, gives
P(a better); it is antisymmetric by construction, so swapping the order flips the verdict
and position cannot matter. Inside ``tie_margin`` of 0.5 the verdict is a tie.

Weights (``weights/pairwise-v2.json``) are fitted by :func:`fit_pair_weights` on
readers' verdicts; :meth:`FittedPairwiseJudge.cross_validate` refits per fold so a
validation on the training pairs is never in-sample.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backtest.arena.contexts import ArenaContext, ArenaOutput
from backtest.arena.pairwise import PairVerdict, PairwiseJudge, PairwiseJudgeInfo
from backtest.core.errors import BadInput
from backtest.core.seal import canonical_json, sha256_json, sha256_text
from backtest.judge.fitted import check_weights, read_weights
from backtest.text.clarity import FORM_FEATURES

PROTOCOL = "offline-pairwise-fit-v2"
WEIGHTS_FORMAT = "offline-pairwise-fit-v2-weights"  # what a weights file says it is (checked on load)
WEIGHTS_VERSION = "1"
DEFAULT_WEIGHTS = Path(__file__).resolve().parents[1] / "judge" / "weights" / "pairwise-v2.json"

#: form features (:data:`~backtest.text.clarity.FORM_FEATURES`) not used: surface counts that the readers'
#: guide says do not make a question better (naming objects; the share of capitals, a proxy for acronyms)
SURFACE_FORM_FEATURES = ("names_object", "capital_ratio")
PAIR_FORM_FEATURES = tuple(f for f in FORM_FEATURES if f not in SURFACE_FORM_FEATURES)
QUESTION_FEATURES = (*PAIR_FORM_FEATURES, "grounding", "context_sim", "has_premise", "premise_sim")
#: one pair to judge: (id, context, output a, output b)
Pair = tuple[str, ArenaContext, ArenaOutput, ArenaOutput]


def _question_row(
    context: ArenaContext, out: ArenaOutput, ctx_vec: np.ndarray, vecs: dict[str, np.ndarray]
) -> list[float]:
    from backtest.text.clarity import question_form
    from backtest.text.terms import specific_terms

    question, _, rest = out.output.partition("\n")
    premise = rest.split(": ", 1)[1] if ": " in rest else ""
    terms = specific_terms(question)
    ctx_terms = specific_terms(context.text)
    qv = vecs[question]
    form = dict(zip(FORM_FEATURES, question_form(question, out.output)))
    return [
        *(form[f] for f in PAIR_FORM_FEATURES),
        len(terms & ctx_terms) / max(1, len(terms)),
        float(qv @ ctx_vec),
        float(bool(premise)),
        float(vecs[premise] @ qv) if premise else 0.0,
    ]


def pair_features(context: ArenaContext, a: ArenaOutput, b: ArenaOutput, model: str) -> tuple[np.ndarray, np.ndarray]:
    """The two questions' feature rows (:data:`QUESTION_FEATURES`) in their context."""
    from backtest.text.embed import embed_texts

    texts = [context.text]
    for out in (a, b):
        question, _, rest = out.output.partition("\n")
        texts.append(question)
        if ": " in rest:
            texts.append(rest.split(": ", 1)[1])
    unique = list(dict.fromkeys(texts))
    vectors = embed_texts(unique, model=model)
    vecs = dict(zip(unique, vectors))
    ctx_vec = vecs[context.text]
    return (np.asarray(_question_row(context, a, ctx_vec, vecs)), np.asarray(_question_row(context, b, ctx_vec, vecs)))


def pair_hash(context_text: str, a: str, b: str) -> str:
    """sha256 of one pair's text, order-free (for the training-set overlap check)."""
    return sha256_text(canonical_json({"c": context_text, "q": sorted([a, b])}))


class FittedPairwiseJudge(PairwiseJudge):
    """The fitted offline pairwise judge; see the module docstring."""

    name = "offline"

    def __init__(self, weights: dict[str, Any], weights_path: Path | None = None):
        check_weights(weights, weights_path, WEIGHTS_FORMAT, WEIGHTS_VERSION, QUESTION_FEATURES)
        self.weights = weights
        self.model = str(weights["model"])
        self.tie_margin = float(weights["tie_margin"])

    @classmethod
    def from_file(cls, path: Path = DEFAULT_WEIGHTS) -> "FittedPairwiseJudge":
        """Load a weights file (BadInput naming it when missing or malformed)."""
        return cls(read_weights(path), Path(path))

    @cached_property
    def config_sha256(self) -> str:
        return sha256_json(self.weights)

    def info(self) -> PairwiseJudgeInfo:
        """Name, kind, protocol and the weights' sha256."""
        return {
            "name": self.name,
            "kind": "offline",
            "protocol": PROTOCOL,
            "model": self.model,
            "config_sha256": self.config_sha256,
        }

    def probability(self, fa: np.ndarray, fb: np.ndarray) -> float:
        """P(a is the better question) from the two feature rows."""
        scale = np.asarray(self.weights["scale"])
        z = float(((fa - fb) / scale) @ np.asarray(self.weights["coef"]))
        return float(1.0 / (1.0 + np.exp(-z)))

    def verdict(self, p: float) -> str:
        if abs(p - 0.5) < self.tie_margin:
            return "A=B"
        if p > 0.5:
            return "A>>B" if p >= 0.85 else "A>B"
        return "B>>A" if p <= 0.15 else "B>A"

    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """Compare two questions by the fitted model."""
        fa, fb = pair_features(context, a, b, self.model)
        p = self.probability(fa, fb)
        return PairVerdict(verdict=self.verdict(p), rationale=f"offline pairwise (fitted): P(A better) = {p:.2f}")

    # ----------------------------------------------------------------- validation

    def trained_on(self, pairs: Sequence[Pair]) -> list[bool]:
        """Per pair: whether it was in the training set."""
        trained = set(self.weights.get("trained_on", {}).get("pair_sha256", []))
        return [pair_hash(ctx.text, a.output, b.output) in trained for _, ctx, a, b in pairs]

    def training_overlap(self, pairs: Sequence[Pair]) -> bool:
        """True when any of ``pairs`` was in the training set."""
        return any(self.trained_on(pairs))

    def cross_validate(
        self, pairs: Sequence[Pair], truth: dict[str, str], folds: int = 5, seed: int = 0
    ) -> list[tuple]:
        """(better, share_a, verdicts) per pair, each from a judge refitted without the pair's fold."""
        from sklearn.model_selection import KFold

        rows = [pair_features(ctx, a, b, self.model) for _, ctx, a, b in pairs]
        labelled = [k for k, p in enumerate(pairs) if truth.get(p[0]) in ("a", "b", "tie")]
        out: dict[int, tuple] = {}
        splitter = KFold(n_splits=folds, shuffle=True, random_state=seed)
        for train, test in splitter.split(np.zeros(len(labelled))):
            tr = [(pairs[labelled[j]], rows[labelled[j]], truth[pairs[labelled[j]][0]]) for j in train]
            judge = FittedPairwiseJudge(fit_from_pair_rows(tr, self.model, **self.weights.get("fit", {})))
            for j in test:
                k = labelled[j]
                out[k] = judge.decide_rows(*rows[k])
        for k in range(len(pairs)):
            if k not in out:
                out[k] = self.decide_rows(*rows[k])
        return [out[k] for k in range(len(pairs))]

    def decide_rows(self, fa: np.ndarray, fb: np.ndarray) -> tuple[str, float, list[str]]:
        """Both orders judged and folded, as :func:`backtest.analysis.reading.validate.pair_verdict` does."""
        from backtest.arena.pairwise import SHARES

        first, second = self.verdict(self.probability(fa, fb)), self.verdict(self.probability(fb, fa))
        share = (SHARES[first] + 1 - SHARES[second]) / 2
        return ("a" if share > 0.5 else "b" if share < 0.5 else "tie"), share, [first, second]


def fit_from_pair_rows(
    rows: Sequence[tuple[Pair, tuple[np.ndarray, np.ndarray], str]],
    model: str,
    c: float = 0.3,
    tie_margin: float = 0.05,
) -> dict[str, Any]:
    """Fit the antisymmetric logistic model on (pair, (fa, fb), better) rows; ties are left out of the fit.

    Each decided pair enters twice, as (a − b, a better) and (b − a, b better), so the fit
    has no position to learn.
    """
    from sklearn.linear_model import LogisticRegression

    diffs, ys = [], []
    for _, (fa, fb), better in rows:
        if better in ("a", "b"):
            d = fa - fb
            diffs += [d, -d]
            ys += [int(better == "a"), int(better == "b")]
    if len(set(ys)) < 2:
        raise BadInput("fitting a pairwise judge needs decided pairs (a or b)")
    x = np.asarray(diffs)
    scale = np.abs(x).mean(axis=0)
    scale[scale == 0] = 1.0
    lr = LogisticRegression(C=c, fit_intercept=False, max_iter=5000)
    lr.fit(x / scale, ys)
    return {
        "schema_version": WEIGHTS_VERSION,
        "format": WEIGHTS_FORMAT,
        "model": model,
        "features": list(QUESTION_FEATURES),
        "scale": scale.round(8).tolist(),
        "coef": lr.coef_.ravel().round(8).tolist(),
        "tie_margin": tie_margin,
        "fit": {"c": c, "tie_margin": tie_margin},
        "trained_on": {
            "n_pairs": len(rows),
            "n_decided": len(ys) // 2,
            "pair_sha256": sorted(pair_hash(p[1].text, p[2].output, p[3].output) for p, _, _ in rows),
        },
    }


def fit_pair_weights(
    pairs: Sequence[Pair], truth: dict[str, str], model: str = "all-MiniLM-L6-v2", **params: Any
) -> dict[str, Any]:
    """Fit weights on labelled pairs (``truth``: pair id → a/b/tie)."""
    rows = [(p, pair_features(p[1], p[2], p[3], model), truth[p[0]]) for p in pairs if p[0] in truth]
    return fit_from_pair_rows(rows, model, **params)


def make_fitted(config: dict[str, Any], path: Path | None) -> FittedPairwiseJudge:
    """The default ``offline`` pairwise judge from the packaged weights, or ``weights = "PATH"`` in a config."""
    weights = Path(config["weights"]) if config.get("weights") else DEFAULT_WEIGHTS
    if path is not None and not weights.is_absolute():
        weights = path.parent / weights
    return FittedPairwiseJudge.from_file(weights)
