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
    prompt = "prompts/outcome-premise-v1.md"  # relative to the config file
    max_doc_chars = 1200                    # abstract characters shown per document
    max_documents = 8                       # show only the top-N retrieved documents (default: all)
    max_rationale_chars = 400               # length bounds in the answer schema
    max_relevance_chars = 160
    cache = ".cache/llm-judge.sqlite"       # relative to the workspace root

The prompt template (ours, versioned by file name) has a ``=== system ===`` and a
``=== user ===`` section with ``{{cutoff}}``, ``{{question}}``, ``{{premise}}``,
``{{n_documents}}`` and ``{{documents}}`` placeholders. Its sha256 and the config's
sha256 go into every Judgment (``judge.prompt_sha256``, ``judge.config_sha256``).

The answer is requested with a JSON schema (labels and the shown document ids as
enums), validated with pydantic, and checked by :mod:`backtest.judge.constraints`; a
violation is sent back once with the error message, and what is still wrong after
that is flagged ``needs_review``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput
from backtest.core.records import JudgeInfo, Judgment, Question, RetrievedDocument
from backtest.core.seal import sha256_file
from backtest.core.workspace import Workspace
from backtest.judge.constraints import check_answer, failed_judgment, parse_answer, retry_message, to_judgment
from backtest.judge.protocol import answer_schema
from backtest.llm.client import LLMClient, LLMError
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


def fill(template: str, values: dict[str, str]) -> str:
    """Replace ``{{name}}`` placeholders (no other syntax, so JSON braces in a template are safe)."""
    for key, value in values.items():
        template = template.replace("{{" + key + "}}", value)
    return template


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


class LLMJudge:
    """Label questions with an OpenAI-compatible chat model; cached, retried, constraint-checked."""

    def __init__(self, config: dict[str, Any], config_path: Path, ws: Workspace | None = None):
        self.llm = settings_from_config(config, str(config_path), max_tokens=512, extra_keys=_JUDGE_KEYS, what="judge")
        ws = ws or Workspace.from_env()
        self.config_path = config_path
        self.name = str(config.get("name") or config_path.stem)
        prompt_path = (config_path.parent / config.get("prompt", "prompts/outcome-premise-v1.md")).resolve()
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

    def stats(self) -> dict[str, Any]:
        """The client's counters: HTTP calls, cache hits, retries, tokens."""
        return self.client.stats.as_dict()

    def messages(self, question: Question, documents: list[RetrievedDocument]) -> list[dict[str, str]]:
        """The chat messages for one question (system + user)."""
        premise = f"Premise: {question.premise}\n" if question.premise else ""
        values = {
            "cutoff": str(question.cutoff_date),
            "question": question.question.strip(),
            "premise": premise,
            "n_documents": str(len(documents)),
            "documents": render_documents(documents, self.max_doc_chars),
        }
        return [
            {"role": "system", "content": fill(self.system_template, values)},
            {"role": "user", "content": fill(self.user_template, values)},
        ]

    def judge(self, question: Question, documents: list[RetrievedDocument]) -> Judgment:
        """Ask the model, check constraints, retry once with the error, flag what remains.

        Only the first ``max_documents`` retrieved documents are shown (all by default);
        citations are checked against exactly those.
        """
        documents = list(documents)[: self.max_documents] if self.max_documents else list(documents)
        shown = [d.id for d in documents]
        schema = answer_schema(shown if self.enum_ids else None, **self.schema_bounds)
        key_extra = {"prompt_sha256": self.prompt_sha256, "protocol": self.protocol}
        messages = self.messages(question, documents)
        tokens = {"prompt_tokens": 0, "completion_tokens": 0}

        def spend(usage: dict[str, int]) -> None:
            for name in tokens:
                tokens[name] += int(usage.get(name, 0))

        def ask(msgs: list[dict[str, str]]):
            try:
                resp = self.client.chat(
                    msgs, schema=schema, schema_name="judgment", key_extra=key_extra, validate=parse_answer
                )
            except LLMError as exc:
                spend(exc.usage)  # unusable answers still cost tokens: the judgment records them
                raise
            spend(resp.usage)
            return resp

        try:
            first = ask(messages)
        except LLMError as exc:
            return failed_judgment(question.question_id, self.info(), str(exc), tokens)
        answer, extra = first.parsed, []
        problems = check_answer(answer, shown)
        retried = None
        if problems:
            follow_up = messages + [
                {"role": "assistant", "content": first.content},
                {"role": "user", "content": retry_message(problems, shown)},
            ]
            try:
                second = ask(follow_up)
            except LLMError as exc:
                extra.append(f"constraint retry failed: {exc}")
            else:
                answer = second.parsed
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
