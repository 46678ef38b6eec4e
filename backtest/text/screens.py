"""Screens for submitted text that steers a judge instead of asking a question (the freeze gates
``submitted_text`` and ``term_stuffing``, :mod:`backtest.submit.gates`).

* :func:`steering` finds what gives an LLM judge orders: a line break (a new "line" of the prompt), a JSON
  object (a verdict to copy), and instruction-like text: an order to ignore the rules, a role marker
  ("system:", "<|im_start|>"), words addressed to the grader, an order to give a label, a label name.
* :func:`term_list` and :func:`repeated_term_suffixes` find keyword stuffing: topic terms appended to a question
  so that more documents share its words. A question is a sentence; a term list is not: it is a long run of
  content words with no function word between them, a tail of short comma-separated items, a question made
  almost only of content words, or the same content-word suffix appended to many of a set's questions.

Function words are scikit-learn's English stop words. The thresholds leave a margin over every committed frozen
set (``tests/test_freeze_screens.py`` checks that they all still pass): the longest run of content words in
their 2,765 questions is 14 words, the lowest function-word share of a question of 12 words or more is 0.20,
and their longest shared suffix of content words (a generator's template) is 6 words with a share of 0.17.
What they do not catch: a few terms woven into a grammatical question, different terms on every question.
Rates grounded in careful reading are not moved by such text; judge-only rates can be, and say so.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

LINE_BREAK = re.compile(r"[\n\r\v\f\x85\u2028\u2029]")
JSON_OBJECT = re.compile(r"\{\s*\\?\"[^\"]{1,60}\\?\"\s*:")
_LABEL = (
    r"(?:answered|partially[ _]addressed|posed[ _]but[ _]open|not[ _]addressed|supported|refuted|weakened"
    r"|still[ _]plausible)"
)
INSTRUCTION = re.compile(
    "|".join(
        [
            # an order to drop the rules
            r"\b(?:ignore|disregard|forget|override|bypass)\b\W+(?:\w+\W+){0,3}?"
            r"(?:instructions?|rules?|prompts?|guidelines?|directions?|criteria|codebook|rubric|above|previous|prior)\b",
            # role markers and chat-template tokens
            r"(?:^|[.!?;]\s*)(?:system|assistant|developer|user)\s*:",
            r"<\|?\s*(?:system|assistant|user|im_start|im_end|endoftext)\s*\|?>",
            r"\[/?INST\]",
            r"#{2,}\s*(?:instruction|system|response)",
            # words addressed to the grader
            r"\byou\s+(?:are|must|should|will)\s+(?:now\s+)?(?:an?\s+|the\s+)?(?:judge|grader|evaluator|assistant|model|ai)\b",
            r"\bas\s+an?\s+(?:judge|grader|evaluator|ai|assistant)\b",
            r"\b(?:dear|attention|note\s+to(?:\s+the)?)\s+(?:judge|grader|evaluator|model|ai|assistant)\b",
            # an order to give a label, or a label's name as the judge writes it
            r"\b(?:answer|respond|reply|output|return|label|mark|classify|grade|rate|score)\b(?:\W+\w+){0,4}?\W+"
            r"(?:as|with|is|:)\W+" + _LABEL + r"\b",
            r"\b(?:partially_addressed|posed_but_open|not_addressed|still_plausible|not_applicable|premise_status)\b",
        ]
    ),
    re.IGNORECASE,
)

_WORD = re.compile(r"[A-Za-z0-9]+(?:[-.'][A-Za-z0-9]+)*")
MAX_TERM_RUN = 17  # content words in a row a question may hold (committed sets: at most 14)
MIN_FUNCTION_SHARE = 0.10  # of a question of SALAD_WORDS words or more (committed: at least 0.20)
SALAD_WORDS = 12
TAIL_ITEMS = 4  # short comma-separated items ending a question, its last not joined by "and"/"or"
TAIL_ITEMS_ANY = 6  # ... joined or not
TAIL_ITEM_WORDS = 3
SUFFIX_WORDS = 8  # a suffix this long shared by SUFFIX_QUESTIONS questions ...
SUFFIX_QUESTIONS = 3
SUFFIX_FUNCTION_SHARE = 0.15  # ... and made of content words (committed templates: 6 words, share 0.17)


@cache
def function_words() -> frozenset[str]:
    """English function words (scikit-learn's stop-word list)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def steering(text: str | None) -> list[str]:
    """What in ``text`` could give a judge orders, one short description each (empty when nothing does)."""
    if not text:
        return []
    found = []
    if LINE_BREAK.search(text):
        found.append("a line break")
    if match := JSON_OBJECT.search(text):
        found.append(f"a JSON object ({match.group(0)!r}…)")
    if match := INSTRUCTION.search(text):
        found.append(f"instruction-like text ({' '.join(match.group(0).split())!r})")
    return found


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def term_list(question: str) -> list[str]:
    """How ``question`` reads as a list of terms rather than a sentence, one description each (empty: it does
    not)."""
    words = _words(question)
    stop = function_words()
    found = []
    run = best = 0
    for word in words:
        run = 0 if word in stop else run + 1
        best = max(best, run)
    if best > MAX_TERM_RUN:
        found.append(f"{best} content words in a row with no function word between them (a term list)")
    if len(words) >= SALAD_WORDS:
        share = sum(w in stop for w in words) / len(words)
        if share < MIN_FUNCTION_SHARE:
            found.append(f"only {share:.0%} function words in {len(words)} (a list of terms, not a sentence)")
    items = [s.strip() for s in re.split(r"[,;]", question.strip().rstrip("?").strip())]
    tail = 0
    for item in reversed(items[1:]):
        if not 1 <= len(_words(item)) <= TAIL_ITEM_WORDS:
            break
        tail += 1
    joined = re.match(r"(?:and|or)\b", items[-1], re.IGNORECASE) is not None
    if tail >= TAIL_ITEMS_ANY or (tail >= TAIL_ITEMS and not joined):
        found.append(f"ends in a tail of {tail} comma-separated terms ({', '.join(items[-tail:])[:80]!r})")
    return found


def repeated_term_suffixes(questions: list[str]) -> dict[int, str]:
    """The questions (by index) that end in the same suffix of content words as at least SUFFIX_QUESTIONS - 1
    others: ``{index: suffix}``, the longest such suffix of each (SUFFIX_WORDS words or more, function words at
    most SUFFIX_FUNCTION_SHARE of them). A generator's template ends many questions the same way too, but in a
    phrase, not a list of terms."""
    stop = function_words()
    words = [_words(q) for q in questions]
    found: dict[int, str] = {}
    for n in range(SUFFIX_WORDS, max((len(w) for w in words), default=0) + 1):
        counts = Counter(tuple(w[-n:]) for w in words if len(w) > n)
        for suffix, k in counts.items():
            if k < SUFFIX_QUESTIONS or sum(t in stop for t in suffix) / n > SUFFIX_FUNCTION_SHARE:
                continue
            for i, w in enumerate(words):
                if len(w) > n and tuple(w[-n:]) == suffix:
                    found[i] = " ".join(suffix)
    return found
