"""Where the two heavy stages run: in this process (``local``) or on a Ray cluster (``ray``).

Embedding a corpus (:mod:`backtest.text.embed`) and judging a frozen set
(:mod:`backtest.scoring.score`) fan out through an :class:`Executor`. ``local`` is what
backtest always did: a thread pool in this process. ``ray`` hands the same pieces of work
to Ray (an existing engine, not a home-made one): judging as Ray tasks, one per question,
and embedding as Ray Data ``map_batches`` over fixed chunks of texts with an actor pool
that holds the model. Both executors cut the work into the same pieces and each piece is
computed by the same code, so the outputs are byte-identical (tested).

What stays on the driver, whatever the executor: the order of the results, the fsync'd
partial judgments file and the LLM answer cache (an SQLite file the workers share), so a
killed driver resumes exactly as with ``local``, and a killed Ray worker only makes Ray
retry that task.

Ray is an optional extra (``pip install -e '.[scale]'``) and is imported only when the
``ray`` executor is chosen. ``address`` is a running cluster (``ray start --head`` prints
it; ``auto`` finds one on this machine); without one, ``ray.init`` starts a local cluster
of ``num_cpus`` CPUs for this process. Workers inherit the driver's environment on a local
cluster; an API key is never put into a Ray ``runtime_env`` (Ray would store and log it):
on a remote cluster, set the key variable on its nodes.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import socket
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterator, Protocol, TypeVar

from backtest.core.errors import BadInput
from backtest.core.registry import Registry

R = TypeVar("R")

RAY_HINT = "the ray executor needs Ray: pip install -e '.[scale]' (or pip install 'ray[data]')"
# Ray starts clusters with token authentication when ~/.ray/auth_token exists, but a driver given an
# address sends the token only when told to: the usual reason a cluster that answers still refuses us.
AUTH_HINT = (
    "; if the cluster uses token authentication, set RAY_AUTH_MODE=token (the token is read from "
    "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
)


@dataclass(frozen=True)
class ExecutorSpec:
    """Which executor, and for ``ray`` which cluster: ``address`` (None: start a local one of ``num_cpus``)."""

    name: str = "local"
    address: str | None = None
    num_cpus: int | None = None

    def describe(self) -> str:
        """One line for messages: ``local`` or ``ray (address)``."""
        if self.name != "ray":
            return self.name
        return f"ray ({self.address or f'local cluster, {self.num_cpus or os.cpu_count()} CPUs'})"


class Executor(Protocol):
    """Runs picklable functions somewhere and hands back :class:`concurrent.futures.Future` objects."""

    name: str

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)``; for ``ray`` both must pickle (a module-level function and plain data)."""
        ...

    def slots(self) -> int:
        """How many pieces of CPU-bound work it runs at once."""
        ...

    def shutdown(self) -> None:
        """Release what it holds (threads); a Ray cluster it joined is left running."""
        ...

    def lost(self, exc: BaseException) -> str | None:
        """What was lost when ``exc`` means the engine itself failed (a dead raylet, a lost node), else None:
        such a failure is no fault of the work, and a rerun resumes it."""
        ...


class LocalExecutor:
    """A thread pool in this process (the default)."""

    name = "local"

    def __init__(self, spec: ExecutorSpec | None = None, workers: int = 1):
        self.spec = spec or ExecutorSpec()
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers))

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        return self._pool.submit(fn, *args)

    def slots(self) -> int:
        return 1  # torch already uses every core of this machine for one piece of work

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def lost(self, exc: BaseException) -> str | None:
        return None  # this process is the engine: its errors are the work's


def ray_module(spec: ExecutorSpec) -> ModuleType:
    """Ray, imported and connected: to ``spec.address``, else to a new local cluster of ``spec.num_cpus`` CPUs."""
    try:
        import ray
    except ImportError:
        raise BadInput(RAY_HINT) from None
    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,  # workers' output stays in Ray's log files, not on the user's terminal
            "configure_logging": False,
            "namespace": "backtest",
        }
        if spec.address:
            _check_reachable(spec.address)
            kwargs["address"] = spec.address
        else:
            kwargs["num_cpus"] = spec.num_cpus or os.cpu_count() or 1
        _cluster_messages_to_stderr()
        try:
            ray.init(**kwargs)
        except ConnectionError as exc:
            hint = "" if os.environ.get("RAY_AUTH_MODE", "").lower() == "token" else AUTH_HINT
            raise BadInput(f"cannot reach the Ray cluster at {spec.address!r}: {exc}{hint}") from None
    return ray


def _check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` cluster address nothing answers at (``ray.init`` would wait for it for minutes)."""
    host, _, port = address.rpartition(":")
    if address == "auto" or "://" in address or not port.isdigit():
        return  # 'auto' and ray:// client addresses are Ray's to resolve
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise BadInput(
            f"cannot reach the Ray cluster at {address!r} ({exc.strerror or exc}); start one with "
            "`ray start --head` or drop --ray-address to start a local one"
        ) from None


def _cluster_messages_to_stderr() -> None:
    """Ray prints cluster events ("a worker died ...") on the driver's stdout; backtest's stdout is its
    result (``--json``), so they go to stderr. Ray's own printer, given ``is_err``; skipped if Ray moved it."""
    import ray._private.worker as ray_worker

    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "_backtest_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printer({**data, "is_err": True}, ignore_prefix)

    to_stderr._backtest_stderr = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = to_stderr


class RayExecutor:
    """Ray tasks on a cluster (retried by Ray when their worker dies)."""

    name = "ray"

    def __init__(self, spec: ExecutorSpec, max_retries: int = 3):
        self.spec = spec
        self.ray = ray_module(spec)
        self.max_retries = max_retries
        self._remote: dict[Callable[..., Any], Any] = {}

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self.ray.remote(num_cpus=1, max_retries=self.max_retries)(fn)
        future: Future[R] = remote.remote(*args).future()
        return future

    def slots(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def shutdown(self) -> None:
        """Nothing to release: a cluster this process started ends with it (``ray.shutdown`` at exit)."""

    def lost(self, exc: BaseException) -> str | None:
        """A Ray error that is not the task's own (a dead raylet or node, a worker that died past its retries, a
        lost object): the cluster failed, not the work."""
        errors = self.ray.exceptions
        if isinstance(exc, errors.RayError) and not isinstance(exc, errors.RayTaskError):
            return f"the Ray cluster failed ({type(exc).__name__})"
        return None


EXECUTORS: Registry[Callable[..., Executor]] = Registry(
    "executor",
    "executors",
    {"local": "backtest.core.executor:LocalExecutor", "ray": "backtest.core.executor:RayExecutor"},
)

_CURRENT: contextvars.ContextVar[ExecutorSpec | None] = contextvars.ContextVar("backtest_executor", default=None)


def current() -> ExecutorSpec:
    """The executor chosen for this call chain (``local`` unless :func:`use` says otherwise)."""
    return _CURRENT.get() or ExecutorSpec()


@contextlib.contextmanager
def use(spec: ExecutorSpec) -> Iterator[ExecutorSpec]:
    """Choose the executor for everything under this block (the CLI's ``--executor``); a Ray cluster is
    joined (or started) here, so an unreachable one is refused before any work is written."""
    if spec.name not in EXECUTORS:
        raise EXECUTORS.unknown(spec.name)
    if spec.name == "ray":
        ray_module(spec)
    token = _CURRENT.set(spec)
    try:
        yield spec
    finally:
        _CURRENT.reset(token)


def open_executor(spec: ExecutorSpec | None = None, workers: int = 1) -> Executor:
    """An executor for ``spec`` (default: :func:`current`); ``workers`` sizes the local thread pool."""
    spec = spec or current()
    factory = EXECUTORS.get(spec.name)
    if spec.name == "local":
        return factory(spec, workers=workers)
    return factory(spec)
