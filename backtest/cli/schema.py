"""``backtest schema KIND``: print the JSON Schema of a record type."""

from __future__ import annotations

import click
from pydantic import BaseModel

from backtest.analysis.outputs import Comparison, Decode, DiversityReport, ValidationReport
from backtest.analysis.reading.items import AnnotationItem, Label, PairItem, PairLabel
from backtest.arena.outputs import ArenaReport
from backtest.cli.common import echo_json
from backtest.core.records import SCHEMAS
from backtest.generators.outputs import Candidate, GateDecision, ReviewDecode, ReviewItem
from backtest.judge.batch import BatchManifest
from backtest.judge.outputs import ValidityCard
from backtest.retrieve.outputs import IndexMeta
from backtest.scoring.outputs import Metrics, Run, RunSeal
from backtest.studies.outputs import Baselines, Grade, GradeNote, Stress
from backtest.validity.outputs import ContaminationReport, ControlReport

# Inputs (the records of core.records and the annotation formats) and every output file's model.
ALL_SCHEMAS: dict[str, type[BaseModel]] = {
    **SCHEMAS,
    "annotation-item": AnnotationItem,
    "label": Label,
    "pair-item": PairItem,
    "pair-label": PairLabel,
    "run": Run,
    "metrics": Metrics,
    "run-seal": RunSeal,
    "comparison": Comparison,
    "baselines": Baselines,
    "stress": Stress,
    "grade": Grade,
    "grade-note": GradeNote,
    "arena": ArenaReport,
    "diversity": DiversityReport,
    "validation": ValidationReport,
    "decode": Decode,
    "control": ControlReport,
    "contamination": ContaminationReport,
    "validity-card": ValidityCard,
    "judge-batch-manifest": BatchManifest,
    "index": IndexMeta,
    "gate-candidate": Candidate,
    "gate-review-item": ReviewItem,
    "gate-decode": ReviewDecode,
    "gate-decision": GateDecision,
}


@click.command("schema")
@click.argument("kind", type=click.Choice(sorted(ALL_SCHEMAS)))
def schema(kind: str) -> None:
    """Print the JSON Schema of a record: inputs (question, metadata, ...) and outputs (run, metrics, grade, ...)."""
    echo_json(ALL_SCHEMAS[kind].model_json_schema())


# Attached to the ``backtest`` group by :mod:`backtest.cli.main`.
COMMANDS = [schema]
