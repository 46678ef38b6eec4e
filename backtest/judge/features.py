"""Features of a (question, shown document) pair for the fitted offline judge.

Each document shown with a question becomes one row of numbers that say how closely it
bears on *this* question — its claim and the phrases that carry its test — not on its
topic: the dense model's similarity between the document and the question's claim, and
the share of the question's specific two-word phrases the document uses too.

:func:`document_features` is deterministic: same question and documents, same matrix.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from backtest.core.records import Question, RetrievedDocument
from backtest.judge.offline import LEXICONS, _Lexicon
from backtest.text.terms import specific_terms

#: every feature this build computes, by name; a weights file lists the ones its models use, in column order.
KNOWN_FEATURES = (
    "claim_sim",
    "bigram_coverage",
    "claim_sim_margin",
    "claim_sim_z",
    "question_sim",
    "title_sim",
    "term_coverage",
    "bigram_matches",
    "term_matches",
)
#: the features of ``weights/offline-v2.json`` and of ``judge fit`` unless told otherwise. Chosen on the labelled
#: development set (judges/validation/README.md) by cross-validated agreement, from a wider set that also held
#: sentence-level similarity, shared-term counts, objects, numbers, cue counts and the question's form
#: (``scripts/judge_feature_study.py``; judges/validation/feature-study.md). The default weights,
#: ``offline-v3.json``, name their own, chosen by leave-one-system-out on every labelled set
#: (``scripts/judge_system_study.py``; judges/validation/system-study.md).
DOC_FEATURES = ("claim_sim", "bigram_coverage")
_LEXICON: _Lexicon | None = None


def _lexicon() -> _Lexicon:
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = _Lexicon(LEXICONS)
    return _LEXICON


def claim_text(question: Question) -> str:
    """What a document must bear on: the question's premise or hypothesis when it states one, else the question."""
    return (question.premise or question.hypothesis or question.question).strip()


def question_text(question: Question) -> str:
    """The question plus its premise or hypothesis, as the judge reads it."""
    parts = [question.question.strip()]
    extra = question.premise or question.hypothesis
    if extra:
        parts.append(extra.strip())
    return " ".join(parts)


def bigrams(text: str) -> set[tuple[str, str]]:
    """Adjacent word pairs of ``text`` (lower-cased) in which at least one word is a specific term."""
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9-]+", text)]
    terms = specific_terms(text)
    return {
        (a, b)
        for a, b in zip(words, words[1:])
        if a in terms or b in terms or a.rstrip("s") in terms or b.rstrip("s") in terms
    }


def document_features(
    question: Question, documents: Sequence[RetrievedDocument], model: str, names: Sequence[str] = DOC_FEATURES
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """One row of the features ``names`` per document, and per document the shared terms and cues (for rationales).

    ``claim_sim``: cosine between the document (title + abstract) and the question's claim
    (:func:`claim_text`); ``bigram_coverage``: the share of the question's specific bigrams
    (question and premise) that the document also uses — a phrase such as "water abundance"
    or "field line resonances" carries the test, where single words carry only the topic;
    ``claim_sim_margin``: the document's ``claim_sim`` minus the second-highest among the
    documents shown — documents retrieved for a question all share its topic, so a document
    that engages its claim stands out from the rest (the best one leads by this margin, the
    others are at or below zero); ``claim_sim_z``: the same standing as a z-score among the
    documents shown; ``question_sim``: cosine between the document and the question with its
    premise (:func:`question_text`); ``title_sim``: cosine between the document's title alone
    and the claim (a title states what a paper is about); ``term_coverage``: the share of the
    question's specific terms the document uses; ``bigram_matches`` and ``term_matches``: how many of them the
    document uses (log(1 + count)): a share of a generic question's handful of phrases is easily high by topic
    alone, a count of shared specific phrases is not.
    Each text is embedded in a batch of its own question's texts, so a question's features
    depend on that question alone (a resumed run gets the same numbers).
    """
    from backtest.text.embed import embed_texts
    from backtest.text.objects import find_objects

    unknown = [n for n in names if n not in KNOWN_FEATURES]
    if unknown:
        raise ValueError(f"unknown document feature(s) {unknown}; known: {', '.join(KNOWN_FEATURES)}")
    n = len(documents)
    if n == 0:
        return np.zeros((0, len(names))), []
    doc_texts = [f"{d.title}. {d.abstract}".strip() for d in documents]
    qtext = question_text(question)
    # the batch holds only what ``names`` need, so the default features' vectors never depend on the others
    want_q, want_title = "question_sim" in names, "title_sim" in names
    texts = (
        [claim_text(question)]
        + doc_texts
        + ([qtext] if want_q else [])
        + ([d.title for d in documents] if want_title else [])
    )
    vectors = embed_texts(texts, model=model)
    docs_v = vectors[1 : n + 1]
    sims = docs_v @ vectors[0]
    q_sims = docs_v @ vectors[n + 1] if want_q else np.zeros(n)
    title_sims = vectors[len(texts) - n :] @ vectors[0] if want_title else np.zeros(n)
    second = float(np.sort(sims)[-2]) if n > 1 else float(sims[0])
    spread = float(sims.std()) or 1.0
    q_bigrams = bigrams(qtext)
    q_terms = specific_terms(qtext)
    q_objects = set(find_objects(qtext))
    lex = _lexicon()
    rows, notes = [], []
    for i, doc in enumerate(documents):
        doc_terms = specific_terms(doc_texts[i])
        values = {
            "claim_sim": float(sims[i]),
            "claim_sim_margin": float(sims[i]) - second,
            "claim_sim_z": (float(sims[i]) - float(sims.mean())) / spread,
            "question_sim": float(q_sims[i]),
            "title_sim": float(title_sims[i]),
            "bigram_coverage": len(q_bigrams & bigrams(doc_texts[i])) / max(1, len(q_bigrams)),
            "term_coverage": len(q_terms & doc_terms) / max(1, len(q_terms)),
            "bigram_matches": math.log1p(len(q_bigrams & bigrams(doc_texts[i]))),
            "term_matches": math.log1p(len(q_terms & doc_terms)),
        }
        rows.append([values[name] for name in names])
        notes.append(
            {
                "id": doc.id,
                "shared": sorted(q_terms & doc_terms),
                "objects": sorted(q_objects & set(find_objects(doc_texts[i]))),
                "cues": {name: lex.find(name, doc.abstract) for name in LEXICONS},
            }
        )
    return np.asarray(rows, dtype=float), notes
