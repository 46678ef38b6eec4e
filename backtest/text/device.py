"""Where the fp32 ``torch`` embedding backend runs: the CPU or a CUDA GPU.

The choice is ``auto`` (the default), ``cpu`` or ``cuda``: the ``--device`` option of the commands that embed
(``score``, ``retrieve``, ``arena``, ``diversity``, ``release replay``), ``BACKTEST_DEVICE`` for every other
path (and for those options' default), or :func:`use` in the library. ``auto`` takes a CUDA GPU when torch sees
one and the CPU otherwise, so nothing changes on a machine without a GPU; ``cuda`` where torch sees none is
refused in one line (:class:`~backtest.core.errors.BadInput`, exit 2) before any work starts.

The device is where vectors are computed, not what they are: it is in no cache key, vector-store folder, index
key, model fingerprint or retrieval record, so a GPU and a CPU share every cache. Both compute fp32 (torch's
default keeps TF32 off for matrix products); their vectors differ by float rounding only (largest component
difference 2.5e-7 measured on an H200 against this repository's 2-core CPU, top-8 lists identical: issue 42),
which is why the release replay compares stored scores within a tolerance (``docs/scoring.md``).

Only ``torch`` moves: ``bf16`` is CPU autocast by its recipe (its fingerprint says so) and the onnx and OpenVINO
backends are CPU runtimes, so they run on the CPU whatever the choice (an explicit ``cuda`` says so on stderr).

Under the ``ray`` executor the choice travels to the actors, each of which resolves it where it runs; the
cluster's GPUs (not the driver's) decide ``auto`` there (:func:`backtest.text.embed.embed_on_ray`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from functools import lru_cache

from backtest.core.errors import BadInput

DEVICES = ("auto", "cpu", "cuda")
DEVICE_ENV = "BACKTEST_DEVICE"
GPU_BACKENDS = ("torch",)  # the backends a GPU runs (module docstring)

_CHOSEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("backtest_device", default=None)


def check_choice(choice: str, where: str = "--device") -> str:
    """``choice`` if it is one of :data:`DEVICES`, else one line naming the choices."""
    if choice not in DEVICES:
        raise BadInput(f"{where} {choice!r}: choose {', '.join(DEVICES)}")
    return choice


def chosen() -> str:
    """The choice for this call chain: :func:`use`'s, else ``$BACKTEST_DEVICE``, else ``auto``."""
    choice = _CHOSEN.get()
    if choice is not None:
        return choice
    return check_choice(os.environ.get(DEVICE_ENV) or "auto", DEVICE_ENV)


@lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU here (torch is imported on the first call only)."""
    import torch

    return bool(torch.cuda.is_available())


def no_gpu_message(choice: str = "cuda") -> str:
    """The one line that refuses ``cuda`` on a machine where torch sees no GPU."""
    import torch

    build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
    return f"--device {choice}: torch {torch.__version__} ({build}) sees no CUDA GPU here; use --device auto or cpu"


def resolve(choice: str | None = None) -> str:
    """The device a choice means here: ``cpu`` or ``cuda``; ``cuda`` without a GPU is refused (one line)."""
    choice = check_choice(choice) if choice is not None else chosen()
    if choice == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if choice == "cuda":
        raise BadInput(no_gpu_message())
    return "cpu"


def for_backend(backend: str, choice: str | None = None) -> str:
    """The device ``backend`` runs on under ``choice`` (default: :func:`chosen`): :func:`resolve`'s for
    ``torch``, the CPU for the others (their recipes are CPU ones), said on stderr when ``cuda`` was asked."""
    choice = check_choice(choice) if choice is not None else chosen()
    if backend in GPU_BACKENDS:
        return resolve(choice)
    if choice == "cuda":
        _say_cpu_only(backend)
    return "cpu"


@lru_cache(maxsize=None)
def _say_cpu_only(backend: str) -> None:
    print(f"note: the {backend} embedding backend runs on the CPU (--device cuda moves torch only)", file=sys.stderr)


@contextlib.contextmanager
def use(choice: str, check: bool = True) -> Iterator[str]:
    """Choose the device for everything under this block (the CLI's ``--device``). ``cuda`` is checked here,
    so a machine without a GPU refuses it before any work; ``check=False`` leaves that to where the work runs
    (a Ray cluster's actors)."""
    check_choice(choice)
    if check and choice == "cuda":
        resolve(choice)
    token = _CHOSEN.set(choice)
    try:
        yield choice
    finally:
        _CHOSEN.reset(token)


__all__ = ["DEVICES", "DEVICE_ENV", "chosen", "cuda_available", "for_backend", "resolve", "use"]
