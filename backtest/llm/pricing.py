"""What LLM calls cost: prices from a config, token counts before a call, costs after.

A config (judge, pairwise judge, ...) may carry its endpoint's prices as a TOML table::

    price = { input_per_mtok = 2.00, output_per_mtok = 8.00, currency = "USD", batch_factor = 0.5 }

(per million prompt and completion tokens; ``batch_factor``, optional, is what the provider's
batch API bills as a share of that, for ``score --dry-run``'s batch line). A config without one has no cost: runs still
record tokens, and say that no price was given.

Before a call, :func:`count_prompt_tokens` counts a chat's prompt tokens exactly with the
endpoint's own tokenizer when it offers one (llama.cpp's ``llama-server`` does:
``/apply-template`` renders the chat template, ``/tokenize`` counts), else estimates them
from the characters (:data:`CHARS_PER_TOKEN`, labelled an estimate). The answer's tokens
are not known before it exists; their bound is the config's ``max_tokens``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

import requests
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from backtest.core.errors import BadInput

CHARS_PER_TOKEN = 4.0  # the usual rule of thumb for English text with BPE tokenizers; an estimate, said so


class Price(BaseModel):
    """An endpoint's price per million prompt (input) and completion (output) tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    currency: str = "USD"
    batch_factor: float = Field(default=1.0, gt=0, le=1)  # what a provider batch API bills, as a share of this

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The price of ``prompt_tokens`` in and ``completion_tokens`` out."""
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class CallEstimate:
    """One question's first judge call before it is made."""

    prompt_tokens: int
    max_completion_tokens: int
    exact: bool  # prompt tokens counted by the endpoint's tokenizer, not estimated
    cached: bool  # the answer is in the judge's cache: no call, no cost

    def bound(self, price: Price | None) -> float:
        """The most this call can cost (0 when cached or unpriced)."""
        if self.cached or price is None:
            return 0.0
        return price.cost(self.prompt_tokens, self.max_completion_tokens)


def price_from_config(config: dict[str, Any], where: str) -> Price | None:
    """The config's ``price`` table, or None when it has none; a malformed one is refused naming the file."""
    raw = config.get("price")
    if raw is None:
        return None
    try:
        return Price.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "price"
        raise BadInput(
            f"{where}: bad price ({field}: {first['msg']}); write "
            'price = {{ input_per_mtok = 2.0, output_per_mtok = 8.0, currency = "USD" }}'
        ) from None


def estimate_tokens(text: str) -> int:
    """A token count from the characters alone (:data:`CHARS_PER_TOKEN`)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_chat_tokens(messages: Sequence[dict[str, str]]) -> int:
    """Estimated prompt tokens of a chat: its texts plus a few tokens of template per message."""
    return sum(estimate_tokens(m.get("content", "")) + 4 for m in messages)


# Template tokens a chat format may add around each message and around the whole chat (role markers, BOS/EOS);
# generous: real templates use fewer than a dozen.
TEMPLATE_TOKENS_PER_MESSAGE = 16
TEMPLATE_TOKENS_PER_CHAT = 32


def prompt_tokens_bound(messages: Sequence[dict[str, str]], schema: dict[str, Any] | None = None) -> int:
    """An upper bound on a chat's prompt tokens from its bytes alone, true for any tokenizer that spends at least
    one byte of text per token (byte-level BPE, SentencePiece with byte fallback): every UTF-8 byte of every
    message and of the answer schema (some providers put it in the prompt), plus the template's tokens."""
    text = sum(len(m.get("content", "").encode("utf-8")) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
    schema_bytes = len(json.dumps(schema, ensure_ascii=False).encode("utf-8")) if schema else 0
    return text + schema_bytes + TEMPLATE_TOKENS_PER_CHAT


class TokenCounter:
    """Counts prompt tokens with an endpoint's tokenizer when it has one, else estimates (and says which).

    Two tokenizing APIs are known: vLLM's ``/tokenize`` with ``{"model", "messages"}`` (its chat
    template applied; answers ``count``) and llama.cpp's ``/apply-template`` then ``/tokenize``.
    An endpoint with neither (OpenAI's, for one) is asked once and then estimated for. No key is
    sent: servers that tokenize do it locally.
    """

    def __init__(self, base_url: str, model: str, timeout_s: float = 5.0):
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.timeout_s = timeout_s
        self.api: str | None = None  # "vllm", "llama.cpp", "none", or None before the first count

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = requests.post(f"{self.root}{path}", json=body, timeout=self.timeout_s)
        resp.raise_for_status()
        data = resp.json()
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data

    def _vllm(self, messages: Sequence[dict[str, str]]) -> int:
        return int(self._post("/tokenize", {"model": self.model, "messages": list(messages)})["count"])

    def _llama_cpp(self, messages: Sequence[dict[str, str]]) -> int:
        prompt = self._post("/apply-template", {"messages": list(messages)})["prompt"]
        return len(self._post("/tokenize", {"content": prompt, "add_special": True})["tokens"])

    def count(self, messages: Sequence[dict[str, str]]) -> tuple[int, bool]:
        """``(prompt tokens, exact)`` for a chat."""
        apis = {"vllm": self._vllm, "llama.cpp": self._llama_cpp}
        for name in [self.api] if self.api in apis else ([] if self.api == "none" else list(apis)):
            try:
                n = apis[name](messages)
            except (requests.RequestException, ValueError, KeyError, TypeError):
                continue
            self.api = name
            return n, True
        if self.api is None:
            self.api = "none"
        return estimate_chat_tokens(messages), False
