"""Fast unit tests of the generator pieces: extraction, rewriting, selection, protocol, isolation, CLI errors."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.records import CorpusRecord
from backtest.generators import available_generators, get_generator
from backtest.generators.evidence_graph import balance_types, conflict, findings
from backtest.generators.extract import (
    claim_clause,
    detect,
    extract_claims,
    find_quantities,
    split_sentences,
)
from backtest.generators.protocol import Draft, clean_question, resolve_generated_at
from backtest.generators.review_future_work import cue_strength, to_question
from backtest.generators.select import select_diverse
from backtest.generators.tension_questions import TEMPLATES, contract, realise
from backtest.generators.tensions import Tension, condition_of, problem_noun
from backtest.text.latex import detex

GENERATORS_DIR = Path(__file__).resolve().parent.parent / "backtest" / "generators"
FORBIDDEN = ("backtest.corpus.future", "backtest.retrieve")


def _record(
    abstract: str, title: str = "A study", rid: str = "2501.00001", day=dt.date(2025, 1, 2), authors=("A. One",)
):
    return CorpusRecord(id=rid, title=title, abstract=abstract, published=day, authors=list(authors), source="test")


def test_generator_modules_never_import_the_future_corpus_or_retrievers():
    """Isolation is mechanical: no generator module imports backtest.corpus.future or backtest.retrieve."""
    scanned = 0
    for path in sorted(GENERATORS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scanned += 1
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                package = ["backtest", "generators"][: 3 - node.level] if node.level else []
                base = ".".join(package + ([node.module] if node.module else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for name in names:
                assert not any(name == f or name.startswith(f + ".") for f in FORBIDDEN), f"{path.name} imports {name}"
                if name != "__future__" and name.startswith("backtest"):
                    assert "future" not in name, f"{path.name} imports {name}"
    assert scanned >= 8


def test_registry_lists_the_five_generators_and_rejects_unknown_names():
    assert {"random_claims", "citation_leaders", "review_future_work", "direct_llm", "evidence_graph"} <= set(
        available_generators()
    )
    for name in ("random_claims", "citation_leaders", "review_future_work", "evidence_graph"):
        assert hasattr(get_generator(name), "generate")
    with pytest.raises(BadInput, match="unknown generator"):
        get_generator("nope")


def test_sentences_and_latex_cleanup():
    text = detex(
        r"We detect H$_2$O at 5$\sigma$ in WASP-39b, e.g. with JWST. The C/O is 0.5 $\pm$ 0.1. Et al. 2020 agree."
    )
    assert "H2O" in text and "±" in text
    sentences = split_sentences(text)
    assert len(sentences) == 3 and sentences[0].endswith("JWST.")


@pytest.mark.parametrize(
    ("latex", "plain"),
    [  # intelligibility-v3's residue: a symbol lost with the LaTeX left "low- stars", "~eq" and "~-1"
        (r"that low-$\alpha$ stars with GSE-like kinematics", "that low-α stars with GSE-like kinematics"),
        (r"LISCA II was originally $\simeq 0.75-1$ kpc apart", "LISCA II was originally ~ 0.75-1 kpc apart"),
        (r"spectra that behave as $\sim\omega^{-1}$", "spectra that behave as ~ω^-1"),
        (r"H$\alpha$ and FUV at $5\sigma$", "Hα and FUV at 5σ"),
        (r"$S_8 = 0.78 \pm 0.02$ and $\sigma_8$", "S8 = 0.78 ± 0.02 and σ8"),
        (r"a 5000 \AA{} line, $\log g$ and $\Lambda$CDM", "a 5000 Å line, log g and ΛCDM"),
        (r"$v = 30$ km s$^{-1}$, $3\times10^{-3}$", "v = 30 km s-1, 3x10^-3"),  # units as before
        # intelligibility-v4's residue: "E > 1018 eV", "only for 23 of", "EW[Hβ]40 A"
        (r"energies $E > 10^{18}$ eV, $\sim10^{13}$ cm$^{-2}$", "energies E > 10^18 eV, ~10^13 cm-2"),
        (r"only for $\frac23$ of the total, $\frac{1}{2}$", "only for 2/3 of the total, 1/2"),
        (r"$\mathrm{EW}[H$\beta$]\lesssim40$ \r{A}", "EW[Hβ]<40 Å"),
    ],
)
def test_detex_keeps_symbols_that_carry_meaning(latex, plain):
    assert detex(latex) == plain


def test_detection_of_objects_molecules_instruments_methods_properties():
    d = detect(
        "JWST NIRSpec transmission spectra of WASP-121 b reveal H2O and CO2; the temperature is 1500 K, "
        "and stellar contamination biases the retrieval analysis of K2-18 b and TRAPPIST-1."
    )
    assert {"WASP-121 b", "K2-18 b", "TRAPPIST-1"} <= set(d.objects)
    assert {"H2O", "CO2"} <= set(d.molecules)
    assert {"JWST", "NIRSpec"} <= set(d.instruments)
    assert "transmission spectroscopy" in d.methods and "atmospheric retrieval" in d.methods
    assert "temperature" in d.properties and "stellar contamination" in d.systematics
    q = find_quantities("the equilibrium temperature of 1500 ± 50 K")
    assert (
        q and q[0]["property"] == "temperature" and q[0]["value"] == 1500 and q[0]["err"] == 50 and q[0]["unit"] == "K"
    )
    assert "M1" not in detect("An M1 flare and M5 dwarfs were seen.").objects
    (q,) = find_quantities(detex(r"a black hole mass of $3.2\times10^{-3} \pm 0.1$ Msun"))  # caret kept
    assert q["value"] == pytest.approx(3.2e-3) and q["err"] == 0.1 and q["unit"] == "Msun"


def test_claims_keep_provenance_and_cues():
    paper = extract_claims(
        _record(
            "Hot Jupiters are common. We find no evidence for TiO in WASP-19 b. "
            "However, this result depends on the assumed cloud model."
        )
    )
    ids = [c.claim_id for c in paper.claims]
    assert ids == ["2501.00001#s1", "2501.00001#s2"]
    assert paper.claims[0].negative and paper.claims[0].result and "WASP-19 b" in paper.claims[0].detected.objects
    assert paper.claims[1].qualify


def test_claim_clause_strips_lead_in():
    assert claim_clause("Here we show that the disk is warped.") == "the disk is warped"
    assert claim_clause("We find that WASP-39 b has CO2.").startswith("WASP-39 b")
    long = "We find that " + ", ".join(["the result is stable"] * 30) + "."
    assert len(claim_clause(long)) <= 220


def test_future_work_rewrites_are_questions_in_the_authors_words():
    assert cue_strength("The origin of the radio emission remains unclear.") == 2
    assert (
        to_question("The origin of the radio emission remains unclear.") == "What is the origin of the radio emission?"
    )
    assert (
        to_question("However, whether the dust is primordial remains an open question.")
        == "Does new evidence settle whether the dust is primordial?"
    )
    assert (
        to_question("Further observations are needed to confirm the periodicity of the signal.")
        == "Will further observations confirm the periodicity of the signal?"
    )
    assert to_question("It remains unclear.") is None
    assert cue_strength("We measure the mass.") == 0


def _pair(a_text, b_text, a_title="A study", b_title="A study"):
    pa = extract_claims(_record(a_text, title=a_title, rid="2501.00001", authors=("X",)))
    pb = extract_claims(_record(b_text, title=b_title, rid="2502.00002", day=dt.date(2025, 2, 2), authors=("Y",)))
    return pa, pb


def _findings(paper):
    return [f for c in paper.claims for f in findings(c, paper)]


def test_a_tension_needs_one_subject_one_quantity_and_a_real_conflict():
    """Numeric: the same property and unit of the same object, > 2 sigma apart; stance: detected vs not detected."""
    pa, pb = _pair(
        "We measure an equilibrium temperature of 1500 ± 50 K for WASP-12 b.",
        "We find a temperature of 2500 ± 60 K for WASP-12 b.",
    )
    (fa,), (fb,) = _findings(pa), _findings(pb)
    assert fa.subject == fb.subject == "WASP-12 b" and fa.key == fb.key == ("quantity", "temperature", "K")
    assert conflict(fa, fb) == ("numeric", 12.8)
    # within 2 sigma: no tension
    pa2, pb2 = _pair(
        "We find a temperature of 1500 ± 50 K for WASP-12 b.", "The temperature is 1560 ± 60 K for WASP-12 b."
    )
    assert conflict(_findings(pa2)[0], _findings(pb2)[0]) is None
    # different objects, or different quantities: never paired
    pa3, pb3 = _pair(
        "We find a temperature of 1500 ± 50 K for WASP-12 b.", "We find a mass of 2.5 ± 0.1 Mjup for WASP-12 b."
    )
    assert conflict(_findings(pa3)[0], _findings(pb3)[0]) is None
    pa4, pb4 = _pair(
        "We find a temperature of 1500 ± 50 K for WASP-12 b.", "We find a temperature of 2500 ± 50 K for WASP-19 b."
    )
    assert conflict(_findings(pa4)[0], _findings(pb4)[0]) is None
    # detection vs non-detection of the same molecule in the same planet
    pa5, pb5 = _pair("We detect H2O in WASP-17 b.", "We find no evidence for H2O in WASP-17 b.")
    (sa,), (sb,) = _findings(pa5), _findings(pb5)
    assert (sa.key, sa.stance, sb.stance) == (("feature", "H2O"), "detected", "not detected")
    assert conflict(sa, sb) == ("stance", None)
    # a hedged detection is no stance; a sentence naming two objects has no subject
    assert _findings(_pair("We report a tentative detection of H2O in WASP-17 b.", "x")[0]) == []
    assert _findings(_pair("We measure a temperature of 1500 ± 50 K for WASP-12 b and WASP-19 b.", "x")[0]) == []
    # the title's one object is the subject of a sentence naming none
    (ft,) = _findings(_pair("We find a temperature of 1500 ± 50 K.", "x", a_title="The dayside of WASP-12 b")[0])
    assert ft.subject == "WASP-12 b"


def test_quantities_are_determinations_not_bounds_ranges_or_one_of_several():
    (q,) = find_quantities("source frame mass of 137+22_-17 M_sun")
    assert (q["value"], q["err"], q["unit"], q["text"], q["bound"]) == (137, 22, "Msun", "137 (+22/-17) Msun", False)
    assert find_quantities("source frame masses of 137+22_-17 M_sun and 103+20_-52 M_sun") == []  # components
    assert find_quantities("temperatures exceeding 10,000 K") == []
    assert find_quantities("the IDE model with Q = H0 _ de gives = -0.4170 ± 0.1220") == []  # not tied to H0
    assert find_quantities("we find f sigma8 = 0.384 +0.094 -0.157") == []  # a growth rate, not sigma8
    (h0,) = find_quantities("we find H0=67.35±0.54 km s-1 Mpc-1")
    assert h0["property"] == "Hubble constant" and h0["unit"] == "km/s/Mpc"
    assert find_quantities("a temperature of < 1500 K")[0]["bound"] is True


def test_question_states_subject_quantity_both_findings_and_the_test():
    import random

    pa, pb = _pair(
        "We measure an equilibrium temperature of 1500 ± 50 K for WASP-12 b.",
        "We find a temperature of 2500 ± 60 K for WASP-12 b.",
    )
    (fa,), (fb,) = _findings(pa), _findings(pb)
    t = Tension(
        evidence="numeric",
        subject="WASP-12 b",
        subject_kind="object",
        key=fa.key,
        a=fa,
        b=fb,
        paper_a=pa,
        paper_b=pb,
        sigma=12.8,
    )
    for seed in range(6):
        q = realise(t, random.Random(seed))
        assert q.count("?") == 1 and "WASP-12 b" in q and "temperature" in q
        assert "1500 ± 50 K" in q and "2500 ± 60 K" in q and "independent" in q
        assert "main result" not in q
    c = contract(t)
    assert (
        set(c)
        == {"literature_gap", "hypothesis", "minimal_test", "decisive_metric", "supporting_result", "falsifying_result"}
        and c["supporting_result"] != c["falsifying_result"]
    )


def test_templates_are_neutral_questions():
    for options in TEMPLATES.values():
        for template in options:
            assert template.endswith("?") and template.count("?") == 1
            assert "{subject}" in template or "{np}" in template
            lowered = template.lower()
            assert not any(w in lowered for w in ("isn't", "doesn't", "obviously", "clearly", "surely", "wrong"))
            assert "main result" not in lowered


@pytest.mark.parametrize(
    "sentence, clause",
    [
        (
            "We find that WASP-39 b has a metal-rich atmosphere with CO2.",
            "WASP-39 b has a metal-rich atmosphere with CO2",
        ),
        ("In addition, we obtain a very high accuracy of 0.76 for the classifier.", None),  # first person, no clause
        ("These detections confirm the presence of a second planet in the system.", None),
        ("Our sample shows a strong correlation between mass and metallicity.", None),
        ("The sources are variable on time-scales of days to weeks.", None),
        ("In this work, the disk is found to be warped by the companion.", None),
        ("Such disks are promising sites of r-process nucleosynthesis.", None),
        ("We report the formation of oxygenated carbon chains on grains.", None),  # a noun phrase, not a clause
        (
            "Mrk 71 has a higher oxygen abundance than the rest of NGC 2366.",
            "Mrk 71 has a higher oxygen abundance than the rest of NGC 2366",
        ),
    ],
)
def test_lifted_sentences_become_self_contained_clauses_or_are_skipped(sentence, clause):
    from backtest.generators.wording import self_contained_clause

    assert self_contained_clause(sentence) == clause


def test_questions_name_their_subject():
    from backtest.generators.wording import context, subject_of, with_subject

    assert (
        subject_of("A study of K2-18 b", ("K2-18 b",), ("K2-18 b",), "the planet has a thick atmosphere") == "K2-18 b"
    )
    assert subject_of("Dust in galaxies", (), (), "dust grains grow quickly in dense clouds") == '"Dust in galaxies"'
    assert subject_of("A study of K2-18 b", ("K2-18 b",), (), "K2-18 b has a thick atmosphere") is None
    assert context("K2-18 b") == ", as reported for K2-18 b" and context(None) == ""
    assert with_subject("What is the origin of the radio emission?", "AU Mic") == (
        "What is the origin of the radio emission in AU Mic?"
    )


def test_select_diverse_keeps_tfidf_below_threshold_and_order():
    drafts = [
        Draft(question=q, source_evidence_ids=["x"])
        for q in (
            "What sets the temperature of WASP-12 b?",
            "What sets the temperature of WASP-12 b today?",
            "How massive is the black hole in M87?",
            "Is the Hubble constant tension real?",
        )
    ]
    kept = select_diverse(drafts, 10)
    assert [d.question for d in kept] == [drafts[0].question, drafts[2].question, drafts[3].question]
    assert select_diverse(drafts, 1) == [drafts[0]]


def test_generated_at_defaults_to_the_cutoff_day_and_never_the_future(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert resolve_generated_at(None, dt.date(2016, 12, 31)) == "2016-12-31"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert resolve_generated_at(None, dt.date(2016, 12, 31)) == "2023-11-14T22:13:20Z"
    assert resolve_generated_at("now", dt.date(2016, 12, 31)).endswith("Z")
    with pytest.raises(BadInput, match="future"):
        resolve_generated_at("2999-01-01", dt.date(2016, 12, 31))
    assert clean_question("  Is it so? really.  ") == "Is it so really?"


def test_cli_unknown_generator_and_direct_llm_without_endpoint(cli, tmp_path, monkeypatch):
    for var in ("BACKTEST_LLM_BASE_URL", "BACKTEST_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    code, _, err = cli(["generate", "nope", "--instance", "x"], root=tmp_path)
    assert code == 2 and "unknown generator" in err and len(err.strip().splitlines()) == 1
    # direct_llm without an endpoint is skipped with one line before any corpus is read
    from backtest.generators.direct_llm import DirectLLM
    from backtest.generators.llm import NoEndpoint
    from backtest.generators.protocol import GenerationContext

    with pytest.raises(NoEndpoint, match="direct_llm skipped: no LLM endpoint configured"):
        DirectLLM().generate(GenerationContext(instance=None, past=None, options={}))  # type: ignore[arg-type]


def test_direct_llm_topics_are_category_names_and_every_pair_is_asked_once():
    """direct_llm's prompts name the past corpus's main arXiv categories (>= 2%), and the seeded plan asks every
    (topic, angle) pair once before repeating; a corpus without categories falls back to the domain line."""
    from types import SimpleNamespace

    from backtest.generators.direct_llm import ANGLES, CATEGORY_NAMES, prompt_plan, topic_names

    cats = ["astro-ph.EP"] * 60 + ["astro-ph.SR"] * 38 + ["hep-th"] * 1 + ["nucl-ex"] * 1
    records = [SimpleNamespace(categories=[c, "astro-ph.GA"]) for c in cats] + [SimpleNamespace(categories=[])]
    past = SimpleNamespace(iter_records=lambda: iter(records))
    assert topic_names(past) == [CATEGORY_NAMES["astro-ph.EP"], CATEGORY_NAMES["astro-ph.SR"]]
    plan = prompt_plan(topic_names(past), seed=3)
    assert len(plan) == 2 * len(ANGLES) == len(set(plan))
    assert plan == prompt_plan(topic_names(past), seed=3) != prompt_plan(topic_names(past), seed=4)
    assert {t for t, _ in prompt_plan([], seed=0)} == {None}


@pytest.mark.parametrize(
    "raw, cleaned",
    [
        ("what is a binary system", "What is a binary system?"),
        (
            "1. Why are Earths habitable planets more likely to have atmospheres?",
            "Why are Earths habitable planets more likely to have atmospheres?",
        ),
        ('"How do hot Jupiters migrate inward?"', "How do hot Jupiters migrate inward?"),
        ("The sky is blue", None),  # not a question
        ("what is the role of the", None),  # cut off mid-sentence
        ("Is it? Or is it not?", None),  # two questions
        ("why?", None),  # too short to be a research question
        (42, None),
    ],
)
def test_clean_llm_question(raw, cleaned):
    from backtest.generators.llm import clean_llm_question

    assert clean_llm_question(raw) == cleaned


def test_tension_conditions_quote_what_the_sentence_says():
    """A qualification's condition is the words after "only for/when/..." (a first-person condition is none);
    a challenge's problem is named as a noun."""
    assert condition_of("Hall-MHD reproduces kinetic rates only for a sufficiently strong guide field, as shown.") == (
        "for a sufficiently strong guide field"
    )
    assert condition_of("The relation holds limited to massive haloes.") == "for massive haloes"
    assert condition_of("This works only when we include our own priors.") is None
    assert condition_of("The relation holds for all haloes.") is None
    assert problem_noun("overestimated") == "overestimates" and problem_noun("contaminated") == "contamination"
    assert problem_noun("is highly sensitive to") == "sensitivity to assumptions"


def test_balance_types_keeps_no_type_above_its_share():
    """The lowest-ranked questions of a dominant type go until it is at most 60% of the set; one type alone
    keeps nothing."""
    drafts = [Draft(question=f"q{i}?", source_evidence_ids=[str(i)], signal_type="a") for i in range(8)]
    drafts += [Draft(question=f"r{i}?", source_evidence_ids=[str(i)], signal_type="b") for i in range(2)]
    kept = balance_types(drafts, 0.6)
    assert [d.question for d in kept if d.signal_type == "a"] == ["q0?", "q1?", "q2?"]
    assert len(kept) == 5 and all(d.signal_type == "b" for d in kept[3:])
    assert balance_types(drafts[:8], 0.6) == []


def test_the_claims_cache_key_moves_with_the_source_of_any_rule(tmp_path, monkeypatch) -> None:
    """A derived cache is keyed by the source of the modules that shape it: an edit (a lexicon entry) gives a
    new key, so a stale cache is never served; an unchanged source gives the same key."""
    from backtest.core.caches import source_fingerprint
    from backtest.generators.extract import CLAIM_RULES

    assert "backtest.text.lexicon" in CLAIM_RULES and "backtest.text.latex" in CLAIM_RULES
    module = tmp_path / "a_lexicon.py"
    module.write_text('TERMS = {"H2O": ["water vapour"]}\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    before = source_fingerprint("a_lexicon")
    assert source_fingerprint("a_lexicon") == before
    module.write_text('TERMS = {"H2O": ["water vapour", "water vapor"]}\n')
    assert source_fingerprint("a_lexicon") != before
    assert source_fingerprint(*CLAIM_RULES) == source_fingerprint(*CLAIM_RULES)
