"""A floor on the CPU cost of one trigger fire, to set beside GK's cost per element.

    python docs/experiments/quantiles/fire_floor.py [FIRES]

A fire of casu's cluster mode cannot do less than: pop the heap root (the expired cluster), find
its value's tuple in the summary (one binary search), compute its L (eqs. (10)-(12), two
divisions) and deadline, and sift the root down (253 clusters, as QC_A makes at 1M queries). This
loop does only that, on a GK summary of the uniform stream (m ~ 600 tuples) with random cluster
values and deadlines, so it is a lower bound on the cost of a fire that keeps its value (a fire
that changes it also searches the best tuple and moves two pins). Prints ns per fire and the
fires' floor for the measured fire counts (510,394 uniform / 464,678 semisort at 1M queries x 2M
elements) against GK alone at eps/4 and eps on each stream (CPU, this process, batches of 100,000,
best of 3)."""

from __future__ import annotations

import json
import sys
import time

import numba
import numpy as np

from vigil.quantiles._gk_kernels import deadline, lval
from vigil.quantiles._trigger_kernels import heap_push, sift_down
from vigil.quantiles.gk import GKSummary
from vigil.workloads.quantiles import data_stream


@numba.njit(cache=True, nogil=True)
def fires(v, lo, hi, m, n, eps, ca, cb, cval, ckey, heap, hpos, k, count):
    size = k
    acc = 0
    for _ in range(count):
        c = heap[0]
        q = np.searchsorted(v[:m], cval[c])
        q = min(q, m - 1)
        L = lval(lo[q], hi[q], ca[c], cb[c], eps, n)
        d = deadline(L, n)
        ckey[c] = ckey[c] + 1 + (d - n) % 997  # a fresh deadline, spread like the real ones
        sift_down(heap, hpos, ckey, 0, size)
        acc += q
    return acc


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    x = data_stream("uniform", 2_000_000, 0)
    out = {}
    for s in ("uniform", "semisort"):
        xs = data_stream(s, 2_000_000, 0)
        for label, e in (("gk_eps", 0.005), ("gk_eps4", 0.00125)):
            GKSummary(e).insert(xs[:1000])
            best = 1e9
            for _ in range(3):
                g = GKSummary(e)
                t = time.process_time()
                for p in range(0, len(xs), 100_000):
                    g.insert(xs[p:p + 100_000])
                best = min(best, time.process_time() - t)
            out[f"{label}_s_{s}"] = round(best, 4)
    g = GKSummary(0.00125)
    g.insert(x)
    v, lo, hi = g.tuples()
    rng = np.random.default_rng(0)
    k = 253
    a = np.sort(rng.random(k)) * 0.9 + 0.02
    b = a + 0.01
    cval = v[rng.integers(0, len(v), k)]
    ckey = rng.integers(0, 1000, k).astype(np.int64)
    heap = np.full(k, -1, np.int64)
    hpos = np.full(k, -1, np.int64)
    size = 0
    for c in range(k):
        size = heap_push(heap, hpos, ckey, size, c)
    fires(v, lo, hi, len(v), g.n, 0.00125, a, b, cval, ckey, heap, hpos, k, 1000)
    best = 1e9
    for _ in range(5):
        t = time.process_time()
        fires(v, lo, hi, len(v), g.n, 0.00125, a, b, cval, ckey, heap, hpos, k, count)
        best = min(best, time.process_time() - t)
    ns = best / count * 1e9
    out.update({"ns_per_fire_floor": round(ns, 1), "m": len(v), "clusters": k})
    for s, f in (("uniform", 510_394), ("semisort", 464_678)):
        out[f"floor_s_{s}"] = round(f * ns * 1e-9, 4)
        out[f"floor_over_gk_eps4_{s}"] = round(f * ns * 1e-9 / out[f"gk_eps4_s_{s}"], 3)
        out[f"floor_over_gk_eps_{s}"] = round(f * ns * 1e-9 / out[f"gk_eps_s_{s}"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
