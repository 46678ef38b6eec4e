"""The clarity score: each check fires on its failure mode and not on clean questions, real questions included.

Real questions come from the reference release (``../shared/reference/sqb``: its hand-checked pilot questions,
its template baselines and its direct-LLM questions) and from this repository's baseline generators as the
readers of ``judges/validation/pairs-v1`` saw them (committed).
"""

from __future__ import annotations

import json
import math

import pytest

from backtest.text.clarity import (
    CLARITY_CHECKS,
    CLARITY_THRESHOLD,
    CLARITY_VERSION,
    FORM_FEATURES,
    MAJOR,
    MINOR,
    clarity_score,
    question_form,
)

from .conftest import REPO, SQB

CLEAN = "Is the subsolar terminator water abundance retrieved for HD 209458 b an artifact of retrieval assumptions?"

# one crafted example per check, each with the span the check must report
CRAFTED = [
    ("empty", " ? ", " ? "),
    ("too_long", "Does " + "the very faint and strongly variable signal of the disk " * 6 + "persist?", "words"),
    ("too_short", "Why sunspots?", "2 words"),
    ("garbled_text", "<P />How does seasonal forcing affect the atmosphere of Uranus?", "<P />"),
    ("garbled_text", "Does the SHMR M_ (M_h) = ( M1) + f hold for massive halos?", "_"),
    (
        "garbled_text",
        "Plenty of needles remain to be found.CitationHow much of the sky has SETI searched?",
        "found.Citation",
    ),
    ("not_a_question", "The lowest mass limit for brown dwarf formation in Taurus?", "The lowest mass limit"),
    (
        "several_sentences",
        "Future HST observations will constrain the composition of WASP-39b — how can this be resolved?",
        "— how",
    ),
    ("two_questions", "Is the disk of HD 163296 warped? Also, is it flaring at large radii?", "? Also"),
    ("two_questions", "How do hazes form on hot Jupiters, and what sets their particle sizes?", "and what"),
    ("two_questions", "Does tidal heating inflate hot Jupiters; how strongly does it depend on eccentricity?", "; how"),
    ("leading", "Isn't it true that hot Jupiters are inflated by ohmic dissipation?", "Isn't it true"),
    (
        "leading",
        "Given that hot Jupiters are inflated by ohmic heating, why do some warm Jupiters show it too?",
        "Given that",
    ),
    ("leading", "Can new JWST spectra confirm that WASP-39b has a metal-rich atmosphere?", "confirm that"),
    ("leading", "How much does adding JWST data improve the retrieved C/O ratio of WASP-39b?", "How much does"),
    (
        "contradictory_quantifiers",
        "Do all hot Jupiters in the Kepler field show thermal inversions while none of them show TiO?",
        "all hot Jupiters",
    ),
    (
        "contradictory_quantifiers",
        "Are dust storms on Mars always global in extent and sometimes confined to one hemisphere?",
        "always global",
    ),
    (
        "contradictory_quantifiers",
        "Does every M dwarf flare in the TESS sample show some flares that are not white-light events?",
        "every M dwarf",
    ),
    ("unresolved_reference", "What is the origin of these bars?", "these bars"),
    ("unresolved_reference", "How do they regulate the accretion rate onto the protostar?", "they"),
    ("unresolved_reference", "Is our measured spin of the black hole robust to the disk model?", "our"),
    ("unresolved_reference", "Does the finding that we detect water in K2-18 b survive reanalysis?", "we"),
    ("unresolved_reference", "Does the conclusion of the authors about the age of Gaia-Enceladus hold?", "the authors"),
    ("unresolved_reference", "Will the above estimate of the Hubble constant survive new Cepheid data?", "the above"),
    (
        "unresolved_reference",
        "Is the finding that in addition, stellar spots bias the radii of small planets robust?",
        "in addition,",
    ),
    ("unresolved_reference", "Does the sample show a metallicity gradient across the disk of M33?", "the sample"),
    ("unresolved_reference", "Does the source show a redshift of 7.3 in new spectra?", "the source"),
    (
        "unresolved_reference",
        "Does the result that the observed trends are consistent with grain growth in brown dwarf disks hold?",
        "the observed trends",
    ),
    (
        "background_as_result",
        "Is the reported result that HI phase separation is a challenging problem in the Milky Way robust?",
        "HI phase separation is a challenging problem",
    ),
    ("no_subject", "Has subsequent work clarified the details of several issues?", "no specific content word"),
    ("no_subject", "Will SDA and MHD reproduce the ULF result?", "only jargon"),
]


@pytest.mark.parametrize("check, question, span", CRAFTED, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CRAFTED)])
def test_each_check_fires_on_its_example(check, question, span):
    result = clarity_score(question)
    found = [p for p in result.problems if p.check == check]
    assert found, (check, result.describe())
    assert any(span in p.span for p in found), [p.span for p in found]
    assert result.score <= 1.0 - CLARITY_CHECKS[check][0] + 1e-9
    for p in found:
        if p.check not in {"empty", "too_long", "too_short", "not_a_question", "no_subject"}:
            assert question[p.start : p.end] == p.span  # a span is the matched text, with its offsets


def test_every_check_has_a_crafted_example():
    assert {c for c, _, _ in CRAFTED} == set(CLARITY_CHECKS)


@pytest.mark.parametrize("check", sorted(CLARITY_CHECKS))
def test_no_check_fires_on_a_clean_question(check):
    assert check not in clarity_score(CLEAN).checks


def test_clean_questions_score_one_and_near_misses_stay_clean():
    clean = [
        CLEAN,
        "How can we apply lessons from solar superflares to the habitability of planets around M dwarfs?",
        "Is there evidence for a CO-rich atmosphere on GJ 1132 b from transmission spectroscopy?",
        "Can it be established how asteroids release their kinetic energy in the atmosphere of Jupiter?",
        "Is reflected light from 51 Peg b detectable, or do observations set only upper limits on it?",
        "Does GJ 1132 b show spectral features such as those attributed to H2O in its transmission spectrum?",
        "Do all ultra-hot Jupiters or none of them show a thermal inversion above 2000 K?",  # an alternative
        "Has the atmosphere of CoRoT-2 b been eroded, or is the planet's radius set by tidal heating?",
        'Is the main result reported in "Does chemical evolution in disk midplanes matter?" robust to reanalysis?',
    ]
    for q in clean:
        result = clarity_score(q)
        assert result.score == 1.0, (q, result.describe())


def test_score_is_the_product_over_distinct_checks_and_deterministic():
    q = "Does the finding that we measure these offsets hold, and what sets them?"
    result = clarity_score(q)
    assert set(result.checks) == {"unresolved_reference", "two_questions"}
    assert len([p for p in result.problems if p.check == "unresolved_reference"]) >= 2  # counted once in the score
    assert math.isclose(result.score, round((1 - MAJOR) * (1 - MINOR), 4))
    assert clarity_score(q) == result and result.version == CLARITY_VERSION
    assert clarity_score("?").score == 0.0 and clarity_score("").checks == ["empty"]
    data = result.as_dict()
    assert data["score"] == result.score and data["version"] == CLARITY_VERSION
    assert [p["check"] for p in data["problems"]] == [p.check for p in result.problems]


def test_the_threshold_separates_one_major_problem_from_two_minor_ones():
    assert 1 - MAJOR < CLARITY_THRESHOLD <= (1 - MINOR) ** 2
    assert (1 - MINOR) ** 3 < CLARITY_THRESHOLD


def test_question_form_is_unchanged():
    """The fitted judges' weights depend on question_form; the score sits beside it and changes nothing."""
    assert len(FORM_FEATURES) == 14 and FORM_FEATURES[0] == "log_words" and FORM_FEATURES[-1] == "capital_ratio"
    row = question_form("Do these hot Jupiters in our sample show H2O at 1.4 um and 1200 K?")
    assert len(row) == len(FORM_FEATURES) and row[7] == 1.0 and row[8] == 1.0


# --------------------------------------------------------------------------- real questions


def _questions(path):
    return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sqb():
    if not SQB.is_dir():
        pytest.skip(f"reference release not found at {SQB}")
    return SQB


def test_reference_pilot_and_template_questions_are_clear(sqb):
    """The release's hand-checked pilot questions and its two title templates: nothing below the threshold,
    no major problem."""
    for path in (
        sqb / "data" / "questions" / "astronomy_questions_v1.jsonl",
        sqb / "submissions" / "citation_leader_L1" / "questions.jsonl",
        sqb / "submissions" / "random_claim_L1" / "questions.jsonl",
    ):
        for q in _questions(path):
            result = clarity_score(q)
            assert result.score >= 0.75, (q, result.describe())


def test_reference_direct_llm_questions_are_two_questions_in_one(sqb):
    """The release's direct-LLM questions are fluent but usually ask two things ('How X, and what Y?'):
    most carry the minor two_questions problem, almost none falls below the threshold."""
    results = [clarity_score(q) for q in _questions(sqb / "submissions" / "direct_llm_L1" / "questions.jsonl")]
    assert sum("two_questions" in r.checks for r in results) > len(results) / 2
    assert sum(r.score < CLARITY_THRESHOLD for r in results) <= 0.05 * len(results)


def test_reference_review_future_work_questions_show_their_extraction_damage(sqb):
    results = {
        q: clarity_score(q) for q in _questions(sqb / "submissions" / "review_future_work_L1" / "questions.jsonl")
    }
    assert results["The lowest bar?"].checks == ["too_short", "not_a_question"]
    assert (
        "garbled_text"
        in results["Hopefully, there are plenty of needles to be found.CitationHow Much SETI Has Been Done?"].checks
    )
    assert "unresolved_reference" in results["What is their temperature?"].checks
    assert sum(r.score < CLARITY_THRESHOLD for r in results.values()) > len(results) / 2


def test_baseline_generators_lifted_clauses_are_flagged():
    """This repository's baseline questions as the pair readers saw them: a clause lifted from an abstract
    with its first person ("we find ...") or its anaphora falls below the threshold."""
    pairs = [json.loads(line) for line in (REPO / "judges/validation/pairs-v1/pairs.jsonl").read_text().splitlines()]
    questions = [p[side]["question"] for p in pairs for side in ("a", "b")]
    lifted = [q for q in questions if " that we " in q]
    assert len(lifted) >= 3
    for q in lifted:
        result = clarity_score(q)
        assert "unresolved_reference" in result.checks and result.score < CLARITY_THRESHOLD, q
