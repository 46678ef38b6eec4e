"""Word-level text helpers shared by the judges, the clarity gate and the arena: specific content terms
(stop words and words every astronomy abstract uses removed, lightly stemmed) and sentence splitting."""

from __future__ import annotations

import re

#: Words too common in astronomy abstracts to signal engagement by themselves.
GENERIC_TERMS = frozenset(
    """
abstract analysis approach based case cases change characteriz characterization characterize compare comparison
constrain constraint current data dataset derive derived describe detail determine develop different discuss
distribution effect effects estimate evidence evolution explain explore factor field find finding first found
further general given high higher however identify impact important improve include including indicate
interpretation investigate issue key known large larger late latest level likely low lower main make mass
measure measured measurement method methods model modeled modeling models modelling new number observation
observational observations observe observed obtain paper parameter parameters particular perform physical play
possible predict prediction present previous previously probe process processes produce property properties
propose provide range rate rates recent region related relation relative report research result results
reveal role sample scale show signal significant similar simulation simulations small source sources
specific standard star stars studied studies study suggest survey system systems technique term test theory
three time two type understand understanding use used using value values various well whether work yet
astrophysical astronomical astronomy astrophysics universe object objects planet planets planetary galaxy galaxies
question questions answer answered premise future later does doe can could would should might what which
how why when where explain explained account remain remains mechanism mechanisms
atmosphere atmospheric set detect detection abundance telescope instrument emission light spectrum
year years event events ratio inner outer early order total average mean recent respect
""".split()
)

_STOP: frozenset[str] | None = None
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-+][A-Za-z0-9]+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def _stop_words() -> frozenset[str]:
    global _STOP
    if _STOP is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STOP = frozenset(ENGLISH_STOP_WORDS)
    return _STOP


def stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def specific_terms(text: str) -> set[str]:
    """The specific content terms of ``text``: lower-cased, stemmed, minus stop words and GENERIC_TERMS.

    Tokens that carry a digit or inner capitals (H2O, CO2, JWST, TRAPPIST-1) are kept
    whatever their length; other words need at least four letters.
    """
    stop = _stop_words()
    out = set()
    for tok in _TOKEN.findall(text):
        low = tok.lower()
        special = any(c.isdigit() for c in tok) or sum(c.isupper() for c in tok) >= 2
        if not special and (len(low) < 4 or low in stop):
            continue
        root = stem(low)
        if root in GENERIC_TERMS or low in GENERIC_TERMS:
            continue
        out.add(root)
    return out


def split_sentences(text: str) -> list[str]:
    """Split an abstract into sentences (a simple, deterministic rule; never empty for non-empty text)."""
    parts = [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]
    return parts or ([text.strip()] if text.strip() else [])
