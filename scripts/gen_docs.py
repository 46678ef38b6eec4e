"""Generate the docs site's reference pages from the code and the committed results (``make docs``).

* ``docs/reference/cli.md``: every command and subcommand's ``--help``, walked from the click group;
* ``docs/reference/schemas.md``: the JSON Schema of every record ``backtest schema`` knows;
* ``docs/reference/benchmarks.md``: every ``bench/results/*.json`` as tables (nested keys flattened),
  and ``*.md`` result tables included as they are.

The pages are build outputs (git-ignored), never edited by hand.

It also fills the benchmark blocks of the committed pages (``docs/*.md``, ``README.md``): the text
between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` is replaced by ``summary(results)`` of
``bench/bench_NAME.py``, given ``bench/results/NAME.json``, so every number the docs quote is
generated from a committed result (``tests/test_docs.py`` fails when a block is out of date).

The same way, ``<!-- grounded:INSTANCE -->`` blocks (``results/README.md``) are the label-grounded table of the
committed runs of INSTANCE (``compare --labels`` with the labelled samples under ``judges/validation/``), so
the published ranking follows from the committed judgments and readers' labels.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference"
BLOCK = re.compile(r"(<!-- bench:(?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /bench:(?P=name) -->)", re.S)


def walk(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    """Every (name path, command) under ``command``, depth first, in name order."""
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            found += walk(command.commands[name], [*path, name])
    return found


def cli_page() -> str:
    from backtest.cli.main import cli

    lines = [
        "# Commands",
        "",
        "Generated from the click commands (`make docs`); `backtest COMMAND --help` prints the same.",
        "",
    ]
    for path, command in walk(cli, ["backtest"]):
        with click.Context(command, info_name=" ".join(path)) as ctx:
            text = command.get_help(ctx)
        lines += [f"## `{' '.join(path)}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


def schemas_page() -> str:
    from backtest.cli.schema import ALL_SCHEMAS

    lines = [
        "# Record schemas",
        "",
        "Generated from the pydantic models (`make docs`); `backtest schema NAME` prints each.",
        "",
    ]
    for name in sorted(ALL_SCHEMAS):
        model = ALL_SCHEMAS[name]
        doc = " ".join((model.__doc__ or "").split())
        lines += [f"## `{name}`", "", doc, "", "```json", json.dumps(model.model_json_schema(), indent=2), "```", ""]
    return "\n".join(lines)


def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, scalar)`` rows of a nested JSON value; lists of scalars stay one cell."""
    if isinstance(data, dict):
        rows: list[tuple[str, Any]] = []
        for key, value in data.items():
            rows += flatten(value, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(data, list) and any(isinstance(v, (dict, list)) for v in data):
        return [(f"{prefix}", f"{len(data)} entries")]
    return [(prefix, data)]


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def benchmarks_page() -> str:
    lines = [
        "# Benchmarks",
        "",
        "Rendered from `bench/results/` by `make docs`; the numbers come from `make bench` (and `make attack`) runs, "
        "never typed by hand. Each file's `_meta` says when and on what machine it was measured.",
        "",
    ]
    results = ROOT / "bench" / "results"
    for path in sorted(results.glob("*.json")):
        if path.with_suffix(".md").is_file():
            continue
        data = json.loads(path.read_text())
        lines += [f"## `{path.name}`", "", "| key | value |", "|---|---|"]
        lines += [f"| `{key}` | {cell(value)} |" for key, value in flatten(data)]
        lines.append("")
    for path in sorted(results.glob("*.md")):
        body = path.read_text().strip().splitlines()
        body = [("#" + line) if line.startswith("#") else line for line in body]  # one level down
        lines += [f"## `{path.name}`", "", *body, ""]
    return "\n".join(lines)


def bench_summary(name: str) -> str:
    """``summary(results)`` of ``bench/bench_NAME.py`` on its committed ``bench/results/NAME.json``."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    module = importlib.import_module(f"bench.bench_{name}")
    results = json.loads((ROOT / "bench" / "results" / f"{name}.json").read_text())
    return module.summary(results).strip() + "\n"


def fill_bench_blocks(text: str) -> str:
    """``text`` with every ``<!-- bench:NAME -->`` block rendered from the committed results."""
    return BLOCK.sub(lambda m: m.group(1) + bench_summary(m.group("name")) + m.group(4), text)


GROUNDED = re.compile(r"(<!-- grounded:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /grounded:(?P=name) -->)", re.S)


def grounded_table(instance: str) -> str:
    """The label-grounded table of the committed runs of ``instance`` (``compare --labels``)."""
    from backtest.analysis.compare import compare_runs, render_grounded_table
    from backtest.analysis.estimate import discover_label_sets
    from backtest.core.workspace import Workspace

    ws = Workspace(ROOT)
    runs = sorted(p.parent for p in (ws.results / instance).glob("*/*/RUN.json"))
    return render_grounded_table(compare_runs(runs, ws=ws, labels=discover_label_sets(ws)))


def fill_grounded_blocks(text: str) -> str:
    """``text`` with every ``<!-- grounded:INSTANCE -->`` block rendered from the committed runs and labels."""
    return GROUNDED.sub(lambda m: m.group(1) + grounded_table(m.group("name")) + m.group(4), text)


def pages_with_bench_blocks() -> list[Path]:
    return [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] if BLOCK.search(p.read_text())]


def pages_with_grounded_blocks() -> list[Path]:
    pages = [ROOT / "README.md", ROOT / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in pages if GROUNDED.search(p.read_text())]


def main() -> int:
    for pages, fill, what in (
        (pages_with_bench_blocks(), fill_bench_blocks, "benchmark numbers"),
        (pages_with_grounded_blocks(), fill_grounded_blocks, "grounded tables"),
    ):
        for page in pages:
            text = page.read_text(encoding="utf-8")
            filled = fill(text)
            if filled != text:
                page.write_text(filled, encoding="utf-8")
                print(f"filled the {what} of {page.relative_to(ROOT)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for name, render in (("cli.md", cli_page), ("schemas.md", schemas_page), ("benchmarks.md", benchmarks_page)):
        (OUT / name).write_text(render() + "\n", encoding="utf-8")
        print(f"wrote {(OUT / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
