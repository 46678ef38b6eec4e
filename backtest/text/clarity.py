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
from dataclasses import dataclass
from typing import Sequence, TypedDict

import numpy as np

from backtest.text.discourse import DANGLING_CONNECTIVE, background_as_result, own_work_subject
from backtest.text.lexicon import FORM_MOLECULES

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
_MOLECULE = re.compile(r"\b(?:" + "|".join(FORM_MOLECULES) + r")\b")
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


# --------------------------------------------------------------------------- the clarity score

#: Bumped whenever a check, a pattern or a penalty changes; recorded with every score (and in FROZEN.json).
CLARITY_VERSION = "clarity-v2"
#: The freeze gate's default: a question scoring below it is flagged. It flags every question with a major
#: problem (0.4) or three minor ones (0.42), never one with one or two minor ones (0.75, 0.5625): no score falls
#: between 0.42 and 0.5625, and 0.5 sits in that gap. See docs/submit.md for the distributions behind it.
CLARITY_THRESHOLD = 0.5
MAJOR = 0.6  # a problem that by itself can make a question unintelligible
MINOR = 0.25  # a problem that makes a question harder to read or to answer, not unreadable
TOO_LONG_WORDS = 50  # the longest LLM-written question of the reference release has 46 words
TOO_SHORT_WORDS = 5

#: check name -> (penalty, what it finds). A question's score is the product of (1 - penalty) over the checks
#: that fire (each counts once, however many spans it matched): 1.0 for a clean question, 0.0 for an empty one.
CLARITY_CHECKS: dict[str, tuple[float, str]] = {
    "empty": (1.0, "no words besides the question mark"),
    "too_long": (MINOR, f"more than {TOO_LONG_WORDS} words"),
    "too_short": (MINOR, f"fewer than {TOO_SHORT_WORDS} words"),
    "garbled_text": (
        MAJOR,
        "markup (<P />), formula or symbol residue (_ ^ \\ { } $ =, '( )'), a doubled word, or run-together "
        "sentences ('found.Citation')",
    ),
    "not_a_question": (MAJOR, "no interrogative anywhere (no wh-word, no question-opening verb, no 'whether')"),
    "several_sentences": (MINOR, "a statement before the question (a sentence break or a dash inside it)"),
    "two_questions": (
        MINOR,
        "two questions in one: a second '?' outside quotes, or 'and'/'or'/';' joining a second interrogative",
    ),
    "leading": (
        MINOR,
        "leading or presupposing wording: 'isn't it true that', 'given that X, why', 'confirm that', "
        "'how much does X improve', 'obviously', 'of course'",
    ),
    "contradictory_quantifiers": (
        MAJOR,
        "self-contradictory quantifiers in one clause: all/every ... none, always ... sometimes/never, "
        "every ... some ... not (not across 'or'/'versus')",
    ),
    "unresolved_reference": (
        MAJOR,
        "a reference to something the question never names: this/these/such + noun or a lone pronoun in the "
        "first clause with no antecedent, we/our, 'the authors', 'the above', 'the sample', 'this paper', "
        "a clause opening with 'therefore,'/'in addition,'/'remarkably,', a result whose subject is a "
        "description of a paper's own material ('the result that the observed trends ...'; clarity-v2)",
    ),
    "background_as_result": (
        MAJOR,
        "a framing sentence asked about as a result: 'the result that X remains a challenge / data are lacking "
        "/ is expected to' (clarity-v2)",
    ),
    "no_subject": (
        MAJOR,
        "no named subject: no specific content word outside the question's frame, or only unexplained jargon",
    ),
}


class ClarityProblemDict(TypedDict):
    """:meth:`ClarityProblem.as_dict`."""

    check: str
    span: str
    start: int
    end: int


class ClarityScoreDict(TypedDict):
    """:meth:`ClarityScore.as_dict`: the score as ``backtest clarity`` and the submission gate write it."""

    score: float
    checks: list[str]
    problems: list[ClarityProblemDict]
    version: str


@dataclass(frozen=True)
class ClarityProblem:
    """One problem a check found: the check's name and the span of the question it matched (``question[start:
    end]``; a few characters of context around a '?' or a sentence break). Checks about the whole question
    (empty, too_long, too_short, not_a_question, no_subject) cover all of it and say what they found instead
    ("52 words", "only jargon: SDA MHD")."""

    check: str
    span: str
    start: int
    end: int

    def as_dict(self) -> ClarityProblemDict:
        return {"check": self.check, "span": self.span, "start": self.start, "end": self.end}


@dataclass(frozen=True)
class ClarityScore:
    """A question's clarity: ``score`` in [0, 1] (1 = no problem found) and the problems behind it."""

    score: float
    problems: tuple[ClarityProblem, ...] = ()
    version: str = CLARITY_VERSION

    @property
    def checks(self) -> list[str]:
        """The names of the checks that fired, in :data:`CLARITY_CHECKS` order."""
        fired = {p.check for p in self.problems}
        return [name for name in CLARITY_CHECKS if name in fired]

    def describe(self) -> str:
        """``unresolved_reference: 'these bars'; leading: 'confirm that'`` (first span of each check)."""
        first: dict[str, str] = {}
        for p in self.problems:
            first.setdefault(p.check, p.span)
        return "; ".join(f"{name}: {first[name]!r}" for name in self.checks)

    def as_dict(self) -> ClarityScoreDict:
        return {
            "score": self.score,
            "checks": self.checks,
            "problems": [p.as_dict() for p in self.problems],
            "version": self.version,
        }


_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|«[^»]*»|(?<!\w)'[^'?]{3,}'(?!\w)")
_WORD = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
_AUX = (
    r"is|are|was|were|do|does|did|can|could|will|would|should|shall|may|might|must|has|have|had|"
    r"isn't|aren't|doesn't|don't|didn't|can't|won't|wouldn't|shouldn't|hasn't|haven't"
)
_WH = r"what|which|why|how|when|where|who|whom|whose|whether|to what extent|in what way|under what"
_ASKS = re.compile(rf"\b(?:{_WH})\b|^\W*(?:{_AUX})\b", re.I)
_MARKUP = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\s*/?>|&[a-z]+;|\\[A-Za-z]+|[_^{}$\\]|\(\s*\)|\s[,;:](?=\s)|\s=\s|=\s*-")
_RUN_TOGETHER = re.compile(r"(?<![A-Z.])[a-z]{2,}[.!][A-Z][a-z]{2,}|\b[a-z]{4,}[A-Z][a-z]{3,}\b")
_DOUBLED = re.compile(r"\b([A-Za-z]{2,})\s+\1\b", re.I)
_SENTENCE_BREAK = re.compile(
    r"(?<!\be\.g)(?<!\bi\.e)(?<!\bet al)(?<!\bvs)(?<!\bcf)(?<!\bFig)(?<!\bEq)(?<!\bNo)(?<!\bSt)(?<!\bDr)(?<!\bMr)"
    r"(?<!\b[A-Z])[.!]\s+(?=[A-Z(\"“])|\s[—–]\s*(?=(?:" + _WH + r")\b)|(?<=\w)\s-{1,2}\s(?=(?:" + _WH + r")\b)",
    re.I,
)
_SECOND_Q = re.compile(
    rf"(?:[,;]\s*|\s)(?:and|or|and/or|but)\s+(?:{_WH})\b|(?:[,;]\s*|\s)(?:and|and/or|but)\s+(?:(?:{_AUX})\s+(?:the|a|an|it|they|this|these|such|there|"
    rf"we|any|its|their|[A-Z0-9])\w*)|;\s*(?:(?:{_WH})\b|(?:{_AUX})\b)|\?\s*(?:also|and|or|if so|if not)\b",
    re.I,
)
_LEADING = re.compile(
    r"\b(?:isn't it (?:true|the case|clear)|is it not (?:true|the case|clear)|don't you (?:think|agree)|"
    r"wouldn't you agree|doesn't (?:this|it) (?:show|prove|mean)|(?:can|could|will|would|does|do) [\w\s-]{0,60}?"
    r"(?:confirm|prove|demonstrate|verify) (?:the [\w\s-]{0,40}?)?that|how much (?:more |better |further )?"
    r"(?:does|do|did|will|can|could|would)\b[^?]{0,80}?\b(?:improve|outperform|enhance|boost|increase|better)\w*|"
    r"why (?:is|are|does|do) [^?]{0,60}?\b(?:so much |far )?(?:better|superior|more effective|worse)\b|"
    r"obviously|undoubtedly|of course|surely|as is well known|everyone knows)\b"
    r"|^\W*(?:given|since|because|as) (?:that )?[^?]{3,200}?,\s*(?:why|how|what)\b",
    re.I,
)
_ALL = r"(?<![-\w])(?:all|every|everyone|everything|always)(?![-\w])(?<!\bat all)(?<!\bafter all)(?<!\babove all)"
_NONE = r"\b(?:none|nothing|nobody|no one|never)\b"
_SOME = r"\b(?:sometimes|occasionally|rarely|seldom|often|usually)\b"
_CONTRADICTION = [
    re.compile(rf"(?P<a>{_ALL})(?P<gap>[^?;]{{1,120}}?)(?P<b>{_NONE})", re.I),
    re.compile(rf"(?P<a>{_NONE})(?P<gap>[^?;]{{1,120}}?)(?P<b>{_ALL})", re.I),
    re.compile(rf"(?P<a>\balways\b)(?P<gap>[^?;]{{1,120}}?)(?P<b>{_SOME})", re.I),
    re.compile(rf"(?P<a>{_SOME})(?P<gap>[^?;]{{1,120}}?)(?P<b>\b(?:always|never)\b)", re.I),
    re.compile(rf"(?P<a>\bnever\b)(?P<gap>[^?;]{{1,120}}?)(?P<b>{_SOME})", re.I),
    re.compile(r"(?P<a>\b(?:every|all)\b)(?P<gap>[^?;]{1,80}?\bsome\b[^?;]{1,60}?)(?P<b>\bnot\b|n't\b)", re.I),
]
_ALTERNATIVE = re.compile(r"\b(?:or|versus|vs\.?|rather than|compared (?:to|with)|whether|instead of|unlike)\b", re.I)
_DEMONSTRATIVE = re.compile(
    r"\b(?:this|these|those|such|the latter|the former)\b|\bthere\b(?!\s+(?:is|are|was|were|be|been|exists?|remains?|"
    r"seems?|appears?|might|may|must|could|should|would|will|can|has|have|had)\b)",
    re.I,
)
_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|theirs)\b", re.I)
_EXPLETIVE_IT = re.compile(
    r"\bit\s+(?:be\s+\w+ed\b|(?:is\s+|be\s+|was\s+|remains\s+)?(?:possible|likely|true|the case|feasible|clear|"
    r"known|plausible|necessary|expected|worth|reasonable|correct|conceivable|unlikely|realistic|easier|harder|difficult)\b)",
    re.I,
)
_FIRST_PERSON_REF = re.compile(
    r"\b(?:we|our|ours|ourselves)\b"
    r"(?!\s+(?:current\s+|own\s+)?(?:understanding|knowledge|picture|view|ability|models? of|planet|sun|galaxy|"
    r"solar system|milky way)\b)",
    re.I,
)
_GENERIC_WE = re.compile(r"\b(?:can|could|should|might|may|would|will|must|do)\s+$", re.I)
_UNQUALIFIED = (
    r"(?=\s*(?:[,;:?)]|$)|\s+(?:is|are|was|were|has|have|had|and|to|with|by|shows?|exhibits?|can|could|would|"
    r"will|may|might|itself|hosts?|remains?|contains?|displays?|lies|appears?|confirms?|reveals?|follows?)\b)"
)
_SELF_REFERENCE = re.compile(
    r"\b(?:the authors|the above|the aforementioned|the remaining|as (?:mentioned|discussed|shown) "
    r"(?:above|before|earlier)|(?:this|the present|the current) (?:paper|work|study|letter|article|thesis|proposal)|"
    r"in this (?:paper|work|study|letter|article)|here,? we)\b|"
    r"\bthe (?:sample|source|target|data ?set)" + _UNQUALIFIED,
    re.I,
)
#: "the planet ..." with nothing named before it (judged like a pronoun)
_THE_NOUN = re.compile(r"\bthe (?:object|system|planet|star|galaxy|cluster|event)" + _UNQUALIFIED, re.I)
_CLAUSE_BREAK = re.compile(
    r"[;:]\s|\s[—–]\s|\s-{1,2}\s|(?:,\s*|\s)(?:and|or|but|while|whereas|so)\s+(?=(?:"
    + _WH
    + "|"
    + _AUX
    + r"|this|these|those|such|it|its|they|their|there|we|if)\b)",
    re.I,
)
_FRAME_WORDS = frozenset(
    """robust reanalysis reanalyses independent independently reported result results finding findings claim claims
    hold holds confirm confirmed conclusion conclusions subsequent follow-up followup influential widely built-upon
    highly cited much followed-up reproduce reproduced alternative assumptions assumption datasets dataset tested
    tests test modelling modeling choices settle settled clarified clarify evidence work further data new""".split()
)
#: head nouns that name no subject by themselves: "the nature of its ..." still leaves "its" unresolved
_ABSTRACT_NOUNS = frozenset(
    """nature origin role significance detail details validity timing fate cause causes reason reasons implication
    implications interplay contribution contributions importance relevance consequence consequences extent degree
    amount behaviour behavior physics status existence structure formation""".split()
)
_ACRONYM = re.compile(r"^(?:[A-Z]{2,}[a-z]?|[A-Z]+\d[\w-]*|\d[\w.-]*)$")
_DEFINED = re.compile(r"\(([A-Z][A-Za-z0-9-]{1,12})\)")


_FORMULA = re.compile(r"\b(?:[A-Z][a-z]?\d*){1,5}(?:\d\b|\+)|\b(?:OH|CN|CH|NH|SH|HCN|HCO|CS|SO|SiO|NO|CO|H2|He)\b")


def _named_chemical(text: str) -> bool:
    """A molecule or an ion named in ``text`` (H2O, H2CO, HCO+, OH, C60)."""
    return bool(_MOLECULE.search(text) or _FORMULA.search(text))


def _mask_quotes(text: str) -> str:
    """``text`` with the inside of quotation marks replaced by ``x`` (same length: offsets stay valid)."""
    return _QUOTED.sub(lambda m: m.group(0)[0] + "x" * (len(m.group(0)) - 2) + m.group(0)[-1], text)


def _stem4(word: str) -> str:
    return word.lower().rstrip("s")[:5]


def _first_clause_end(text: str) -> int:
    found = _CLAUSE_BREAK.search(text)
    return found.start() if found else len(text)


def _unresolved_demonstrative(text: str, masked: str, m: re.Match[str]) -> tuple[str, int, int] | None:
    """The span of a first-clause demonstrative ("this sample", "these", "such", "there") that nothing before it
    resolves, or None when it is resolved or is no reference."""
    after = masked[m.end() :]
    word = m.group(0).lower()
    if word == "such" and re.match(r"\s+(?:as|that)\b", after):
        return None
    if word == "those" and re.match(
        r"\s+(?:of|that|which|who|with|in|at|for|from|around|near|on|by|seen|found|\w+ed|\w+ing)\b", after
    ):
        return None  # a pronoun with its own restriction ("those attributed to H2O")
    if word == "there" and re.search(r"\b(?:is|are|was|were|be|been)\s+$", masked[: m.start()], re.I):
        return None  # "is there ...": existential
    tail = re.match(r"(?:\s+(?:a|an)\b)?(?:\s+[\w'’-]+){0,2}", after) if word not in {"there"} else None
    following = _WORD.findall(tail.group(0)) if tail else []
    following = [w for w in following if w.lower() not in {"a", "an"}]
    before = {_stem4(w) for w in _WORD.findall(masked[: m.start()])}
    if word in {"the latter", "the former"} and " and " in masked[: m.start()]:
        return None
    if following and any(_stem4(w) in before for w in following if len(w) > 2):
        return None  # "the disk ... this disk": resolved
    end = m.end() + (tail.end() if tail else 0)
    return text[m.start() : end], m.start(), end


def _unresolved(text: str, masked: str) -> list[tuple[str, int, int]]:
    """Spans of references the question never resolves (see :data:`CLARITY_CHECKS`)."""
    out: list[tuple[str, int, int]] = []
    for m in _FIRST_PERSON_REF.finditer(masked):
        if m.group(0).lower() == "we" and _GENERIC_WE.search(masked[: m.start()]):
            continue  # "how can we ...": the research community, not an absent paper's authors
        out.append((text[m.start() : m.end()], m.start(), m.end()))
    for m in _SELF_REFERENCE.finditer(masked):
        out.append((text[m.start() : m.end()], m.start(), m.end()))
    for m in DANGLING_CONNECTIVE.finditer(masked):
        c = m.group("c")
        if c.lower().endswith("ly,") and c.lower().rstrip(", ") in {"only", "early", "family", "supply", "apply"}:
            continue
        out.append((c, m.start("c"), m.end("c")))
    first_clause = _first_clause_end(masked)
    for m in _DEMONSTRATIVE.finditer(masked):
        if m.start() < first_clause and (span := _unresolved_demonstrative(text, masked, m)) is not None:
            out.append(span)  # a demonstrative in a later clause refers back to the first one
    from backtest.text.objects import find_objects
    from backtest.text.terms import specific_terms

    for m in [*_PRONOUN.finditer(masked), *_THE_NOUN.finditer(masked)]:
        if m.group(0).lower() == "it" and _EXPLETIVE_IT.match(masked, m.start()):
            continue
        preceding = masked[: m.start()]
        named = specific_terms(preceding) - _FRAME_WORDS - _ABSTRACT_NOUNS
        if named or _DEFINED.search(preceding) or _named_chemical(preceding) or find_objects(preceding):
            continue  # something named before it
        out.append((m.group(0), m.start(), m.end()))
    return out


def _no_subject(text: str) -> str | None:
    """Why the question names nothing specific (None when it does)."""
    from backtest.text.objects import find_objects
    from backtest.text.terms import specific_terms

    if find_objects(text) or _named_chemical(text):
        return None  # a catalogued object or a molecule is a named subject
    terms = {t for t in specific_terms(text) if t not in _FRAME_WORDS}
    if not terms:
        return "no specific content word"
    defined = set(_DEFINED.findall(text))
    jargon = [t for t in _WORD.findall(text) if len(t) > 1 and _ACRONYM.match(t) and t not in defined]
    plain = [t for t in terms if t.isalpha() and t == t.lower() and t not in {j.lower() for j in jargon}]
    if len(jargon) >= 2 and not plain:
        return "only jargon: " + " ".join(jargon[:4])
    return None


def _form_problems(text: str, masked: str, n_words: int) -> list[ClarityProblem]:
    """The checks of a question's form: its length, garbled text, whether it asks, one sentence and one question,
    leading wording, contradictory quantifiers. ``masked``: ``text`` with quoted spans blanked."""
    problems: list[ClarityProblem] = []

    def add(check: str, span: str, start: int, end: int) -> None:
        problems.append(ClarityProblem(check, span, start, end))

    if n_words > TOO_LONG_WORDS:
        add("too_long", f"{n_words} words", 0, len(text))
    if n_words < TOO_SHORT_WORDS:
        add("too_short", f"{n_words} words", 0, len(text))
    for m in [*_MARKUP.finditer(masked), *_RUN_TOGETHER.finditer(masked), *_DOUBLED.finditer(masked)]:
        add("garbled_text", text[m.start() : m.end()], m.start(), m.end())
    if not _ASKS.search(masked):
        add("not_a_question", text.strip()[:60], 0, len(text))
    inner = masked.rstrip().rstrip("?")
    for check, pattern in (("several_sentences", _SENTENCE_BREAK), ("two_questions", re.compile(r"\?"))):
        for m in pattern.finditer(inner):
            start, end = max(0, m.start() - 20), min(len(text), m.end() + 12)
            add(check, text[start:end], start, end)
    for m in _SECOND_Q.finditer(masked):
        start = m.start() + len(m.group(0)) - len(m.group(0).lstrip())
        add("two_questions", text[start : m.end()], start, m.end())
    for m in _LEADING.finditer(masked):
        add("leading", text[m.start() : m.end()], m.start(), m.end())
    for pattern in _CONTRADICTION:
        for m in pattern.finditer(masked):
            if not _ALTERNATIVE.search(m.group("gap")):
                add("contradictory_quantifiers", text[m.start() : m.end()], m.start(), m.end())
    return problems


def _reference_problems(text: str, masked: str) -> list[ClarityProblem]:
    """The checks of what a question leans on: references it never resolves (its own work, a pronoun, a
    demonstrative), background framing asked about as a result, no named subject."""
    problems = [
        ClarityProblem("unresolved_reference", span, start, end) for span, start, end in _unresolved(text, masked)
    ]
    own = own_work_subject(masked)
    if own:
        problems.append(ClarityProblem("unresolved_reference", own.group(0), own.start(), own.end()))
    framing = background_as_result(masked)
    if framing:
        clause = framing.group("clause")
        problems.append(
            ClarityProblem("background_as_result", clause[:80], framing.start("clause"), framing.end("clause"))
        )
    why = _no_subject(text)
    if why:
        problems.append(ClarityProblem("no_subject", why, 0, len(text)))
    return problems


def clarity_score(question: str) -> ClarityScore:
    """The clarity of one question: deterministic, no fitted weight (see :data:`CLARITY_CHECKS`).

    The score is the product of ``1 - penalty`` over the checks that fire; each problem names its check
    and the span of ``question`` it matched. Text inside quotation marks (a quoted paper title) is not read
    for references, sentence breaks or second questions.
    """
    text = question
    stripped = text.strip()
    words = _WORD.findall(stripped)
    if not words:
        return ClarityScore(0.0, (ClarityProblem("empty", text, 0, len(text)),))
    masked = _mask_quotes(text)
    problems = [*_form_problems(text, masked, len(words)), *_reference_problems(text, masked)]
    problems.sort(key=lambda p: (list(CLARITY_CHECKS).index(p.check), p.start))
    score = 1.0
    for name in {p.check for p in problems}:
        score *= 1.0 - CLARITY_CHECKS[name][0]
    return ClarityScore(round(score, 4), tuple(problems))


def clarity_auc(scores: Sequence[float], unintelligible: Sequence[bool]) -> float:
    """How well low scores pick out the questions readers found unintelligible: the ROC AUC of ``1 - score``
    against the labels (1.0 perfect, 0.5 chance). BadInput when the labels hold only one class."""
    from sklearn.metrics import roc_auc_score

    from backtest.core.errors import BadInput

    labels = [bool(x) for x in unintelligible]
    if len(labels) != len(scores):
        raise BadInput(f"{len(scores)} scores but {len(labels)} labels")
    if all(labels) or not any(labels):
        raise BadInput("the AUC needs both unintelligible and intelligible questions among the labels")
    return float(roc_auc_score(labels, [1.0 - s for s in scores]))
