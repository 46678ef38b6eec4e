"""Fast unit tests of the generator pieces: extraction, rewriting, selection, protocol, isolation, CLI errors."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

from backtest.core.errors import BadInput
from backtest.core.records import CorpusRecord
from backtest.generators import available_generators, get_generator
from backtest.generators.evidence_graph import GENERIC_TOPIC, TEMPLATES, classify
from backtest.generators.extract import (
    analyse_sentence,
    claim_clause,
    detect,
    detex,
    extract_claims,
    find_quantities,
    split_sentences,
)
from backtest.generators.protocol import Draft, clean_question, resolve_generated_at
from backtest.generators.review_future_work import cue_strength, to_question
from backtest.generators.select import select_diverse

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


def test_classify_types_tensions():
    def pair(a_text, b_text, a_auth=("X",), b_auth=("Y",)):
        pa = extract_claims(_record(a_text, rid="2501.00001", authors=a_auth))
        pb = extract_claims(_record(b_text, rid="2502.00002", day=dt.date(2025, 2, 2), authors=b_auth))
        return analyse_sentence(pa.record.id, 0, a_text), analyse_sentence(pb.record.id, 0, b_text), pa, pb

    a, b, pa, pb = pair(
        "We measure a temperature of 1500 ± 50 K for WASP-12 b.", "We find a temperature of 2500 ± 60 K for WASP-12 b."
    )
    assert classify(a, b, pa, pb, "temperature")[:2] == ("observational_tension", "numeric")
    a, b, pa, pb = pair("We detect H2O in WASP-17 b.", "We find no evidence for H2O in WASP-17 b.")
    assert classify(a, b, pa, pb, "H2O")[:2] == ("observational_tension", "polarity")
    a, b, pa, pb = pair("We detect H2O in WASP-17 b.", "Stellar contamination can bias the H2O signal of WASP-17 b.")
    kind, _, detail = classify(a, b, pa, pb, GENERIC_TOPIC)
    assert kind == "methodological_challenge" and detail["issue"] == "stellar contamination"
    a, b, pa, pb = pair(
        "We detect H2O in WASP-17 b.", "However, the H2O signal of WASP-17 b is only present under clear skies."
    )
    assert classify(a, b, pa, pb, GENERIC_TOPIC)[0] == "independent_qualification"
    a, b, pa, pb = pair("We detect H2O in WASP-17 b with HST.", "Spitzer eclipses of WASP-17 b are shallow.")
    kind, _, detail = classify(a, b, pa, pb, GENERIC_TOPIC)
    assert kind == "single_dataset_conclusion" and detail == {"instrument_a": "HST", "instrument_b": "Spitzer"}


def test_templates_are_neutral_questions():
    for options in TEMPLATES.values():
        for template in options:
            assert template.endswith("?") and template.count("?") == 1
            assert "{subject}" in template
            lowered = template.lower()
            assert not any(w in lowered for w in ("isn't", "doesn't", "obviously", "clearly", "surely", "wrong"))


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
