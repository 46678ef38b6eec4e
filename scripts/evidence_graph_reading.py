"""Careful reading of evidence_graph's typed tensions (issue 31): export blinded items, then compute the rates.

    python scripts/evidence_graph_reading.py items judges/validation/evidence-graph-v1 --n 40 --seed 0
    python scripts/evidence_graph_reading.py results judges/validation/evidence-graph-v1
    python scripts/evidence_graph_reading.py heldout judges/validation/evidence-graph-v2 \
        --set astro-2025=submissions/astro-2025/evidence_graph --set ... --n 40 --seed 0

``items`` draws, per instance, a simple random sample (``random.Random(seed)``) of at most ``--n`` of every
tension the generator finds there and can phrase (before selection, so the rates describe the types, not one
set), and writes ``items.jsonl`` (shuffled, opaque ids: what the readers see: the type and its definition, the
question, the claim sentences with their papers and dates, the check the generator made), ``key.json`` (item
-> instance) and ``decode.json`` (the same, typed: the set's kind, ``intelligibility``, by which ``backtest
annotate serve`` serves it; see ``backtest/analysis/reading/intelligibility.py``). ``results`` reads
``labels/pass-a.jsonl``, ``labels/pass-b.jsonl`` and ``adjudication.jsonl`` (as typed labels) and writes
``results.json`` and ``results.md``: per instance and type, the share intelligible and the share real
(adjudicated), and Cohen's kappa between the passes.

``heldout`` (issue 40) draws, per instance, a simple random sample of at most ``--n`` of the questions of a
gated evidence_graph set (``--set INSTANCE=SUBMISSION_DIR``), for readers who did not gate it: the same items
(type and definition, question, the claim sentences with their papers' dates and titles, why they were paired),
read by the same ``results``.

``decode`` writes the ``decode.json`` of a set written before sets had one, from its ``key.json`` and
``items.jsonl`` (neither changed).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

INSTANCES = ("astro-2025", "space-2016", "astro-ph-live-2026")
DEFINITIONS = {
    "observational_tension": "Two papers report conflicting values (more than 2 sigma apart) or stances (detected "
    "vs not detected) on the same quantity or feature of the same subject.",
    "methodological_challenge": "A later paper questions (a bias, an over- or underestimate, a systematic error, "
    "contamination, model dependence...) a method, instrument, calibration or assumption that an earlier "
    "paper's claim rests on.",
    "single_dataset_conclusion": "A conclusion drawn from one data set, instrument or sample, that no other past "
    "paper tested independently (the generator searched the past corpus for a restatement with other data and "
    "found none; readers take that search as given and judge the rest).",
    "independent_qualification": "A later paper, by other authors, limits the scope of, or adds a condition to, "
    "an earlier paper's claim.",
}
OUTSIDE = " (the earlier work is outside the past corpus)"
# The gated sets (issue 40): the observational type also covers a result its authors set against earlier work.
HELDOUT_DEFINITIONS = {
    **DEFINITIONS,
    "observational_tension": "Two findings about the same object or quantity that cannot both be right (different "
    "values, or detected vs not detected), or a finding whose authors set it against an earlier result or view "
    "that the sentence names (the earlier paper may be outside the corpus).",
}


def export_items(out: Path, n: int, seed: int) -> None:
    from backtest.core.workspace import Workspace
    from backtest.corpus.instance import load_instance, open_past_corpus
    from backtest.generators.evidence_graph import EvidenceGraph
    from backtest.generators.protocol import GenerationContext
    from backtest.generators.tension_questions import record_of

    ws = Workspace.from_env(".")
    items: list[dict] = []
    for instance_id in INSTANCES:
        instance = load_instance(instance_id, ws)
        ctx = GenerationContext(instance=instance, past=open_past_corpus(instance, ws), seed=seed)
        papers, _, _, _, drafts = EvidenceGraph().tensions(ctx)
        by_claim = {c.claim_id: (p, c) for p in papers for c in p.claims}
        rng = random.Random(seed)
        drawn = rng.sample(drafts, min(n, len(drafts)))
        print(f"{instance_id}: {len(drafts)} tensions phrased, {len(drawn)} drawn")
        for d in drawn:
            t = record_of(d)
            claims = [
                {
                    "paper": cid.split("#")[0],
                    "date": by_claim[cid][0].record.published.isoformat(),
                    "title": by_claim[cid][0].record.title,
                    "sentence": by_claim[cid][1].text,
                }
                for cid in t.claims
            ]
            items.append(
                {
                    "type": d.signal_type,
                    "definition": DEFINITIONS[d.signal_type or ""],
                    "question": d.question,
                    "claims": claims,
                    "check": t.why or "",
                    "_instance": instance_id,
                }
            )
    write_blinded(out, items, random.Random(seed + 20261203), "eg")


def export_heldout(out: Path, sets: list[str], n: int, seed: int) -> None:
    from backtest.core.fileio import iter_jsonl
    from backtest.core.workspace import Workspace
    from backtest.corpus.instance import load_instance, open_past_corpus
    from backtest.generators.extract import analyse_corpus
    from backtest.generators.outputs import GatedTension

    ws = Workspace.from_env(".")
    items: list[dict] = []
    for spec in sets:
        instance_id, folder = spec.split("=", 1)
        instance = load_instance(instance_id, ws)
        papers = {p.record.id: p for p in analyse_corpus(open_past_corpus(instance, ws))}
        questions = [row for _, row in iter_jsonl(Path(folder) / "questions.jsonl")]
        drawn = random.Random(seed).sample(questions, min(n, len(questions)))
        print(f"{instance_id}: {len(questions)} questions, {len(drawn)} drawn")
        for q in drawn:
            t = GatedTension.model_validate(q["tension"])
            claims = []
            for cid in t.claims:
                pid, index = cid.split("#s")
                paper = papers[pid]
                claims.append(
                    {
                        "date": paper.record.published.isoformat(),
                        "title": " ".join(paper.record.title.split()),
                        "sentence": paper.sentences[int(index)],
                    }
                )
            kind = q["signal_type"]
            items.append(
                {
                    "type": kind,
                    "definition": HELDOUT_DEFINITIONS[kind],
                    "question": q["question"],
                    "claims": claims,
                    "check": t.why + (OUTSIDE if t.earlier_outside_corpus else ""),
                    "_instance": instance_id,
                }
            )
    write_blinded(out, items, random.Random(seed + 20261204), "eh")


def write_blinded(out: Path, items: list[dict], rng: random.Random, prefix: str) -> None:
    """Shuffle ``items`` with ``rng`` under opaque ids ``<prefix>-NNN``: ``items.jsonl`` (what readers see),
    ``key.json`` (item -> instance and type, kept from them) and ``decode.json`` (the same, typed)."""
    from backtest.analysis.reading.intelligibility import decode_from_key, write_decode
    from backtest.core.fileio import write_json, write_jsonl

    rng.shuffle(items)
    key, rows = {}, []
    for i, item in enumerate(items, 1):
        item_id = f"{prefix}-{i:03d}"
        key[item_id] = {"instance": item.pop("_instance"), "type": item["type"]}
        rows.append({"id": item_id, **item})
    write_jsonl(out / "items.jsonl", rows)
    write_json(out / "key.json", key)
    write_decode(out, decode_from_key(out))


def _read(path: Path) -> dict[str, dict]:
    """A pass's labels (or the adjudication) read as their typed records, as plain fields by item id."""
    from backtest.analysis.reading.intelligibility import read_labels

    return {k: label.model_dump() for k, label in read_labels(path).items()}


def results(folder: Path) -> None:
    from scipy.stats import binomtest
    from sklearn.metrics import cohen_kappa_score

    from backtest.core.fileio import atomic_write_text, write_json

    key = json.loads((folder / "key.json").read_text())
    a = _read(folder / "labels" / "pass-a.jsonl")
    b = _read(folder / "labels" / "pass-b.jsonl")
    adjudicated = _read(folder / "adjudication.jsonl") if (folder / "adjudication.jsonl").exists() else {}
    final = {}
    for item_id in key:
        final[item_id] = adjudicated.get(item_id) or a[item_id]
        if item_id not in adjudicated and any(a[item_id][f] != b[item_id][f] for f in ("intelligible", "real")):
            raise SystemExit(f"{item_id}: the passes differ and there is no adjudication")
    out: dict = {"kappa": {}, "rates": []}
    for field in ("intelligible", "real"):
        ys = [(a[i][field], b[i][field]) for i in sorted(key)]
        same = sum(x == y for x, y in ys)
        kappa = cohen_kappa_score([x for x, _ in ys], [y for _, y in ys]) if len({*ys}) > 1 else 1.0
        out["kappa"][field] = {"kappa": round(float(kappa), 3), "agreement": f"{same}/{len(ys)}"}
    groups: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
    for item_id, k in key.items():
        groups[(k["instance"], k["type"])].append(item_id)
        groups[("all", k["type"])].append(item_id)
        if "v1" not in folder.name:  # evidence-graph-v1's table is as it was published
            groups[(k["instance"], "all types")].append(item_id)
        if k.get("asked"):  # in the set as asked after this reading (key.json's "asked")
            groups[(f"{k['instance']}, asked", "all types")].append(item_id)
            groups[(f"{k['instance']}, asked", k["type"])].append(item_id)
    for (instance, kind), ids in sorted(groups.items()):
        row = {"instance": instance, "type": kind, "n": len(ids)}
        for field in ("intelligible", "real"):
            hits = sum(bool(final[i][field]) for i in ids)
            ci = binomtest(hits, len(ids)).proportion_ci(method="exact")
            row[field] = {"k": hits, "share": round(hits / len(ids), 3), "ci95": [round(ci.low, 3), round(ci.high, 3)]}
        out["rates"].append(row)
    write_json(folder / "results.json", out)
    lines = [
        "| instance | type | n | intelligible [95%] | real [95%] |",
        "|---|---|---:|---|---|",
    ]
    for r in out["rates"]:
        cells = [
            f"{r[f]['share']:.0%} ({r[f]['k']}/{r['n']}) [{r[f]['ci95'][0]:.0%}, {r[f]['ci95'][1]:.0%}]"
            for f in ("intelligible", "real")
        ]
        lines.append(f"| {r['instance']} | {r['type']} | {r['n']} | {cells[0]} | {cells[1]} |")
    lines += [
        "",
        "Agreement between the passes: "
        + "; ".join(f"{f} {v['agreement']} (kappa {v['kappa']})" for f, v in out["kappa"].items()),
    ]
    atomic_write_text(folder / "results.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    items = sub.add_parser("items")
    items.add_argument("out", type=Path)
    items.add_argument("--n", type=int, default=40)
    items.add_argument("--seed", type=int, default=0)
    held = sub.add_parser("heldout")
    held.add_argument("out", type=Path)
    held.add_argument("--set", dest="sets", action="append", required=True, help="INSTANCE=SUBMISSION_DIR")
    held.add_argument("--n", type=int, default=40)
    held.add_argument("--seed", type=int, default=0)
    res = sub.add_parser("results")
    res.add_argument("folder", type=Path)
    dec = sub.add_parser("decode")
    dec.add_argument("folder", type=Path)
    args = parser.parse_args()
    from backtest.core.errors import BadInput

    try:
        if args.cmd == "items":
            export_items(args.out, args.n, args.seed)
        elif args.cmd == "heldout":
            export_heldout(args.out, args.sets, args.n, args.seed)
        elif args.cmd == "decode":
            from backtest.analysis.reading.intelligibility import decode_from_key, write_decode

            print(write_decode(args.folder, decode_from_key(args.folder)))
        else:
            results(args.folder)
    except BadInput as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
