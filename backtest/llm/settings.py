"""LLM settings from a TOML config, in one place: judges, pairwise judges, rubric scorers and the LLM
equivalence rule all read ``judges/NAME.toml`` through :func:`client_from_config`.

A config holds the client's settings (:data:`CLIENT_KEYS`), the common ``kind``/``name``/``description``/
``cache``, and whatever keys its consumer declares (a judge's ``prompt``, ``max_doc_chars``, ...);
anything else is refused by name. Judges run at temperature 0. The API key is never in the file: only
the name of the environment variable that holds it (``api_key_env``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from backtest.core.errors import BadInput
from backtest.core.fileio import read_toml
from backtest.core.workspace import Workspace
from backtest.llm.client import LLMClient, LLMSettings

CLIENT_KEYS = frozenset(
    {
        "base_url",
        "model",
        "api_key_env",
        "temperature",
        "max_tokens",
        "seed",
        "timeout_s",
        "concurrency",
        "max_retries",
        "backoff_s",
    }
)
COMMON_KEYS = frozenset({"kind", "name", "description", "cache", "price"})  # price: backtest.llm.pricing


def load_llm_config(path: Path | str) -> dict[str, Any]:
    """Read an LLM config (TOML), with BadInput naming the file on any problem."""
    return read_toml(path, "LLM config")


def settings_from_config(
    config: dict[str, Any], where: str, max_tokens: int = 512, extra_keys: Iterable[str] = (), what: str = ""
) -> LLMSettings:
    """The client settings of ``config``; unknown keys, a missing endpoint or a non-zero temperature are refused.

    ``what`` names the consumer in errors ("unknown judge setting(s) ...")."""
    label = f"{what} setting" if what else "setting"
    unknown = sorted(set(config) - CLIENT_KEYS - COMMON_KEYS - set(extra_keys))
    if unknown:
        raise BadInput(f"{where}: unknown {label}(s) {', '.join(unknown)}")
    for key in ("base_url", "model"):
        if not config.get(key):
            raise BadInput(f"{where}: an llm judge needs {key!r}")
    try:
        settings = LLMSettings(
            base_url=str(config["base_url"]),
            model=str(config["model"]),
            api_key_env=str(config.get("api_key_env") or "") or None,
            temperature=float(config.get("temperature", 0.0)),
            max_tokens=int(config.get("max_tokens", max_tokens)),
            seed=config.get("seed", 0),
            timeout_s=float(config.get("timeout_s", 120)),
            concurrency=int(config.get("concurrency", 2)),
            max_retries=int(config.get("max_retries", 4)),
            backoff_s=float(config.get("backoff_s", 1.0)),
        )
    except (TypeError, ValueError) as exc:
        raise BadInput(f"{where}: bad {label} ({exc})") from None
    if settings.temperature != 0.0:
        raise BadInput(f"{where}: judges run at temperature 0 (got {settings.temperature})")
    return settings


def cache_path(config: dict[str, Any], default_cache: str, ws: Workspace | None = None) -> Path:
    """The answer cache of ``config`` (``cache``, else ``default_cache``), relative to the workspace root."""
    cache = Path(config.get("cache", default_cache))
    return cache if cache.is_absolute() else (ws or Workspace.from_env()).root / cache


def client_from_config(
    config: dict[str, Any],
    path: Path | None,
    default_cache: str,
    max_tokens: int = 300,
    extra_keys: Iterable[str] = (),
    ws: Workspace | None = None,
) -> tuple[LLMSettings, LLMClient]:
    """Settings and a cached client for a config."""
    settings = settings_from_config(config, str(path or "llm config"), max_tokens=max_tokens, extra_keys=extra_keys)
    return settings, LLMClient(settings, cache_path=cache_path(config, default_cache, ws))
