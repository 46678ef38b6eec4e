"""The embedding device (backtest.text.device): ``--device auto|cpu|cuda`` and ``BACKTEST_DEVICE``.

On a machine without a GPU (CI): ``auto`` picks the CPU, ``cuda`` is refused in one line before any work, and
the device is in no key. Where torch sees a GPU the same tests check that ``auto`` takes it (the ones that
need the other kind of machine skip, saying why).
"""

from __future__ import annotations

import pytest

from backtest.core.errors import BadInput
from backtest.text import device, embed
from backtest.text.embed import DEFAULT_MODEL, model_device, model_fingerprint
from tests.conftest import REPO, run_cli

HAS_GPU = device.cuda_available()
no_gpu_only = pytest.mark.skipif(HAS_GPU, reason="checks a machine where torch sees no CUDA GPU")
gpu_only = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU that torch sees (none here)")
FROZEN = REPO / "frozen" / "space-2016" / "random_claims" / "v3"


@no_gpu_only
def test_auto_picks_the_cpu_without_a_gpu(monkeypatch):
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    assert device.chosen() == "auto" and device.resolve() == "cpu"
    with device.use("auto"):
        assert model_device(DEFAULT_MODEL) == "cpu"


@gpu_only
def test_auto_takes_the_gpu(monkeypatch):
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    assert device.resolve() == "cuda" and model_device(DEFAULT_MODEL) == "cuda"
    with device.use("cpu"):
        assert model_device(DEFAULT_MODEL) == "cpu"


@no_gpu_only
def test_cuda_without_a_gpu_is_refused_in_one_line(tmp_path, capsys):
    root = tmp_path / "ws"
    root.mkdir()
    for command in (["retrieve", FROZEN], ["score", FROZEN], ["release", "replay", "--check"]):
        code, out, err = run_cli([*command, "--device", "cuda"], root=root, capsys=capsys)
        assert code == 2, (command, err)
        assert err.count("\n") == 1 and err.startswith("error: --device cuda: torch ")
        assert "sees no CUDA GPU here; use --device auto or cpu" in err
    assert sorted(p.name for p in root.iterdir()) == []  # refused before anything was written


@no_gpu_only
def test_the_environment_chooses_too(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(device.DEVICE_ENV, "cuda")
    with pytest.raises(BadInput, match="sees no CUDA GPU"):
        device.resolve()
    code, _, err = run_cli(["retrieve", FROZEN], root=tmp_path, capsys=capsys)
    assert code == 2 and "--device cuda" in err
    monkeypatch.setenv(device.DEVICE_ENV, "gpu")
    with pytest.raises(BadInput, match="BACKTEST_DEVICE 'gpu': choose auto, cpu, cuda"):
        device.chosen()
    code, _, err = run_cli(["retrieve", FROZEN], root=tmp_path, capsys=capsys)
    assert code == 2 and "'gpu' is not one of 'auto', 'cpu', 'cuda'" in err


def test_a_use_block_overrides_the_environment_and_ends_with_the_block(monkeypatch):
    monkeypatch.setenv(device.DEVICE_ENV, "auto")
    with device.use("cpu"):
        assert device.chosen() == "cpu" and device.resolve() == "cpu"
    assert device.chosen() == "auto"
    with pytest.raises(BadInput, match="--device 'tpu': choose auto, cpu, cuda"):
        with device.use("tpu"):
            pass


def test_only_torch_moves_to_a_gpu(monkeypatch, capsys):
    """bf16 is CPU autocast by its recipe and the onnx backends are CPU runtimes: they stay on the CPU even when
    a GPU is asked for (said once on stderr). The GPU's presence is faked here (no GPU on CI), the test says so."""
    monkeypatch.setattr(device, "cuda_available", lambda: True)
    device._say_cpu_only.cache_clear()
    assert device.for_backend("torch", "cuda") == "cuda" and device.for_backend("torch", "auto") == "cuda"
    assert device.for_backend("bf16", "auto") == "cpu" and capsys.readouterr().err == ""
    assert device.for_backend("onnx-int8", "cuda") == "cpu"
    assert device.for_backend("onnx-int8", "cuda") == "cpu"
    assert capsys.readouterr().err.count("the onnx-int8 embedding backend runs on the CPU") == 1


def test_a_ray_cluster_decides_where_its_actors_run(monkeypatch):
    """The actors get a GPU each when the torch model goes to one: ``cuda``, or ``auto`` on a cluster that lists
    GPUs; ``cuda`` on a cluster without one is refused before an actor starts (cluster sizes given, no Ray)."""
    for choice, gpus, expected in (
        ("auto", 0, (False, "cpu")),
        ("auto", 2, (True, "cuda")),
        ("cpu", 2, (False, "cpu")),
    ):
        with device.use(choice, check=False):
            assert embed._ray_device(DEFAULT_MODEL, gpus) == expected
    with device.use("cuda", check=False):
        assert embed._ray_device(DEFAULT_MODEL, 1) == (True, "cuda")
        assert embed._ray_device(f"{DEFAULT_MODEL}@bf16", 1) == (False, "cuda")  # its actor resolves it to the CPU
        with pytest.raises(BadInput, match="the Ray cluster has no GPU"):
            embed._ray_device(DEFAULT_MODEL, 0)


def test_the_device_is_in_no_key():
    """Vectors of every device share the caches: the model fingerprint (in every embedding-cache key, vector
    store folder and index key, and in each retrieval record) does not depend on the device."""
    from backtest.retrieve.dense import embedding_params

    with device.use("cpu"):
        cpu = model_fingerprint(DEFAULT_MODEL), embedding_params(DEFAULT_MODEL)
    with device.use("auto"):
        auto = model_fingerprint(DEFAULT_MODEL), embedding_params(DEFAULT_MODEL)
    assert cpu == auto and "cuda" not in repr(cpu) and "cpu" not in repr(cpu)


def test_a_ray_actor_embeds_a_chunk_as_this_process_does():
    """The actor class itself, in this process (Ray runs the same object on its workers)."""
    texts = [f"A survey of exoplanet atmospheres, part {i}." for i in range(12)]
    actor = embed._ChunkEmbedder(DEFAULT_MODEL, None, "cpu")
    assert actor.device == "cpu"
    out = actor({"start": [0], "texts": [texts]})
    assert (out["row"] == range(12)).all()
    assert (out["vector"] == embed.embed_chunk(texts, DEFAULT_MODEL, device="cpu")).all()
