"""The optional LLM clarity rater: a 1-5 clarity rating and the main problem of a question, from an
OpenAI-compatible model through the shared, cached client (``backtest clarity rate``). The deterministic
score is :func:`backtest.text.clarity.clarity_score`; the rater's problems are its checks' names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, TypedDict

#: the prompt version; its sha256 (with the schema's) goes into every cached answer's key
RATER_VERSION = "clarity-rater-v1"
RATER_SYSTEM = (
    "You rate how clear a research question is to a scientist who reads it alone, without the paper it came "
    "from. 5: one clear, self-contained question about a named subject. 4: clear, with a small flaw. 3: "
    "understandable with effort. 2: hard to understand: refers to things it never names ('this sample', 'we', "
    "'these effects'), is garbled, or asks several things. 1: unintelligible. Also name its main problem, or "
    "'none'. Do not judge whether the question is important or answerable."
)
RATER_USER = "Question: {question}\n\nRate its clarity."
#: the problems the rater may name: the deterministic checks' names (without the mechanical ones) or none
RATER_PROBLEMS = (
    "none",
    "unresolved_reference",
    "two_questions",
    "leading",
    "contradictory_quantifiers",
    "no_subject",
    "garbled_text",
    "not_a_question",
)
RATER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "clarity": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "problem": {"type": "string", "enum": list(RATER_PROBLEMS)},
    },
    "required": ["clarity", "problem"],
    "additionalProperties": False,
}
#: judge-only keys a judge config may carry; the rater reads the client settings and ignores these
_JUDGE_ONLY_KEYS = frozenset(
    {"prompt", "max_doc_chars", "max_documents", "protocol", "enum_ids", "max_rationale_chars", "max_relevance_chars"}
)
DEFAULT_RATER_CACHE = ".cache/llm-clarity.sqlite"


def _check_rating(answer: dict[str, Any]) -> None:
    if answer.get("clarity") not in (1, 2, 3, 4, 5) or isinstance(answer.get("clarity"), bool):
        raise ValueError(f"clarity {answer.get('clarity')!r} is not an integer from 1 to 5")
    if answer.get("problem") not in RATER_PROBLEMS:
        raise ValueError(f"problem {answer.get('problem')!r} is not one of {', '.join(RATER_PROBLEMS)}")


@dataclass(frozen=True)
class LLMClarityRating:
    """One question's rating by the LLM rater: ``clarity`` 1-5 and the problem it named, or the error."""

    clarity: int | None
    problem: str | None
    cached: bool = False
    error: str | None = None
    usage: dict[str, int] | None = None


class RaterInfo(TypedDict):
    """:meth:`LLMClarityRater.info`: what produced the ratings (written beside each one)."""

    rater: str
    name: str
    model: str
    base_url: str
    prompt_sha256: str
    config_sha256: str
    temperature: float


class LLMClarityRater:
    """Clarity ratings (1-5) from an OpenAI-compatible model through the shared, cached client.

    ``config`` is an LLM config (``judges/NAME.toml``: base_url, model, api_key_env, ...; a judge's own keys
    such as ``prompt`` are ignored). The API key is read from the environment variable the config names, at
    call time, and written nowhere; answers are cached in ``cache`` (default ``.cache/llm-clarity.sqlite``)."""

    def __init__(self, config: str | Path, ws: Any = None):
        from backtest.core.seal import canonical_json, sha256_file, sha256_text
        from backtest.llm.settings import client_from_config, load_llm_config

        path = Path(config)
        data = load_llm_config(path)
        self.settings, self.client = client_from_config(
            data, path, DEFAULT_RATER_CACHE, max_tokens=60, extra_keys=_JUDGE_ONLY_KEYS, ws=ws
        )
        self.name = str(data.get("name") or path.stem)
        self.config_sha256 = sha256_file(path)
        self.prompt_sha256 = sha256_text(RATER_SYSTEM + "\n" + RATER_USER + "\n" + canonical_json(RATER_SCHEMA))

    def info(self) -> RaterInfo:
        """What produced the ratings (never the key)."""
        return {
            "rater": RATER_VERSION,
            "name": self.name,
            "model": self.settings.model,
            "base_url": self.settings.base_url,
            "prompt_sha256": self.prompt_sha256,
            "config_sha256": self.config_sha256,
            "temperature": self.settings.temperature,
        }

    def request(self, question: str):
        """The chat request for one question."""
        from backtest.llm.client import ChatRequest

        return ChatRequest(
            messages=(
                {"role": "system", "content": RATER_SYSTEM},
                {"role": "user", "content": RATER_USER.format(question=" ".join(question.split()))},
            ),
            schema=RATER_SCHEMA,
            schema_name="clarity_rating",
            key_extra={"prompt_sha256": self.prompt_sha256, "rater": RATER_VERSION},
            validate=_check_rating,
        )

    def rate_many(self, questions: Sequence[str]) -> list[LLMClarityRating]:
        """One rating per question, in order (bounded concurrency); a question the model never answered usably
        gets ``clarity=None`` and the error."""
        from backtest.llm.client import LLMError

        out = []
        for answer in self.client.chat_many([self.request(q) for q in questions]):
            if isinstance(answer, LLMError):
                out.append(LLMClarityRating(None, None, error=str(answer), usage=dict(answer.usage)))
            else:
                parsed = answer.parsed or {}
                out.append(
                    LLMClarityRating(int(parsed["clarity"]), str(parsed["problem"]), answer.cached, None, answer.usage)
                )
        return out

    def close(self) -> None:
        self.client.close()
