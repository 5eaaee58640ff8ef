"""WJ-SSI with the skyline cache vs the per-probe recomputation, interleaved in one process
(docs/experiments/joins.md, part 1, window joins).

Usage: python docs/experiments/joins/wj_ssi_cache.py [n] [chunks] [batch] [scenario] [what] [plan]

One count-mode operator (the bench's ``load('window', n, n)``: Table I select workload, B
domain 100, windows ~ Uni(0.1, 0.2) x |S| time units, S.T = 0..|S|-1) forced to WJ-SSI; each
chunk of ``batch`` arriving R tuples is pushed with the cache on and off (random order per
chunk), CPU time (thread_time) of each push, after two untimed warm-up chunks. Scenarios: ``static``: R arrivals only, times
ns + i/1000 (the window stays full: m_b ~ 0.2 m'); ``stream``: before each chunk a batch of
``batch`` S tuples arrives (keys and C drawn from the stored ones, times continuing), so the
cache folds inserts in between probes, and the window slides; ``churn``: ``stream`` plus, before
each chunk, ``batch // 100`` new queries with a narrow rangeC at a random place registered and
the previous chunk's terminated (new stabbing groups: the stabbing points change, every cache
entry goes stale and is recomputed at its key's next probe), ``churn1`` the same
with one query per chunk; the plans' index rebuild is done untimed (one extra tuple inserted)
before the timed pushes. Prints tuples per CPU second of
both, the ratio, and the cache's counters (recomputed / trimmed entries, folded inserts).
``what``: ``insert`` (default: the operator's insert, storing the R tuples too) or ``probe``
(the plan's probe of the batch alone, count mode: the kernel and the cache upkeep). ``plan``:
``ssi`` (default) or ``hotspot`` (WJ-Hotspot: the cache serves its SSI part over the hot groups).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load
from vigil.joins import _skyline_cache as sc
from vigil.workloads import joins as wl

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 20
B = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
scenario = sys.argv[4] if len(sys.argv) > 4 else "static"
what = sys.argv[5] if len(sys.argv) > 5 else "insert"
name = sys.argv[6] if len(sys.argv) > 6 else "ssi"
op, key, x, _ = load("window", n, n, 0, chunks * B + 1)
op.force = name
plan = op.route[name]
rng = np.random.default_rng(0)
sk, sx = op.sides["right"].keys.view.copy(), op.sides["right"].x.view.copy()
cpu = {True: 0.0, False: 0.0}
per: dict[bool, list[float]] = {True: [], False: []}
T = float(n)
seq = 10 * n
added: list[int] = []
qnext = 10 * n
for c in range(-2, chunks):  # chunks -2, -1: untimed warm-up (kernels loaded, entries filled)
    sl = slice(max(c, 0) * B, (max(c, 0) + 1) * B)
    if scenario.startswith("churn"):
        for q in added:
            op.terminate(q)
        added = []
        for _ in range(1 if scenario == "churn1" else max(1, B // 100)):
            r = op.q[int(rng.integers(0, n))]  # (alo, ahi, clo, chi, w) of a Table I query
            cc = rng.uniform(sx.min(), sx.max())
            spec = wl.specs("window", np.array([[r[0], r[1], cc, cc + 1e-3 * (sx.max() - sx.min())]]),
                            np.array([r[4]]))[0]
            added.append(qnext)
            op.register(qnext, spec)
            qnext += 1
    if scenario in ("stream", "churn", "churn1"):
        pick = rng.integers(0, len(sk), B)
        op.insert("right", np.arange(seq, seq + B), sk[pick], sx[pick].reshape(-1, 1), T + np.arange(B, dtype=float))
        seq += B
        T += B
        t = T + np.arange(B, dtype=float) / B
    else:
        t = T + (c * B + np.arange(B, dtype=float)) / 1000.0
    if scenario.startswith("churn"):  # the query indexes rebuilt here, untimed
        op.insert("left", np.array([seq]), key[sl][:1], x[sl][:1].reshape(-1, 1), t[:1])
        seq += 1
    for on in rng.permutation([True, False]).tolist():
        plan.skyline_cache = on
        c0 = time.thread_time()
        if what == "probe":
            op._run(name, "left", np.arange(seq, seq + B), key[sl], x[sl], t, 2)
        else:
            op.insert("left", np.arange(seq, seq + B), key[sl], x[sl].reshape(-1, 1), t)
        dt = time.thread_time() - c0
        seq += B
        if c >= 0:
            cpu[on] += dt
            per[on].append(dt)
st = plan.cache("left").ST
mb = op.stats("left", key[:B], x[:B], t)["mb"]
print(f"{name} n={n} batch={B} chunks={chunks} {scenario} {what}: cache {chunks * B / cpu[True]:,.0f}, recompute "
      f"{chunks * B / cpu[False]:,.0f} tuples per CPU second; cache {cpu[False] / cpu[True]:.2f}x faster "
      f"(median per chunk {np.median(np.array(per[False]) / np.array(per[True])):.2f}x); "
      f"{1e6 * cpu[True] / (chunks * B):.2f} vs {1e6 * cpu[False] / (chunks * B):.2f} us/tuple; mean m_b "
      f"{mb.mean():.0f}; recomputed {st[sc.RECOMPUTED]}, versions {plan.cache('left').ver}, trimmed {st[sc.TRIMMED]}, folded inserts {st[sc.UPDATED]}; "
      f"cache {plan.cache('left').nbytes() / 1e6:.2f} MB")
