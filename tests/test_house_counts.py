"""scripts/house_counts.py: each count on a small package written for it, and a missing tool is a failure,
never a count of 0."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "house_counts.py"
spec = importlib.util.spec_from_file_location("house_counts", SCRIPT)
assert spec and spec.loader
house_counts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(house_counts)

READERS = """
from pathlib import Path
from typing import Any


def reads_header(run_dir: Path) -> dict[str, Any]:
    return read_json(run_dir / "RUN.json")


def reads_through_a_name(run_dir: Path) -> int:
    path = run_dir / "judgments.jsonl"
    return sum(1 for _ in iter_jsonl(path))


def reads_text(run_dir: Path) -> str:
    return (run_dir / "RUN.json").read_text()


def only_tests_and_writes(run_dir: Path) -> dict[str, Any]:
    if not (run_dir / "RUN.json").is_file():
        raise SystemExit(f"no {run_dir / 'RUN.json'}")
    write_json(run_dir / "RUN.json", {})
    return {}


def outer(run_dir: Path) -> None:
    def inner() -> str:
        return open(run_dir / "judgments.jsonl").read()

    return None
"""

BRANCHY = "def branchy(x):\n" + "".join(f"    if x == {i} and x or x:\n        return {i}\n" for i in range(11))


def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "backtest"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "readers.py").write_text(READERS)
    (pkg / "branchy.py").write_text(BRANCHY)
    (pkg / "long.py").write_text("x = 1\n" * 601)
    (pkg / "short.py").write_text("x = 1\n" * 600)
    return tmp_path


def test_counts_on_a_small_package(tmp_path):
    found = house_counts.counts(package(tmp_path))
    assert found["returns_dict_str_any"] == 2
    readers = [line.split(" ", 1)[1] for line in found["run_folder_readers"]]
    assert readers == ["reads_header", "reads_through_a_name", "reads_text", "inner"]
    assert found["modules_over_600_lines"] == ["backtest/long.py (601)"]
    # 11 ifs, each with two boolean operators: 1 + 11 * 3 = 34 to radon; mccabe counts the ifs only (12)
    assert found["functions_over_radon_complexity_20"] == ["backtest/branchy.py:1 branchy (34)"]
    assert found["functions_over_ruff_complexity_15"] == []


def test_json_and_root_option(tmp_path, capsys):
    assert house_counts.main(["--json", "--root", str(package(tmp_path))]) == 0
    assert json.loads(capsys.readouterr().out)["modules_over_600_lines"] == ["backtest/long.py (601)"]


def test_a_root_without_the_package_is_one_line(tmp_path, capsys):
    assert house_counts.main(["--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"house_counts: {tmp_path} has no backtest/ package"


def test_missing_radon_fails_instead_of_counting_zero(tmp_path):
    # radon made unimportable in a child interpreter (sys.modules[name] = None makes `import` fail)
    code = (
        "import runpy, sys; sys.modules['radon'] = None; sys.modules['radon.complexity'] = None; "
        f"sys.argv = ['house_counts.py', '--root', {str(package(tmp_path))!r}]; "
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "house_counts: radon is not installed: `make install` installs it (the dev extra)"
    ]
