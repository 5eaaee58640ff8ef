"""fig9mix: what per-group routing can reach in batches (docs/experiments/joins.md, "fig9mix
against the paper"). Each 1,000-tuple chunk of the preset's arrivals is cut into groups by the
exact statistics (m' = 0; else n' in [0], [1, 10), [10, 100), [100, 1000), [1000, inf) crossed
with m' in [1, 100), [100, 300), [300, inf)); every plan probes every group (CPU time, min of
REPS calls, the plans' own batch order); the ceiling adds each group's fastest plan (m' = 0
groups cost 0: dynamic sets them aside) and is compared with the best static plan on the whole
chunk and with dynamic's routing of the same chunk (timed the same way, routing included). The
groups are chosen before any timing, from the statistics alone, so the choice per group is an
oracle over 16 groups, not a fit.

Usage: python fig9mix_batch_ceiling.py SCALE QUERIES_AT_SCALE_1 CHUNKS [REPS]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load


def main() -> None:
    scale, nq0, chunks = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    nq, ns, b = int(nq0 * scale), int(100_000 * scale), 1000
    op, key, x, t = load("select", nq, ns, 0, 200_001, mixed=True, hot_frac=0.7)
    seqs = np.arange(b) + op.seq

    def cpu(fn, *args) -> float:
        best = np.inf
        for _ in range(reps):
            c0 = time.thread_time()
            fn(*args)
            best = min(best, time.thread_time() - c0)
        return best

    rows = []
    for ci in range(chunks):
        s = slice(ci * b, (ci + 1) * b)
        k, xx, tt = key[s], x[s], t[s]
        st = op.stats("left", k, xx, tt, exact=True)
        mp, npr = st["mp"], st["np"]
        grp = np.where(mp == 0, -1, np.digitize(npr, [1, 10, 100, 1000]) * 3 + np.digitize(mp, [100, 300]))
        static = {c: cpu(op._run_ordered, c, "left", seqs, k, xx, tt, 2) for c in op.choices}
        ceil = 0.0
        for g in np.unique(grp[grp >= 0]):
            i = np.flatnonzero(grp == g)
            ceil += min(cpu(op._run_ordered, c, "left", seqs[i], k[i], xx[i], tt[i], 2) for c in op.choices)
        dyn = cpu(op._probe, "left", seqs, k, xx, tt, 2)
        rows.append((min(static.values()), ceil, dyn))
        best = min(static, key=static.get)
        print(f"chunk {ci}: best static {best} {1e3 * static[best]:.3f} ms, per-group ceiling "
              f"{1e3 * ceil:.3f} ms ({static[best] / ceil:.3f}x), dynamic {1e3 * dyn:.3f} ms "
              f"({static[best] / dyn:.3f}x)", flush=True)
    r = np.array(rows)
    print(f"|Q| = {nq}: median per chunk, best static / per-group ceiling {np.median(r[:, 0] / r[:, 1]):.3f}, "
          f"best static / dynamic {np.median(r[:, 0] / r[:, 2]):.3f}")


if __name__ == "__main__":
    main()
