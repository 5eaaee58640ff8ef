"""``vigil bench pipeline --preset scaleout``: driver mode vs sharded mode on a multi-process cluster.

One workload (the trade stream of :mod:`vigil.workloads.trades` with its query mix restricted to
keyed and key-less thresholds, sliding windows, quantiles and window joins: ``100,000 x scale``
queries registered over the first half of ``1,000,000 x scale`` rows, a third terminated later,
lookups), written once as ``BATCHES`` Parquet files (one micro-batch each), through ``vigil run``
in a subprocess (one Spark application per configuration):

* ``driver``: driver mode on ``local-cluster[1,1,1024]``;
* ``sharded-E``: sharded mode with E shards on ``local-cluster[E,1,1024]`` for E in 1, 2, 4
  (one shard per executor).

Per batch after the first (which pays for Spark's and the Python workers' start), from
``out/_metrics``: latency, elements (rows + operations), driver bytes in and out,
bytes written durably, queries alive. Reported per configuration: elements/s over the batches'
processing time (Spark's start excluded), median and last batch latency, driver bytes per batch,
durable bytes per element of change; and whether every configuration produced the same number of
outputs of each kind. On a 2-core machine the point is the shape (driver bytes flat in the state,
durable bytes following the change, time per batch not growing with the state), not speed-up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

BATCHES = 10
EXECUTORS = (1, 2, 4)
FAMILIES = ("threshold", "window", "quantile")  # trade_queries' kinds: threshold_key, threshold, window, window_join, quantile


def workload(scale: float, seed: int = 7):
    from vigil.workloads.trades import trade_queries, trades

    n = max(2000, int(1_000_000 * scale))
    q = max(100, int(100_000 * scale))
    return trades(n, n_symbols=100, seed=seed), trade_queries(n, q, n_symbols=100, seed=seed + 1, lookups=5,
                                                               families=FAMILIES)


def _warm(algos: dict) -> None:
    """The workload's kernels compiled into numba's cache before the timed runs (each run's
    processes load them from there)."""
    from vigil.engine import Engine
    from vigil.workloads.trades import trade_queries, trades

    t = trades(3000, n_symbols=100, seed=1)
    eng = Engine(algos=algos, columns=set(t.column_names))
    eng.add_operations(trade_queries(3000, 300, n_symbols=100, seed=2, lookups=3, families=FAMILIES))
    eng.process(t)
    eng.finish()


def _run(work: Path, name: str, args: list[str], algos: dict) -> tuple[float, list[dict], Counter]:
    from vigil.pipeline import sinks

    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "vigil"), "run", "--stream", str(work / "s"), "--queries",
           str(work / "q"), "--out", str(out / "out"), "--checkpoint", str(out / "ck"),
           "--max-files-per-batch", "1", "--quiet", *args]
    for fam, algo in algos.items():
        cmd += ["--algo", f"{fam}={algo}"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{name}: vigil run failed: {r.stderr[-2000:]}")
    ms = sinks.read_metrics(out / "out")
    kinds = Counter(sinks.read_all(out / "out").column("event").to_pylist())
    shutil.rmtree(out / "ck", ignore_errors=True)
    return wall, ms, kinds


def _summary(name: str, wall: float, ms: list[dict], kinds: Counter) -> dict:
    real = [m for m in ms if not m.get("final")]
    first, real = real[0], real[1:]  # batch 0: Spark's and the Python workers' start, kernel loading
    el = [m["rows_in"] + m["ops_in"] for m in real]
    lat = [m["latency_s"] for m in real]
    dur = [m["state_bytes_written"] for m in real]
    half = len(real) // 2
    return {
        "point": {"config": name},
        "wall_seconds": wall,
        "first_batch_latency_s": first["latency_s"],
        "batches": len(real),
        "elements": int(sum(el)),
        "elements_per_s": sum(el) / sum(lat) if sum(lat) else 0.0,
        "latency_median_s": float(np.median(lat)),
        "latency_first_half_s": float(np.mean(lat[:half])) if half else 0.0,
        "latency_second_half_s": float(np.mean(lat[half:])),
        "driver_bytes_in_mean": float(np.mean([m["driver_bytes_in"] for m in real])),
        "driver_bytes_out_mean": float(np.mean([m["driver_bytes_out"] for m in real])),
        "driver_bytes_in_max": int(max(m["driver_bytes_in"] for m in real)),
        "driver_bytes_out_max": int(max(m["driver_bytes_out"] for m in real)),
        "state_bytes_per_batch_mean": float(np.mean(dur)),
        "state_bytes_per_element": float(sum(dur) / max(1, sum(el))),
        "outputs": dict(kinds),
        "curve": {
            "batch": [m["batch"] for m in real], "latency_s": lat, "elements": el,
            "alive": [int(sum((m.get("alive") or {}).values())) for m in real],
            "driver_bytes_in": [m["driver_bytes_in"] for m in real],
            "driver_bytes_out": [m["driver_bytes_out"] for m in real], "state_bytes_written": dur,
        },
    }


def scaleout(scale: float, algos: dict, work: Path, console, executors=EXECUTORS, batches: int = BATCHES) -> list:
    from vigil.bench.common import Result
    from vigil.workloads.trades import write_files

    stream, ops = workload(scale)
    shutil.rmtree(work / "s", ignore_errors=True)
    shutil.rmtree(work / "q", ignore_errors=True)
    write_files(stream, ops, work / "s", work / "q", n_files=batches)
    n_q = sum(1 for o in ops if o["op"] == "register")
    _warm(algos)
    console.print(f"scaleout: {stream.num_rows:,} rows, {len(ops):,} operations ({n_q:,} queries), {batches} batches")
    del stream, ops
    configs = [("driver", ["--mode", "driver", "--master", "local-cluster[1,1,1024]"])]
    configs += [(f"sharded-{e}", ["--mode", "sharded", "--shards", str(e), "--master", f"local-cluster[{e},1,1024]"])
                for e in executors]
    results = []
    for name, args in configs:
        wall, ms, kinds = _run(work, name, args, algos)
        s = _summary(name, wall, ms, kinds)
        results.append(Result(algo=f"scaleout/{name}", seconds=wall, operations=s["elements"], extra=s))
        console.print(
            f"{name:10s}: {s['elements_per_s']:>9,.0f} el/s  batch latency median {s['latency_median_s']:.2f} s "
            f"(1st half {s['latency_first_half_s']:.2f} s, 2nd half {s['latency_second_half_s']:.2f} s)  "
            f"driver bytes/batch in {s['driver_bytes_in_mean'] / 1e3:,.1f} KB out {s['driver_bytes_out_mean'] / 1e3:,.1f} KB  "
            f"durable {s['state_bytes_per_batch_mean'] / 1e6:,.2f} MB/batch ({s['state_bytes_per_element']:.0f} B/element)  "
            f"wall {wall:.0f} s", soft_wrap=True)
    ref = results[0].extra["outputs"]
    for r in results:
        r.extra["outputs_equal_driver"] = r.extra["outputs"] == ref
    return results


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    for r in doc["results"]:
        c, name = r["extra"]["curve"], r["extra"]["point"]["config"]
        style = "k--" if name == "driver" else "-"
        axes[0].plot(c["batch"], c["latency_s"], style, marker="o", ms=3, label=name)
        axes[1].plot(c["batch"], [b / 1e3 for b in c["driver_bytes_in"]], style, marker="o", ms=3, label=f"{name} in")
        axes[1].plot(c["batch"], [b / 1e3 for b in c["driver_bytes_out"]], style, marker="x", ms=3, alpha=0.6)
        axes[2].plot(c["batch"], [b / 1e6 for b in c["state_bytes_written"]], style, marker="o", ms=3, label=name)
        axes[3].plot(c["batch"], c["alive"], style, label=name)
    axes[0].set_ylabel("batch latency (s)")
    axes[1].set_ylabel("driver KB per batch (o in, x out)")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("MB written durably per batch")
    axes[3].set_ylabel("queries alive")
    for ax in axes:
        ax.set_xlabel("batch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"vigil run: driver mode vs sharded on local-cluster (scale {doc['params']['scale']:g})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
