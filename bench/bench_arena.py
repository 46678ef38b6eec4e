"""Arena bootstrap speed: 10,000 BTD refits, batched and warm-started, against one scipy fit per replicate.

Synthetic but realistic: 5 systems with known strengths, ~125 contexts with every pair
compared (1,250 folded cases, shares on the 1/8 grid as two averaged verdicts give).
The batched path (:func:`backtest.arena.bootstrap.bootstrap_btd`) fits 500 replicates
per scipy call; the naive path fits each replicate alone with the same objective
(``block=1``), timed on a sample and extrapolated. Both wall and CPU seconds are
reported (the machine is shared). ``--quick`` uses 2,000 replicates.
"""

from __future__ import annotations

import math
import time

import numpy as np


def _cases(seed: int = 0, n_contexts: int = 125):
    rng = np.random.default_rng(seed)
    beta = {"s1": 0.8, "s2": 0.4, "s3": 0.0, "s4": -0.3, "s5": -0.9}
    names = sorted(beta)
    shares = np.array([1.0, 0.75, 0.5, 0.25, 0.0])
    rows, clusters = [], []
    for k in range(n_contexts):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                p = 1 / (1 + math.exp(-(beta[a] - beta[b])))
                probs = np.array([p**2, p * (1 - p), 0.35, (1 - p) * p, (1 - p) ** 2])
                two = rng.choice(shares, size=2, p=probs / probs.sum())
                rows.append((a, b, float(two.mean())))
                clusters.append(f"c{k}")
    return names, rows, clusters


def run(args) -> dict:
    """Time 10k (2k with --quick) bootstrap replicates, batched vs per-replicate."""
    from backtest.arena.bootstrap import bootstrap_btd, case_weights
    from backtest.arena.btd import fit_btd, fit_btd_batch, table_from_outcomes

    n_boot = 2000 if getattr(args, "quick", False) else 10_000
    names, rows, clusters = _cases()
    point = fit_btd(table_from_outcomes(names, rows))
    out = {
        "n_systems": len(names),
        "n_cases": len(rows),
        "n_boot": n_boot,
        "theta": round(point.theta, 4),
        "ordering": point.ordering(),
    }
    for label, cl in (("cases", None), ("contexts", clusters)):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        boot = bootstrap_btd(names, rows, point, clusters=cl, n_boot=n_boot, seed=1)
        out[f"batched_{label}_wall_s"] = round(time.perf_counter() - wall0, 3)
        out[f"batched_{label}_cpu_s"] = round(time.process_time() - cpu0, 3)
        out[f"full_ordering_recovery_{label}"] = round(boot.full_ordering_recovery, 4)
    # naive: one scipy call per replicate, on a sample of replicates
    table, Wc, Lc, Tc = case_weights(names, rows)
    rng = np.random.default_rng(1)
    sample = 200
    draws = rng.multinomial(len(rows), np.full(len(rows), 1 / len(rows)), size=sample).astype(float)
    W, L, T = draws @ Wc, draws @ Lc, draws @ Tc
    init = (point.beta, math.log(point.theta))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    single = fit_btd_batch(table, W, L, T, init=init, block=1)[0]
    naive_wall, naive_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    batched = fit_btd_batch(table, W, L, T, init=init, block=500)[0]
    out["naive_per_replicate_ms"] = round(1000 * naive_wall / sample, 3)
    out["naive_extrapolated_wall_s"] = round(naive_wall / sample * n_boot, 2)
    out["naive_extrapolated_cpu_s"] = round(naive_cpu / sample * n_boot, 2)
    out["speedup_cpu"] = round(out["naive_extrapolated_cpu_s"] / max(out["batched_cases_cpu_s"], 1e-9), 1)
    out["max_rating_difference_batched_vs_single"] = float(f"{np.abs(batched - single).max() * 400 / math.log(10):.2e}")
    return out
