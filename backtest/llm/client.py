"""A small client for OpenAI-compatible chat endpoints (OpenAI, vLLM, Ollama, llama.cpp).

What it adds over a bare ``requests.post``:

* **Structured answers.** ``chat(messages, schema=...)`` sends
  ``response_format = {"type": "json_schema", "json_schema": {"name", "strict", "schema"}}``
  (the OpenAI shape, which llama.cpp's ``llama-server`` also accepts and turns into a
  grammar) and parses the answer as a JSON object; an optional ``validate`` callback
  (e.g. a pydantic ``model_validate``) may reject it.
* **Retries** with exponential backoff on HTTP 429 (honouring ``Retry-After``), 5xx,
  timeouts, connection errors and invalid JSON. Other 4xx answers fail at once.
* **Bounded concurrency** (:meth:`LLMClient.chat_many`, a ThreadPoolExecutor of
  ``settings.concurrency`` workers, results in input order).
* **An SQLite cache** keyed by everything that changes the answer: base URL, model,
  the full messages (so the prompt and system text), the schema, temperature,
  max tokens, seed and any ``key_extra`` the caller adds (e.g. a prompt sha256).
  Never by the API key, the timeout, the concurrency or the retry policy.
  Only answers that parsed (and validated) are cached.
* **Token accounting** from the ``usage`` object of each answer
  (:class:`ClientStats`; cache hits are counted separately and cost nothing).

The API key is read from the environment variable named by ``api_key_env`` at call
time, sent only in the ``Authorization`` header, and never stored: not in the cache,
not in stats, not in error messages. Only a variable named as :data:`API_KEY_ENV` says
(``OPENAI_API_KEY`` or ``BACKTEST_<NAME>_API_KEY``) may be named, so a config (a committed
file anyone can edit) cannot send any other secret of the environment to its endpoint.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import os
import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import requests
import tenacity
from pydantic import BaseModel, ConfigDict, model_validator

from backtest.core.errors import BadInput, redact, redact_answer
from backtest.core.seal import canonical_json, sha256_text
from backtest.llm.wire import AnswerFields, ChatBody

#: the environment variables an LLM config may name as its key (docs/judges.md, "API keys")
API_KEY_ENV = re.compile(r"OPENAI_API_KEY|BACKTEST_[A-Z0-9_]+_API_KEY")
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
CACHE_SCHEMA_VERSION = "1"


class LLMError(RuntimeError):
    """The endpoint gave no usable answer after all retries (or a non-retryable error)."""

    def __init__(
        self, message: str, attempts: int = 0, last_content: str | None = None, usage: dict[str, int] | None = None
    ):
        super().__init__(message)
        self.attempts = attempts
        self.last_content = last_content
        self.usage = dict(usage or {})  # tokens the failed attempts still spent (answers that came back unusable)


class InvalidAnswer(ValueError):
    """The answer was not a JSON object, or the caller's ``validate`` rejected it (retried)."""


class LLMSettings(BaseModel):
    """Where and how to call the model (one settings model for every LLM consumer; unknown fields are refused).
    Only the fields in :meth:`answer_fields` reach the cache key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0
    timeout_s: float = 120.0
    concurrency: int = 2
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 120.0

    @model_validator(mode="after")
    def _check(self) -> LLMSettings:
        if not self.base_url.startswith(("http://", "https://")):
            raise BadInput(f"base_url {self.base_url!r} must start with http:// or https://")
        if not self.model:
            raise BadInput("an LLM model name is required")
        if self.api_key_env and not API_KEY_ENV.fullmatch(self.api_key_env):
            raise BadInput(
                f"api_key_env {self.api_key_env!r} is refused: an API key is read only from OPENAI_API_KEY or a "
                "variable named BACKTEST_<NAME>_API_KEY (docs/judges.md), never from any other variable"
            )
        if self.concurrency < 1 or self.max_retries < 0 or self.max_tokens < 1 or self.timeout_s <= 0:
            raise BadInput("concurrency and max_tokens must be >= 1, max_retries >= 0 and timeout_s > 0")
        return self

    @property
    def endpoint(self) -> str:
        """The chat-completions URL: ``<base_url>/chat/completions`` (``/v1`` added when missing)."""
        base = self.base_url.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        return base + "/chat/completions"

    def answer_fields(self) -> AnswerFields:
        """The settings that can change an answer (the cache key's share of them)."""
        return AnswerFields(
            base_url=self.base_url.rstrip("/"),
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )

    def api_key(self) -> str | None:
        """The API key from the environment, read now; ``None`` when no variable is configured."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise BadInput(
                f"the LLM judge needs an API key in the environment variable {self.api_key_env} "
                "(it is never written to disk)"
            )
        return value


@dataclass
class LLMResponse:
    """One answer: the raw text, the parsed JSON object (when a schema was given), token usage."""

    content: str
    parsed: dict[str, Any] | None
    usage: dict[str, int]
    cache_key: str
    cached: bool
    attempts: int
    finish_reason: str | None = None


@dataclass
class ClientStats:
    """Counters for one client: HTTP calls, cache hits, retries and tokens (new calls only)."""

    http_calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    retry_reasons: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int | dict[str, int]]:
        """A JSON-ready copy."""
        return asdict(self)


@dataclass(frozen=True)
class ChatRequest:
    """One call for :meth:`LLMClient.chat_many`."""

    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    key_extra: dict[str, Any] | None = None
    validate: Callable[[dict[str, Any]], Any] | None = None
    seed: int | None = None  # overrides the settings' seed for this call (sampling at temperature > 0)


class ResponseCache:
    """An on-disk SQLite map from cache key to the answer (content + usage). Thread- and process-safe.

    The database is opened on first use, so making a judge from a config (to check it before using it) creates
    no file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        """The open database (opened and its table made on the first call); call with the lock held."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, request TEXT NOT NULL, content TEXT NOT "
                "NULL, usage TEXT NOT NULL, finish_reason TEXT, created_at TEXT NOT NULL)"
            )
            self._db = db
        return self._db

    def get(self, key: str) -> tuple[str, dict[str, int], str | None] | None:
        """The cached (content, usage, finish_reason) for ``key``, or None."""
        with self._lock:
            row = (
                self._conn()
                .execute("SELECT content, usage, finish_reason FROM answers WHERE key = ?", (key,))
                .fetchone()
            )
        if row is None:
            return None
        return row[0], json.loads(row[1]), row[2]

    def put(
        self, key: str, request: dict[str, Any], content: str, usage: dict[str, int], finish_reason: str | None
    ) -> None:
        """Store an answer (the first one for a key wins)."""
        stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock:
            self._conn().execute(
                "INSERT OR IGNORE INTO answers (key, request, content, usage, finish_reason, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, canonical_json(request), content, canonical_json(usage), finish_reason, stamp),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._conn().execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        """Close the database connection (if it was ever opened)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _retry_after_seconds(value: str | None) -> float | None:
    """Parse a ``Retry-After`` header (delta-seconds or an HTTP date) into seconds from now."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return max(0.0, (when - dt.datetime.now(dt.timezone.utc)).total_seconds())


def parse_json_object(content: str) -> dict[str, Any]:
    """Parse an answer as one JSON object, tolerating a surrounding ```json fence; else InvalidAnswer."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`")
        if text.lower().startswith("json"):
            text = text[4:]
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidAnswer(f"answer is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(obj, dict):
        raise InvalidAnswer(f"answer is JSON but not an object ({type(obj).__name__})")
    return obj


# No chat model reads or writes more than this in one call (the largest context windows are ~10^7 tokens): a
# count beyond it, or below zero, is a broken or hostile usage report, never a cost to record.
MAX_TOKENS_PER_CALL = 100_000_000


def completion_parts(data: Any) -> tuple[str, str | None, dict[str, int]]:
    """``(content, finish_reason, usage)`` of a chat-completion body, usage reduced to integer token counts;
    ValueError when it is not one. (Online answers and imported batch answers both go through it.)"""
    try:
        choice = data["choices"][0]
        content = choice["message"]["content"] or ""
        finish = choice.get("finish_reason")
        usage = {
            k: int(v)
            for k, v in (data.get("usage") or {}).items()
            if k in ("prompt_tokens", "completion_tokens", "total_tokens") and isinstance(v, (int, float))
        }
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ValueError("the response body is not a chat completion") from None
    if not isinstance(content, str):
        raise ValueError("the response body is not a chat completion (content is not text)")
    impossible = {k: v for k, v in usage.items() if v < 0 or v > MAX_TOKENS_PER_CALL}
    if impossible:
        raise ValueError(
            "the response reports an impossible token count ("
            + ", ".join(f"{k} {v}" for k, v in sorted(impossible.items()))
            + f"; a call's counts lie in 0..{MAX_TOKENS_PER_CALL:,}): refused, no cost recorded from it"
        )
    return content, finish if isinstance(finish, str) else None, usage


class _Retryable(Exception):
    """An attempt that failed in a way worth retrying (timeout, connection, 429/5xx, bad body, invalid answer)."""

    def __init__(self, reason: str, last_error: str, retry_after: float | None = None):
        super().__init__(last_error)
        self.reason, self.last_error, self.retry_after = reason, last_error, retry_after


def _retryable(retry_state: tenacity.RetryCallState) -> _Retryable:
    exc = retry_state.outcome.exception() if retry_state.outcome is not None else None
    assert isinstance(exc, _Retryable), exc
    return exc


@dataclass
class _Attempts:
    """What the attempts of one chat have spent and seen, for the error when they all fail."""

    n: int = 0
    last_content: str | None = None
    spent: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})


class LLMClient:
    """Chat with an OpenAI-compatible endpoint: schema-constrained, retried, cached, counted."""

    def __init__(
        self,
        settings: LLMSettings,
        cache_path: str | os.PathLike | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.settings = settings
        self.cache = ResponseCache(cache_path) if cache_path else None
        self.stats = ClientStats()
        self._stats_lock = threading.Lock()
        self._local = threading.local()
        self._sleep = sleep

    # ------------------------------------------------------------------ keys and bodies

    def request_body(
        self,
        messages: Sequence[dict[str, str]],
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> ChatBody:
        """The JSON body sent to ``/chat/completions`` (holds no key); ``seed`` overrides the settings' seed."""
        s = self.settings
        body: ChatBody = {
            "model": s.model,
            "messages": [dict(m) for m in messages],
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "stream": False,
        }
        seed = self._seed(seed)
        if seed is not None:
            body["seed"] = seed
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "strict": True, "schema": schema},
            }
        return body

    def cache_key(
        self,
        messages: Sequence[dict[str, str]],
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        key_extra: dict[str, Any] | None = None,
    ) -> str:
        """sha256 over everything that changes the answer (never the key, timeout or retry policy)."""
        return sha256_text(canonical_json(self.key_material(messages, schema, schema_name, key_extra)))

    def is_cached(
        self,
        messages: Sequence[dict[str, str]],
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        key_extra: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> bool:
        """True when :meth:`chat` with these arguments would be answered from the cache (no call)."""
        if self.cache is None:
            return False
        material = self.key_material(messages, schema, schema_name, key_extra, seed)
        return self.cache.get(sha256_text(canonical_json(material))) is not None

    def _seed(self, seed: int | None) -> int | None:
        """The sampling seed of one call: its own when given, else the settings'."""
        return self.settings.seed if seed is None else seed

    def key_material(self, messages, schema, schema_name, key_extra, seed: int | None = None) -> dict[str, Any]:
        """What :meth:`cache_key` hashes (and the cache stores beside the answer)."""
        return {
            "v": CACHE_SCHEMA_VERSION,
            "settings": {**self.settings.answer_fields(), "seed": self._seed(seed)},
            "messages": [dict(m) for m in messages],
            "schema": schema,
            "schema_name": schema_name,
            "extra": key_extra or {},
        }

    # ------------------------------------------------------------------ calls

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _count(self, **deltas: int) -> None:
        with self._stats_lock:
            for name, delta in deltas.items():
                setattr(self.stats, name, getattr(self.stats, name) + delta)

    def _note_retry(self, reason: str) -> None:
        with self._stats_lock:
            self.stats.retries += 1
            self.stats.retry_reasons[reason] = self.stats.retry_reasons.get(reason, 0) + 1

    def _backoff(self, attempt: int, retry_after: float | None = None) -> float:
        s = self.settings
        if retry_after is not None:
            return min(retry_after, s.max_retry_after_s)
        return min(s.backoff_s * (2**attempt), s.max_backoff_s)

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        key_extra: dict[str, Any] | None = None,
        validate: Callable[[dict[str, Any]], Any] | None = None,
        use_cache: bool = True,
        seed: int | None = None,
    ) -> LLMResponse:
        """One chat completion, from the cache when possible; raise :class:`LLMError` when all tries fail.

        With ``schema`` the answer must be a JSON object (and pass ``validate``, which should
        raise ``ValueError`` to reject it); a bad answer is retried like a 5xx. ``seed``
        overrides the settings' sampling seed for this call (and in the cache key).
        """
        material = self.key_material(messages, schema, schema_name, key_extra, seed)
        key = sha256_text(canonical_json(material))
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                content, usage, finish = hit
                parsed = parse_json_object(content) if schema is not None else None
                self._count(
                    cache_hits=1,
                    cached_prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    cached_completion_tokens=int(usage.get("completion_tokens", 0)),
                )
                return LLMResponse(content, parsed, usage, key, True, 0, finish)
        body = self.request_body(messages, schema, schema_name, seed)
        s = self.settings
        state = _Attempts()
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(s.max_retries + 1),
            retry=tenacity.retry_if_exception_type(_Retryable),
            wait=self._wait,
            sleep=self._sleep,
            before_sleep=lambda rs: self._note_retry(_retryable(rs).reason),
            reraise=True,
        )
        try:
            return retrying(self._attempt, body, schema, validate, key, material, state)
        except _Retryable as exc:
            self._count(failures=1)
            raise LLMError(
                f"no usable answer from {s.endpoint} after {s.max_retries + 1} attempt(s): {exc.last_error}",
                s.max_retries + 1,
                state.last_content,
                usage=state.spent,
            ) from None

    def _wait(self, retry_state: tenacity.RetryCallState) -> float:
        """Seconds before the next attempt: the server's Retry-After (capped), else capped exponential backoff."""
        return self._backoff(retry_state.attempt_number - 1, _retryable(retry_state).retry_after)

    def _attempt(
        self,
        body: ChatBody,
        schema: dict[str, Any] | None,
        validate: Callable[[dict[str, Any]], Any] | None,
        key: str,
        material: dict[str, Any],
        state: _Attempts,
    ) -> LLMResponse:
        """One HTTP call: the response, :class:`_Retryable` for what is worth retrying, LLMError for what is not."""
        s = self.settings
        state.n += 1
        headers = {"Content-Type": "application/json"}
        api_key = s.api_key()
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        try:
            self._count(http_calls=1)
            payload = cast(dict[str, Any], body)  # the wire: requests' JSON type knows no TypedDict
            resp = self._session().post(s.endpoint, json=payload, headers=headers, timeout=s.timeout_s)
        except requests.Timeout:
            raise _Retryable("timeout", f"timed out after {s.timeout_s:g} s") from None
        except requests.ConnectionError as exc:
            raise _Retryable("connection", f"connection error ({exc.__class__.__name__})") from None
        if resp.status_code in RETRYABLE_STATUS:
            retry_after = _retry_after_seconds(resp.headers.get("Retry-After")) if resp.status_code == 429 else None
            raise _Retryable(f"http_{resp.status_code}", f"HTTP {resp.status_code}", retry_after)
        if resp.status_code != 200:
            self._count(failures=1)
            raise LLMError(
                f"HTTP {resp.status_code} from {s.endpoint}: {(redact(resp.text, [api_key]) or '')[:200]!r}",
                state.n,
                usage=state.spent,
            )
        try:
            content, finish, usage = completion_parts(resp.json())
        except ValueError:
            raise _Retryable("bad_body", "the response body is not a chat completion") from None
        content = redact_answer(content, [api_key]) or ""
        self._count(prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0))
        for name in state.spent:
            state.spent[name] += usage.get(name, 0)
        state.last_content = content
        try:
            parsed = parse_json_object(content) if schema is not None else None
            if parsed is not None and validate is not None:
                validate(parsed)
        except (InvalidAnswer, ValueError) as exc:
            raise _Retryable("invalid_json", f"invalid answer: {' '.join(str(exc).split())[:300]}") from None
        # the answer cost every attempt it took (an unusable answer before it was billed too): its usage says so,
        # and so does the cache, so a run answered from the cache costs what its labels cost when bought
        usage = {**usage, **state.spent}
        if "total_tokens" in usage:
            usage["total_tokens"] = state.spent["prompt_tokens"] + state.spent["completion_tokens"]
        if self.cache is not None:
            self.cache.put(key, material, content, usage, finish)
        return LLMResponse(content, parsed, usage, key, False, state.n, finish)

    def chat_many(
        self, requests_: Sequence[ChatRequest], on_done: Callable[[int, LLMResponse | LLMError], None] | None = None
    ) -> list[LLMResponse | LLMError]:
        """Run many chats with at most ``settings.concurrency`` in flight; results (or LLMErrors) in input order."""

        def one(index_req: tuple[int, ChatRequest]) -> LLMResponse | LLMError:
            index, req = index_req
            try:
                out: LLMResponse | LLMError = self.chat(
                    list(req.messages), req.schema, req.schema_name, req.key_extra, req.validate, seed=req.seed
                )
            except LLMError as exc:
                out = exc
            if on_done is not None:
                on_done(index, out)
            return out

        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            return list(pool.map(one, enumerate(requests_)))

    def close(self) -> None:
        """Close the cache connection."""
        if self.cache is not None:
            self.cache.close()
