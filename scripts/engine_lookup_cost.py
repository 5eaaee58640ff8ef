"""CPU cost of a window lookup through the engine (docs/experiments/engine.md): 100 SUM queries
over rows windows of 10-10,000, one lookup every 10 rows of a 100,000-row stream, at batch sizes
1,000 / 10,000 / 100,000 (one untimed run first).

    .venv/bin/python scripts/engine_lookup_cost.py
"""

import json
import time

import numpy as np
import pyarrow as pa

from vigil.engine import Engine

N, NQ = 100_000, 100
rng = np.random.default_rng(0)
table = pa.table({"x": rng.random(N)})
ops = [{"op": "register", "at": 0, "query": {"id": f"q{i}", "type": "window_aggregate", "agg": "sum",
                                             "column": "x", "rows": [int(rng.integers(10, 10_000)), 0]}}
       for i in range(NQ)]
ops += [{"op": "lookup", "at": p, "id": f"q{int(rng.integers(0, NQ))}"} for p in range(10, N, 10)]
ops.sort(key=lambda o: o["at"])


def run(batch: int) -> tuple[float, int]:
    eng = Engine({}, 0.005, "pairs", columns={"x"})
    eng.add_operations([json.dumps(o) for o in ops], list(range(len(ops))))
    t0 = time.process_time()
    out = [eng.process(table.slice(s, batch)) for s in range(0, N, batch)]
    return time.process_time() - t0, sum(o.num_rows for o in out)


run(10_000)
for b in (1_000, 10_000, 100_000):
    dt, k = run(b)
    print(f"batch {b:>7,}: {dt:.2f} s CPU, {k:,} answers, {N / dt:,.0f} elements/s, {dt / k * 1e6:.1f} us per lookup")
