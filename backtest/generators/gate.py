"""``evidence_graph``'s reading gate: candidates ranked, read in blinded batches, decisions recorded (issue 40).

A gate folder (``gates/<instance>/`` in this repository) holds, per batch ``batch-NNN/``:

* ``items.jsonl`` / ``items.md`` — the blinded review items (:class:`~backtest.generators.outputs.ReviewItem`):
  the claim sentences with their papers' titles and dates, the proposed type with its definition, and why they
  were paired; no paper id, no channel, no score;
* ``guide.md`` — how to decide; ``sheet.csv`` — one row an item: ``item_id,decision,type,reason,notes``;
* ``decode.json`` — private (:class:`~backtest.generators.outputs.ReviewDecode`): which candidate each item is,
  whether it was drawn by rank or at random, the corpus seal;

and ``decisions/batch-NNN.jsonl``, one :class:`~backtest.generators.outputs.GateDecision` a line, written once by
:func:`import_sheet` and never edited.

**The ranker** orders the unread candidates by the probability that a reader accepts them: a Beta prior per rule
(the channel's or, for author-stated phrasing, the rule's prior from the coded full-text studies), updated by the
decisions so far on that rule (:func:`acceptance`); ties by the candidate's strength, then its id. About one item
in ten (``random_share``) is drawn uniformly at random from the whole unread pool instead, so each channel's
precision at the gate is estimated without the ranker's bias (:func:`yield_table` uses only those).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_json, write_json
from backtest.core.records import parse_record
from backtest.core.seal import sha256_file
from backtest.core.stats import proportion
from backtest.generators.candidates import AUTHOR_RULES, TYPE_DEFINITIONS
from backtest.generators.outputs import (
    REJECT_REASONS,
    TENSION_TYPES,
    Candidate,
    DrawnItem,
    GateDecision,
    GateLabel,
    ReviewDecode,
    ReviewItem,
)

#: the prior probability that a reader accepts a candidate, by channel (author-stated rules carry their own)
CHANNEL_PRIOR = {
    "author_stated": 0.6,
    "numeric_stance": 0.6,
    "single_dataset": 0.35,
    "structural": 0.1,
    "dense_neighbour": 0.05,
}
RULE_PRIOR = {rule: prior for rule, _, prior, _ in AUTHOR_RULES} | {"one_data_set_in_abstract": 0.25}
PRIOR_WEIGHT = 4.0  # pseudo-decisions the prior is worth
RANDOM_SHARE = 0.1
SHEET_FIELDS = ("item_id", "decision", "type", "reason", "notes")
M = TypeVar("M", bound=BaseModel)


def prior(candidate: Candidate) -> float:
    """The acceptance prior of ``candidate``'s rule (author-stated) or channel."""
    return RULE_PRIOR.get(candidate.rule, CHANNEL_PRIOR[candidate.channel])


def acceptance(candidates: list[Candidate], decisions: list[GateDecision]) -> dict[str, float]:
    """Each candidate's probability of acceptance: the posterior mean of its rule's Beta prior after the decisions
    on that rule (``(w p + accepted) / (w + read)``, w = :data:`PRIOR_WEIGHT`)."""
    read: defaultdict[tuple[str, str], int] = defaultdict(int)
    accepted: defaultdict[tuple[str, str], int] = defaultdict(int)
    for d in decisions:
        read[(d.channel, d.rule)] += 1
        accepted[(d.channel, d.rule)] += d.decision == "accept"
    out = {}
    for c in candidates:
        key = (c.channel, c.rule)
        out[c.candidate_id] = round((PRIOR_WEIGHT * prior(c) + accepted[key]) / (PRIOR_WEIGHT + read[key]), 6)
    return out


# --------------------------------------------------------------------------- folders


def batches(gate: Path, prefix: str = "batch") -> list[Path]:
    """The batch folders of a gate (``batch-NNN``, or ``claims-NNN`` with that prefix), in order."""
    return sorted(p for p in gate.glob(f"{prefix}-[0-9][0-9][0-9]") if p.is_dir())


def read_batch_decode(batch: Path, model: type[M], what: str) -> M:
    """A batch's ``decode.json`` as ``model`` (BadInput naming the file otherwise)."""
    path = batch / "decode.json"
    if not path.is_file():
        raise BadInput(f"{batch}: not a {what} (no decode.json)")
    return parse_record(model, read_json(path), str(path))


def read_decode(batch: Path) -> ReviewDecode:
    """A review batch's ``decode.json``."""
    return read_batch_decode(batch, ReviewDecode, "review batch")


def batch_files(folder: Path, prefix: str) -> list[Path]:
    """The record files ``folder/<prefix>-*.jsonl``, in order (none when the folder is missing)."""
    return sorted(folder.glob(f"{prefix}-*.jsonl")) if folder.is_dir() else []


def read_batch_records(folder: Path, prefix: str, model: type[M]) -> list[M]:
    """Every record of ``folder``'s batch files, batch by batch, in the order they were written."""
    return [parse_record(model, row, f"{p}:{n}") for p in batch_files(folder, prefix) for n, row in iter_jsonl(p)]


def files_sha256(folder: Path, prefix: str) -> str | None:
    """The sha256 of ``folder``'s batch files, in order (name and file hash each), or None without any."""
    from backtest.core.seal import sha256_json

    files = batch_files(folder, prefix)
    return sha256_json([[p.name, sha256_file(p)] for p in files]) if files else None


def read_decisions(gate: Path) -> list[GateDecision]:
    """Every decision of a gate, batch by batch, in the order they were written."""
    return read_batch_records(gate / "decisions", "batch", GateDecision)


def decisions_sha256(gate: Path) -> str | None:
    """The sha256 of the gate's decision files, or None without any."""
    return files_sha256(gate / "decisions", "batch")


def check_decisions(
    decisions: list[GateDecision], candidates: list[Candidate], past_seal: str, where: str
) -> dict[str, Candidate]:
    """``{candidate_id: candidate}`` of the decided candidates; BadInput (one line) for a decision on another
    corpus, an unknown candidate or one whose content changed since it was read."""
    by_id = {c.candidate_id: c for c in candidates}
    out = {}
    for d in decisions:
        if d.past_seal != past_seal:
            raise BadInput(
                f"{where}: decision on {d.candidate_id} ({d.item_id}) was made on another corpus (past seal "
                f"{d.past_seal[:12]}, this instance's {past_seal[:12]})"
            )
        c = by_id.get(d.candidate_id)
        if c is None:
            raise BadInput(f"{where}: decision on unknown candidate {d.candidate_id} ({d.item_id})")
        if c.content_sha256 != d.content_sha256:
            raise BadInput(
                f"{where}: candidate {d.candidate_id} ({d.item_id}) changed since it was read (content sha256 "
                f"{d.content_sha256[:12]} read, {c.content_sha256[:12]} now); read it again"
            )
        out[d.candidate_id] = c
    return out


# --------------------------------------------------------------------------- export


def review_item(item_id: str, c: Candidate) -> ReviewItem:
    """The blinded item a reader sees for candidate ``c``."""
    roles = ["earlier", "later"] if len(c.claims) == 2 else ["claim"]
    if c.earlier_outside_corpus:
        roles = ["later"]
    return ReviewItem(
        item_id=item_id,
        proposed_type=c.proposed_type,
        type_definition=TYPE_DEFINITIONS[c.proposed_type],
        why=c.why,
        claims=[
            {"role": role, "date": s.date, "title": s.title, "sentence": s.sentence} for role, s in zip(roles, c.claims)
        ],
        earlier_outside_corpus=c.earlier_outside_corpus,
    )


def draw_batch(
    candidates: list[Candidate],
    taken: set[str],
    decisions: list[GateDecision],
    size: int,
    seed: int,
    batch: str,
    random_share: float = RANDOM_SHARE,
) -> list[tuple[Candidate, str, float]]:
    """The next batch: ``(candidate, "ranked"|"random", priority)``, shuffled. ``round(size * random_share)``
    candidates are drawn uniformly from the unread pool (seeded by ``seed`` and the batch name), the rest are the
    pool's best by :func:`acceptance` (ties: strength, then id)."""
    pool = [c for c in candidates if c.candidate_id not in taken]
    if not pool:
        return []
    p = acceptance(pool, decisions)
    rng = random.Random(f"{seed}:{batch}")
    n = min(size, len(pool))
    n_random = min(n, round(n * random_share))
    chosen_random = rng.sample(sorted(pool, key=lambda c: c.candidate_id), n_random)
    ids = {c.candidate_id for c in chosen_random}
    ranked = sorted(
        (c for c in pool if c.candidate_id not in ids),
        key=lambda c: (-p[c.candidate_id], -(c.strength or 0.0), c.candidate_id),
    )[: n - n_random]
    drawn = [(c, "random", p[c.candidate_id]) for c in chosen_random] + [
        (c, "ranked", p[c.candidate_id]) for c in ranked
    ]
    rng.shuffle(drawn)
    return drawn


def export_batch(
    gate: Path,
    instance_id: str,
    past_seal: str,
    candidates: list[Candidate],
    size: int,
    seed: int,
    random_share: float = RANDOM_SHARE,
) -> Path | None:
    """Write the next review batch under ``gate`` (``batch-NNN/``); None when every candidate is read or out."""
    decisions = read_decisions(gate)
    check_decisions(decisions, candidates, past_seal, str(gate))
    taken = {d.candidate_id for d in decisions}
    existing = batches(gate)
    for b in existing:
        decode = read_decode(b)
        if decode.past_seal != past_seal:
            raise BadInput(f"{b}: a review batch of another corpus (past seal {decode.past_seal[:12]})")
        taken |= {i.candidate_id for i in decode.items}
    name = f"batch-{len(existing) + 1:03d}"
    drawn = draw_batch(candidates, taken, decisions, size, seed, name, random_share)
    if not drawn:
        return None
    folder = gate / name
    items = [review_item(f"{name[-3:]}-{k:03d}", c) for k, (c, _, _) in enumerate(drawn, 1)]
    decode = ReviewDecode(
        instance=instance_id,
        past_seal=past_seal,
        batch=name,
        seed=seed,
        random_share=random_share,
        n_candidates=len(candidates),
        n_read_before=len(decisions),
        items=[
            DrawnItem(
                item_id=item.item_id,
                candidate_id=c.candidate_id,
                content_sha256=c.content_sha256,
                channel=c.channel,
                rule=c.rule,
                drawn=how,
                priority=pri,
            )
            for item, (c, how, pri) in zip(items, drawn)
        ],
    )
    atomic_write_text(folder / "items.jsonl", "".join(i.model_dump_json() + "\n" for i in items))
    atomic_write_text(folder / "items.md", items_markdown(name, items))
    atomic_write_text(folder / "guide.md", GUIDE)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SHEET_FIELDS)
    writer.writerows([i.item_id, "", "", "", ""] for i in items)
    atomic_write_text(folder / "sheet.csv", buf.getvalue())
    write_json(folder / "decode.json", decode.model_dump(mode="json"))
    return folder


def items_markdown(batch: str, items: Iterable[ReviewItem]) -> str:
    """The review items as one Markdown file (for reading; ``items.jsonl`` holds the same)."""
    lines = [f"# evidence-graph review, {batch}", "", "Decide each item per `guide.md`; record it in `sheet.csv`.", ""]
    for item in items:
        lines += [f"## {item.item_id}", "", f"**Proposed type:** {item.proposed_type} — {item.type_definition}", ""]
        lines += [f"**Why paired:** {item.why}", ""]
        for c in item.claims:
            lines += [f'- *{c["role"]}* ({c["date"]}, "{c["title"]}"): {c["sentence"]}']
        if item.earlier_outside_corpus:
            lines += ["- *earlier*: outside the corpus (the later paper cites it; not shown)"]
        lines += [""]
    return "\n".join(lines)


GUIDE = f"""# How to decide (evidence-graph reading gate)

Each item is a *candidate tension* that a machine rule proposed from paper abstracts published up to the
instance's cutoff. Read the claim sentence(s), the papers' titles and dates, the proposed type and why they were
paired. Decide whether it is a **real tension worth a research question** of one of these four types:

{chr(10).join(f"- `{t}`: {d}." for t, d in TYPE_DEFINITIONS.items())}

**Accept** (`decision=accept`, `type=` one of the four) only when the sentences themselves show the tension: the
later authors set their result against an earlier one, two findings disagree, a method an earlier finding rests
on is challenged, or a finding rests on one data set. You may accept with another type than the proposed one.
A candidate with only a later sentence ("earlier: outside the corpus") is acceptable when that sentence states
both its own result and the earlier result or view it disagrees with clearly enough to ask about.

**Reject** (`decision=reject`, `reason=` one of): {", ".join(f"`{r}`" for r in REJECT_REASONS)}:

- `topic_neighbours`: the sentences share a topic, not a premise; the later one does not bear on the earlier;
- `not_a_finding`: a method description, an aim, background, a prediction or a simulation's output, not a result;
- `same_result_restated`: the two agree, or say the same thing;
- `same_authors`: the "disagreement" is within one group's own work;
- `unintelligible`: cannot be understood from what is shown;
- `other`: say why in `notes`.

"Same topic is not tension." A result that merely differs from a model or is "surprising" is not a tension with
earlier *work* unless the sentence says which earlier result or view it contradicts. Use only what is shown.
"""


# --------------------------------------------------------------------------- import


def row_decision(row: dict[str, str], where: str) -> tuple[str, str | None, str | None, str]:
    decision = (row.get("decision") or "").strip().lower()
    kind = (row.get("type") or "").strip() or None
    reason = (row.get("reason") or "").strip() or None
    notes = " ".join((row.get("notes") or "").split())
    if decision not in ("accept", "reject"):
        raise BadInput(f"{where}: decision must be accept or reject, not {decision!r}")
    if decision == "accept" and kind not in TENSION_TYPES:
        raise BadInput(f"{where}: an accepted item needs a type, one of {', '.join(TENSION_TYPES)} (got {kind!r})")
    if decision == "reject" and reason not in REJECT_REASONS:
        raise BadInput(f"{where}: a rejected item needs a reason, one of {', '.join(REJECT_REASONS)} (got {reason!r})")
    return decision, kind if decision == "accept" else None, reason if decision == "reject" else None, notes


def desk_rows(path: Path) -> Iterable[tuple[int, dict[str, str]]]:
    """The reading desk's labels file of a batch (:class:`~backtest.generators.outputs.GateLabel` lines) as the
    sheet's rows (``annotate serve`` writes it; ``gate import`` takes it as it takes ``sheet.csv``)."""
    for lineno, obj in iter_jsonl(path):
        label = parse_record(GateLabel, obj, f"{path}:{lineno}")
        yield lineno, {k: v or "" for k, v in label.model_dump(include=set(SHEET_FIELDS)).items()}


def import_sheet(
    gate: Path,
    batch: Path,
    sheet: Path,
    reader: str,
    candidates: list[Candidate],
    past_seal: str,
    now: dt.datetime | None = None,
) -> Path:
    """Check a filled ``sheet.csv`` of ``batch`` and write its decisions to ``gate/decisions/<batch>.jsonl``.

    Refused with one line: a batch of another corpus, an item the batch does not hold, a candidate that changed
    since it was exported, a row left undecided, an item decided twice, or a batch already imported."""
    from backtest.core.records import check_safe_name

    check_safe_name(reader, "reader")
    decode = read_decode(batch)
    if decode.past_seal != past_seal:
        raise BadInput(
            f"{batch}: a review batch of another corpus (past seal {decode.past_seal[:12]}, this "
            f"instance's {past_seal[:12]})"
        )
    out = gate / "decisions" / f"{decode.batch}.jsonl"
    if out.exists():
        raise BadInput(f"{out}: this batch's decisions are already recorded (decisions are never edited)")
    drawn = {i.item_id: i for i in decode.items}
    by_id = {c.candidate_id: c for c in candidates}
    stamp = (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows: dict[str, GateDecision] = {}
    with open(sheet, newline="", encoding="utf-8") as handle:
        sheet_rows = desk_rows(sheet) if sheet.suffix == ".jsonl" else enumerate(csv.DictReader(handle), 2)
        for lineno, row in sheet_rows:
            where = f"{sheet}:{lineno}"
            item_id = (row.get("item_id") or "").strip()
            if item_id not in drawn:
                raise BadInput(f"{where}: item {item_id!r} is not in {batch.name}")
            if item_id in rows:
                raise BadInput(f"{where}: item {item_id} decided twice")
            d = drawn[item_id]
            c = by_id.get(d.candidate_id)
            if c is None or c.content_sha256 != d.content_sha256:
                raise BadInput(
                    f"{where}: candidate of {item_id} is unknown or changed since {batch.name} was "
                    "exported; export a new batch"
                )
            decision, kind, reason, notes = row_decision(row, where)
            rows[item_id] = GateDecision(
                candidate_id=d.candidate_id,
                content_sha256=d.content_sha256,
                past_seal=past_seal,
                batch=decode.batch,
                item_id=item_id,
                reader=reader,
                decided_at=stamp,
                decision=decision,
                type=kind,
                reason=reason,
                notes=notes,
                drawn=d.drawn,
                channel=d.channel,
                rule=d.rule,
            )
    missing = [i for i in drawn if i not in rows]
    if missing:
        raise BadInput(
            f"{sheet}: {len(missing)} item(s) of {batch.name} undecided (first {missing[0]}); a batch is imported whole"
        )
    ordered = [rows[i.item_id] for i in decode.items]
    atomic_write_text(out, "".join(d.model_dump_json() + "\n" for d in ordered))
    return out


# --------------------------------------------------------------------------- yield


def yield_table(decisions: list[GateDecision], candidates: list[Candidate]) -> dict:
    """What the gate read and accepted: by channel (proposed, read, accepted, and the precision of the random
    draws with its exact interval: unbiased whatever the ranker did; where a channel was read whole, accepted/read
    is its precision outright), by accepted type, and the yield curve (accepted against read, in reading order,
    overall, by channel and by type)."""
    proposed: defaultdict[str, int] = defaultdict(int)
    for c in candidates:
        proposed[c.channel] += 1
    channels: dict[str, dict] = {}
    for ch in sorted(proposed):
        mine = [d for d in decisions if d.channel == ch]
        rnd = [d for d in mine if d.drawn == "random"]
        rate = proportion(sum(d.decision == "accept" for d in rnd), len(rnd))
        channels[ch] = {
            "proposed": proposed[ch],
            "read": len(mine),
            "accepted": sum(d.decision == "accept" for d in mine),
            "random_read": len(rnd),
            "random_accepted": rate.k,
            "precision_random": rate.rate,
            "precision_random_ci95": list(rate.ci95),
        }
    by_type: defaultdict[str, int] = defaultdict(int)
    reasons: defaultdict[str, int] = defaultdict(int)
    for d in decisions:
        if d.decision == "accept":
            by_type[d.type or ""] += 1
        else:
            reasons[d.reason or ""] += 1
    curve = []
    acc = 0
    ch_read: defaultdict[str, int] = defaultdict(int)
    ch_acc: defaultdict[str, int] = defaultdict(int)
    type_acc: defaultdict[str, int] = defaultdict(int)
    for k, d in enumerate(decisions, 1):
        acc += d.decision == "accept"
        ch_read[d.channel] += 1
        if d.decision == "accept":
            ch_acc[d.channel] += 1
            type_acc[d.type or ""] += 1
        curve.append(
            {
                "read": k,
                "accepted": acc,
                "by_channel": {ch: [ch_read[ch], ch_acc[ch]] for ch in sorted(ch_read)},
                "by_type": dict(sorted(type_acc.items())),
            }
        )
    return {
        "candidates": len(candidates),
        "read": len(decisions),
        "accepted": sum(by_type.values()),
        "channels": channels,
        "accepted_by_type": dict(sorted(by_type.items())),
        "rejected_by_reason": dict(sorted(reasons.items())),
        "curve": curve,
    }


def yield_markdown(instance_id: str, table: dict) -> str:
    """:func:`yield_table` as Markdown: by channel, by type, the reasons for rejection and the yield curve in
    steps of 25 read."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.0f}%"

    lines = [f"# evidence_graph reading gate on {instance_id}", ""]
    lines += [f"{table['candidates']} candidates proposed, {table['read']} read, {table['accepted']} accepted.", ""]
    lines += [
        "| channel | proposed | read | accepted | random draws read | precision at the gate (random draws) [95%] |"
    ]
    lines += ["|---|---:|---:|---:|---:|---|"]
    for ch, row in table["channels"].items():
        lo, hi = row["precision_random_ci95"]
        lines += [
            f"| {ch} | {row['proposed']} | {row['read']} | {row['accepted']} | {row['random_read']} | "
            f"{pct(row['precision_random'])} ({row['random_accepted']}/{row['random_read']}) [{pct(lo)}, {pct(hi)}] |"
        ]
    lines += ["", "| accepted as | n |", "|---|---:|"] + [
        f"| {k} | {v} |" for k, v in table["accepted_by_type"].items()
    ]
    lines += ["", "| rejected because | n |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in table["rejected_by_reason"].items()]
    curve = table["curve"]
    steps = [p for p in curve if p["read"] % 25 == 0] + ([curve[-1]] if curve and curve[-1]["read"] % 25 else [])
    channels = list(table["channels"])
    types = sorted(table["accepted_by_type"])
    lines += ["", "Yield curve (in reading order; per channel accepted/read, per type accepted):", ""]
    lines += ["| read | accepted | " + " | ".join(channels + types) + " |"]
    lines += ["|" + "---:|" * (2 + len(channels) + len(types))]
    for p in steps:
        cells = [f"{p['by_channel'].get(ch, [0, 0])[1]}/{p['by_channel'].get(ch, [0, 0])[0]}" for ch in channels]
        cells += [str(p["by_type"].get(t, 0)) for t in types]
        lines += [f"| {p['read']} | {p['accepted']} | " + " | ".join(cells) + " |"]
    return "\n".join(lines) + "\n"
