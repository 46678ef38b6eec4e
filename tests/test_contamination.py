"""The contamination probe (issue 17, item 4) on the real astro-2025 corpora: a question naming a term that only
the future corpus knows is flagged, a question made from a past abstract is not, a past-only set scores 0, and
the probe reaches the CLI, the run report and ``compare``."""

from __future__ import annotations

import gzip
import json

import pytest

from backtest.core.records import read_output
from backtest.corpus.instance import load_instance, open_past_corpus
from backtest.scoring.outputs import Run
from backtest.submit.freeze import freeze_submission
from backtest.text.latex import detex
from backtest.text.objects import find_objects
from backtest.validity import contamination as C
from backtest.validity.outputs import ContaminationReport

from .conftest import needs_shared
from .submission_helpers import make_submission, metadata, past_records, question_rows, writable_ws, write_submission

# Real terms of astro-2025 (cutoff 2025-10-31) that the future corpus names and the past corpus never does:
# the supernova SN 2025ogs (first future record 2512.19783, 2025-12-24) and the DES-Dovekie supernova
# recalibration (22 future records from 2511.07517, 2025-11-12). The tests check both facts on the corpora.
FUTURE_OBJECT = ("object", "SN 2025ogs")
FUTURE_NAME = ("name", "DES-Dovekie")


# --------------------------------------------------------------------------- the term definition (pure)


def test_terms_of_a_text() -> None:
    terms = C.extract_terms(
        "JWST/NIRSpec spectra of WASP-121b show SiO; the Parker Solar Probe and DES-Dovekie's hot-Neptune desert."
    )
    assert ("object", "WASP-121 b") in terms  # find_objects, normalised
    assert {("name", "JWST"), ("name", "NIRSpec"), ("name", "Parker Solar Probe"), ("name", "DES-Dovekie")} <= terms
    assert ("name", "WASP-121b") not in terms  # a designation is an object, not a name
    assert ("ngram", "hot-neptune desert") in terms and ("ngram", "parker solar") in terms
    assert ("ngram", "parker solar probe") not in terms  # ends with a generic word (probe)
    assert ("ngram", "show") not in terms  # a stop word
    assert not any(t[1] in ("the", "of", "and") for t in terms)  # stop words break runs, never terms
    # an n-gram starts and ends with a specific word: a template word next to a name is not one
    assert ("ngram", "mms data") not in C.extract_terms("confirmed by independent MMS data?")
    assert ("ngram", "mms") in C.extract_terms("confirmed by independent MMS data?")
    # LaTeX is stripped alike in questions and records: "{\it Chandra} observations" reads as plain text
    assert ("ngram", "deep archival chandra") in C.extract_terms(r"deep archival {\it Chandra} observations")
    # quotation marks are boundaries: a template word after a quoted title makes no n-gram with it
    quoted = C.extract_terms("Does the main result of 'Glacial wobbles' hold?")
    assert ("ngram", "glacial wobble") in quoted and ("ngram", "wobble hold") not in quoted
    assert C.extract_terms("") == set() and C.extract_terms("   ") == set()


def test_flag_terms_thresholds_and_folding() -> None:
    terms = {
        ("object", "SN 2099zz"): ["question"],
        ("name", "NEWSURVEY"): ["premise"],
        ("ngram", "newsurvey"): ["premise"],  # folded into the name
        ("ngram", "newsurvey footprint"): ["premise"],  # folded into the name
        ("ngram", "glacial wobble"): ["question"],
        ("ngram", "rare phrase"): ["question"],  # under the n-gram threshold
        ("ngram", "old phrase"): ["question"],  # in the past: never flagged
        ("ngram", "invented phrase"): ["question"],  # in neither corpus
    }
    past = {("ngram", "old phrase"): 3}
    future = {
        ("object", "SN 2099zz"): 1,
        ("name", "NEWSURVEY"): 2,
        ("ngram", "newsurvey"): 9,
        ("ngram", "newsurvey footprint"): 9,
        ("ngram", "glacial wobble"): 5,
        ("ngram", "rare phrase"): 4,
        ("ngram", "old phrase"): 50,
    }
    first = {("object", "SN 2099zz"): ("2099-01-02", "9901.00001")}
    flagged, outside, unseen = C.flag_terms(terms, past, future, min_ngram_docs=5, first=first)
    assert [(f.kind, f.term) for f in flagged] == [
        ("object", "SN 2099zz"),
        ("name", "NEWSURVEY"),
        ("ngram", "glacial wobble"),
    ]
    assert flagged[0].first_future_id == "9901.00001" and flagged[0].fields == ["question"]
    assert outside == 7 and unseen == 1
    assert C.flag_terms(terms, past, future, min_ngram_docs=4)[0][-1].term == "rare phrase"


def test_ngram_threshold_rule() -> None:
    assert C.ngram_threshold(5847, 8223) == 5  # astro-2025: ceil(2.996 * 8223 / 5847) = ceil(4.21)
    assert C.ngram_threshold(4858, 3358) == 3  # space-2016: the floor
    assert C.ngram_threshold(0, 10) == 3


# --------------------------------------------------------------------------- real corpora


@pytest.fixture(scope="module")
def astro(astro_ws):
    instance = load_instance("astro-2025", astro_ws)
    past, future = C.open_indexes(instance, astro_ws)
    return astro_ws, instance, past, future


def _question(qid: str, text: str, **extra) -> dict:
    return {"question_id": qid, "question": text, **extra}


@needs_shared
def test_a_question_naming_a_future_only_object_is_flagged(astro) -> None:
    _, instance, past, future = astro
    for term in (FUTURE_OBJECT, FUTURE_NAME):
        assert past.count(term) == 0, f"{term} is in the past corpus"
        assert future.count(term) >= 1, f"{term} is not in the future corpus"
        assert future.first[term][0] > str(instance.cutoff)
    questions = [
        _question("q_obj", "What powered the unusually luminous early light curve of SN 2025ogs?"),
        _question("q_name", "Does the DES-Dovekie recalibration weaken the case for evolving dark energy?"),
    ]
    probes = {p.question_id: p for p in C.probe_questions(questions, past, future)}
    assert [(f.kind, f.term) for f in probes["q_obj"].flagged] == [FUTURE_OBJECT]
    assert [(f.kind, f.term) for f in probes["q_name"].flagged][:1] == [FUTURE_NAME]
    hit = probes["q_obj"].flagged[0]
    assert hit.first_future_date and hit.first_future_date > "2025-10-31" and hit.fields == ["question"]


@needs_shared
def test_a_question_made_from_a_past_abstract_is_not_flagged(astro) -> None:
    ws, _, past, future = astro
    records = past_records(ws, n=20, seed=3)
    questions = []
    for k, rec in enumerate(records):
        first = rec.abstract.split(". ")[0].rstrip(".")
        questions.append(
            _question(
                f"q_{k}", f"Is it true that {first}?", premise=rec.abstract, objects=find_objects(detex(rec.abstract))
            )
        )
    probes = C.probe_questions(questions, past, future)
    assert sum(p.n_terms for p in probes) > 500  # the questions do carry terms
    assert [p.question_id for p in probes if p.flagged] == []
    # the same past text with a future-only designation added is flagged: the check can fail
    questions[0]["question"] = questions[0]["question"][:-1] + " in SN 2025ogs?"
    assert C.probe_questions(questions[:1], past, future)[0].flagged[0].term == "SN 2025ogs"


@needs_shared
def test_past_only_set_scores_zero_and_the_cli(astro, tmp_path, cli) -> None:
    base, _, _, _ = astro
    ws = writable_ws(base, tmp_path / "ws")
    clean = freeze_submission(make_submission(ws, tmp_path / "sub_clean", n=30, seed=5), "astro-2025", ws)
    report = C.probe_frozen(clean, ws)
    assert report.n_questions == 30 and report.rate.k == 0 and report.rate.ci95[1] < 0.13
    assert report.definition["min_future_docs"] == {"object": 1, "name": 1, "ngram": 5}

    rows = question_rows(past_records(ws, n=4, seed=9), system="leaky_v1")
    rows[2]["question"] = "Does the DES-Dovekie recalibration of SN 2025ogs change the Hubble residuals?"
    leaky = freeze_submission(
        write_submission(tmp_path / "sub_leaky", rows, metadata(4, system="leaky_v1")), "astro-2025", ws
    )
    code, out, err = cli(["contamination", str(clean), "--max-rate", "0"], root=ws.root)
    assert code == 0 and "0/30 questions" in out, err
    code, out, err = cli(
        ["contamination", str(leaky), "--max-rate", "0", "--out", str(tmp_path / "c.json")], root=ws.root
    )
    assert code == 1 and "1/4 questions" in out and "q_003: object 'SN 2025ogs'" in out
    assert err.strip().splitlines() == ["error: contamination probe: 1/4 questions flagged (0.250), above --max-rate 0"]
    written = read_output(ContaminationReport, tmp_path / "c.json")
    assert written.rate.k == 1 and written.frozen_seal and written.system == "leaky_v1"
    flagged = {f.term for q in written.questions for f in q.flagged}
    assert {"SN 2025ogs", "DES-Dovekie"} <= flagged
    code, out, _ = cli(["contamination", str(leaky), "--json"], root=ws.root)
    assert code == 0 and json.loads(out)["by_kind"]["object"]["k"] == 1

    # bad input: one line, exit 2; a tampered frozen set: exit 1, nothing probed
    code, _, err = cli(["contamination", str(tmp_path / "sub_clean")], root=ws.root)
    assert code == 2 and err.count("\n") == 1 and "neither a frozen set" in err
    code, _, err = cli(["contamination", str(clean), "--out", str(ws.frozen / "x.json")], root=ws.root)
    assert code == 2 and "only its own commands write" in err
    with open(leaky / "questions.jsonl", "a") as handle:
        handle.write("\n")
    code, _, err = cli(["contamination", str(leaky)], root=ws.root)
    assert code == 1 and "not a frozen, intact set" in err


@needs_shared
def test_term_index_is_cached_by_seal_and_rebuilt_when_damaged(astro, monkeypatch) -> None:
    ws, instance, past, _ = astro
    monkeypatch.delenv("BACKTEST_INDEX_CACHE", raising=False)
    store = open_past_corpus(instance, ws)
    folder = ws.corpus_dir(store.corpus_id) / "index" / "terms"
    files = sorted(folder.glob("*.tsv.gz"))
    assert len(files) == 1  # written once, named by a key of the seal and the definition
    header = json.loads(gzip.open(files[0], "rt").readline())
    assert header["inputs"]["corpus_seal"] == store.seal and header["n_docs"] == len(store)
    files[0].write_bytes(files[0].read_bytes()[:5000])  # truncated
    C._LOADED.clear()
    again = C.term_index(store)
    assert again.df == past.df and not list(folder.glob(".*.tmp"))
    assert C._read_index(files[0], header["inputs"], store) is not None  # rewritten whole


# --------------------------------------------------------------------------- report and compare


def _run(probe: dict | None) -> Run:
    return Run(
        run_id="r1",
        system="s",
        instance_id="astro-2025",
        instance_seal="0" * 64,
        frozen_path="frozen/s",
        frozen_seal="0" * 64,
        judge={"name": "offline"},
        contamination=probe,
    )


def test_report_and_compare_show_the_probe(tmp_path) -> None:
    from backtest.analysis.compare import contamination_rate
    from backtest.scoring.report import contamination_lines

    probe = {
        "rate": {"k": 1, "n": 4, "rate": 0.25, "ci95": [0.0063, 0.8059]},
        "by_kind": {
            "object": {"k": 1, "n": 4, "rate": 0.25, "ci95": [0.0063, 0.8059]},
            "name": {"k": 1, "n": 4, "rate": 0.25, "ci95": [0.0063, 0.8059]},
            "ngram": {"k": 0, "n": 4, "rate": 0.0, "ci95": [0.0, 0.6024]},
        },
        "min_future_docs": {"object": 1, "name": 1, "ngram": 5},
        "past": "astro-2025-past",
        "future": "astro-2025-future",
        "flagged": {"q_003": ["object: SN 2025ogs", "name: DES-Dovekie"]},
    }
    head, lines = contamination_lines(_run(probe))
    assert head.startswith("0.250 [0.006, 0.806] (1/4)") and "astro-2025-future" in head
    assert lines == ["q_003: object: SN 2025ogs; name: DES-Dovekie"]
    assert contamination_lines(_run({"not_run": "no corpus"}))[0] == "not run: no corpus"
    assert contamination_lines(_run(None))[0].startswith("not run")
    rate = contamination_rate(tmp_path, _run(probe))
    assert rate is not None and rate.model_dump(mode="json") == probe["rate"]
    assert contamination_rate(tmp_path / "a" / "b" / "c" / "d", _run(None)) is None  # cannot probe: no RUN.json
