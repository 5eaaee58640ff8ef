"""Fig. 7 (scale 0.1): hotspot / dynamic / join_first interleaved per chunk, CPU time (docs/experiments/joins.md).
Usage: python docs/experiments/joins/fig7_dynamic_interleaved.py OUT.json"""
import json
import sys
import time

import numpy as np

from vigil import registry
from vigil.bench import joins as bj
from vigil.workloads import joins as wl

pts = [("n_queries", 100), ("n_queries", 1000), ("n_queries", 10000), ("n_queries", 100000), ("c_len", 2000.0), ("c_len", 600.0), ("c_len", 150.0), ("c_len", 40.0), ("a_len", 2500.0)]
res = {}
for key_, v in pts:
    p = bj._params("select", key_, v, 0.1, 100_000)
    w = wl.select_workload(**p, n_arrivals=42001, seed=0)
    def mk(algo):
        op = registry.resolve("joins", algo)("select", "count")
        n = len(w["s_key"])
        op.insert("right", np.arange(1, n + 1), w["s_key"], w["s_x"].reshape(-1, 1), None)
        op.insert("left", np.arange(n + 1, 2 * n + 1), w["r_key"], w["r_x"].reshape(-1, 1), None)
        for i, s in enumerate(wl.specs("select", w["rows"], w.get("w"))):
            op.register(i, s)
        op.insert("left", np.array([2 * n + 1]), w["in_key"][:1], w["in_x"][:1].reshape(-1, 1), None)
        return op
    ops = {a: mk(a) for a in ("hotspot", "dynamic", "join_first")}
    key, x = w["in_key"][1:], w["in_x"][1:]
    seq = 3 * 10**6; pos = 0
    rng = np.random.default_rng(1)
    for B, nch in ((1, 1500), (1000, 20), (10000, 2)):
        tm = {a: 0.0 for a in ops}
        d0 = ops["dynamic"].decisions.copy()
        for c in range(nch):
            for a in [list(ops)[i] for i in rng.permutation(3)]:
                t0 = time.thread_time()
                ops[a].insert("left", np.arange(seq, seq + B), key[pos:pos+B], x[pos:pos+B].reshape(-1, 1), None)
                tm[a] += time.thread_time() - t0
            seq += B; pos += B
        dec = (ops["dynamic"].decisions - d0).tolist()
        r = {a: B * nch / tm[a] for a in tm}
        res[f"{key_}={v:g} batch={B}"] = {"rates": r, "dyn_over_hot": r["dynamic"] / r["hotspot"], "decisions": dec}
        print(f"| {key_}={v:g} | {B:,} | {r['hotspot']:,.0f} | {r['dynamic']:,.0f} | {r['join_first']:,.0f} | {r['dynamic']/r['hotspot']:.2f} | {dec} |", flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
