"""``random_claims`` — the chance floor: seeded random past papers, one robustness question each.

For each paper drawn (``random.Random(seed)`` over the past corpus sorted by id),
the headline claim is its first result sentence (:func:`extract.main_claim`); the
question asks, with one of a small set of neutral templates (chosen by the same
generator), whether that claim survives independent data or analysis. Papers with
no claim sentence are skipped and the next draw is taken.
"""

from __future__ import annotations

import random

from backtest.core.records import CorpusRecord
from backtest.generators.extract import claim_clause, extract_claims, is_declarative, main_claim
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult
from backtest.generators.select import select_diverse

TEMPLATES = (
    "Does the finding that {clause} hold up when tested with independent data and alternative analysis choices?",
    "Will an independent reanalysis confirm that {clause}?",
    "Is the reported result that {clause} robust to different modelling assumptions?",
    "Can the claim that {clause} be reproduced with an independent dataset?",
)
MIN_CLAUSE_CHARS = 40


def seeded_past(ctx: GenerationContext) -> tuple[random.Random, list[CorpusRecord], list[int]]:
    """The past records sorted by id, a seeded random permutation of their indexes, and the generator that drew it.

    The generator (``random.Random(ctx.seed)``) is returned so later draws continue the same stream.
    """
    rng = random.Random(ctx.seed)
    records = sorted(ctx.past.records(), key=lambda r: r.id)
    return rng, records, rng.sample(range(len(records)), len(records))


class RandomClaims:
    """Seeded random past papers, each turned into one robustness question about its main claim."""

    name = "random_claims"
    version = "1"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Draw papers at random (seeded) until ``ctx.n`` usable claims are found."""
        rng, records, order = seeded_past(ctx)
        drafts: list[Draft] = []
        for index in order:
            if len(drafts) >= 2 * ctx.n:
                break
            paper = extract_claims(records[index])
            claim = main_claim(paper)
            if not claim:
                continue
            clause = claim_clause(claim)
            if len(clause) < MIN_CLAUSE_CHARS or not is_declarative(clause):
                continue
            template = TEMPLATES[rng.randrange(len(TEMPLATES))]
            objects = [o for o in paper.detected.objects if o in set(_claim_objects(paper, claim))]
            drafts.append(
                Draft(
                    question=template.format(clause=clause),
                    source_evidence_ids=[paper.record.id],
                    objects=objects or None,
                    signal_type="robustness_check",
                    premise=claim,
                )
            )
        chosen = select_diverse(drafts, ctx.n)
        return GenerationResult(
            drafts=chosen,
            description=(
                "Chance floor: seeded random past papers; each paper's first result sentence is turned into one "
                "robustness question from a small set of neutral templates."
            ),
        )


def _claim_objects(paper, claim_text: str) -> list[str]:
    for claim in paper.claims:
        if claim.text == claim_text:
            return list(claim.detected.objects)
    return []
