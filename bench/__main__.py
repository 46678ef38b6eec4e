"""Run every benchmark module (or those named on the command line) and save their results.

Usage: ``python -m bench [NAME ...] [--quick]``; ``make bench`` runs them all.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backtest.core.fileio import write_json  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmark names (bench_<name>.py); default: all")
    parser.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke run")
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    args = parser.parse_args()
    package = Path(__file__).resolve().parent
    available = sorted(
        m.name[len("bench_") :] for m in pkgutil.iter_modules([str(package)]) if m.name.startswith("bench_")
    )
    chosen = args.names or available
    unknown = [n for n in chosen if n not in available]
    if unknown:
        print(f"error: unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(available)}", file=sys.stderr)
        return 2
    for name in chosen:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"== {name}", flush=True)
        started = time.time()
        result = module.run(args)
        result["_meta"] = {
            "benchmark": name,
            "seconds": round(time.time() - started, 2),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "quick": args.quick,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        write_json(RESULTS / f"{name}.json", result)
        print(json.dumps({k: v for k, v in result.items() if not isinstance(v, (list, dict))}, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
