"""``generate evidence_graph --reviewed DIR``: the question set built from the reading gate's accepted candidates
only (``docs/generators.md``, "The evidence graph gated by reading").

Each accepted candidate is phrased for the type its reader gave it (from its annotator's stated findings where
the gate has claim notes, :mod:`backtest.generators.claim_notes`), in an order fixed by the seed, at most
``per_paper`` questions a source paper, no near-duplicates; the metadata says the gate was careful reading, what
it read and who read it.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtest.generators.claim_notes import check_notes, notes_sha256, read_notes
from backtest.generators.extract import PaperClaims
from backtest.generators.gate import check_decisions, decisions_sha256, read_decisions
from backtest.generators.outputs import Candidate, ClaimNote, GateDecision
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult, NothingToAsk
from backtest.generators.select import select_diverse
from backtest.generators.tension_questions import gated_draft
from backtest.generators.tensions import Tension

# Rules whose accepted candidates the gated set does not ask about without a claim note naming the data set, and
# why.
NOT_ASKED_RULES = {
    "one_data_set_in_abstract": "evidence-graph-v2's held-out readers found the one data set an abstract names is "
    "often not the data the finding rests on (VLBA, GMRT or polarimetry, which the lexicon does not know): 21 of "
    "its single-dataset questions unreal, against none of the stricter rule's",
}


@dataclass
class GateRead:
    """What the gate holds, checked against the candidates: its decisions (the accepted ones in the seed's
    order) and claim notes, and what became of each accepted candidate."""

    gate: Path
    decisions: list[GateDecision]
    decided: dict[str, Candidate]
    notes: dict[str, ClaimNote]
    accepted: list[GateDecision] = field(default_factory=list)
    held_back: list[GateDecision] = field(default_factory=list)  # the looser rule, no note naming its data set
    not_askable: list[GateDecision] = field(default_factory=list)  # its annotator found it cannot be asked
    unphrased: list[str] = field(default_factory=list)  # no phrasing within the question length limit
    rng: random.Random = field(default_factory=random.Random)  # seeded: shuffles the accepted, then phrases

    @classmethod
    def load(cls, gate: Path, found: list[Candidate], past_seal: str, seed: int) -> GateRead:
        decisions = read_decisions(gate)
        if not decisions:
            raise NothingToAsk(f"{gate}: no decisions recorded (backtest gate import); nothing written")
        decided = check_decisions(decisions, found, past_seal, str(gate))
        read = cls(gate, decisions, decided, check_notes(read_notes(gate), decisions, str(gate)))
        read.rng = random.Random(seed)
        read.accepted = sorted((d for d in decisions if d.decision == "accept"), key=lambda d: d.candidate_id)
        read.rng.shuffle(read.accepted)
        # the looser rule misattributed its data set (evidence-graph-v2): asked only where an annotator named it
        read.held_back = [d for d in read.accepted if d.rule in NOT_ASKED_RULES and d.candidate_id not in read.notes]
        read.not_askable = [
            d for d in read.accepted if d.candidate_id in read.notes and not read.notes[d.candidate_id].askable
        ]
        return read

    def drafts(self, papers: dict[str, PaperClaims], behind: dict[str, Tension]) -> list[Draft]:
        """A draft for every accepted candidate that is asked and phrases within the limit (the rest recorded in
        :attr:`unphrased`); the seeded generator that shuffled them phrases the observational conflicts."""
        out = []
        skipped = {d.candidate_id for d in self.held_back + self.not_askable}
        for d in self.accepted:
            if d.candidate_id in skipped:
                continue
            c = self.decided[d.candidate_id]
            note = self.notes.get(c.candidate_id)
            draft = gated_draft(c, d.type or "", papers, behind.get(c.candidate_id), self.rng, note)
            (out.append(draft) if draft else self.unphrased.append(d.candidate_id))
        return out


def description(read: GateRead, n_found: int, n_chosen: int, cutoff: dt.date) -> str:
    """The set's description (``metadata.json``)."""
    stated = (
        f", quoting the findings an annotator stated from the abstracts for {len(read.notes)} of them "
        f"({len(read.not_askable)} found not askable)"
        if read.notes
        else ""
    )
    return (
        "Evidence graph gated by careful reading: candidate tensions found at machine scale in the past corpus "
        "(author-stated tensions, numeric and stance conflicts, single-dataset conclusions, structural pairs, "
        "dense neighbours), ranked by the probability that a reader accepts them, read in blinded batches; "
        f"only the {len(read.accepted)} accepted of {len(read.decisions)} read (of {n_found} proposed) become "
        f"questions, phrased from templates for the type the reader gave{stated}. {n_chosen} questions. "
        + readers_note(read, cutoff)
    )


def readers_note(read: GateRead, cutoff: dt.date) -> str:
    read_on = sorted({d.decided_at[:10] for d in read.decisions})
    return (
        f"The gate was read on {', '.join(read_on)}, after the cutoff ({cutoff.isoformat()}): its readers "
        "could know literature published after the cutoff, as the reference paper says of evidence_graph_v1."
    )


def gate_notes(read: GateRead, ctx: GenerationContext, n_papers: int, n_found: int, chosen: list[Draft]) -> dict:
    """The set's ``generator_notes``: what the gate proposed, read, accepted and stated, who read, what was asked."""
    notes: dict[str, Any] = {
        "papers": n_papers,
        "requested": ctx.n,
        "gate": "careful reading (backtest gate): blinded review items, one reader's decision each",
        "gate_folder": read.gate.as_posix(),
        "decisions_sha256": decisions_sha256(read.gate),
        "candidates": n_found,
        "read": len(read.decisions),
        "accepted": len(read.accepted),
        "accepted_by_type": dict(sorted(Counter(d.type or "" for d in read.accepted).items())),
        "readers": sorted({d.reader for d in read.decisions}),
        "readers_could_know_after_cutoff": True,
        "readers_note": readers_note(read, ctx.cutoff),
    }
    if read.notes:
        notes |= {
            "claim_notes_sha256": notes_sha256(read.gate),
            "claims_stated": len(read.notes),
            "claims_not_askable": len(read.not_askable),
            "annotators": sorted({n.reader for n in read.notes.values()}),
        }
    return notes | {
        "not_asked": {rule: sum(d.rule == rule for d in read.held_back) for rule in sorted(NOT_ASKED_RULES)},
        "not_asked_why": NOT_ASKED_RULES,
        "not_phrasable": len(read.unphrased),
        "emitted": len(chosen),
        "emitted_by_type": dict(sorted(Counter(d.signal_type or "" for d in chosen).items())),
    }


def gated_set(
    ctx: GenerationContext,
    papers: list[PaperClaims],
    found: list[Candidate],
    behind: dict[str, Tension],
    per_paper: int,
) -> GenerationResult:
    """The gated set of ``ctx.options["reviewed"]`` (see the module docstring)."""
    read = GateRead.load(Path(ctx.options["reviewed"]), found, ctx.past.seal, ctx.seed)
    drafts = read.drafts({p.record.id: p for p in papers}, behind)

    def paper_cap(draft: Draft, kept: list[Draft]) -> bool:
        return all(sum(pid in k.source_evidence_ids for k in kept) < per_paper for pid in draft.source_evidence_ids)

    chosen = select_diverse(drafts, ctx.n, accept=paper_cap, embedding=True, cache_dir=ctx.cache_dir)
    if not chosen:
        raise NothingToAsk(f"{read.gate}: no accepted candidate reads as a question; nothing written")
    return GenerationResult(
        drafts=chosen,
        description=description(read, len(found), len(chosen), ctx.cutoff),
        notes=gate_notes(read, ctx, len(papers), len(found), chosen),
    )
