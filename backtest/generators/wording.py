"""Self-contained wording for the baselines that lift sentences from abstracts.

A sentence lifted from an abstract often leans on its context: "these detections",
"our sample", "in addition, we obtain ...", "this work". Such a clause, wrapped in a
question template, cannot be understood on its own. The helpers here

* :func:`self_contained_clause` — remove lead-ins ("In addition,", "We find that") and
  refuse (``None``) a clause that still leans on its context: a demonstrative or an
  unnamed definite reference ("the sample", "the sources"), first person, a pronoun
  opening, a connective that points back ("thus", "moreover");
* :data:`UNRESOLVED` — the fixed list of such anaphors, one regular expression (the tests
  assert that no baseline question matches it);
* :func:`subject_of` — what a question is about when its clause names no catalogued
  object: the object(s) of the source paper's title or abstract, else the title itself;
* :func:`context` — the phrase that attaches that subject to a clause;
* :func:`backtest.text.discourse.is_background` (shared with the clarity score) — a sentence that
  motivates or frames the work (a challenge, a gap, a widely held view, an aim) rather than reporting
  a finding: never a "result" to test;
* :func:`refers_back` — a clause that opens with a definite description of something the abstract
  introduced earlier ("the new index", "the neural network", "the observed trends");
* :func:`headline_clause` — a paper's first claim that stands on its own;
* :func:`reads_clearly` — the freeze gate's clarity score finds no major problem (a last check
  on the finished question; a question that fails it is skipped).

Pure text processing, no model weights.
"""

from __future__ import annotations

import re

from backtest.generators.extract import PaperClaims, _plausible_object, claim_clause, is_declarative
from backtest.text.discourse import CONNECTIVE_LEAD_INS, OWN_WORK, is_background
from backtest.text.latex import detex
from backtest.text.objects import find_objects

# The fixed list of unresolved anaphors and context-bound phrases (case-insensitive, whole words).
UNRESOLVED_PHRASES = (
    "these",
    "those",
    "this",
    "such objects",
    "such sources",
    "such systems",
    "the latter",
    "the former",
    "the above",
    "aforementioned",
    "we",
    "us",
    "our",
    "ours",
    "in addition",
    "here we",
    "in this work",
    "in this paper",
    "in this study",
    "the present work",
    "the present study",
    "the present paper",
    "the same",
    "they",
    "them",
    "their",
    "such",
)
UNRESOLVED = re.compile(
    r"\b(?:" + "|".join(re.escape(p) for p in UNRESOLVED_PHRASES) + r")\b(?<!\bsuch)|\bsuch\b(?! as\b)", re.I
)
# A definite reference to something the abstract introduced but the clause does not name.
_UNNAMED_DEFINITE = re.compile(
    r"\b(?:the|both|all|each|either) (?:(?:new|full|final|present|resulting|observed|selected|two|three|"
    r"whole|entire|parent|current|remaining|other) )?"
    r"(?:sample|samples|data ?set|data|catalog|catalogue|observations|sources?|objects?|targets?|detections?|"
    r"candidates?|events?|systems?|members|population|method|approach|framework|technique|pipeline|model|"
    r"simulations?|survey|galaxies|stars|clusters|planets|measurements|results?|findings?|analysis|populations|"
    r"regions|sources|groups|classes|models)\b"
    r"(?! of\b| in\b| from\b| for\b| around\b| with\b| at\b| between\b| across\b| within\b)"
    # a lone singular ("between the star and", "compared to the disk."), not a compound ("the star formation")
    r"|\b(?:the|both) (?:star|galaxy|planet|cluster|disk|disc|halo|host|companion|region|kinds|factor)"
    r"(?=[,.;?]|$|\s+(?:and|or|is|was|are|were|be|has|had|can|could|may|will|would|to|as|than)\b)"
    # a description only the abstract defines (intelligibility-v4): "the apparent excess", "the underlying
    # physical mechanism", "the recent encounter", "the inner component", "the larger sample", "each station"
    r"|\b(?:the|each|both) (?:(?:underlying|physical|apparent|recent|unprecedented|larger|smaller|earlier|"
    r"previous|inner|outer|found|main|key) ){1,2}"
    r"(?:mechanisms?|excess|deficit|discrepancy|encounter|components?|enhancements?|measurements?|estimates?|"
    r"samples?|effects?|processes|equations?|systems? of equations|events?)\b"
    r"(?! of\b| in\b| for\b| behind\b| that\b| responsible\b| between\b| on\b| \w+ing\b)"
    r"|\b(?:the topic|each station|the stations|the findings)\b(?! of\b)"
    r"|\bone (?:population|group|class|component)\b(?! of\b)",
    re.I,
)
_PRONOUN_OPENING = re.compile(
    r"^(?:[^A-Za-z0-9]|(?:and|or|but|nor|so|based|that|results?|comparisons?|focusing|employing|on|in|at|for|with|"
    r"by|using|after|"
    r"during|when|while|whereas|since|because|as|if|to|of|from|than|via|through|across|among|between|"
    r"it|its|they|their|them|he|she|one|both|each|all|most|many|some|several|two|three|four|none|"
    r"thus|hence|therefore|moreover|furthermore|however|finally|also|then|instead|similarly|likewise|yet|still|"
    r"consequently|accordingly|overall|together|in turn|in particular|notably|interestingly|importantly)\b)",
    re.I,
)
_REFERENCE = re.compile(
    r"\b(?:[A-Z][a-z]+ et al\.?|Paper [IVX]+|Sect(?:ion)?\.? ?\d|Fig(?:ure)?\.? ?\d|Table \d)", re.I
)
# Context that a clause leans on in its middle (intelligibility-v2's failures): a description of the paper's
# own material ("to reproduce the observed evolution"), a demonstrative "that" ("the introduction of that
# factor"), and a finding that names what was found without saying it ("the feeding mechanism is
# successfully identified").
_LEANS_ON_CONTEXT = re.compile(
    r"\bthe (?:" + "|".join(sorted(OWN_WORK)) + r") [a-z][a-z-]*\b(?! of\b| in\b| for\b| from\b| between\b)"
    r"|\b(?:of|for|with|by|from|on|to|in) that (?!is\b|are\b|was\b|were\b|the\b|a\b|an\b)[a-z]+\b"
    r"|\b(?:is|are|was|were|has been|have been|can be) (?:(?:successfully|clearly|firmly|robustly|unambiguously|"
    r"also|now) )?(?:identified|determined|established|revealed|characteri[sz]ed|explained|found|clarified|"
    r"resolved)(?=\s*(?:[,;.]|$|which\b|and\b))"
    r"|\bhas (?:important|significant|profound|major) (?:implications|consequences)\b",
    re.I,
)
# What only the source abstract defines (intelligibility-v4), in a lifted clause or a rewritten gap question:
# "constrained by similar effects", "not physically consistent either", "several newly included species",
# "the value of β" (a symbol the abstract introduced)
_ABSTRACT_DEFINES = re.compile(
    r"\bsimilar (?:effects?|processes|mechanisms?|behaviou?rs?|trends?|features?)\b(?! (?:to|as|in|of)\b)"
    r"|\beither\s*(?:[,.;?]|$)"
    r"|\bnewly (?:included|introduced|added|identified|proposed)\b"
    r"|\b(?:values?|estimates?|measurements?) (?:of|for) [α-ωΑ-Ω](?![\w-])",
    re.I,
)
# A statement with nothing to reproduce (intelligibility-v4): a method's idea or what it allows, a
# recommendation, the state of the literature, a measurement reported without its value.
_NOTHING_TO_REPRODUCE = re.compile(
    r"\b(?:the|our|a|an) (?:\w+ ){0,2}idea (?:is|was)\b"
    r"|\ballows? (?:one|us) to\b"
    r"|\b(?:further|future) (?:[\w-]+ ){0,5}(?:must|should)\b"
    r"|\b(?:appears?|exists?|disagrees?|differs?|vary|varies|conflicts?) in the literature\b"
    r"|\b(?:has|have) been (?:\w+ )?(?:determined|derived|measured|estimated|computed|calculated) for\b",
    re.I,
)
MIN_CLAUSE_CHARS = 40
# a symbol lost in the LaTeX clean-up: "the value of is consistent", "with = 0.3"
_LOST_SYMBOL = re.compile(
    r"\b(?:of|for|on|with|to) (?:is|are|was|were|and|with|at|of|in|=)\b|[=_^\\{}$]|\(\s*\)|\s-\s[A-Z]|\w\(\w+,"
    r"|\b(?:H|Ly|Pa|Br) (?:and|luminosit\w*|emission|lines?|flux\w*|equivalent|imaging|observations|maps?)\b"
)
_FUNCTION_OPENERS = frozenset(
    "the a an neither either both all most many some several each no only its their this these those".split()
)


# "We report the X" / "Our results show X": stripping the first person leaves a noun phrase, not a clause.
_FIRST_PERSON_NO_THAT = re.compile(
    r"^(?:here\s*,?\s*)?(?:we|our (?:\w+ )?(?:results?|analysis|findings|observations|data|models?|simulations?))"
    r"\s+(?:also\s+|further\s+|here\s+|then\s+)?\w+\s+(?!that\b)"
    r"|^(?:the|these) (?:\w+ )?(?:results?|analysis|findings|simulations?) (?:also )?"
    r"(?:suggest|reveal|show|indicate|imply|demonstrate)s? (?!that\b)"
    r"|^\w+ly that\b",  # "We show analytically that X" loses its subject
    re.I,
)
_FINITE = re.compile(
    r"\b(?:is|are|was|were|be|been|being|has|have|had|can|could|may|might|will|would|should|must|does|do|did|"
    r"remains?|lies|lie|shows?|reveals?|exhibits?|follows?|leads?|yields?|provides?|requires?|implies|implying|"
    r"suggests?|indicates?|dominates?|exceeds?|matches|agrees?|depends?|increases?|decreases?|varies|vary|"
    r"peaks?|reaches|reach|appears?|seems?|occurs?|produces?|drives?|plays?|contains?|hosts?|displays?|lacks?|"
    r"differs?|correlates?|scales?|favou?rs?|supports?|contributes?|emerges?|originates?|arises?|forms?|evolves?|"
    r"grows?|becomes?|explains?|predicts?|reproduces?|enhances?|suppresses?|allows?|enables?|causes?|prefers?|"
    r"affects?|improves?|reduces?|showed|revealed|exhibited|followed|led|yielded|provided|required|dominated|"
    r"exceeded|matched|agreed|depended|increased|decreased|varied|peaked|reached|appeared|seemed|occurred|"
    r"produced|drove|played|formed|evolved|grew|became|contained|hosted|displayed|lacked|remained|differed|"
    r"correlated|scaled|favou?red|disfavou?red|excluded|supported|contributed|emerged|originated|arose|"
    r"(?:is|are|was|were|be|been) \w+ed)\b",
    re.I,
)


def self_contained_clause(sentence: str, max_chars: int = 220) -> str | None:
    """The claim sentence as a clause that stands on its own, or ``None`` when it leans on its context
    (an anaphor, an unnamed definite reference, first person, a fragment without a verb)."""
    text = CONNECTIVE_LEAD_INS.sub("", sentence.strip())
    if _FIRST_PERSON_NO_THAT.match(text):
        return None
    if len(claim_clause(text, 100_000)) > max_chars:
        return None  # cutting it would leave a fragment ("..., with an additional")
    clause = claim_clause(text, max_chars)
    clause = CONNECTIVE_LEAD_INS.sub("", clause)
    if _FIRST_PERSON_NO_THAT.match(clause):
        return None
    words = clause.split(" ", 2)
    if len(words) > 1 and words[0].lower() in _FUNCTION_OPENERS:
        clause = clause[:1].lower() + clause[1:]  # "that The 30 keV electrons" -> "that the ..."
    elif len(words) > 1 and clause[:1].islower():
        original = re.search(r"(?<![\w-])" + re.escape(words[0]) + r"(?![\w-])", text, re.I)
        if original and original.group(0)[:1].isupper() and (words[1][:1].isdigit() or words[1][:1].isupper()):
            clause = original.group(0) + clause[len(words[0]) :]  # "Mrk 71 has", not "mrk 71 has"
    if not _FINITE.search(clause) or _LOST_SYMBOL.search(clause):
        return None
    if len(clause) < MIN_CLAUSE_CHARS or not is_declarative(clause):
        return None
    if not is_self_contained(clause) or _PRONOUN_OPENING.match(clause):
        return None
    if _LEANS_ON_CONTEXT.search(clause) or _NOTHING_TO_REPRODUCE.search(clause):
        return None
    if _REFERENCE.search(clause) or clause.count("(") != clause.count(")"):
        return None
    return clause


# "The new index has ...": the opening definite description is its words up to the first function word or
# verb; lower-case words only (a named thing such as "the Hubble constant" or "the LMC" is not a back-reference).
_DEFINITE_OPENERS = frozenset(("the", "that", "this"))
_PREPOSITIONS = frozenset("of in on at for from with to by between within across into over under via".split())
_NOT_NOUN = _PREPOSITIONS | frozenset(
    "and or but as than is are was were has have had can could may might will would should must do does did be "
    "been being not".split()
)


def refers_back(clause: str, earlier: str) -> bool:
    """True when ``clause`` opens with a definite description ("the new index", "the observed trends") whose
    head noun ``earlier`` (the abstract's preceding sentences) already used: the clause then names something
    only its abstract introduced."""
    words = clause.strip().split()
    if len(words) < 3 or words[0].lower() not in _DEFINITE_OPENERS:
        return False
    if words[1] in OWN_WORK and re.fullmatch(r"[a-z][a-z-]*", words[2]):
        return True  # "the observed trends", "the inferred total mass": the paper's own, introduced before
    noun_phrase: list[str] = []
    for word in words[1:5]:
        if word.lower() in _NOT_NOUN or _FINITE.fullmatch(word) or not re.fullmatch(r"[a-z][a-z-]*,?", word):
            break
        noun_phrase.append(word.rstrip(","))
        if word.endswith(","):
            break
    else:
        return False  # more than four words before a verb: not a short description that points back
    after = words[len(noun_phrase) + 1].rstrip(",")
    if not noun_phrase or after in _PREPOSITIONS or not re.fullmatch(r"[a-z][a-z-]*", after):
        return False  # described further ("the ratio of H2O to CO") or named ("the LMC"): not a back-reference
    head = noun_phrase[-1]
    head = head[:-2] if head.endswith("es") and len(head) > 5 else head.rstrip("s")
    return len(head) >= 3 and re.search(r"\b" + re.escape(head) + r"(?:s|es)?\b", earlier, re.I) is not None


def is_self_contained(question: str) -> bool:
    """False when ``question`` holds an unresolved anaphor from :data:`UNRESOLVED`, an unnamed definite
    reference ("the sample", "the underlying mechanism") or other context its source abstract supplies
    ("similar effects", "newly included species")."""
    return not (UNRESOLVED.search(question) or _UNNAMED_DEFINITE.search(question) or _ABSTRACT_DEFINES.search(question))


def _short_title(title: str, max_chars: int = 110) -> str:
    title = detex(title).strip().rstrip(".").replace('"', "'")
    if len(title) <= max_chars:
        return title
    for sep in (": ", " - ", " -- ", ". "):
        head = title.split(sep)[0]
        if 25 <= len(head) <= max_chars:
            return head
    return title[:max_chars].rsplit(" ", 1)[0].rstrip(" ,;:-") + "..."


def subject_of(
    title: str, title_objects: tuple[str, ...] | list[str], objects: tuple[str, ...] | list[str], text: str
) -> str | None:
    """What ``text`` (a clause or question taken from a paper) is about, when it names no catalogued
    object itself: ``None`` if it does; else the object(s) of the paper's title, else of its abstract
    (at most three); else the paper's (short) title in quotes."""
    if [o for o in find_objects(text) if _plausible_object(o)]:
        return None
    chosen = [o for o in title_objects if _plausible_object(o)] or [o for o in objects if _plausible_object(o)]
    if 1 <= len(chosen) <= 3:
        return chosen[0] if len(chosen) == 1 else ", ".join(chosen[:-1]) + " and " + chosen[-1]
    return f'"{_short_title(title)}"'


def paper_subject(paper: PaperClaims, text: str) -> str | None:
    """:func:`subject_of` for a paper already analysed (:func:`backtest.generators.extract.extract_claims`)."""
    return subject_of(paper.record.title, paper.title_objects, paper.detected.objects, text)


def context(subject: str | None, mid: bool = False) -> str:
    """The phrase that attaches ``subject`` to a clause: ", as reported for K2-18 b" or ', as reported in
    "<title>"' ("" when the clause names its object itself); ``mid`` closes it with a comma, for a
    clause that the question continues after."""
    if not subject:
        return ""
    phrase = (", as reported in {s}" if subject.startswith('"') else ", as reported for {s}").format(s=subject)
    return phrase + ("," if mid else "")


def headline_clause(paper: PaperClaims, max_chars: int = 220) -> tuple[str, str] | None:
    """``(sentence, clause)`` of the paper's first claim that stands on its own: result sentences first,
    then non-detections and tensions, never a background sentence (:func:`is_background`) nor a clause that
    refers back to its abstract (:func:`refers_back`); ``None`` when every claim leans on its context."""
    ordered = [c for c in paper.claims if c.result] + [
        c for c in paper.claims if not c.result and (c.negative or c.tension)
    ]
    for claim in ordered:
        if is_background(claim.text):
            continue
        clause = self_contained_clause(claim.text, max_chars)
        if clause and not refers_back(clause, " ".join(paper.sentences[: max(claim.index, 0)])):
            return claim.text, clause
    return None


def with_subject(question: str, subject: str | None) -> str:
    """``question`` with its subject attached before the final '?': " in K2-18 b" for objects,
    ' (raised in "<title>")' for a quoted title; unchanged when ``subject`` is None."""
    if not subject:
        return question
    form = " (raised in {s})" if subject.startswith('"') else " in {s}"
    return question.rstrip("?").rstrip() + form.format(s=subject) + "?"


def reads_clearly(question: str) -> bool:
    """True when the freeze gate's clarity score (:func:`backtest.text.clarity.clarity_score`) finds no major
    problem in ``question`` — no unresolved reference, formula residue, missing subject or missing
    interrogative — and scores it at or above the gate's threshold."""
    from backtest.text.clarity import CLARITY_CHECKS, CLARITY_THRESHOLD, MAJOR, clarity_score

    scored = clarity_score(question)
    return scored.score >= CLARITY_THRESHOLD and not any(CLARITY_CHECKS[c][0] >= MAJOR for c in scored.checks)
