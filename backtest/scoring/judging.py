"""The judge loop of a scored run: every question of a frozen set judged, in order, into a resumable file.

:func:`judge_all` has three named parts: :func:`_admit` (may ``--max-cost`` send the next question),
:class:`_Dispatch` (the current executor sends it and takes the judgment back: the judge's own threads, or Ray
tasks that rebuild the judge from its spec, :func:`judge_remote`) and :class:`_Record` (the judgment appended
to ``judgments.partial.jsonl``, one hash-chained line, fsync'd). :func:`recover_partial` reads that file back
on a rerun; when every question is judged it becomes ``judgments.jsonl``. :mod:`backtest.scoring.score` runs
the rest of the pipeline around it.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import os
import sys
import threading
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Sequence

from tqdm import tqdm

from backtest.core import executor
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes
from backtest.core.records import Judgment, Question, Retrieval, RetrievedDocument
from backtest.core.runs import JudgeStats
from backtest.core.seal import canonical_json, sha256_text
from backtest.core.workspace import Workspace
from backtest.judge.protocol import Judge
from backtest.scoring.cost import Ledger
from backtest.validity.runfolder import RunFolder

PARTIAL = "judgments.partial.jsonl"


def judge_spec_of(judge: Judge, ws: Workspace) -> str:
    """How ``get_judge`` finds this judge again: its config path (relative to the root when inside), or its name."""
    return ws.relative(Path(judge.config_path)) if judge.config_path else judge.name


# --------------------------------------------------------------------------- judgments file


def partial_line(judgment: Judgment, prev: str) -> tuple[bytes, str]:
    """One line of the partial file and its chain hash: ``<sha256(prev + json)> <judgment json>``.

    The chain starts from the run's settings sha256, so an edited, reordered or foreign
    line breaks it and is judged again on resume instead of being kept.
    """
    body = canonical_json(judgment.model_dump(mode="json"))
    chain = sha256_text(prev + body)
    return f"{chain} {body}\n".encode("utf-8"), chain


def recover_partial(path: Path, question_ids: Sequence[str], seed: str = "") -> tuple[list[Judgment], str]:
    """The judgments already on disk, in order, and the chain hash after them; cut the file after the last good line.

    A line counts when it is complete (ends with a newline), its chain hash matches
    (``seed`` is the run's settings sha256), it parses as a Judgment of the question at
    its position, and it is not a failed judgment (those are retried). Everything from
    the first line that does not count is removed (a SIGKILL tears at most the last line;
    an edit breaks the chain).
    """
    if not path.is_file():
        return [], seed
    data = path.read_bytes()
    good: list[Judgment] = []
    keep, chain = 0, seed
    for raw in data.split(b"\n")[:-1]:  # the piece after the last newline is torn or empty
        digest, _, body = raw.partition(b" ")
        try:
            text = body.decode("utf-8")
            if digest.decode("ascii") != sha256_text(chain + text):
                break
            judgment = Judgment.model_validate(json.loads(text))
        except ValueError:
            break
        if len(good) >= len(question_ids) or judgment.question_id != question_ids[len(good)]:
            break
        if judgment.failed:
            break
        good.append(judgment)
        chain = digest.decode("ascii")
        keep += len(raw) + 1
    if keep != len(data):
        with open(path, "r+b") as handle:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
    return good, chain


def judgment_line(judgment: Judgment) -> bytes:
    """One canonical JSON line of a judgment (the exact bytes in judgments.jsonl)."""
    return (canonical_json(judgment.model_dump(mode="json")) + "\n").encode("utf-8")


def n_failed(judgments: Sequence[Judgment]) -> int:
    """How many judgments are ``judge_failed`` (the judge gave no usable answer)."""
    return sum(1 for j in judgments if j.failed)


@functools.lru_cache(maxsize=4)
def _worker_judge(spec: str, root: str) -> Judge:
    """The judge of a Ray worker process, made once per (spec, workspace) from what ``get_judge`` reads."""
    from backtest.judge import get_judge

    return get_judge(spec, Workspace(Path(root)))


def judge_remote(
    spec: str, root: str, question: dict[str, Any], documents: list[dict[str, Any]], attempts: str
) -> dict[str, Any]:
    """One question judged in a Ray worker: the same judge (rebuilt from its spec), the same documents.

    Takes and returns plain JSON data (what Ray pickles): the judgment and what this task's judge did (its
    counters' change: HTTP calls, cache hits, tokens), which the driver adds up. Each attempt first appends
    a line to the file ``attempts`` names, so the driver counts the attempts Ray retried after their worker
    died (their calls, if any reached the endpoint, are not in any counter). The LLM judge's answer cache is
    the workspace's SQLite file, shared with the driver and every other worker."""
    with open(attempts, "a", encoding="utf-8") as handle:  # one short line: O_APPEND writes it whole
        handle.write(question["question_id"] + "\n")
    judge = _worker_judge(spec, root)
    docs = [RetrievedDocument.model_validate(d) for d in documents]
    before = judge_stats(judge)
    judgment = judge.judge(Question.model_validate(question), docs).model_dump(mode="json")
    return {"judgment": judgment, "stats": (judge_stats(judge) - before).counters()}


def judge_stats(judge: Judge) -> JudgeStats:
    """The judge's counters now (``Judge.stats()``), typed and summable."""
    return JudgeStats.model_validate(judge.stats())


@dataclass
class JudgeRun:
    """What :func:`judge_all` did: every judgment so far, how many are new, and whether the budget stopped it."""

    judgments: list[Judgment]
    judged_now: int
    ledger: Ledger | None = None  # None: the judge has no price
    worker_stats: JudgeStats = field(default_factory=JudgeStats)  # what Ray workers' judges did (added up)

    @property
    def stopped(self) -> bool:
        """True when ``--max-cost`` stopped the run before every question was sent."""
        return self.ledger is not None and self.ledger.stopped_at is not None


def judge_all(
    judge: Judge,
    questions: Sequence[Question],
    retrievals: Sequence[Retrieval],
    run_dir: Path,
    progress: bool = False,
    on_judged: Callable[[int], None] | None = None,
    seed: str = "",
    ws: Workspace | None = None,
    max_cost: float | None = None,
) -> JudgeRun:
    """Judge every question not yet in the partial file, in order; return all judgments and how many were new.

    ``judgments.jsonl`` is written only when every judgment succeeded; with a failed one the
    partial file stays, and a rerun retries from the first failure (``seed``: the run's
    settings sha256, which starts the partial file's hash chain). Three parts: :func:`_admit` (may
    ``--max-cost`` send the next question: :class:`~backtest.scoring.cost.Ledger`), :class:`_Dispatch` (the
    current executor sends it and takes the judgment back) and :class:`_Record` (the judgment appended to
    the partial file). Results are recorded in question order, so the bytes do not depend on the executor.
    """
    final = run_dir / "judgments.jsonl"
    qids = [q.question_id for q in questions]
    if final.is_file():
        return JudgeRun(_finished(run_dir, qids), 0)
    partial = run_dir / PARTIAL
    done, chain = recover_partial(partial, qids, seed)
    todo = list(range(len(done), len(questions)))
    if max_cost is not None and judge.price is None:
        raise BadInput(f"--max-cost needs prices: judge {judge.name}'s config has no price table")
    ledger = Ledger(judge.price, max_cost) if judge.price is not None else None
    postfix = _progress_postfix(judge)
    dispatch = _Dispatch(judge, questions, retrievals, run_dir, ws, len(todo))
    in_flight: collections.deque[tuple[int, Future[Judgment], float, bool]] = collections.deque()
    waiting = collections.deque(todo)
    bar = tqdm(
        total=len(questions),
        initial=len(done),
        desc=f"judging ({judge.name})",
        unit=" q",
        file=sys.stderr,
        disable=not progress,
    )
    with open(partial, "ab") as handle, bar:
        record = _Record(handle, chain)
        try:
            while waiting or in_flight:
                while waiting and len(in_flight) < dispatch.window and not (ledger and ledger.stopped_at):
                    i = waiting[0]
                    admitted = _admit(judge, ledger, qids[i], questions[i], list(retrievals[i].documents))
                    if admitted is None:
                        break
                    in_flight.append((waiting.popleft(), dispatch.submit(i), *admitted))
                if not in_flight:
                    break
                i, future, reserved, cached = in_flight.popleft()
                try:
                    judgment = future.result()
                except Exception as exc:
                    if (lost := dispatch.lost(exc)) is None:
                        raise
                    raise CheckFailed(
                        f"{lost}: {len(done)} of {len(questions)} questions are judged and kept in "
                        f"{partial.name}; rerun `backtest score` to resume"
                    ) from None
                if judgment.question_id != qids[i]:
                    raise CheckFailed(
                        f"judge {judge.name} answered for {judgment.question_id!r} instead of {qids[i]!r}"
                    )
                if ledger is not None:
                    ledger.settle(reserved, judgment, cached)
                record(judgment)
                done.append(judgment)
                bar.update(1)
                bar.set_postfix(postfix(), refresh=False)
                if on_judged is not None:
                    on_judged(i)
        finally:
            dispatch.close(future for _, future, _, _ in in_flight)
    judged_now = len(done) - (len(questions) - len(todo))
    if n_failed(done) or len(done) < len(questions):
        return JudgeRun(done, judged_now, ledger, dispatch.worker_stats)
    atomic_write_bytes(final, b"".join(judgment_line(j) for j in done))
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    return JudgeRun(done, judged_now, ledger, dispatch.worker_stats)


def _finished(run_dir: Path, qids: list[str]) -> list[Judgment]:
    """The judgments of a run whose ``judgments.jsonl`` is written (CheckFailed when they are not the frozen
    set's questions in order); a partial file left by a kill between the rename and the unlink is removed."""
    final = run_dir / "judgments.jsonl"
    rows = RunFolder(run_dir).judgments
    if [j.question_id for j in rows] != qids:
        raise CheckFailed(f"{final}: its question ids do not match the frozen set's order")
    with contextlib.suppress(FileNotFoundError):
        (run_dir / PARTIAL).unlink()
    return rows


def _admit(
    judge: Judge, ledger: Ledger | None, qid: str, question: Question, documents: list[RetrievedDocument]
) -> tuple[float, bool] | None:
    """May the question be sent now: (what it reserves of ``--max-cost``, whether its answer is cached), or None
    when the budget does not admit it. A judge that calls no endpoint, or a cached answer, reserves nothing."""
    cached = judge.is_cached(question, documents)
    if ledger is None or ledger.limit is None or not judge.calls_endpoint or cached:
        return 0.0, cached
    reserved = ledger.admit(qid, judge.worst_case(question, documents))
    return None if reserved is None else (reserved, cached)


def _progress_postfix(judge: Judge) -> Callable[[], dict[str, Any]]:
    """The progress bar's postfix: cache hits and tokens since the judge's counters were read here."""
    stats0 = judge_stats(judge)

    def postfix() -> dict[str, Any]:
        change = judge_stats(judge) - stats0
        return {
            "cache_hits": change.get("cache_hits"),
            "tokens": change.get("prompt_tokens") + change.get("completion_tokens"),
        }

    return postfix


class _Dispatch:
    """Sends questions to the judge through the current executor (:mod:`backtest.core.executor`): the judge's
    own threads (``local``) or Ray tasks that rebuild the judge from its spec (``ray``), each Ray task attempt
    leaving a line in ``.ray-attempts`` so attempts lost with their worker are counted."""

    def __init__(
        self,
        judge: Judge,
        questions: Sequence[Question],
        retrievals: Sequence[Retrieval],
        run_dir: Path,
        ws: Workspace | None,
        n_todo: int,
    ):
        self.judge, self.questions, self.retrievals, self.ws = judge, questions, retrievals, ws
        concurrency = max(1, judge.concurrency)
        self.pool = executor.open_executor(workers=concurrency) if n_todo else None
        # a judge with an endpoint keeps its own limit on calls in flight; a CPU-bound one fills the cluster
        local = self.pool is None or self.pool.name == "local"
        self.window = concurrency if local or judge.calls_endpoint else self.pool.slots()  # type: ignore[union-attr]
        self.worker_stats = JudgeStats()  # what Ray workers' judges did (added up)
        self.attempts = run_dir / ".ray-attempts"  # one line per Ray task attempt (judge_remote), this invocation's
        self.attempts.unlink(missing_ok=True)

    def submit(self, i: int) -> Future[Judgment]:
        """Send question ``i`` with the documents retrieval showed it."""
        assert self.pool is not None
        documents = list(self.retrievals[i].documents)
        if self.pool.name == "local":
            return self.pool.submit(self.judge.judge, self.questions[i], documents)
        ws = self.ws or Workspace.from_env()
        args = (
            judge_spec_of(self.judge, ws),
            str(ws.root),
            self.questions[i].model_dump(mode="json"),
            [d.model_dump(mode="json") for d in documents],
            str(self.attempts),
        )
        out: Future[Judgment] = Future()
        self.pool.submit(judge_remote, *args).add_done_callback(lambda f: _resolve(out, f, self))
        return out

    def lost(self, exc: BaseException) -> str | None:
        """What the engine lost when ``exc`` is its failure (a dead worker or cluster), None for the judge's own."""
        return self.pool.lost(exc) if self.pool is not None else None

    def close(self, in_flight: Iterable[Future[Judgment]]) -> None:
        """Cancel what is still in flight, shut the executor down, count the Ray attempts lost with a worker."""
        for future in in_flight:
            future.cancel()
        if self.pool is not None:
            self.pool.shutdown()
        if self.attempts.is_file():  # attempts beyond one per question were lost with their worker
            lines = self.attempts.read_text(encoding="utf-8").split()
            self.worker_stats += JudgeStats(ray_attempts_lost=len(lines) - len(set(lines)))
            self.attempts.unlink()


class _Record:
    """Appends each judgment to the partial file: one line in the file's hash chain, flushed and fsync'd, so a
    kill at any moment leaves a file a rerun resumes from."""

    def __init__(self, handle: BinaryIO, chain: str):
        self.handle, self.chain = handle, chain

    def __call__(self, judgment: Judgment) -> None:
        line, self.chain = partial_line(judgment, self.chain)
        self.handle.write(line)
        self.handle.flush()
        os.fsync(self.handle.fileno())


_WORKER_STATS_LOCK = threading.Lock()


def _resolve(out: Future[Judgment], remote: Future[dict[str, Any]], dispatch: _Dispatch) -> None:
    """Complete ``out`` with the Judgment a Ray task returned (or its error); add what its judge did to the
    dispatch's ``worker_stats``. Nothing when ``out`` was cancelled meanwhile (the run stopped)."""
    with contextlib.suppress(InvalidStateError):  # cancelled by the driver, which no longer waits for it
        if remote.cancelled():
            out.cancel()
        elif (exc := remote.exception()) is not None:
            out.set_exception(exc)
        else:
            result = remote.result()
            with _WORKER_STATS_LOCK:  # Ray may run done-callbacks on more than one thread
                dispatch.worker_stats += JudgeStats.model_validate(result["stats"])
            out.set_result(Judgment.model_validate(result["judgment"]))
