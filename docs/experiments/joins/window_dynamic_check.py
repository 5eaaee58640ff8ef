"""Window joins: ``dynamic`` vs each WJ plan forced, interleaved (docs/experiments/joins.md, part 2).

Usage: python docs/experiments/joins/window_dynamic_check.py [n] [chunks] [batch]

One operator (the bench's ``load('window', n, n)``: Table I select workload, windows ~ Uni(0.1,
0.2) x |S| time units, S.T = 0..|S|-1, arrivals after) holding every plan; each chunk of
``batch`` tuples is pushed by every strategy (the plans forced, and dynamic routing) in a fresh
random order; CPU time per chunk (thread_time). Prints tuples per CPU second, dynamic's choices
and its routing time (estimating, choosing, splitting, merging) as a fraction of its time.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load, push

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 20
B = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
op, key, x, t = load("window", n, n, 0, chunks * B + 1)
algos = [*op.choices, "dynamic"]
cpu = dict.fromkeys(algos, 0.0)
per = {a: [] for a in algos}
rng = np.random.default_rng(0)
route = 0.0
dec = np.zeros(len(op.choices), np.int64)
for c in range(chunks):
    sl = slice(c * B, (c + 1) * B)
    for a in rng.permutation(algos):
        op.force = None if a == "dynamic" else a
        r0, e0, c0 = op.route_seconds, op.decisions.copy(), time.thread_time()
        push(op, key[sl], x[sl], t[sl])
        dt = time.thread_time() - c0
        cpu[a] += dt
        per[a].append(dt)
        if a == "dynamic":
            route += op.route_seconds - r0
            dec += op.decisions - e0
op.force = None
best = min(op.choices, key=lambda a: cpu[a])
print(f"window n={n} batch={B} chunks={chunks}: " + ", ".join(f"{a} {chunks * B / cpu[a]:,.0f}" for a in algos)
      + " tuples per CPU second")
print(f"dynamic / best static ({best}): {cpu[best] / cpu['dynamic']:.3f} (CPU), median per chunk "
      f"{np.median(np.array(per[best]) / np.array(per['dynamic'])):.3f}; routing {100 * route / cpu['dynamic']:.1f}% "
      f"of dynamic's time; dynamic's choices {dict(zip(op.choices, dec.tolist(), strict=True))}")
