"""The host pipeline that feeds a GPU: the batches ``SentenceTransformer.encode`` would form, tokenized ahead
by a pool of threads while the model runs, moved to the GPU from pinned memory, vectors put back in the
input order.

``encode`` does one thing at a time: it tokenizes a batch, copies it to the device, runs the model, copies
the vectors back (a synchronisation), then tokenizes the next. On a CPU the model is nearly all of the time;
on a GPU it is not: an H200 embedded 1,903 abstracts/s in fp32 at batch 256, a few percent of what it can
multiply, because the host work between batches bounded the rate (issue 42). Here:

* **the same batches** (:func:`length_sorted_batches`, :func:`batch_plan`): within each chunk of texts (the
  unit :mod:`backtest.text.embed` computes in every executor), longest first by character count, cut into
  batches, exactly as ``encode`` sorts them, so padding stays small and a vector still depends on its chunk
  alone;
* **tokenization ahead, in parallel**: a thread pool runs the model's own ``preprocess`` (the Rust tokenizer
  releases the GIL) a few batches ahead of the model, so the next batch is ready when the device is free;
* **pinned transfers** (on CUDA only): the tokenized tensors are pinned in the tokenizing thread and copied
  with ``non_blocking``, so the copy overlaps the model's work; the vectors stay on the GPU and come back a
  block of batches at a time, not one synchronisation per batch;
* the model's own forward (``SentenceTransformer.__call__``: transformer, pooling, its normalisation) and
  the L2 normalisation ``encode`` applies, under ``torch.inference_mode``, in fp32.

On the CPU the same batches run through the same modules, so the vectors are the plain path's, byte for byte
(``tests/test_embed_feed.py``); :mod:`backtest.text.embed` uses this pipeline only on CUDA, and the CPU keeps
``encode``. ``bench/bench_feed.py`` measures both.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import Any

import numpy as np

FLUSH = 32  # batches whose vectors stay on the GPU before one copy back


def length_sorted_batches(texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """The rows of each batch as ``SentenceTransformer.encode`` forms them: sorted by minus the character count
    (its own ``np.argsort``, ties and all), cut into ``batch_size``."""
    order = np.argsort([-len(t) for t in texts])
    return [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]


def batch_plan(texts: Sequence[str], chunk: int, batch_size: int) -> list[np.ndarray]:
    """Every batch of ``texts`` (rows into ``texts``): each chunk of ``chunk`` texts cut by
    :func:`length_sorted_batches`, chunk after chunk."""
    plan = []
    for start in range(0, len(texts), chunk):
        plan += [rows + start for rows in length_sorted_batches(texts[start : start + chunk], batch_size)]
    return plan


def encode(
    st: Any,
    texts: Sequence[str],
    chunk: int,
    batch_size: int,
    device: str = "cpu",
    workers: int | None = None,
    ahead: int | None = None,
    done: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Unit vectors (n, d) float32 of ``texts`` in their order, by the sentence-transformers model ``st`` on
    ``device`` through the pipeline of the module docstring; ``workers`` tokenizing threads (default: up to 4,
    one per core), ``ahead`` batches tokenized ahead (default twice the workers); ``done(n)`` after each batch."""
    import torch

    workers = workers or max(1, min(4, os.cpu_count() or 1))
    ahead = ahead or 2 * workers
    pinned = device == "cuda"
    dimension = _dimension(st)
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    plan = batch_plan(texts, chunk, batch_size)
    if not plan:
        return out

    def prepare(rows: np.ndarray) -> dict[str, Any]:
        features = st.preprocess([texts[i] for i in rows])
        if pinned:
            features = {k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        return features

    st.eval()
    held: list[tuple[np.ndarray, Any]] = []
    upcoming = iter(plan)
    # The first batch in this thread: a fast tokenizer sets its truncation and padding on its first call (a
    # mutation threads must not race on); every later call asks for the same and only reads them.
    first = next(upcoming)
    ready: Future = Future()
    ready.set_result(prepare(first))
    pending: deque[tuple[np.ndarray, Future]] = deque([(first, ready)])
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tokenize") as pool, torch.inference_mode():
        pending.extend((rows, pool.submit(prepare, rows)) for rows in islice(upcoming, ahead - 1))
        while pending:
            rows, future = pending.popleft()
            following = next(upcoming, None)
            if following is not None:
                pending.append((following, pool.submit(prepare, following)))
            features = {
                k: v.to(device, non_blocking=pinned) if isinstance(v, torch.Tensor) else v
                for k, v in future.result().items()
            }
            vectors = torch.nn.functional.normalize(st(features)["sentence_embedding"], p=2, dim=1)
            if pinned:
                held.append((rows, vectors))
                if len(held) >= FLUSH:
                    _copy_back(held, out)
            else:
                out[rows] = vectors.numpy()
            if done is not None:
                done(len(rows))
        _copy_back(held, out)
    return out


def _copy_back(held: list[tuple[np.ndarray, Any]], out: np.ndarray) -> None:
    """The vectors of ``held`` batches (on the GPU) into their rows of ``out``, in one copy; ``held`` emptied."""
    if not held:
        return
    import torch

    block = torch.cat([vectors for _, vectors in held]).float().cpu().numpy()
    out[np.concatenate([rows for rows, _ in held])] = block
    held.clear()


def _dimension(st: Any) -> int:
    from backtest.text.backends import embedding_dimension

    dimension = embedding_dimension(st)
    if dimension is None:
        raise ValueError("the embedding model does not state its vector length")
    return dimension


__all__ = ["batch_plan", "encode", "length_sorted_batches"]
