"""CPU and wall seconds of casu (bench run_processing) with 100k notify queries on 200k elements;
run under the old (PYTHONPATH=/tmp/old/src) and the new tree, same command."""
import json, sys, time
import numpy as np
from vigil.bench.quantiles import _op, BATCH
from vigil.workloads.quantiles import data_stream, query_set
kind = sys.argv[1]; lazy = sys.argv[2] if len(sys.argv) > 2 else None
if len(sys.argv) > 3:
    from vigil.quantiles.casu import CASU; CASU.summary_ratio = float(sys.argv[3])
x = data_stream(kind, 200_000, 0)
phi, eq = query_set(100_000, "uniform", (0.005, 0.02), 1)
w = _op("casu", 0.005); w.register_many(np.arange(50), phi[:50], eq[:50], 0, notify=True); w.push(x[:2000], np.arange(1, 2001))
op = _op("casu", 0.005)
if lazy is not None:
    op.lazy = int(lazy); op.epochs[0].lazy = int(lazy)
op.register_many(np.arange(len(phi)), phi, eq, 0, notify=True)
t0, c0 = time.perf_counter(), time.process_time()
msgs = 0
for p in range(0, len(x), BATCH):
    q, _, _ = op.push(x[p:p + BATCH], np.arange(p + 1, p + 1 + len(x[p:p + BATCH])))
    msgs += len(q)
print(json.dumps({"stream": kind, "lazy": lazy, "wall": round(time.perf_counter() - t0, 3), "cpu": round(time.process_time() - c0, 3), "messages": msgs, **{k: v for k, v in op.stats.items()}}))
