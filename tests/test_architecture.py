"""The package's shape: every module imports on its own, no import cycles, imports point down the stages.

The stage order is the data flow of ``../shared/DESIGN.md`` (and ``docs/architecture.md``):
a module may import from its own stage or a lower one, never from a higher one. Imports are
read from the source with :mod:`ast` (function-level imports included), so a cycle hidden
inside a function counts too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "backtest"

# Lowest first. ``backtest`` itself (the package root: its version) counts as core.
STAGES = [
    "core",
    "corpus",
    "llm",
    "text",
    "submit",
    "generators",
    "retrieve",
    "judge",
    "validity",
    "scoring",
    "arena",
    "analysis",
    "studies",
    "interop",
    "cli",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "core"


def imported_modules(module: str) -> set[str]:
    """The package modules ``module`` imports anywhere in its source (a name imported from a package counts
    as that submodule when one exists, else as the package)."""
    path = MODULES[module]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module:
                out.add(target)
    return out


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module in MODULES:
        graph.add_edges_from((module, target) for target in imported_modules(module))
    return graph


def test_every_stage_is_known() -> None:
    unknown = sorted({stage_of(m) for m in MODULES} - set(STAGES))
    assert not unknown, f"modules outside the declared stages: {unknown} (add the stage to STAGES and the docs)"


def test_no_import_cycles() -> None:
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1)
    assert not cycles, f"import cycles: {cycles}"


def test_imports_point_down_the_stages() -> None:
    rank = {stage: i for i, stage in enumerate(STAGES)}
    upward = sorted((m, t) for m, t in import_graph().edges if rank[stage_of(t)] > rank[stage_of(m)])
    assert not upward, "imports from a higher stage:\n" + "\n".join(f"{m} -> {t}" for m, t in upward)


def test_the_docs_state_the_same_stage_order() -> None:
    import re

    page = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    documented = re.findall(r"^\| \d+ \| `(\w+)/` \|", page, flags=re.M)
    assert documented == STAGES


def test_the_graph_walker_sees_a_cycle(tmp_path: Path) -> None:
    """The cycle check can fail: two modules importing each other (one inside a function) form a component."""
    graph = nx.DiGraph([("a", "b"), ("b", "a"), ("b", "c")])
    assert [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1] == [["a", "b"]]
    # judge.offline imports the embedding model only inside a method: the walker still sees it
    assert "backtest.text.embed" in imported_modules("backtest.judge.offline")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_in_a_fresh_interpreter(module: str) -> None:
    result = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1:]


def test_each_top_level_command_has_its_own_cli_module() -> None:
    """``backtest NAME`` lives in ``backtest/cli/NAME.py`` (``import_.py`` for ``import``), the only command it
    attaches; the rest of the folder is shared options (common), the entry point (main) and a subgroup (batch)."""
    import importlib

    from backtest.cli.main import COMMAND_MODULES, cli

    shared = {"__init__", "common", "main", "batch"}
    files = {p.stem for p in (PACKAGE / "cli").glob("*.py")} - shared
    assert {m.__name__.rsplit(".", 1)[1] for m in COMMAND_MODULES} == files
    for stem in sorted(files):
        module = importlib.import_module(f"backtest.cli.{stem}")
        assert [c.name for c in module.COMMANDS] == [stem.rstrip("_")], stem
    assert sorted(cli.commands) == sorted(stem.rstrip("_") for stem in files)
