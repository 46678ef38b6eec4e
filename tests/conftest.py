"""Shared fixtures: the real corpora in ../shared, built instances, and a CLI runner.

Tests that need ``../shared`` skip with a clear reason when it is absent. Built
corpora and instances are made once per session in a temporary workspace.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import secrets
import shutil
from pathlib import Path

import pytest

from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus
from backtest.corpus.instance import create_instance

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
# One index/embedding cache for the whole suite: the same sealed corpus built in two
# temp workspaces is embedded once (entries are keyed by corpus seal + model + params).
# `make replay` reads the same folder (the Makefile's INDEX_CACHE), so CI embeds no record twice.
os.environ.setdefault("BACKTEST_INDEX_CACHE", str(REPO / ".cache" / "index-cache"))
SHARED = Path(os.environ.get("BACKTEST_SHARED", REPO.parent / "shared"))
CORPORA = SHARED / "corpora"
DAILY = CORPORA / "astro-ph-daily"
ARCHIVE = CORPORA / "arxiv-archive-2020"
SQB = SHARED / "reference" / "sqb"

needs_shared = pytest.mark.skipif(not CORPORA.is_dir(), reason=f"real corpora not found at {CORPORA}")


def run_cli(args: list[str], root: Path | None = None, capsys=None) -> tuple[int, str, str]:
    """Run the real ``backtest`` entry point in-process; return (exit code, stdout, stderr)."""
    from backtest.cli.main import main

    argv = (["--root", str(root)] if root else []) + [str(a) for a in args]
    code = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = ("", "")
    if capsys is not None:
        captured = capsys.readouterr()
        out, err = captured.out, captured.err
    return code, out, err


@pytest.fixture(scope="module")
def shared_index_cache():
    """Reuse the dense index of the future corpus across workspaces (the retrieval tests' cache), whatever
    ``BACKTEST_INDEX_CACHE`` the environment set: modules use it with ``pytest.mark.usefixtures``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BACKTEST_INDEX_CACHE", str(REPO / ".cache" / "index-cache"))
        yield


@pytest.fixture(scope="session")
def ray_token(tmp_path_factory):
    """Ray clusters with token authentication, on a private token: the tests neither read nor write ``~/.ray``.

    Ray (2.5x) turns token authentication on for a cluster it starts whenever ``~/.ray/auth_token``
    exists, while a driver given an explicit ``--ray-address`` sends a token only under
    ``RAY_AUTH_MODE=token``: a token left in ``~/.ray`` by anything made a cluster the tests started
    refuse the tests' own driver. ``RAY_AUTH_MODE`` and ``RAY_AUTH_TOKEN_PATH`` are set for the session
    (clusters started by ``ray start`` or ``ray.init`` inherit them) and Ray's cached config re-read."""
    ray = pytest.importorskip("ray", reason="the ray executor needs the scale extra (pip install -e '.[scale]')")
    token = tmp_path_factory.mktemp("ray-auth") / "auth_token"
    token.write_text(secrets.token_hex(32))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "token")
        mp.setenv("RAY_AUTH_TOKEN_PATH", str(token))
        mp.delenv("RAY_AUTH_TOKEN", raising=False)
        from ray._raylet import AuthenticationTokenLoader, Config

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
        yield token
        if ray.is_initialized():
            ray.shutdown()
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def assert_key_written_nowhere(key: str, *folders: Path) -> int:
    """No file under ``folders`` holds the bytes of ``key`` (a fake API key); returns how many files were read."""
    n = 0
    for folder in folders:
        for f in folder.rglob("*"):
            if f.is_file():
                n += 1
                assert key.encode() not in f.read_bytes(), f"API key found in {f}"
    return n


@pytest.fixture
def cli(capsys):
    """Call the CLI: ``cli(args, root=...)`` -> (code, stdout, stderr)."""

    def call(args, root=None):
        return run_cli(args, root=root, capsys=capsys)

    return call


def build_from_repo(opts: BuildOptions, ws: Workspace):
    """``build_corpus`` as ``make instances`` runs it: from the repository root, inputs named relative to it.

    A manifest records its inputs as given and the seal covers them, so only this way does
    a corpus built here get the committed seal (with ../shared beside the repo), and so
    share cached embeddings and indexes with `make demo` instead of embedding again.
    """
    relative = dataclasses.replace(opts, inputs=[Path(os.path.relpath(p, REPO)) for p in opts.inputs])
    with contextlib.chdir(REPO):
        return build_corpus(relative, ws)


def build_astro(
    ws: Workspace, cutoff=dt.date(2025, 10, 31), end=dt.date(2026, 7, 1), categories=None, suffix=""
) -> str:
    """Build the astro-2025 instance (optionally restricted to categories) into ``ws``; return its id."""
    cats = list(categories or [])
    past = build_from_repo(
        BuildOptions("arxiv-daily", [DAILY], f"astro-2025{suffix}-past", "past", end=cutoff, categories=cats), ws
    )
    future = build_from_repo(
        BuildOptions(
            "arxiv-daily",
            [DAILY],
            f"astro-2025{suffix}-future",
            "future",
            start=cutoff + dt.timedelta(days=1),
            end=end,
            categories=cats,
        ),
        ws,
    )
    create_instance(
        f"astro-2025{suffix}",
        cutoff,
        past.corpus_id,
        future.corpus_id,
        ws,
        domain="astrophysics (arXiv astro-ph), exoplanet atmospheres in focus",
    )
    return f"astro-2025{suffix}"


@pytest.fixture(scope="session")
def astro_ws(tmp_path_factory) -> Workspace:
    """A workspace with the full astro-2025 instance built from ../shared (read-only for tests)."""
    if not DAILY.is_dir():
        pytest.skip(f"astro-ph daily listings not found at {DAILY}")
    ws = Workspace(tmp_path_factory.mktemp("astro"))
    build_astro(ws)
    return ws


@pytest.fixture(scope="session")
def astro_ep_ws(tmp_path_factory) -> Workspace:
    """A small real instance ``astro-2025-ep``: astro-2025 restricted to astro-ph.EP (exoplanets).

    About 1,000 papers, so dense embedding of the whole future side takes seconds, not minutes.
    """
    if not DAILY.is_dir():
        pytest.skip(f"astro-ph daily listings not found at {DAILY}")
    ws = Workspace(tmp_path_factory.mktemp("astro_ep"))
    build_astro(ws, categories=["astro-ph.EP"], suffix="-ep")
    return ws


@pytest.fixture
def copy_ws(tmp_path):
    """Copy a session workspace into a fresh temp folder, so a test may tamper with it."""

    def copy(ws: Workspace) -> Workspace:
        dest = tmp_path / "ws"
        shutil.copytree(ws.root, dest)
        return Workspace(dest)

    return copy


def frozen_copy(
    base: Workspace, dest: Path, generator: str, n: int, seed: int, instance: str = "astro-2025-ep"
) -> tuple[Workspace, Path, Path]:
    """A copy of workspace ``base`` at ``dest`` with one real submission (``generator``, n, seed) frozen in it:
    (workspace, frozen set folder, submission folder)."""
    from backtest.generators import run_generator
    from backtest.submit.freeze import freeze_once

    ws = Workspace(dest)
    shutil.copytree(base.root, ws.root)
    made = run_generator(generator, instance, ws, n=n, seed=seed)
    frozen, _ = freeze_once(made["out"], instance, ws)
    return ws, frozen, Path(made["out"])


# The real local LLM server (llama-server + Gemma 3 270M), shared by every test that needs one.
from tests.llm_server import LLM_MODEL, llm_server  # noqa: E402,F401


def build_space(ws: Workspace) -> str:
    """Build the space-2016 instance (physics.space-ph/ao-ph/geo-ph/plasm-ph, cutoff 2016-12-31) into ``ws``."""
    inputs = [ARCHIVE / f"physics.{c}.tsv.xz" for c in ("space-ph", "ao-ph", "geo-ph")]
    cats = ["physics.space-ph", "physics.ao-ph", "physics.geo-ph", "physics.plasm-ph"]
    past = build_from_repo(
        BuildOptions(
            "arxiv-archive",
            inputs,
            "space-2016-past",
            "past",
            start=dt.date(2010, 1, 1),
            end=dt.date(2016, 12, 31),
            categories=cats,
        ),
        ws,
    )
    future = build_from_repo(
        BuildOptions(
            "arxiv-archive",
            inputs,
            "space-2016-future",
            "future",
            start=dt.date(2017, 1, 1),
            end=dt.date(2019, 12, 31),
            categories=cats,
        ),
        ws,
    )
    create_instance(
        "space-2016",
        dt.date(2016, 12, 31),
        past.corpus_id,
        future.corpus_id,
        ws,
        domain="space, atmospheric, geo- and plasma physics (arXiv physics.space-ph, ao-ph, geo-ph, plasm-ph)",
    )
    return "space-2016"


@pytest.fixture(scope="session")
def space_ws(tmp_path_factory) -> Workspace:
    """A workspace with the space-2016 instance built from ../shared/corpora/arxiv-archive-2020
    (read-only for tests)."""
    if not (ARCHIVE / "physics.space-ph.tsv.xz").is_file():
        pytest.skip(f"arXiv archive TSVs not found at {ARCHIVE}")
    ws = Workspace(tmp_path_factory.mktemp("space"))
    build_space(ws)
    return ws
