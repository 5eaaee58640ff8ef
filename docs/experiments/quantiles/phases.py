"""CPU time by stream phase: GK alone (at eps and eps/4) vs casu with notify "cluster" (and,
optionally, per-query notify) on the same input, in one process (time.process_time).

    python docs/experiments/quantiles/phases.py SCALE STREAM [MODES]   # MODES: cluster or query,cluster

"casu_summary" is casu's epoch with no notify query (its summary alone, the same kernel path).

SCALE as the bench's targets preset: 1,000,000*SCALE queries, 2,000,000*SCALE elements; batches of
100,000 elements (cut at the phase edges). Prints one JSON line per (config, phase)."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from vigil.bench.quantiles import EPS, _op
from vigil.quantiles.gk import GKSummary
from vigil.workloads.quantiles import data_stream, query_set

scale, kind = float(sys.argv[1]), sys.argv[2]
modes = sys.argv[3].split(",") if len(sys.argv) > 3 else ["cluster"]
n_x, nq = int(2_000_000 * scale), int(1_000_000 * scale)
x = data_stream(kind, n_x, 0)
phi, eq = query_set(nq, "uniform", (0.005, 0.02), 1)
edges = [e for e in (0, 1_000, 10_000, 100_000, 500_000) if e < n_x] + [n_x]
GKSummary(EPS).insert(x[:1000])  # compile outside the timing
_w = _op("casu", EPS)  # load the trigger kernels outside the timing (numba cache: ~30-50 ms)
_w.register_many(np.arange(4), phi[:4], eq[:4], 0, notify="cluster")
_w.push(x[:1000], np.arange(1, 1001))


def phases(push):
    out = []
    for a, b in zip(edges, edges[1:], strict=False):
        t = time.process_time()
        for p in range(a, b, 100_000):
            push(p, min(b, p + 100_000))
        out.append((a, b, time.process_time() - t))
    return out


for label in ["gk_eps", "gk_eps4", "casu_summary"] + [f"casu_{m}" for m in modes]:
    stats0 = None
    if label.startswith("gk"):
        g = GKSummary(EPS if label == "gk_eps" else EPS / 4)
        res = phases(lambda a, b, g=g: g.insert(x[a:b]))
        extra = {}
    else:
        op = _op("casu", EPS)
        t = time.process_time()
        k = 0 if label == "casu_summary" else nq
        op.register_many(np.arange(k), phi[:k], eq[:k], 0, notify="cluster" if label.endswith("cluster") else True)
        for ep in op.epochs.values():
            ep.flush()
        reg = time.process_time() - t
        res = phases(lambda a, b, op=op: op.push(x[a:b], np.arange(a + 1, b + 1)))
        extra = {"register_cpu_s": round(reg, 3), **{k: op.stats[k] for k in ("fires", "chunks", "changes")}}
    tot = sum(r[2] for r in res)
    print(json.dumps({"config": label, "stream": kind, "queries": nq, "elements": n_x, "cpu_s": round(tot, 4),
                      "phases": [{"from": a, "to": b, "cpu_s": round(s, 4), "ns_per_el": round(s / (b - a) * 1e9, 1)}
                                 for a, b, s in res], **extra}))
