"""Re-time some plans of a batch fit (vigil.bench.joins_dynamic.run_batch_fit's OUT.npz) after
their kernels changed, keeping the other plans' rows: the fit's workloads and arrivals are
replayed exactly (same seeds, same order; each row's exact m' is checked against the stored
one), the given plans probe each batch (CPU time, min of 2, as run_batch_fit), and the models
are refitted on all rows (refit_batch). Nothing of fig9mix / fig12 is used.

Usage: python fit_retime.py IN.npz OUT.npz OUT.json PLAN [PLAN...]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import BATCH_STATS, load, refit_batch
from vigil.workloads import joins as wl


def main() -> None:
    src, dst, out, plans = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    raw = dict(np.load(src))
    pts = raw["points"]
    batch, seed = len(raw["st/mp"][0]), 0
    rng = np.random.default_rng(seed + 11)
    r = 0
    for nq, ns, h, cd in pts:
        t0 = time.perf_counter()
        nq, ns, h = int(nq), int(ns), None if h < 0 else float(h)
        op, _, _, _ = load("select", nq, ns, seed, 3, hot_frac=h, c_domain=cd if h is not None else 10_000.0)
        for ks, sa in ((ks, sa) for ks in (None, 0.05, 3.0) for sa in (None, 3e4, 3e6)):
            key, x = wl.arrivals(batch, 100, rng, ks, sa)
            x = x.astype(np.float64)
            t = np.full(batch, np.nan)
            st = op.stats("left", key, x, t, exact=True)
            for k in BATCH_STATS:
                assert np.array_equal(np.asarray(st[k], np.float64), raw[f"st/{k}"][r]), (r, k)
            seqs = np.arange(batch)
            for c in plans:
                op._run(c, "left", seqs, key, x, t, 2)
                best = np.inf
                for _ in range(2):
                    c0 = time.thread_time()
                    op._run(c, "left", seqs, key, x, t, 2)
                    best = min(best, time.thread_time() - c0)
                raw[f"y/{c}"][r] = best * 1e6
            r += 1
        print(f"|Q|={nq:,} |S|={ns:,} hot={h} c_domain={cd:g} ({time.perf_counter() - t0:.1f} s)", flush=True)
    assert r == len(raw["workload"])
    np.savez_compressed(dst, **raw)
    sizes = sorted({int(p[0]) for p in pts})
    refit_batch(dst, out, {"scale": 0.1, "sizes": sizes, "batch": batch, "seed": seed, "distributions": 9,
                           "sets": [[None, 1e6], [0.7, 10_000.0], [0.7, 1e6]], "floor": 0.005,
                           "retimed": plans, "from": src.rsplit("/", 1)[-1]})


if __name__ == "__main__":
    main()
