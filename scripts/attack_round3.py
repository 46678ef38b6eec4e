"""The attack classes of reliability round three (issue 32), steps of ``scripts/attack_table.py``.

Each function attacks real parts as a hostile user would and returns trials (``attack_table.trial``):
validity cards forged or borrowed, hostile release trees for ``import sqb``, cost caps against an
endpoint reporting large or retried token counts, batch result files (foreign models, conflicting
answers, impossible counts, a key behind JSON escapes), an online key behind JSON escapes, damaged
annotation sheets, Markdown injection rendered by a real Markdown library, prospective commitments
re-sealed or made for a past window, dates with UTC offsets, and Ray faults (a killed worker, a dead
raylet) on a real local cluster. Helpers shared with the tests are imported from them, not copied.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from scripts.attack_table import INSTANCE, REPO, Trial, clean_refusal, cli, copy_ws, trial

# --------------------------------------------------------------------------- validity cards


def forged_cards(scratch: Path) -> list[Trial]:
    """Forgeries of the committed cards in a workspace holding them and the labelled sets they cite. A forgery
    that is impossible on its set is caught by the checks every reader runs (the line says "card invalid"); a
    plausible one (a figure inside its interval) by ``judge verify-card``, which re-runs the judge."""
    from backtest.core.workspace import Workspace
    from backtest.judge.cards import card_path, run_validity

    ws = Workspace(scratch / "cards")
    shutil.rmtree(ws.root, ignore_errors=True)
    shutil.copytree(REPO / "judges" / "cards", ws.judges / "cards")
    shutil.copytree(REPO / "judges" / "validation", ws.judges / "validation")
    run_judge = json.loads(next((REPO / "results/astro-2025/direct_llm").glob("*/RUN.json")).read_text())["judge"]
    honest = run_validity(ws, run_judge)
    card = ws.root / honest["card"]
    original = card.read_text()
    other = {"name": "offline-cues-v1", "model": "m", "protocol": "p", "prompt_sha256": "x", "config_sha256": "y"}

    def edit(fn) -> None:
        data = json.loads(original)
        fn(data)
        card.write_text(json.dumps(data))

    def set_entry(**changes: Any):
        return lambda d: d["validations"][0].update(changes)

    def set_engaged(**changes: Any):
        return lambda d: d["validations"][0]["engaged"].update(changes)

    forgeries = {
        "κ 0.97 with its interval, n 5,000": lambda d: (
            set_engaged(kappa=0.97, kappa_ci=[0.95, 0.99])(d),
            set_entry(n=5000)(d),
        ),
        "κ 0.97 outside its interval": set_engaged(kappa=0.97),
        "κ 1.4 (not a kappa)": set_engaged(kappa=1.4, kappa_ci=[1.3, 1.5]),
        "n 0": set_entry(n=0),
        "labels' sha256 of another file": set_entry(labels_sha256={"adjudicated": "0" * 64}),
        "items' sha256 of no committed set": set_entry(items_sha256="f" * 64),
        "fingerprint field edited": lambda d: d.update(fingerprint="0123456789abcdef"),
        "judge entry edited": lambda d: d["judge"].update(name="offline-v9"),
        "no validations": lambda d: d.update(validations=[]),
    }
    out = []
    for what, fn in forgeries.items():
        edit(fn)
        shown = run_validity(ws, run_judge)
        caught = shown["line"].startswith("judge validity: card invalid") and shown["validations"] == []
        out.append(trial("forged validity card", what, caught, shown["line"][:200]))
    card.write_text(original)
    # the honest card filed under another judge's fingerprint
    borrowed = card_path(ws.judges / "cards", other)
    borrowed.write_text(original)
    shown = run_validity(ws, other)
    out.append(trial("forged validity card", "copied to another judge's file name", "card invalid" in shown["line"]))
    borrowed.unlink()
    # plausible forgeries of the pairwise rubric card: only a re-run of the judge shows them
    pair = ws.judges / "cards" / "pairwise-74e85a9f32a40cdd.json"
    pair_original = pair.read_text()
    entry = json.loads(pair_original)["validations"][0]
    lo, hi = entry["ci95"]
    for value in (round(lo + 0.01, 4), round((lo + hi) / 2 + 0.013, 4), round(hi - 0.01, 4)):
        data = json.loads(pair_original)
        data["validations"][0]["agreement"] = value
        pair.write_text(json.dumps(data))
        code, o, e = cli(ws, "judge", "verify-card", str(pair))
        out.append(
            trial(
                "forged validity card",
                f"pairwise agreement {entry['agreement']:.3f} -> {value} (inside its interval)",
                code == 1 and "CARD INVALID" in o,
                (o + e)[-200:],
            )
        )
    pair.write_text(pair_original)
    return out


# --------------------------------------------------------------------------- hostile release trees


def hostile_release(scratch: Path) -> list[Trial]:
    """``import sqb`` on copies of the shared release, each damaged one way; caught when the exit code and the
    one-line error are the expected ones, nothing raw reaches the terminal and a refusal wrote nothing."""
    from tests.conftest import SQB
    from tests.test_reliability_round3 import LABELS, RELEASE_DAMAGES

    def labels_link(release: Path) -> None:
        target = release / LABELS
        target.unlink()
        target.symlink_to("/etc/hostname")

    def folder_link(release: Path) -> None:
        outside = release.parent / "outside-folder"
        shutil.copytree(release / "submissions" / "direct_llm_L1", outside)
        shutil.rmtree(release / "submissions" / "direct_llm_L1")
        (release / "submissions" / "direct_llm_L1").symlink_to(outside)

    def conflicting_retrieval(release: Path) -> None:
        path = release / "data" / "retrieval" / "direct_llm_L_top8.jsonl"
        first = json.loads(path.read_text().splitlines()[0])
        first["documents"] = first["documents"][::-1]
        with path.open("a") as handle:
            handle.write(json.dumps(first) + "\n")

    def rtl_name(release: Path) -> None:
        (release / "data" / "annotations" / "outcomes_x\u202eL.jsonl").write_text("")

    damages = {
        **{name: spec for name, spec in RELEASE_DAMAGES.items()},
        "labels linked to a system file": (labels_link, 2, "outside the release: refused"),
        "a system folder linked outside": (folder_link, 2, "outside the release: refused"),
        "conflicting retrieval row": (conflicting_retrieval, 2, "a second, different row for question"),
        "right-to-left override in a name": (rtl_name, 2, "holds a control character"),
    }
    out = []
    for what, (damage, code, expect) in damages.items():
        root = scratch / "release" / re.sub(r"\W+", "-", what)
        shutil.rmtree(root, ignore_errors=True)
        release = root / "sqb"
        shutil.copytree(SQB, release)
        damage(release)
        target = root / "out"
        from backtest.core.workspace import Workspace

        got, o, e = cli(Workspace(root), "import", "sqb", str(release), "--out", str(target))
        raw = any(ch in o + e for ch in ("\x1b", "\u202e"))
        wrote = target.exists() and any(target.rglob("*.json*"))
        caught = got == code and expect in e and not raw and (code != 2 or not wrote)
        out.append(trial("hostile release tree", what, caught, f"exit {got}: {e.strip()[-200:]}"))
    return out


# --------------------------------------------------------------------------- cost caps


def cost_caps(ws, frozen: Path, rng: random.Random) -> list[Trial]:
    """``score --max-cost`` against a stub endpoint reporting ``prompt_tokens`` per call (some beyond what the
    prompt's bytes allow), with and without an unusable first answer, at several budgets, each run twice.
    Caught when no invocation spends past its budget, or (counts beyond any bound) the run stops and says so."""
    from tests.stub_llm import stub_judge_config, usage_stub

    out = []
    prompt = REPO / "judges" / "prompts" / "outcome-premise-compact-v2.md"
    price = 'price = { input_per_mtok = 1.44, output_per_mtok = 4.0, currency = "USD" }\n'
    for tokens in (1000, 5000, 40000):
        for bad_first in (False, True):
            for budget in (0.02, round(rng.uniform(0.05, 0.3), 4)):
                name = f"cap-{tokens}-{int(bad_first)}-{budget}".replace(".", "_")
                server = usage_stub(tokens, bad_first=bad_first)
                try:
                    config = ws.judges / f"{name}.toml"
                    stub_judge_config(config, server, name, prompt, price)
                    spent, lines = [], []
                    for _ in range(2):
                        code, o, e = cli(
                            ws, "score", str(frozen), "--judge", str(config), "--run-id", name,
                            "--max-cost", str(budget),
                        )  # fmt: skip
                        run = json.loads((ws.results / INSTANCE / frozen.parent.name / name / "RUN.json").read_text())
                        spent.append(run["cost"]["spent_last_invocation"] or 0.0)
                        lines.append(e.strip().splitlines()[-1] if e.strip() else f"exit {code}")
                finally:
                    server.shutdown()
                    server.server_close()
                bounded = all(s <= budget + 1e-9 for s in spent)
                said = any("cannot be bounded" in line for line in lines)
                out.append(
                    trial(
                        "cost cap",
                        f"{tokens} prompt tokens a call{', first answer unusable' if bad_first else ''}, "
                        f"--max-cost {budget}",
                        bounded or said,
                        f"spent {spent}; {lines[-1][:160]}",
                    )
                )
    return out


# --------------------------------------------------------------------------- batch files and keys


def batch_files(scratch: Path) -> list[Trial]:
    """Provider batch result files that must not reach the cache: another model's answers, two answers to one
    request, negative and impossible token counts, a usable answer quoting the key with JSON escapes."""
    from backtest.core.fileio import read_json
    from backtest.core.workspace import Workspace
    from backtest.judge.batch import load_llm_judge, manifest_path_of, write_batch
    from tests.llm_server import KEY_ENV, judge_config
    from tests.test_judge_batch import (
        API_KEY,
        CLOSED_PORT_URL,
        SYNTHETIC_FROZEN,
        answer,
        output_line,
        request_lines,
        synthetic_questions,
        write_lines,
    )

    def negative(row: dict) -> None:
        row["response"]["body"]["usage"]["prompt_tokens"] = -100000

    def huge(row: dict) -> None:
        row["response"]["body"]["usage"]["completion_tokens"] = 10**12

    def foreign(row: dict) -> None:
        row["response"]["body"]["model"] = "gpt-4o-mini-2024-07-18"

    attacks = {
        "negative prompt tokens": (negative, "impossible token count"),
        "10^12 completion tokens": (huge, "impossible token count"),
        "another model's answer": (foreign, "another judge's answer"),
        "two conflicting answers to one request": (None, "repeated: custom_id"),
        "the key behind JSON escapes in a usable answer": ("escaped", None),
    }
    out = []
    os.environ[KEY_ENV] = API_KEY
    try:
        for n, (what, (change, expect)) in enumerate(attacks.items()):
            root = scratch / "batch" / str(n)
            shutil.rmtree(root, ignore_errors=True)
            ws = Workspace(root / "ws")
            ws.root.mkdir(parents=True)
            cfg = judge_config(root / "judge.toml", CLOSED_PORT_URL, root / "cache" / "judge.sqlite", max_retries=0)
            questions, documents = synthetic_questions()
            requests_file = root / "batch" / "requests.jsonl"
            write_batch(load_llm_judge(str(cfg), ws), questions, documents, requests_file, ws, SYNTHETIC_FROZEN)
            first = request_lines(requests_file)[0]["custom_id"]
            if change == "escaped":
                escaped = "".join(f"\\u{ord(c):04x}" for c in API_KEY)
                content = answer("not_addressed").replace('"rationale": "short"', f'"rationale": "key {escaped}"')
                rows = [output_line(first, content, 0)]
            elif change is None:
                rows = [output_line(first, answer("not_addressed"), 0), output_line(first, answer("answered"), 1)]
            else:
                rows = [output_line(first, answer("not_addressed"), 0)]
                change(rows[0])
            results = write_lines(root / "batch" / "results.jsonl", rows)
            code, o, e = cli(ws, "judge", "batch", "import", str(results), "--requests", str(requests_file), "--json")
            key = read_json(manifest_path_of(requests_file))["requests"][0]["cache_key"]
            cached = load_llm_judge(str(cfg), ws).client.cache.get(key)
            leaked = [p.name for p in root.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()]
            if (
                expect is None
            ):  # the answer is usable: cached, with the key redacted (the other requests are unanswered)
                caught = cached is not None and "[redacted]" in json.dumps(cached) and not leaked
            else:
                caught = code == 1 and expect in o and cached is None and not leaked
            out.append(trial("batch file", what, caught, f"exit {code}; leaked {leaked}"))
    finally:
        os.environ.pop(KEY_ENV, None)
    return out


def escaped_key_online(ws, frozen: Path) -> list[Trial]:
    """An endpoint writing the bearer key with JSON escapes inside a valid answer's rationale."""
    from tests.test_secrets import KEY, KEY_ENV, _echo_server, echo_judge_config

    server = _echo_server("200-escaped")
    try:
        config = echo_judge_config(ws, server, "200-escaped")
        code, o, e = cli(
            ws, "score", str(frozen), "--judge", str(config), "--run-id", "echo-escaped", env={KEY_ENV: KEY}
        )
    finally:
        server.shutdown()
        server.server_close()
    leaked = [p.name for p in ws.root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    return [
        trial(
            "endpoint quotes the key back",
            "HTTP 200, the key behind JSON escapes in a usable answer",
            code == 0 and KEY not in o + e and not leaked,
            f"exit {code}; files with the key: {leaked}",
        )
    ]


# --------------------------------------------------------------------------- annotation and Markdown


def annotation_sheets(scratch: Path) -> list[Trial]:
    """Readers' sheets damaged one way each: refused with one line, nothing imported."""
    from backtest.core.workspace import Workspace
    from tests.test_reliability_round3 import SHEET_DAMAGES, damaged_sheet

    out = []
    for damage, expect in SHEET_DAMAGES.items():
        folder = scratch / "sheets" / damage
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(REPO / "judges" / "validation" / "release-space-2016-v1", folder)
        _, after = damaged_sheet(folder, damage)
        sheet = folder.parent / f"{damage}.csv"
        sheet.write_text(after)
        code, _, e = cli(Workspace(folder.parent), "annotate", "import", str(sheet), "--items", str(folder),
                         "--rater", "dmg")  # fmt: skip
        caught = clean_refusal(code, e) and expect in e and not (folder / "labels" / "dmg.jsonl").exists()
        out.append(trial("damaged annotation sheet", damage, caught, e.strip()[:200]))
    return out


def markdown_injection() -> list[Trial]:
    """Each hostile string in each user-supplied field of an annotation item, rendered by python-markdown:
    caught when no element, handler or javascript: link comes out, only text."""
    import markdown

    from backtest.analysis.reading.annotate import render_item
    from tests.test_reliability_round3 import HOSTILE, hostile_item

    out = []
    for n, hostile in enumerate(HOSTILE):
        for field in ("question", "premise", "title", "abstract"):
            item = hostile_item(
                (hostile if field == "question" else "A plain question") + "?",
                hostile if field == "premise" else "A plain premise.",
                hostile if field == "title" else "A title",
                hostile if field == "abstract" else "An abstract.",
            )
            html = markdown.markdown(render_item(item))
            live = live_markup(html)
            out.append(trial("Markdown injection", f"hostile string {n} in the {field}", not live, str(live)))
    return out


def live_markup(html: str) -> list[str]:
    """What in ``html`` a browser would act on that no Markdown of ours makes: script, svg and iframe
    elements, the injected heading, ``on*`` handlers and ``javascript:`` links (text that merely reads so is
    fine)."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Scan(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("script", "svg", "iframe", "img") or dict(attrs).get("id") == "injected":
                found.append(f"<{tag}>")
            for name, value in attrs:
                if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                    found.append(f"{tag} {name}={value}")

    Scan().feed(html)
    return found


# --------------------------------------------------------------------------- prospective and dates


def prospective_commitments() -> list[Trial]:
    """The committed live instance against a wrong published root and a ledger without its sets; commitments
    claiming to be made on or after their window's start, which must never be graded."""
    from backtest.core.errors import CheckFailed
    from backtest.core.fileio import read_json
    from backtest.core.workspace import Workspace
    from backtest.studies.prospective.grade import plan_grade
    from backtest.studies.prospective.records import Commitment

    live = REPO / "prospective" / "astro-ph-live-2026"
    ws = Workspace(REPO)
    out = []
    code, _, e = cli(ws, "prospective", "verify", str(live), "--expect-root", "0" * 64)
    out.append(trial("prospective commitment", "a root other than the published one", code == 1, e.strip()[:200]))
    with_first_line = Path(os.environ.get("TMPDIR", "/tmp")) / "attack-ledger-first-line.jsonl"
    with_first_line.write_text((REPO / "frozen" / "LEDGER.jsonl").read_text().splitlines()[0] + "\n")
    code, _, e = cli(ws, "prospective", "verify", str(live), "--ledger", str(with_first_line))
    out.append(trial("prospective commitment", "sets not in the frozen ledger", code == 1, e.strip()[:200]))
    with_first_line.unlink()
    commitment = Commitment.model_validate(read_json(live / "COMMITMENT.json"))
    start = commitment.window.start
    for late in (start, start + dt.timedelta(days=1), start + dt.timedelta(days=200)):
        forged = commitment.model_copy(update={"committed_at": f"{late.isoformat()}T00:00:00Z"})
        try:
            plan_grade(forged, commitment.window.end, provisional=False, today=commitment.window.end)
            caught = False
        except CheckFailed:
            caught = True
        out.append(trial("prospective commitment", f"committed on {late} for a window from {start}", caught))
    return out


def utc_offsets(scratch: Path, rng: random.Random, n: int) -> list[Trial]:
    """Records stamped with random UTC offsets around a corpus boundary: each must land on its UTC day's side."""
    from backtest.core.workspace import Workspace
    from backtest.corpus.build import BuildOptions, build_corpus

    boundary = dt.date(2025, 11, 1)
    midnight = dt.datetime(2025, 11, 1, tzinfo=dt.timezone.utc)
    rows, truth = [], {}
    # the case first (2025-10-31 in UTC, 2025-11-01 where it was stamped), then instants a day either side
    instants = [(midnight - dt.timedelta(hours=14), 14 * 60)] + [
        (midnight + dt.timedelta(minutes=rng.randint(-1440, 1440)), rng.randint(-12 * 4, 14 * 4) * 15)
        for _ in range(n - 1)
    ]
    for i, (instant, offset) in enumerate(instants):  # offsets in quarter hours, as real zones
        stamp = instant.astimezone(dt.timezone(dt.timedelta(minutes=offset))).isoformat()
        rows.append({"id": f"tz-{i}", "title": "t", "abstract": f"a {i}", "published": stamp, "source": "test"})
        truth[f"tz-{i}"] = instant.date() >= boundary
    src = scratch / "tz.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = Workspace(scratch / "tz-ws")
    shutil.rmtree(ws.root, ignore_errors=True)
    build_corpus(BuildOptions("jsonl", [src], "tz-future", "future", start=boundary, end=dt.date(2025, 12, 1)), ws)
    future = {json.loads(line)["id"] for line in (ws.corpora / "tz-future" / "records.jsonl").open()}
    return [trial("UTC offsets", f"{r['published']}", (r["id"] in future) == truth[r["id"]]) for r in rows]


# --------------------------------------------------------------------------- Ray faults


def ray_faults(ws, frozen: Path, scratch: Path) -> list[Trial]:
    """On a real local Ray cluster (``ray start --head``): an LLM judge on a stub endpoint with a worker killed
    mid-task (caught when every answered call is counted, but those of an attempt it counts as lost), and the cluster's
    raylet killed while judging (caught when the run ends with exit 1 and one line saying rerun)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return []
    from tests.llm_server import free_port
    from tests.stub_llm import stub_judge_config, usage_stub
    from tests.test_scale import WorkerKiller

    ray_bin = Path(sys.executable).with_name("ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update(RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(REPO))
    address = f"127.0.0.1:{free_port()}"
    subprocess.run(
        [str(ray_bin), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={address.split(':')[1]}",
         "--num-cpus=2", "--include-dashboard=false", "--object-store-memory=300000000", "--disable-usage-stats"],
        env=env, capture_output=True, timeout=180, check=True,
    )  # fmt: skip
    backtest = [sys.executable, "-c", "from backtest.cli.main import main; main()", "--root", str(ws.root)]
    out = []
    try:
        server = usage_stub(5000, delay_s=1.0)
        config = ws.judges / "ray-stub.toml"
        stub_judge_config(config, server, "ray-stub", REPO / "judges" / "prompts" / "outcome-premise-compact-v2.md")
        killer = WorkerKiller()
        killer.start()
        try:
            done = subprocess.run(
                [*backtest, "score", str(frozen), "--judge", str(config), "--run-id", "ray-stub", "--executor", "ray",
                 "--ray-address", address, "--json"],
                env=env, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
        finally:
            killer.stop.set()
            killer.join()
            server.shutdown()
        summary = json.loads(done.stdout) if done.returncode == 0 else {}
        counted = summary.get("http_calls", 0)
        caught = (
            bool(killer.killed)
            and 0 <= summary.get("ray_attempts_lost", -1) <= len(killer.killed)
            and counted <= server.requests <= counted + summary.get("ray_attempts_lost", 0)
            and counted >= summary.get("n_questions", 1)
        )
        lost = summary.get("ray_attempts_lost")
        detail = (
            f"killed {killer.killed}; {lost} attempt(s) lost; counted {counted} calls of {server.requests} answered"
        )
        out.append(trial("Ray faults", "a worker killed while judging: every answered call counted", caught, detail))
        raylet = WorkerKiller(raylet=address)
        raylet.start()
        try:
            done = subprocess.run(
                [*backtest, "score", str(frozen), "--run-id", "ray-raylet", "--executor", "ray", "--ray-address",
                 address],
                env=env, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
        finally:
            raylet.stop.set()
            raylet.join()
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        caught = bool(raylet.killed) and done.returncode == 1 and "rerun `backtest score` to resume" in last
        out.append(trial("Ray faults", "the raylet killed while judging", caught, last[:200]))
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True, timeout=120)
    return out


def all_round3(ws, frozen: Path, scratch: Path, rng: random.Random, quick: bool) -> dict[str, Any]:
    """The round-three steps by name, for ``attack_table.main``."""
    return {
        "forged cards": lambda: forged_cards(scratch),
        "hostile release": lambda: hostile_release(scratch),
        "cost caps": lambda: cost_caps(copy_ws(ws, scratch / "caps"), frozen_path(ws, scratch / "caps", frozen), rng),
        "batch files": lambda: batch_files(scratch),
        "escaped key": lambda: escaped_key_online(ws, frozen),
        "annotation sheets": lambda: annotation_sheets(scratch),
        "markdown injection": markdown_injection,
        "prospective": prospective_commitments,
        "utc offsets": lambda: utc_offsets(scratch, rng, 10 if quick else 60),
        "ray faults": lambda: ray_faults(ws, frozen, scratch),
    }


def frozen_path(ws, root: Path, frozen: Path) -> Path:
    """``frozen`` (inside ``ws``) inside the copy of ``ws`` at ``root``."""
    return root / frozen.relative_to(ws.root)
