"""Where WJ-SSI's time goes (docs/experiments/joins.md, part 1, window joins): per chunk of the
``stream`` scenario of wj_ssi_cache.py (S batch, then R batch), the plan's probe of the R batch
in count mode and in affected mode, with the skyline cache and with the per-probe recomputation,
CPU us per tuple, plus the output size (pairs counted / affected (query, tuple) records) and the
mean cached entry length.

Usage: python docs/experiments/joins/wj_ssi_cache_profile.py [n] [chunks]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load
from vigil.joins import _skyline_cache as sc

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 6
B = 1000
op, key, x, _ = load("window", n, n, 0, chunks * B + 1)
op.force = "ssi"
plan = op.route["ssi"]
rng = np.random.default_rng(0)
sk, sx = op.sides["right"].keys.view.copy(), op.sides["right"].x.view.copy()
T, seq = float(n), 10 * n
for c in range(chunks):
    sl = slice(c * B, (c + 1) * B)
    pick = rng.integers(0, len(sk), B)
    op.insert("right", np.arange(seq, seq + B), sk[pick], sx[pick].reshape(-1, 1), T + np.arange(B, dtype=float))
    seq, T = seq + B, T + B
    t = T + np.arange(B, dtype=float) / B
    k = key[sl].astype(np.int64)
    row = []
    for on in (True, False):
        plan.skyline_cache = on
        for mode in (2, 1):
            c0 = time.thread_time()
            q, _, _, cnt = op._run("ssi", "left", np.arange(seq, seq + B), k, x[sl], t, mode)
            row.append(f"{'cache' if on else 'recompute'} {'count' if mode == 2 else 'affected'} "
                       f"{1e6 * (time.thread_time() - c0) / B:.1f} us ({cnt if mode == 2 else len(q)})")
    plan.skyline_cache = True
    cc = plan.cache("left")
    print(f"chunk {c}: parts {[p.n for p in op.sides['right'].parts()]}; " + "; ".join(row)
          + f"; mean entry {cc.EM[:cc.ST[sc.NE], 1].mean():.1f} points")
