"""The demo: a small real submission made from past-corpus records, frozen and scored offline.

``make_demo_submission`` turns claims stated in past-corpus abstracts ("we find that
X", "we show that X", "suggest that X") into questions "Will later work confirm that
X?" with the claim as premise and the paper as source evidence. It reads the past
corpus only (a :class:`~backtest.corpus.store.PastCorpus`), picks papers with a seeded
generator, and is deterministic for a given corpus, seed and size.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path

from backtest.core.fileio import write_json, write_jsonl
from backtest.core.records import Question, SubmissionMetadata

DEMO_SYSTEM = "demo_claims"
_CLAIM = re.compile(
    r"\b(?:we (?:find|show|demonstrate|conclude|argue|confirm|report)|"
    r"(?:results|data|observations) (?:suggest|indicate|show|imply)) that ([^.;]{30,220})[.;]",
    re.IGNORECASE,
)


def extract_claim(abstract: str) -> str | None:
    """The first "we find that X"-style claim of an abstract, cleaned, or None."""
    match = _CLAIM.search(" ".join(abstract.split()))
    if not match:
        return None
    claim = match.group(1).strip().rstrip(",")
    if claim.count("$") % 2 or claim.count("(") != claim.count(")"):
        return None
    return claim


def make_demo_submission(
    past,
    out_dir: str | Path,
    n: int = 12,
    seed: int = 0,
    categories: tuple[str, ...] = ("astro-ph.EP",),
    domain: str = "astrophysics",
) -> Path:
    """Write ``questions.jsonl`` and ``metadata.json`` for a claims-based demo system into ``out_dir``."""
    cutoff: dt.date = past.cutoff
    pool = []
    for record in past.iter_records():
        if categories and not set(record.categories) & set(categories):
            continue
        claim = extract_claim(record.abstract)
        if claim:
            pool.append((record.id, claim))
    if not pool:  # a corpus without the preferred categories: use every record
        pool = [(r.id, c) for r in past.iter_records() if (c := extract_claim(r.abstract))]
    pool.sort()
    picked = random.Random(seed).sample(pool, min(n, len(pool)))
    stamp = f"{cutoff.isoformat()}T23:59:00+00:00"
    questions = []
    for rank, (rid, claim) in enumerate(picked, start=1):
        claim_text = claim[0].lower() + claim[1:] if claim[:2].isalpha() and not claim[:2].isupper() else claim
        questions.append(
            Question(
                question_id=f"demo_{rank:03d}",
                question=f"Will later work confirm that {claim_text}?",
                domain=domain,
                cutoff_date=cutoff,
                generated_at=stamp,
                generation_system=DEMO_SYSTEM,
                source_evidence_ids=[rid],
                rank=rank,
                frozen=True,
                premise=claim,
                signal_type="claim",
            ).model_dump(mode="json", exclude_none=True)
        )
    meta = SubmissionMetadata(
        system_name=DEMO_SYSTEM,
        description="Demo: claims stated in past-corpus abstracts, asked as "
        "'will later work confirm that ...?' (no LLM).",
        repository=None,
        cutoff_date=cutoff,
        domain=domain,
        n_questions=len(questions),
        frozen=True,
        llm_components=None,
    )
    out = Path(out_dir)
    write_jsonl(out / "questions.jsonl", questions)
    write_json(out / "metadata.json", meta.model_dump(mode="json", exclude_none=True))
    return out


def run_demo(
    ws,
    instance_id: str = "astro-2025-ep",
    n: int = 12,
    seed: int = 0,
    progress: bool = False,
    judge_spec: str = "offline",
):
    """Make the demo submission, freeze it (or reuse an identical frozen set), score it offline.

    Returns the :class:`~backtest.scoring.score.ScoreResult`; a rerun reuses the frozen set and the
    complete run, so it is quick and writes nothing new.
    """
    from backtest.corpus.instance import load_instance, open_past_corpus
    from backtest.studies.pipeline import freeze_or_reuse, score

    instance = load_instance(instance_id, ws)
    past = open_past_corpus(instance, ws)
    sub = make_demo_submission(
        past, ws.root / "submissions" / DEMO_SYSTEM, n=n, seed=seed, domain=instance.domain or "astrophysics"
    )
    frozen, _ = freeze_or_reuse(sub, instance_id, ws)
    return score(frozen, ws, judge_spec=judge_spec, progress=progress)
