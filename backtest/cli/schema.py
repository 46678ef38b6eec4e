"""``backtest schema KIND``: print the JSON Schema of a record type."""

from __future__ import annotations

import click

from ..records import SCHEMAS
from .common import echo_json
from .main import cli


@cli.command("schema")
@click.argument("kind", type=click.Choice(sorted(SCHEMAS)))
def schema(kind: str) -> None:
    """Print the JSON Schema of a record (question, metadata, judgment, ...)."""
    echo_json(SCHEMAS[kind].model_json_schema())
