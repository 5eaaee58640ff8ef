"""Window joins: ``dynamic`` reading m̄_b from the skyline caches vs the estimate, beside each WJ
plan forced, interleaved (docs/experiments/joins.md, part 2, m̄_b).

Usage: python docs/experiments/joins/wj_mbar_dynamic.py [n] [chunks] [batch]

Two count-mode operators from the bench's ``load('window', n, n)`` (Table I select workload,
windows ~ Uni(0.1, 0.2) x |S|, S.T = 0..|S|-1): A with ``cache_mbar`` on, B off (the expected
skyline size min(m_b, 2 tau (1 + ln(1 + m_b / 2 tau)))). Arriving R tuples at times ns + i/1000
(the window stays full). Each chunk of ``batch`` tuples is pushed by every variant in a fresh
random order: the four plans forced (on A), dynamic on A (exact m̄_b) and on B (estimate);
CPU time per chunk (thread_time). Prints tuples per CPU second, dynamic's choices, and the mean
exact vs estimated m̄_b of the last chunk.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 20
B = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
A, key, x, _ = load("window", n, n, 0, chunks * B + 1)
Bop, _, _, _ = load("window", n, n, 0, chunks * B + 1)
Bop.cache_mbar = False
variants = [*A.choices, "dyn_exact", "dyn_estimate"]
cpu = dict.fromkeys(variants, 0.0)
per: dict[str, list[float]] = {v: [] for v in variants}
dec = {"dyn_exact": np.zeros(4, np.int64), "dyn_estimate": np.zeros(4, np.int64)}
rng = np.random.default_rng(0)
seq = 10 * n
for c in range(chunks):
    sl = slice(c * B, (c + 1) * B)
    t = n + (c * B + np.arange(B, dtype=float)) / 1000.0
    for v in rng.permutation(variants).tolist():
        op = Bop if v == "dyn_estimate" else A
        op.force = None if v.startswith("dyn") else v
        d0 = op.decisions.copy()
        c0 = time.thread_time()
        op.insert("left", np.arange(seq, seq + B), key[sl], x[sl].reshape(-1, 1), t)
        dt = time.thread_time() - c0
        seq += B
        cpu[v] += dt
        per[v].append(dt)
        if v in dec:
            dec[v] += op.decisions - d0
A.force = None
st = A.stats("left", key[sl], x[sl], t)
Bop.force = None
sb = Bop.stats("left", key[sl], x[sl], t)
best = min(A.choices, key=lambda a: cpu[a])
print(f"window n={n} batch={B} chunks={chunks} (window full): " + ", ".join(
    f"{v} {chunks * B / cpu[v]:,.0f}" for v in variants) + " tuples per CPU second")
for v in ("dyn_exact", "dyn_estimate"):
    print(f"{v}: / best static ({best}) {cpu[best] / cpu[v]:.3f} (CPU), median per chunk "
          f"{np.median(np.array(per[best]) / np.array(per[v])):.3f}; choices {dict(zip(A.choices, dec[v].tolist(), strict=True))}")
print(f"last chunk: m_b {st['mb'].mean():.1f}, m̄_b exact (cache) {st['mbar'].mean():.2f} vs estimate "
      f"{sb['mbar'].mean():.2f}; m̄_b^H {st['mbar_h'].mean():.2f} vs {sb['mbar_h'].mean():.2f}")
