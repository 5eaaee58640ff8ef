"""Issue 15 target (b): the floor of Spark's side of driver mode, without the engine.

The same streaming query as ``vigil run`` in driver mode (``vigil.pipeline.sources``: Parquet
stream files through the ``binaryFile`` source unioned with the operation files, one stream file
per micro-batch, available-now trigger, foreachBatch), on the pipeline bench's threshold files
(B-row Parquet files, the workload's operation file in batch 0), but ``foreachBatch`` only
collects and splits the batch as driver mode does (one ``toArrow()``, ``split_batch``: the
Parquet files decoded by pyarrow, the operation lines split), and hands nothing to an engine.
So the wall time per batch is what Spark needs per micro-batch when the engine is never waited
for, and the JVM CPU is what it takes from the engine's cores.

    python scripts/pipeline_spark_floor.py [--batch 1000000] [--files 6] [--repeat 3] [--conf k=v ...]

Prints per run: time to the first foreachBatch (query start), per batch the wall between
foreachBatch starts and the collect's wall, Spark's progress durations, the JVM CPU (process
total) and its JIT and GC threads' share (summed over live threads: a compiler thread that
exited during the run makes the JIT figure low, even negative).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from _jvm_proc import jvm_cpu as _jvm_total
from _jvm_proc import jvm_threads as _jvm_threads


def _kinds(th: dict[str, float]) -> dict[str, float]:
    jit = sum(v for k, v in th.items() if "Compiler" in k)
    gc = sum(v for k, v in th.items() if "GC" in k or "G Conc" in k or "G Refine" in k or "VM Thread" in k)
    return {"total": sum(th.values()), "jit": jit, "gc": gc}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--conf", action="append", default=[], help="spark.key=value for the session")
    a = ap.parse_args()
    from vigil.bench.pipeline import _write_inputs, threshold_workload
    from vigil.pipeline import sources
    from vigil.pipeline.session import get_session

    spark = get_session(conf=dict(kv.split("=", 1) for kv in a.conf), whole_files=True)  # as vigil run and the bench
    work = Path(tempfile.mkdtemp(prefix="vigil-spark-floor-"))

    def one_run(w: Path) -> dict:
        ev: list[tuple[str, int, float]] = []
        t0 = time.perf_counter()

        def fb(df, k):
            ev.append(("fb", k, time.perf_counter() - t0))
            ops, rows, files = sources.split_batch(sources.with_row_index(df).toArrow(), "parquet", None)
            ev.append(("collected", k, time.perf_counter() - t0))
            assert rows.num_rows or ops

        shutil.rmtree(w / "ck", ignore_errors=True)
        th0, j0 = _jvm_threads(), _jvm_total()
        c0 = time.process_time()
        t0 = time.perf_counter()
        df = sources.combined(sources.stream_rows(spark, str(w / "s"), "parquet", None, 1),
                              sources.operations(spark, str(w / "q")))
        q = (df.writeStream.foreachBatch(fb).option("checkpointLocation", str(w / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        wall = time.perf_counter() - t0
        cpu_py = time.process_time() - c0
        th1 = _jvm_threads()
        jvm = _kinds({k: v - th0.get(k, 0.0) for k, v in th1.items()})
        jvm["total"] = _jvm_total() - j0
        fbs = [t for e, _, t in ev if e == "fb"]
        col = [t - s for (e, _, t), s in zip([x for x in ev if x[0] == "collected"], fbs, strict=True)]
        return {
            "wall_s": round(wall, 3), "first_fb_s": round(fbs[0], 3),
            "cycle_s": [round(b - a, 3) for a, b in zip(fbs, fbs[1:], strict=False)],
            "collect_s": [round(c, 3) for c in col],
            "jvm_cpu_s": round(jvm["total"], 3), "jvm_jit_s": round(jvm["jit"], 3), "jvm_gc_s": round(jvm["gc"], 3),
            "python_cpu_s": round(cpu_py, 3), "batches": len(fbs), "load": round(os.getloadavg()[0], 2),
            "durations_ms": [p["durationMs"] for p in q.recentProgress],
        }

    try:
        ws, wo = threshold_workload(2 * 1000, 1000)
        _write_inputs(ws, wo, 1000, work / "warm")
        one_run(work / "warm")
        stream, ops = threshold_workload(a.files * a.batch, a.m)
        _write_inputs(stream, ops, a.batch, work / "w")
        del stream, ops
        for _ in range(a.repeat):
            r = one_run(work / "w")
            r["conf"] = a.conf
            print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
