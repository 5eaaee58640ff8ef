"""SJ-SSI vs SJ-SelectFirst / SJ-JoinFirst / SJ-Hotspot on fig7 a_len=2500, interleaved rounds (one batch of 1,000 and 200
single-tuple calls per strategy per round, 6 rounds; CPU time; medians): python sj_ssi_interleaved.py"""
import time, numpy as np
from vigil import registry
from vigil.workloads import joins as wl
w = wl.select_workload(n_queries=100000, n_tuples=100000, a_len=2500.0, seed=0, n_arrivals=20000)
specs = wl.specs("select", w["rows"], None)
n = len(w["s_key"])
ops = {}
for algo in ("ssi", "select_first", "join_first", "hotspot"):
    op = registry.resolve("joins", algo)("select", "count")
    op.insert("right", np.arange(1, n + 1), w["s_key"], w["s_x"].reshape(-1, 1), None)
    op.insert("left", np.arange(n + 1, 2 * n + 1), w["r_key"], w["r_x"].reshape(-1, 1), None)
    for i, s in enumerate(specs): op.register(i, s)
    op.insert("left", np.array([2*n+1]), w["in_key"][:1], w["in_x"][:1].reshape(-1,1), None)
    ops[algo] = op
key, x = w["in_key"], w["in_x"].reshape(-1, 1)
res = {a: [] for a in ops}
seq = 2*n+2
B = {a: [] for a in ops}
for rnd in range(6):
    for a, op in ops.items():
        p = 1 + rnd * 1000
        t0 = time.process_time()
        op.insert("left", np.arange(seq, seq + 1000), key[p:p+1000], x[p:p+1000], None); seq += 1000
        B[a].append((time.process_time()-t0)/1000*1e6)
    for a, op in ops.items():
        t0 = time.process_time()
        for j in range(200):
            p = 7001 + rnd*200 + j
            op.insert("left", np.array([seq]), key[p:p+1], x[p:p+1], None); seq += 1
        res[a].append((time.process_time()-t0)/200*1e6)
med = lambda v: sorted(v)[len(v)//2]
for a in ops:
    print(f"{a:13s} batch 1,000: us/tuple per round {[round(v,2) for v in B[a]]} median {med(B[a]):.2f} ({1e6/med(B[a]):,.0f} tuples/s); batch 1: us/call {[round(v) for v in res[a]]} median {med(res[a]):.0f}")
for a in ops:
    print(f"ssi / {a}: batch 1,000 {med(B[a])/med(B['ssi']):.2f}x, batch 1 {med(res[a])/med(res['ssi']):.2f}x")
