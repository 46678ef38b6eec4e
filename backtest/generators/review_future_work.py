"""``review_future_work`` — community-posed questions mined from past abstracts.

Sentences that pose an open question or name future work are found with cue
phrases ("remains unclear", "open question", "further observations are needed",
"future work", "will allow us to"...), then turned into a question by a few
rewrite rules (each keeps the authors' own words):

* a sentence that already asks (``... ?``) is kept as asked;
* "whether X (remains unclear|is unknown|...)" -> "Is it the case that X?" is
  leading, so it becomes "Does new evidence settle whether X?";
* "the origin/nature/mechanism of X remains unclear/debated" -> "What is the origin of X?";
* "how/why X remains unclear/unknown" -> "Can it be established how/why X?";
* "further/future observations/work (is|are) needed to VERB X" -> "Will further work VERB X?";
* "future observations with Y will allow/enable (us to) VERB X" -> "Can future observations with Y VERB X?";
* otherwise "X remains unclear/poorly understood/an open question" -> "Has X been clarified by subsequent work?".

Ranking (documented): cue strength (an explicit question or "open question" 3,
"remains unclear/unknown/debated" 2, future-work and capability statements 1),
then specificity (+1 when the sentence names a catalogued object, +0.5 for an
instrument or molecule), then recency (later papers first), then the seeded order.
At most three questions per paper, every paper's best one first. Every question cites its source paper.

Self-contained: a rewrite that still leans on its abstract ("these detections", "our
sample", "we", "this work": :data:`backtest.generators.wording.UNRESOLVED`) is dropped, and a
question naming no catalogued object gets its subject attached: " in K2-18 b" (the object(s)
of the paper's title or abstract), else ' (raised in "<paper title>")'.
"""

from __future__ import annotations

import re

from backtest.generators.extract import split_sentences
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult
from backtest.generators.random_claims import seeded_past
from backtest.generators.select import select_diverse
from backtest.generators.wording import is_self_contained, reads_clearly, subject_of, with_subject
from backtest.text.discourse import CONNECTIVE_BEFORE_SUBJECT
from backtest.text.latex import detex
from backtest.text.lexicon import scan_terms
from backtest.text.objects import find_objects

_UNCLEAR = (
    r"(?:(?:remains?|is|are|was|were|has been|have been)\s+(?:still\s+|largely\s+|currently\s+|as yet\s+|however\s+)?"
    r"(?:unclear|unknown|uncertain|debated|unresolved|unexplained|elusive|not (?:well |fully |yet )?understood|"
    r"poorly (?:understood|constrained|known)|an open (?:question|issue|problem)|a matter of debate|a mystery|"
    r"not (?:yet )?(?:established|known|clear|settled)|not well constrained|lacking|missing)"
    r"|(?:remains?|remain) to be (?:seen|determined|understood|explored|established|tested|investigated))"
)
CUES = [
    (3, re.compile(r"\b(?:open|outstanding|key|unanswered|unsolved) (?:question|problem|issue)s?\b", re.I)),
    (2, re.compile(r"\b" + _UNCLEAR + r"\b", re.I)),
    (2, re.compile(r"\blittle is known\b|\bnot yet been (?:explored|studied|tested|measured)\b", re.I)),
    (
        1,
        re.compile(
            r"\b(?:future|further|additional|follow-up|dedicated|deeper|more) (?:work|studies|observations|"
            r"investigations?|data|measurements|modell?ing|missions?|surveys?)\b.{0,60}\b(?:needed|required|necessary|"
            r"will|should|could|can|may)\b",
            re.I,
        ),
    ),
    (1, re.compile(r"\b(?:will|would) (?:allow|enable|help|make it possible|be able)\b", re.I)),
]

_WHETHER = re.compile(r"\bwhether\s+(?P<x>[^,;]{15,200}?)\s+" + _UNCLEAR, re.I)
_WHETHER_ANY = re.compile(
    r"\b(?:unclear|unknown|uncertain|not known|open question|debated)\s+(?:is\s+)?whether\s+(?P<x>.{15,200})$", re.I
)
_ORIGIN = re.compile(
    r"\b(?:the\s+)?(?P<what>origin|nature|source|mechanism|cause|physical origin|"
    r"formation mechanism|driver|role)s?\s+of\s+"
    r"(?P<x>.{5,150}?)\s+" + _UNCLEAR,
    re.I,
)
_HOW = re.compile(r"\b(?P<wh>how|why|what|when|where)\s+(?P<x>.{10,180}?)\s+" + _UNCLEAR, re.I)
_NEEDED = re.compile(
    r"\b(?:further|future|additional|more|dedicated|follow-up)\s+(?P<who>[a-z\- ]{3,60}?)\s+"
    r"(?:are|is|will be|would be)\s+"
    r"(?:needed|required|necessary)\s+to\s+(?P<x>.{10,200})$",
    re.I,
)
_ALLOW = re.compile(
    r"\b(?P<subj>(?:future|upcoming|next-generation|forthcoming|planned)\s[^,;]{3,80}?)\s+(?:will|would|should|could)\s+"
    r"(?:(?:allow|enable)\s+(?:us\s+|one\s+)?to|help(?:\s+to)?)\s+(?P<x>[a-z].{10,200})$",
    re.I,
)
_OPEN_QUESTION = re.compile(
    r"(?P<q>(?:how|why|what|which|whether|is|are|do|does|can|could|will|when|where)\s[^?]{15,300}\?)", re.I
)


_TRAILING_CLAUSE = re.compile(r",\s*(?:though|although|but|yet|while|whereas|and how|and why|which)\b.*$", re.I)
_LEADING_CLAUSE = re.compile(
    r"^(?:despite|while|although|though|in this context|given|considering|since|as)\b[^,]{0,150},\s*", re.I
)
# a verb inside what is said to be unclear: the words before the cue are a clause, not the thing that is unclear
# ("Radial velocity surveys aim at drawing insights into X, which remain unclear")
_CLAUSE_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|had|do|does|did|we|can|will|lies|lie|aims?|suggests?|impl(?:y|ies)|"
    r"indicates?|due to)\b"
)
# a definite noun only the abstract explains: "whether the origin is a finite N effect", "the accuracy at the
# level of observables" (described further, "the origin of X", it names its subject)
_LONE_DEFINITE = re.compile(
    r"\bthe (?:origin|cause|source|reason|nature|accuracy|period|error|discrepancy|difference)\b"
    r"(?! of\b| in\b| for\b| between\b| behind\b| on\b| and\b| or\b)",
    re.I,
)
_PRONOUN_END = re.compile(r"\b(?:it|this|that|they|these|those|them|its)$", re.I)


def _tidy(x: str) -> str:
    x = re.sub(r"\s+", " ", x.strip())
    if re.search(r",\s*(?:yet|but)\s+", x):
        x = re.split(r",\s*(?:yet|but)\s+", x)[-1]
    x = _TRAILING_CLAUSE.sub("", x)
    x = _LEADING_CLAUSE.sub("", x)
    x = re.sub(r",?\s*(?:however|though|therefore|thus|still)$", "", x.rstrip(" .;:,-\u2013\u2014"), flags=re.I)
    return x.rstrip(" .;:,-\u2013\u2014").replace("?", "")


def _usable(x: str) -> bool:
    return len(x.split()) >= 4 and not _PRONOUN_END.search(x)


def to_question(sentence: str) -> str | None:
    """Rewrite one cue sentence as a neutral question in the authors' words, or None."""
    question = _rewrite(sentence)
    if not question:
        return None
    body = question.rstrip("?")
    return question if _usable(body) and len(question) <= 300 else None


def _rewrite(sentence: str) -> str | None:
    s = CONNECTIVE_BEFORE_SUBJECT.sub("", sentence.strip())
    if "?" in s:
        m = _OPEN_QUESTION.search(s.split(":")[-1] if s.index("?") > s.rfind(":") else s)
        if m:
            q = _tidy(m.group("q"))
            return q[0].upper() + q[1:] + "?"
        return None
    if m := _WHETHER.search(s):
        return f"Does new evidence settle whether {_tidy(m.group('x'))}?"
    if m := _WHETHER_ANY.search(s):
        return f"Does new evidence settle whether {_tidy(m.group('x'))}?"
    if m := _ORIGIN.search(s):
        x = _tidy(m.group("x"))
        if _CLAUSE_VERB.search(x):
            return None  # "A major source of modeling uncertainty lies in X, which remain poorly understood"
        return f"What is the {m.group('what').lower()} of {x}?"
    if m := _HOW.search(s):
        if re.search(r"\bit\b", m.group("x")):
            return None  # "what happens when it comes to tsunamis is not clear"
        return f"Can it be established {m.group('wh').lower()} {_tidy(m.group('x'))}?"
    if m := _NEEDED.search(s):
        return f"Will further {_tidy(m.group('who'))} {_tidy(m.group('x'))}?"
    if m := _ALLOW.search(s):
        subj = _tidy(m.group("subj"))
        if re.search(r"\b(?:which|that|who)$", subj) or re.search(r",\s*(?:is|are|was|were)\b", m.group("x")):
            return None  # "future space missions which will help to answer it, are briefly discussed"
        return f"Can {subj[0].lower() + subj[1:]} {_tidy(m.group('x'))}?"
    m = re.search(r"^(?P<x>.{15,200}?)\s+" + _UNCLEAR, s, re.I)
    if m:
        if re.search(r"\byet$", m.group("x").strip(), re.I):
            return None  # "X influences Y and Z, yet remains poorly constrained": a clause, not what is unclear
        x = _tidy(m.group("x"))
        opener = re.match(r"^(?:since|because|although|though|whereas|while)\s+", x, re.I)
        x = x[opener.end() :] if opener else x  # "Since Hydra's dynamical history is unclear, we ..."
        if (
            not x
            or re.match(
                r"^(?:it|this|there|their|its|these|those|such|our|the complete|whose|which|who|that)\b", x, re.I
            )
            or _CLAUSE_VERB.search(x)
        ):
            return None
        return (
            "Has subsequent work clarified "
            f"{x[0].lower() + x[1:] if not (opener or re.match(r'[A-Z]{2}', x) or x[1:2].isdigit()) else x}?"
        )
    return None


def cue_strength(sentence: str) -> int:
    """The strongest cue in ``sentence`` (3 explicit open question, 2 unclear/unknown, 1 future work), 0 if none."""
    return max((w for w, rx in CUES if rx.search(sentence)), default=0)


MAX_PER_PAPER = 3  # a paper's second (third) question ranks after every paper's first (second)
# rewrites whose authors' words do not fit the frame: "settle whether were there ...", "clarified if the ..."
_UNGRAMMATICAL = re.compile(
    r"\bwhether (?:were|was|is|are|do|does|did|can|could|has|have|had)\b|"
    r"^Has subsequent work clarified (?:if|whether|that|many|some|several|\w+ing)\b|"
    r"^Can it be established (?:what|which|how|why) (?:is|are|was|were)\b",
)
MAX_CHARS = 400


class ReviewFutureWork:
    """Open-question and future-work sentences of past abstracts, rewritten as questions."""

    name = "review_future_work"
    version = "1"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Mine cue sentences, rewrite them, rank by cue strength, specificity and recency."""
        _, records, tiebreak = seeded_past(ctx)
        candidates = []
        for i, record in enumerate(records):
            found = []
            about: tuple[str, tuple[str, ...], tuple[str, ...]] | None = None
            for sentence in split_sentences(detex(record.abstract)):
                strength = cue_strength(sentence)
                if not strength:
                    continue
                question = to_question(sentence)
                if (
                    not question
                    or len(question) > 300
                    or len(question.split()) < 8
                    or not is_self_contained(question)
                    or _LONE_DEFINITE.search(question)
                    or _UNGRAMMATICAL.search(question)
                ):
                    continue  # "these detections", "our sample", "we": it leans on its abstract
                if about is None:
                    title = detex(record.title)
                    about = (title, tuple(find_objects(title)), tuple(find_objects(detex(record.abstract))))
                question = with_subject(question, subject_of(about[0], about[1], about[2], question))
                if len(question) > MAX_CHARS or not reads_clearly(question):
                    continue
                objects = find_objects(question)
                terms = scan_terms(question)
                specificity = (1.0 if objects else 0.0) + (0.5 if terms["instrument"] or terms["molecule"] else 0.0)
                found.append(((strength, specificity), question, objects, sentence))
            found.sort(key=lambda f: (-f[0][0], -f[0][1]))
            for k, ((strength, specificity), question, objects, sentence) in enumerate(found[:MAX_PER_PAPER]):
                candidates.append(
                    (
                        (k, -strength, -specificity, -record.published.toordinal(), tiebreak[i]),
                        Draft(
                            question=question,
                            source_evidence_ids=[record.id],
                            objects=objects or None,
                            signal_type="community_open_question" if strength >= 2 else "community_future_work",
                            premise=sentence,
                        ),
                    )
                )
        candidates.sort(key=lambda c: c[0])
        chosen = select_diverse([d for _, d in candidates], ctx.n)
        return GenerationResult(
            drafts=chosen,
            description=(
                "Community-posed questions: open-question and future-work sentences mined from past abstracts "
                "with cue phrases, rewritten as questions in the authors' words, each citing its source."
            ),
            notes={"candidates": len(candidates), "requested": ctx.n, "emitted": len(chosen)},
        )
