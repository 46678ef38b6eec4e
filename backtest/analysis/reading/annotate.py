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
``labels/<rater>.jsonl``. Every problem is reported, one line each. A reader already imported is replaced only
when asked, under a lock on the labels folder; ``adjudicated`` is no reader's name: ``adjudicate`` writes
``labels/adjudicated.jsonl`` from two readers and their decisions, and :func:`check_adjudicated` checks that it
still follows from them.
"""

from __future__ import annotations

import csv
import io
import random
import re
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import ConfigDict, Field, field_validator

from backtest.analysis.outputs import Decode
from backtest.analysis.reading.items import (
    BETTER,
    AnnotationItem,
    Label,
    PairItem,
    PairLabel,
    PairQuestion,
    ShownDocument,
    citation_problems,
    read_records,
)
from backtest.analysis.reading.sample import (
    blind_question,
    check_numbering,
    draw,
    item_id,
    load_run_material,
    quotas,
    shown_sha256_of,
)
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_text_file, write_jsonl
from backtest.core.html import markdown_text
from backtest.core.lock import file_lock
from backtest.core.records import (
    ENGAGED_OUTCOMES,
    OUTCOMES,
    PREMISE_STATUSES,
    Versioned,
    check_safe_name,
    output_dict,
    parse_record,
    read_output,
    write_output,
)
from backtest.core.text import CONTROL_CHARS

#: an ANSI escape sequence (colour, cursor), taken out of adjudication reasons whole
ANSI_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
#: the lock file, in a labels folder, that imports and adjudication hold while they check and write
LABELS_LOCK = ".labels.lock"
#: the labels adjudication derives (no reader may be imported under this name)
ADJUDICATED = "adjudicated"
#: the two readers adjudication settles unless told others
READERS = ("reader_a", "reader_b")
SHEET_COLUMNS = ("item_id", "outcome", "premise_status", "confidence", "cited", "notes")
PAIR_SHEET_COLUMNS = ("item_id", "better", "confidence", "notes")
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
    the runs. Either way the draw is seeded (:func:`~backtest.analysis.reading.sample.draw`) and ``decode.json``
    records its design (each run's population, the question ids drawn, the inclusion probability or, stratified,
    the strata; the frozen set each run scored and the hash of what its sample shows). Items are numbered from
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
    runs = [Path(r) if Path(r).is_absolute() or Path(r).exists() else ws.root / r for r in run_dirs]
    if len({r.resolve() for r in runs}) != len(runs):
        raise BadInput("a run folder is given twice")
    run_quotas = quotas(n, len(runs)) if n is not None else [per_run or 0] * len(runs)
    materials = [load_run_material(run_dir, ws, with_text=True) for run_dir in runs]
    strata = [m.strata(stratify) for m in materials]
    picked, order = draw(strata, run_quotas, seed)
    check_numbering(first_item, len(order))
    samples: dict[str, RunSample] = {}
    for material, run_strata, indexes in zip(materials, strata, picked):
        population = sum(len(v) for v in run_strata.values())
        ids = [material.questions[i].question_id for i in indexes]
        if stratify:
            chosen = set(indexes)
            samples[material.name] = RunSample(
                population=population,
                sampled=ids,
                strata={
                    s: StratumSample(
                        population=len(v), sampled=[material.questions[i].question_id for i in v if i in chosen]
                    )
                    for s, v in sorted(run_strata.items())
                },
            )
        else:
            samples[material.name] = RunSample(
                population=population,
                sampled=ids,
                inclusion_probability=len(ids) / population if population else 0.0,
                frozen_seal=material.run.frozen_seal,
                shown_sha256=shown_sha256_of(material, ids),
            )
    items, decode = [], {}
    for k, (r, i) in enumerate(order, start=first_item):
        material, item = materials[r], item_id(k)
        q = material.questions[i]
        judgment = material.judgments[q.question_id]
        docs = [
            ShownDocument(id=d.id, title=d.title, abstract=d.abstract, published=d.published)
            for d in material.retrievals[q.question_id].documents
        ]
        items.append(AnnotationItem(item_id=item, question=blind_question(q, item), documents=docs))
        decode[item] = {
            "run": material.name,
            "instance": material.run.instance_id,
            "system": material.run.system,
            "question_id": q.question_id,
            "judge": material.run.judge.get("name"),
            "judge_outcome": judgment.outcome,
            "judge_premise_status": judgment.premise_status,
        }
    design = SampleDesign(
        kind="stratified" if stratify else "srs", seed=seed, per_run=per_run, n=n, stratify=stratify, runs=samples
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
            "runs": [m.name for m in materials],
            "design": design.model_dump(mode="json", exclude_none=True),
        },
    )
    return {
        "out": str(out),
        "n": len(items),
        "per_run": {m.name: sum(1 for v in decode.values() if v["run"] == m.name) for m in materials},
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
    for arena_dir, quota in zip(dirs, quotas(n, len(dirs))):
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
    check_numbering(first_item, len(drawn))
    pairs, decode = [], {}
    for k, (arena_dir, inst, ctx, sa, sb, past) in enumerate(drawn, start=first_item):
        item = item_id(k)
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
        pairs.append(PairItem(item_id=item, context=docs, a=sides["a"], b=sides["b"]))
        decode[item] = {
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


def import_sheet(
    sheet: str | Path,
    items_dir: str | Path,
    rater: str,
    out: str | Path | None = None,
    replace: bool = False,
    completed_by: str | None = None,
) -> dict[str, Any]:
    """Validate a filled sheet against its items; write ``labels/<rater>.jsonl``. CheckFailed lists every problem.

    A ``.json`` SHEET is Label Studio's JSON export of the tasks ``annotate export --format label-studio`` wrote
    (:mod:`~backtest.analysis.reading.labelstudio`; ``completed_by`` picks one annotator): its answers are checked
    as a sheet's rows are, and each annotation's ``lead_time`` becomes its label's seconds.

    A reader's file that exists is replaced only with ``replace``; the check and the write hold a lock on the
    labels folder (:data:`LABELS_LOCK`), so concurrent imports of one reader write once and refuse the rest.
    ``adjudicated`` is no reader's name: ``labels/adjudicated.jsonl`` is what :func:`adjudicate` derives."""
    sheet, items_dir = Path(sheet), Path(items_dir)
    try:
        check_safe_name(rater, "rater name")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    target = Path(out) if out else items_dir / "labels" / f"{rater}.jsonl"
    if ADJUDICATED in (rater, target.stem):
        raise BadInput(
            f"{ADJUDICATED!r} is reserved: labels/{ADJUDICATED}.jsonl is written by `backtest annotate adjudicate` "
            "from two readers' labels and a decision per disagreement; import each reader under their own name"
        )
    pairwise = (items_dir / "pairs.jsonl").is_file()
    source = items_dir / ("pairs.jsonl" if pairwise else "items.jsonl")
    if not source.is_file():
        raise BadInput(f"{items_dir}: no items.jsonl or pairs.jsonl (give the folder annotate export wrote)")
    records = read_records(source, PairItem if pairwise else AnnotationItem)
    shown = {r.item_id: ([d.id for d in r.documents] if not pairwise else []) for r in records}
    columns = PAIR_SHEET_COLUMNS if pairwise else SHEET_COLUMNS
    seconds: dict[str, float] = {}
    if sheet.suffix.lower() == ".json":
        from backtest.analysis.reading.labelstudio import read_export

        rows, seconds = read_export(sheet, columns, completed_by)
        for k, row in rows:
            if any(CONTROL_CHARS.search(v) for v in row.values()):
                raise BadInput(
                    f"{sheet}: task {k}: a control character (NUL, an ANSI escape or a bidirectional "
                    "override) in an answer; remove it and import again"
                )
    elif completed_by is not None:
        raise BadInput("--completed-by picks an annotator of a Label Studio export (a .json SHEET)")
    else:
        rows = _read_sheet(sheet, columns)
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
        label, wrong = row_label(row, f"{where}: {item_id}", shown[item_id], pairwise)
        problems += wrong
        if label is not None:
            labels.append(label.model_copy(update={"seconds": seconds[item_id]}) if item_id in seconds else label)
    missing = [i for i in shown if i not in seen]
    if missing:
        problems.append(
            f"{sheet.name}: {len(missing)} item(s) have no row: "
            f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}"
        )
    if problems:
        raise CheckFailed(f"{sheet}: {len(problems)} problem(s), nothing written: {problems[0]}", details=problems)
    with file_lock(target.parent / LABELS_LOCK):
        replaced = target.exists()
        if replaced and not replace:
            raise BadInput(
                f"{target}: exists (reader {rater!r} was imported before); pass --replace to replace their labels, "
                "or import this sheet under another --rater"
            )
        write_labels(target, labels, [r.item_id for r in records])
        stale = replaced and (target.parent / f"{ADJUDICATED}.jsonl").is_file()
    return {"labels": str(target), "n": len(labels), "pairwise": pairwise, "adjudication_stale": stale}


def write_labels(target: Path, labels: Sequence[Any], order: Sequence[str]) -> None:
    """A reader's labels file, atomically, in item order: one canonical JSON line a label (the only writer of that
    format: ``annotate import`` and the reading desk both call it, under the labels folder's lock)."""
    rank = {item: k for k, item in enumerate(order)}
    ordered = sorted(labels, key=lambda lab: rank[lab.item_id])
    write_jsonl(target, [lab.model_dump(mode="json", exclude_none=True) for lab in ordered])


def row_label(row: dict[str, str], where: str, shown: list[str], pairwise: bool) -> tuple[Any, list[str]]:
    """One answer, as a sheet row (the sheet's columns, values stripped), as its label or None and every reason it
    is not one (``where`` names the row): the rules of ``annotate import``, which the reading desk applies to each
    answer it saves."""
    conf, problems = row["confidence"], []
    if conf and conf not in ("1", "2", "3"):
        problems.append(f"{where}: confidence {conf!r} must be 1, 2 or 3")
        conf = ""
    label, wrong = (_pair_label if pairwise else _item_label)(row, where, conf, shown)
    return (None if problems else label), problems + wrong


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
    problems += [f"{where}: {p}" for p in citation_problems(row["outcome"], cited, shown)]
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
    kind and no run was drawn from twice; else none, and ``no_design`` says why (``estimate`` repeats it)."""
    designs = [d for m in metas if (d := m.get("design")) is not None]
    if not designs or len(designs) != len(metas):
        return {"no_design": "a batch recorded no sampling design (exported before designs were recorded)"}
    if len({(d["kind"], d.get("stratify")) for d in designs}) != 1:
        return {"no_design": "its batches were drawn under different designs (simple random and stratified)"}
    runs: dict[str, Any] = {}
    for d in designs:
        twice = sorted(set(d["runs"]) & set(runs))
        if twice:
            return {
                "no_design": f"two of its batches sampled the same run ({twice[0]}): two samples of one run drawn "
                "apart are not one simple random sample of it; estimate from one batch, or export one sample of "
                "the run with the --per-run you want"
            }
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
    decisions: list[dict[str, Any]] = []
    if ADJUDICATED in raters:  # the decisions go with the adjudicated labels (estimate checks one against the other)
        for d in dirs:
            if not (d / "adjudication.jsonl").is_file():
                raise BadInput(f"{d}: labels/{ADJUDICATED}.jsonl without adjudication.jsonl; adjudicate it again first")
            decisions += [row for _, row in iter_jsonl(d / "adjudication.jsonl")]
    design = _merged_design(metas) if kind == "items" else {}
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
        {"kind": kind, "n": len(records), "merged_from": metas, **design},
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
    if ADJUDICATED in raters:
        decisions.sort(key=lambda r: (str(r.get("item_id")), str(r.get("field"))))
        write_jsonl(out / "adjudication.jsonl", decisions)
    return {"out": str(out), "n": len(records), "raters": raters, "no_design": design.get("no_design")}


# --------------------------------------------------------------------------- adjudication


class Decision(Versioned):
    """One adjudicated disagreement: the field, both readings, the label decided and why (control characters,
    ANSI escapes and bidirectional overrides are taken out of the reason: it is printed and published)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    field: Literal["outcome", "premise_status"]
    reader_a: str
    reader_b: str
    adjudicated: str
    reason: str = Field(min_length=1)
    readers: tuple[str, str] | None = None  # whose readings, when not reader_a's and reader_b's
    seconds: float | None = Field(default=None, ge=0)  # time spent deciding (``annotate serve --adjudicate``)

    @field_validator("reason")
    @classmethod
    def _printable(cls, value: str) -> str:
        cleaned = CONTROL_CHARS.sub("", ANSI_SEQUENCE.sub("", value)).strip()
        if not cleaned:
            raise ValueError("reason is empty once control characters are taken out")
        return cleaned


def disagreements(items_dir: str | Path, readers: tuple[str, str] = READERS) -> list[dict[str, Any]]:
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


def _decide(
    items_dir: Path, decisions_path: Path, readers: tuple[str, str] = READERS
) -> tuple[list[Label], list[Decision], list[str]]:
    """The adjudicated labels of ``items_dir`` from the two readers' labels (reader_a's and reader_b's unless
    ``readers`` names others) and the decisions (in item order), the decisions kept (:func:`adjudicate`), and every
    problem with the decisions (none: all is sound)."""
    a, b = _reader(items_dir, readers[0]), _reader(items_dir, readers[1])
    mismatch = f"{items_dir}: {readers[0]} and {readers[1]} labelled different items"
    wanted = {(d["item_id"], d["field"]): d for d in _disagreements(a, b, mismatch)}
    decided: dict[tuple[str, str], Decision] = {}
    problems = []
    for lineno, obj in iter_jsonl(decisions_path):
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
    return labels, [decided[k] for k in sorted(decided)], problems


def adjudicate(items_dir: str | Path, decisions_path: str | Path, readers: tuple[str, str] = READERS) -> dict[str, Any]:
    """Write ``labels/adjudicated.jsonl`` and ``adjudication.jsonl`` from two readers' labels (``readers``) and a
    decision for each of their disagreements (each decision one of the two readings, with its reason). An item's
    label is the readers' where they agree; the cited documents of an engaged item are those either reader cited
    who found it engaged. Refuses (nothing written) a missing, extra or invalid decision. Readers other than
    reader_a and reader_b are named on every decision written (``readers``), so :func:`check_adjudicated` knows
    whose labels the adjudicated ones follow from."""
    items_dir = Path(items_dir)
    check_readers(readers)
    with file_lock(items_dir / "labels" / LABELS_LOCK):
        labels, decided, problems = _decide(items_dir, Path(decisions_path), readers)
        if readers != READERS:
            decided = [d.model_copy(update={"readers": readers}) for d in decided]
        if problems:
            raise CheckFailed(f"{decisions_path}: {len(problems)} problem(s), nothing written: {problems[0]}", problems)
        write_jsonl(
            items_dir / "labels" / f"{ADJUDICATED}.jsonl",
            [lab.model_dump(mode="json", exclude_none=True) for lab in labels],
        )
        write_jsonl(
            items_dir / "adjudication.jsonl",
            [d.model_dump(mode="json", exclude={"schema_version"}, exclude_none=True) for d in decided],
        )
    return {"n": len(labels), "decided": len(decided)}


def adjudicated_readers(items_dir: Path) -> tuple[str, str]:
    """Whose labels ``adjudication.jsonl`` settled: the ``readers`` its decisions name, else reader_a and reader_b."""
    path = items_dir / "adjudication.jsonl"
    for _, row in iter_jsonl(path) if path.is_file() else ():
        named = row.get("readers")
        if named is not None:
            try:
                return check_readers(tuple(named) if isinstance(named, list) else named)
            except BadInput as exc:
                raise CheckFailed(f"{path}:1: readers {named!r}: {exc}") from None
        break
    return READERS


def check_readers(readers: Any) -> tuple[str, str]:
    """Two different readers' safe names, neither ``adjudicated`` (BadInput, one line, otherwise)."""
    if not isinstance(readers, tuple) or len(readers) != 2 or not all(isinstance(r, str) for r in readers):
        raise BadInput("name two readers")
    try:
        for r in readers:
            check_safe_name(r, "reader name")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if readers[0] == readers[1] or ADJUDICATED in readers:
        raise BadInput(f"adjudicate two different readers, neither {ADJUDICATED!r} (got {readers[0]}, {readers[1]})")
    return readers


def check_adjudicated(items_dir: str | Path) -> None:
    """CheckFailed, one line, unless ``labels/adjudicated.jsonl`` (when there is one) is exactly what
    :func:`adjudicate` derives from ``labels/reader_a.jsonl``, ``labels/reader_b.jsonl`` and
    ``adjudication.jsonl`` as they are now: a hand-written file, one left stale by a reader imported again, or
    decisions edited since, would override every reader."""
    from backtest.analysis.reading.items import read_labels

    items_dir = Path(items_dir)
    written = items_dir / "labels" / f"{ADJUDICATED}.jsonl"
    if not written.is_file():
        return
    again = f"`backtest annotate adjudicate {items_dir} --decisions DECISIONS`"
    readers = adjudicated_readers(items_dir)
    needed = [items_dir / "labels" / f"{readers[0]}.jsonl", items_dir / "labels" / f"{readers[1]}.jsonl"]
    needed.append(items_dir / "adjudication.jsonl")
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        raise CheckFailed(
            f"{written}: {', '.join(missing)} missing, so the adjudicated labels cannot be checked to follow from "
            f"the readers' labels and the decisions; they are written only by {again}"
        )
    derived, _, problems = _decide(items_dir, items_dir / "adjudication.jsonl", readers)
    if problems:
        raise CheckFailed(
            f"{written}: adjudication.jsonl no longer settles the readers' disagreements ({problems[0]}); a reader "
            f"was imported again since, or the decisions were edited: decide again with {again}"
        )
    have = {lab.item_id: lab for lab in read_labels(written)}
    derived_ids = {lab.item_id for lab in derived}
    differ = sorted({lab.item_id for lab in derived if have.get(lab.item_id) != lab} | (set(have) - derived_ids))
    if differ:
        raise CheckFailed(
            f"{written}: {differ[0]} is not what the readers' labels and adjudication.jsonl give "
            f"({len(differ)} item(s) differ): a stale or hand-written file; write it with {again}"
        )
