"""The fitted offline judges (offline-fit-v2, offline-pairwise-fit-v2) on the committed development sets.

Real parts: the packaged weights, the real all-MiniLM-L6-v2, and the labelled sets under
``judges/validation/`` (read twice, adjudicated; see their README). The agreement checks are
cross-validated — a judge is never scored on the items it was fitted to — and assert the
numbers measured when the weights were committed, to a tolerance that only a real change of
the judge could exceed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backtest.analysis.reading.items import read_items, read_pairs
from backtest.core.errors import BadInput
from backtest.judge.fitted import DEFAULT_WEIGHTS, FittedJudge, _fit_logistic, _predict, item_hash

REPO = Path(__file__).resolve().parent.parent
OUTCOMES_SET = REPO / "judges" / "validation" / "outcomes-v1"
PAIRS_SET = REPO / "judges" / "validation" / "pairs-v1"
HELDOUT_SET = REPO / "judges" / "validation" / "outcomes-heldout-v1"
RELEASE_SET = REPO / "judges" / "validation" / "release-space-2016-v1"
V2 = str(REPO / "judges" / "offline-v2.toml")  # the weights fitted on outcomes-v1 only (the release runs' judge)
READERS = ("reader_a", "reader_b", "adjudicated")


def _labels(folder: Path) -> list[str]:
    return [f"{r}={folder / 'labels' / f'{r}.jsonl'}" for r in READERS]


def test_weights_file_is_checked_on_load(tmp_path):
    weights = json.loads(DEFAULT_WEIGHTS.read_text())
    FittedJudge(weights)  # the packaged weights load
    for broken in (
        {**weights, "format": "something-else"},
        {**weights, "schema_version": "9"},
        {**weights, "features": ["only_one"]},
    ):
        with pytest.raises(BadInput):
            FittedJudge(broken)
    for subset in (["claim_sim_margin"], ["bigram_coverage", "claim_sim"]):  # any known features, in any order
        assert FittedJudge({**weights, "features": subset}).features == tuple(subset)
    with pytest.raises(BadInput, match="do not match"):
        FittedJudge({**weights, "features": []})
    (tmp_path / "w.json").write_text("{not json")
    with pytest.raises(BadInput, match="not a JSON weights file"):
        FittedJudge.from_file(tmp_path / "w.json")


def test_rare_labels_are_never_predicted():
    x = np.arange(12, dtype=float).reshape(6, 2)
    model = _fit_logistic(x, ["a", "a", "a", "a", "b", "b"], c=1.0)
    assert model["classes"] == ["a"] and _predict(model, x[0]) == "a"  # b has fewer than 3 examples
    assert _fit_logistic(np.zeros((0, 2)), [], c=1.0, default="partially_addressed")["classes"] == [
        "partially_addressed"
    ]


def test_judging_is_deterministic_and_the_training_set_is_recognised():
    items = read_items(OUTCOMES_SET / "items.jsonl")[:3]
    judge = FittedJudge.from_file()
    first = [judge.judge(it.question, it.retrieved()).model_dump(mode="json") for it in items]
    again = [FittedJudge.from_file().judge(it.question, it.retrieved()).model_dump(mode="json") for it in items]
    assert first == again
    assert judge.training_overlap(items)
    other = items[0].model_copy(update={"question": items[0].question.model_copy(update={"question": "Is this new?"})})
    assert item_hash(other.question, other.retrieved()) != item_hash(items[0].question, items[0].retrieved())
    assert not judge.training_overlap([other])


def test_document_features_are_selected_by_name():
    from backtest.judge.features import document_features

    item = read_items(OUTCOMES_SET / "items.jsonl")[0]
    docs = item.retrieved()
    both, _ = document_features(item.question, docs, "all-MiniLM-L6-v2", ("claim_sim", "claim_sim_margin"))
    one, _ = document_features(item.question, docs, "all-MiniLM-L6-v2", ("claim_sim",))
    assert np.allclose(both[:, 0], one[:, 0])
    second = np.sort(one[:, 0])[-2]
    assert np.allclose(both[:, 1], one[:, 0] - second) and (both[:, 1] > 0).sum() == 1  # only the best leads
    with pytest.raises(ValueError, match="unknown document feature"):
        document_features(item.question, docs, "all-MiniLM-L6-v2", ("topic_vibes",))


def test_candidate_features_compute_what_they_say():
    """The study's candidates (scripts/judge_feature_study.py) on a real item, each against a direct computation;
    asking for them leaves the default features' values unchanged (their texts are embedded in a batch of their own
    only when asked for)."""
    from backtest.judge.features import DOC_FEATURES, KNOWN_FEATURES, claim_text, document_features, question_text
    from backtest.text.embed import embed_texts
    from backtest.text.terms import specific_terms

    item = read_items(OUTCOMES_SET / "items.jsonl")[0]
    docs = item.retrieved()
    rows, _ = document_features(item.question, docs, "all-MiniLM-L6-v2", KNOWN_FEATURES)
    col = {name: rows[:, KNOWN_FEATURES.index(name)] for name in KNOWN_FEATURES}
    default, _ = document_features(item.question, docs, "all-MiniLM-L6-v2", DOC_FEATURES)
    assert np.allclose(default, np.column_stack([col[n] for n in DOC_FEATURES]), atol=1e-5)
    claim = embed_texts([claim_text(item.question)])[0]
    titles = embed_texts([d.title for d in docs])
    assert np.allclose(col["title_sim"], titles @ claim, atol=1e-4)
    bodies = embed_texts([f"{d.title}. {d.abstract}".strip() for d in docs])
    assert np.allclose(col["question_sim"], bodies @ embed_texts([question_text(item.question)])[0], atol=1e-4)
    sims = col["claim_sim"]
    assert np.allclose(col["claim_sim_z"], (sims - sims.mean()) / sims.std())
    q_terms = specific_terms(question_text(item.question))
    expected = [len(q_terms & specific_terms(f"{d.title}. {d.abstract}")) / len(q_terms) for d in docs]
    assert np.allclose(col["term_coverage"], expected) and 0 < max(expected) <= 1


def test_pairwise_features_leave_out_surface_counts():
    """The pairwise judge's row of a real question: its form features by name, without the surface counts
    (named objects, share of capitals, number of cited papers); weights fitted with them are refused."""
    from backtest.analysis.reading.validate import pair_context
    from backtest.arena import fitted_pairwise
    from backtest.arena.fitted_pairwise import QUESTION_FEATURES, FittedPairwiseJudge, _question_row
    from backtest.text.clarity import FORM_FEATURES, question_form

    assert not {"names_object", "capital_ratio", "n_evidence"} & set(QUESTION_FEATURES)
    weights = json.loads(fitted_pairwise.DEFAULT_WEIGHTS.read_text())
    assert weights["features"] == list(QUESTION_FEATURES) and len(weights["coef"]) == len(QUESTION_FEATURES)
    old = {**weights, "features": [*QUESTION_FEATURES, "n_evidence"]}
    with pytest.raises(BadInput, match="do not match"):
        FittedPairwiseJudge(old)
    pair = next(p for p in read_pairs(PAIRS_SET / "pairs.jsonl") if p.item_id == "item019")
    ctx, a, _ = pair_context(pair)
    question, premise = a.output.split("\nPremise: ")
    unit = np.zeros(4)
    unit[0] = 1.0
    row = dict(zip(QUESTION_FEATURES, _question_row(ctx, a, unit, {question: unit, premise: unit})))
    form = dict(zip(FORM_FEATURES, question_form(question, a.output)))
    assert all(row[f] == form[f] for f in QUESTION_FEATURES if f in form)
    # "... confirm that more importantly, we show that these large-scale shocks ...": a sentence lifted from
    # an abstract, in the first person, with an anaphora it does not resolve
    assert row["lifted_clause"] == 1 and row["first_person"] == 1 and row["anaphora"] == 1
    assert row["context_sim"] == row["premise_sim"] == 1.0 and row["has_premise"] == 1.0


@pytest.mark.slow
def test_offline_v2_judge_on_the_held_out_set(cli, tmp_path):
    """On 68 items read after the v2 weights were committed (none of the training items), judged as-is: kappa
    0.26 for engaged vs not, far below the development set's cross-validated 0.48; engaged rate 10.3% vs 22.1%."""
    code, out, err = cli(
        [
            "judge",
            "validate",
            HELDOUT_SET / "items.jsonl",
            *sum((["--labels", s] for s in _labels(HELDOUT_SET)), []),
            "--judge",
            V2,
            "--no-card",
            "--n-boot",
            "200",
            "--json",
        ],
        root=tmp_path,
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["evaluation"] == "as-is"
    engaged = report["fields"]["engaged"]["consensus"]
    assert engaged["n"] == 68 and engaged["kappa"] == pytest.approx(0.26, abs=0.02)
    assert report["engaged_rate"]["judge"] == pytest.approx(0.103, abs=0.01)
    assert report["engaged_rate"]["consensus"] == pytest.approx(0.221, abs=0.001)


@pytest.mark.slow
def test_offline_v2_judge_cross_validated_on_the_development_set(cli, tmp_path):
    """The v2 judge's card numbers, cross-validated on the 160 committed items (measured when fitted:
    engaged kappa 0.48, outcome kappa 0.44, engaged rate 16.9% vs the readers' 18.1%)."""
    code, out, err = cli(
        [
            "judge",
            "validate",
            OUTCOMES_SET / "items.jsonl",
            *sum((["--labels", s] for s in _labels(OUTCOMES_SET)), []),
            "--judge",
            V2,
            "--no-card",
            "--cross-validate",
            "--n-boot",
            "200",
            "--json",
        ],
        root=tmp_path,
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["evaluation"].startswith("cross-validated")
    engaged, outcome = report["fields"]["engaged"]["consensus"], report["fields"]["outcome"]["consensus"]
    assert engaged["n"] == 160
    assert engaged["kappa"] == pytest.approx(0.48, abs=0.02) and outcome["kappa"] == pytest.approx(0.44, abs=0.02)
    assert abs(report["engaged_rate"]["judge"] - report["engaged_rate"]["consensus"]) <= 0.10


@pytest.mark.slow
def test_pairwise_judge_is_order_free_and_cross_validated(cli, tmp_path):
    from backtest.analysis.reading.validate import pair_context
    from backtest.arena.fitted_pairwise import FittedPairwiseJudge

    judge = FittedPairwiseJudge.from_file()
    mirror = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}
    for pair in read_pairs(PAIRS_SET / "pairs.jsonl")[:10]:
        ctx, a, b = pair_context(pair)
        assert judge.compare(ctx, b, a).verdict == mirror[judge.compare(ctx, a, b).verdict]
    code, out, err = cli(
        [
            "judge",
            "validate",
            "--pairwise",
            PAIRS_SET / "pairs.jsonl",
            *sum((["--labels", s] for s in _labels(PAIRS_SET)), []),
            "--judge",
            "offline",
            "--no-card",
            "--cross-validate",
            "--out",
            tmp_path / "pv",
            "--json",
        ],
        root=tmp_path,
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["evaluation"].startswith("cross-validated")
    # the written validation.json is a typed output (a pairwise report has a fold seed, no bootstrap)
    from backtest.analysis.outputs import ValidationReport
    from backtest.core.records import read_output

    written = read_output(ValidationReport, tmp_path / "pv" / "validation.json")
    assert written.kind == "pairwise-judge-validation" and written.seed == 0 and written.n_boot is None
    cons = report["consensus"]
    # 73% when fitted (default fold seed; 71% mean over fold seeds 0-9); the v2 judge with the surface
    # features (names_object, capital_ratio, n_evidence) agreed on 43 (68%)
    assert cons["n_decided"] == 63 and cons["agree"] == pytest.approx(46, abs=2)
    # the v1 rubric judge on the same pairs: worse than a coin (30% when measured)
    code, out, err = cli(
        [
            "judge",
            "validate",
            "--pairwise",
            PAIRS_SET / "pairs.jsonl",
            *sum((["--labels", s] for s in _labels(PAIRS_SET)), []),
            "--judge",
            "offline-rubric-v1",
            "--no-card",
            "--json",
        ],
        root=tmp_path,
    )
    assert json.loads(out)["consensus"]["agree"] < cons["agree"]


@pytest.mark.slow
def test_judge_fit_writes_weights_a_config_can_use(cli, tmp_path):
    """``judge fit`` on a user's labelled set (here 40 committed items) and a judges/NAME.toml that points at them."""
    import shutil

    small = tmp_path / "set"
    (small / "labels").mkdir(parents=True)
    items = (OUTCOMES_SET / "items.jsonl").read_text().splitlines()[:40]
    (small / "items.jsonl").write_text("\n".join(items) + "\n")
    keep = {json.loads(line)["item_id"] for line in items}
    for r in READERS:
        rows = [
            line
            for line in (OUTCOMES_SET / "labels" / f"{r}.jsonl").read_text().splitlines()
            if json.loads(line)["item_id"] in keep
        ]
        (small / "labels" / f"{r}.jsonl").write_text("\n".join(rows) + "\n")
    code, out, err = cli(
        [
            "judge",
            "fit",
            small / "items.jsonl",
            *sum((["--labels", s] for s in _labels(small)), []),
            "--out",
            tmp_path / "mine.json",
        ],
        root=tmp_path,
    )
    assert code == 0, err
    (tmp_path / "judges").mkdir()
    shutil.copy(tmp_path / "mine.json", tmp_path / "judges" / "mine.json")
    (tmp_path / "judges" / "mine.toml").write_text('kind = "offline"\nname = "mine"\nweights = "mine.json"\n')
    from backtest.core.workspace import Workspace
    from backtest.judge import get_judge

    judge = get_judge("mine", Workspace(tmp_path))
    assert judge.name == "mine" and judge.training_overlap(read_items(small / "items.jsonl"))
    (tmp_path / "judges" / "bad.toml").write_text('kind = "offline"\nengage_doc_sim = 0.4\n')
    with pytest.raises(BadInput, match="unknown offline judge setting"):
        get_judge("bad", Workspace(tmp_path))


def test_the_default_judge_is_fitted_on_every_labelled_set_and_refuses_an_as_is_check_on_them(cli, tmp_path):
    """The default weights were fitted on all four outcome sets, so validating them as-is on one has nothing left
    that they never saw: one line, exit 2, pointing at --cross-validate (which measures the method instead)."""
    weights = json.loads(DEFAULT_WEIGHTS.read_text())
    assert weights["trained_on"]["sets"] == [
        "outcomes-v1",
        "outcomes-heldout-v1",
        "release-astro-2025-v1",
        "release-space-2016-v1",
    ]
    code, _, err = cli(
        ["judge", "validate", RELEASE_SET / "items.jsonl", *sum((["--labels", s] for s in _labels(RELEASE_SET)), [])],
        root=tmp_path,
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "all 160 labelled items were in judge 'offline''s training set" in err and "--cross-validate" in err


@pytest.mark.slow
def test_leave_one_system_out_never_judges_a_system_with_a_judge_fitted_on_it():
    """Leave one system out on the space-2016 release read (four systems, 160 items): each held-out system is
    judged by weights fitted without it; the engaged rates it reports are those of the held-out judgments."""
    from backtest.analysis.reading.systems import held_out_judgments, item_rows, labelled_items
    from backtest.judge.fitted import fit_from_rows

    items = labelled_items([RELEASE_SET])
    assert sorted({li.system for li in items}) == [
        "citation_leaders",
        "direct_llm",
        "random_claims",
        "review_future_work",
    ]
    names = ("claim_sim", "term_matches", "bigram_matches")
    rows = item_rows(items, "all-MiniLM-L6-v2", names)
    judged = held_out_judgments(items, rows, names)
    assert set(judged) == {li.key for li in items}
    # the held-out fit is the fit on the other systems: recompute one system's judgments by hand
    train = [(li.item, f, li.truth) for li, (f, _) in rows if li.system != "direct_llm"]
    judge = FittedJudge(fit_from_rows(train, "all-MiniLM-L6-v2", features=names))
    for li, (feats, notes) in rows:
        if li.system == "direct_llm":
            assert judge.decide(li.item.question, feats, notes)[0]["outcome"] == judged[li.key].outcome
