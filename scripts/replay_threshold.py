"""Issue 15 target (b): ``vigil replay``'s work (``vigil.bench.pipeline._inprocess``) on the pipeline
bench's threshold workload (paper 000 §8.1 in 1D, ``threshold_workload(3 B rows, m)``, B-row Parquet
files), with CPU and wall time and a per-phase breakdown (reading, add_operations, process,
finish, writing). Usage:

    python scripts/replay_threshold.py [--batch 1000000] [--m 100000] [--algo auto] [--repeat 2]
                                       [--profile] [--work /tmp/vigil-replay-threshold]

The input files are generated once per (batch, m) under ``--work`` and reused. Prints one JSON
line per run; the figures are CPU time (process_time) and wall time, with ``uptime``'s load.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--algo", default="auto")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--work", default="/tmp/vigil-replay-threshold")
    a = ap.parse_args()

    import pyarrow as pa

    from vigil.bench.pipeline import _write_inputs, threshold_workload
    from vigil.engine import Engine
    from vigil.events import read_operations, read_stream, write_outputs

    work = Path(a.work) / f"b{a.batch}-m{a.m}"
    if not (work / "q").exists():
        stream, ops = threshold_workload(3 * a.batch, a.m)
        _write_inputs(stream, ops, a.batch, work)
    algos = {"threshold": a.algo}

    def run() -> dict:
        ph: dict[str, float] = {}
        c0, w0 = time.process_time(), time.perf_counter()

        def mark(name: str, c: list) -> None:
            now = time.process_time()
            ph[name] = ph.get(name, 0.0) + now - c[0]
            c[0] = now

        c = [c0]
        files = sorted((work / "s").glob("*.parquet"))
        ops = [ln for f in sorted((work / "q").glob("*.jsonl")) for ln in read_operations(f)]
        mark("read_ops", c)
        eng = None
        parts = []
        for f in files:
            t = read_stream(f)
            mark("read_stream", c)
            if eng is None:
                eng = Engine(algos=algos, columns=set(t.column_names))
                eng.add_operations(ops)
                mark("add_operations", c)
            parts.append(eng.process(t))
            mark("process", c)
        parts.append(eng.finish())
        mark("finish", c)
        out = pa.concat_tables(parts)
        write_outputs(out, work / "replay.parquet")
        mark("write", c)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        n = 3 * a.batch
        return {"algo": a.algo, "batch": a.batch, "m": a.m, "ops": len(ops), "outputs": out.num_rows,
                "cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "el_per_s_cpu": round(n / cpu),
                "el_per_s_wall": round(n / wall), "phases_cpu_s": {k: round(v, 3) for k, v in ph.items()},
                "load": os.getloadavg()[0], "counts": eng.counts}

    run()  # warm-up: numba caches, imports
    for _ in range(a.repeat):
        if a.profile:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            r = run()
            pr.disable()
            print(json.dumps(r))
            pstats.Stats(pr).sort_stats("cumulative").print_stats(45)
        else:
            print(json.dumps(r := run()))


if __name__ == "__main__":
    main()
