"""Blinded exports: ``annotate export``, items from scored runs or pairs from arenas.

``export_items`` draws (question, documents shown) cases from one or more run folders, blinds them (no system
names, shuffled, ids ``item001``...) and writes:

* ``items.jsonl`` -- the items (see :mod:`backtest.analysis.reading.items`);
* ``items.md`` -- the items as readers read them;
* ``sheet.csv`` -- a blank sheet: item_id, outcome, premise_status, confidence, cited, notes;
* ``codebook.md`` -- the codebook readers follow (when one is given or found);
* ``decode.json`` -- private: item -> run, system, question_id and the run judge's labels, and the sampling
  design. Readers must not see it.

Items are split evenly over the runs (``n``) or drawn ``per_run`` from each; within a run they are drawn at
random (seeded), or, with ``stratify="outcome"``, round-robin over the run judge's outcome labels so that rare
labels are represented. ``export_pairs`` does the same for arena contexts (``pairs.jsonl``, ``guide.md``).
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TypedDict

from backtest.analysis.outputs import Decode, RunSample, SampleDesign, StratumSample
from backtest.analysis.reading.items import AnnotationItem, PairItem, PairQuestion, ShownDocument
from backtest.analysis.reading.sample import (
    RunMaterial,
    blind_question,
    check_numbering,
    draw,
    item_id,
    load_run_material,
    quotas,
    shown_sha256_of,
)
from backtest.analysis.reading.sheets import PAIR_SHEET_COLUMNS, SHEET_COLUMNS
from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_text_file, write_jsonl
from backtest.core.html import markdown_text
from backtest.core.records import parse_record, write_output

if TYPE_CHECKING:
    from backtest.arena.contexts import ArenaContext
    from backtest.corpus.store import PastCorpus

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


class PairExportSummary(TypedDict):
    """:func:`export_pairs`: the folder written and the number of pairs."""

    out: str
    n: int


class ExportSummary(PairExportSummary):
    """:func:`export_items`: the folder written, the number of items and how many came from each run."""

    per_run: dict[str, int]


def prepare_out(out: Path) -> None:
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
) -> ExportSummary:
    """Draw blinded items from the runs into ``out``; return a summary (counts per run).

    ``per_run``: a simple random sample of that many questions from every run (all of a smaller run), the
    design an estimate (:mod:`backtest.analysis.estimate`) needs; ``n``: that many items split evenly over
    the runs. Either way the draw is seeded (:func:`~backtest.analysis.reading.sample.draw`) and ``decode.json``
    records its design (each run's population, the question ids drawn, the inclusion probability or, stratified,
    the strata; the frozen set each run scored and the hash of what its sample shows). Items are numbered from
    ``first_item``, so exports made in batches can share one numbering (their items.jsonl, sheets and decode
    files then concatenate without clashes)."""
    _check_draw(n, per_run, stratify, first_item)
    if not run_dirs:
        raise BadInput("give at least one run folder")
    out = Path(out)
    prepare_out(out)
    runs = [Path(r) if Path(r).is_absolute() or Path(r).exists() else ws.root / r for r in run_dirs]
    if len({r.resolve() for r in runs}) != len(runs):
        raise BadInput("a run folder is given twice")
    run_quotas = quotas(n, len(runs)) if n is not None else [per_run or 0] * len(runs)
    materials = [load_run_material(run_dir, ws, with_text=True) for run_dir in runs]
    strata = [m.strata(stratify) for m in materials]
    picked, order = draw(strata, run_quotas, seed)
    check_numbering(first_item, len(order))
    samples = {m.name: _run_sample(m, s, indexes, stratify) for m, s, indexes in zip(materials, strata, picked)}
    items, decode = _blinded_items(materials, order, first_item)
    design = SampleDesign(
        kind="stratified" if stratify else "srs", seed=seed, per_run=per_run, n=n, stratify=stratify, runs=samples
    )
    meta = {"kind": "items", "n": len(items), "seed": seed, "stratify": stratify, "first_item": first_item}
    meta |= {"runs": [m.name for m in materials], "design": design.model_dump(mode="json", exclude_none=True)}
    write_export(out, items, SHEET_COLUMNS, decode, _codebook_text(codebook), "codebook.md", meta)
    return ExportSummary(
        out=str(out),
        n=len(items),
        per_run={m.name: sum(1 for v in decode.values() if v["run"] == m.name) for m in materials},
    )


def _check_draw(n: int | None, per_run: int | None, stratify: str | None, first_item: int) -> None:
    """BadInput, one line, unless exactly one of ``n`` and ``per_run`` is given, at least 1, with a known
    ``stratify`` and a ``first_item`` of at least 1."""
    if first_item < 1:
        raise BadInput("--first-item must be at least 1")
    if (n is None) == (per_run is None):
        raise BadInput("give one of --n (items split over the runs) or --per-run (a sample of each run)")
    if (n if n is not None else per_run) < 1:  # type: ignore[operator]
        raise BadInput(f"--{'n' if n is not None else 'per-run'} must be at least 1")
    if stratify not in (None, "outcome"):
        raise BadInput(f"unknown --stratify {stratify!r} (known: outcome)")


def _run_sample(
    material: RunMaterial, strata: dict[str, list[int]], indexes: list[int], stratify: str | None
) -> RunSample:
    """What ``decode.json`` records of one run's sample: its population and the question ids drawn, with the
    strata (stratified) or the inclusion probability, the frozen set scored and the hash of what it shows."""
    population = sum(len(v) for v in strata.values())
    ids = [material.questions[i].question_id for i in indexes]
    if stratify:
        chosen = set(indexes)
        return RunSample(
            population=population,
            sampled=ids,
            strata={
                s: StratumSample(
                    population=len(v), sampled=[material.questions[i].question_id for i in v if i in chosen]
                )
                for s, v in sorted(strata.items())
            },
        )
    return RunSample(
        population=population,
        sampled=ids,
        inclusion_probability=len(ids) / population if population else 0.0,
        frozen_seal=material.run.frozen_seal,
        shown_sha256=shown_sha256_of(material, ids),
    )


def _blinded_items(
    materials: Sequence[RunMaterial], order: Sequence[tuple[int, int]], first_item: int
) -> tuple[list[AnnotationItem], dict[str, dict[str, str | None]]]:
    """The items in draw order, numbered from ``first_item`` (blinded: the question's id is the item's), and the
    private decode entry of each: the run, system and question it came from and the run judge's labels."""
    items: list[AnnotationItem] = []
    decode: dict[str, dict[str, str | None]] = {}
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
            "judge": material.run.judge.name,
            "judge_outcome": judgment.outcome,
            "judge_premise_status": judgment.premise_status,
        }
    return items, decode


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


def write_export(
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
) -> PairExportSummary:
    """Draw ``n`` blinded pairs (split evenly over the arenas) from arenas' ``contexts.jsonl`` into ``out``.

    The context papers come from each arena's instance (``instance_id``, else the
    ``results/<instance>/`` the arena folder lies in), clipped as the arena shows them.
    """
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
    prepare_out(out)
    drawn = _draw_pairs(ws, dirs, n, seed, instance_id)
    check_numbering(first_item, len(drawn))
    pairs, decode = [], {}
    for k, (arena_dir, inst, ctx, sa, sb, past) in enumerate(drawn, start=first_item):
        item = item_id(k)
        pairs.append(_pair_item(item, ctx, sa, sb, past))
        decode[item] = {
            "arena": ws.relative(arena_dir),
            "instance": inst,
            "context_id": ctx.context_id,
            "a": sa,
            "b": sb,
            "a_question_id": ctx.outputs[sa].question_id,
            "b_question_id": ctx.outputs[sb].question_id,
        }
    meta = {"kind": "pairs", "n": len(pairs), "seed": seed, "first_item": first_item}
    meta["arenas"] = [ws.relative(d) for d in dirs]
    write_export(out, pairs, PAIR_SHEET_COLUMNS, decode, PAIR_GUIDE, "guide.md", meta)
    return PairExportSummary(out=str(out), n=len(pairs))


def _draw_pairs(
    ws, dirs: Sequence[Path], n: int, seed: int, instance_id: str | None
) -> list[tuple[Path, str, ArenaContext, str, str, PastCorpus]]:
    """The seeded draw: ``n`` contexts split evenly over the arenas, drawn without replacement, and two of each
    context's systems at random, shuffled; each as (arena folder, instance, context, system a, system b, the
    instance's past corpus)."""
    from backtest.arena.contexts import ArenaContext
    from backtest.corpus.instance import load_instance, open_past_corpus

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
    return drawn


def _pair_item(item: str, ctx: ArenaContext, sa: str, sb: str, past: PastCorpus) -> PairItem:
    """The blinded pair: the context's papers as the arena shows them (clipped), and systems ``sa`` and ``sb``'s
    questions as a and b, each with its premise."""
    from backtest.arena.contexts import MAX_ABSTRACT_CHARS, MAX_CONTEXT_PAPERS

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
    return PairItem(item_id=item, context=docs, a=sides["a"], b=sides["b"])
