"""Embedding backends (backtest.text.embed, backtest.text.onnx_backend): torch fp32, torch bf16 autocast,
onnxruntime fp32 and int8, OpenVINO int8, on real abstracts.

Real parts throughout: the packaged all-MiniLM-L6-v2, exported by torch.onnx.export and run by onnxruntime
or (quantized by NNCF) OpenVINO, on 300 title + abstract texts of the small real instance ``astro-2025-ep``
(conftest). Speed is measured by the benchmark (``bench/bench_embed.py``), never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from backtest.core.errors import BadInput
from backtest.core.seal import sha256_file
from backtest.corpus.future import open_future_corpus
from backtest.corpus.instance import load_instance
from backtest.retrieve.dense import embedding_params
from backtest.retrieve.protocol import load_future_docs
from backtest.text import backends, embed, onnx_backend
from backtest.text.embed import (
    CHUNK,
    DEFAULT_MODEL,
    embed_texts,
    load_model,
    model_fingerprint,
    parse_model_spec,
    resolve_model_path,
)

ONNX, INT8 = f"{DEFAULT_MODEL}@onnx", f"{DEFAULT_MODEL}@onnx-int8"
BF16, OV_INT8 = f"{DEFAULT_MODEL}@bf16", f"{DEFAULT_MODEL}@openvino-int8"


@pytest.fixture(scope="module")
def abstracts(astro_ep_ws) -> list[str]:
    """300 real title + abstract texts, as the dense retriever embeds them."""
    ws = astro_ep_ws
    docs = load_future_docs(open_future_corpus(load_instance("astro-2025-ep", ws), ws), ws)
    texts = docs.texts(("title", "abstract"))
    assert len(texts) >= 300
    return texts[:300]


@pytest.fixture(scope="module")
def torch_vectors(abstracts) -> np.ndarray:
    return embed_texts(abstracts)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))


def test_model_specs_name_the_backend():
    assert parse_model_spec(DEFAULT_MODEL) == (DEFAULT_MODEL, "torch")
    assert parse_model_spec(ONNX) == (DEFAULT_MODEL, "onnx")
    assert parse_model_spec(INT8) == (DEFAULT_MODEL, "onnx-int8")
    assert parse_model_spec(f"{DEFAULT_MODEL}@torch") == (DEFAULT_MODEL, "torch")
    assert parse_model_spec(BF16) == (DEFAULT_MODEL, "bf16")
    assert parse_model_spec(OV_INT8) == (DEFAULT_MODEL, "openvino-int8")
    with pytest.raises(BadInput, match="unknown backend 'onnx-fp16'.*torch, bf16, onnx, onnx-int8, openvino-int8"):
        parse_model_spec(f"{DEFAULT_MODEL}@onnx-fp16")
    assert resolve_model_path(INT8) == resolve_model_path(DEFAULT_MODEL)


def test_a_model_folder_with_an_at_sign_is_still_a_folder(tmp_path):
    folder = tmp_path / "me@host" / "model"
    folder.mkdir(parents=True)
    assert parse_model_spec(str(folder)) == (str(folder), "torch")
    assert parse_model_spec(f"{folder}@onnx") == (str(folder), "onnx")


def test_the_fingerprint_differs_per_backend_and_torch_keeps_its_old_one():
    specs = (DEFAULT_MODEL, f"{DEFAULT_MODEL}@torch", ONNX, INT8, BF16, OV_INT8)
    prints = {spec: model_fingerprint(spec) for spec in specs}
    torch_print = prints[DEFAULT_MODEL]
    # the form every cache, index and prospective commitment made before the backends existed carries
    assert torch_print.startswith(f"{DEFAULT_MODEL}:") and len(torch_print.split(":")[1]) == 16
    assert "@" not in torch_print and prints[f"{DEFAULT_MODEL}@torch"] == torch_print
    assert prints[ONNX].startswith(torch_print + "@onnx:")
    assert prints[INT8].startswith(torch_print + "@onnx-int8:")
    assert prints[BF16].startswith(torch_print + "@bf16:")
    assert prints[OV_INT8].startswith(torch_print + "@openvino-int8:")
    assert len(set(prints.values())) == 5
    # so the corpus embeddings (and their index keys and vector-store folders) never mix
    fingerprints = {embedding_params(spec)["model_fingerprint"] for spec in (DEFAULT_MODEL, ONNX, INT8, BF16, OV_INT8)}
    assert len(fingerprints) == 5


def test_the_calibration_texts_are_in_the_openvino_fingerprint(monkeypatch):
    """Other calibration texts quantize another model: its fingerprint (and export folder) must change."""
    before = model_fingerprint(OV_INT8)
    recipe = dict(backends.RECIPES["openvino-int8"], calibration_sha256="0" * 64)
    monkeypatch.setitem(backends.RECIPES, "openvino-int8", recipe)
    assert model_fingerprint(OV_INT8) != before
    assert len(onnx_backend.calibration_texts()) >= 100


def test_bf16_without_native_support_says_it_is_slow(monkeypatch, capsys):
    monkeypatch.setattr(embed, "native_bf16", lambda: False)
    embed.Bf16Encoder(load_model(DEFAULT_MODEL))
    assert "no native bf16" in capsys.readouterr().err


@pytest.mark.slow
def test_onnx_fp32_gives_the_torch_vectors(abstracts, torch_vectors):
    vectors = embed_texts(abstracts, model=ONNX)
    assert vectors.shape == torch_vectors.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = cosines(vectors, torch_vectors)
    assert cos.min() >= 0.9999, f"min cosine {cos.min()}"
    assert np.abs(vectors - torch_vectors).max() < 1e-4
    # the nearest neighbour of every abstract among the others is the same
    sims_t, sims_o = torch_vectors @ torch_vectors.T, vectors @ vectors.T
    np.fill_diagonal(sims_t, -1)
    np.fill_diagonal(sims_o, -1)
    assert (sims_t.argmax(1) == sims_o.argmax(1)).mean() >= 0.99


@pytest.mark.slow
@pytest.mark.parametrize("spec", [INT8, OV_INT8])
def test_the_int8_backends_are_close_to_the_torch_vectors(spec, abstracts, torch_vectors):
    vectors = embed_texts(abstracts, model=spec)
    cos = cosines(vectors, torch_vectors)
    assert cos.mean() >= 0.99, f"mean cosine {cos.mean()}"
    assert cos.min() >= 0.95, f"min cosine {cos.min()}"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(embed.embed_chunk(abstracts[:40], spec), embed_texts(abstracts[:40], model=spec))


@pytest.mark.slow
def test_bf16_gives_the_torch_vectors_to_a_cosine_of_1e_4(abstracts, torch_vectors):
    vectors = embed_texts(abstracts, model=BF16)
    assert vectors.shape == torch_vectors.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = cosines(vectors, torch_vectors)
    assert cos.mean() >= 0.9999 and cos.min() >= 0.9995, f"mean {cos.mean()}, min {cos.min()}"
    assert not np.array_equal(vectors, torch_vectors)  # bf16 products, not fp32 ones
    assert np.array_equal(embed_texts(abstracts[:40], model=BF16), vectors[:40])  # deterministic
    assert embed_texts([], model=BF16).shape == (0, 384)


@pytest.mark.slow
def test_the_openvino_export_is_two_verified_files_rebuilt_when_damaged(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BACKTEST_INDEX_CACHE", str(tmp_path / "cache"))
    st, folder = load_model(DEFAULT_MODEL), resolve_model_path(DEFAULT_MODEL)
    before = onnx_backend.EXPORTS["count"]
    xml = onnx_backend.ensure_export(folder, "openvino-int8", st)
    assert xml.name == "model.xml" and xml.parent.name.startswith("ov-int8-")
    assert onnx_backend.EXPORTS["count"] == before + 1  # the fp32 export it starts from is made on the way
    info = json.loads((xml.parent / "EXPORT.json").read_text())
    assert sorted(info["files"]) == ["model.bin", "model.xml"] and info["recipe"]["calibration_sha256"]
    assert "openvino" in info["versions"] and "nncf" in info["versions"]
    assert not [p for p in xml.parent.iterdir() if p.name.endswith(".tmp")]
    assert onnx_backend.ensure_export(folder, "openvino-int8", st) == xml
    assert onnx_backend.EXPORTS["count"] == before + 1

    weights = xml.parent / "model.bin"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert onnx_backend.ensure_export(folder, "openvino-int8", st) == xml
    assert onnx_backend.EXPORTS["count"] == before + 2
    assert "damaged; exporting it again" in capsys.readouterr().err
    assert sha256_file(weights) == info["files"]["model.bin"]["sha256"]  # the quantization is deterministic


def test_a_missing_openvino_is_one_clear_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)
    with pytest.raises(BadInput) as caught:
        onnx_backend.OpenVinoEncoder(object(), resolve_model_path(DEFAULT_MODEL), "openvino-int8")
    message = caught.value.message
    assert "\n" not in message and "openvino" in message and "pip install" in message


@pytest.mark.slow
def test_a_vector_depends_only_on_its_text_and_chunk(abstracts):
    """The unit both executors compute: embedding a chunk again gives the same bytes."""
    first = embed_texts(abstracts[:40], model=ONNX)
    again = embed.embed_chunk(abstracts[:40], ONNX)
    assert np.array_equal(first, again)
    assert embed_texts([], model=ONNX).shape == (0, 384)


@pytest.mark.slow
def test_the_export_is_cached_and_a_damaged_one_is_rebuilt(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BACKTEST_INDEX_CACHE", str(tmp_path / "cache"))
    st, folder = load_model(DEFAULT_MODEL), resolve_model_path(DEFAULT_MODEL)
    before = onnx_backend.EXPORTS["count"]
    path = onnx_backend.ensure_export(folder, "onnx", st)
    assert onnx_backend.EXPORTS["count"] == before + 1
    assert path.is_relative_to(tmp_path / "cache" / "onnx")
    info = json.loads((path.parent / "EXPORT.json").read_text())
    assert info["recipe"] == onnx_backend.RECIPES["onnx"]
    assert info["files"]["model.onnx"]["bytes"] == path.stat().st_size
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]

    assert onnx_backend.ensure_export(folder, "onnx", st) == path  # second load: no new export
    assert onnx_backend.EXPORTS["count"] == before + 1

    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the weights
    path.write_bytes(bytes(data))
    assert onnx_backend.ensure_export(folder, "onnx", st) == path
    assert onnx_backend.EXPORTS["count"] == before + 2
    assert "damaged; exporting it again" in capsys.readouterr().err
    assert sha256_file(path) == info["files"]["model.onnx"]["sha256"]  # the export is deterministic

    path.write_bytes(bytes(data[: len(data) // 3]))  # truncated, as by a full disk
    onnx_backend.ensure_export(folder, "onnx", st)
    assert onnx_backend.EXPORTS["count"] == before + 3
    assert sha256_file(path) == info["files"]["model.onnx"]["sha256"]

    # the session the encoder opens runs the verified file
    encoder = onnx_backend.OnnxEncoder(st, folder, "onnx")
    assert encoder.path == path and encoder.encode(["a test"], normalize_embeddings=True).shape == (1, 384)


def test_a_missing_onnxruntime_is_one_clear_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with pytest.raises(BadInput) as caught:
        onnx_backend.OnnxEncoder(object(), resolve_model_path(DEFAULT_MODEL), "onnx")
    message = caught.value.message
    assert "\n" not in message and "onnxruntime" in message and "pip install" in message


@pytest.mark.slow
def test_a_missing_onnxruntime_through_embed_texts(tmp_path):
    """In a fresh process, as a command would meet it: one BadInput line, no traceback from deep inside."""
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from backtest.core.errors import BadInput\n"
        "from backtest.text.embed import embed_texts\n"
        "try:\n"
        f"    embed_texts(['a text'], model={ONNX!r})\n"
        "except BadInput as exc:\n"
        "    print('error:', exc.message); sys.exit(2)\n"
    )
    env = {**os.environ, "BACKTEST_INDEX_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and "onnxruntime" in lines[0] and "pip install" in lines[0]
    assert not (tmp_path / "cache" / "onnx").exists()  # nothing exported


@pytest.mark.slow
def test_the_backend_reaches_ray_workers(abstracts, ray_token):
    """A local Ray cluster embeds with the backend the spec names, byte-identical to this process."""
    pytest.importorskip("ray", reason="the ray executor needs the scale extra (pip install -e '.[scale]')")
    import ray

    from backtest.core import executor
    from backtest.core.executor import ExecutorSpec

    texts = abstracts[: 2 * CHUNK] + abstracts[: CHUNK // 2]  # three chunks
    local = embed_texts(texts, model=INT8)
    try:
        with executor.use(ExecutorSpec("ray", num_cpus=2)):
            remote = embed_texts(texts, model=INT8)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert np.array_equal(remote, local), f"max |diff| {np.abs(remote - local).max()}"
    assert not np.array_equal(local, embed_texts(texts))  # int8, not torch


def test_an_export_of_the_older_format_is_told_apart_from_a_damaged_one(tmp_path):
    """Exports made before per-file hashes are made again with a note, not reported as damage."""
    folder = tmp_path / "fp32-00000000"
    folder.mkdir()
    (folder / "EXPORT.json").write_text(json.dumps({"sha256": "ab" * 32, "bytes": 3, "recipe": {}}))
    assert onnx_backend._older_format(folder)
    (folder / "EXPORT.json").write_text(json.dumps({"files": {}, "recipe": {}}))
    assert not onnx_backend._older_format(folder)
    (folder / "EXPORT.json").write_text('{"sha256": "ab", "bytes"')  # cut short: damage
    assert not onnx_backend._older_format(folder)
    assert not onnx_backend._older_format(tmp_path / "missing")
