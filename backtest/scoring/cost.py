"""The cost ledger of a run: what its labels cost, what a run will cost, and a budget that stops it in time.

* :func:`run_cost`: tokens and cost per question and in total, from the judgments' own token
  counts and the judge config's ``price`` (:mod:`backtest.llm.pricing`). It goes into
  ``RUN.json`` (``cost``), the report and ``compare``'s leaderboard. A judgment answered from
  the cache carries the tokens its answer cost when it was bought, so a run's cost is what its
  labels cost, whoever paid; ``spent`` is what this invocation's new calls cost.
* :func:`estimate_questions`: ``score --dry-run``: for every question not already in the
  judge's cache, the prompt tokens of its first call (counted exactly with the endpoint's
  tokenizer when it has one, else estimated, and said so) and at most ``max_tokens`` back; and
  its worst case, what ``--max-cost`` admits it on (every retry and the constraint retry, prompts
  bounded by their bytes).
* :class:`Ledger`: what this invocation's new calls cost (a question whose first answer was in
  the cache costs nothing), and ``score --max-cost``: a question is sent only while what this
  invocation has spent, plus the worst case of every question in flight, plus its own worst case
  stays within the budget; then the run stops cleanly (everything judged so far is in the fsync'd partial
  file) and a rerun with a larger budget goes on. The same on every executor: the driver
  counts from the judgments, not from a client's counters in some worker.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Sequence

from backtest.core.records import Judgment, Question, RetrievedDocument
from backtest.core.runs import Pricing, QuestionCost, RunCost
from backtest.judge.protocol import Judge
from backtest.llm.pricing import CallEstimate, Price
from backtest.scoring.outputs import CostEstimate, QuestionEstimate


def pricing(price: Price | None) -> Pricing:
    """The price fields of a cost record (``priced: False`` when the config has none)."""
    if price is None:
        return Pricing(priced=False, currency=None, input_per_mtok=None, output_per_mtok=None, batch_factor=1.0)
    return Pricing(priced=True, **price.model_dump())


def _tokens(judgment: Judgment) -> tuple[int, int]:
    return int(judgment.tokens.get("prompt_tokens", 0)), int(judgment.tokens.get("completion_tokens", 0))


def run_cost(judgments: Sequence[Judgment], price: Price | None, spent: float | None = None) -> RunCost:
    """Tokens and cost per question and in total (``RUN.json`` ``cost``); ``spent``: this invocation's new calls."""
    counts = [_tokens(j) for j in judgments]
    per_question = [
        QuestionCost(
            question_id=j.question_id,
            prompt_tokens=p,
            completion_tokens=c,
            cost=round(price.cost(p, c), 6) if price else None,
        )
        for j, (p, c) in zip(judgments, counts)
    ]
    prompt = sum(p for p, _ in counts)
    completion = sum(c for _, c in counts)
    return RunCost(
        **pricing(price).model_dump(),
        prompt_tokens=prompt,
        completion_tokens=completion,
        total=round(price.cost(prompt, completion), 6) if price else None,
        spent_last_invocation=round(spent, 6) if price and spent is not None else None,
        per_question=per_question,
    )


def estimate_questions(
    judge: Judge, questions: Sequence[Question], documents: Sequence[Sequence[RetrievedDocument]]
) -> CostEstimate:
    """``score --dry-run``: every question's first-call estimate and the totals (no call is made)."""
    price = judge.price
    rows, worst = [], []
    for question, docs in zip(questions, documents):
        rows.append((question.question_id, judge.estimate(question, list(docs))))
        worst.append(judge.worst_case(question, list(docs)))
    to_call = [e for _, e in rows if not e.cached]
    prompt = sum(e.prompt_tokens for e in to_call)
    completion = sum(e.max_completion_tokens for e in to_call)
    return CostEstimate(
        **pricing(price).model_dump(),
        n_questions=len(rows),
        n_cached=len(rows) - len(to_call),
        n_calls=len(to_call),
        prompt_tokens=prompt,
        prompt_tokens_exact=all(e.exact for e in to_call),
        max_completion_tokens=completion,
        cost_prompt=round(price.cost(prompt, 0), 6) if price else None,
        cost_at_most=round(price.cost(prompt, completion), 6) if price else None,
        cost_at_most_batch=round(price.cost(prompt, completion) * price.batch_factor, 6) if price else None,
        cost_worst_case=round(sum(b.bound(price) for b in worst), 6) if price else None,
        per_question=[
            QuestionEstimate(
                question_id=qid,
                cached=e.cached,
                prompt_tokens=e.prompt_tokens,
                exact=e.exact,
                cost_at_most=round(e.bound(price), 6) if price else None,
                cost_worst_case=round(b.bound(price), 6) if price else None,
            )
            for (qid, e), b in zip(rows, worst)
        ],
        note="cost_at_most: one call per question, as counted; cost_worst_case: what --max-cost admits a "
        "question on (every retry, the constraint retry, prompts bounded by their bytes)",
    )


@dataclass
class Ledger:
    """What this invocation's calls cost, and ``--max-cost``: with a ``limit``, a question is admitted only while
    spent + the bounds of the questions in flight + its own worst case (every attempt, the constraint retry,
    prompts bounded by their bytes: ``LLMJudge.worst_case``) stays within it. A question that cost more than its
    worst case means the endpoint's token counts cannot be trusted: ``overrun`` says so and nothing more is sent."""

    price: Price
    limit: float | None = None
    spent: float = 0.0
    reserved: float = 0.0
    stopped_at: str | None = None  # the first question that did not fit (or was not sent after an overrun)
    overrun: str | None = None  # a question that cost more than its bound, and by how much
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def admit(self, question_id: str, estimate: CallEstimate) -> float | None:
        """Reserve the question's bound and return it, or None (and remember where) when it would not fit."""
        if self.limit is None:
            return 0.0
        bound = estimate.bound(self.price)
        with self._lock:
            if self.overrun is not None or self.spent + self.reserved + bound > self.limit + 1e-12:
                self.stopped_at = self.stopped_at or question_id
                return None
            self.reserved += bound
            return bound

    def settle(self, reserved: float, judgment: Judgment, cached: bool) -> None:
        """Release a finished question's reservation and charge what it cost (nothing when from the cache)."""
        with self._lock:
            self.reserved -= reserved
            if cached:
                return
            cost = self.price.cost(*_tokens(judgment))
            self.spent += cost
            if self.limit is not None and cost > reserved + 1e-12 and self.overrun is None:
                p, c = _tokens(judgment)
                self.overrun = (
                    f"{judgment.question_id} cost {cost:.6f} ({p} prompt + {c} completion tokens reported), more than "
                    f"its worst case {reserved:.6f}: the endpoint's token counts cannot be bounded"
                )
