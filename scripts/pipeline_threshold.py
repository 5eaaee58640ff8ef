"""Issue 15 target (b), Spark side: the pipeline bench's threshold point (``vigil bench pipeline
--preset throughput``, workload ``threshold``, 3 micro-batches of B rows) with its in-process
replay and Spark driver mode run one after the other in one process, as the bench does (same
files, same untimed warm-up of both sides), plus each Spark batch's metrics (collect, engine,
snapshot seconds, latency) to see where the driver spends.

    python scripts/pipeline_threshold.py [--batch 1000000] [--m 100000] [--algo auto] [--repeat 1]
                                         [--conf spark.key=value ...]

``--conf`` overrides a setting of ``vigil.pipeline.session.DEFAULTS`` for this process's
session (e.g. ``spark.driver.extraJavaOptions=``: the JVM's defaults). ``jvm_jit_s`` is the CPU
time of the JVM's JIT compiler threads (from /proc/PID/task), part of ``spark_cpu_s_jvm``
(approximate: a compiler thread that exits during the run takes its CPU time with it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from _jvm_proc import jvm_cpu as _jvm_cpu
from _jvm_proc import jvm_jit as _jvm_jit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--algo", default="auto")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--conf", action="append", default=[], help="spark.key=value for the session")
    a = ap.parse_args()
    from vigil.bench.pipeline import _inprocess, _spark, _write_inputs, threshold_workload
    from vigil.pipeline.session import get_session

    algos = {"threshold": a.algo}
    spark = get_session(conf=dict(kv.split("=", 1) for kv in a.conf), whole_files=True)  # as vigil run and the bench
    work = Path(tempfile.mkdtemp(prefix="vigil-pipe-thr-"))
    try:
        ws, wo = threshold_workload(2 * 1000, 1000)  # warm-up of both sides, as the bench does
        _write_inputs(ws, wo, 1000, work / "warm")
        _inprocess(work / "warm", algos)
        _spark(work / "warm", algos, spark)
        stream, ops = threshold_workload(3 * a.batch, a.m)
        _write_inputs(stream, ops, a.batch, work / "w")
        del stream, ops
        for _ in range(a.repeat):
            c0 = time.process_time()
            t_in, out_in = _inprocess(work / "w", algos)
            c_in = time.process_time() - c0
            c0, j0, k0 = time.process_time(), _jvm_cpu(), _jvm_jit()
            t_sp, out_sp, ms = _spark(work / "w", algos, spark)
            c_sp, j_sp, k_sp = time.process_time() - c0, _jvm_cpu() - j0, _jvm_jit() - k0
            n = 3 * a.batch
            print(json.dumps({
                "batch": a.batch, "m": a.m, "algo": a.algo, "load": os.getloadavg()[0],
                "replay_s": round(t_in, 3), "spark_s": round(t_sp, 3), "ratio": round(t_sp / t_in, 3),
                "replay_el_s": round(n / t_in), "spark_el_s": round(n / t_sp),
                "replay_cpu_s": round(c_in, 3), "spark_cpu_s_python": round(c_sp, 3), "spark_cpu_s_jvm": round(j_sp, 3),
                "jvm_jit_s": round(k_sp, 3), "conf": a.conf,
                "cpu_ratio": round((c_sp + j_sp) / c_in, 3),
                "outputs_equal": out_in == out_sp, "outputs": out_sp,
                "batches": [{k: (round(m[k], 3) if isinstance(m[k], float) else m[k]) for k in
                             ("batch", "final", "rows_in", "ops_in", "latency_s", "collect_s", "engine_s", "snapshot_s",
                              "snapshot_bytes") if k in m} for m in ms],
            }))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
