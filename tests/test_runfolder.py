"""The run folder's one reader and writer (:class:`~backtest.validity.runfolder.RunFolder`), the typed records
inside it, and what ``extra="forbid"`` means for the committed files.

Every committed record under ``results/``, ``frozen/``, ``judges/`` and ``prospective/`` is parsed with its model
here (real files, no copies), and the output files backtest writes are written back to the very bytes committed:
the run folder's records refuse unknown fields, so this is what shows that no file written before carries one.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from backtest.analysis.outputs import Decode
from backtest.analysis.reading.annotate import Decision
from backtest.analysis.reading.intelligibility import (
    IntelligibilityDecode,
    IntelligibilityItem,
    IntelligibilityLabel,
    QuestionDecode,
    QuestionItem,
    QuestionLabel,
)
from backtest.analysis.reading.items import AnnotationItem, Label, PairItem, PairLabel
from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.records import (
    CorpusManifest,
    FrozenSet,
    Instance,
    Judgment,
    LedgerEntry,
    Question,
    Retrieval,
    SubmissionMetadata,
    output_bytes,
    parse_record,
    read_output,
    write_output,
)
from backtest.core.runs import JudgeStats, Metrics, Run, RunSeal
from backtest.judge.outputs import ValidityCard
from backtest.scoring.judging import judgment_line
from backtest.studies.prospective.records import Commitment
from backtest.validity.outputs import ContaminationReport
from backtest.validity.runfolder import RunFolder

REPO = Path(__file__).resolve().parents[1]
RUNS = sorted(p.parent for p in (REPO / "results").glob("*/*/*/RUN.json"))
#: label sets read through the annotation formats (those with a decode.json; the others are hand-made studies)
LABEL_SETS = sorted(
    p.parent.relative_to(REPO).as_posix()
    for p in (REPO / "judges").rglob("decode.json")
    if json.loads(p.read_text()).get("kind") in ("items", "pairs")
)

#: every committed record with the model backtest reads it with (first match wins)
RECORDS: list[tuple[str, type[BaseModel]]] = [
    ("results/*/*/*/RUN.json", Run),
    ("results/*/*/*/metrics.json", Metrics),
    ("results/*/*/*/SEAL.json", RunSeal),
    ("results/*/*/*/contamination.json", ContaminationReport),
    ("results/*/*/*/judgments.jsonl", Judgment),
    ("results/*/*/*/retrieval.jsonl", Retrieval),
    ("frozen/LEDGER.jsonl", LedgerEntry),
    ("*/FROZEN.json", FrozenSet),
    ("*/metadata.json", SubmissionMetadata),
    ("*/questions.jsonl", Question),
    ("prospective/*/COMMITMENT.json", Commitment),
    ("prospective/*/instance.json", Instance),
    ("prospective/*/past_manifest.json", CorpusManifest),
    ("judges/cards/*.json", ValidityCard),
    ("judges/validation/evidence-graph-v*/decode.json", IntelligibilityDecode),
    ("judges/validation/evidence-graph-v*/items.jsonl", IntelligibilityItem),
    ("judges/validation/evidence-graph-v*/labels/*.jsonl", IntelligibilityLabel),
    ("judges/validation/intelligibility-v*/decode.json", QuestionDecode),
    ("judges/validation/intelligibility-v*/items.jsonl", QuestionItem),
    ("judges/validation/intelligibility-v*/labels/*.jsonl", QuestionLabel),
    ("judges/*/decode.json", Decode),
    *[(f"{s}/items.jsonl", AnnotationItem) for s in LABEL_SETS],
    *[(f"{s}/pairs.jsonl", PairItem) for s in LABEL_SETS],
    *[(f"{s}/labels/*.jsonl", PairLabel if (REPO / s / "pairs.jsonl").is_file() else Label) for s in LABEL_SETS],
    *[(f"{s}/adjudication.jsonl", Decision) for s in LABEL_SETS if not (REPO / s / "pairs.jsonl").is_file()],
]
#: committed JSON that is no backtest record: hand-made study files, with why
FREE_FORM = [
    ("judges/validation/evidence-graph-v*/*", "the evidence-graph reading study's own format (scripts, by hand)"),
    ("judges/validation/intelligibility-v*/*", "the intelligibility study's own format (scripts, by hand)"),
    ("judges/validation/pairs-v1/adjudication.jsonl", "the pairwise set's adjudication notes (by hand)"),
    ("judges/validation/*/results.json", "a study's result table"),
    ("judges/validation/*-study.json", "a study's result table"),
]
#: output files written as indented, key-sorted JSON from their model (read back, they give the same bytes)
OUTPUTS = [Run, Metrics, RunSeal, ContaminationReport, ValidityCard, Decode]


def committed_json() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "results", "frozen", "judges", "prospective"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [p for p in listed if p.endswith((".json", ".jsonl"))]


def model_of(path: str) -> type[BaseModel] | None:
    return next((model for pattern, model in RECORDS if fnmatch.fnmatch(path, pattern)), None)


def test_every_committed_record_parses_with_its_model() -> None:
    """Every committed .json/.jsonl is a record read with its model (all of it parses; a run's records refuse
    unknown fields, so none has any) or a named free-form study file; a new kind of file must be placed here."""
    files = committed_json()
    assert len(files) > 300
    unplaced, parsed = [], 0
    for rel in files:
        model = model_of(rel)
        if model is None:
            if not any(fnmatch.fnmatch(rel, pattern) for pattern, _ in FREE_FORM):
                unplaced.append(rel)
            continue
        path = REPO / rel
        rows = [row for _, row in iter_jsonl(path)] if rel.endswith(".jsonl") else [read_json(path)]
        for n, row in enumerate(rows, start=1):
            parse_record(model, row, f"{rel}:{n}")
            parsed += 1
    assert not unplaced, f"committed JSON with no model and not named free-form: {unplaced}"
    assert parsed > 5000


def test_every_committed_output_file_round_trips_to_its_bytes() -> None:
    """Read through its model and written as backtest writes it, each committed output file is the same bytes
    (RUN.json, metrics.json, SEAL.json, contamination.json of every run; the validity cards; the decode keys)."""
    checked = 0
    for rel in committed_json():
        model = model_of(rel)
        if model in OUTPUTS:
            assert issubclass(model, BaseModel)
            assert output_bytes(read_output(model, REPO / rel)) == (REPO / rel).read_bytes(), rel  # type: ignore[type-var]
            checked += 1
    assert checked == 4 * len(RUNS) + 5 + len(LABEL_SETS)


@pytest.mark.parametrize("run_dir", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_committed_run_read_whole_through_its_folder(run_dir: Path) -> None:
    """The folder reads each file once, typed; the judgments are written back line for line as judging writes
    them, and its seal holds."""
    folder = RunFolder.open(run_dir).check_seal()
    run = folder.run
    assert run.status == "complete" and run.compact and run.judge.spec and run.retriever and run.retriever.k == 8
    assert run.leakage and all(c.status == "passed" for c in run.leakage) and run.valid is True
    assert folder.metrics.release.n_questions == folder.metrics.n_questions == run.n_questions
    assert b"".join(judgment_line(j) for j in folder.judgments) == folder.file("judgments.jsonl").read_bytes()
    assert [r.question_id for r in folder.retrievals(text=False)] == [j.question_id for j in folder.judgments]
    assert folder.contamination is not None and run.contamination is not None
    assert folder.contamination.rate == run.contamination.rate
    assert folder.cost is run.cost and folder.judgments is folder.judgments  # read once, kept


def test_a_misspelt_run_field_is_refused(tmp_path: Path) -> None:
    """A misspelt key in RUN.json (as a ``model_copy(update=...)`` dict could write it) is refused on writing
    and on reading, one line naming it; before ``extra="forbid"`` both passed silently."""
    run = RunFolder(RUNS[0]).run
    folder = RunFolder(tmp_path)
    with pytest.raises(ValidationError, match="judged_last_invocaton"):
        run.updated(judged_last_invocaton=3)
    with pytest.raises(BadInput, match="judged_last_invocaton"):
        write_output(tmp_path / "RUN.json", Run, {**json.loads(output_bytes(run)), "judged_last_invocaton": 3})
    assert not (tmp_path / "RUN.json").exists()
    (tmp_path / "RUN.json").write_text(json.dumps({**json.loads(output_bytes(run)), "judge_stat": {}}))
    with pytest.raises(BadInput, match="judge_stat"):
        folder.run  # noqa: B018 - reading is what is refused
    with pytest.raises(ValidationError, match="retreiver"):
        Metrics.model_validate({**json.loads(output_bytes(RunFolder(RUNS[0]).metrics)), "retreiver": None})
    with pytest.raises(ValidationError, match="kapa"):
        run.updated(judge={**run.judge.model_dump(), "kapa": 1})  # a block inside refuses one too
    probe = RunFolder(RUNS[0]).contamination
    assert probe is not None
    with pytest.raises(ValidationError, match="rates"):
        ContaminationReport.model_validate({**json.loads(output_bytes(probe)), "rates": {}})


def test_updated_checks_the_change_and_keeps_the_rest(tmp_path: Path) -> None:
    """``updated`` validates what it changes (a wrong type is refused) and leaves every other field as it was
    set, so the record is written to the same bytes but for the change."""
    run = RunFolder(RUNS[0]).run
    with pytest.raises(ValidationError, match="n_needs_review"):
        run.updated(n_needs_review="many")
    changed = run.updated(n_needs_review=run.n_needs_review)
    assert output_bytes(changed) == output_bytes(run) == (RUNS[0] / "RUN.json").read_bytes()
    folder = RunFolder(tmp_path)
    folder.write_run(run.updated(valid=False))
    assert RunFolder(tmp_path).run.valid is False
    assert json.loads((tmp_path / "RUN.json").read_text()) == {**json.loads(output_bytes(run)), "valid": False}


def test_judge_stats_add_up_like_usage_counters() -> None:
    """Counters add (what only one side has is kept, retry reasons by reason) and subtract back."""
    a = JudgeStats(http_calls=2, prompt_tokens=10, retry_reasons={"429": 1})
    b = JudgeStats.model_validate({"http_calls": 1, "cache_hits": 4, "retry_reasons": {"429": 2, "500": 1}})
    total = a + b
    assert total.counters() == {
        "http_calls": 3,
        "prompt_tokens": 10,
        "cache_hits": 4,
        "retry_reasons": {"429": 3, "500": 1},
    }
    assert (total - b).get("http_calls") == 2 and (total - b).get("cache_hits") == 0
    assert JudgeStats().counters() == {} and (JudgeStats() + JudgeStats(judged=1)).counters() == {"judged": 1}


def test_a_run_folder_without_a_header_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not a run folder"):
        RunFolder.open(tmp_path)
    shutil.copy(RUNS[0] / "RUN.json", tmp_path / "RUN.json")
    folder = RunFolder.open(tmp_path)
    assert folder.judgments == [] and folder.retrievals(text=False) == [] and folder.contamination is None
    with pytest.raises(BadInput, match="metrics.json is missing"):
        folder.metrics  # noqa: B018
