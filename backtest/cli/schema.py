"""``backtest schema KIND``: print the JSON Schema of a record type."""

from __future__ import annotations

import click

from ..records import SCHEMAS
from ..validation.items import AnnotationItem, Label, PairItem, PairLabel
from .common import echo_json
from .main import cli

ALL_SCHEMAS = {**SCHEMAS, "annotation-item": AnnotationItem, "label": Label, "pair-item": PairItem, "pair-label": PairLabel}


@cli.command("schema")
@click.argument("kind", type=click.Choice(sorted(ALL_SCHEMAS)))
def schema(kind: str) -> None:
    """Print the JSON Schema of a record (question, metadata, judgment, annotation-item, label, ...)."""
    echo_json(ALL_SCHEMAS[kind].model_json_schema())
