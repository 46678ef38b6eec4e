"""Detect catalogued astronomical object designations in free text.

``find_objects(text)`` returns the designations named in a text, normalised and
de-duplicated, in order of first appearance. It is used by the specificity metric
(a question that names a catalogued object is *specific*) and by generators that
fill a question's ``objects`` field.

What is recognised (case-sensitive catalogue prefixes, as astronomers write them):

* survey-numbered stars and planets, hyphenated: ``WASP-121 b``, ``HAT-P-11 b``,
  ``HATS-7``, ``Kepler-452 b``, ``K2-18 b``, ``KOI-351``, ``TOI-270 d``,
  ``TRAPPIST-1 e``, ``KELT-9 b``, ``XO-3``, ``TrES-2``, ``CoRoT-7 b``, ``Qatar-1``,
  ``OGLE-2005-BLG-390L b``, ``NGTS-1``, ``MASCARA-2``, ``LTT 1445``...;
* space-numbered catalogues: ``HD 209458 b``, ``HIP 65426 b``, ``HR 8799 e``,
  ``GJ 1214 b`` (``Gliese`` is normalised to ``GJ``), ``LHS 1140 b``, ``LP 791-18``,
  ``L 98-59``, ``Ross 128 b``, ``Wolf 359``, ``TYC 1234-567-1``, ``KIC 8462852``,
  ``TIC 12345678``, ``EPIC 201367065``;
* named stars with planets: ``Proxima Cen b``/``Proxima Centauri b``,
  ``Barnard's star``, ``AU Mic b``, ``beta Pic b``, ``55 Cnc e``, ``51 Peg b``,
  ``tau Boo b`` (a number or Greek letter followed by a constellation abbreviation);
* deep-sky catalogues: ``NGC 1275``, ``IC 342``, ``UGC 2885``, ``PGC 2557``,
  ``Abell 1689``, Messier ``M31`` (normalised without a space, 1 to 110);
* J-names: ``2MASS J04414489+2301513``, ``SDSS J1004+4112``, ``WISE J0855-0714``,
  ``ULAS J1342+0928``, ``PSR J0437-4715`` / ``PSR B1257+12``, and Gaia source ids
  ``Gaia DR3 1234567890123456789``;
* transients and sources: ``SN 1987A``, ``SN 2011fe``, ``AT 2017gfo``,
  ``GW170817``, ``GRB 221009A``, ``FRB 20121102A``, ``3C 273``, ``Sgr A*``.

Normalisation: one canonical prefix spelling, hyphen or single space as the
catalogue uses it, and a planet letter separated by one space
(``Kepler-452b`` -> ``Kepler-452 b``, ``HD209458b`` -> ``HD 209458 b``).
Mission names without a number (``Kepler``, ``K2``, ``TESS``, ``Gaia``) and
spectral classes (``M dwarf``) are not objects. The detector is a set of
regular expressions; it favours precision over recall.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A planet letter: b..i, optionally preceded by one space, not followed by a letter,
# a digit, or ".x" (so "e.g." is not a planet "e").
_PLANET = r"(?:\s?(?P<planet>[b-i])(?![A-Za-z0-9])(?!\.[A-Za-z]))?"

_HYPHENATED = [
    "WASP",
    "HAT-P",
    "HATS",
    "Kepler",
    "K2",
    "KOI",
    "TOI",
    "TRAPPIST",
    "KELT",
    "XO",
    "TrES",
    "CoRoT",
    "Qatar",
    "NGTS",
    "MASCARA",
    "WTS",
    "Kepler-",
    "EPIC",
    "KPS",
    "HAT",
    "POTS",
]
_HYPHENATED = sorted({p.rstrip("-") for p in _HYPHENATED}, key=len, reverse=True)

_SPACED = [
    "HD",
    "HIP",
    "HR",
    "GJ",
    "Gliese",
    "LHS",
    "LP",
    "LTT",
    "Ross",
    "Wolf",
    "TYC",
    "KIC",
    "TIC",
    "BD",
    "CD",
    "G",
    "L",
    "LSPM",
    "LkCa",
    "V",
    "DS Tuc",
    "YZ Ceti",
]

_CONSTELLATIONS = (
    "And Ant Aps Aqr Aql Ara Ari Aur Boo Cae Cam Cnc CVn CMa CMi Cap Car Cas Cen Cep Cet "
    "Cha Cir Col Com CrA CrB Crv Crt Cru Cyg Del Dor Dra Equ Eri For Gem Gru Her Hor Hya "
    "Hyi Ind Lac Leo LMi Lep Lib Lup Lyn Lyr Men Mic Mon Mus Nor Oct Oph Ori Pav Peg Per "
    "Phe Pic PsA Psc Pup Pyx Ret Sge Sgr Sco Scl Sct Ser Sex Tau Tel Tri TrA Tuc UMa UMi "
    "Vel Vir Vol Vul"
).split()
_GREEK = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
    "rho sigma tau upsilon phi chi psi omega"
).split()

Normaliser = Callable[[re.Match], str]


def _planet_suffix(match: re.Match) -> str:
    letter = match.groupdict().get("planet")
    return f" {letter}" if letter else ""


def _hyphenated(match: re.Match) -> str:
    prefix = match.group("prefix")
    canon = {"Gliese": "GJ"}.get(prefix, prefix)
    return f"{canon}-{match.group('num')}{_planet_suffix(match)}"


def _spaced(match: re.Match) -> str:
    prefix = match.group("prefix")
    canon = {"Gliese": "GJ"}.get(prefix, prefix)
    return f"{canon} {match.group('num')}{_planet_suffix(match)}"


def _bayer(match: re.Match) -> str:
    return f"{match.group('star')} {match.group('const')}{_planet_suffix(match)}"


def _messier(match: re.Match) -> str:
    return f"M{int(match.group('num'))}"


def _jname(match: re.Match) -> str:
    return f"{match.group('prefix')} J{match.group('coords')}"


def _prefixed_compact(match: re.Match) -> str:
    return f"{match.group('prefix')} {match.group('num')}"


def _no_space(match: re.Match) -> str:
    return f"{match.group('prefix')}{match.group('num')}"


def _proxima(match: re.Match) -> str:
    return f"Proxima Cen{_planet_suffix(match)}"


_NOT_AFTER = r"(?<![A-Za-z0-9_\-])"  # a designation starts at a word edge
_END = r"(?![A-Za-z0-9])"

_PATTERNS: list[tuple[re.Pattern, Normaliser]] = [
    # J-names and pulsars
    (
        re.compile(
            _NOT_AFTER + r"(?P<prefix>2MASS|2MASSW|SDSS|WISE|WISEA|ULAS|VHS|DENIS|PSO|CFBDS|UGPS)"
            r"\s?J(?P<coords>\d{4,8}(?:\.\d+)?[+\-\u2212]\d{2,7}(?:\.\d+)?)" + _END
        ),
        _jname,
    ),
    (
        re.compile(_NOT_AFTER + r"PSR\s?(?P<num>[JB]\d{4}[+\-\u2212]\d{2,4}[A-Za-z]?)" + _END),
        lambda m: "PSR " + m.group("num").replace("\u2212", "-"),
    ),
    (
        re.compile(_NOT_AFTER + r"Gaia\s(?P<rel>(?:E?DR[1-3])|DR\d)\s(?P<num>\d{6,20})" + _END),
        lambda m: f"Gaia {m.group('rel')} {m.group('num')}",
    ),
    # transients and radio sources
    (
        re.compile(_NOT_AFTER + r"(?P<prefix>SN|AT)\s?(?P<num>(?:1[5-9]|20)\d{2}(?:[a-z]{1,3}|[A-Z]))" + _END),
        _prefixed_compact,
    ),
    (re.compile(_NOT_AFTER + r"(?P<prefix>GW)(?P<num>\d{6}(?:_\d{6})?)" + _END), _no_space),
    (re.compile(_NOT_AFTER + r"(?P<prefix>GRB|FRB)\s?(?P<num>\d{6,8}[A-Z]?)" + _END), _prefixed_compact),
    (re.compile(_NOT_AFTER + r"(?P<prefix>3C|4C)\s?(?P<num>\d{1,3}(?:\.\d+)?)" + _END), _prefixed_compact),
    (re.compile(_NOT_AFTER + r"Sgr\sA\*"), lambda m: "Sgr A*"),
    # deep-sky catalogues
    (
        re.compile(
            _NOT_AFTER + r"(?P<prefix>NGC|IC|UGC|PGC|Abell|ESO|Arp|Mrk|Markarian)\s?(?P<num>\d{1,6}[A-Z]?)" + _END
        ),
        lambda m: f"{'Mrk' if m.group('prefix') == 'Markarian' else m.group('prefix')} {m.group('num')}",
    ),
    (
        re.compile(_NOT_AFTER + r"M\s?(?P<num>[1-9]\d?|10\d|110)" + _END + r"(?!\s?(?:dwarf|star|type|sun|\u2609))"),
        _messier,
    ),
    # hyphenated survey designations (OGLE/MOA/KMT microlensing events keep their full id)
    (re.compile(_NOT_AFTER + r"(?P<prefix>OGLE|MOA|KMT)-(?P<num>\d{4}-BLG-\d{2,4}L?)" + _PLANET + _END), _hyphenated),
    (
        re.compile(
            _NOT_AFTER + r"(?P<prefix>" + "|".join(re.escape(p) for p in _HYPHENATED) + r")"
            r"(?P<sep>[-\u2010\u2011\u2013 ])(?P<num>\d{1,7}(?:\.\d{2})?)" + _PLANET + _END
        ),
        _hyphenated,
    ),
    # space-numbered catalogues (LP 791-18, L 98-59, TYC 1234-567-1 keep their hyphens)
    (
        re.compile(
            _NOT_AFTER + r"(?P<prefix>" + "|".join(re.escape(p) for p in sorted(_SPACED, key=len, reverse=True)) + r")"
            r"\s?(?P<num>(?:[+\-]\d{2}\s)?\d{1,9}(?:-\d{1,5}){0,2}[A-C]?)" + _PLANET + _END
        ),
        _spaced,
    ),
    # named planet hosts
    (re.compile(_NOT_AFTER + r"Proxima\s(?:Cen|Centauri)" + _PLANET + _END), _proxima),
    (re.compile(_NOT_AFTER + r"Barnard(?:'s|\u2019s)\s[Ss]tar" + _END), lambda m: "Barnard's star"),
    (
        re.compile(
            _NOT_AFTER
            + r"(?P<star>AU|DS|YZ|TW|GQ|CI|V\d{3,4})\s(?P<const>Mic|Tuc|Cet|Hya|Lup|Tau|Ori|Cyg)"
            + _PLANET
            + _END
        ),
        _bayer,
    ),
    (
        re.compile(
            _NOT_AFTER
            + r"(?P<star>\d{1,3}|"
            + "|".join(_GREEK)
            + r"|"
            + "|".join(g.capitalize() for g in _GREEK)
            + r")"
            r"\s(?P<const>" + "|".join(_CONSTELLATIONS) + r")" + _PLANET + _END
        ),
        _bayer,
    ),
]

# Spaced-catalogue prefixes that are too ambiguous on their own and need a long number.
_MIN_DIGITS = {"G": 3, "L": 2, "V": 3, "BD": 2, "CD": 2}


# Hyphenated prefixes that are also mission names: "Kepler 4 years" is not Kepler-4.
_HYPHEN_ONLY = {"Kepler", "K2", "KOI", "TOI", "EPIC", "XO", "HAT", "MOA", "KMT"}


def _acceptable(match: re.Match) -> bool:
    prefix = match.groupdict().get("prefix")
    if match.groupdict().get("sep") == " " and prefix in _HYPHEN_ONLY:
        return False
    if prefix in _MIN_DIGITS:
        digits = re.match(r"[+\-]?\d+", match.group("num").lstrip("+-"))
        if not digits or len(digits.group(0)) < _MIN_DIGITS[prefix]:
            return False
        if prefix in ("G", "L", "V") and not re.search(r"\d-\d", match.group("num")):
            return False  # bare "G 123"/"L 98"/"V 1298" read as numbers, not designations
    return True


def find_objects(text: str) -> list[str]:
    """Return the catalogued object designations named in ``text``.

    Designations are normalised (canonical prefix, hyphen or single space as the
    catalogue writes it, planet letter after one space), de-duplicated, and listed in
    order of first appearance. Overlapping matches keep the earliest, then longest.
    """
    if not text:
        return []
    spans: list[tuple[int, int, str]] = []
    for pattern, normalise in _PATTERNS:
        for match in pattern.finditer(text):
            if _acceptable(match):
                spans.append((match.start(), match.end(), normalise(match).strip()))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    found: list[str] = []
    last_end = -1
    for start, end, name in spans:
        if start < last_end:
            continue
        last_end = end
        if name not in found:
            found.append(name)
    return found


def names_object(text: str) -> bool:
    """True when ``text`` names at least one catalogued object."""
    return bool(find_objects(text))
