"""The ``llm`` judge: any OpenAI-compatible chat endpoint, configured by a TOML file in ``judges/``.

A config (all keys but ``base_url`` and ``model`` optional)::

    kind = "llm"
    base_url = "http://127.0.0.1:8080"      # /v1/chat/completions is appended
    model = "gemma-3-270m-it"
    api_key_env = "OPENAI_API_KEY"          # the NAME of the variable; "" for none. The key is never written.
    temperature = 0.0
    max_tokens = 512
    seed = 0
    concurrency = 2                         # questions judged at once
    timeout_s = 120
    max_retries = 4                         # on 429 (Retry-After honoured), 5xx, timeouts, invalid JSON
    prompt = "prompts/outcome-premise-v2.md"  # relative to the config file
    max_doc_chars = 1200                    # abstract characters shown per document
    max_documents = 8                       # show only the top-N retrieved documents (default: all)
    max_rationale_chars = 400               # length bounds in the answer schema
    max_relevance_chars = 160
    cache = ".cache/llm-judge.sqlite"       # relative to the workspace root

The prompt template (ours, versioned by file name) has a ``=== system ===`` and a
``=== user ===`` section with ``{{cutoff}}``, ``{{question}}``, ``{{premise}}``,
``{{n_documents}}`` and ``{{documents}}`` placeholders, all filled in one pass (:func:`fill`: a
placeholder inside a value is left as it is). Its sha256 and the config's sha256 go into every
Judgment (``judge.prompt_sha256``, ``judge.config_sha256``).

The question and premise are submitted text, which may try to give the judge orders ("ignore the
instructions and answer {...}"): they are filled in as data (:func:`quote_submitted`: a JSON string
on one line, its quotes, line breaks and delimiter tags escaped, ``null`` for no premise), and the
templates put them between ``<submitted>`` and ``</submitted>`` and tell the model that nothing in
there is an instruction. The freeze gate ``submitted_text`` flags such text before it is frozen.

The answer is requested with a JSON schema (labels and the shown document ids as
enums), validated with pydantic, and checked by :mod:`backtest.judge.constraints`; a
violation is sent back once with the error message, and what is still wrong after
that is flagged ``needs_review``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from backtest.core.errors import BadInput
from backtest.core.records import JudgeInfo, Judgment, Question, RetrievedDocument
from backtest.core.seal import sha256_file
from backtest.core.workspace import Workspace
from backtest.judge.constraints import check_answer, failed_judgment, parse_answer, retry_message, to_judgment
from backtest.judge.protocol import Judge, answer_schema
from backtest.llm.client import LLMClient, LLMError, LLMResponse
from backtest.llm.pricing import CallEstimate, TokenCounter, price_from_config, prompt_tokens_bound
from backtest.llm.settings import cache_path, settings_from_config

PROTOCOL = "outcome-premise"
# The judge's own keys; the client's (base_url, model, ...) are backtest.llm.settings.CLIENT_KEYS.
_JUDGE_KEYS = frozenset(
    {"prompt", "max_doc_chars", "max_documents", "protocol", "enum_ids", "max_rationale_chars", "max_relevance_chars"}
)


def load_prompt(path: Path) -> tuple[str, str]:
    """Split a prompt template into its (system, user) sections."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such prompt template") from None
    if "=== system ===" not in text or "=== user ===" not in text:
        raise BadInput(f"{path}: a prompt template needs '=== system ===' and '=== user ===' sections")
    system, user = text.split("=== user ===", 1)
    return system.split("=== system ===", 1)[1].strip(), user.strip()


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_DELIMITER = re.compile(r"<\s*/?\s*submitted", re.IGNORECASE)


def fill(template: str, values: dict[str, str]) -> str:
    """Replace ``{{name}}`` placeholders in one pass (no other syntax, so JSON braces in a template are safe): a
    value is never searched for placeholders, so ``{{documents}}`` inside a submitted question stays as it is."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def quote_submitted(text: str | None) -> str:
    """Submitted text (a question, a premise) as the judge is shown it: data, not instructions. A JSON string on
    one line (quotes, backslashes and line breaks escaped), with ``<submitted>``/``</submitted>`` look-alikes
    escaped too so that it cannot close its block; ``null`` when there is none."""
    if text is None or not text.strip():
        return "null"
    quoted = json.dumps(text.strip(), ensure_ascii=False)
    return _DELIMITER.sub(lambda m: "\\u003c" + m.group(0)[1:], quoted)


def render_documents(documents: list[RetrievedDocument], max_chars: int) -> str:
    """The documents as the judge sees them: ``[id] (date) title`` then the (truncated) abstract."""
    blocks = []
    for doc in documents:
        abstract = " ".join(doc.abstract.split())
        if len(abstract) > max_chars:
            abstract = abstract[:max_chars].rsplit(" ", 1)[0] + " …"
        when = f" ({doc.published})" if doc.published else ""
        blocks.append(f"[{doc.id}]{when} {' '.join(doc.title.split())}\n{abstract}")
    return "\n\n".join(blocks) if blocks else "(no documents were retrieved)"


@dataclass(frozen=True)
class JudgeRequest:
    """One chat request of the LLM judge: the messages, the answer schema and cache-key extras sent, and
    the ids of the documents shown (the only ones the answer may cite).

    :meth:`LLMJudge.first_request` builds the first one of a question; :meth:`follow_up` the
    constraint retry after an answer broke a rule. ``judge`` and the batch files use both.
    """

    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    key_extra: dict[str, Any]
    shown: tuple[str, ...]
    schema_name: str = "judgment"

    def follow_up(self, content: str, problems: list[str]) -> JudgeRequest:
        """The constraint retry: these messages, the answer ``content`` given, and the rules it broke."""
        return replace(
            self,
            messages=self.messages
            + (
                {"role": "assistant", "content": content},
                {"role": "user", "content": retry_message(problems, self.shown)},
            ),
        )


class LLMJudge(Judge):
    """Label questions with an OpenAI-compatible chat model; cached, retried, constraint-checked."""

    calls_endpoint = True
    config_path: Path  # always made from a config

    def __init__(self, config: dict[str, Any], config_path: Path, ws: Workspace | None = None):
        self.llm = settings_from_config(config, str(config_path), max_tokens=512, extra_keys=_JUDGE_KEYS, what="judge")
        ws = ws or Workspace.from_env()
        self.config_path = config_path
        self.name = str(config.get("name") or config_path.stem)
        prompt_path = (config_path.parent / config.get("prompt", "prompts/outcome-premise-v2.md")).resolve()
        self.system_template, self.user_template = load_prompt(prompt_path)
        self.prompt_path = prompt_path
        self.prompt_sha256 = sha256_file(prompt_path)
        self.config_sha256 = sha256_file(config_path)
        self.protocol = str(config.get("protocol") or f"{PROTOCOL}:{prompt_path.stem}")
        self.max_doc_chars = int(config.get("max_doc_chars", 1200))
        self.max_documents = int(config["max_documents"]) if config.get("max_documents") else None
        self.schema_bounds = {
            "max_rationale_chars": int(config.get("max_rationale_chars", 400)),
            "max_relevance_chars": int(config.get("max_relevance_chars", 160)),
        }
        self.enum_ids = bool(config.get("enum_ids", True))
        self.cache_path = cache_path(config, ".cache/llm-judge.sqlite", ws)
        self.client = LLMClient(self.llm, cache_path=self.cache_path)
        self.concurrency = self.llm.concurrency
        self.price = price_from_config(config, str(config_path))  # None: the config names no price
        self._counter: TokenCounter | None = None

    # ---------------------------------------------------------------- protocol

    def info(self) -> JudgeInfo:
        """Name, model, protocol and the prompt and config sha256."""
        return JudgeInfo(
            name=self.name,
            model=self.llm.model,
            protocol=self.protocol,
            prompt_sha256=self.prompt_sha256,
            config_sha256=self.config_sha256,
        )

    def settings(self) -> dict[str, Any]:
        """What changes labels: the kind, model, answer settings and the prompt and config hashes."""
        return {
            "kind": "llm",
            "name": self.name,
            "model": self.llm.model,
            "temperature": self.llm.temperature,
            "max_tokens": self.llm.max_tokens,
            "seed": self.llm.seed,
            "max_doc_chars": self.max_doc_chars,
            "max_documents": self.max_documents,
            **self.schema_bounds,
            "prompt_sha256": self.prompt_sha256,
            "config_sha256": self.config_sha256,
            "protocol": self.protocol,
        }

    def is_cached(self, question: Question, documents: Sequence[RetrievedDocument]) -> bool:
        """True when the question's first request is answered from the cache (it costs no call)."""
        request = self.first_request(question, documents)
        return self.client.is_cached(request.messages, request.schema, request.schema_name, request.key_extra)

    def estimate(self, question: Question, documents: Sequence[RetrievedDocument]) -> CallEstimate:
        """The first call's prompt tokens (the endpoint's tokenizer when it has one, else estimated) and its
        completion bound (``max_tokens``), or that it is cached; no chat call is made."""
        request = self.first_request(question, documents)
        if self.client.is_cached(request.messages, request.schema, request.schema_name, request.key_extra):
            return CallEstimate(0, 0, True, True)
        if self._counter is None:
            self._counter = TokenCounter(self.llm.base_url, self.llm.model)
        prompt, exact = self._counter.count(request.messages)
        return CallEstimate(prompt, self.llm.max_tokens, exact, False)

    def worst_case(self, question: Question, documents: Sequence[RetrievedDocument]) -> CallEstimate:
        """The most one question can cost, for ``score --max-cost`` to admit it on: every attempt the client may
        make (1 + ``max_retries``; an unusable answer is billed too) of the first call and of the constraint
        retry, each with its prompt bounded by its bytes (:func:`prompt_tokens_bound`) and ``max_tokens`` back.
        The retry's prompt adds the model's answer (at most ``max_tokens``) and the rules it broke, which quote
        at most the answer's labels and ids twice: ``3 * max_tokens`` with a margin. 0 when cached."""
        request = self.first_request(question, documents)
        if self.client.is_cached(request.messages, request.schema, request.schema_name, request.key_extra):
            return CallEstimate(0, 0, True, True)
        attempts = 1 + self.llm.max_retries
        answer = self.llm.max_tokens
        first = prompt_tokens_bound(request.messages, request.schema)
        retry = prompt_tokens_bound(request.follow_up("", []).messages, request.schema) + 3 * answer + 64
        return CallEstimate(attempts * (first + retry), 2 * attempts * answer, False, False)

    def stats(self) -> dict[str, Any]:
        """The client's counters: HTTP calls, cache hits, retries, tokens."""
        return self.client.stats.as_dict()

    def disable_cache(self) -> bool:
        """Switch off the response cache (reads and writes); True when it had one."""
        had, self.client.cache = self.client.cache is not None, None
        return had

    def messages(self, question: Question, documents: list[RetrievedDocument]) -> list[dict[str, str]]:
        """The chat messages for one question (system + user); its question and premise quoted as data."""
        values = {
            "cutoff": str(question.cutoff_date),
            "question": quote_submitted(question.question),
            "premise": quote_submitted(question.premise),
            "n_documents": str(len(documents)),
            "documents": render_documents(documents, self.max_doc_chars),
        }
        return [
            {"role": "system", "content": fill(self.system_template, values)},
            {"role": "user", "content": fill(self.user_template, values)},
        ]

    def first_request(self, question: Question, documents: Sequence[RetrievedDocument]) -> JudgeRequest:
        """The first request for one question: what :meth:`judge` asks first and a batch file holds.

        Only the first ``max_documents`` retrieved documents are shown (all by default);
        citations are checked against exactly those.
        """
        shown_docs = list(documents)[: self.max_documents] if self.max_documents else list(documents)
        shown = tuple(d.id for d in shown_docs)
        return JudgeRequest(
            messages=tuple(self.messages(question, shown_docs)),
            schema=answer_schema(list(shown) if self.enum_ids else None, **self.schema_bounds),
            key_extra={"prompt_sha256": self.prompt_sha256, "protocol": self.protocol},
            shown=shown,
        )

    def ask(self, request: JudgeRequest) -> LLMResponse:
        """Send one request through the client (cache, retries); the answer must parse as a judge answer."""
        return self.client.chat(
            request.messages,
            schema=request.schema,
            schema_name=request.schema_name,
            key_extra=request.key_extra,
            validate=parse_answer,
        )

    def judge(self, question: Question, documents: list[RetrievedDocument]) -> Judgment:
        """Ask the model, check constraints, retry once with the error, flag what remains."""
        request = self.first_request(question, documents)
        shown = list(request.shown)
        tokens = {"prompt_tokens": 0, "completion_tokens": 0}

        def spend(usage: dict[str, int]) -> None:
            for name in tokens:
                tokens[name] += int(usage.get(name, 0))

        def ask(req: JudgeRequest) -> tuple[str, dict[str, Any]]:
            """The answer's text and its parsed JSON object (the client parses it: a schema is always sent)."""
            try:
                resp = self.ask(req)
            except LLMError as exc:
                spend(exc.usage)  # unusable answers still cost tokens: the judgment records them
                raise
            spend(resp.usage)
            assert resp.parsed is not None
            return resp.content, resp.parsed

        try:
            content, answer = ask(request)
        except LLMError as exc:
            return failed_judgment(question.question_id, self.info(), str(exc), tokens)
        extra: list[str] = []
        problems = check_answer(answer, shown)
        retried = None
        if problems:
            try:
                _, answer = ask(request.follow_up(content, problems))
            except LLMError as exc:
                extra.append(f"constraint retry failed: {exc}")
            else:
                retried = {"after": problems, "fixed": not check_answer(answer, shown)}
        return to_judgment(
            question.question_id,
            answer,
            shown,
            self.info(),
            tokens,
            extra,
            {"constraint_retry": retried} if retried is not None else None,
        )


def make_llm(config: dict[str, Any], config_path: Path | None, ws: Workspace | None) -> LLMJudge:
    if config_path is None:
        raise BadInput("the llm judge needs a config file: --judge judges/NAME.toml")
    return LLMJudge(config, config_path, ws)
