"""``citation_leaders`` — prominence: questions anchored on the most central past papers.

The corpora carry no citation counts, and counts fetched today would leak the
future. Centrality is therefore measured inside the past corpus only:

    centrality(P) = number of LATER past papers Q (published after P, on or before
                    the cutoff) whose title or abstract shares at least one of P's
                    *specific terms*

where P's specific terms are the catalogued object designations it names
(:func:`backtest.text.objects.find_objects`) and the content-word bigrams of its title
that occur in at least 2 and at most ``max(5, 1%)`` of the past papers (frequent
bigrams such as "dark matter" name a field, not a result, and are ignored). The
count behaves like a citation count: it rewards papers whose specific subject
was taken up by later work, and, like citations, favours older papers. Ties break
by the number of specific terms, then by the seeded order. Nothing dated after the
cutoff is ever read (the past corpus holds nothing later).

Each leader's headline claim (its first result sentence that stands on its own, see
:func:`backtest.generators.wording.headline_clause`) becomes one question naming what it
is about (the object the clause names, else the paper's object(s), else its title).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict

from backtest.generators.extract import analyse_corpus
from backtest.generators.protocol import Draft, GenerationContext, GenerationResult
from backtest.generators.select import select_diverse
from backtest.generators.wording import context, headline_clause, paper_subject, reads_clearly
from backtest.text.latex import detex

TEMPLATES = (
    "Does the much followed-up result that {clause}{context_mid} stand when it is tested with independent datasets "
    "and alternative analysis assumptions?",
    "Do later, independent observations reproduce the result that {clause}{context}?",
    "Is the widely built-upon result that {clause}{context_mid} reproduced by independent tests?",
)
MAX_CHARS = 360
_WORD = re.compile(r"[a-z][a-z0-9\-]+")


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | {
        "using",
        "new",
        "study",
        "based",
        "via",
        "paper",
        "analysis",
        "evidence",
        "results",
        "observations",
        "first",
        "towards",
        "implications",
    }


def bigrams(text: str, stop: frozenset[str]) -> set[str]:
    """Adjacent content-word pairs of a text (lower-cased, stop words removed)."""
    words = [w for w in _WORD.findall(text.lower()) if w not in stop and len(w) > 2]
    return {f"{a} {b}" for a, b in zip(words, words[1:])}


def centrality(papers, stop: frozenset[str] | None = None) -> list[tuple[int, int]]:
    """``[(later_sharers, n_specific_terms)]`` per paper (same order as ``papers``)."""
    stop = stop or _stop_words()
    n = len(papers)
    max_df = max(5, n // 100)
    full = [
        bigrams(detex(p.record.title) + " " + " ".join(p.sentences), stop) | set(p.detected.objects) for p in papers
    ]
    df: dict[str, int] = defaultdict(int)
    for terms in full:
        for t in terms:
            df[t] += 1
    postings: dict[str, list[int]] = defaultdict(list)
    specific = []
    for p in papers:
        mine = {t for t in bigrams(detex(p.record.title), stop) if 2 <= df[t] <= max_df}
        mine |= {o for o in p.detected.objects if df[o] >= 2}
        specific.append(mine)
    for i, terms in enumerate(full):
        for t in terms:
            postings[t].append(i)
    dates = [p.record.published for p in papers]
    scores = []
    for i, terms in enumerate(specific):
        later: set[int] = set()
        for t in terms:
            later.update(j for j in postings[t] if dates[j] > dates[i])
        scores.append((len(later), len(terms)))
    return scores


class CitationLeaders:
    """The most central past papers (a corpus-internal citation proxy), one question each."""

    name = "citation_leaders"
    version = "1"

    def generate(self, ctx: GenerationContext) -> GenerationResult:
        """Rank past papers by later-paper uptake of their specific terms; question the leaders' main claims."""
        papers = analyse_corpus(ctx.past)
        scores = centrality(papers)
        rng = random.Random(ctx.seed)
        tiebreak = rng.sample(range(len(papers)), len(papers))
        order = sorted(range(len(papers)), key=lambda i: (-scores[i][0], -scores[i][1], tiebreak[i]))
        drafts: list[Draft] = []
        for i in order:
            if len(drafts) >= 3 * ctx.n:
                break
            found = headline_clause(papers[i])
            if not found:
                continue  # every claim leans on its abstract: skipped
            claim, clause = found
            question = TEMPLATES[rng.randrange(len(TEMPLATES))].format(
                clause=clause,
                context=context(paper_subject(papers[i], clause)),
                context_mid=context(paper_subject(papers[i], clause), mid=True),
            )
            if len(question) > MAX_CHARS or not reads_clearly(question):
                continue
            objects = [c for c in papers[i].claims if c.text == claim][0].detected.objects
            drafts.append(
                Draft(
                    question=question,
                    source_evidence_ids=[papers[i].record.id],
                    objects=list(objects) or list(papers[i].title_objects) or None,
                    signal_type="prominence",
                    premise=claim,
                    extra={"centrality": {"later_papers_sharing_terms": scores[i][0], "specific_terms": scores[i][1]}},
                )
            )
        chosen = select_diverse(drafts, ctx.n)
        return GenerationResult(
            drafts=chosen,
            description=(
                "Prominence: past papers ranked by a corpus-internal citation proxy (how many later past papers "
                "share their specific object designations or title bigrams); each leader's main result "
                "sentence becomes one robustness question."
            ),
        )
