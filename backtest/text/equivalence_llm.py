"""The ``llm`` equivalence rule: an LLM same/different judge, asked three times, majority wins.

For a pair of texts (X, Y) the model is asked three times, each a different
deterministic prompt at temperature 0:

1. "Are these the same question?" with X first;
2. the same prompt with the order reversed (Y first);
3. a differently worded prompt ("would an answer to one also answer the other?"), X first.

The pair's similarity is the share of "same" votes (0, ⅓, ⅔ or 1); the rule's
threshold is ½, so two of three votes decide. Asking about every pair of a large
set is quadratic, so only *candidate* pairs are sent to the model: those whose
TF-IDF cosine (the ``tfidf`` rule's vectors) is at least ``prefilter`` (default
0.1); every other pair counts as different (similarity 0). ``prefilter=0`` asks
about every pair.

Registered as ``llm`` in :mod:`backtest.text.equivalence`'s registry when this module
is imported (``backtest diversity --rule llm --llm-config judges/NAME.toml``)::

    get_rule("llm", config="judges/local.toml", prefilter=0.1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.seal import sha256_text
from backtest.text.equivalence import TfidfRule

SYSTEM = (
    "You decide whether two research questions are the same question: asking for the same thing about the "
    "same object with the same method, possibly in different words or with synonyms. Different objects, "
    "quantities or methods make them different."
)
PROMPTS = (
    "Question 1: {x}\nQuestion 2: {y}\n\nAre these the same research question?",
    "Question 1: {x}\nQuestion 2: {y}\n\nAre these the same research question?",
    "First: {x}\nSecond: {y}\n\nWould a full answer to the first also fully answer the second, and vice versa?",
)
SCHEMA = {
    "type": "object",
    "properties": {"same": {"type": "boolean"}},
    "required": ["same"],
    "additionalProperties": False,
}


def _check(answer: dict[str, Any]) -> None:
    if not isinstance(answer.get("same"), bool):
        raise ValueError("'same' must be true or false")


@dataclass
class LLMEquivalenceRule:
    """Same/different by an LLM's majority of three votes (one with the order reversed)."""

    config: str | Path | None = None
    threshold: float = 0.5
    prefilter: float = 0.1
    name: str = "llm"
    client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.client is None:
            if not self.config:
                raise BadInput("the llm equivalence rule needs a judge config: --llm-config judges/NAME.toml")
            from backtest.llm.settings import client_from_config, load_llm_config

            path = Path(self.config)
            _, self.client = client_from_config(load_llm_config(path), path, ".cache/llm-equivalence.sqlite")
        self.prompt_sha256 = sha256_text(SYSTEM + "\n".join(PROMPTS))

    def requests(self, x: str, y: str):
        """The three chat requests for a pair, in vote order."""
        from backtest.llm.client import ChatRequest

        texts = ((x, y), (y, x), (x, y))
        return [
            ChatRequest(
                messages=({"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt.format(x=a, y=b)}),
                schema=SCHEMA,
                schema_name="same_question",
                key_extra={"prompt_sha256": self.prompt_sha256},
                validate=_check,
            )
            for prompt, (a, b) in zip(PROMPTS, texts)
        ]

    def candidate_pairs(self, texts: Sequence[str]) -> list[tuple[int, int]]:
        """Pairs ``i < j`` whose TF-IDF cosine reaches ``prefilter`` (all pairs when it is 0)."""
        n = len(texts)
        if self.prefilter <= 0:
            return [(i, j) for i in range(n) for j in range(i + 1, n)]
        sims = TfidfRule().similarity_matrix(texts)
        rows, cols = np.nonzero(np.triu(sims >= self.prefilter, k=1))
        return [(int(i), int(j)) for i, j in zip(rows, cols)]

    def similarity_matrix(self, texts: Sequence[str]) -> np.ndarray:
        """Share of "same" votes per pair (diagonal 1; non-candidates 0)."""
        from backtest.llm.client import LLMError

        n = len(texts)
        sims = np.eye(n, dtype=np.float64)
        pairs = self.candidate_pairs(texts)
        reqs = [r for i, j in pairs for r in self.requests(texts[i], texts[j])]
        answers = self.client.chat_many(reqs) if reqs else []
        failed = [a for a in answers if isinstance(a, LLMError)]
        if failed:
            raise CheckFailed(f"llm equivalence rule: {len(failed)} of {len(answers)} answers failed ({failed[0]})")
        for k, (i, j) in enumerate(pairs):
            votes = [bool(a.parsed["same"]) for a in answers[3 * k : 3 * k + 3]]
            sims[i, j] = sims[j, i] = sum(votes) / 3.0
        return sims
