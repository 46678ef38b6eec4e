"""Features of a (question, shown document) pair for the fitted offline judge.

Each document shown with a question becomes one row of numbers that say how closely it
bears on *this* question — not on its topic. Similarities come from the dense model;
the rest are counts over the question's specific terms (:func:`~backtest.judge.offline.specific_terms`),
the terms that are rare among the documents shown with it (a term every document shares
is the topic, not the test), catalogued objects, numbers, cue phrases in the
document's sentences most similar to the question, and the question's own form
(:func:`backtest.clarity.question_form`: a question that cannot be understood on its own
is rarely engaged by anything).

:func:`document_features` is deterministic: same question and documents, same matrix.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from ..clarity import FORM_FEATURES, question_form
from ..records import Question, RetrievedDocument
from .offline import LEXICONS, _Lexicon, specific_terms, split_sentences

#: the feature names, in column order (a weights file lists them and must match)
DOC_FEATURES = (
    "doc_sim", "title_sim", "sent_max", "sent_second", "premise_sim", "sim_minus_item_mean", "sim_minus_item_max",
    "inv_rank", "n_shared", "coverage", "n_shared_rare", "rare_coverage", "n_shared_bigrams", "question_has_objects",
    "object_match", "object_miss", "number_match", "cue_resolution", "cue_open_question", "cue_support", "cue_refute",
    "cue_weaken", "cue_tentative", *(f"q_{name}" for name in FORM_FEATURES),
)
_NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:\.\d+)?(?![A-Za-z])")
_LEXICON: _Lexicon | None = None


def _lexicon() -> _Lexicon:
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = _Lexicon(LEXICONS)
    return _LEXICON


def question_text(question: Question) -> str:
    """The question plus its premise or hypothesis, as the judge reads it."""
    parts = [question.question.strip()]
    extra = question.premise or question.hypothesis
    if extra:
        parts.append(extra.strip())
    return " ".join(parts)


def _bigrams(text: str) -> set[tuple[str, str]]:
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9-]+", text)]
    terms = specific_terms(text)
    return {(a, b) for a, b in zip(words, words[1:]) if a.rstrip("s") in terms or b.rstrip("s") in terms
            or a in terms or b in terms}


def document_features(question: Question, documents: Sequence[RetrievedDocument], model: str,
                      cue_sentences: int = 2) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """One row of :data:`DOC_FEATURES` per document, and per document the shared terms and cues (for rationales)."""
    from ..embed import embed_texts
    from ..objects import find_objects

    n = len(documents)
    if n == 0:
        return np.zeros((0, len(DOC_FEATURES))), []
    qtext = question_text(question)
    premise = (question.premise or question.hypothesis or "").strip()
    doc_texts = [f"{d.title}. {d.abstract}".strip() for d in documents]
    sentences = [split_sentences(d.abstract) or [d.title] for d in documents]
    flat = [s for ss in sentences for s in ss]
    texts = [qtext, premise or qtext] + doc_texts + [d.title or "." for d in documents] + flat
    vectors = embed_texts(texts, model=model)
    qv, pv = vectors[0], vectors[1]
    dv, tv, sv = vectors[2:2 + n], vectors[2 + n:2 + 2 * n], vectors[2 + 2 * n:]
    doc_sim, title_sim = dv @ qv, tv @ qv
    premise_sim = dv @ pv if premise else np.zeros(n)
    q_terms = specific_terms(qtext)
    doc_terms = [specific_terms(t) for t in doc_texts]
    df = {t: sum(1 for dt in doc_terms if t in dt) for t in q_terms}
    rare = {t for t in q_terms if df[t] <= max(1, n // 4)}
    q_bigrams = _bigrams(qtext)
    q_objects = set(find_objects(qtext))
    q_numbers = set(_NUMBER.findall(question.question))
    lex = _lexicon()
    form = question_form(question.question, qtext)  # the question's wording: the same on every document's row
    rows, notes = [], []
    offset = 0
    for i, doc in enumerate(documents):
        k = len(sentences[i])
        sims = sv[offset:offset + k] @ qv
        offset += k
        order = sorted(range(k), key=lambda j: (-float(sims[j]), j))
        cue_text = " ".join(sentences[i][j] for j in order[:cue_sentences])
        cues = {name: lex.find(name, cue_text) for name in LEXICONS}
        shared = q_terms & doc_terms[i]
        shared_rare = rare & doc_terms[i]
        objects = q_objects & set(find_objects(doc_texts[i]))
        numbers = q_numbers & set(_NUMBER.findall(doc_texts[i]))
        rows.append([
            float(doc_sim[i]), float(title_sim[i]), float(sims[order[0]]), float(sims[order[1]]) if k > 1 else float(sims[order[0]]),
            float(premise_sim[i]), float(doc_sim[i] - doc_sim.mean()), float(doc_sim[i] - doc_sim.max()),
            1.0 / (i + 1), float(len(shared)), len(shared) / max(1, len(q_terms)), float(len(shared_rare)),
            len(shared_rare) / max(1, len(rare)), float(len(q_bigrams & _bigrams(doc_texts[i]))), float(bool(q_objects)),
            float(bool(objects)), float(bool(q_objects) and not objects), float(len(numbers)),
            *(float(len(cues[name])) for name in ("resolution", "open_question", "support", "refute", "weaken", "tentative")),
            *form,
        ])
        notes.append({"id": doc.id, "shared": sorted(shared), "rare": sorted(shared_rare), "objects": sorted(objects),
                      "cues": cues})
    return np.asarray(rows, dtype=float), notes
