"""SJ-SSI / SJ-Hotspot maintenance per query update (fig7 a_len=2500, 100k queries, p=0.5 insert/delete, index refresh +
one probe every 100 updates): python sj_ssi_maint.py ssi 1000 lazy,full-rebuild,refined,refined-full-rebuild
(hotspot: python sj_ssi_maint.py hotspot 1000 lazy,per-member-rows)"""
import sys, time, numpy as np
from vigil import registry
from vigil.workloads import joins as wl
w = wl.select_workload(n_queries=200000, n_tuples=100000, a_len=2500.0, seed=0, n_arrivals=20000)
specs = wl.specs("select", w["rows"], None)
n = len(w["s_key"]); n0 = 100000
from vigil.joins.select import SJSSI
for variant in sys.argv[3].split(","):
    op = registry.resolve("joins", sys.argv[1] if len(sys.argv) > 1 else "ssi")("select", "count")
    if variant == "per-member-rows":
        from vigil.joins import select as _sel
        _sel._RowStore.rows_of = lambda self, side, op=op: _sel._rows_of(op, side)
    if variant.startswith("refined"):
        op.plan = SJSSI(op, partition="refined")
    op.insert("right", np.arange(1, n + 1), w["s_key"], w["s_x"].reshape(-1, 1), None)
    for i in range(n0): op.register(i, specs[i])
    seq = n + 1; key, x = w["in_key"], w["in_x"].reshape(-1, 1)
    op.insert("left", np.array([seq]), key[:1], x[:1], None); seq += 1
    rng = np.random.default_rng(1); alive = list(range(n0)); nxt = n0
    U = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    t_upd = t_idx = 0.0
    for u in range(U):
        t0 = time.process_time()
        if rng.random() < 0.5:
            op.register(nxt, specs[nxt]); alive.append(nxt); nxt += 1
        else:
            j = int(rng.integers(len(alive))); alive[j], alive[-1] = alive[-1], alive[j]; op.terminate(alive.pop())
        t_upd += time.process_time() - t0
        if (u + 1) % 100 == 0:
            t0 = time.process_time()
            if variant.endswith("full-rebuild"):
                op.plan.built = {}
            op.insert("left", np.array([seq]), key[seq % 1000: seq % 1000 + 1], x[seq % 1000: seq % 1000 + 1], None); seq += 1
            t_idx += time.process_time() - t0
    pp = getattr(op.plan, "part", None)
    if pp: print(f"reconstructions {pp['left'].reconstructions}, groups {len(pp['left'].point)}")
    print(f"{variant:13s} {U} updates: {t_upd/U*1e6:.0f} us/update (partition), {t_idx/U*1e6:.0f} us/update (index refresh + 1 probe per 100), total {(t_upd+t_idx)/U*1e6:.0f} us/update", flush=True)
