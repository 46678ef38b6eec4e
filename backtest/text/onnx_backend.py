"""The ``onnx`` and ``onnx-int8`` embedding backends: a sentence-transformers model's transformer run by
onnxruntime on the CPU.

Only the transformer's forward pass moves to onnxruntime; everything around it is the model's own
sentence-transformers code, so the vectors are those of ``SentenceTransformer.encode``: texts sorted by
length as ``encode`` sorts them, batched, tokenised by the model's own ``preprocess`` (its fast tokenizer,
``max_seq_length``, truncation and padding), and the token embeddings pooled by the model's own modules
after the transformer (``Pooling``: the mean over the attention mask; ``Normalize``), then L2-normalised.

The transformer is exported once, offline, with ``torch.onnx.export`` (the dynamo exporter, opset 18,
one self-contained file); ``onnx-int8`` is that export quantized with onnxruntime's dynamic quantization
(int8 weights per output channel for every ``MatMul``, activations quantized per batch at run time).
Exports are cached under ``$BACKTEST_INDEX_CACHE/onnx/`` when that shared cache is set, else
``$XDG_CACHE_HOME/backtest/onnx/`` (``~/.cache/backtest/onnx/``), in a folder named by the sha256 of the
model folder's files and a folder per variant named by its recipe::

    <root>/<model files sha256, 20 hex>/<fp32|int8>-<recipe hash, 8 hex>/model.onnx + EXPORT.json

``model.onnx`` is written to a temp file and renamed into place, then ``EXPORT.json`` (its sha256, the
recipe, the library versions) likewise; a file lock keeps two processes (Ray actors) from exporting at
once. Every load checks the file against ``EXPORT.json``: a missing, truncated or edited export is
rebuilt, never used.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from backtest.core.errors import BadInput
from backtest.core.seal import sha256_file

ONNX_BACKENDS = ("onnx", "onnx-int8")
OPSET = 18
# What makes an export: changing any of it changes the variant folder and the model fingerprint.
RECIPES: dict[str, dict[str, Any]] = {
    "onnx": {"exporter": "torch.onnx.export/dynamo", "opset": OPSET, "output": "last_hidden_state"},
    "onnx-int8": {
        "exporter": "torch.onnx.export/dynamo",
        "opset": OPSET,
        "output": "last_hidden_state",
        "quantization": "onnxruntime.quantize_dynamic",
        "op_types": ["MatMul"],
        "weight_type": "QInt8",
        "per_channel": True,
        "reduce_range": False,
    },
}
INSTALL_HINT = "pip install -e '.[onnx]' (or pip install 'onnxruntime>=1.22,<2' 'onnx>=1.18,<2' 'onnxscript>=0.5,<1')"
_LOCK = threading.Lock()


def recipe_hash(backend: str) -> str:
    """8 hex of the sha256 of a backend's export recipe (part of the model fingerprint)."""
    blob = json.dumps(RECIPES[backend], sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:8]


@lru_cache(maxsize=8)
def _model_files_sha256(model_dir: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for rel, _size, _mtime in stamp:
        digest.update(rel.encode() + b"\0" + sha256_file(Path(model_dir) / rel).encode() + b"\n")
    return digest.hexdigest()


def model_files_sha256(model_dir: Path) -> str:
    """The sha256 over every file of a model folder (relative path and content sha256, sorted by path)."""
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    stamp = tuple((p.relative_to(model_dir).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _model_files_sha256(str(model_dir), stamp)


def cache_root() -> Path:
    """Where exports live (module docstring)."""
    shared = os.environ.get("BACKTEST_INDEX_CACHE")
    if shared:
        return Path(shared) / "onnx"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "backtest" / "onnx"


def export_dir(model_dir: Path, backend: str) -> Path:
    """The folder of one model's export for ``backend`` (exists or not)."""
    variant = "int8" if backend == "onnx-int8" else "fp32"
    return cache_root() / model_files_sha256(model_dir)[:20] / f"{variant}-{recipe_hash(backend)}"


def _onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise BadInput(f"the onnx embedding backends need onnxruntime ({INSTALL_HINT})") from None
    return onnxruntime


def _check_export_deps() -> None:
    _onnxruntime()
    for module in ("onnx", "onnxscript"):
        try:
            __import__(module)
        except ImportError:
            raise BadInput(f"exporting the model to ONNX needs {module} ({INSTALL_HINT})") from None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _valid(folder: Path, backend: str) -> bool:
    """True when ``folder`` holds a whole export for ``backend`` whose file matches its recorded sha256."""
    try:
        info = json.loads((folder / "EXPORT.json").read_text())
        return (
            info.get("recipe") == RECIPES[backend]
            and (folder / "model.onnx").stat().st_size == info.get("bytes")
            and sha256_file(folder / "model.onnx") == info.get("sha256")
        )
    except (OSError, ValueError, AttributeError):
        return False


def _tmp_path(folder: Path, name: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    return Path(tmp)


def _export_fp32(st: Any, out: Path) -> None:
    """``torch.onnx.export`` (dynamo) of the model's transformer: the tokenizer's tensors in, the last
    hidden state out, batch and sequence dimensions dynamic."""
    import torch

    transformer = st[0]
    text = getattr(transformer, "modality_config", {}).get("text", {})
    if type(transformer).__name__ != "Transformer" or text.get("method", "forward") != "forward":
        raise BadInput(
            "the onnx embedding backends support sentence-transformers models whose first module is a text Transformer"
        )
    features = st.preprocess(["an example sentence to trace the model", "and a second, shorter one"])
    names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if isinstance(features.get(k), torch.Tensor)]

    class Forward(torch.nn.Module):
        def __init__(self, model: Any):
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs)), return_dict=True).last_hidden_state

    batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
    with torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(
            Forward(transformer.auto_model).eval(),
            tuple(features[k] for k in names),
            str(out),
            input_names=names,
            output_names=["token_embeddings"],
            opset_version=OPSET,
            dynamo=True,
            external_data=False,
            dynamic_shapes=(tuple({0: batch, 1: seq} for _ in names),),  # one entry: the *inputs tuple
            verbose=False,
        )


def _quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantization of ``fp32`` (per-channel MatMul weights) into ``out``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    recipe = RECIPES["onnx-int8"]
    quantize_dynamic(
        str(fp32),
        str(out),
        op_types_to_quantize=list(recipe["op_types"]),
        per_channel=bool(recipe["per_channel"]),
        reduce_range=bool(recipe["reduce_range"]),
        weight_type=QuantType.QInt8,
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's and quantizer's warnings and log lines off; anything they print goes to stderr, so a
    command's stdout (``--json``) stays clean."""
    import logging
    import warnings

    loggers = [logging.getLogger(), logging.getLogger("torch"), logging.getLogger("onnxscript")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _write_export(folder: Path, backend: str, build: Any) -> None:
    """Build ``model.onnx`` into a temp file, rename it into place, then write ``EXPORT.json``."""
    import onnxruntime
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "EXPORT.json").unlink(missing_ok=True)
    tmp = _tmp_path(folder, "model.onnx")
    try:
        with _quiet():
            build(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, folder / "model.onnx")
    finally:
        tmp.unlink(missing_ok=True)
    from backtest.core.fileio import atomic_write_text

    info = {
        "backend": backend,
        "recipe": RECIPES[backend],
        "sha256": sha256_file(folder / "model.onnx"),
        "bytes": (folder / "model.onnx").stat().st_size,
        "versions": {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__},
    }
    atomic_write_text(folder / "EXPORT.json", json.dumps(info, indent=1, sort_keys=True) + "\n")


EXPORTS = {"count": 0}  # exports built in this process (the tests check that a cached one is reused)


def ensure_export(model_dir: Path, backend: str, st: Any) -> Path:
    """The path of a verified export of ``model_dir`` for ``backend``, exporting (and quantizing) it first
    when the cache has none or a damaged one."""
    if backend not in ONNX_BACKENDS:
        raise BadInput(f"embedding backend {backend!r}: not an onnx backend ({', '.join(ONNX_BACKENDS)})")
    folder = export_dir(model_dir, backend)
    if _valid(folder, backend):
        return folder / "model.onnx"
    _check_export_deps()
    with _file_lock(folder.parent / ".export.lock"):
        if _valid(folder, backend):  # another process finished it while we waited
            return folder / "model.onnx"
        if folder.exists():
            print(f"warning: ONNX export {folder} is missing or damaged; exporting it again", file=sys.stderr)
        if backend == "onnx":
            _write_export(folder, backend, lambda tmp: _export_fp32(st, tmp))
        else:
            fp32 = export_dir(model_dir, "onnx")
            if not _valid(fp32, "onnx"):
                _write_export(fp32, "onnx", lambda tmp: _export_fp32(st, tmp))
            _write_export(folder, backend, lambda tmp: _quantize(fp32 / "model.onnx", tmp))
        EXPORTS["count"] += 1
    if not _valid(folder, backend):
        raise RuntimeError(f"the ONNX export {folder} does not verify right after it was written")
    return folder / "model.onnx"


def embedding_dimension(model: Any) -> int | None:
    """A model's vector length (``get_embedding_dimension``, ``get_sentence_embedding_dimension`` before
    sentence-transformers 6)."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dimension = getter()
    return None if dimension is None else int(dimension)


class OnnxEncoder:
    """A sentence-transformers model whose transformer runs in onnxruntime; ``encode`` answers like
    ``SentenceTransformer.encode`` (the arguments :func:`backtest.text.embed.embed_chunk` passes)."""

    def __init__(self, st: Any, model_dir: Path, backend: str):
        ort = _onnxruntime()
        import torch

        self.st, self.backend = st, backend
        self.path = ensure_export(model_dir, backend, st)
        options = ort.SessionOptions()
        # the same cores torch would use (torch follows OMP_NUM_THREADS and Ray's per-actor CPUs)
        options.intra_op_num_threads = max(1, torch.get_num_threads())
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # no busy-waiting between ops: it burns CPU-seconds that do no work
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        with _LOCK:
            self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.modules = list(st)[1:]

    def get_embedding_dimension(self) -> int | None:
        """The vector length (that of the sentence-transformers model)."""
        return embedding_dimension(self.st)

    get_sentence_embedding_dimension = get_embedding_dimension

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """Vectors of ``sentences`` as ``SentenceTransformer.encode`` computes them (module docstring)."""
        import torch

        texts = list(sentences)
        if not texts:
            return np.zeros((0, self.get_embedding_dimension() or 0), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts])  # encode's own length sort
        out: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                features = self.st.preprocess([texts[i] for i in rows])
                feed = {name: features[name].numpy() for name in self.inputs}
                (tokens,) = self.session.run(["token_embeddings"], feed)
                features["token_embeddings"] = torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.float32))
                for module in self.modules:
                    features = module(features)
                vectors = features["sentence_embedding"]
                if normalize_embeddings:
                    vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
                for row, vector in zip(rows, vectors.numpy()):
                    out[row] = vector
        return np.ascontiguousarray(np.stack(out), dtype=np.float32)
