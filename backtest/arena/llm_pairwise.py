"""LLM pairwise judge and LLM rubric scorer, over the shared OpenAI-compatible client.

Config (TOML, the same keys as the outcome judge's; ``kind = "llm"``)::

    kind = "llm"
    base_url = "http://127.0.0.1:8080"
    model = "gemma-3-270m"
    api_key_env = "OPENAI_API_KEY"     # optional; the key is read from the environment only
    max_tokens = 300
    concurrency = 2
    cache = ".cache/llm-arena.sqlite"  # relative to the workspace root

Temperature is fixed at 0. The answer is constrained by a JSON schema (the five
verdicts as an enum); the prompt's sha256 enters the cache key, so changing the
prompt never reuses old answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from backtest.arena.contexts import ArenaContext, ArenaOutput
from backtest.arena.pairwise import VERDICTS, Call, PairVerdict, PairwiseJudge, PairwiseJudgeInfo
from backtest.arena.rubric import OutputScores, SetScores
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.seal import sha256_file, sha256_text
from backtest.llm.client import ChatRequest, LLMError, LLMResponse
from backtest.llm.settings import client_from_config, load_llm_config

PAIRWISE_SYSTEM = (
    "You are an expert reviewer comparing two research questions (or hypotheses) that two systems proposed "
    "from the same past literature. Decide which output is the better research question: grounded in the "
    "context, insightful (not obvious), justified by evidence, specific and falsifiable. Ignore which one is "
    "shown first and ignore length. Answer with a short rationale and one verdict: "
    "'A>>B' (A much better), 'A>B' (A better), 'A=B' (about equal), 'B>A' (B better), 'B>>A' (B much better)."
)
PAIRWISE_USER = "Context:\n{context}\n\nOutput A:\n{a}\n\nOutput B:\n{b}\n\nWhich is the better research question?"
PAIRWISE_SCHEMA = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string", "maxLength": 400},
        "verdict": {"type": "string", "enum": list(VERDICTS)},
    },
    "required": ["rationale", "verdict"],
    "additionalProperties": False,
}
_SCORE = {"type": "integer", "minimum": 1, "maximum": 5}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"grounding": _SCORE, "insight": _SCORE, "justification": _SCORE},
    "required": ["grounding", "insight", "justification"],
    "additionalProperties": False,
}
SET_SCHEMA = {
    "type": "object",
    "properties": {"breadth": _SCORE, "distinctness": _SCORE, "utility": _SCORE},
    "required": ["breadth", "distinctness", "utility"],
    "additionalProperties": False,
}
RUBRIC_SYSTEM = (
    "You score research questions on a 1-5 scale (5 best). For one output in its context: grounding (uses the "
    "context's evidence), insight (a non-obvious inference), justification (the evidence supports asking it). For "
    "a set of outputs: breadth (covers different aspects), distinctness (members are not restatements of each "
    "other), utility (a researcher could act on them)."
)


def _check_verdict(answer: dict[str, Any]) -> None:
    if answer.get("verdict") not in VERDICTS:
        raise ValueError(f"verdict {answer.get('verdict')!r} is not one of {', '.join(VERDICTS)}")


class LLMPairwiseJudge(PairwiseJudge):
    """Pairwise verdicts from an OpenAI-compatible chat model (schema-constrained, cached)."""

    calls_endpoint = True

    def __init__(self, config: dict[str, Any], path: Path | None):
        self.settings, self.client = client_from_config(config, path, ".cache/llm-arena.sqlite")
        self.name = str(config.get("name") or (path.stem if path else "llm"))
        self.prompt_sha256 = sha256_text(PAIRWISE_SYSTEM + "\n" + PAIRWISE_USER)
        self.config_sha256 = sha256_file(path) if path else None

    def info(self) -> PairwiseJudgeInfo:
        """Name, model, prompt and config hashes."""
        return {
            "name": self.name,
            "kind": "llm",
            "model": self.settings.model,
            "prompt_sha256": self.prompt_sha256,
            "config_sha256": self.config_sha256,
            "temperature": self.settings.temperature,
        }

    def request(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> ChatRequest:
        """The chat request for one ordering."""
        user = PAIRWISE_USER.format(context=context.text, a=a.output, b=b.output)
        return ChatRequest(
            messages=({"role": "system", "content": PAIRWISE_SYSTEM}, {"role": "user", "content": user}),
            schema=PAIRWISE_SCHEMA,
            schema_name="pairwise_verdict",
            key_extra={"prompt_sha256": self.prompt_sha256},
            validate=_check_verdict,
        )

    def _verdict(self, response) -> PairVerdict:
        if isinstance(response, LLMError):
            raise CheckFailed(f"pairwise judge {self.name}: {response}")
        parsed = response.parsed or {}
        return PairVerdict(
            verdict=parsed["verdict"],
            rationale=str(parsed.get("rationale", ""))[:400],
            tokens={k: int(v) for k, v in response.usage.items() if isinstance(v, int)},
        )

    def compare(self, context: ArenaContext, a: ArenaOutput, b: ArenaOutput) -> PairVerdict:
        """One verdict with ``a`` in position A."""
        req = self.request(context, a, b)
        response: LLMResponse | LLMError
        try:
            response = self.client.chat(list(req.messages), req.schema, req.schema_name, req.key_extra, req.validate)
        except LLMError as exc:
            response = exc
        return self._verdict(response)

    def compare_many(self, calls: Sequence[Call], done: Callable[[int], None] | None = None) -> list[PairVerdict]:
        """All orderings at once, with the client's bounded concurrency; results in input order."""
        verdicts = [self._verdict(r) for r in self.client.chat_many([self.request(*call) for call in calls])]
        if done:
            done(len(calls))
        return verdicts


class LLMRubric:
    """Rubric scores (integers 1–5) from an OpenAI-compatible chat model."""

    def __init__(self, config: str | Path):
        path = Path(config)
        self.settings, self.client = client_from_config(load_llm_config(path), path, ".cache/llm-arena.sqlite")
        self.name = f"llm-rubric:{self.settings.model}"
        self.prompt_sha256 = sha256_text(RUBRIC_SYSTEM)

    def _ask(self, user: str, schema: dict[str, Any], name: str) -> dict[str, float]:
        messages = [{"role": "system", "content": RUBRIC_SYSTEM}, {"role": "user", "content": user}]
        try:
            response = self.client.chat(messages, schema, name, {"prompt_sha256": self.prompt_sha256})
        except LLMError as exc:
            raise CheckFailed(f"rubric scorer {self.name}: {exc}") from None
        parsed = response.parsed or {}
        return {k: float(min(5, max(1, int(parsed[k])))) for k in schema["required"]}

    def score_output(self, context: ArenaContext, output: ArenaOutput) -> OutputScores:
        """g, ℓ, j for one output."""
        s = self._ask(
            f"Context:\n{context.text}\n\nOutput:\n{output.output}\n\nScore this output.",
            OUTPUT_SCHEMA,
            "output_scores",
        )
        return OutputScores(s["grounding"], s["insight"], s["justification"])

    def score_set(self, outputs: Sequence[ArenaOutput]) -> SetScores:
        """b, d, u for a set (d is not asked for a one-member set)."""
        listing = "\n".join(f"{k + 1}. {o.output}" for k, o in enumerate(outputs))
        s = self._ask(f"Set of {len(outputs)} outputs:\n{listing}\n\nScore this set.", SET_SCHEMA, "set_scores")
        return SetScores(s["breadth"], s["distinctness"] if len(outputs) > 1 else None, s["utility"], len(outputs))


def make_rubric(config: str | Path | None = None, **_: Any) -> LLMRubric:
    """Factory for the ``llm`` rubric scorer (``config=judges/NAME.toml``)."""
    if not config:
        raise BadInput("the llm rubric needs a config: --rubric-config judges/NAME.toml")
    return LLMRubric(config)


def make_llm(config: dict[str, Any], path: Path | None) -> LLMPairwiseJudge:
    """Factory for ``kind = "llm"`` pairwise judges; the settings come from a judges/NAME.toml file."""
    if path is None:
        raise BadInput("the llm pairwise judge needs a config file: --judge judges/NAME.toml")
    return LLMPairwiseJudge(config, path)
