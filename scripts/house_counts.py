"""The house's debt counts (issue 33): ``dict[str, Any]`` in signatures, ``getattr`` probes on judges and
judgments, functions over complexity 15, modules over 600 lines. ``python scripts/house_counts.py [--json]``.

Complexity is ruff's C901 (mccabe) with the per-file exceptions ignored, so a listed debt still counts.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "backtest"
ANY_DICT = "dict[str, Any]"
PROBE = re.compile(r"getattr\((judge|judgment|j|client|many|seen), \"")  # a probe: a literal attribute name


def signature_counts(tree: ast.AST) -> tuple[int, int]:
    """(functions returning ``dict[str, Any]``, functions with it anywhere in their signature)."""
    returns = anywhere = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ret = ast.unparse(node.returns) if node.returns else ""
            args = [a.annotation for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs]
            params = " ".join(ast.unparse(a) for a in args if a is not None)
            returns += ANY_DICT in ret
            anywhere += ANY_DICT in ret or ANY_DICT in params
    return returns, anywhere


def complexity() -> list[str]:
    """Functions over 15, as ruff reports them (per-file exceptions switched off)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=15",
            "--output-format",
            "concise",
            str(PACKAGE),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return [line.replace(str(ROOT) + "/", "") for line in out.splitlines() if "C901" in line]


def main() -> None:
    returns = anywhere = probes = 0
    long_modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        r, a = signature_counts(ast.parse(text))
        returns, anywhere = returns + r, anywhere + a
        probes += len(PROBE.findall(text))
        lines = text.count("\n")
        if lines > 600:
            long_modules.append(f"{path.relative_to(ROOT)} ({lines})")
    counts = {
        "returns_dict_str_any": returns,
        "signatures_with_dict_str_any": anywhere,
        "getattr_probes_on_judges": probes,
        "functions_over_complexity_15": complexity(),
        "modules_over_600_lines": long_modules,
    }
    if "--json" in sys.argv:
        print(json.dumps(counts, indent=2))
        return
    for key, value in counts.items():
        print(f"{key}: {len(value) if isinstance(value, list) else value}")
        for item in value if isinstance(value, list) else []:
            print(f"  {item}")


if __name__ == "__main__":
    main()
