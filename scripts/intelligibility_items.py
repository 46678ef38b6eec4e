"""Draw the blinded items of an intelligibility reading (issue 17, item 5) from the reference generators.

For each instance and generator, ``backtest generate NAME --instance ID --n N --seed S`` is run into a scratch
folder and every question is kept with its premise. With ``--unfiltered K``, K more questions per instance come
from ``random_claims`` (seed S + 1) with its quality filters switched off: no clarity score check, no skipping
of background sentences or back-references. The generators keep only questions the clarity score passes, so
their own questions cannot show whether the score separates unintelligible questions from the rest; these can.

Each question gets an opaque id (``i`` + the first 8 hex of sha256 of ``STUDY/instance/generator/question_id``);
the items are shuffled (``--shuffle-seed``) into ``items.jsonl`` (item_id, question, premise). ``key.json``
maps ids back (never shown to readers), as does ``decode.json`` (typed, kind ``question_intelligibility``: what
``backtest annotate serve`` serves the set by) and ``sources.json`` records the commit, the commands and the sha256 of
every generated ``questions.jsonl``. The same commit and arguments give the same bytes.

With ``--frozen NAME`` (repeatable), N questions per instance are drawn (``random.Random(seed)``) from the
committed reference set's latest version ``frozen/<instance>/NAME/vK/questions.jsonl`` instead of generated:
for a generator that needs a model endpoint (``direct_llm``), the very questions the committed baselines
scored. ``--no-generate`` draws every set that way (nothing generated): a reading of the committed release.

Usage: ``python scripts/intelligibility_items.py OUT_FOLDER [--n 40] [--seed 0] [--unfiltered 30]
[--frozen direct_llm] [--no-generate]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ("astro-2025", "space-2016")
GENERATORS = ("random_claims", "citation_leaders", "review_future_work", "evidence_graph")
UNFILTERED = "random_claims-unfiltered"
_EMPTY = {False: "the generator stopped: nothing to ask", True: "no committed frozen set (nothing to ask)"}


def _generate(name: str, instance: str, n: int, seed: int, out: Path) -> Path | None:
    """``backtest generate`` in-process; the folder, or None when the generator had nothing to ask."""
    from click.testing import CliRunner

    from backtest.cli.main import cli
    from backtest.generators.protocol import NothingToAsk

    args = ["--root", str(ROOT), "generate", name, "--instance", instance, "--n", str(n), "--seed", str(seed)]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    if isinstance(result.exception, NothingToAsk):
        return None  # evidence_graph on a past corpus without a real tension
    if result.exit_code != 0:
        raise SystemExit(f"backtest generate {name} --instance {instance} failed: {result.exception or result.output}")
    return out


def _unfiltered(instance: str, n: int, seed: int, out: Path) -> Path | None:
    """``random_claims`` with its quality filters off (see the module docstring)."""
    import backtest.generators.random_claims as random_claims
    import backtest.generators.wording as wording

    with (
        mock.patch.object(random_claims, "reads_clearly", lambda question: True),
        mock.patch.object(wording, "is_background", lambda sentence: False),
        mock.patch.object(wording, "refers_back", lambda clause, earlier: False),
    ):
        return _generate("random_claims", instance, n, seed, out)


def _questions(folder: Path | None) -> list[dict[str, Any]]:
    if folder is None:
        return []
    return [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def latest_frozen(name: str, instance: str) -> Path | None:
    """The committed ``frozen/<instance>/<name>/vK`` folder with the highest K, or None."""
    versions = [p for p in (ROOT / "frozen" / instance / name).glob("v*") if p.name[1:].isdigit()]
    return max(versions, key=lambda p: int(p.name[1:]), default=None)


def _frozen(name: str, instance: str, n: int, seed: int, out: Path) -> Path | None:
    """N questions drawn from the latest committed ``frozen/<instance>/<name>/vK`` set into
    ``out/questions.jsonl`` (all of them when it holds fewer); None when there is no such set."""
    folder = latest_frozen(name, instance)
    if folder is None:
        return None
    source = folder / "questions.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines()
    chosen = sorted(random.Random(seed).sample(range(len(lines)), min(n, len(lines))))
    out.mkdir(parents=True, exist_ok=True)
    (out / "questions.jsonl").write_text("".join(lines[i] + "\n" for i in chosen), encoding="utf-8")
    return out


def build(
    out: Path,
    n: int,
    seed: int,
    unfiltered: int,
    shuffle_seed: int,
    frozen: tuple[str, ...] = (),
    generate: bool = True,
) -> dict[str, Any]:
    """Write items.jsonl, key.json, decode.json and sources.json into ``out``; return the sources record."""
    study = out.name
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    items: list[dict[str, Any]] = []
    key: dict[str, dict[str, str]] = {}
    sets: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for instance in INSTANCES:
            seen: set[str] = set()
            names = GENERATORS if generate else ()
            runs = [(g, _generate(g, instance, n, seed, Path(scratch, instance, g))) for g in names]
            if unfiltered:
                runs.append((UNFILTERED, _unfiltered(instance, unfiltered, seed + 1, Path(scratch, instance, "u"))))
            for name in frozen:
                runs.append((name, _frozen(name, instance, n, seed, Path(scratch, instance, f"frozen-{name}"))))
            for generator, folder in runs:
                questions = _questions(folder)
                kept = 0
                for q in questions:
                    if q["question"] in seen:
                        continue  # an unfiltered question the filtered set already holds: read once
                    seen.add(q["question"])
                    kept += 1
                    digest = hashlib.sha256(f"{study}/{instance}/{generator}/{q['question_id']}".encode()).hexdigest()
                    item_id = "i" + digest[:8]
                    key[item_id] = {"generator": generator, "instance": instance, "question_id": q["question_id"]}
                    items.append({"item_id": item_id, "question": q["question"], "premise": q.get("premise")})
                file = folder / "questions.jsonl" if folder else None
                source = latest_frozen(generator, instance) if generator in frozen else None
                sets[f"{instance}/{generator}"] = {
                    "n": kept,
                    **({"frozen": str(source.relative_to(ROOT))} if source else {}),
                    "questions_jsonl_sha256": hashlib.sha256(file.read_bytes()).hexdigest() if file else None,
                    **({"note": _EMPTY[generator in frozen]} if folder is None else {}),
                }
    random.Random(shuffle_seed).shuffle(items)
    out.mkdir(parents=True, exist_ok=True)
    (out / "items.jsonl").write_text(
        "".join(json.dumps(i, ensure_ascii=False, sort_keys=True) + "\n" for i in items), encoding="utf-8"
    )
    (out / "key.json").write_text(json.dumps(key, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    from backtest.analysis.reading.intelligibility import QuestionDecode, question_decode_from_key
    from backtest.core.records import write_output

    write_output(out / "decode.json", QuestionDecode, question_decode_from_key(out))
    from backtest.text.clarity import CLARITY_VERSION

    sources = {
        "clarity_version_at_reading": CLARITY_VERSION,
        "command": f"backtest generate NAME --instance ID --n {n} --seed {seed}" if generate else None,
        "unfiltered": (
            f"random_claims --n {unfiltered} --seed {seed + 1} with reads_clearly, is_background and refers_back "
            "switched off (scripts/intelligibility_items.py)"
            if unfiltered
            else None
        ),
        "frozen": {
            name: f"{n} questions per instance drawn with random.Random({seed}) from the committed "
            f"frozen/<instance>/{name}/vK/questions.jsonl, K the latest version (sets: which; sha256 of the drawn "
            "lines)"
            for name in frozen
        },
        "generator_commit": commit.stdout.strip(),
        "shuffle_seed": shuffle_seed,
        "sets": sets,
    }
    (out / "sources.json").write_text(json.dumps(sources, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return sources


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--unfiltered", type=int, default=0)
    parser.add_argument("--shuffle-seed", type=int, default=20261203)
    parser.add_argument("--frozen", action="append", default=[], help="a committed reference set to sample")
    parser.add_argument("--no-generate", action="store_true", help="generate nothing: read only the --frozen sets")
    args = parser.parse_args(argv)
    sources = build(
        args.out, args.n, args.seed, args.unfiltered, args.shuffle_seed, tuple(args.frozen), not args.no_generate
    )
    for name, entry in sources["sets"].items():
        print(f"{name}: {entry['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
