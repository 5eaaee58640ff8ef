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


def _jvm_cpu() -> float:
    """CPU seconds (user + system) of this process's child JVMs (Spark's driver JVM)."""
    me, total = os.getpid(), 0.0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                st = (d / "stat").read_text()
                f = st[st.rindex(")") + 2:].split()
                if int(f[1]) == me and "java" in (d / "cmdline").read_bytes().decode(errors="replace"):
                    total += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                pass
    return total


def _jvm_jit() -> float:
    """CPU seconds of the JIT compiler threads of this process's child JVMs."""
    me, total = os.getpid(), 0.0
    tck = os.sysconf("SC_CLK_TCK")
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                st = (d / "stat").read_text()
                if int(st[st.rindex(")") + 2:].split()[1]) != me or b"java" not in (d / "cmdline").read_bytes():
                    continue
                for t in (d / "task").iterdir():
                    st = (t / "stat").read_text()
                    if "CompilerThre" in st[st.index("(") + 1:st.rindex(")")]:
                        f = st[st.rindex(")") + 2:].split()
                        total += (int(f[11]) + int(f[12])) / tck
            except (OSError, ValueError, IndexError):
                pass
    return total


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
