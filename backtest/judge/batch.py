"""Provider batch files for the LLM judge: export its requests, import the provider's answers into its cache.

A batch API (the OpenAI Batch API, ``vllm run-batch``) answers many requests offline, at
lower cost, from a JSON Lines file. The flow::

    backtest judge batch export FROZEN_DIR --judge judges/X.toml --out requests.jsonl
    # the provider answers requests.jsonl into results.jsonl
    backtest judge batch import results.jsonl --requests requests.jsonl
    backtest score FROZEN_DIR --judge judges/X.toml        # served from the judge's cache

**Export** (:func:`export_batch`) retrieves for the frozen set exactly as ``score`` does
(the same deterministic retrieval) and writes, per question, the request the judge would
send next and does not have in its cache: its first request
(:meth:`~backtest.judge.llm.LLMJudge.first_request`), or, when the first answer is cached
but broke a citation rule, the constraint retry
(:meth:`~backtest.judge.llm.JudgeRequest.follow_up`). Each line is OpenAI Batch input,
``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``, where ``body`` is
the client's own :meth:`~backtest.llm.client.LLMClient.request_body` (it never holds an API
key). Questions whose answers are all cached are skipped. Beside the requests file goes
its manifest, ``NAME.manifest.json`` (:class:`BatchManifest`): every ``custom_id`` with its
question ids, the judge's cache key and key material and the shown document ids, plus
the judge config's path and sha256 and the frozen set's seal.

**Import** (:func:`import_batch`) reads OpenAI Batch output lines (``{"id", "custom_id",
"response": {"status_code", "request_id", "body"}, "error"}``), checks each answer as the
judge does (a JSON object, :func:`~backtest.judge.constraints.parse_answer`,
:func:`~backtest.judge.constraints.check_answer` against the shown ids) and stores it in the
judge's response cache under the judge's key, with the answer's token usage and
finish_reason, so the following ``score`` asks nothing for it. A line that fails (an error,
a status other than 200, an unknown ``custom_id``, an answer that is not JSON or not a
judge answer) is reported by its ``custom_id`` and not cached: ``score`` asks it online.
A first answer that parses but breaks a citation rule is cached, as the online judge
caches it, and reported: its constraint retry is still to be asked (export again to
batch it, or let ``score`` ask it online).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from backtest import __version__
from backtest.core.errors import BadInput, redact, redact_answer
from backtest.core.fileio import atomic_write_text, iter_jsonl, read_json
from backtest.core.records import Output, Question, RetrievedDocument, parse_record, write_output
from backtest.core.seal import sha256_file, sha256_json
from backtest.core.workspace import Workspace
from backtest.judge.constraints import check_answer, parse_answer
from backtest.judge.llm import JudgeRequest, LLMJudge
from backtest.llm.client import InvalidAnswer, ResponseCache, completion_parts, parse_json_object

BATCH_URL = "/v1/chat/completions"
MAX_CUSTOM_ID = 64
MANIFEST_SUFFIX = ".manifest.json"
DEFAULT_REQUESTS = "requests.jsonl"

Attempt = Literal["first", "constraint_retry"]


# --------------------------------------------------------------------------- the manifest


class BatchEntry(BaseModel):
    """One request of a batch file: which questions it answers and where its answer goes in the cache."""

    model_config = ConfigDict(extra="allow")

    custom_id: StrictStr = Field(min_length=1, max_length=MAX_CUSTOM_ID)
    question_ids: list[StrictStr] = Field(min_length=1)  # more than one only when questions share a request
    attempt: Attempt  # the judge's first request, or its constraint retry after a cached first answer
    cache_key: StrictStr
    key_material: dict[str, Any]  # what the cache key hashes (the client's key material, stored with the answer)
    shown_ids: list[StrictStr]  # the documents shown: the only ids an answer may cite


class BatchJudgeRef(BaseModel):
    """The judge a batch file was made for: the config path and hashes import checks before caching anything."""

    model_config = ConfigDict(extra="allow")

    name: str
    model: str
    protocol: str
    config_path: str  # relative to the workspace root when inside it
    config_sha256: str
    prompt_sha256: str
    settings_sha256: str  # sha256 of the judge's settings(): everything that changes its labels
    cache: str


class BatchFrozenRef(BaseModel):
    """The frozen set a batch file was made from."""

    model_config = ConfigDict(extra="allow")

    path: str
    seal: str
    instance_id: str
    instance_seal: str
    system: str
    n_questions: int


class BatchManifest(Output):
    """``NAME.manifest.json`` beside a batch requests file ``NAME.jsonl``: maps each custom_id back to its
    questions and the judge's cache key (``backtest judge batch export`` writes it, ``import`` reads it)."""

    kind: Literal["judge-batch-requests"] = "judge-batch-requests"
    created_at: str
    backtest_version: str
    requests_file: str  # the requests file's name (it lies beside the manifest)
    requests_sha256: str
    url: str = BATCH_URL
    judge: BatchJudgeRef
    frozen: BatchFrozenRef
    n_questions_cached: int  # questions skipped: every answer they need is in the judge's cache already
    n_duplicates: int  # questions whose request equals an earlier question's (one request serves both)
    requests: list[BatchEntry]


def manifest_path_of(requests_path: str | os.PathLike[str]) -> Path:
    """The manifest beside a requests file: ``X.jsonl`` -> ``X.manifest.json`` (other names get the suffix added)."""
    path = Path(requests_path)
    stem = path.stem if path.suffix == ".jsonl" else path.name
    return path.with_name(stem + MANIFEST_SUFFIX)


def load_manifest(path: Path) -> BatchManifest:
    """Read a batch manifest; BadInput naming the file when it is missing, malformed or of an unknown version."""
    if not path.is_file():
        raise BadInput(
            f"{path}: no such batch manifest (export writes it beside the requests file; give that with --requests)"
        )
    manifest: BatchManifest = parse_record(BatchManifest, read_json(path), str(path))
    return manifest


# --------------------------------------------------------------------------- shared pieces


def load_llm_judge(spec: str, ws: Workspace) -> LLMJudge:
    """The ``llm`` judge a config names; BadInput for any other kind (batch files are chat requests)."""
    from backtest.judge import get_judge

    judge = get_judge(spec, ws)
    if not isinstance(judge, LLMJudge):
        raise BadInput(f'{spec}: batch files are for llm judges (kind = "llm"), not the {judge.name} judge')
    return judge


def cache_entry(judge: LLMJudge, request: JudgeRequest) -> tuple[str, dict[str, Any]]:
    """The judge's cache key of ``request`` and the key material it hashes (what the client stores with it)."""
    client = judge.client
    key = client.cache_key(request.messages, request.schema, request.schema_name, request.key_extra)
    material = client.key_material(request.messages, request.schema, request.schema_name, request.key_extra)
    return key, material


def judge_cache(judge: LLMJudge) -> ResponseCache:
    """The judge's response cache (where batch answers go); BadInput when it has none."""
    if judge.client.cache is None:
        raise BadInput(f"judge {judge.name}: no response cache configured; batch answers are imported into it")
    return judge.client.cache


def _cached_content(judge: LLMJudge, key: str) -> str | None:
    """The cached answer text for ``key``, or None."""
    hit = judge_cache(judge).get(key)
    return hit[0] if hit is not None else None


def pending_request(
    judge: LLMJudge, question: Question, documents: list[RetrievedDocument]
) -> tuple[JudgeRequest, Attempt] | None:
    """The request the judge would send next for ``question`` that its cache cannot answer, or None.

    The first request when it is not cached; else, when the cached first answer breaks a citation
    rule, the constraint retry :meth:`~backtest.judge.llm.LLMJudge.judge` would ask, unless that is
    cached too.
    """
    first = judge.first_request(question, documents)
    content = _cached_content(judge, cache_entry(judge, first)[0])
    if content is None:
        return first, "first"
    problems = check_answer(parse_json_object(content), first.shown)  # cached answers passed parse_answer
    if not problems:
        return None
    retry = first.follow_up(content, problems)
    if _cached_content(judge, cache_entry(judge, retry)[0]) is not None:
        return None
    return retry, "constraint_retry"


def custom_id_of(index: int, attempt: Attempt, key: str) -> str:
    """``q<question index>-<a|r>-<first 32 hex of the cache key>``: unique in a file, at most 64 characters."""
    custom_id = f"q{index}-{'a' if attempt == 'first' else 'r'}-{key[:32]}"
    if len(custom_id) > MAX_CUSTOM_ID:
        raise BadInput(f"custom_id {custom_id!r} is longer than {MAX_CUSTOM_ID} characters")
    return custom_id


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _resolve(path: str | os.PathLike[str], ws: Workspace) -> Path:
    """``path`` as given when it exists or is absolute, else relative to the workspace root."""
    path = Path(path)
    return path if path.is_absolute() or path.exists() else ws.root / path


# --------------------------------------------------------------------------- export


@dataclass
class ExportSummary:
    """What :func:`export_batch` wrote."""

    requests: str
    manifest: str
    n_questions: int
    n_requests: int
    n_first: int
    n_constraint_retry: int
    n_questions_cached: int
    n_duplicates: int
    judge: str
    model: str
    frozen_seal: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return asdict(self)


def export_batch(
    frozen_path: str | os.PathLike[str],
    judge_spec: str,
    out: str | os.PathLike[str],
    ws: Workspace,
    progress: bool = False,
) -> ExportSummary:
    """Write the judge's pending requests for a frozen set to ``out`` (OpenAI Batch input) and its manifest.

    Retrieval is ``score``'s (the instance's settings, deterministic); the frozen set must be
    frozen and intact (CheckFailed otherwise).
    """
    from backtest.retrieve import retrieve_frozen
    from backtest.submit.freeze import load_frozen

    judge = load_llm_judge(judge_spec, ws)
    frozen_dir = _resolve(frozen_path, ws)
    if not frozen_dir.is_dir():
        raise BadInput(f"{frozen_path}: no such frozen set folder")
    retrievals = retrieve_frozen(frozen_dir, ws, progress=progress)  # refuses a set not frozen and intact
    bundle = load_frozen(frozen_dir)
    frozen = BatchFrozenRef(
        path=ws.relative(frozen_dir),
        seal=bundle.frozen.seal,
        instance_id=bundle.frozen.instance_id,
        instance_seal=bundle.frozen.instance_seal,
        system=bundle.frozen.system,
        n_questions=len(bundle.questions),
    )
    return write_batch(judge, bundle.questions, [list(r.documents) for r in retrievals], out, ws, frozen)


def write_batch(
    judge: LLMJudge,
    questions: Sequence[Question],
    documents: Sequence[list[RetrievedDocument]],
    out: str | os.PathLike[str],
    ws: Workspace,
    frozen: BatchFrozenRef,
) -> ExportSummary:
    """Write the requests ``judge`` still needs for ``questions`` (each with its retrieved ``documents``) to
    ``out`` and the manifest beside it; both atomically, the requests file first."""
    entries: dict[str, BatchEntry] = {}  # by cache key
    lines: list[str] = []
    n_cached = n_duplicates = 0
    for index, (question, docs) in enumerate(zip(questions, documents)):
        pending = pending_request(judge, question, docs)
        if pending is None:
            n_cached += 1
            continue
        request, attempt = pending
        key, material = cache_entry(judge, request)
        if key in entries:
            entries[key].question_ids.append(question.question_id)
            n_duplicates += 1
            continue
        entry = BatchEntry(
            custom_id=custom_id_of(index, attempt, key),
            question_ids=[question.question_id],
            attempt=attempt,
            cache_key=key,
            key_material=material,
            shown_ids=list(request.shown),
        )
        entries[key] = entry
        body = judge.client.request_body(request.messages, request.schema, request.schema_name)
        line = {"custom_id": entry.custom_id, "method": "POST", "url": BATCH_URL, "body": body}
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    out = Path(out)
    atomic_write_text(out, "".join(lines))
    manifest_path = manifest_path_of(out)
    manifest = BatchManifest(
        created_at=_now(),
        backtest_version=__version__,
        requests_file=out.name,
        requests_sha256=sha256_file(out),
        judge=BatchJudgeRef(
            name=judge.name,
            model=judge.llm.model,
            protocol=judge.protocol,
            config_path=ws.relative(judge.config_path),
            config_sha256=judge.config_sha256,
            prompt_sha256=judge.prompt_sha256,
            settings_sha256=sha256_json(judge.settings()),
            cache=ws.relative(judge.cache_path),
        ),
        frozen=frozen,
        n_questions_cached=n_cached,
        n_duplicates=n_duplicates,
        requests=list(entries.values()),
    )
    write_output(manifest_path, BatchManifest, manifest.model_dump(mode="json"))
    return ExportSummary(
        requests=str(out),
        manifest=str(manifest_path),
        n_questions=len(questions),
        n_requests=len(entries),
        n_first=sum(e.attempt == "first" for e in entries.values()),
        n_constraint_retry=sum(e.attempt == "constraint_retry" for e in entries.values()),
        n_questions_cached=n_cached,
        n_duplicates=n_duplicates,
        judge=judge.name,
        model=judge.llm.model,
        frozen_seal=frozen.seal,
    )


# --------------------------------------------------------------------------- import


class BatchResponse(BaseModel):
    """The ``response`` of an OpenAI Batch output line."""

    model_config = ConfigDict(extra="allow")

    status_code: StrictInt
    request_id: str | None = None
    body: Any = None


class BatchResultLine(BaseModel):
    """One line of an OpenAI Batch output (or error) file, as ``vllm run-batch`` also writes it."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    custom_id: StrictStr
    response: BatchResponse | None = None
    error: Any = None


class LineFailed(Exception):
    """A result line whose answer cannot be imported (the reason is the message)."""


def read_results(path: Path) -> list[tuple[int, BatchResultLine]]:
    """Every line of a batch output file; BadInput (exit 2) when the file is not JSON Lines of output records."""
    rows = []
    for lineno, obj in iter_jsonl(path):
        if "response" not in obj and "error" not in obj:
            hint = " (it looks like a requests file)" if "body" in obj else ""
            raise BadInput(
                f"{path}:{lineno}: not a batch output line: no 'response' and no 'error'{hint}; "
                "give the file the batch service wrote"
            )
        rows.append((lineno, parse_record(BatchResultLine, obj, f"{path}:{lineno}")))
    if not rows:
        raise BadInput(f"{path}: no result lines")
    return rows


def _describe_error(error: Any) -> str:
    """An OpenAI batch ``error`` (``{"code", "message"}``, or anything else) as one short line."""
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        text = ": ".join(str(p) for p in (code, message) if p) or json.dumps(error)[:200]
    else:
        text = str(error)
    return " ".join(text.split())[:300]


def _check_model(line: BatchResultLine, model: str) -> None:
    """LineFailed when the line's answer names another model than the manifest's (a dated snapshot of it, the
    manifest's name followed by ``-``, is the same model)."""
    body = line.response.body if line.response is not None else None
    answered = body.get("model") if isinstance(body, dict) else None
    if isinstance(answered, str) and answered != model and not answered.startswith(f"{model}-"):
        raise LineFailed(f"answered by model {answered!r}, not the manifest's {model!r}: another judge's answer")


def answer_of(line: BatchResultLine, secret: str | None) -> tuple[str, str | None, dict[str, int]]:
    """The usable answer of a result line (content with ``secret`` redacted, finish_reason, usage), or LineFailed."""
    if line.error is not None:
        raise LineFailed(f"error: {redact(_describe_error(line.error), [secret])}")
    if line.response is None:
        raise LineFailed("no response")
    if line.response.status_code != 200:
        body = line.response.body
        detail = redact(_describe_error(body.get("error") or body), [secret]) if isinstance(body, dict) and body else ""
        raise LineFailed(f"HTTP {line.response.status_code}" + (f": {detail}" if detail else ""))
    try:
        content, finish, usage = completion_parts(line.response.body)
    except ValueError as exc:
        raise LineFailed(str(exc)) from None
    return redact_answer(content, [secret]) or "", finish, usage


def check_content(content: str, entry: BatchEntry) -> list[str]:
    """Check an answer as the judge does: LineFailed when it is not a judge answer, else the citation rules it
    breaks (a first answer with problems gets a constraint retry; a retry's answer stands, flagged)."""
    try:
        answer = parse_answer(parse_json_object(content))
    except (InvalidAnswer, ValueError) as exc:
        raise LineFailed(f"invalid answer: {' '.join(str(exc).split())[:300]}") from None
    return check_answer(answer, entry.shown_ids)


@dataclass
class ImportSummary:
    """What :func:`import_batch` did, with one entry per line that was not imported cleanly."""

    results: str
    manifest: str
    cache: str
    n_lines: int
    n_requests: int
    n_imported: int = 0
    n_already_cached: int = 0
    n_complete: int = 0  # requests of the manifest whose answer is cached and needs no constraint retry
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)  # {custom_id, question_ids, line, reason}: not cached
    constraint_retry: list[dict[str, Any]] = field(default_factory=list)  # cached; their retry is still to ask
    missing: list[dict[str, Any]] = field(default_factory=list)  # requests of the manifest without a result line

    @property
    def ok(self) -> bool:
        """Every line imported and every request complete: ``score`` asks nothing online for them."""
        return not self.failed and self.n_complete == self.n_requests

    def problem_line(self) -> str:
        """One line saying what was not imported (empty when :attr:`ok`)."""
        if self.ok:
            return ""
        parts = [
            f"{len(self.failed)} failed line(s)" if self.failed else "",
            f"{len(self.missing)} request(s) without a result line" if self.missing else "",
            f"{len(self.constraint_retry)} answer(s) still need their constraint retry"
            if self.constraint_retry
            else "",
        ]
        return (
            f"not all imported: {', '.join(p for p in parts if p)}; {self.n_complete} of {self.n_requests} "
            "requests complete (`backtest score` asks the rest online, or export again to batch them)"
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy with the counts."""
        return {
            **asdict(self),
            "n_failed": len(self.failed),
            "n_constraint_retry": len(self.constraint_retry),
            "n_missing": len(self.missing),
            "ok": self.ok,
        }


def _check_manifest(manifest: BatchManifest, manifest_path: Path, requests_path: Path, ws: Workspace) -> LLMJudge:
    """The manifest's judge, after checking that its config, prompt and requests file are unchanged (else BadInput)."""
    config = Path(manifest.judge.config_path)
    config = config if config.is_absolute() else ws.root / config  # export wrote it relative to the root
    if not config.is_file():
        raise BadInput(f"{manifest_path}: its judge config {manifest.judge.config_path} is missing")
    now = sha256_file(config)
    if now != manifest.judge.config_sha256:
        raise BadInput(
            f"{manifest_path}: made with judge config {manifest.judge.config_path} of sha256 "
            f"{manifest.judge.config_sha256[:12]}…, which is now {now[:12]}…; its answers would not be the ones "
            "the judge asks for: export again"
        )
    judge = load_llm_judge(str(config), ws)
    if sha256_json(judge.settings()) != manifest.judge.settings_sha256:
        raise BadInput(
            f"{manifest_path}: the judge's settings changed since export (its prompt template?); export again"
        )
    if requests_path.is_file() and sha256_file(requests_path) != manifest.requests_sha256:
        raise BadInput(f"{requests_path}: changed since export, so {manifest_path.name} no longer describes it")
    return judge


def import_batch(
    results_path: str | os.PathLike[str], ws: Workspace, requests_path: str | os.PathLike[str] | None = None
) -> ImportSummary:
    """Import a provider's batch output into the judge's response cache (see the module docstring).

    ``requests_path`` (default: ``requests.jsonl`` beside the results) locates the manifest
    beside it. BadInput (exit 2) for an unusable results file or manifest, before anything is
    cached; lines that fail are listed in the summary and not cached.
    """
    results = Path(results_path)
    requests = Path(requests_path) if requests_path is not None else results.with_name(DEFAULT_REQUESTS)
    manifest_path = manifest_path_of(requests)
    manifest = load_manifest(manifest_path)
    judge = _check_manifest(manifest, manifest_path, requests, ws)
    rows = read_results(results)
    cache = judge_cache(judge)
    api_key_env = judge.llm.api_key_env
    secret = os.environ.get(api_key_env) if api_key_env else None
    entries = {e.custom_id: e for e in manifest.requests}
    summary = ImportSummary(
        results=str(results),
        manifest=str(manifest_path),
        cache=ws.relative(judge.cache_path),
        n_lines=len(rows),
        n_requests=len(entries),
    )
    seen: dict[str, int] = {}
    lines_of: dict[str, list[int]] = {}
    for lineno, line in rows:
        lines_of.setdefault(line.custom_id, []).append(lineno)
    for lineno, line in rows:
        entry = entries.get(line.custom_id)
        where = {"custom_id": line.custom_id, "question_ids": entry.question_ids if entry else [], "line": lineno}
        try:
            if entry is None:
                raise LineFailed(f"unknown custom_id: not in {manifest_path.name}")
            seen.setdefault(line.custom_id, lineno)
            if len(lines_of[line.custom_id]) > 1:  # a provider answers each request once: which one would count?
                raise LineFailed(
                    f"repeated: custom_id on lines {', '.join(map(str, lines_of[line.custom_id]))}; none counts"
                )
            _check_model(line, manifest.judge.model)
            content, finish, usage = answer_of(line, secret)
            problems = check_content(content, entry)
        except LineFailed as exc:
            summary.failed.append({**where, "reason": str(exc)})
            continue
        if cache.get(entry.cache_key) is not None:
            summary.n_already_cached += 1
        else:
            cache.put(entry.cache_key, entry.key_material, content, usage, finish)
            summary.n_imported += 1
            summary.prompt_tokens += usage.get("prompt_tokens", 0)
            summary.completion_tokens += usage.get("completion_tokens", 0)
        if problems and entry.attempt == "first":
            summary.constraint_retry.append({**where, "problems": problems})
        else:
            summary.n_complete += 1
    summary.missing = [
        {"custom_id": e.custom_id, "question_ids": e.question_ids, "reason": "no result line"}
        for e in manifest.requests
        if e.custom_id not in seen
    ]
    return summary
