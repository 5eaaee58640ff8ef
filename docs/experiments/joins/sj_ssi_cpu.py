"""CPU-time check of SJ-SSI vs SJ-JoinFirst / SJ-SelectFirst / SJ-Hotspot on fig7 a_len=2500 (docs/experiments/joins.md,
"Fig. 7, selective variant after the SJ-SSI rework"): python sj_ssi_cpu.py ssi,join_first,select_first,hotspot 5
(batches of 1,000, then 300 single-tuple calls; time.process_time)."""
import sys, time, numpy as np
from vigil import registry
from vigil.workloads import joins as wl
algos = sys.argv[1].split(",")
nb = int(sys.argv[2]) if len(sys.argv) > 2 else 3
scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
w = wl.select_workload(n_queries=int(100000*scale), n_tuples=int(100000*scale), a_len=2500.0, seed=0, n_arrivals=20000)
specs = wl.specs("select", w["rows"], None)
n = len(w["s_key"])
res = {}
for algo in algos:
    op = registry.resolve("joins", algo)("select", "count")
    op.insert("right", np.arange(1, n + 1), w["s_key"], w["s_x"].reshape(-1, 1), None)
    op.insert("left", np.arange(n + 1, 2 * n + 1), w["r_key"], w["r_x"].reshape(-1, 1), None)
    t0 = time.process_time()
    for i, s in enumerate(specs):
        op.register(i, s)
    treg = time.process_time() - t0
    seq = 2 * n + 1
    key, x = w["in_key"], w["in_x"].reshape(-1, 1)
    t0 = time.process_time()
    op.insert("left", np.array([seq]), key[:1], x[:1], None); seq += 1
    tb = time.process_time() - t0
    # batch 1000
    pos = 1; c0 = op.counted
    t0 = time.process_time()
    for _ in range(nb):
        op.insert("left", np.arange(seq, seq + 1000), key[pos:pos+1000], x[pos:pos+1000], None); seq += 1000; pos += 1000
    t1 = time.process_time() - t0
    pairs = (op.counted - c0) / (nb*1000)
    # batch 1
    t0 = time.process_time()
    for _ in range(300):
        op.insert("left", np.array([seq]), key[pos:pos+1], x[pos:pos+1], None); seq += 1; pos += 1
    t2 = time.process_time() - t0
    res[algo] = (nb*1000/t1, 300/t2)
    print(f"{algo:14s} reg {treg:.2f}s first {tb:.2f}s  batch1000 {nb*1000/t1:10,.0f} t/s ({t1/nb/1000*1e6:.2f} us/t)  batch1 {300/t2:8,.0f} t/s ({t2/300*1e6:.0f} us)  pairs/t {pairs:.1f}", flush=True)
if "ssi" in res:
    for a in res:
        print(f"ssi/{a}: batch1000 {res['ssi'][0]/res[a][0]:.2f}x  batch1 {res['ssi'][1]/res[a][1]:.2f}x")
