"""The committed intelligibility studies (judges/validation/intelligibility-v*): complete, valid labels from two
passes, results that follow from them, and every question of the sets their sources name."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import REPO

STUDIES = {
    "intelligibility-v1": 242,
    "intelligibility-v2": 299,
    "intelligibility-v3": 322,
    "intelligibility-v4": 322,
    "intelligibility-v5": 240,
    "intelligibility-v6": 80,
}
VALUES = {"intelligible": {"yes", "no"}, "real_conflict": {"yes", "no", "na"}}
REASONS = {None, "unresolved_reference", "garbled", "no_subject", "not_a_question", "other"}


def script():
    path = REPO / "scripts" / "intelligibility_study.py"
    spec = importlib.util.spec_from_file_location("intelligibility_study", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=sorted(STUDIES))
def study_folder(request) -> Path:
    return REPO / "judges" / "validation" / request.param


def read(folder: Path, name: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]
    return {r["item_id"]: r for r in rows}


def test_every_item_has_valid_labels_from_both_passes_and_the_adjudication(study_folder):
    items = read(study_folder, "items.jsonl")
    decode = json.loads((study_folder / "key.json").read_text())
    assert len(items) == STUDIES[study_folder.name] and set(decode) == set(items)
    assert all(set(item) == {"item_id", "question", "premise"} for item in items.values())  # blinded
    for name in ("labels/reader_a.jsonl", "labels/reader_b.jsonl", "labels/adjudicated.jsonl"):
        labels = read(study_folder, name)
        assert set(labels) == set(items), name
        for row in labels.values():
            assert row["intelligible"] in VALUES["intelligible"] and row["real_conflict"] in VALUES["real_conflict"]
            assert (row["reason"] is None) == (row["intelligible"] == "yes") and row["reason"] in REASONS, row
    a, b, final = (read(study_folder, f"labels/{n}.jsonl") for n in ("reader_a", "reader_b", "adjudicated"))
    decided = {json.loads(x)["item_id"] for x in (study_folder / "adjudication.jsonl").read_text().splitlines()}
    for i in items:
        key = ("intelligible", "real_conflict")
        if all(a[i][k] == b[i][k] for k in key):
            assert all(final[i][k] == a[i][k] for k in key), i  # agreement is kept as it is
        else:
            assert i in decided, f"{i}: the passes differ and no adjudication says why"


def test_the_committed_results_follow_from_the_labels(study_folder):
    study = script()
    results = study.study(study_folder)
    assert results == json.loads((study_folder / "results.json").read_text())
    assert study.render(results) == (study_folder / "results.md").read_text()


def test_the_items_are_the_sets_the_sources_name(study_folder):
    """Every generated question was read: per set, as many items as sources.json says the set held."""
    sources = json.loads((study_folder / "sources.json").read_text())["sets"]
    decode = json.loads((study_folder / "key.json").read_text())
    counts: dict[str, int] = {}
    for d in decode.values():
        counts[f"{d['instance']}/{d['generator']}"] = counts.get(f"{d['instance']}/{d['generator']}", 0) + 1
    assert counts == {name: s["n"] for name, s in sources.items() if s["n"]}
