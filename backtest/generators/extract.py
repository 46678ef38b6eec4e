"""Claims with provenance, and the specific things they are about, from past abstracts.

Pure text processing, no model weights. Used by every generator here:

* :func:`split_sentences` — abstracts (LaTeX stripped by :func:`backtest.text.latex.detex`) into sentences;
* :func:`extract_claims` — claim sentences (a result, a non-detection, a tension, a
  caveat) with provenance ``(paper id, sentence index)`` and cue flags;
* :func:`detect` — what a text is about: catalogued designations
  (:func:`backtest.text.objects.find_objects`), the terms of the lexicons
  (:mod:`backtest.text.lexicon`: molecules, instruments and missions, methods, properties,
  phenomena, systematics), and key quantities (a number with an uncertainty or a unit, tied
  to the property before it);
* :func:`find_stances` — the features a sentence says were, or were not, detected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from backtest.core.caches import source_fingerprint
from backtest.core.fileio import atomic_writer
from backtest.core.records import CorpusRecord
from backtest.text.discourse import CLAIM_LEAD_IN
from backtest.text.latex import detex
from backtest.text.lexicon import FEATURES, PROPERTIES, find_terms, scan_terms
from backtest.text.objects import find_objects

_ABBREVIATIONS = (
    "e.g.",
    "i.e.",
    "et al.",
    "cf.",
    "approx.",
    "Fig.",
    "Figs.",
    "vs.",
    "ca.",
    "resp.",
    "Eq.",
    "Ref.",
    "Sect.",
    "No.",
    "al.",
    "St.",
    "Dr.",
    "Prof.",
    "U.S.",
)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'])")


def split_sentences(text: str) -> list[str]:
    """Split an abstract into sentences, keeping abbreviations and decimals intact."""
    protected = text
    for abbr in _ABBREVIATIONS:
        protected = protected.replace(abbr, abbr.replace(".", "\x00"))
    protected = re.sub(r"(?<=\b[A-Z])\.(?=\s?[A-Z]\.)", "\x00", protected)  # initials "J. R."
    return [s.replace("\x00", ".").strip() for s in _SPLIT.split(protected) if s.strip()]


def _to_float(text: str) -> float:
    """A number as :data:`_NUMBER` matches it: "3.2", "3x10^-3" (or the older "3x10-3"), "10^18"."""
    text = re.sub(r"\s?[x×]\s?10\^?(-?\d+)", r"e\1", text)
    return float(re.sub(r"^([-+]?)10\^(-?\d+)$", r"\g<1>1e\2", text))


_NUMBER = r"[-+]?(?:10\^-?\d+|\d+(?:\.\d+)?(?:\s?[x×]\s?10\^?-?\d+)?)"
_ERR = r"\d+(?:\.\d+)?"
_QUANTITY = re.compile(
    r"(?P<value>" + _NUMBER + r")\s?(?:(?:±|\+/-)\s?(?P<err>" + _ERR + r")"
    r"|\+(?P<up>" + _ERR + r")_?\s?-(?P<lo>" + _ERR + r"))?\s?"
    r"(?P<unit>km s-1 Mpc-1|km/s/Mpc|K|km/s|km s-1|m/s|ms-1|Msun|M_sun|Mjup|MJ|Rjup|RJ|Mearth|Rearth|M_J|R_J|"
    r"kpc|Mpc|pc|au|AU|Gyr|Myr|yr|days?|hr|hours|"
    r"nT|G|kG|keV|MeV|GeV|TeV|eV|erg|dex|ppm|per cent|%|km|cm-3|mag)?(?![A-Za-z])"
)
# A value that is a bound, a rough figure or one end of a range is not a determination.
_BOUND_BEFORE = re.compile(
    r"(?:<|>|≲|≳|≤|≥|~|\bless than|\bmore than|\bgreater than|\bup to|\bat least|\bat most|\babove|\bbelow|"
    r"\bexceed\w*|\bover|\bunder|\babout|\bapproximately|\baround|\bbetween|\bfrom|\bwithin|\bnearly|\balmost|"
    r"\d\s?(?:-|–|to|and))\s*$",
    re.I,
)
_UNIT_ALIASES = {
    "km s-1 Mpc-1": "km/s/Mpc",
    "km s-1": "km/s",
    "ms-1": "m/s",
    "M_sun": "Msun",
    "M_J": "Mjup",
    "MJ": "Mjup",
    "R_J": "Rjup",
    "RJ": "Rjup",
    "AU": "au",
    "per cent": "%",
    "day": "days",
    "hr": "hours",
}


_MAX_TIE_GAP = 30


def _tied(before: str, prop: str) -> bool:
    """True when the property's last mention ends at most 30 characters before the value, with no other
    number in between ("H0 = 73", "a temperature of 1500 K"; not "H0 _ de gives = -0.4"), and it is not
    a derived quantity ("f sigma8" is a growth rate, not sigma8)."""
    aliases = sorted(PROPERTIES[prop], key=len, reverse=True)
    last = None
    for match in re.finditer(
        r"(?<![A-Za-z])(?:" + "|".join(re.escape(a) for a in aliases) + r")(?![A-Za-z])", before, re.I
    ):
        last = match
    if last is None:
        return False
    alias, lowered = last.group(0).lower(), {a.lower() for a in PROPERTIES[prop]}
    if alias != PROPERTIES[prop][0].lower() and (alias.endswith(("es", "ii")) or alias[:-1] in lowered):
        return False  # a plural ("masses of 137 and 103 Msun"): one of several values, not one determination
    gap = before[last.end() :]
    if len(gap) > _MAX_TIE_GAP or re.search(r"\d", gap) or re.search(r"[_^]", gap):
        return False
    return not re.search(r"\bf\s?$", before[: last.start()])


def find_quantities(text: str) -> list[dict]:
    """Key quantities: a number with an uncertainty and/or a unit, tied to the property named
    within the 60 characters before it (``{"property", "value", "err", "unit", "text", "bound"}``).

    ``err`` is the larger side of an asymmetric uncertainty (``137+22_-17`` -> 22); ``unit`` is
    normalised (``km s-1`` -> ``km/s``); ``bound`` is true for upper or lower limits, rough
    figures ("~", "about") and ends of ranges ("10-100"), which are not determinations."""
    found = []
    for match in _QUANTITY.finditer(text):
        err_text = match.group("err") or (
            str(max(float(match.group("up")), float(match.group("lo")))) if match.group("up") else None
        )
        if not (err_text or match.group("unit")):
            continue
        before = text[max(0, match.start() - 60) : match.start()]
        if before and (before[-1].isalnum() or before[-1] in "_.,/^"):
            continue  # the tail of a designation or a word ("GW231123", "M_BH-1")
        props = find_terms(before, "property")
        if not props or not _tied(before, props[-1]):
            continue
        try:
            value = _to_float(match.group("value"))
        except ValueError:
            continue
        unit = match.group("unit") or ""
        norm_unit = _UNIT_ALIASES.get(unit, unit)
        if match.group("up"):
            shown = f"{match.group('value')} (+{match.group('up')}/-{match.group('lo')})"
        elif err_text:
            shown = f"{match.group('value')} ± {err_text}"
        else:
            shown = match.group("value")
        found.append(
            {
                "property": props[-1],
                "value": value,
                "err": float(err_text) if err_text else None,
                "unit": norm_unit,
                "text": f"{shown} {norm_unit}".strip(),
                "bound": bool(_BOUND_BEFORE.search(before[-25:]))
                or match.group("value").startswith("-")
                and bool(re.search(r"\d\s?$", before)),
            }
        )
    return found


_NEG_STANCE = (
    r"(?:no (?:significant |clear |convincing |statistically significant |strong |robust )?"
    r"(?:evidence|detection|sign|signature|indication|trace)s? (?:of|for)|non-?detections? of|"
    r"(?:do|does|did|could|can) not (?:detect|find|see|confirm|support)|not (?:detected|found|observed|seen|confirmed)|"
    r"upper limits? (?:on|to|of|for)|absence of|lack of|rules? out|ruled out|undetected)"
)
_POS_STANCE = (
    r"(?:detect(?:s|ed)?|detections? of|evidence (?:for|of)|identif(?:y|ies|ied|ication of)|presence of|"
    r"signatures? of|confirm(?:s|ed)?(?: the)?(?: presence of| detection of)?|discover(?:y of|s|ed))"
)


@lru_cache(maxsize=1)
def _stance_patterns() -> list[tuple[str, re.Pattern, re.Pattern, re.Pattern]]:
    out = []
    for feature, aliases in FEATURES.items():
        alias = "(?:" + "|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True)) + ")"
        name = r"(?<![\w/+])" + alias + r"(?![\w/+])"
        neg = re.compile(
            _NEG_STANCE + r"[^.;:,]{0,15}?" + name + "|" + name + r"[^.;:]{0,30}?\b(?:is|was|were|are|remains?) "
            r"(?:not|un)\s?(?:detected|seen|found|observed)",
            re.I,
        )
        pos = re.compile(
            r"\b" + _POS_STANCE + r"\b[^.;:,]{0,15}?" + name + "|" + name + r"[^.;:]{0,30}?\b(?:is|was|were|are) "
            r"(?:clearly |robustly |securely |also )?(?:detected|identified|seen|confirmed)",
            re.I,
        )
        out.append((feature, re.compile(name), neg, pos))
    return out


def find_stances(text: str) -> list[tuple[str, str]]:
    """``[(feature, "detected" | "not detected")]``: the features (:data:`FEATURES`) a sentence
    explicitly says were detected, or explicitly says were not detected (the negation bound to the
    feature within a few words). A sentence that denies anything asserts no detection; tentative,
    marginal or hinted detections are not stances."""
    found = []
    hedged = bool(
        re.search(
            r"\b(?:tentative\w*|marginal\w*|hint\w*|possibl\w*|may|might|could|candidate|interchangeable|degenera\w*|ambiguous)\b",
            text,
            re.I,
        )
    )
    denies = bool(re.search(_NEG_STANCE, text, re.I))
    for feature, name, neg, pos in _stance_patterns():
        if not name.search(text):
            continue
        if neg.search(text):
            found.append((feature, "not detected"))
        elif pos.search(text) and not denies and not hedged:
            found.append((feature, "detected"))
    return found


@dataclass(frozen=True)
class Detected:
    """What a text is about."""

    objects: tuple[str, ...] = ()
    molecules: tuple[str, ...] = ()
    instruments: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    systematics: tuple[str, ...] = ()
    phenomena: tuple[str, ...] = ()


def detect(text: str, objects: bool = True) -> Detected:
    """Catalogued objects, molecules, instruments, methods, properties and systematics named in
    ``text`` (plain text: run :func:`detex` first). ``objects=False`` skips the designation
    detector, the slow part, for texts known to name none."""
    terms = scan_terms(text)
    found = tuple(o for o in find_objects(text) if _plausible_object(o)) if objects else ()
    return Detected(
        objects=found,
        molecules=tuple(terms["molecule"]),
        instruments=tuple(terms["instrument"]),
        methods=tuple(terms["method"]),
        properties=tuple(terms["property"]),
        systematics=tuple(terms["systematic"]),
        phenomena=tuple(terms["phenomenon"]),
    )


def _plausible_object(name: str) -> bool:
    """Drop designations that are usually something else in abstracts: Messier numbers under 10
    ("M1" flare classes, "M5" dwarfs) and Bayer-like matches on a bare digit ("1 Oct")."""
    if re.fullmatch(r"M[1-9]", name):
        return False
    if re.fullmatch(r"\d \w{3}", name):
        return False
    return True


# --------------------------------------------------------------------------- claims

RESULT_CUE = re.compile(
    r"\b(?:we|our (?:results?|analysis|observations|measurements|data|models?|simulations?))\s+"
    r"(?:also\s+|further\s+|here\s+)?"
    r"(?:find|found|detect|detected|measure|measured|report|reported|show|showed|shows|demonstrate|confirm|confirmed|"
    r"derive|derived|infer|inferred|constrain|constrained|determine|determined|obtain|obtained|identify|identified|reveal|"
    r"revealed|reveals|indicate|indicates|suggest|suggests|imply|implies|estimate|estimated|conclude|observe|observed)\b"
    r"|\b(?:is|are|was|were|remains?)\s+(?:(?:fully|broadly|largely|not)\s+)?(?:consistent|inconsistent|compatible)\s+with\b"
    r"|\b(?:results?|data|observations|measurements|spectra|analysis)\s+(?:reveal|reveals|indicate|indicates|suggest|suggests|show|shows|imply|implies|favou?r|favou?rs)\b",
)
NEGATIVE_CUE = re.compile(
    r"\b(?:no (?:evidence|significant|detection|sign)|not (?:detected|detect|find|found|observed|required|supported)|"
    r"non-?detections?|"
    r"upper limits?|rules? out|ruled out|absence of|lack of|disfavou?r(?:s|ed)?|"
    r"cannot be explained|featureless|flat spectrum)\b",
)
TENSION_CUE = re.compile(
    r"\b(?:in tension|tension (?:with|between)|discrepan\w*|disagree\w*|inconsisten\w*|contradict\w*|"
    r"conflict\w*|at odds|"
    r"in contrast (?:to|with)|contrary to|differs? (?:significantly )?from|challeng\w*|puzzl\w*|unexpected\w*)\b",
)
METHOD_CUE = re.compile(
    r"\b(?:systematic\w*|bias(?:ed|es)?|contaminat\w*|degenera\w*|model[- ]dependen\w*|assum\w*|calibrat\w*|"
    r"artefact\w*|"
    r"artifact\w*|spurious|instrumental|overestimat\w*|underestimat\w*|sensitive to|"
    r"depends? (?:strongly )?on|robust\w*)\b",
)
QUALIFY_CUE = re.compile(
    r"\b(?:however|only (?:if|when|for|under|in)|limited to|caution\w*|cannot (?:exclude|rule out)|alternativ\w*|"
    r"rather than|not necessarily|may instead|revisit\w*|re-?analy\w*|not unique|tentative\w*|marginal\w*|"
    r"partially|depends on|unless)\b",
)
SINGLE_DATASET_CUE = re.compile(
    r"\b(?:a single (?:epoch|transit|eclipse|visit|observation|night|dataset|instrument|event|spectrum)|"
    r"one (?:transit|epoch|visit|night)|"
    r"first (?:detection|measurement|observation)s?|tentative(?:ly)?|marginal(?:ly)?|"
    r"\d(?:\.\d)?\s?sigma|\d(?:\.\d)?σ)\b",
)


@dataclass(frozen=True)
class Claim:
    """One claim sentence with provenance and what it is about."""

    paper_id: str
    index: int
    text: str
    detected: Detected
    quantities: tuple = ()
    stances: tuple[tuple[str, str], ...] = ()
    result: bool = False
    negative: bool = False
    tension: bool = False
    method_issue: bool = False
    qualify: bool = False
    single_dataset: bool = False

    @property
    def claim_id(self) -> str:
        return f"{self.paper_id}#s{self.index}"

    @property
    def is_claim(self) -> bool:
        return self.result or self.negative or self.tension or bool(self.stances) or self.measured

    @property
    def measured(self) -> bool:
        """True when the sentence states a determination: a value with an uncertainty that is not a bound."""
        return any(dict(q)["err"] is not None and not dict(q).get("bound") for q in self.quantities)


@dataclass
class PaperClaims:
    """A paper's sentences, claims and what the whole abstract is about."""

    record: CorpusRecord
    sentences: list[str]
    claims: list[Claim]
    detected: Detected
    title_objects: tuple[str, ...] = field(default_factory=tuple)


_DIGIT = re.compile(r"\d")


def _squash(text: str) -> str:
    return re.sub(r"[\s\-\u2010\u2011\u2013]", "", text).lower()


def analyse_sentence(paper_id: str, index: int, text: str, objects: tuple[str, ...] | None = None) -> Claim:
    """Cue flags, detected things and key quantities of one (plain-text) sentence.

    ``objects``: the designations already found in the whole abstract; the sentence is
    about those whose spelling (ignoring spaces and hyphens) it contains. ``None`` runs
    the designation detector on the sentence itself."""
    low = text.lower()
    if objects is None:
        detected = detect(text)
    else:
        squashed = _squash(text)
        mine = tuple(o for o in objects if _squash(o) in squashed)
        detected = replace(detect(text, objects=False), objects=mine)
    return Claim(
        paper_id=paper_id,
        index=index,
        text=text,
        detected=detected,
        quantities=tuple(tuple(sorted(q.items())) for q in find_quantities(text)) if _DIGIT.search(text) else (),
        stances=tuple(find_stances(text)),
        result=bool(RESULT_CUE.search(low)),
        negative=bool(NEGATIVE_CUE.search(low)),
        tension=bool(TENSION_CUE.search(low)),
        method_issue=bool(METHOD_CUE.search(low)),
        qualify=bool(QUALIFY_CUE.search(low)),
        single_dataset=bool(SINGLE_DATASET_CUE.search(low)),
    )


def extract_claims(record: CorpusRecord) -> PaperClaims:
    """Split one abstract into sentences and keep the claim sentences (result, non-detection,
    tension or caveat), each with its provenance ``(paper id, sentence index)``."""
    title = detex(record.title)
    sentences = split_sentences(detex(record.abstract))
    objects = tuple(o for o in find_objects(title + ". " + " ".join(sentences)) if _plausible_object(o))
    title_found = analyse_sentence(record.id, -1, title, objects=objects).detected
    analysed = [analyse_sentence(record.id, i, s, objects=objects) for i, s in enumerate(sentences)]
    claims = [c for c in analysed if c.is_claim or c.qualify or c.method_issue]

    def union(kind: str) -> tuple[str, ...]:
        seen = dict.fromkeys(getattr(title_found, kind))
        for claim in analysed:
            seen.update(dict.fromkeys(getattr(claim.detected, kind)))
        return tuple(seen)

    whole = Detected(
        objects=objects,
        molecules=union("molecules"),
        instruments=union("instruments"),
        methods=union("methods"),
        properties=union("properties"),
        systematics=union("systematics"),
        phenomena=union("phenomena"),
    )
    return PaperClaims(
        record=record, sentences=sentences, claims=claims, detected=whole, title_objects=title_found.objects
    )


def main_claim(paper: PaperClaims) -> str | None:
    """The paper's headline claim: its first result sentence, else its first claim, else None."""
    for claim in paper.claims:
        if claim.result:
            return claim.text
    for claim in paper.claims:
        if claim.negative or claim.tension:
            return claim.text
    return None


_SECTION = re.compile(
    r"^(?:(?:results?|conclusions?|methods?|aims?|context|background|findings|summary)\s*[:.]\s*)+", re.I
)


_NOT_DECLARATIVE = re.compile(r"^(?:how|whether|what|why|which|to|by|using|in order|from|for|with|if)\b", re.I)


def is_declarative(clause: str) -> bool:
    """False for clause fragments that do not state a result ("how the ...", "to test ...")."""
    return not _NOT_DECLARATIVE.match(clause)


def claim_clause(sentence: str, max_chars: int = 220) -> str:
    """A claim sentence as a clause: lead-in ("Here we show that") removed, first letter
    lowered unless it starts a name, final period dropped, cut at a clause boundary
    when longer than ``max_chars``."""
    text = _SECTION.sub("", sentence.strip())
    text = CLAIM_LEAD_IN.sub("", text).strip()
    text = text.rstrip(" .;:")
    text = text.replace("?", "")
    if len(text) > max_chars:
        cut = max(text.rfind(sep, 0, max_chars) for sep in (", ", "; ", " and ", " which ", " while ", " -- "))
        text = text[:cut] if cut > max_chars // 3 else text[:max_chars].rsplit(" ", 1)[0]
        text = text.rstrip(" ,;:-")
    if (
        text
        and text[0].isupper()
        and not (len(text) > 1 and (text[1].isupper() or text[1].isdigit() or text[1] in "-/"))
    ):
        text = text[0].lower() + text[1:]
    return text


# --------------------------------------------------------------------------- whole corpus, cached

#: the modules whose rules and tables shape the claims: the claims cache is keyed by their source
CLAIM_RULES = (__name__, "backtest.text.latex", "backtest.text.lexicon", "backtest.text.objects")


def analyse_corpus(past, progress: bool = False) -> list[PaperClaims]:
    """:func:`extract_claims` for every record of a past corpus, sorted by (date, id).

    The result is cached in ``<workspace>/.cache/generators/`` under the corpus seal and the source fingerprint
    of :data:`CLAIM_RULES` (about a minute for 6,000 abstracts on one busy core; the designation detector is the
    slow part), and in memory for the process. An edit to any of those modules rebuilds it."""
    import pickle

    key = (past.seal, source_fingerprint(*CLAIM_RULES))
    if key in _MEMO:
        return _MEMO[key]
    cache = past.ws.cache / "generators" / f"claims-{past.seal[:24]}-{key[1][:16]}.pkl"
    papers = None
    if cache.is_file():
        try:
            with open(cache, "rb") as handle:
                papers = pickle.load(handle)
        except Exception:  # noqa: BLE001 - a stale or broken cache is rebuilt
            papers = None
    if papers is None:
        records = sorted(past.records(), key=lambda r: (r.published, r.id))
        papers = [extract_claims(r) for r in records]
        with atomic_writer(cache, "wb") as handle:
            pickle.dump(papers, handle, protocol=pickle.HIGHEST_PROTOCOL)
    _MEMO.clear()
    _MEMO[key] = papers
    return papers


_MEMO: dict[tuple[str, str], list[PaperClaims]] = {}
