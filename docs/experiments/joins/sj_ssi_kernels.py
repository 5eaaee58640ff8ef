"""Kernel-only CPU time per tuple (5,000 tuples in one call, min of 3) of SJ-SSI, SJ-SelectFirst, SJ-JoinFirst on fig7
a_len=2500: python sj_ssi_kernels.py [a_len]."""
import numpy as np, time, sys
from vigil import registry
from vigil.workloads import joins as wl
from vigil.joins import _join_kernels_select as ks, _join_kernels_band as kb
w = wl.select_workload(n_queries=100000, n_tuples=100000, a_len=float(sys.argv[1]) if len(sys.argv)>1 else 2500.0, seed=0, n_arrivals=20000)
specs = wl.specs("select", w["rows"], None)
n = len(w["s_key"])
ops = {}
for algo in ("ssi", "select_first", "join_first"):
    op = registry.resolve("joins", algo)("select", "count")
    op.insert("right", np.arange(1, n + 1), w["s_key"], w["s_x"].reshape(-1, 1), None)
    for i, s in enumerate(specs): op.register(i, s)
    op.insert("left", np.array([n+1]), w["in_key"][:1], w["in_x"][:1].reshape(-1,1), None)
    ops[algo] = op
part = ops["ssi"].sides["right"].main
K, X, S = part.k, part.kx, part.ks
keys = w["in_key"][1:5001].copy(); av = w["in_x"][1:5001].copy()
ix = ops["ssi"].plan.built["left"]
from vigil.joins.select import run_fixed
f = {"ssi": lambda k, a: run_fixed(ks.sj_ssi, (K, X, S, k, a, *ix.arrays()), 2, ops["ssi"].plan)}
mlo, mx, size, qid, olo, ohi, _ = ops["select_first"].plan.built["left"]
f["select_first"] = lambda k, a: run_fixed(ks.sj_select_first, (K, X, S, k, a, mlo, mx, size, qid, olo, ohi), 2, ops["ssi"].plan)
q, tree = ops["join_first"].plan.built["left"]
f["join_first"] = lambda k, a: run_fixed(ks.sj_join_first, (K, X, S, k, a, *tree, q.qid), 2, ops["ssi"].plan)
res = {}
for rep in range(3):
    for name, fn in f.items():
        t0 = time.process_time(); r = fn(keys, av); t = time.process_time() - t0
        res.setdefault(name, []).append(t / len(keys) * 1e6)
for name in f:
    print(f"{name:13s} kernel us/tuple min {min(res[name]):.2f}  all {[round(x,2) for x in res[name]]}  pairs/t {r[3]/len(keys) if name=='join_first' else ''}")
print("ratios (min): ssi vs select_first %.2fx, vs join_first %.2fx" % (min(res['select_first'])/min(res['ssi']), min(res['join_first'])/min(res['ssi'])))
