"""The draw of an annotation export, and the checks that its readers' labels belong to the runs they ground.

**The draw** (:func:`draw`): one seeded ``random.Random`` goes through the runs in the order they were given;
within each run, round-robin over its strata (one stratum, ``all``, for a simple random sample; the run judge's
outcome labels with ``--stratify outcome``) until the run's quota is taken; then the drawn (run, question) pairs
are shuffled and numbered ``item001``... from ``first_item``. A run's population is its frozen questions that
have both a retrieval and a judgment, in frozen order. ``annotate export`` draws with it; ``estimate`` draws
again with it.

**The checks** (:func:`verify_draws`), before any label of an export grounds a rate: for every batch of the
export (itself, or each batch a merge was made from), every run it drew from is read again and

* the run still scores the frozen set the export recorded (``frozen_seal``) and that set is intact;
* its population is the one recorded (else the labels are of another version of the run);
* the recorded sample is exactly what the seed draws from the run list and the runs' questions: no question
  listed twice, none left out or added, ``min(quota, N)`` of them, inclusion probability ``n / N``;
* every item id maps to the run and question the draw gave it;
* every sampled item in ``items.jsonl`` shows the run's question (blinded) and exactly the documents its
  retrieval showed the judge, in rank order, compared by ``shown_sha256`` (the hash a compact run keeps);
* where the export recorded it, the hash of what was shown (:func:`shown_sha256_of`) is recomputed from the
  run and must match.

Exports made before ``frozen_seal`` and ``shown_sha256`` were recorded are checked on everything else (the
re-drawn sample and ``items.jsonl`` against the run). Labels of another version of a run are BadInput (export
a new sample); an export whose files contradict the seed, each other or the run is CheckFailed.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, ValidationError

from backtest.analysis.outputs import Decode, RunSample
from backtest.analysis.reading.items import BLINDED_SYSTEM, AnnotationItem
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.records import (
    Judgment,
    Question,
    Retrieval,
    describe_validation_error,
)
from backtest.core.seal import sha256_json
from backtest.core.workspace import Workspace
from backtest.retrieve.compact import document_shown_sha256, shown_sha256
from backtest.scoring.outputs import Run

#: the highest item number an item id can carry (``item`` and at most six digits)
MAX_ITEM = 999_999


@dataclass
class RunMaterial:
    """One complete run as a draw sees it: RUN.json, its frozen questions (in frozen order), and its retrievals
    and judgments by question id (retrievals with their text, or compact, as read)."""

    folder: Path
    name: str  # the run folder relative to its workspace (how decode.json names it)
    run: Run
    questions: list[Question]
    retrievals: dict[str, Retrieval]
    judgments: dict[str, Judgment]

    def strata(self, stratify: str | None) -> dict[str, list[int]]:
        """The indexes of the questions that can be drawn (retrieved and judged), by stratum."""
        out: dict[str, list[int]] = defaultdict(list)
        for i, q in enumerate(self.questions):
            if q.question_id in self.retrievals and q.question_id in self.judgments:
                out[self.judgments[q.question_id].outcome if stratify else "all"].append(i)
        return out

    def shown(self, question_id: str) -> list[tuple[str, str | None, str]]:
        """What the judge was shown for one question: (id, date, shown_sha256) of each document in rank order."""
        return [
            (d.id, None if d.published is None else str(d.published), document_shown_sha256(d))
            for d in self.retrievals[question_id].documents
        ]


def load_run_material(run_dir: Path, ws: Workspace, with_text: bool) -> RunMaterial:
    """A complete run, its frozen set checked intact and the one RUN.json names (``with_text``: retrievals with
    their shown text, re-cut from the sealed corpus for a compact run; else as stored)."""
    from backtest.scoring.score import load_run_files
    from backtest.submit.freeze import load_frozen
    from backtest.validity.runfolder import RunFolder

    if with_text:
        run, retrievals, judgments, _ = load_run_files(run_dir)
    else:
        folder = RunFolder.open(run_dir)
        run = folder.run
        # the files as they were sealed when the run finished (load_run_files checks it too)
        folder.check_seal().require("retrieval.jsonl", "judgments.jsonl")
        retrievals, judgments = folder.retrievals(text=False), folder.judgments
    if run.status != "complete":
        raise BadInput(f"{run_dir}: run is not complete (status {run.status!r}); finish it with backtest score")
    bundle = load_frozen(ws.root / run.frozen_path)
    if bundle.frozen.seal != run.frozen_seal:
        raise CheckFailed(
            f"{run_dir}: RUN.json scores the frozen set sealed {run.frozen_seal[:12]}, but {run.frozen_path} is "
            f"sealed {bundle.frozen.seal[:12]}"
        )
    return RunMaterial(
        folder=run_dir,
        name=ws.relative(run_dir),
        run=run,
        questions=list(bundle.questions),
        retrievals={r.question_id: r for r in retrievals},
        judgments={j.question_id: j for j in judgments},
    )


# --------------------------------------------------------------------------- the draw


def quotas(n: int, k: int) -> list[int]:
    """``n`` split over ``k`` as evenly as can be (the first ones get one more)."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def _round_robin(keys_by_stratum: dict[str, list[Any]], quota: int, rng: random.Random) -> list[Any]:
    """Round-robin over strata (sorted by name), each shuffled by ``rng``, until ``quota`` are taken."""
    pools = {s: rng.sample(v, len(v)) for s, v in sorted(keys_by_stratum.items())}
    picked: list[Any] = []
    while len(picked) < quota and any(pools.values()):
        for s in sorted(pools):
            if pools[s] and len(picked) < quota:
                picked.append(pools[s].pop())
    return picked


def draw(
    strata: Sequence[dict[str, list[int]]], run_quotas: Sequence[int], seed: int
) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """The seeded draw (module docstring): per run, the question indexes drawn, in draw order; and every drawn
    (run index, question index) in item order."""
    rng = random.Random(seed)
    picked = [_round_robin(s, q, rng) for s, q in zip(strata, run_quotas)]
    order = [(r, i) for r, p in enumerate(picked) for i in p]
    rng.shuffle(order)
    return picked, order


def check_numbering(first_item: int, n: int) -> None:
    """BadInput when items ``first_item`` .. ``first_item + n - 1`` cannot all be numbered (``item999999`` last)."""
    if first_item < 1:
        raise BadInput("--first-item must be at least 1")
    if first_item + n - 1 > MAX_ITEM:
        raise BadInput(
            f"--first-item {first_item} with {n} item(s) would number past item{MAX_ITEM} (the last item id); "
            f"give --first-item {max(1, MAX_ITEM - n + 1)} or less"
        )


def item_id(k: int) -> str:
    """The id of item number ``k``."""
    return f"item{k:03d}"


def blind_question(question: Question, item: str) -> Question:
    """The question as readers and judges see it in an item: its id is the item id, its system hidden."""
    return question.model_copy(update={"question_id": item, "generation_system": BLINDED_SYSTEM})


def shown_sha256_of(material: RunMaterial, sampled: Sequence[str]) -> str:
    """The sha256 of what a run's sample showed its readers: each sampled question (as frozen) with the
    (id, date, shown_sha256) of every document its retrieval showed, in sample order."""
    by_id = {q.question_id: q for q in material.questions}
    return sha256_json(
        [
            {
                "question": by_id[q].model_dump(mode="json", exclude_none=True),
                "documents": [list(d) for d in material.shown(q)],
            }
            for q in sampled
        ]
    )


def item_shown(item: AnnotationItem) -> list[tuple[str, str | None, str]]:
    """What an item shows its readers, as :meth:`RunMaterial.shown` gives what the judge was shown."""
    return [
        (d.id, None if d.published is None else str(d.published), shown_sha256(d.title, d.abstract))
        for d in item.documents
    ]


# --------------------------------------------------------------------------- the checks


@dataclass(frozen=True)
class Batch:
    """One seeded draw an export holds: its seed, run list (in draw order), quotas and first item number."""

    seed: int
    runs: list[str]
    run_quotas: list[int]
    first_item: int
    stratify: str | None


class _BatchDesign(BaseModel):
    """What a batch's design must record to be drawn again (the rest of :class:`SampleDesign` is not read)."""

    seed: int | None = None
    per_run: int | None = None
    n: int | None = None
    stratify: str | None = None


class _BatchMeta(BaseModel):
    """What a ``decode.json`` (or one entry of its ``merged_from``) must record to be drawn again."""

    runs: list[str] | None = None
    seed: int | None = None
    n: int | None = None
    first_item: int | None = None
    stratify: str | None = None
    design: _BatchDesign | None = None
    merged_from: list[dict[str, Any]] | None = None


def batches(folder: Path, raw: dict[str, Any]) -> list[Batch]:
    """The draws behind an export's ``decode.json`` (as a dict): its own, or those of the batches it was merged
    from. CheckFailed when one records too little, or the wrong types, to be drawn again."""
    try:
        meta = _BatchMeta.model_validate(raw)
    except ValidationError as exc:
        why = describe_validation_error(exc)
        raise CheckFailed(f"{folder}/decode.json: a batch's settings are malformed ({why})") from None
    if meta.merged_from:
        return [b for m in meta.merged_from for b in batches(folder, m)]
    design = meta.design or _BatchDesign()
    seed = design.seed if design.seed is not None else meta.seed
    if not meta.runs or seed is None:
        raise CheckFailed(f"{folder}/decode.json: a batch records no seed or run list; its sample cannot be re-drawn")
    if design.per_run is not None:
        run_quotas = [design.per_run] * len(meta.runs)
    else:  # --n split over the runs: the number asked (recorded since), else the items written
        run_quotas = quotas(max(0, design.n or meta.n or 0), len(meta.runs))
    stratify = design.stratify or meta.stratify
    first = meta.first_item if meta.first_item is not None else 1
    return [Batch(seed, list(meta.runs), run_quotas, first, stratify)]


def verify_draws(
    folder: Path, decode: Decode, items: dict[str, AnnotationItem], ws: Workspace
) -> dict[str, RunMaterial]:
    """Check an export's recorded sample, item mapping and items against the runs it drew from, in ``ws``
    (module docstring); return every such run's material by name."""
    from backtest.core.records import output_dict

    design = decode.design
    assert design is not None
    meta = output_dict(decode)
    drawn_runs: set[str] = set()
    materials: dict[str, RunMaterial] = {}
    seen_items: set[str] = set()
    for batch in batches(folder, meta):
        clash = sorted(drawn_runs & set(batch.runs)) or [r for r in batch.runs if batch.runs.count(r) > 1]
        if clash:
            raise CheckFailed(f"{folder}/decode.json: run {clash[0]} is drawn from twice; one run, one sample")
        drawn_runs |= set(batch.runs)
        loaded = []
        for name in batch.runs:
            if name not in design.runs:
                raise CheckFailed(f"{folder}/decode.json: its design records no sample of {name}, which was drawn")
            run_dir = Path(name) if Path(name).is_absolute() else ws.root / name
            if not (run_dir / "RUN.json").is_file():
                raise BadInput(
                    f"{folder}: its sample of {name} cannot be drawn again: the run is not in {ws.root} (every run "
                    "an export drew from must be there to check the sample)"
                )
            material = load_run_material(run_dir, ws, with_text=False)
            material.name = name
            _check_version(folder, material, design.runs[name])
            loaded.append(material)
            materials[name] = material
        picked, order = draw([m.strata(batch.stratify) for m in loaded], batch.run_quotas, batch.seed)
        for material, indexes in zip(loaded, picked):
            _check_sample(
                folder, material, design.runs[material.name], [material.questions[i].question_id for i in indexes]
            )
        for k, (r, i) in enumerate(order, start=batch.first_item):
            item, material = item_id(k), loaded[r]
            question = material.questions[i]
            source = decode.items.get(item)
            if source is None or (source.run, source.question_id) != (material.name, question.question_id):  # type: ignore[union-attr]
                raise CheckFailed(
                    f"{folder}/decode.json: {item} should be {material.name} question {question.question_id}, as the "
                    "seed draws it; its items were moved between runs or questions"
                )
            seen_items.add(item)
            _check_item(folder, items, item, material, question)
    extra = sorted(set(design.runs) - drawn_runs) or sorted(set(decode.items) - seen_items)
    if extra:
        raise CheckFailed(f"{folder}/decode.json: {extra[0]} was not drawn by the seed the export records")
    return materials


def _check_version(folder: Path, material: RunMaterial, sample: RunSample) -> None:
    """BadInput when the recorded sample was drawn from another version of the run (another frozen set, or
    another number of judged questions)."""
    name, population = material.name, sum(len(v) for v in material.strata(None).values())
    if sample.frozen_seal is not None and sample.frozen_seal != material.run.frozen_seal:
        raise BadInput(
            f"{name}: the labels in {folder} were read from the frozen set sealed {sample.frozen_seal[:12]}; this "
            f"run now scores {material.run.frozen_seal[:12]} (another version); export a new sample"
        )
    if sample.population != population:
        raise BadInput(
            f"{name}: the labels in {folder} were drawn from {sample.population} questions of another version of "
            f"this run ({population} judged now); export a new sample"
        )


def _check_sample(folder: Path, material: RunMaterial, sample: RunSample, expected: list[str]) -> None:
    """CheckFailed unless the recorded sample is exactly the re-drawn one."""
    name, recorded = material.name, list(sample.sampled)
    twice = sorted({q for q in recorded if recorded.count(q) > 1})
    where = f"{name}: the sample recorded in {folder}/decode.json"
    if twice:
        raise CheckFailed(
            f"{where} lists question {twice[0]} {recorded.count(twice[0])} times; a sample draws each question once"
        )
    if len(recorded) != len(expected):
        raise CheckFailed(
            f"{where} holds {len(recorded)} questions where its seed draws {len(expected)} (min(quota, N)); "
            "a sample cannot be trimmed or padded"
        )
    if recorded != expected:
        other = next(q for q, e in zip(recorded, expected) if q != e)
        raise CheckFailed(
            f"{where} is not the one its seed draws from the run (question {other} differs); a sample cannot be chosen"
        )
    if sample.strata is None:
        share = len(expected) / sample.population if sample.population else 0.0
        if sample.inclusion_probability is None or abs(sample.inclusion_probability - share) > 1e-12:
            raise CheckFailed(
                f"{where} records inclusion probability {sample.inclusion_probability}, not n/N = {share}"
            )
    if sample.shown_sha256 is not None and sample.shown_sha256 != shown_sha256_of(material, recorded):
        raise CheckFailed(
            f"{where} records what was shown (shown_sha256) that this run's questions and retrieval no longer give; "
            "the run was re-scored or its files changed since the export: export a new sample"
        )


def _check_item(
    folder: Path, items: dict[str, AnnotationItem], item: str, material: RunMaterial, question: Question
) -> None:
    """CheckFailed unless ``items.jsonl`` shows ``item`` as the run showed its question to the judge."""
    shown = items.get(item)
    if shown is None:
        raise CheckFailed(f"{folder}/items.jsonl: no {item}, which decode.json draws from {material.name}")
    if shown.question != blind_question(question, item):
        raise CheckFailed(
            f"{folder}/items.jsonl: {item} does not show question {question.question_id} of {material.name} as "
            "frozen; its labels are of another question"
        )
    if item_shown(shown) != material.shown(question.question_id):
        raise CheckFailed(
            f"{folder}/items.jsonl: {item} does not show the documents {material.name} showed its judge for "
            f"{question.question_id} (ids, dates or text by shown_sha256); its labels are of other documents"
        )
