"""Re-run the hardening attack table (issue 15) on a real instance and write what was caught.

    .venv/bin/python scripts/attack_table.py [--out bench/results/attack-table] [--seed 0] [--quick]

Builds the small real instance ``astro-2025-ep`` (astro-2025 restricted to astro-ph.EP, from
``../shared``) in a temporary workspace and attacks it as a hostile user would, class by class:
random bit flips over a frozen set, a manifest and the ledger; structural edits (files
deleted, added, reordered; ledger lines dropped, swapped, rewritten with their own hash
recomputed; a whole history rewritten); hostile submissions; SIGKILLs during ``score`` and
``freeze``; concurrent freezes; a full disk (a real tmpfs, where mounting is allowed); an
endpoint that quotes the API key back; outputs aimed at owned folders; unsafe names; an
edited partial judgment; a judge that always fails; round three's classes
(``scripts/attack_round3.py``: validity cards, release trees, cost caps, batch files,
annotation sheets, Markdown injection, prospective commitments, UTC offsets, Ray
faults); and round four's (``scripts/attack_round4.py``, one class per item of issue 39:
samples cherry-picked, labels of another run, a replay or card check made to call an
endpoint, outputs aimed at FIFOs and links, adjudicated labels hand-written or stale, orders
to the judge, keyword stuffing, a judge fitted on its sample, a commitment deleted, labels
and judgments rewritten, internal errors, concurrent imports of one reader, the smaller
guards). Each trial is "caught" when the harness does what it must (named the tampering,
refused with exit 1/2 and one line, resumed byte-identically, kept the ledger intact, wrote
no key); every miss is listed.

Writes ``<out>.json`` (every trial's class, what was done and whether it was caught) and
``<out>.md`` (the table). Deterministic for a seed, except the moments of the kills, which
are drawn from the seed but land wherever the process happens to be.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("BACKTEST_INDEX_CACHE", str(REPO / ".cache" / "index-cache"))

from backtest.core.fileio import read_json  # noqa: E402
from backtest.core.seal import canonical_json, sha256_file, with_seal  # noqa: E402
from backtest.core.workspace import Workspace  # noqa: E402
from backtest.generators import run_generator  # noqa: E402
from backtest.submit.freeze import freeze_once, verify_ledger_and_sets  # noqa: E402
from backtest.submit.ledger import entry_hash  # noqa: E402
from tests.conftest import build_astro  # noqa: E402
from tests.fuzz_helpers import flip_trials, mutate  # noqa: E402
from tests.test_secrets import KEY, KEY_ENV, _echo_server, echo_judge_config  # noqa: E402

INSTANCE = "astro-2025-ep"
Trial = dict[str, Any]


def cli(ws: Workspace, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The real entry point in-process: (exit code, stdout, stderr)."""
    from backtest.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(["--root", str(ws.root), *args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def clean_refusal(code: int, err: str) -> bool:
    """Exit 1 or 2 with a message and no traceback or internal error."""
    return code in (1, 2) and bool(err.strip()) and "Traceback" not in err and "internal error" not in err


def snapshot(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} if folder.exists() else {}


def copy_ws(base: Workspace, dest: Path) -> Workspace:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(base.root, dest, symlinks=True)
    return Workspace(dest)


def trial(cls: str, what: str, caught: bool, detail: str = "") -> Trial:
    return {"class": cls, "what": what, "caught": bool(caught), "detail": detail[:300]}


def subprocess_cli(ws: Workspace, *args: str) -> list[str]:
    return [sys.executable, "-c", "from backtest.cli.main import main; main()", "--root", str(ws.root), *args]


SUB_ENV = {**os.environ, "PYTHONPATH": str(REPO)}


# --------------------------------------------------------------------------- tampering


def bit_flips(ws: Workspace, frozen: Path, n: int, rng: random.Random) -> list[Trial]:
    manifest = ws.manifest_path(f"{INSTANCE}-past")
    targets = sorted(p for p in frozen.iterdir() if p.is_file()) + [ws.ledger, manifest]
    return [
        trial("random bit flip", f"{path.name} byte {pos}", caught)
        for path, pos, caught in flip_trials(ws, frozen, manifest, targets, n, rng)
    ]


def _rewrite_ledger(ws: Workspace, index: int, **changes: Any) -> None:
    lines = ws.ledger.read_bytes().splitlines(keepends=True)
    data = json.loads(lines[index])
    data.update(changes)
    data["hash"] = entry_hash(data)
    lines[index] = (canonical_json(data) + "\n").encode()
    ws.ledger.write_bytes(b"".join(lines))


def _rewrite_history(ws: Workspace) -> None:
    """Drop the last line and rechain nothing else: a history that verifies by itself."""
    lines = ws.ledger.read_bytes().splitlines(keepends=True)
    ws.ledger.write_bytes(b"".join(lines[:-1]))


def structural_edits(base: Workspace, scratch: Path) -> list[Trial]:
    """Each edit on a fresh copy of a workspace holding two frozen sets; caught when ``backtest verify`` fails."""

    def qfile(ws, s):
        return s / "questions.jsonl"

    def edit_lines(path: Path, fn: Callable[[list[bytes]], list[bytes]]) -> None:
        path.write_bytes(b"".join(fn(path.read_bytes().splitlines(keepends=True))))

    def resealed(ws, s, **changes):
        data = read_json(s / "FROZEN.json")
        data.update(changes)
        data.pop("seal", None)
        (s / "FROZEN.json").write_text(json.dumps(with_seal(data), indent=2) + "\n")

    def symlinked(ws, s):
        real = ws.root / "elsewhere"
        shutil.move(str(s), real)
        os.symlink(real, s)

    edits: dict[str, Callable[[Workspace, Path], None]] = {
        "delete questions.jsonl": lambda ws, s: qfile(ws, s).unlink(),
        "delete metadata.json": lambda ws, s: (s / "metadata.json").unlink(),
        "delete FROZEN.json": lambda ws, s: (s / "FROZEN.json").unlink(),
        "duplicate a question line": lambda ws, s: edit_lines(qfile(ws, s), lambda ls: ls + ls[:1]),
        "delete a question line": lambda ws, s: edit_lines(qfile(ws, s), lambda ls: ls[1:]),
        "swap two question lines": lambda ws, s: edit_lines(qfile(ws, s), lambda ls: [ls[1], ls[0], *ls[2:]]),
        "append a blank line": lambda ws, s: edit_lines(qfile(ws, s), lambda ls: ls + [b"\n"]),
        "CRLF line endings": lambda ws, s: edit_lines(qfile(ws, s), lambda ls: [x.replace(b"\n", b"\r\n") for x in ls]),
        "FROZEN.json re-indented": lambda ws, s: (s / "FROZEN.json").write_text(
            json.dumps(read_json(s / "FROZEN.json"))
        ),
        "FROZEN.json n_questions changed, resealed": lambda ws, s: resealed(ws, s, n_questions=2),
        "FROZEN.json frozen_at changed, resealed": lambda ws, s: resealed(ws, s, frozen_at="2020-01-01T00:00:00Z"),
        "questions edited, file hash and seal recomputed": lambda ws, s: (
            edit_lines(qfile(ws, s), lambda ls: ls[1:]),
            resealed(
                ws,
                s,
                files={**read_json(s / "FROZEN.json")["files"], "questions.jsonl": sha256_file(qfile(ws, s))},
                n_questions=2,
            ),
        ),
        "set folder renamed v1 -> v2": lambda ws, s: s.rename(s.parent / "v2"),
        "set moved under another system": lambda ws, s: shutil.move(str(s), str(s.parent.parent / "other_system")),
        "set replaced by a symbolic link": symlinked,
        "ledger: last line deleted": lambda ws, s: edit_lines(ws.ledger, lambda ls: ls[:-1]),
        "ledger: lines swapped": lambda ws, s: edit_lines(ws.ledger, lambda ls: [ls[1], ls[0], *ls[2:]]),
        "ledger: cut mid-line": lambda ws, s: ws.ledger.write_bytes(ws.ledger.read_bytes()[:-20]),
        "ledger: frozen_at rewritten, hash recomputed": lambda ws, s: _rewrite_ledger(
            ws, -1, frozen_at="2020-01-01T00:00:00Z"
        ),
        "ledger: kind rewritten, hash recomputed": lambda ws, s: _rewrite_ledger(ws, -1, kind="prospective"),
        "ledger: system rewritten, hash recomputed": lambda ws, s: _rewrite_ledger(ws, -1, system="other"),
        "ledger: version rewritten, hash recomputed": lambda ws, s: _rewrite_ledger(ws, -1, version=7),
        "ledger: instance_id rewritten, hash recomputed": lambda ws, s: _rewrite_ledger(
            ws, -1, instance_id="elsewhere"
        ),
        "ledger: first line rewritten, hash recomputed": lambda ws, s: _rewrite_ledger(
            ws, 0, frozen_at="2020-01-01T00:00:00Z"
        ),
        "instance file edited": lambda ws, s: ws.instance_path(INSTANCE).write_text(
            ws.instance_path(INSTANCE).read_text().replace("2025-10-31", "2025-11-30", 1)
        ),
    }
    out = []
    for name, edit in edits.items():
        ws = copy_ws(base, scratch / "edit")
        sets = sorted(ws.frozen.glob(f"{INSTANCE}/*/v1"))
        target = sets[-1]
        edit(ws, target)
        code, _, err = cli(ws, "verify", str(ws.frozen))
        caught = code == 1
        if not caught and target.is_dir():
            code, _, err = cli(ws, "verify", str(target))
            caught = code == 1
        out.append(trial("structural edit", name, caught, err.strip().splitlines()[0] if err.strip() else ""))
    # a whole history rewritten consistently verifies by itself; only the published head exposes it
    ws = copy_ws(base, scratch / "edit")
    code, head_out, _ = cli(ws, "verify", str(ws.frozen), "--head")
    head = head_out.strip().splitlines()[-1].split()[-1]
    _rewrite_history(ws)
    shutil.rmtree(sorted(ws.frozen.glob(f"{INSTANCE}/*/v1"))[-1])
    code, _, err = cli(ws, "verify", str(ws.frozen), "--expect-head", head)
    out.append(
        trial(
            "structural edit",
            "history rewritten (last freeze erased), checked against the published head",
            code == 1 and "not in the chain" in err,
            err.strip(),
        )
    )
    return out


# --------------------------------------------------------------------------- hostile input


def hostile_submissions(ws: Workspace, good: Path, n: int, rng: random.Random, scratch: Path) -> list[Trial]:
    lines = (good / "questions.jsonl").read_text().splitlines()
    meta = json.loads((good / "metadata.json").read_text())
    before = snapshot(ws.frozen)
    out = []
    for k in range(n):
        sub = scratch / f"hostile{k}"
        sub.mkdir(parents=True)
        q, m = mutate(rng, lines, meta)
        (sub / "questions.jsonl").write_bytes(q)
        (sub / "metadata.json").write_bytes(m)
        code, _, err = cli(ws, "freeze", str(sub), "--instance", INSTANCE)
        if code == 0:
            before = snapshot(ws.frozen)  # still a valid submission: it froze legitimately
            caught = True
        else:
            caught = clean_refusal(code, err) and snapshot(ws.frozen) == before
        out.append(trial("hostile submission", f"mutation {k} (exit {code})", caught, err.strip()[:200]))
    return out


def unsafe_names_and_paths(ws: Workspace, good: Path, frozen: Path, scratch: Path) -> list[Trial]:
    out = []
    protected = {p: p.read_bytes() for p in [ws.ledger, ws.manifest_path(f"{INSTANCE}-past")]}
    before = snapshot(ws.frozen)
    attempts = [
        (
            "corpus export --out frozen/LEDGER.jsonl",
            ["corpus", "export", INSTANCE, "--role", "past", "--out", str(ws.ledger)],
        ),
        (
            "corpus export --out manifests/<past>.json",
            ["corpus", "export", INSTANCE, "--role", "past", "--out", str(ws.manifest_path(f"{INSTANCE}-past"))],
        ),
        ("retrieve --out into a frozen set", ["retrieve", str(frozen), "--out", str(frozen / "r.jsonl")]),
        ("retrieve --out frozen", ["retrieve", str(frozen), "--out", str(ws.frozen)]),
        (
            "corpus export --out corpora/<id>/x",
            [
                "corpus",
                "export",
                INSTANCE,
                "--role",
                "past",
                "--out",
                str(ws.root / "corpora" / f"{INSTANCE}-past" / "x.jsonl"),
            ],
        ),
        ("freeze --instance ../../etc", ["freeze", str(good), "--instance", "../../etc"]),
        ("score --run-id with a newline", ["score", str(frozen), "--run-id", "nlrun\n"]),
    ]
    for what, args in attempts:
        code, _, err = cli(ws, *args)
        intact = all(p.read_bytes() == b for p, b in protected.items()) and snapshot(ws.frozen) == before
        out.append(trial("owned paths and unsafe names", what, clean_refusal(code, err) and intact, err.strip()))
    sub = scratch / "nlsys"
    shutil.copytree(good, sub)
    meta = read_json(sub / "metadata.json")
    (sub / "metadata.json").write_text(json.dumps({**meta, "system_name": "nlsys\n"}))
    code, _, err = cli(ws, "freeze", str(sub), "--instance", INSTANCE)
    out.append(
        trial(
            "owned paths and unsafe names",
            "system_name ending in a newline",
            clean_refusal(code, err) and snapshot(ws.frozen) == before,
            err.strip(),
        )
    )
    deep = scratch / "deep"
    shutil.copytree(good, deep)
    (deep / "questions.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    code, _, err = cli(ws, "freeze", str(deep), "--instance", INSTANCE)
    out.append(trial("owned paths and unsafe names", "JSON nested 100k deep", clean_refusal(code, err), err.strip()))
    row = json.loads((good / "questions.jsonl").read_text().splitlines()[0])
    (deep / "questions.jsonl").write_text(
        "".join(json.dumps({**row, "question_id": f"q{k:06d}", "rank": k + 1}) + "\n" for k in range(100_000))
    )
    code, _, err = cli(ws, "freeze", str(deep), "--instance", INSTANCE)
    out.append(trial("owned paths and unsafe names", "100,000 questions", clean_refusal(code, err), err.strip()))
    return out


# --------------------------------------------------------------------------- processes killed and racing


def score_kills(ws: Workspace, frozen: Path, n: int, rng: random.Random) -> list[Trial]:
    system = read_json(frozen / "FROZEN.json")["system"]
    start = time.monotonic()
    ref = subprocess.run(
        subprocess_cli(ws, "score", str(frozen), "--run-id", "ref", "--no-progress"),
        env=SUB_ENV,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.monotonic() - start
    assert ref.returncode == 0, ref.stderr
    reference = (ws.results / INSTANCE / system / "ref" / "judgments.jsonl").read_bytes()
    out = []
    for k in range(n):
        run_id = f"kill{k}"
        proc = subprocess.Popen(
            subprocess_cli(ws, "score", str(frozen), "--run-id", run_id, "--no-progress"),
            env=SUB_ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        delay = rng.uniform(0.5, wall)
        try:
            proc.communicate(timeout=delay)
            killed = False
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
            killed = True
        resumed = subprocess.run(
            subprocess_cli(ws, "score", str(frozen), "--run-id", run_id, "--no-progress"),
            env=SUB_ENV,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        run_dir = ws.results / INSTANCE / system / run_id
        same = resumed.returncode == 0 and (run_dir / "judgments.jsonl").read_bytes() == reference
        status = read_json(run_dir / "RUN.json")["status"] if (run_dir / "RUN.json").is_file() else None
        out.append(
            trial(
                "SIGKILL during score",
                f"kill at {delay:.1f} s of {wall:.1f} s" + ("" if killed else " (had finished)"),
                same and status == "complete",
                resumed.stderr.strip()[-200:],
            )
        )
    return out


def freeze_kills(ws: Workspace, good: Path, n: int, rng: random.Random, scratch: Path) -> list[Trial]:
    out = []
    meta = read_json(good / "metadata.json")
    for k in range(n):
        sub = scratch / f"fk{k}"
        shutil.copytree(good, sub)
        (sub / "metadata.json").write_text(json.dumps({**meta, "system_name": f"killed_{k}"}))
        proc = subprocess.Popen(
            subprocess_cli(ws, "freeze", str(sub), "--instance", INSTANCE),
            env=SUB_ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        delay = rng.uniform(0.5, 12.0)
        try:
            proc.communicate(timeout=delay)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
        problems = verify_ledger_and_sets(ws)  # a set is whole and in the ledger, or there is no trace of it
        landed = list(ws.frozen.glob(f"{INSTANCE}/killed_{k}/v*"))
        retry = (0, "", "") if landed else cli(ws, "freeze", str(sub), "--instance", INSTANCE)
        ok = (
            not problems
            and retry[0] == 0
            and len(list(ws.frozen.glob(f"{INSTANCE}/killed_{k}/v*"))) == 1
            and not verify_ledger_and_sets(ws)
        )
        out.append(
            trial(
                "SIGKILL during freeze",
                f"kill at {delay:.1f} s" + (" (had finished)" if landed else ""),
                ok,
                "; ".join(problems)[:200] or retry[2].strip()[-200:],
            )
        )
    return out


def concurrent_freezes(ws: Workspace, good: Path, rounds: int, width: int, scratch: Path) -> list[Trial]:
    out = []
    meta = read_json(good / "metadata.json")
    rows = (good / "questions.jsonl").read_text().splitlines()
    for r in range(rounds):
        procs = []
        for k in range(width):
            sub = scratch / f"cc{r}_{k}"
            sub.mkdir(parents=True)
            # the same system each round, different questions: versions v1..vN must come out distinct
            first = json.loads(rows[0])
            first["question"] = first["question"].rstrip("?") + f" in variant {r}-{k}?"
            (sub / "questions.jsonl").write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n")
            (sub / "metadata.json").write_text(json.dumps({**meta, "system_name": f"race_{r}"}))
            procs.append(
                subprocess.Popen(
                    subprocess_cli(ws, "freeze", str(sub), "--instance", INSTANCE),
                    env=SUB_ENV,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            )
        errs = [p.communicate(timeout=1800)[1].decode() for p in procs]  # communicate: a full stderr pipe cannot stall
        codes = [(p.returncode, err) for p, err in zip(procs, errs)]
        versions = sorted(p.name for p in ws.frozen.glob(f"{INSTANCE}/race_{r}/v*"))
        intact = not verify_ledger_and_sets(ws)
        for k, (code, err) in enumerate(codes):
            out.append(
                trial(
                    "concurrent freeze",
                    f"round {r}, freeze {k} of {width} at once (exit {code})",
                    code == 0 and intact and len(versions) == width,
                    err.strip()[-200:],
                )
            )
    return out


# --------------------------------------------------------------------------- the judge's endpoint and the disk


def judge_attacks(ws: Workspace, frozen: Path, scratch: Path) -> list[Trial]:
    out = []
    for mode in ("400", "200-echo"):
        server = _echo_server(mode)
        try:
            config = echo_judge_config(ws, server, mode)
            code, o, e = cli(
                ws, "score", str(frozen), "--judge", str(config), "--run-id", f"echo-{mode}", env={KEY_ENV: KEY}
            )
            # every judgment failed: exit 1, incomplete, and a rerun retries them (they fail again, and it says so)
            code2, o2, e2 = cli(
                ws, "score", str(frozen), "--judge", str(config), "--run-id", f"echo-{mode}", env={KEY_ENV: KEY}
            )
        finally:
            server.shutdown()
            server.server_close()
        leaked = [p.name for p in ws.root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
        out.append(
            trial(
                "endpoint quotes the key back",
                f"HTTP {mode}",
                KEY not in o + e + o2 + e2 and not leaked and code == 1 and "incomplete" in e,
                f"exit {code}; files with the key: {leaked}",
            )
        )
        out.append(
            trial(
                "every judgment failed",
                f"HTTP {mode}: exit 1, incomplete; the rerun retries",
                code == 1 and code2 == 1 and "incomplete" in e2 and "already complete" not in e2,
                e2.strip()[:200],
            )
        )
    return out


def edited_partial(ws: Workspace, frozen: Path) -> list[Trial]:
    from backtest.core.records import Judgment
    from backtest.scoring.judging import PARTIAL, partial_line
    from backtest.scoring.score import score_frozen

    system = read_json(frozen / "FROZEN.json")["system"]
    ref_dir = ws.results / INSTANCE / system / "ref"
    lines = (ref_dir / "judgments.jsonl").read_bytes().splitlines(keepends=True)
    seed = read_json(ref_dir / "RUN.json")["settings_sha256"]
    out = []
    for k, line in enumerate(lines):
        chained, chain = [], seed
        for x in lines:
            raw, chain = partial_line(Judgment.model_validate_json(x), chain)
            chained.append(raw)
        row = json.loads(line)
        forged = {**row, "outcome": "answered" if row["outcome"] != "answered" else "posed_but_open"}
        chained[k] = (
            chained[k].split(b" ", 1)[0]
            + b" "
            + json.dumps(forged, sort_keys=True, separators=(",", ":")).encode()
            + b"\n"
        )
        run_dir = ws.results / INSTANCE / system / f"edited{k}"
        run_dir.mkdir(parents=True)
        shutil.copy(ref_dir / "retrieval.jsonl", run_dir / "retrieval.jsonl")
        (run_dir / PARTIAL).write_bytes(b"".join(chained[: len(lines) - 1]))
        score_frozen(frozen, ws, run_id=f"edited{k}")
        out.append(
            trial(
                "edited partial judgment",
                f"outcome of line {k + 1} forged, then resumed",
                (run_dir / "judgments.jsonl").read_bytes() == b"".join(lines),
            )
        )
    return out


def _whole(folder: Path) -> list[str]:
    """Files under ``folder`` that are torn: temp files left behind, JSON that does not parse, JSON Lines with a
    broken line (a partial judgment file may end in a cut line: resume cuts it, so that one is allowed)."""
    torn = []
    for p in folder.rglob("*"):
        if not p.is_file():
            continue
        if p.name.endswith(".tmp"):
            torn.append(p.name)
            continue
        try:
            if p.suffix == ".json":
                json.loads(p.read_bytes())
            elif p.suffix == ".jsonl":
                lines = p.read_bytes().splitlines()
                for line in lines[:-1] if p.name.endswith(".partial.jsonl") else lines:
                    json.loads(line.split(b" ", 1)[-1] if p.name.endswith(".partial.jsonl") else line)
        except ValueError:
            torn.append(p.name)
    return torn


FREEZE_ROOM = [0, 4096, 8192, 16384, 32768, 1 << 20]


def disk_full(ws: Workspace, frozen: Path, good: Path, scratch: Path, sizes: list[str]) -> list[Trial]:
    """A real full disk: a small tmpfs under the output of ``corpus export``, under ``results/`` while scoring and
    under ``frozen/`` (holding a copy of the ledger and sets) while freezing. Caught: exit 0 with whole files, or
    exit 1 saying "no space left" with nothing torn (and, for freeze, a ledger that still verifies)."""
    out = []
    mount = scratch / "full"
    mount.mkdir()

    def mounted(size: str, where: Path) -> bool:
        return (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
            ).returncode
            == 0
        )

    def verdict(code: int, err: str, torn: list[str]) -> bool:
        return not torn and (code == 0 or (code == 1 and "no space left" in err and "internal error" not in err))

    meta = read_json(good / "metadata.json")
    for n, size in enumerate(sizes):
        if not mounted(size, mount):
            return [trial("disk full", "not run: cannot mount a tmpfs here", False)]
        try:
            code, _, err = cli(ws, "corpus", "export", INSTANCE, "--role", "past", "--out", str(mount / "past.jsonl"))
            out.append(
                trial(
                    "disk full",
                    f"corpus export onto {size} (exit {code})",
                    verdict(code, err, _whole(mount)),
                    err.strip()[:150],
                )
            )
        finally:
            subprocess.run(["umount", str(mount)], check=False)
        # score with results/ on the small disk
        results = ws.results
        kept = results.rename(results.with_name("results.kept")) if results.exists() else None
        results.mkdir()
        try:
            if not mounted(size, results):
                raise RuntimeError("mount failed")
            code, _, err = cli(ws, "score", str(frozen), "--run-id", f"full{n}", "--no-progress")
            out.append(
                trial(
                    "disk full",
                    f"score with results/ on {size} (exit {code})",
                    verdict(code, err, _whole(results)),
                    err.strip()[:150],
                )
            )
        finally:
            subprocess.run(["umount", str(results)], check=False)
            results.rmdir()
            if kept is not None:
                kept.rename(results)
        # freeze with frozen/ on the small disk (a copy of today's frozen/ in it)
        # sized just above what today's frozen/ takes (4 KiB pages), so the freeze itself runs out of space
        used = sum(-(-p.stat().st_size // 4096) * 4096 for p in ws.frozen.rglob("*") if p.is_file())
        room = f"{(used + FREEZE_ROOM[n % len(FREEZE_ROOM)]) // 1024}k"
        saved = ws.frozen.rename(ws.frozen.with_name("frozen.kept"))
        ws.frozen.mkdir()
        try:
            if mounted(room, ws.frozen):
                copied = subprocess.run(["cp", "-a", f"{saved}/.", str(ws.frozen)], capture_output=True).returncode == 0
                if not copied:  # our copy did not fit: freeze into an empty frozen/ instead
                    subprocess.run(["find", str(ws.frozen), "-mindepth", "1", "-delete"], check=False)
                sub = scratch / f"full{n}"
                shutil.copytree(good, sub)
                (sub / "metadata.json").write_text(json.dumps({**meta, "system_name": f"full_{n}"}))
                code, _, err = cli(ws, "freeze", str(sub), "--instance", INSTANCE)
                intact = not verify_ledger_and_sets(ws) if copied else True
                out.append(
                    trial(
                        "disk full",
                        f"freeze with frozen/ on {room} ({'its sets and ledger + ' + str(FREEZE_ROOM[n % len(FREEZE_ROOM)] // 1024) + 'k' if copied else 'empty'})"  # noqa: E501
                        f" (exit {code})",
                        verdict(code, err, _whole(ws.frozen)) and intact,
                        err.strip()[:150],
                    )
                )
        finally:
            subprocess.run(["umount", str(ws.frozen)], check=False)
            ws.frozen.rmdir()
            saved.rename(ws.frozen)
    return out


# --------------------------------------------------------------------------- the table


def table(trials: list[Trial]) -> str:
    classes: dict[str, list[Trial]] = {}
    for t in trials:
        classes.setdefault(t["class"], []).append(t)
    rows = ["| class | trials | caught | missed |", "|---|---:|---:|---|"]
    for cls, ts in classes.items():
        missed = [t["what"] for t in ts if not t["caught"]]
        rows.append(f"| {cls} | {len(ts)} | {len(ts) - len(missed)} | {'; '.join(missed[:5]) or '—'} |")
    total = len(trials)
    rows.append(f"| **all** | **{total}** | **{sum(t['caught'] for t in trials)}** | |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "attack-table"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few trials per class (a smoke run)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="STEP",
        help="run only this step (repeatable), replacing its classes in an existing --out table",
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    q = args.quick
    with tempfile.TemporaryDirectory(prefix="attack-") as tmp:
        scratch = Path(tmp)
        base = Workspace(scratch / "base")
        print("building astro-2025-ep ...", flush=True)
        build_astro(base, categories=["astro-ph.EP"], suffix="-ep")
        made = run_generator("random_claims", INSTANCE, base, n=3, seed=6)
        frozen, _ = freeze_once(made["out"], INSTANCE, base)
        second = run_generator("citation_leaders", INSTANCE, base, n=3, seed=1)
        freeze_once(second["out"], INSTANCE, base)
        good = Path(made["out"])
        trials: list[Trial] = []
        steps = [
            ("bit flips", lambda ws: bit_flips(ws, frozen_in(ws, frozen), 20 if q else 400, rng)),
            ("structural edits", lambda ws: structural_edits(ws, scratch)),
            (
                "hostile submissions",
                lambda ws: hostile_submissions(ws, good, 10 if q else 86, rng, scratch / "hostile"),
            ),
            ("names and paths", lambda ws: unsafe_names_and_paths(ws, good, frozen_in(ws, frozen), scratch / "names")),
            ("score kills", lambda ws: score_kills(ws, frozen_in(ws, frozen), 2 if q else 21, rng)),
            ("edited partial", lambda ws: edited_partial(ws, frozen_in(ws, frozen))),
            ("freeze kills", lambda ws: freeze_kills(ws, good, 2 if q else 21, rng, scratch / "fk")),
            (
                "concurrent freezes",
                lambda ws: concurrent_freezes(ws, good, 1 if q else 5, 3 if q else 7, scratch / "cc"),
            ),
            ("judge endpoint", lambda ws: judge_attacks(ws, frozen_in(ws, frozen), scratch)),
            (
                "disk full",
                lambda ws: disk_full(
                    ws,
                    frozen_in(ws, frozen),
                    good,
                    scratch,
                    ["64k", "1m"] if q else ["16k", "64k", "256k", "1m", "2m", "4m"],
                ),
            ),
        ]
        work = copy_ws(base, scratch / "work")
        from scripts.attack_round3 import all_round3  # round three's classes (issue 32)
        from scripts.attack_round4 import all_round4  # round four's classes (issue 39)

        later = {
            **all_round3(work, frozen_in(work, frozen), scratch, rng, q),
            **all_round4(work, frozen_in(work, frozen), scratch, q),
        }
        steps += [(name, lambda ws, run=run: run()) for name, run in later.items()]
        unknown = sorted(set(args.only) - {name for name, _ in steps})
        if unknown:
            parser.error(f"unknown step(s) {unknown}; steps: {', '.join(name for name, _ in steps)}")
        for name, step in steps:
            if args.only and name not in args.only:
                continue
            started = time.monotonic()
            done = step(base if name == "structural edits" else work)
            trials += done
            print(
                f"{name}: {sum(t['caught'] for t in done)}/{len(done)} caught ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.only and out.with_suffix(".json").is_file():  # keep the other classes of the table already there
        redone = {t["class"] for t in trials}
        trials = [
            t for t in json.loads(out.with_suffix(".json").read_text())["trials"] if t["class"] not in redone
        ] + trials
    summary = {
        "seed": args.seed,
        "quick": q,
        "n": len(trials),
        "caught": sum(t["caught"] for t in trials),
        "trials": trials,
    }
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    out.with_suffix(".md").write_text(
        f"# Attack table (seed {args.seed}{', quick' if q else ''})\n\n"
        f"Made by `scripts/attack_table.py`; every trial is in `{out.name}.json`.\n\n" + table(trials)
    )
    print(table(trials))
    return 0 if summary["caught"] == summary["n"] else 1


def frozen_in(ws: Workspace, frozen: Path) -> Path:
    """The same frozen set inside another copy of the base workspace."""
    return ws.root / frozen.relative_to(frozen.parents[3])


if __name__ == "__main__":
    sys.exit(main())
