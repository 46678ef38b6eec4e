"""The gate's second read: an annotator states each accepted tension's findings so that they stand on their own.

The reference paper's evidence graph was built from "37 annotated claims and 16 reviewed relation edges": its
claims were written by reading, not lifted. Held-out readers of the gated sets phrased from lifted clauses found a
fifth of the questions unintelligible ("the solution", "the funnel", a qualification without the claim it
qualifies; ``judges/validation/evidence-graph-v4``): a sentence leans on its abstract. So, after the gate, a
reader who sees the whole abstracts writes each accepted tension's findings as clauses that name their subject
(:class:`~backtest.generators.outputs.ClaimNote`), or says why it cannot be asked; ``generate evidence_graph
--reviewed DIR`` phrases the question from those clauses by the type's template.

A gate folder gains, per claims batch ``claims-NNN/``: ``items.jsonl`` / ``items.md`` (the accepted tensions, no
paper id, no channel), ``guide.md``, ``answers.jsonl`` (to fill: one
:class:`~backtest.generators.outputs.ClaimsAnswer` a line) and the private ``decode.json``; and
``claim-notes/claims-NNN.jsonl``, written once by :func:`import_answers` and never edited.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text, iter_jsonl, write_json
from backtest.core.records import check_safe_name, parse_record
from backtest.generators.candidates import TYPE_DEFINITIONS
from backtest.generators.extract import PaperClaims
from backtest.generators.gate import batches, files_sha256, read_batch_decode, read_batch_records
from backtest.generators.outputs import (
    MAX_FINDING_CHARS,
    Candidate,
    ClaimNote,
    ClaimsAnswer,
    ClaimsDecode,
    ClaimsDrawn,
    ClaimsItem,
    GateDecision,
)

NOTES = "claim-notes"


def claims_batches(gate: Path) -> list[Path]:
    """The claims batch folders of a gate, in order."""
    return batches(gate, "claims")


def read_claims_decode(batch: Path) -> ClaimsDecode:
    return read_batch_decode(batch, ClaimsDecode, "claims batch")


def read_notes(gate: Path) -> list[ClaimNote]:
    """Every claim note of a gate, batch by batch."""
    return read_batch_records(gate / NOTES, "claims", ClaimNote)


def notes_sha256(gate: Path) -> str | None:
    """The sha256 of the gate's claim-note files, or None without any."""
    return files_sha256(gate / NOTES, "claims")


def check_notes(notes: list[ClaimNote], decisions: list[GateDecision], where: str) -> dict[str, ClaimNote]:
    """``{candidate_id: note}``; BadInput (one line) for a note on a candidate that was not accepted, was accepted
    with another type or on other content, or was noted twice."""
    accepted = {d.candidate_id: d for d in decisions if d.decision == "accept"}
    out: dict[str, ClaimNote] = {}
    for n in notes:
        d = accepted.get(n.candidate_id)
        if d is None or d.content_sha256 != n.content_sha256 or d.type != n.type:
            raise BadInput(f"{where}: claim note {n.item_id} is on no accepted candidate ({n.candidate_id})")
        if n.candidate_id in out:
            raise BadInput(f"{where}: candidate {n.candidate_id} noted twice ({n.item_id})")
        out[n.candidate_id] = n
    return out


def claims_item(item_id: str, c: Candidate, d: GateDecision, papers: dict[str, PaperClaims]) -> ClaimsItem:
    roles = ["earlier", "later"] if len(c.claims) == 2 else ["claim"]
    if c.earlier_outside_corpus:
        roles = ["later"]
    assert d.type is not None
    return ClaimsItem(
        item_id=item_id,
        type=d.type,
        type_definition=TYPE_DEFINITIONS[d.type],
        claims=[
            {
                "role": role,
                "date": s.date,
                "title": s.title,
                "sentence": s.sentence,
                "abstract": papers[s.paper_id].record.abstract if s.paper_id in papers else "",
            }
            for role, s in zip(roles, c.claims)
        ],
        earlier_outside_corpus=c.earlier_outside_corpus,
        gate_note=d.notes,
    )


def export_claims(
    gate: Path,
    instance_id: str,
    past_seal: str,
    decisions: list[GateDecision],
    decided: dict[str, Candidate],
    papers: dict[str, PaperClaims],
    size: int,
) -> Path | None:
    """Write the next claims batch (``claims-NNN/``): accepted candidates not yet noted nor waiting in a batch,
    in the order they were decided; None when there are none."""
    taken = {n.candidate_id for n in read_notes(gate)}
    existing = claims_batches(gate)
    for b in existing:
        decode = read_claims_decode(b)
        if decode.past_seal != past_seal:
            raise BadInput(f"{b}: a claims batch of another corpus (past seal {decode.past_seal[:12]})")
        taken |= {i.candidate_id for i in decode.items}
    todo = [d for d in decisions if d.decision == "accept" and d.candidate_id not in taken][:size]
    if not todo:
        return None
    name = f"claims-{len(existing) + 1:03d}"
    folder = gate / name
    items = [claims_item(f"c{name[-3:]}-{k:03d}", decided[d.candidate_id], d, papers) for k, d in enumerate(todo, 1)]
    decode = ClaimsDecode(
        instance=instance_id,
        past_seal=past_seal,
        batch=name,
        items=[
            ClaimsDrawn(item_id=i.item_id, candidate_id=d.candidate_id, content_sha256=d.content_sha256, type=i.type)
            for i, d in zip(items, todo)
        ],
    )
    atomic_write_text(folder / "items.jsonl", "".join(i.model_dump_json() + "\n" for i in items))
    atomic_write_text(folder / "items.md", claims_markdown(name, items))
    atomic_write_text(folder / "guide.md", CLAIMS_GUIDE)
    write_json(folder / "decode.json", decode.model_dump(mode="json"))
    return folder


def claims_markdown(batch: str, items: list[ClaimsItem]) -> str:
    lines = [f"# evidence-graph claims, {batch}", "", "State each item's findings per `guide.md`.", ""]
    for item in items:
        lines += [f"## {item.item_id}", "", f"**Type:** {item.type} — {item.type_definition}", ""]
        if item.gate_note:
            lines += [f"**Gate reader's note:** {item.gate_note}", ""]
        for c in item.claims:
            lines += [f'### {c["role"]} ({c["date"]}): "{c["title"]}"', "", f"**Sentence:** {c['sentence']}", ""]
            lines += [f"**Abstract:** {c['abstract']}", ""]
        if item.earlier_outside_corpus:
            lines += ["*earlier*: outside the corpus (the later paper sets itself against it; not shown)", ""]
    return "\n".join(lines)


CLAIMS_GUIDE = f"""# How to state the findings (evidence-graph claims)

Each item is a tension a gate reader accepted, with its type. A question will be asked about it by a fixed
template that quotes the findings you write, for example:

- observational: "Will independent data side with the later finding that LATER, or with the earlier finding
  that EARLIER?" (or, without an earlier finding: "Will independent data confirm the finding that LATER, which its
  authors set against earlier results?")
- methodological_challenge: "Does the finding that EARLIER hold once the problem a later study raises, that
  LATER, is accounted for?"
- independent_qualification: "Does the finding that EARLIER hold in general, or only as a later study qualifies
  it, that LATER?"
- single_dataset_conclusion: "Will independent data confirm the finding that LATER, so far drawn from DATA_SET
  alone?"

Write one line of `answers.jsonl` per item:
`{{"item_id": "c001-001", "askable": true, "earlier": "...", "later": "...", "data_set": "", "reason": ""}}`

- `later`: the later (or only) claim's finding; `earlier`: the earlier claim's finding. Where the earlier paper is
  outside the corpus, write the earlier result or view only if the later sentence or abstract says what it was,
  else leave it "". `methodological_challenge` and `independent_qualification` need both.
- Each finding is **one clause that stands on its own**, to follow "the finding that": it names its subject
  explicitly (the object, sample, quantity, instrument: "the Hubble constant from Cepheid-calibrated type Ia
  supernovae", not "the value", "this sample", "the two stars", "our model"), says what was found, and keeps any
  value and uncertainty the sentence gives. No "we", no "this/these/such" that points back into the abstract, no
  symbol left undefined. Start lower-case (unless a proper name or acronym), no final period, at most
  {MAX_FINDING_CHARS} characters.
- Use only what the sentence and its abstract say; do not add what you know from elsewhere, do not strengthen or
  soften the claim, do not say which side is right.
- `data_set` (single_dataset_conclusion only): the one data set, instrument, survey or sample the conclusion
  rests on, named so a researcher knows it ("the Kepler long-cadence light curves", "MUSE spectra of NGC 300";
  at most 100 characters).
- `askable: false` with a one-sentence `reason` when the findings cannot be stated that way from what is shown,
  or when, with the abstracts in view, the sentences turn out not to show the tension (say which).
"""


def import_answers(
    gate: Path,
    batch: Path,
    answers: Path,
    reader: str,
    decisions: list[GateDecision],
    past_seal: str,
    now: dt.datetime | None = None,
) -> Path:
    """Check an annotator's ``answers.jsonl`` for ``batch`` and write ``gate/claim-notes/<batch>.jsonl`` once.

    Refused with one line: a batch of another corpus, an item the batch does not hold, an item answered twice or
    left unanswered, an answer missing what its type needs, a batch already imported, or a candidate whose
    decision changed since the batch was exported."""
    check_safe_name(reader, "reader")
    decode = read_claims_decode(batch)
    if decode.past_seal != past_seal:
        raise BadInput(f"{batch}: a claims batch of another corpus (past seal {decode.past_seal[:12]})")
    out = gate / NOTES / f"{decode.batch}.jsonl"
    if out.exists():
        raise BadInput(f"{out}: this batch's claim notes are already recorded (they are never edited)")
    drawn = {i.item_id: i for i in decode.items}
    accepted = {(d.candidate_id, d.content_sha256, d.type) for d in decisions if d.decision == "accept"}
    stamp = (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    notes: dict[str, ClaimNote] = {}
    for lineno, row in iter_jsonl(answers):
        where = f"{answers}:{lineno}"
        answer = parse_record(ClaimsAnswer, row, where)
        item = drawn.get(answer.item_id)
        if item is None:
            raise BadInput(f"{where}: item {answer.item_id!r} is not in {batch.name}")
        if answer.item_id in notes:
            raise BadInput(f"{where}: item {answer.item_id} answered twice")
        if (item.candidate_id, item.content_sha256, item.type) not in accepted:
            raise BadInput(f"{where}: the decision on {answer.item_id} changed since {batch.name} was exported")
        stated = answer.model_dump(include={"earlier", "later"})
        fields = {k: " ".join(v.split()).rstrip(".") for k, v in stated.items()}
        notes[answer.item_id] = parse_record(
            ClaimNote,
            {
                "candidate_id": item.candidate_id,
                "content_sha256": item.content_sha256,
                "past_seal": past_seal,
                "batch": decode.batch,
                "item_id": answer.item_id,
                "reader": reader,
                "annotated_at": stamp,
                "type": item.type,
                "askable": answer.askable,
                **(fields if answer.askable else {}),
                "data_set": " ".join(answer.data_set.split()) if answer.askable else "",
                "reason": " ".join(answer.reason.split()),
                "schema_version": "1",
            },
            where,
        )
    missing = [i for i in drawn if i not in notes]
    if missing:
        raise BadInput(f"{answers}: {len(missing)} item(s) of {batch.name} unanswered (first {missing[0]})")
    atomic_write_text(out, "".join(notes[i.item_id].model_dump_json() + "\n" for i in decode.items))
    return out
