"""backtest.text.objects: catalogued designations found, normalised, de-duplicated, in order."""

import pytest

from backtest.text.objects import find_objects, names_object

CASES = [
    ("Is WASP-121 b hotter than WASP-121b suggests?", ["WASP-121 b"]),
    ("Does HD 209458 b (HD209458b) lose mass?", ["HD 209458 b"]),
    ("Can JWST see an atmosphere on TRAPPIST-1 e or TRAPPIST-1?", ["TRAPPIST-1 e", "TRAPPIST-1"]),
    ("Water on K2-18 b and Kepler-452b, haze on GJ 1214 b?", ["K2-18 b", "Kepler-452 b", "GJ 1214 b"]),
    ("TOI-270 d, HAT-P-11b, 55 Cnc e and LHS 1140 b", ["TOI-270 d", "HAT-P-11 b", "55 Cnc e", "LHS 1140 b"]),
    ("Gas in NGC 1275, M87 and M 31, and IC 342", ["NGC 1275", "M87", "M31", "IC 342"]),
    ("The brown dwarf 2MASS J04414489+2301513 and SDSS J1004+4112", ["2MASS J04414489+2301513", "SDSS J1004+4112"]),
    ("Gaia DR3 4373465352415301632 and PSR B1257+12", ["Gaia DR3 4373465352415301632", "PSR B1257+12"]),
    (
        "Gliese 581 g, Proxima Centauri b, AU Mic b, beta Pic b, 51 Peg b, L 98-59",
        ["GJ 581 g", "Proxima Cen b", "AU Mic b", "beta Pic b", "51 Peg b", "L 98-59"],
    ),
    (
        "SN 1987A, SN 2011fe, GW170817, GRB 221009A, 3C 273 and Sgr A*",
        ["SN 1987A", "SN 2011fe", "GW170817", "GRB 221009A", "3C 273", "Sgr A*"],
    ),
]

NEGATIVES = [
    "Do M dwarf flares strip atmospheres of rocky planets?",
    "Is the Kepler sample biased, e.g. over 4 years of K2 data?",
    "In 2020 about 5 per cent of hot Jupiters showed a HR diagram offset.",
    "What sets the radius valley of sub-Neptunes observed by TESS and Gaia?",
]


@pytest.mark.parametrize("text,expected", CASES)
def test_designations(text, expected):
    assert find_objects(text) == expected


@pytest.mark.parametrize("text", NEGATIVES)
def test_no_false_positives(text):
    assert find_objects(text) == [] and not names_object(text)


def test_release_questions_specificity():
    """The release's v1 pilot questions declare their objects; every declared object that the
    text names is found, and nothing undeclared is (TRAPPIST-1 for the declared planets)."""
    from backtest.core.fileio import iter_jsonl

    from .conftest import SQB

    path = SQB / "data/questions/astronomy_questions_v1.jsonl"
    if not path.is_file():
        pytest.skip("reference release not found")
    rows = [row for _, row in iter_jsonl(path)]
    for row in rows:
        found = find_objects(row["question"])
        declared = row.get("objects") or []
        for name in declared:
            if name in row["question"]:
                assert name in found, (row["question_id"], name, found)
        for name in found:
            assert any(d.startswith(name) for d in declared), (row["question_id"], name, declared)
    assert sum(bool(find_objects(r["question"])) for r in rows) == 9  # q_009 names "hot Neptunes", no object
