"""What each embedding backend is: its name, its recipe (what makes its vectors, hashed into the model
fingerprint) and the few facts both :mod:`backtest.text.embed` and :mod:`backtest.text.onnx_backend` need.

A leaf module (no backtest imports), so the two can share it without importing each other at load time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

BACKENDS = ("torch", "bf16", "onnx", "onnx-int8", "openvino-int8")
CALIBRATION = Path(__file__).with_name("calibration.txt")  # openvino-int8's calibration texts
_ONNX_EXPORT = {"exporter": "torch.onnx.export/dynamo", "opset": 18, "output": "last_hidden_state"}
# What makes each non-torch backend's vectors: changing any of it changes the model fingerprint (and, for
# the exported backends, the export's cache folder: backtest.text.onnx_backend).
RECIPES: dict[str, dict] = {
    "bf16": {"autocast": "torch.bfloat16", "device": "cpu"},
    "onnx": dict(_ONNX_EXPORT),
    "onnx-int8": {
        **_ONNX_EXPORT,
        "quantization": "onnxruntime.quantize_dynamic",
        "op_types": ["MatMul"],
        "weight_type": "QInt8",
        "per_channel": True,
        "reduce_range": False,
    },
    "openvino-int8": {
        **_ONNX_EXPORT,
        "converter": "openvino.convert_model",
        "quantization": "nncf.quantize",
        "model_type": "transformer",
        "preset": "mixed",
        "calibration": "calibration.txt",
        "calibration_sha256": hashlib.sha256(CALIBRATION.read_bytes()).hexdigest(),
        "calibration_batch": 4,
        "inference_precision": "bf16",
        "performance_hint": "throughput",
        "batch_size": 32,
    },
}


def recipe_hash(backend: str) -> str:
    """8 hex of the sha256 of a backend's recipe (part of the model fingerprint)."""
    blob = json.dumps(RECIPES[backend], sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:8]


def native_bf16() -> bool:
    """True when this CPU computes bfloat16 products natively (AVX512-BF16 or AMX-BF16, read from
    ``/proc/cpuinfo``; False where that file is missing). Elsewhere ``bf16`` still gives its vectors, slowly."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def embedding_dimension(model: Any) -> int | None:
    """A model's vector length (``get_embedding_dimension``, ``get_sentence_embedding_dimension`` before
    sentence-transformers 6)."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dimension = getter()
    return None if dimension is None else int(dimension)
