"""The house's debt counts (issues 33 and 43). ``python scripts/house_counts.py [--json] [--root DIR]``.

Every count is over the ``backtest/`` package under ``--root`` (default: this checkout), so the counts of
another checkout (``--root /work/main``, say) are measured by the same rules:

- ``returns_dict_str_any``: functions (methods and nested functions included) whose return annotation
  contains ``dict[str, Any]``, read with :mod:`ast`; ``signatures_with_dict_str_any`` also counts it in a
  parameter's annotation.
- ``getattr_probes_on_judges``: ``getattr(judge, "name")``-style probes with a literal attribute name.
- ``run_folder_readers``: functions that open a run folder's ``RUN.json`` or ``judgments.jsonl`` directly.
  Precisely, the innermost function holding a path join whose right side is one of those file names as a
  string literal (``run_dir / "RUN.json"``) where that join -- as written, or through a plain name it was
  assigned to in that function -- is the argument or the receiver of a reading call: a call whose name
  starts with ``read``, ``iter``, ``load`` or ``open`` (``read_output``, ``read_json``, ``iter_jsonl``,
  ``Path.read_text``, ``open``, ``_read_records``...). Writing it, testing it (``.is_file()``) or naming it
  in a message is not reading; a file name held in a variable (``run_dir / name``) is not seen.
- ``modules_over_600_lines``: modules of more than 600 lines.
- ``functions_over_radon_complexity_20``: radon's cyclomatic complexity of every function, method and
  closure; it counts comprehensions and boolean operators, which ruff's C901 (mccabe) does not.
- ``functions_over_ruff_complexity_15``: ruff's C901 with the per-file exceptions switched off, so a listed
  debt still counts.

A tool a count needs that cannot run (radon not importable, ruff failing) is one line on stderr and exit 2,
never a count of 0. ``make install`` installs both (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ANY_DICT = "dict[str, Any]"
PROBE = re.compile(r"getattr\((judge|judgment|j|client|many|seen), \"")  # a probe: a literal attribute name
RUN_FOLDER_FILES = ("RUN.json", "judgments.jsonl")
READING_CALL = re.compile(r"^_?(read|iter|load|open)")
LONG_MODULE = 600
RADON_LIMIT = 20
RUFF_LIMIT = 15
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ToolMissing(Exception):
    """A tool a count needs cannot run: the count would be a false 0."""


def signature_counts(tree: ast.AST) -> tuple[int, int]:
    """(functions returning ``dict[str, Any]``, functions with it anywhere in their signature)."""
    returns = anywhere = 0
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            ret = ast.unparse(node.returns) if node.returns else ""
            args = [a.annotation for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs]
            params = " ".join(ast.unparse(a) for a in args if a is not None)
            returns += ANY_DICT in ret
            anywhere += ANY_DICT in ret or ANY_DICT in params
    return returns, anywhere


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of ``function``'s body, not descending into the functions nested in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, FUNCTIONS):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _is_run_file_join(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value in RUN_FOLDER_FILES
    )


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def reads_run_folder(function: ast.AST) -> bool:
    """True when ``function`` itself reads a run folder's ``RUN.json`` or ``judgments.jsonl`` (module doc)."""
    nodes = _own_nodes(function)
    names = {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and _is_run_file_join(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in nodes:
        if isinstance(node, ast.Call) and READING_CALL.match(_call_name(node)):
            receiver = [node.func.value] if isinstance(node.func, ast.Attribute) else []
            if any(_is_run_file_join(arg, names) for arg in [*node.args, *receiver]):
                return True
    return False


def run_folder_readers(tree: ast.AST, where: str) -> list[str]:
    """``where:line name`` of every run-folder reader in ``tree``."""
    return [
        f"{where}:{node.lineno} {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, FUNCTIONS) and reads_run_folder(node)
    ]


def radon_over(source: str, where: str, limit: int = RADON_LIMIT) -> list[str]:
    """``where:line name (complexity)`` of the functions, methods and closures over ``limit`` to radon."""
    try:
        from radon.complexity import add_inner_blocks, cc_visit
    except ImportError:
        raise ToolMissing("radon is not installed: `make install` installs it (the dev extra)") from None
    blocks = add_inner_blocks(cc_visit(source))
    return [
        f"{where}:{b.lineno} {b.fullname} ({b.complexity})" for b in blocks if b.letter != "C" and b.complexity > limit
    ]


def ruff_over(package: Path, limit: int = RUFF_LIMIT) -> list[str]:
    """Functions over ``limit`` to ruff's C901 (per-file exceptions switched off)."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--exit-zero", "--select", "C901"]
        + ["--config", f"lint.mccabe.max-complexity={limit}", "--output-format", "concise", str(package)],
        capture_output=True,
        text=True,
        cwd=package.parent,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ToolMissing(f"ruff could not run ({last}): `make install` installs it (the dev extra)")
    return [line.replace(str(package.parent) + "/", "") for line in done.stdout.splitlines() if "C901" in line]


def counts(root: Path) -> dict[str, Any]:
    """Every count of the module doc over ``root/backtest``."""
    package = root / "backtest"
    if not package.is_dir():
        raise NotADirectoryError(f"{root} has no backtest/ package")
    returns = anywhere = probes = 0
    long_modules: list[str] = []
    readers: list[str] = []
    radon: list[str] = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        where = str(path.relative_to(root))
        tree = ast.parse(text)
        r, a = signature_counts(tree)
        returns, anywhere = returns + r, anywhere + a
        probes += len(PROBE.findall(text))
        readers += run_folder_readers(tree, where)
        radon += radon_over(text, where)
        lines = text.count("\n")
        if lines > LONG_MODULE:
            long_modules.append(f"{where} ({lines})")
    return {
        "returns_dict_str_any": returns,
        "signatures_with_dict_str_any": anywhere,
        "getattr_probes_on_judges": probes,
        "run_folder_readers": readers,
        "modules_over_600_lines": long_modules,
        "functions_over_radon_complexity_20": radon,
        "functions_over_ruff_complexity_15": ruff_over(package),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the counts (and the lists) as JSON")
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--root", type=Path, default=here, help="the checkout to count (default: this one)")
    args = parser.parse_args(argv)
    try:
        found = counts(args.root)
    except (ToolMissing, NotADirectoryError) as exc:
        print(f"house_counts: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    for key, value in found.items():
        print(f"{key}: {len(value) if isinstance(value, list) else value}")
        for item in value if isinstance(value, list) else []:
            print(f"  {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
