"""End to end through the engine: N quantile queries with notify "cluster" or per-query (true),
registered at 0, then the stream in batches of 100,000 rows with the output tables built; CPU time.

    python docs/experiments/quantiles/e2e.py QUERIES ELEMENTS uniform|semisort cluster|query
"""

import sys
import time

import pyarrow as pa

from vigil.engine import Engine
from vigil.workloads.quantiles import data_stream, query_set

nq, n_x, kind, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
notify = "cluster" if mode == "cluster" else True
phi, eq = query_set(nq, "uniform", (0.005, 0.02), 1)
x = data_stream(kind, n_x, 0)
eng = Engine({"quantiles": "casu"}, 0.005, "pairs", columns={"v"})
t = time.process_time()
eng.add_operations([{"op": "register", "at": 0, "query": {"type": "quantile", "id": f"q{i}", "column": "v", "phi": float(phi[i]), "epsilon": float(eq[i]), "notify": notify}} for i in range(nq)])
reg = time.process_time() - t
t = time.process_time()
rows = 0
for p in range(0, n_x, 100_000):
    out = eng.process(pa.table({"v": pa.array(x[p:p + 100_000])}))
    rows += 0 if out is None else out.num_rows
out = eng.finish()
rows += 0 if out is None else out.num_rows
el = time.process_time() - t
print(f"{mode} {kind} queries={nq} elements={n_x} register_cpu={reg:.2f}s elements_cpu={el:.2f}s ({n_x/el:,.0f} el/s) output_rows={rows:,} counts={eng.out_counts}")
