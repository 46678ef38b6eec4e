"""``random_claims`` — the chance floor: seeded random past papers, one robustness question each.

For each paper drawn (``random.Random(seed)`` over the past corpus sorted by id),
the headline claim is its first result sentence that stands on its own
(:func:`wording.headline_clause`: lead-ins such as "In addition," and "We find that" are
removed, and a sentence leaning on its abstract — "these detections", "our sample",
"this work", first person — is passed over); the question asks, with one of a small
set of neutral templates (chosen by the same generator), whether that claim survives
independent data or analysis, and names what it is about: the catalogued object the
clause names, else the object(s) of the paper's title or abstract, else the paper's
title in quotes. Papers with no such claim are skipped and the next draw is taken.
"""

from __future__ import annotations

import random

from backtest.core.records import CorpusRecord
from backtest.generators.extract import extract_claims
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult
from backtest.generators.select import select_diverse
from backtest.generators.wording import context, headline_clause, paper_subject, reads_clearly

TEMPLATES = (
    "Does the result that {clause}{context_mid} hold when it is tested with independent data and alternative "
    "analysis choices?",
    "Does an independent reanalysis reproduce the result that {clause}{context}?",
    "Is the reported result that {clause}{context_mid} stable under different modelling assumptions?",
    "Can the conclusion that {clause}{context_mid} be reproduced with an independent dataset?",
)
MAX_CHARS = 360


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
            found = headline_clause(paper)
            if not found:
                continue  # every claim leans on its abstract ("these detections", "our sample"): skipped
            claim, clause = found
            template = TEMPLATES[rng.randrange(len(TEMPLATES))]
            subject = paper_subject(paper, clause)
            question = template.format(clause=clause, context=context(subject), context_mid=context(subject, mid=True))
            if len(question) > MAX_CHARS or not reads_clearly(question):
                continue
            objects = [o for o in paper.detected.objects if o in set(_claim_objects(paper, claim))]
            drafts.append(
                Draft(
                    question=question,
                    source_evidence_ids=[paper.record.id],
                    objects=objects or list(paper.title_objects) or None,
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
