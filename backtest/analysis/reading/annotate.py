"""Blinded annotation: export items from scored runs (or pairs from an arena), import filled sheets.

``export_items`` draws ``n`` (question, documents shown) cases from one or more run
folders, blinds them (no system names, shuffled, ids ``item001``...) and writes:

* ``items.jsonl`` — the items (see :mod:`backtest.analysis.reading.items`);
* ``sheet.csv`` — a blank sheet: item_id, outcome, premise_status, confidence, cited, notes;
* ``codebook.md`` — the codebook readers follow (when one is given or found);
* ``decode.json`` — private: item → run, system, question_id and the run judge's labels.
  Readers must not see it.

Items are split evenly over the runs; within a run they are drawn at random (seeded),
or, with ``stratify="outcome"``, round-robin over the run judge's outcome labels so
that rare labels are represented. ``export_pairs`` does the same for arena contexts.

``import_sheet`` validates a filled sheet against its items (labels in the taxonomy,
cited ids among the item's documents, every item present exactly once, engaged
outcomes cite something and ``not_addressed`` cites nothing) and writes
``labels/<rater>.jsonl``. Every problem is reported, one line each.
"""

from __future__ import annotations

import csv
import io
import random
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import ConfigDict, Field

from backtest.analysis.outputs import Decode
from backtest.analysis.reading.items import (
    BLINDED_SYSTEM,
    AnnotationItem,
    Label,
    PairItem,
    PairLabel,
    PairQuestion,
    ShownDocument,
    read_records,
)
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_text_file, write_jsonl
from backtest.core.html import markdown_text
from backtest.core.records import (
    ENGAGED_OUTCOMES,
    OUTCOMES,
    PREMISE_STATUSES,
    Judgment,
    Question,
    Retrieval,
    Versioned,
    check_safe_name,
    output_dict,
    parse_record,
    read_output,
    write_output,
)
from backtest.core.text import CONTROL_CHARS
from backtest.scoring.outputs import Run

SHEET_COLUMNS = ("item_id", "outcome", "premise_status", "confidence", "cited", "notes")
PAIR_SHEET_COLUMNS = ("item_id", "better", "confidence", "notes")
BETTER = ("a", "b", "tie")
DEFAULT_CODEBOOK = Path("reference") / "sqb" / "annotation" / "codebook.md"
PAIR_GUIDE = """# Pairwise reading guide

Each item shows a few past papers (the context) and two research questions, **a** and **b**,
written from that literature. Say which is the better research question: `a`, `b`, or `tie`.

A better research question is, in this order:

1. **Intelligible** on its own: a reader can tell what is asked, about what object or quantity.
   A question that cannot be understood loses to one that can.
2. **Grounded** in the context: it follows from what the papers report, not from a template.
3. **Specific and testable**: it names the quantity, the object and the observation or analysis
   that would settle it; a decisive answer is imaginable.

Surface features are not quality: naming many objects, quoting numbers or citing two papers does not
make a question better if it is unintelligible or asks nothing testable. Use `tie` when neither is
better (both good, or both unintelligible). Enter confidence 1 (low) / 2 (medium) / 3 (high).
Judge from the text shown only.
"""


def _run_files(run_dir: Path, ws) -> tuple[Run, list[Question], list[Retrieval], list[Judgment]]:
    """A complete run's RUN.json, the questions of its frozen set, its retrievals and judgments."""
    from backtest.scoring.score import load_run_files
    from backtest.submit.freeze import load_frozen

    run, retrievals, judgments, _ = load_run_files(run_dir)
    if run.status != "complete":
        raise BadInput(f"{run_dir}: run is not complete (status {run.status!r}); finish it with backtest score")
    questions = list(load_frozen(ws.root / run.frozen_path).questions)
    return run, questions, retrievals, judgments


def blind_question(question: Question, item_id: str) -> Question:
    """The question as readers and judges see it in an item: its id is the item id, its system hidden."""
    return question.model_copy(update={"question_id": item_id, "generation_system": BLINDED_SYSTEM})


def _draw(keys_by_stratum: dict[str, list[Any]], quota: int, rng: random.Random) -> list[Any]:
    """Round-robin over strata (sorted by name), each shuffled by ``rng``, until ``quota`` are taken."""
    pools = {s: rng.sample(v, len(v)) for s, v in sorted(keys_by_stratum.items())}
    picked: list[Any] = []
    while len(picked) < quota and any(pools.values()):
        for s in sorted(pools):
            if pools[s] and len(picked) < quota:
                picked.append(pools[s].pop())
    return picked


def _quotas(n: int, k: int) -> list[int]:
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def _prepare_out(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        raise BadInput(f"{out}: exists and is not empty; annotation exports are never overwritten")


def _codebook_text(codebook: Path | None) -> str | None:
    if codebook is None:
        return None
    return read_text_file(codebook)


def export_items(
    ws,
    run_dirs: Sequence[str | Path],
    n: int | None,
    seed: int,
    out: str | Path,
    stratify: str | None = None,
    codebook: Path | None = None,
    first_item: int = 1,
    per_run: int | None = None,
) -> dict[str, Any]:
    """Draw blinded items from the runs into ``out``; return a summary (counts per run).

    ``per_run``: a simple random sample of that many questions from every run (all of a smaller run), the
    design an estimate (:mod:`backtest.analysis.estimate`) needs; ``n``: that many items split evenly over
    the runs. Either way the draw is seeded and ``decode.json`` records its design (each run's population,
    the question ids drawn, the inclusion probability or, stratified, the strata). Items are numbered from
    ``first_item``, so exports made in batches can share one numbering (their items.jsonl, sheets and decode
    files then concatenate without clashes)."""
    from backtest.analysis.outputs import RunSample, SampleDesign, StratumSample

    if first_item < 1:
        raise BadInput("--first-item must be at least 1")
    if (n is None) == (per_run is None):
        raise BadInput("give one of --n (items split over the runs) or --per-run (a sample of each run)")
    if (n if n is not None else per_run) < 1:  # type: ignore[operator]
        raise BadInput(f"--{'n' if n is not None else 'per-run'} must be at least 1")
    if stratify not in (None, "outcome"):
        raise BadInput(f"unknown --stratify {stratify!r} (known: outcome)")
    if not run_dirs:
        raise BadInput("give at least one run folder")
    out = Path(out)
    _prepare_out(out)
    rng = random.Random(seed)
    runs = [Path(r) if Path(r).is_absolute() or Path(r).exists() else ws.root / r for r in run_dirs]
    if len({r.resolve() for r in runs}) != len(runs):
        raise BadInput("a run folder is given twice")
    quotas = _quotas(n, len(runs)) if n is not None else [per_run] * len(runs)
    drawn: list[tuple[Path, Run, Question, Retrieval, Judgment]] = []
    samples: dict[str, RunSample] = {}
    for run_dir, quota in zip(runs, quotas):
        run, questions, retrievals, judgments = _run_files(run_dir, ws)
        by_q = {r.question_id: r for r in retrievals}
        by_j = {j.question_id: j for j in judgments}
        strata: dict[str, list[int]] = defaultdict(list)
        for i, q in enumerate(questions):
            if q.question_id in by_q and q.question_id in by_j:
                strata[by_j[q.question_id].outcome if stratify else "all"].append(i)
        picked = _draw(strata, quota or 0, rng)
        population = sum(len(v) for v in strata.values())
        ids = [questions[i].question_id for i in picked]
        if stratify:
            chosen = set(picked)
            samples[ws.relative(run_dir)] = RunSample(
                population=population,
                sampled=ids,
                strata={
                    s: StratumSample(population=len(v), sampled=[questions[i].question_id for i in v if i in chosen])
                    for s, v in sorted(strata.items())
                },
            )
        else:
            samples[ws.relative(run_dir)] = RunSample(
                population=population, sampled=ids, inclusion_probability=len(ids) / population if population else 0.0
            )
        for i in picked:
            q = questions[i]
            drawn.append((run_dir, run, q, by_q[q.question_id], by_j[q.question_id]))
    rng.shuffle(drawn)
    items, decode = [], {}
    for k, (run_dir, run, q, retrieval, judgment) in enumerate(drawn, start=first_item):
        item_id = f"item{k:03d}"
        docs = [
            ShownDocument(id=d.id, title=d.title, abstract=d.abstract, published=d.published)
            for d in retrieval.documents
        ]
        items.append(AnnotationItem(item_id=item_id, question=blind_question(q, item_id), documents=docs))
        decode[item_id] = {
            "run": ws.relative(run_dir),
            "instance": run.instance_id,
            "system": run.system,
            "question_id": q.question_id,
            "judge": run.judge.get("name"),
            "judge_outcome": judgment.outcome,
            "judge_premise_status": judgment.premise_status,
        }
    design = SampleDesign(
        kind="stratified" if stratify else "srs", seed=seed, per_run=per_run, stratify=stratify, runs=samples
    )
    _write_export(
        out,
        items,
        SHEET_COLUMNS,
        decode,
        _codebook_text(codebook),
        "codebook.md",
        {
            "kind": "items",
            "n": len(items),
            "seed": seed,
            "stratify": stratify,
            "first_item": first_item,
            "runs": [ws.relative(r) for r in runs],
            "design": design.model_dump(mode="json", exclude_none=True),
        },
    )
    return {
        "out": str(out),
        "n": len(items),
        "per_run": {ws.relative(r): sum(1 for v in decode.values() if v["run"] == ws.relative(r)) for r in runs},
    }


def render_item(item: AnnotationItem) -> str:
    """One item as a reader sees it (Markdown): the question, its premise or hypothesis, the documents in rank order."""
    q, t = item.question, markdown_text
    lines = [f"## {item.item_id}", "", f"**Question:** {t(q.question)}"]
    if q.premise:
        lines.append(f"**Premise:** {t(q.premise)}")
    if q.hypothesis:
        lines.append(f"**Hypothesis:** {t(q.hypothesis)}")
    lines += ["", f"Documents shown ({len(item.documents)}), published after {q.cutoff_date}:", ""]
    for k, d in enumerate(item.documents, start=1):
        lines += [f"{k}. [{t(d.id)}] ({d.published}) **{t(d.title)}**", f"   {t(d.abstract)}", ""]
    return "\n".join(lines)


def render_pair(pair: PairItem) -> str:
    """One pair as a reader sees it (Markdown): the context papers, then questions a and b."""
    t = markdown_text
    lines = [f"## {pair.item_id}", "", "Context (past papers):", ""]
    for d in pair.context:
        lines += [f"- [{t(d.id)}] **{t(d.title)}** — {t(d.abstract)}", ""]
    for side, q in (("a", pair.a), ("b", pair.b)):
        lines.append(f"**{side}:** {t(q.question)}" + (f"  \n   *Premise:* {t(q.premise)}" if q.premise else ""))
    return "\n".join(lines) + "\n"


def _items_header(items: Sequence[AnnotationItem]) -> str:
    """The top of ``items.md``: when the questions were written, from their cutoff (the codebook's own
    wording names the reference release's date, which is not this export's)."""
    cutoffs = sorted({str(i.question.cutoff_date) for i in items})
    when = (
        f"on or before **{cutoffs[0]}**; every document shown was published after that date"
        if len(cutoffs) == 1
        else "on or before the cutoff date each item names above its documents, which were published after it"
    )
    return (
        f"# Items\n\nEach question was written from literature published {when}. Where the codebook names "
        "another date, read this one.\n\n"
    )


def _write_export(
    out: Path,
    records: Sequence[Any],
    columns: Sequence[str],
    decode: dict[str, Any],
    guide: str | None,
    guide_name: str,
    meta: dict[str, Any],
) -> None:
    pairs = meta["kind"] == "pairs"
    name = "pairs" if pairs else "items"
    write_jsonl(out / f"{name}.jsonl", [r.model_dump(mode="json", exclude_none=True) for r in records])
    render = render_pair if pairs else render_item
    header = "" if pairs else _items_header(records)
    atomic_write_text(out / f"{name}.md", header + "\n".join(render(r) for r in records))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in records:
        writer.writerow([r.item_id] + [""] * (len(columns) - 1))
    atomic_write_text(out / "sheet.csv", buf.getvalue())
    if guide is not None:
        atomic_write_text(out / guide_name, guide)
    write_output(out / "decode.json", Decode, {"schema_version": "1", **meta, "items": decode})


def _arena_instance(arena_dir: Path, ws) -> str:
    """The instance of an arena folder under ``results/<instance>/...``."""
    try:
        return arena_dir.resolve().relative_to(ws.results.resolve()).parts[0]
    except (ValueError, IndexError):
        raise BadInput(f"{arena_dir}: not under {ws.results}; give --instance ID") from None


def export_pairs(
    ws,
    arena_dirs: Sequence[str | Path],
    n: int,
    seed: int,
    out: str | Path,
    instance_id: str | None = None,
    first_item: int = 1,
) -> dict[str, Any]:
    """Draw ``n`` blinded pairs (split evenly over the arenas) from arenas' ``contexts.jsonl`` into ``out``.

    The context papers come from each arena's instance (``instance_id``, else the
    ``results/<instance>/`` the arena folder lies in), clipped as the arena shows them.
    """
    from backtest.arena.contexts import MAX_ABSTRACT_CHARS, MAX_CONTEXT_PAPERS, ArenaContext
    from backtest.corpus.instance import load_instance, open_past_corpus

    if n < 1 or first_item < 1:
        raise BadInput("--n and --first-item must be at least 1")
    dirs = [Path(d) for d in arena_dirs]
    if not dirs:
        raise BadInput("give at least one arena folder")
    if instance_id and len(dirs) > 1:
        raise BadInput(
            "--instance goes with a single arena folder (each arena under results/<instance>/ names its own)"
        )
    out = Path(out)
    _prepare_out(out)
    rng = random.Random(seed)
    drawn = []
    for arena_dir, quota in zip(dirs, _quotas(n, len(dirs))):
        path = arena_dir / "contexts.jsonl"
        if not path.is_file():
            raise BadInput(f"{arena_dir}: no contexts.jsonl (give an arena output folder)")
        inst = instance_id or _arena_instance(arena_dir, ws)
        contexts = [parse_record(ArenaContext, o, f"{path}:{k}") for k, o in iter_jsonl(path)]
        past = open_past_corpus(load_instance(inst, ws), ws)
        # one pair per context: two of its systems drawn at random; contexts drawn without replacement
        for ctx in rng.sample(contexts, min(quota, len(contexts))):
            drawn.append((arena_dir, inst, ctx, *rng.sample(ctx.systems(), 2), past))
    rng.shuffle(drawn)
    pairs, decode = [], {}
    for k, (arena_dir, inst, ctx, sa, sb, past) in enumerate(drawn, start=first_item):
        item_id = f"item{k:03d}"
        docs = [
            ShownDocument(id=i, title=rec.title, abstract=rec.abstract[:MAX_ABSTRACT_CHARS], published=rec.published)
            for i in ctx.evidence_ids[:MAX_CONTEXT_PAPERS]
            if (rec := past.get(i)) is not None
        ]
        sides = {}
        for side, system in (("a", sa), ("b", sb)):
            output = ctx.outputs[system]
            question, _, rest = output.output.partition("\n")
            premise = rest.split(": ", 1)[1] if ": " in rest else None
            sides[side] = PairQuestion(question=question, premise=premise, evidence_ids=output.evidence_ids)
        pairs.append(PairItem(item_id=item_id, context=docs, a=sides["a"], b=sides["b"]))
        decode[item_id] = {
            "arena": ws.relative(arena_dir),
            "instance": inst,
            "context_id": ctx.context_id,
            "a": sa,
            "b": sb,
            "a_question_id": ctx.outputs[sa].question_id,
            "b_question_id": ctx.outputs[sb].question_id,
        }
    _write_export(
        out,
        pairs,
        PAIR_SHEET_COLUMNS,
        decode,
        PAIR_GUIDE,
        "guide.md",
        {
            "kind": "pairs",
            "n": len(pairs),
            "seed": seed,
            "first_item": first_item,
            "arenas": [ws.relative(d) for d in dirs],
        },
    )
    return {"out": str(out), "n": len(pairs)}


# --------------------------------------------------------------------------- import


def _read_sheet(sheet: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """The sheet's rows (line number, the needed columns' values). BadInput, one line, for a header that lacks a
    column or repeats one, a row with more fields than the header (an unquoted comma in the notes), and a
    control character anywhere (NUL, ANSI escape, bidirectional override)."""
    text = read_text_file(sheet).lstrip("\ufeff")
    bad = CONTROL_CHARS.search(text)  # never in a sheet
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise BadInput(
            f"{sheet}:{line}: control character U+{ord(bad.group()):04X} (NUL, an ANSI escape or a bidirectional "
            "override); remove it and import again"
        )
    reader = csv.DictReader(io.StringIO(text))
    header = list(reader.fieldnames or [])
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise BadInput(f"{sheet}: column(s) {', '.join(repeated)} appear twice in the header; keep one of each")
    missing = [c for c in columns if c not in header]
    if missing:
        raise BadInput(f"{sheet}: missing column(s) {', '.join(missing)} (need {', '.join(columns)})")
    rows = []
    try:
        for k, row in enumerate(reader, start=2):
            extra = row.get(None)
            if extra:
                raise BadInput(
                    f"{sheet}:{k}: {len(header) + len(extra)} fields where the header has {len(header)} "
                    "(an unquoted comma in the notes? quote the field)"
                )
            rows.append((k, {c: (row.get(c) or "").strip() for c in columns}))
    except csv.Error as exc:
        raise BadInput(f"{sheet}: bad CSV ({exc})") from None
    return rows


def _split_ids(value: str) -> list[str]:
    return [p for p in value.replace(";", " ").replace(",", " ").split() if p]


def import_sheet(sheet: str | Path, items_dir: str | Path, rater: str, out: str | Path | None = None) -> dict[str, Any]:
    """Validate a filled sheet against its items; write ``labels/<rater>.jsonl``. CheckFailed lists every problem."""
    sheet, items_dir = Path(sheet), Path(items_dir)
    try:
        check_safe_name(rater, "rater name")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    pairwise = (items_dir / "pairs.jsonl").is_file()
    source = items_dir / ("pairs.jsonl" if pairwise else "items.jsonl")
    if not source.is_file():
        raise BadInput(f"{items_dir}: no items.jsonl or pairs.jsonl (give the folder annotate export wrote)")
    records = read_records(source, PairItem if pairwise else AnnotationItem)
    shown = {r.item_id: ([d.id for d in r.documents] if not pairwise else []) for r in records}
    rows = _read_sheet(sheet, PAIR_SHEET_COLUMNS if pairwise else SHEET_COLUMNS)
    problems: list[str] = []
    labels: list[Any] = []
    seen: set[str] = set()
    for line, row in rows:
        where = f"{sheet.name}:{line}"
        item_id = row["item_id"]
        if item_id not in shown:
            problems.append(f"{where}: unknown item {item_id!r}")
            continue
        if item_id in seen:
            problems.append(f"{where}: {item_id} appears twice")
            continue
        seen.add(item_id)
        conf = row["confidence"]
        if conf and conf not in ("1", "2", "3"):
            problems.append(f"{where}: {item_id}: confidence {conf!r} must be 1, 2 or 3")
            conf = ""
        label, wrong = (_pair_label if pairwise else _item_label)(row, f"{where}: {item_id}", conf, shown[item_id])
        problems += wrong
        if label is not None:
            labels.append(label)
    missing = [i for i in shown if i not in seen]
    if missing:
        problems.append(
            f"{sheet.name}: {len(missing)} item(s) have no row: "
            f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}"
        )
    if problems:
        raise CheckFailed(f"{sheet}: {len(problems)} problem(s), nothing written: {problems[0]}", details=problems)
    target = Path(out) if out else items_dir / "labels" / f"{rater}.jsonl"
    order = {r.item_id: k for k, r in enumerate(records)}
    labels.sort(key=lambda lab: order[lab.item_id])
    write_jsonl(target, [lab.model_dump(mode="json", exclude_none=True) for lab in labels])
    return {"labels": str(target), "n": len(labels), "pairwise": pairwise}


def _pair_label(row: dict[str, str], where: str, conf: str, shown: list[str]) -> tuple[PairLabel | None, list[str]]:
    """A sheet row of a pair as its label, or None and why not (``where``: sheet, line and item)."""
    if row["better"] not in BETTER:
        return None, [f"{where}: better {row['better']!r} must be one of {', '.join(BETTER)}"]
    label = PairLabel(
        item_id=row["item_id"], better=row["better"], confidence=int(conf) if conf else None, notes=row["notes"]
    )
    return label, []


def _item_label(row: dict[str, str], where: str, conf: str, shown: list[str]) -> tuple[Label | None, list[str]]:
    """A sheet row of an item as its label, or None and every reason it is not one: labels outside the taxonomy,
    citations of documents the item did not show or cited twice, an engaged outcome citing nothing, a
    not_addressed one citing something (the last two only when the rest is sound)."""
    problems = []
    if row["outcome"] not in OUTCOMES:
        problems.append(f"{where}: outcome {row['outcome']!r} is not one of {', '.join(OUTCOMES)}")
    if row["premise_status"] not in PREMISE_STATUSES:
        problems.append(
            f"{where}: premise_status {row['premise_status']!r} is not one of {', '.join(PREMISE_STATUSES)}"
        )
    cited = _split_ids(row["cited"])
    foreign = [c for c in cited if c not in shown]
    if foreign:
        problems.append(f"{where}: cited id(s) {', '.join(foreign)} are not among the item's documents")
    if len(set(cited)) != len(cited):
        problems.append(f"{where}: a document is cited twice")
    if not problems and row["outcome"] in ENGAGED_OUTCOMES and not cited:
        problems.append(f"{where}: outcome {row['outcome']} needs at least one cited document")
    if not problems and row["outcome"] == "not_addressed" and cited:
        problems.append(f"{where}: outcome not_addressed cites nothing")
    if problems:
        return None, problems
    label = Label(
        item_id=row["item_id"],
        outcome=row["outcome"],
        premise_status=row["premise_status"],
        confidence=int(conf) if conf else None,
        cited=cited,
        notes=row["notes"],
    )
    return label, []


def _merged_design(metas: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The design of merged batches: their runs' samples together, when every batch recorded one of the same
    kind and no run was drawn from twice (else none: an estimate then refuses the merged set)."""
    designs = [d for m in metas if (d := m.get("design")) is not None]
    if not designs or len(designs) != len(metas) or len({(d["kind"], d.get("stratify")) for d in designs}) != 1:
        return {}
    runs: dict[str, Any] = {}
    for d in designs:
        if set(d["runs"]) & set(runs):
            return {}
        runs.update(d["runs"])
    first = designs[0]
    seeds = {d["seed"] for d in designs}
    per_run = {d.get("per_run") for d in designs}
    design = {"kind": first["kind"], "runs": runs}
    if len(seeds) == 1 and first.get("seed") is not None:
        design["seed"] = first["seed"]
    if len(per_run) == 1 and first.get("per_run") is not None:
        design["per_run"] = first["per_run"]
    if first.get("stratify"):
        design["stratify"] = first["stratify"]
    return {"design": design}


def merge_exports(sources: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """Merge exports made in batches (``--first-item`` numbering) into one set: items or pairs, decode files,
    and each reader's labels (a reader must have labelled every batch or none). Item ids must not clash."""
    dirs = [Path(d) for d in sources]
    if len(dirs) < 2:
        raise BadInput("merge needs at least two export folders")
    kinds = {("pairs" if (d / "pairs.jsonl").is_file() else "items") for d in dirs}
    if len(kinds) != 1:
        raise BadInput("cannot merge item exports with pair exports")
    kind = kinds.pop()
    model = PairItem if kind == "pairs" else AnnotationItem
    out = Path(out)
    _prepare_out(out)
    records: list[Any] = []
    decode: dict[str, Any] = {}
    metas = []
    for d in dirs:
        batch = read_records(d / f"{kind}.jsonl", model)
        clash = sorted({r.item_id for r in batch} & {r.item_id for r in records})
        if clash:
            raise BadInput(
                f"{d}: item ids {', '.join(clash[:5])} are already in an earlier folder (export with --first-item)"
            )
        records += batch
        meta = output_dict(read_output(Decode, d / "decode.json"))  # merged as written
        decode.update(meta["items"])
        metas.append({k: v for k, v in meta.items() if k != "items"})
    records.sort(key=lambda r: r.item_id)
    raters = sorted({p.stem for d in dirs for p in (d / "labels").glob("*.jsonl")})
    for rater in raters:
        missing = [str(d) for d in dirs if not (d / "labels" / f"{rater}.jsonl").is_file()]
        if missing:
            raise BadInput(f"reader {rater} has no labels in {', '.join(missing)}: merge labelled batches whole")
    guide, guide_name = None, "codebook.md"
    for d in dirs:
        for name in ("codebook.md", "guide.md"):
            if guide is None and (d / name).is_file():
                guide, guide_name = read_text_file(d / name), name
    _write_export(
        out,
        records,
        PAIR_SHEET_COLUMNS if kind == "pairs" else SHEET_COLUMNS,
        decode,
        guide,
        guide_name,
        {"kind": kind, "n": len(records), "merged_from": metas, **_merged_design(metas)},
    )
    for rater in raters:
        labels = [
            lab
            for d in dirs
            for lab in read_records(d / "labels" / f"{rater}.jsonl", PairLabel if kind == "pairs" else Label)
        ]
        labels.sort(key=lambda lab: lab.item_id)
        write_jsonl(
            out / "labels" / f"{rater}.jsonl", [lab.model_dump(mode="json", exclude_none=True) for lab in labels]
        )
    return {"out": str(out), "n": len(records), "raters": raters}


# --------------------------------------------------------------------------- adjudication


ADJUDICATED = "adjudicated"


class Decision(Versioned):
    """One adjudicated disagreement: the field, both readings, the label decided and why."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    field: Literal["outcome", "premise_status"]
    reader_a: str
    reader_b: str
    adjudicated: str
    reason: str = Field(min_length=1)


def disagreements(items_dir: str | Path, readers: tuple[str, str] = ("reader_a", "reader_b")) -> list[dict[str, Any]]:
    """Every (item, field) on which the two readers' labels differ, as a decision to fill in (``adjudicated`` and
    ``reason`` empty)."""
    a, b = (_reader(Path(items_dir), r) for r in readers)
    return _disagreements(a, b, f"{items_dir}: {readers[0]} and {readers[1]} labelled different items")


def _disagreements(a: dict[str, Label], b: dict[str, Label], mismatch: str) -> list[dict[str, Any]]:
    if set(a) != set(b):
        raise BadInput(mismatch)
    out = []
    for item in sorted(a):
        for field in ("outcome", "premise_status"):
            va, vb = getattr(a[item], field), getattr(b[item], field)
            if va != vb:
                out.append(
                    {"item_id": item, "field": field, "reader_a": va, "reader_b": vb, "adjudicated": "", "reason": ""}
                )
    return out


def _reader(items_dir: Path, name: str) -> dict[str, Label]:
    from backtest.analysis.reading.items import read_labels

    path = items_dir / "labels" / f"{name}.jsonl"
    if not path.is_file():
        raise BadInput(f"{path}: no such reader's labels (import the sheet with `backtest annotate import`)")
    return {lab.item_id: lab for lab in read_labels(path)}


def adjudicate(items_dir: str | Path, decisions_path: str | Path) -> dict[str, Any]:
    """Write ``labels/adjudicated.jsonl`` and ``adjudication.jsonl`` from two readers' labels and a decision for
    each of their disagreements (each decision one of the two readings, with its reason). An item's label is
    the readers' where they agree; the cited documents of an engaged item are those either reader cited who
    found it engaged. Refuses (nothing written) a missing, extra or invalid decision."""
    items_dir = Path(items_dir)
    a, b = _reader(items_dir, "reader_a"), _reader(items_dir, "reader_b")
    mismatch = f"{items_dir}: reader_a and reader_b labelled different items"
    wanted = {(d["item_id"], d["field"]): d for d in _disagreements(a, b, mismatch)}
    decided: dict[tuple[str, str], Decision] = {}
    problems = []
    for lineno, obj in iter_jsonl(Path(decisions_path)):
        try:
            d = parse_record(Decision, obj, f"{decisions_path}:{lineno}")
        except BadInput as exc:
            problems.append(str(exc))
            continue
        key = (d.item_id, d.field)
        if key not in wanted:
            problems.append(
                f"{decisions_path}:{lineno}: {d.item_id} {d.field}: the readers agree there (or no such item)"
            )
        elif d.adjudicated not in (d.reader_a, d.reader_b) or (d.reader_a, d.reader_b) != (
            wanted[key]["reader_a"],
            wanted[key]["reader_b"],
        ):
            problems.append(f"{decisions_path}:{lineno}: {d.item_id} {d.field}: decide one of the two readings as read")
        elif key in decided:
            problems.append(f"{decisions_path}:{lineno}: {d.item_id} {d.field}: decided twice")
        else:
            decided[key] = d
    missing = sorted(set(wanted) - set(decided))
    problems += [f"{item} {field}: no decision" for item, field in missing]
    if problems:
        raise CheckFailed(f"{decisions_path}: {len(problems)} problem(s), nothing written: {problems[0]}", problems)
    labels = []
    for item in sorted(a):
        value = {
            f: decided[(item, f)].adjudicated if (item, f) in decided else getattr(a[item], f)
            for f in ("outcome", "premise_status")
        }
        engaged = value["outcome"] in ENGAGED_OUTCOMES
        cited = (
            sorted({c for r in (a[item], b[item]) if r.outcome in ENGAGED_OUTCOMES for c in r.cited}) if engaged else []
        )
        reasons = [decided[(item, f)].reason for f in ("outcome", "premise_status") if (item, f) in decided]
        labels.append(Label(item_id=item, cited=cited, notes="; ".join(reasons), **value))
    write_jsonl(
        items_dir / "labels" / f"{ADJUDICATED}.jsonl",
        [lab.model_dump(mode="json", exclude_none=True) for lab in labels],
    )
    write_jsonl(
        items_dir / "adjudication.jsonl",
        [decided[k].model_dump(mode="json", exclude={"schema_version"}) for k in sorted(decided)],
    )
    return {"n": len(labels), "decided": len(decided)}
