"""The LLM plumbing shared by ``direct_llm`` and the evidence graph's ``--verbalizer llm``.

Both talk to an OpenAI-compatible endpoint through :mod:`backtest.llm.client`
(schema-constrained JSON answers, retries, an SQLite cache under the workspace's
``.cache/generators/``). Where the endpoint is comes from the generator options
(``--llm-base-url``, ``--llm-model``, ``--llm-api-key-env``, ``--llm-training-cutoff``)
or the matching ``BACKTEST_LLM_*`` environment variables. The API key itself is
only ever read from the environment by the client.
"""

from __future__ import annotations

import re
from typing import Any

from backtest.core.errors import BadInput


class NoEndpoint(BadInput):
    """No LLM endpoint configured: the generator is skipped (exit 2, one line, nothing written)."""


def llm_settings(options: dict[str, Any], who: str, max_tokens: int = 1024, seed: int = 0, temperature: float = 0.0):
    """LLMSettings from the generator options, or raise :class:`NoEndpoint` naming ``who``."""
    from backtest.llm.client import LLMSettings

    base_url, model = options.get("llm_base_url"), options.get("llm_model")
    if not base_url or not model:
        raise NoEndpoint(
            f"{who} skipped: no LLM endpoint configured (pass --llm-base-url and --llm-model, "
            f"or set BACKTEST_LLM_BASE_URL and BACKTEST_LLM_MODEL)"
        )
    return LLMSettings(
        base_url=base_url,
        model=model,
        api_key_env=options.get("llm_api_key_env") or None,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        timeout_s=300.0,
        concurrency=2,
    )


def llm_client(settings, cache_dir):
    """An :class:`~backtest.llm.client.LLMClient` with its answer cache in ``cache_dir``."""
    from backtest.llm.client import LLMClient

    return LLMClient(settings, cache_path=(cache_dir / "llm-generators.sqlite") if cache_dir else None)


def component(settings, options: dict[str, Any], role: str) -> dict[str, Any]:
    """The ``llm_components`` entry: model, role and its stated training cutoff."""
    return {
        "model": settings.model,
        "role": role,
        "training_cutoff": options.get("llm_training_cutoff") or "not stated by the operator",
        "endpoint": settings.base_url.rstrip("/"),
    }


_INTERROGATIVE = re.compile(
    r"^(?:what|which|why|how|when|where|who|whose|whom|is|are|was|were|do|does|did|can|could|"
    r"will|would|should|has|have|had|to what extent)\b",
    re.IGNORECASE,
)
_DANGLING = (" a", " an", " the", " of", " in", " and", " or", " to", " with", " for", " which", " that")


def clean_llm_question(text: Any, max_chars: int = 400) -> str | None:
    """One usable question from an LLM string: a single sentence ending in one '?', or None.

    List numbering and quotes are stripped, the first letter is capitalised, and a question
    that opens with an interrogative word but lost its '?' (small models often drop it) gets
    one; a string that is cut off mid-sentence (ends in a comma or a dangling word) does not.
    """
    if not isinstance(text, str):
        return None
    text = " ".join(text.split()).strip().strip("\"'").lstrip("-*0123456789.) ").strip()
    if "?" not in text and _INTERROGATIVE.match(text) and text[-1:].isalnum() and not text.endswith(_DANGLING):
        text += "?"
    text = text[:1].upper() + text[1:]
    if text.count("?") != 1 or not text.endswith("?") or not (20 <= len(text) <= max_chars):
        return None
    return text
