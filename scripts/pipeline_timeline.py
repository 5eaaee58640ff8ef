"""Issue 15 target (b): a timeline of one Spark driver-mode run of the pipeline bench's threshold
point (3 files of B rows, m queries), to see the critical path: when each ``foreachBatch``
starts, when its collects start and end, when the engine thread applies operations and rows,
writes the snapshot; plus the JVM's CPU seconds sampled every 50 ms (from /proc).

    python scripts/pipeline_timeline.py [--batch 1000000] [--m 100000] [--repeat 2]

Instrumentation is by wrapping methods from outside (nothing in src/ changes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from _jvm_proc import cpu as _cpu
from _jvm_proc import jvm_pids as _jvm_pids
from _jvm_proc import jvm_threads as _threads

EV: list[tuple[float, str, str]] = []
T0 = [0.0]


def _mark(what: str) -> None:
    EV.append((time.perf_counter() - T0[0], threading.current_thread().name[:12], what))


def _wrap(cls, name: str, label: str | None = None) -> None:
    f = getattr(cls, name)
    label = label or name

    def g(*a, **k):
        _mark(f"{label} >")
        c0 = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            _mark(f"{label} <  (thread cpu {time.thread_time() - c0:.3f} s)")

    setattr(cls, name, g)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--algo", default="auto")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--conf", action="append", default=[], help="spark.key=value for the session")
    a = ap.parse_args()
    from vigil.bench.pipeline import _inprocess, _spark, _write_inputs, threshold_workload
    from vigil.engine import Engine
    from vigil.pipeline import driver, processor, sinks
    from vigil.pipeline.session import get_session

    _wrap(driver.DriverProcessor, "__call__", "foreachBatch")
    _wrap(processor.BaseProcessor, "collect_split", "collect")
    _wrap(driver.DriverProcessor, "process_batch", "engine-batch")
    _wrap(driver.DriverProcessor, "snapshot", "snapshot")
    _wrap(driver.DriverProcessor, "finish", "finish")
    _wrap(Engine, "add_operations")
    _wrap(Engine, "process")
    _wrap(sinks, "write_batch")
    from vigil.pipeline import sources

    _wrap(sources, "infer_schema")
    _wrap(sources, "stream_rows")
    _wrap(sources, "operations")
    from pyspark.sql.streaming import DataStreamWriter

    queries = []
    start = DataStreamWriter.start

    def start_and_keep(self, *a, **k):
        _mark("writeStream.start >")
        q = start(self, *a, **k)
        _mark("writeStream.start <")
        queries.append(q)
        return q

    DataStreamWriter.start = start_and_keep
    algos = {"threshold": a.algo}
    spark = get_session(conf=dict(kv.split("=", 1) for kv in a.conf), whole_files=True)  # as vigil run and the bench
    jvm = _jvm_pids()
    work = Path(tempfile.mkdtemp(prefix="vigil-pipe-tl-"))
    samples: list[tuple[float, float, float]] = []
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter() - T0[0], sum(_cpu(p) for p in jvm), time.process_time()))
            time.sleep(0.05)

    try:
        ws, wo = threshold_workload(2 * 1000, 1000)
        _write_inputs(ws, wo, 1000, work / "warm")
        _inprocess(work / "warm", algos)
        _spark(work / "warm", algos, spark)
        stream, ops = threshold_workload(3 * a.batch, a.m)
        _write_inputs(stream, ops, a.batch, work / "w")
        del stream, ops
        for _ in range(a.repeat):
            t_in, _ = _inprocess(work / "w", algos)
            EV.clear()
            samples.clear()
            stop.clear()
            th = threading.Thread(target=sampler, daemon=True)
            th0 = _threads(jvm)
            T0[0] = time.perf_counter()
            th.start()
            _mark("run >")
            t_sp, _, _ = _spark(work / "w", algos, spark)
            _mark("run <")
            stop.set()
            th.join()
            print(f"--- replay {t_in:.3f} s, spark {t_sp:.3f} s, ratio {t_sp / t_in:.2f}, load {os.getloadavg()[0]:.2f}")
            for t, th_name, w in EV:
                j = max((s for s in samples if s[0] <= t), default=(0, samples[0][1], 0), key=lambda s: s[0])
                print(f"{t:7.3f}  jvm {j[1] - samples[0][1]:6.2f}  {th_name:12s} {w}")
            th1 = _threads(jvm)
            d = sorted(((v - th0.get(k, 0.0), k) for k, v in th1.items()), reverse=True)
            print("jvm threads:", ", ".join(f"{k} {v:.2f}" for v, k in d if v >= 0.02))
            for p in queries[-1].recentProgress:
                print("progress", p["batchId"], p["timestamp"], json.dumps(p["durationMs"]))
            print(f"jvm cpu total {samples[-1][1] - samples[0][1]:.2f} s, python cpu {samples[-1][2] - samples[0][2]:.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
