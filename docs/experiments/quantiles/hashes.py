"""Hashes of every output of casu (cluster and per-query notify), csu and su on a few streams and
batch splits, to check that a change of the kernels leaves the outputs identical.

    python docs/experiments/quantiles/hashes.py [QUERIES] [ELEMENTS]   # prints one JSON line per run

Hashed: cluster mode's membership events and cluster updates of every push, per-query mode's
updates, the final summary (v, r-, r+), the stats fires / changes."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

from vigil.bench.quantiles import EPS, _op
from vigil.workloads.quantiles import data_stream, query_set

nq = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
nx = int(sys.argv[2]) if len(sys.argv) > 2 else 60_000


def stream(kind: str) -> np.ndarray:
    if kind == "dups":
        return np.random.default_rng(3).integers(0, 50, nx).astype(np.float64)
    return data_stream(kind, nx, 0)


def run(algo: str, notify: bool | str, kind: str, batch: int) -> dict:
    x = stream(kind)
    phi, eq = query_set(nq, "uniform", (0.005, 0.02), 1)
    op = _op(algo, EPS)
    h = hashlib.sha256()
    half = nq // 2
    op.register_many(np.arange(half), phi[:half], eq[:half], 0, notify=notify)
    for p in range(0, nx, batch):
        if p <= nx // 3 < p + batch:  # queries issued mid-stream (OQC registrations and merges)
            for q in range(half, half + 200):
                op.register(q, phi[q], eq[q], 0, notify=notify)
        r = op.push(x[p:p + batch], np.arange(p + 1, p + 1 + len(x[p:p + batch])))
        for a in r:
            h.update(np.ascontiguousarray(a).tobytes())
        if notify == "cluster":
            for part in op.cluster_events():
                for a in part:
                    h.update(np.ascontiguousarray(a).tobytes())
    for ep in op.epochs.values():
        for a in ep.tuples():
            h.update(a.tobytes())
    return {"algo": algo, "notify": notify, "stream": kind, "batch": batch, "hash": h.hexdigest()[:16],
            "fires": op.stats["fires"], "changes": op.stats["changes"]}


for algo, notify in (("casu", "cluster"), ("casu", True), ("csu", "cluster")):
    for kind in ("uniform", "semisort", "dups"):
        for batch in (37, 5_000):
            print(json.dumps(run(algo, notify, kind, batch)), flush=True)
