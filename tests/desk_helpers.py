"""Helpers for the reading desk's tests: a fresh export of a committed run, the desk as a real process on
127.0.0.1, and its JSON API."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import REPO, run_cli

#: a committed run (space-2016's citation_leaders): its export of five items is the desk's test set
RUN = next((REPO / "results" / "space-2016" / "citation_leaders").glob("offline-*"))


def export_five(folder: Path, capsys, seed: int = 41, per_run: int = 5, *extra: str) -> Path:
    """``annotate export RUN --per-run 5`` of the committed run into ``folder`` (real items, real documents)."""
    code, _, err = run_cli(
        ["annotate", "export", str(RUN), "--per-run", str(per_run), "--seed", str(seed), "--out", str(folder), *extra],
        root=REPO,
        capsys=capsys,
    )
    assert code == 0, err
    return folder


def start_desk(folder: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """``backtest annotate serve FOLDER ARGS`` as its own process; (the process, the URL it printed)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from backtest.cli.main import main; main(sys.argv[1:])",
            "--root",
            str(REPO),
            "annotate",
            "serve",
            str(folder),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    found = re.search(r"http://\S+/", "".join(lines))
    if found is None:
        proc.kill()
        raise AssertionError(f"the desk did not start: {lines} {proc.stderr.read() if proc.stderr else ''}")
    return proc, found.group(0)


def call(url: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """GET (or POST ``body`` as JSON) ``url + path``; (status, decoded JSON or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def items_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]


def answers_for(folder: Path) -> dict[str, dict[str, str]]:
    """One answer a sheet row per item of an export: engaged items cite their first document, the rest do not;
    notes with a comma and quotes (what a sheet must quote)."""
    out = {}
    for k, item in enumerate(items_of(folder)):
        engaged = k % 2 == 0
        out[item["item_id"]] = {
            "outcome": "partially_addressed" if engaged else "not_addressed",
            "premise_status": "still_plausible" if engaged else "not_applicable",
            "confidence": str(1 + k % 3),
            "cited": item["documents"][0]["id"] if engaged else "",
            "notes": f'item {k}, "read"' if k % 2 else "",
        }
    return out


def write_sheet(path: Path, answers: dict[str, dict[str, str]]) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "outcome", "premise_status", "confidence", "cited", "notes"])
        for item, a in answers.items():
            writer.writerow([item, a["outcome"], a["premise_status"], a["confidence"], a["cited"], a["notes"]])
    return path


def without_seconds(path: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in path.read_text().splitlines()]


#: a committed intelligibility set (evidence_graph's gated questions, read held-out): the desk's test set of that kind
INTELLIGIBILITY_SET = REPO / "judges" / "validation" / "evidence-graph-v4"


def intelligibility_copy(folder: Path, *extra: str, source: Path = INTELLIGIBILITY_SET) -> Path:
    """A committed set's items, guide and decode.json (and ``extra`` files of it) copied into ``folder``."""
    import shutil

    (folder / "labels").mkdir(parents=True)
    for name in ("items.jsonl", "guide.md", "decode.json", *extra):
        shutil.copy(source / name, folder / name)
    return folder


def intelligibility_row(label: dict[str, Any]) -> dict[str, str]:
    """A committed label as the answer the desk takes (the sheet's columns, each a string)."""
    return {"intelligible": json.dumps(label["intelligible"]), "real": json.dumps(label["real"])} | {
        "reason": label["reason"]
    }


#: a committed generated-question intelligibility set (80 questions of review_future_work, two passes, 2 adjudicated)
QUESTION_SET = REPO / "judges" / "validation" / "intelligibility-v6"


def question_row(label: dict[str, Any]) -> dict[str, str]:
    """A committed generated-question label as the answer the desk takes."""
    return {
        "intelligible": label["intelligible"],
        "reason": label["reason"] or "",
        "real_conflict": label["real_conflict"],
        "note": label.get("note", ""),
    }


def script(name: str):
    """``scripts/NAME.py`` as a module (a set's writer and its results: evidence_graph_reading,
    intelligibility_study)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
