"""The host pipeline that feeds a GPU (``backtest.text.feed``) against the plain path (one ``encode`` call per
256-text chunk, what ``embed_texts`` runs on a CPU), all-MiniLM-L6-v2 in fp32, in one process.

On a fixed random sample of astro-2025's future abstracts (500; 128 with ``--quick``; ``BENCH_FEED_N`` sets
it), each title + abstract exactly as the dense retriever embeds it:

- **CPU**: both paths on the same chunks with the same batches (64), interleaved chunk by chunk (each chunk
  by both in turn, a different one first each time) over two rounds after a warm-up, so that the load of this
  shared machine falls on both alike: texts per wall- and CPU-second, the ratio pipeline / plain, and whether
  the vectors are the same bytes (they must be: same batches, same modules).
- **GPU** (when torch sees a CUDA GPU; otherwise ``gpu`` says why it is absent): ``encode`` per chunk on the
  GPU and the pipeline at batches of 64 and 256, on the same sample, interleaved the same way: texts/s, the
  ratio to the CPU's plain path, and the largest component difference from the CPU vectors; the GPU's fp32
  matrix-product GFLOP/s (8192 square, best of 5) and the share of it the pipeline reaches (the model's
  FLOPs per text from ``bench_embed``); and, unless ``--quick``, 100,000 texts (the sample repeated)
  through ``embed_texts`` on the GPU, timed whole (issue 42's aim: under a minute).
"""

from __future__ import annotations

import os
import random
import time

import numpy as np

from bench.timing import Timer

ROUNDS = 2
SCALE_N = 100_000
PATHS = ("plain", "pipeline")


def _sample(texts: list[str], n: int) -> list[str]:
    return [texts[i] for i in random.Random(1).sample(range(len(texts)), n)]


def _interleaved(chunks: list[list[str]], runs: dict) -> tuple[dict[str, list[Timer]], dict[str, np.ndarray]]:
    """Each chunk by every run in turn (a different one first each time), :data:`ROUNDS` rounds: the timers
    and the last round's vectors of each run."""
    names = list(runs)
    timers: dict[str, list[Timer]] = {name: [] for name in names}
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in names}
    turn = 0
    for round_ in range(ROUNDS):
        for chunk in chunks:
            for name in names[turn:] + names[:turn]:
                with Timer() as t:
                    out = runs[name](chunk)
                timers[name].append(t)
                if round_ == ROUNDS - 1:
                    vectors[name].append(out)
            turn = (turn + 1) % len(names)
    return timers, {name: np.concatenate(v) for name, v in vectors.items()}


def _rates(timers: list[Timer], n: int) -> dict:
    wall, cpu = sum(t.wall for t in timers), sum(t.cpu for t in timers)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "texts_per_wall_s": round(n * ROUNDS / wall, 2),
        "texts_per_cpu_s": round(n * ROUNDS / cpu, 2),
    }


def run(args) -> dict:
    import torch

    from backtest.text import device, feed
    from backtest.text.embed import BATCH, CHUNK, embed_chunk, load_model
    from bench.bench_embed import _docs

    quick = bool(getattr(args, "quick", False))
    n = int(os.environ.get("BENCH_FEED_N", 128 if quick else 500))
    docs = _docs()
    sample = _sample(docs.texts(("title", "abstract")), n)
    chunks = [sample[start : start + CHUNK] for start in range(0, len(sample), CHUNK)]
    st = load_model(device="cpu")
    runs = {
        "plain": lambda chunk: embed_chunk(chunk, batch_size=BATCH, device="cpu"),
        "pipeline": lambda chunk: feed.encode(st, chunk, CHUNK, BATCH, device="cpu"),
    }
    for fn in runs.values():
        fn(sample[:16])  # warm-up
    load = [round(x, 1) for x in os.getloadavg()]
    timers, vectors = _interleaved(chunks, runs)
    cpu = {name: _rates(timers[name], n) for name in PATHS}
    result: dict = {
        "cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "texts": n,
        "corpus": docs.corpus_id,
        "chunk": CHUNK,
        "rounds": ROUNDS,
        "load_average_at_start": load,
        "cpu": {
            "batch_size": BATCH,
            "paths": cpu,
            "pipeline_vs_plain_wall": round(cpu["pipeline"]["texts_per_wall_s"] / cpu["plain"]["texts_per_wall_s"], 3),
            "pipeline_vs_plain_cpu": round(cpu["pipeline"]["texts_per_cpu_s"] / cpu["plain"]["texts_per_cpu_s"], 3),
            "identical_vectors": bool(np.array_equal(vectors["plain"], vectors["pipeline"])),
        },
    }
    print(f"  cpu: {result['cpu']}", flush=True)
    if device.cuda_available():
        result["gpu"] = _gpu(st, sample, chunks, vectors["plain"], cpu["plain"]["texts_per_wall_s"], quick)
    else:
        result["gpu"] = {"measured": False, "why": "torch sees no CUDA GPU on this machine"}
    result["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return result


def _gpu(st_cpu, sample: list[str], chunks: list[list[str]], reference: np.ndarray, cpu_rate: float, quick: bool):
    """The GPU rows of the module docstring."""
    import torch

    from backtest.text import device, feed
    from backtest.text.embed import CHUNK, embed_texts, load_model
    from bench.bench_embed import _flops_per_text, _token_lengths

    st = load_model(device="cuda")

    def encode_on_gpu(chunk, batch):
        return st.encode(chunk, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)

    runs = {
        "encode_64": lambda chunk: encode_on_gpu(chunk, 64),
        "pipeline_64": lambda chunk: feed.encode(st, chunk, CHUNK, 64, device="cuda"),
        "pipeline_256": lambda chunk: feed.encode(st, chunk, CHUNK, 256, device="cuda"),
    }
    for fn in runs.values():
        fn(sample[:256])  # warm-up (kernels, allocator)
    torch.cuda.synchronize()
    timers, vectors = _interleaved(chunks, runs)
    rows = {}
    for name in runs:
        rows[name] = _rates(timers[name], len(sample))
        rows[name]["vs_cpu_plain_wall"] = round(rows[name]["texts_per_wall_s"] / cpu_rate, 1)
        rows[name]["max_abs_diff_to_cpu"] = float(np.abs(vectors[name] - reference).max())
    gflop = _flops_per_text(_token_lengths(sample)[0]) / 1e9
    a = torch.randn(8192, 8192, device="cuda")
    torch.matmul(a, a)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        torch.matmul(a, a)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    peak = 2 * 8192**3 / best / 1e9
    out: dict = {
        "measured": True,
        "name": torch.cuda.get_device_name(0),
        "matmul_fp32_gflops": round(peak, 1),
        "gflop_per_text": round(gflop, 3),
        "paths": rows,
    }
    for row in rows.values():
        row["share_of_fp32_matmul"] = round(row["texts_per_wall_s"] * gflop / peak, 4)
    if not quick:
        big = (sample * (SCALE_N // len(sample) + 1))[:SCALE_N]
        with device.use("cuda"), Timer() as t:
            embed_texts(big)
        out["scale"] = {"texts": SCALE_N, "wall_s": round(t.wall, 1), "texts_per_wall_s": round(SCALE_N / t.wall, 1)}
    print(f"  gpu: {out}", flush=True)
    return out


def summary(results: dict) -> str:
    """The docs' table (``docs/retrieve.md``, filled by ``scripts/gen_docs.py``) from a committed result."""
    cpu, gpu = results["cpu"], results["gpu"]
    rows = [
        "| device | path | batch | texts / wall-s | / CPU-s | × CPU plain (wall) | vectors |",
        "|---|---|---|---|---|---|---|",
    ]
    same = "identical to plain" if cpu["identical_vectors"] else "differ from plain"
    for name in PATHS:
        p = cpu["paths"][name]
        ratio = p["texts_per_wall_s"] / cpu["paths"]["plain"]["texts_per_wall_s"]
        rows.append(
            f"| CPU | {name} | {cpu['batch_size']} | {p['texts_per_wall_s']:.1f} | {p['texts_per_cpu_s']:.1f} "
            f"| {ratio:.2f} | {'reference' if name == 'plain' else same} |"
        )
    if gpu.get("measured"):
        for name, p in gpu["paths"].items():
            path, batch = name.rsplit("_", 1)
            rows.append(
                f"| GPU | {path} | {batch} | {p['texts_per_wall_s']:.1f} | {p['texts_per_cpu_s']:.1f} "
                f"| {p['vs_cpu_plain_wall']:.1f} | max diff {p['max_abs_diff_to_cpu']:.1e} |"
            )
        tail = (
            f"GPU: {gpu['name']}, {gpu['matmul_fp32_gflops']:.0f} GFLOP/s fp32 matrix product; the pipeline at 256 "
            f"reaches {gpu['paths']['pipeline_256']['share_of_fp32_matmul']:.1%} of it."
        )
        if "scale" in gpu:
            tail += f" {gpu['scale']['texts']:,} texts through `embed_texts` on it: {gpu['scale']['wall_s']} s."
    else:
        tail = (
            f"No GPU rows: {gpu['why']}. The same benchmark (`python -m bench feed`) adds them (encode and the "
            "pipeline at batches 64 and 256, the share of the card's fp32 throughput, 100,000 texts timed whole) "
            "where torch sees a CUDA GPU: they await a GPU machine."
        )
    cpu_note = (
        f"On the CPU the pipeline runs at {cpu['pipeline_vs_plain_wall']:.2f}x the plain path by wall-clock and "
        f"{cpu['pipeline_vs_plain_cpu']:.2f}x by CPU-seconds: its tokenizing threads share the cores torch "
        "computes on, and the model is nearly all of the time, so the CPU keeps `encode`; the pipeline is for a "
        "GPU, where the host work between batches is the bound."
    )
    return "\n".join(
        [
            f"Measured {results['measured_at'][:10]} on {results['cpus']} shared cores ({results['threads']} torch "
            f"threads, load {results['load_average_at_start'][0]} at the start), {results['texts']} abstracts of "
            f"{results['corpus']} in chunks of {results['chunk']}, both paths interleaved chunk by chunk over "
            f"{results['rounds']} rounds.",
            "",
            *rows,
            "",
            cpu_note,
            "",
            tail,
        ]
    )
