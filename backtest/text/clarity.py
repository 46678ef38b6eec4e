"""The form of a question, as numbers: what careful readers reward and penalise in a research question.

:func:`question_form` measures a question's wording — length, one question mark, an
interrogative opening, templated phrases ("the reported main result"), clauses lifted
from an abstract with their anaphora ("in addition, we find", "these detections"),
first person, named objects, molecules and quantities, specific terms, clause count —
as a row of :data:`FORM_FEATURES`. The fitted offline judges use it: a question that
cannot be understood on its own is rarely engaged by anything, and loses a pairwise
comparison to one that can.
"""

from __future__ import annotations

import re

import numpy as np

FORM_FEATURES = (
    "log_words",
    "too_long",
    "too_short",
    "one_question_mark",
    "starts_interrogative",
    "template_phrase",
    "lifted_clause",
    "anaphora",
    "first_person",
    "names_object",
    "names_quantity",
    "n_specific_terms",
    "n_clauses",
    "capital_ratio",
)
_INTERROGATIVE = re.compile(
    r"^(?:what|which|why|how|is|are|does|do|did|can|could|will|would|should|to what extent|"
    r"under what|in what|when|where|has|have)\b",
    re.I,
)
_TEMPLATE = re.compile(
    r"\b(?:main result|reported main|central conclusion|highly cited|influential finding|robust to independent|"
    r"hold under independent|new data confirm|follow-up work|future work|reproduce the reported|"
    r"further observations support|differing \w+ results)\b",
    re.I,
)
_LIFTED = re.compile(
    r"\b(?:in addition|in this (?:paper|work|study)|here we|we (?:find|show|present|report|obtain|propose)|"
    r"our (?:results|analysis|sample|model|findings)|finding that|the finding|the claim that)\b",
    re.I,
)
_ANAPHORA = re.compile(
    r"\b(?:these|those|this (?:sample|object|source|system|result|work|study|method|model)|"
    r"such (?:objects|sources|systems)|the latter|the former|the above)\b",
    re.I,
)
_MOLECULE = re.compile(r"\b(?:H2O|CO2|CO|CH4|NH3|HCN|TiO|VO|Na|K|He|H2|O2|O3|SO2|H2S|PH3|FeH|SiO|C2H2)\b")
_QUANTITY = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:%|K|M_?J|R_?J|M_?E|R_?E|AU|au|pc|kpc|Mpc|ppm|Gyr|Myr|days?|d|km/s|bar|dex|sigma|σ)\b"
)
_FIRST_PERSON = re.compile(r"\b(?:we|our|us)\b", re.I)
_CLAUSE = re.compile(r"[,;:]|\b(?:and|but|which|that|while|whereas)\b", re.I)


def question_form(question: str, full_text: str | None = None) -> list[float]:
    """The :data:`FORM_FEATURES` of one question (``full_text``: the question with its premise, for templates)."""
    from backtest.text.objects import find_objects
    from backtest.text.terms import specific_terms

    words = question.split()
    letters = [c for c in question if c.isalpha()]
    return [
        float(np.log1p(len(words))),
        float(len(words) > 45),
        float(len(words) < 7),
        float(question.count("?") == 1),
        float(bool(_INTERROGATIVE.match(question.strip()))),
        float(len(_TEMPLATE.findall(full_text or question))),
        float(len(_LIFTED.findall(question))),
        float(len(_ANAPHORA.findall(question))),
        float(len(_FIRST_PERSON.findall(question))),
        float(bool(find_objects(question)) or bool(_MOLECULE.search(question))),
        float(bool(_QUANTITY.search(question))),
        float(min(len(specific_terms(question)), 12)),
        float(len(_CLAUSE.findall(question))),
        sum(c.isupper() for c in letters) / max(1, len(letters)),
    ]
