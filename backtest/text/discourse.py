"""Where a sentence sits in an abstract's argument: framing (background) or finding, and back-references.

An abstract frames its work before it reports it: a challenge, a gap, an open problem, a widely held
view, an aim. Lifted out and asked about as a "result", such a sentence makes a question that asks
nothing (the intelligibility-v1 readers' ``not_a_question``). And a description such as "the observed
trends" names something only the abstract introduced. Both the generators (to skip such sentences) and
the clarity score (to flag such questions) use the patterns here. Pure regular expressions, no model.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- connectives and lead-ins
# Each is stripped or flagged where it is named; they differ on purpose (a claim's authorial lead-in is not a
# connective, and a question's dangling connective is a clarity problem), and each is pinned by what was
# generated and frozen with it.

# The authorial lead-in of a claim sentence ("Here we show that", "Our results indicate that"), stripped
# when the claim becomes a clause.
CLAIM_LEAD_IN = re.compile(
    r"^(?:(?:here|in this (?:paper|work|study|letter)|finally|moreover|furthermore|in addition|additionally|"
    r"overall|thus|"
    r"therefore|consequently|importantly|notably|together|taken together|as a result|"
    r"specifically|in particular|crucially|"
    r"using [^,]{3,80})\s*,?\s+)*(?:we\s+(?:also\s+|further\s+)?"
    r"(?:find|found|show|showed|demonstrate|confirm|report|conclude|infer|"
    r"argue|suggest|reveal|determine|establish|identify)\s+(?:that\s+)?"
    r"|our (?:results?|analysis|findings|observations|data)\s+"
    r"(?:show|shows|indicate|indicates|suggest|suggests|reveal|reveals|imply|implies|demonstrate|demonstrates)\s+(?:that\s+)?"
    r"|(?:these|the) (?:results?|findings|observations|data) "
    r"(?:show|indicate|suggest|reveal|imply|demonstrate)\s+(?:that\s+)?)",
    re.I,
)

# Sentence-initial connectives ("In addition,", "However,"), stripped before a sentence is quoted.
CONNECTIVE_LEAD_INS = re.compile(
    r"^(?:(?:in addition|additionally|furthermore|moreover|finally|also|overall|importantly|notably|interestingly|"
    r"in particular|specifically|crucially|remarkably|surprisingly|consequently|as a result|therefore|thus|hence|"
    r"however|nevertheless|nonetheless|taken together|together|in summary|in conclusion|to summarize|in short)"
    r"\s*,?\s+)+",
    re.I,
)

# A connective or concessive opening before a future-work sentence's subject ("However, ...").
CONNECTIVE_BEFORE_SUBJECT = re.compile(
    r"^(?:however|but|thus|yet|still|moreover|nevertheless|nonetheless|therefore|although[^,]*),\s*", re.I
)

# A connective that leans on a sentence before it ("Therefore," opening a question, or after "whether").
DANGLING_CONNECTIVE = re.compile(
    r"(?:^\W*|\b(?:that|whether|confirm|clarified|settle)\s+)(?P<c>(?:therefore|thus|hence|however|moreover|furthermore|"
    r"additionally|in addition|in particular|finally|first|second|third|here|in contrast|consequently|"
    r"more (?:significantly|importantly)|[a-z]+ly)\s*,)",
    re.I,
)

# Motivation, difficulty, gaps and aims: what an abstract says before (or around) its findings. Read as
# "results", such sentences became questions that ask nothing (intelligibility-v1: "X remains a challenge",
# "data are lacking", "decision making under lack of information is ubiquitous").
_BACKGROUND = re.compile(
    r"\b(?:challeng\w*|puzzl\w*|mystery|mysterious|enigma\w*|elusive|ubiquitous|"
    r"remains? (?:(?:largely|still|highly|an?|one of the) )*(?:unclear|unknown|uncertain|unexplained|open|debated|"
    r"controversial|poorly|unresolved|elusive|missing|lacking|to be|a matter|an open|puzzling|challenging|difficult)|"
    r"(?:is|are|has been|have been) (?:still |largely |often |usually )?(?:lacking|missing|unknown|unclear|open|"
    r"not clear|not well|poorly|debated|believed|thought|expected|assumed|widely|commonly|generally|long been)|"
    r"lack of|little is known|not (?:yet )?(?:well )?(?:understood|known|constrained)|poorly (?:understood|known|"
    r"constrained)|(?:key|major|fundamental|important|central|long-standing|longstanding|open|outstanding|"
    r"unsolved|difficult) (?:question|problem|issue|goal|task|quest)s?|is (?:of )?(?:crucial|vital|great) "
    r"importance|(?:is|are) (?:essential|crucial|needed|required|necessary) (?:to|for)|"
    r"(?:we|this (?:paper|work|study)) (?:aim|seek|propose|present|introduce|investigate|study|explore|review|"
    r"discuss|describe|develop|examine)|(?:aims?|aimed|seeks?) (?:at|to)|in recent (?:years|decades)|"
    r"(?:is|are) (?:one|among) (?:of )?the (?:most|longest|main|major)|expected to|promising|"
    r"(?:recent|previous|earlier|prior|past) (?:\w+ ){0,2}(?:observations|studies|works?|results|measurements|"
    r"simulations|analyses|models) (?:have )?(?:suggest|show|indicate|reveal|found|point|ha[sd]))\b",
    re.I,
)
# participles and adjectives that make a definite description the paper's own ("the observed trends")
OWN_WORK = frozenset(
    "observed inferred derived measured detected resulting obtained estimated proposed presented computed simulated "
    "studied considered identified selected fitted predicted new".split()
)
_OWN_WORK_SUBJECT = re.compile(r"the (?:" + "|".join(sorted(OWN_WORK)) + r") [a-z][a-z-]*\b")


def is_background(sentence: str) -> bool:
    """True when ``sentence`` frames the work — a challenge, a gap, an open problem, a widely held view, an
    aim — instead of stating what the paper found."""
    return bool(_BACKGROUND.search(sentence))


_AS_RESULT = re.compile(r"\b(?:result|conclusion|finding|claim)s? that (?P<clause>[^?]+)", re.I)


def background_as_result(question: str) -> re.Match[str] | None:
    """Where ``question`` asks about "the result that X" and X is background (:func:`is_background`): the match
    (its ``clause`` group is X), else None. Such a question asks whether a framing sentence replicates, which
    asks nothing."""
    m = _AS_RESULT.search(question)
    return m if m and is_background(m.group("clause")) else None


def own_work_subject(question: str) -> re.Match[str] | None:
    """Where ``question`` asks about "the result that X" and X opens with a lower-case description of the
    paper's own material ("the observed trends", "the inferred total mass"): the match of that description,
    else None. Out of its abstract, such a subject names nothing."""
    m = _AS_RESULT.search(question)
    return _OWN_WORK_SUBJECT.match(question, m.start("clause")) if m else None
