"""``vigil bench pipeline``: the Spark pipeline's cost over the in-process engine, and a soak run.

Presets:

* ``throughput``: the same workload, written once as files (Parquet files of B rows and one
  JSON-lines file of operations), through (a) ``vigil replay``'s work in-process and (b)
  ``vigil run`` in driver mode (one file per micro-batch, session already started), for
  B = 10k, 100k, 1M rows (x ``scale``), 3 B rows each. Workloads: ``threshold`` (paper 000's
  §8.1 static setup from :mod:`vigil.workloads.threshold` in 1D: m = 100,000 x scale interval
  queries registered at 0, uniform points, weights N(100, 15), tau putting the expected
  maturity at 80% of the stream, geometric lifetimes terminating 90% of the queries before it)
  and ``mixed`` (the demo's trade stream and query mix). Reported: elements/s of both and the
  overhead ratio spark_seconds / engine_seconds.

  What each side includes. In-process (``vigil replay``): reading the stream files and the
  operation lines, ``Engine.add_operations``, ``Engine.process`` per file, ``Engine.finish``,
  writing the outputs as one Parquet file. Spark: the whole ``vigil run`` call on a started
  session (schema inference, streaming query start, per batch: Spark's file listing and
  offset/commit logs, Parquet read + ``toArrow()``, ordering, the same engine work, writing the
  batch's outputs as Parquet, the snapshot and the query-log append with fsync, metrics; then
  finish). Before the points of a workload both sides run once untimed on a small input of that
  workload, so JIT compilation (numba caches, the JVM's code generation) is paid by neither
  timed run. Then each point runs both sides ``repeat`` times (default ``REPEAT`` = 2: at scale 1
  the mixed workload's 1M-row point takes ~15 minutes a run), interleaved; the median wall time
  is reported, with every sample in wall and CPU seconds (Spark: the JVM's CPU plus this
  process's, where the engine runs) (``extra.engine``, ``extra.spark``; ``extra.cpu_s_*`` are
  Spark's).
* ``soak``: ``vigil run`` with a processing-time trigger while a feeder keeps writing stream
  files and query operations that register and terminate queries continuously (churn); every
  batch's driver RSS and snapshot size are recorded; memory must stay bounded.
* ``scaleout``: driver mode vs sharded mode on ``local-cluster`` with 1, 2 and 4 executors
  (:mod:`vigil.bench.pipeline_scaleout`).

``run_preset(preset, scale, algos, out, minutes=None)`` writes the result JSON of docs/architecture.md
(``family="pipeline"``) and a PNG beside it, and returns the document.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PRESETS = ("throughput", "soak", "scaleout")
BATCHES = (10_000, 100_000, 1_000_000)
REPEAT = 2  # throughput's runs per side and point: the mixed workload at 1M-row batches is ~15 min a run


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


# ----------------------------------------------------------------------------- workloads


def threshold_workload(n: int, m: int, seed: int = 0) -> tuple[pa.Table, list[dict]]:
    """Paper 000's §8.1 static setup in 1D as an event log of n elements: column x (points), w
    (weights); m interval queries registered at 0, every one with threshold tau such that the
    expected maturity falls at 0.8 n (so the stream runs until every query matured or was
    terminated, as in §8.1), and each query terminated after a Geometric(p_del) lifetime, p_del
    such that 90% terminate before their expected maturity (terminations past the stream's end
    are left out: they never happen)."""
    from vigil.workloads.threshold import ThresholdWorkloadParams, draw_elements, draw_queries

    p = ThresholdWorkloadParams(dim=1, m=m, tau=1, seed=seed)
    p = replace(p, tau=max(10, int(0.8 * n * p.volume * p.weight_mean)))
    rng = np.random.default_rng(seed)
    pts, w = draw_elements(rng, n, p)
    lo, hi = draw_queries(rng, m, p)
    life = rng.geometric(p.p_del, m)
    ops = [{"op": "register", "at": 0, "query": {"id": f"q{i}", "type": "threshold",
                                                 "where": {"x": [float(lo[i, 0]), float(hi[i, 0])]},
                                                 "weight": "w", "threshold": p.tau}} for i in range(m)]
    ends = np.argsort(life, kind="stable")
    ops += [{"op": "terminate", "at": int(life[i]), "id": f"q{i}"} for i in ends if life[i] < n]
    return pa.table({"x": pa.array(pts[:, 0]), "w": pa.array(w)}), ops


def mixed_workload(n: int, n_queries: int, seed: int = 0) -> tuple[pa.Table, list[dict]]:
    from vigil.workloads.trades import trade_queries, trades

    return trades(n, n_symbols=60, seed=seed), trade_queries(n, n_queries, n_symbols=60, seed=seed + 1)


# ----------------------------------------------------------------------------- throughput


def _write_inputs(stream: pa.Table, ops: list, batch: int, work: Path) -> None:
    """The workload as files, read by both sides: Parquet files of ``batch`` rows under
    ``work/s`` (modification times in name order: Spark's file source takes files in that order)
    and the operations as JSON lines in ``work/q``."""
    from vigil.workloads.trades import write_files

    shutil.rmtree(work, ignore_errors=True)
    write_files(stream, ops, work / "s", work / "q", n_files=-(-stream.num_rows // batch))


def _inprocess(work: Path, algos: dict) -> tuple[float, int]:
    """``vigil replay``'s work on the same files: read the stream files and the operation lines,
    the engine over each file as one batch, finish, write the outputs as Parquet."""
    from vigil.engine import Engine
    from vigil.events import read_operations, read_stream, write_outputs

    t0 = time.perf_counter()
    files = sorted((work / "s").glob("*.parquet"))
    ops = [ln for f in sorted((work / "q").glob("*.jsonl")) for ln in read_operations(f)]
    eng = None
    parts = []
    for f in files:
        t = read_stream(f)
        if eng is None:
            eng = Engine(algos=algos, columns=set(t.column_names))
            eng.add_operations(ops)
        parts.append(eng.process(t))
    parts.append(eng.finish())
    out = pa.concat_tables(parts)
    write_outputs(out, work / "replay.parquet")
    return time.perf_counter() - t0, out.num_rows


def _spark(work: Path, algos: dict, spark) -> tuple[float, int, list]:
    from vigil.pipeline import sinks
    from vigil.pipeline.driver import RunConfig, run

    shutil.rmtree(work / "out", ignore_errors=True)
    shutil.rmtree(work / "ck", ignore_errors=True)
    cfg = RunConfig(stream=str(work / "s"), queries=str(work / "q"), out=str(work / "out"),
                    checkpoint=str(work / "ck"), max_files_per_batch=1, algos=algos, quiet=True)
    t0 = time.perf_counter()
    run(cfg, spark)
    dt = time.perf_counter() - t0
    ms = sinks.read_metrics(work / "out")
    n_out = sinks.read_all(work / "out").num_rows
    return dt, n_out, ms


def _timed_inprocess(work: Path, algos: dict):
    from vigil.bench.common import Timed

    c0 = time.process_time()
    wall, n_out = _inprocess(work, algos)
    return Timed(time.process_time() - c0, wall, n_out)


def _timed_spark(work: Path, algos: dict, spark):
    """``vigil run``'s CPU: the JVM's (driver and local executors) and this process's (the engine)."""
    from vigil.bench.common import Timed

    from .quantiles_spark import _jvm_cpu

    c0, p0 = _jvm_cpu(spark), time.process_time()
    wall, n_out, ms = _spark(work, algos, spark)
    return Timed(_jvm_cpu(spark) - c0 + time.process_time() - p0, wall, (n_out, ms))


def throughput(scale: float, algos: dict, work: Path, console, workloads=("threshold", "mixed"),
               batches=BATCHES, repeat: int = REPEAT) -> list:
    """Per point: both sides ``repeat`` times, interleaved (engine, spark, engine, spark, ...:
    :func:`.common.measure_interleaved`), after the workload's untimed warm-up on a small input; the
    median wall seconds are reported (``engine_seconds``, ``spark_seconds``), every sample in CPU
    and wall seconds in ``extra.engine`` / ``extra.spark`` (:func:`.common.sample_fields`)."""
    from vigil.bench.common import Result, measure_interleaved
    from vigil.pipeline.session import get_session

    spark = get_session(whole_files=True)  # both workloads are Parquet files through driver mode
    results = []
    for wl in workloads:
        # untimed warm-up of both sides on a small input of this workload (JIT, code generation)
        wb = max(1000, int(batches[0] * scale))
        ws, wo = threshold_workload(2 * wb, min(1000, max(100, int(100_000 * scale)))) if wl == "threshold" \
            else mixed_workload(2 * wb, min(100, max(50, int(2000 * scale))))
        _write_inputs(ws, wo, wb, work / f"{wl}-warmup")
        c0 = time.process_time()
        _inprocess(work / f"{wl}-warmup", algos)
        warm_in = time.process_time() - c0
        warm_sp = _timed_spark(work / f"{wl}-warmup", algos, spark).cpu
        shutil.rmtree(work / f"{wl}-warmup", ignore_errors=True)
        for b in batches:
            bb = max(1000, int(b * scale))
            n = bb * 3
            if wl == "threshold":
                stream, ops = threshold_workload(n, max(100, int(100_000 * scale)))
            else:
                stream, ops = mixed_workload(n, max(50, int(2000 * scale)))
            _write_inputs(stream, ops, bb, work / f"{wl}-{bb}")
            del stream, ops
            d = work / f"{wl}-{bb}"
            smp = measure_interleaved({"engine": lambda d=d: _timed_inprocess(d, algos),
                                       "spark": lambda d=d: _timed_spark(d, algos, spark)}, repeat, warmup=False)
            for k, w in (("engine", warm_in), ("spark", warm_sp)):  # warmed per workload, above
                smp[k].warmed, smp[k].warmup_cpu = True, w
            fe, fs = smp["engine"].fields(), smp["spark"].fields()
            t_in, t_sp = fe["wall_s_median"], fs["wall_s_median"]
            out_in = smp["engine"].values[smp["engine"].median_index()]
            out_sp, ms = smp["spark"].values[smp["spark"].median_index()]
            same = all(v == out_in for v in smp["engine"].values) and all(v[0] == out_in for v in smp["spark"].values)
            real = [m for m in ms if not m.get("final")]
            snap = [m["snapshot_bytes"] for m in real]
            snap_s = [m["snapshot_s"] for m in real]
            extra = {
                "point": {"workload": wl, "batch": bb},
                "engine_seconds": t_in, "spark_seconds": t_sp, "overhead_ratio": t_sp / t_in,
                "engine_elements_per_s": n / t_in, "spark_elements_per_s": n / t_sp,
                "outputs_equal": same, "outputs": out_sp, "engine": fe, "spark": fs, **fs,
                "engine_cpu_seconds": fe["cpu_s_median"], "spark_cpu_seconds": fs["cpu_s_median"],
                "cpu_overhead_ratio": fs["cpu_s_median"] / fe["cpu_s_median"],
                "snapshot_bytes_mean": float(np.mean(snap)) if snap else 0.0,
                "snapshot_seconds_mean": float(np.mean(snap_s)) if snap_s else 0.0,
                "collect_seconds_mean": float(np.mean([m["collect_s"] for m in real] or [0])),
                "engine_seconds_in_spark": float(sum(m["engine_s"] for m in real)),
                "collect_seconds": float(sum(m["collect_s"] for m in real)),  # overlaps the engine's work
                "snapshot_seconds": float(sum(snap_s)),
            }
            shutil.rmtree(work / f"{wl}-{bb}", ignore_errors=True)
            results.append(Result(algo=f"spark-driver/{wl}", seconds=t_sp, operations=n, extra=extra))
            console.print(
                f"{wl:9s} batch {bb:>9,}: engine {n / t_in:>11,.0f} el/s  spark {n / t_sp:>11,.0f} el/s  "
                f"overhead x{t_sp / t_in:.2f}  snapshot {extra['snapshot_bytes_mean'] / 1e6:.1f} MB "
                f"in {extra['snapshot_seconds_mean']:.3f} s  (spark side: collect+order {extra['collect_seconds']:.1f} s "
                f"on Spark's thread, engine {extra['engine_seconds_in_spark']:.1f} s and snapshots "
                f"{extra['snapshot_seconds']:.1f} s on the engine's; +{t_sp - t_in:.1f} s in all)  "
                f"outputs equal: {same}  (wall medians of {repeat}; CPU engine {fe['cpu_s_median']:.1f} s, spark "
                f"{fs['cpu_s_median']:.1f} s incl. the JVM)",
                soft_wrap=True,
            )
    return results


# ----------------------------------------------------------------------------- soak


def soak(minutes: float, scale: float, algos: dict, work: Path, console, kinds=(0, 1, 2, 3)) -> list:
    """Continuous churn through a processing-time trigger; returns one Result with the RSS and
    snapshot-size curves in ``extra``."""
    from vigil.bench.common import Result
    from vigil.pipeline import sinks
    from vigil.pipeline.driver import RunConfig, run
    from vigil.pipeline.session import get_session
    from vigil.workloads.trades import trades

    shutil.rmtree(work, ignore_errors=True)
    sd, qd = work / "s", work / "q"
    sd.mkdir(parents=True)
    qd.mkdir(parents=True)
    rows_per_file = max(1000, int(50_000 * scale))
    alive_target = max(50, int(5000 * scale))
    stop = threading.Event()
    state = {"files": 0, "next_q": 0, "alive": []}
    rng = np.random.default_rng(0)

    def write_step() -> None:
        i = state["files"]
        t = trades(rows_per_file, n_symbols=60, seed=1000 + i, start=i * rows_per_file, with_rel=False)
        tmp = sd / f".part-{i:06d}.parquet.tmp"
        pq.write_table(t, tmp)
        at = i * rows_per_file  # operations for the coming file
        ops = []
        # terminate about a third of the alive queries, register until the target is reached
        alive = state["alive"]
        kill = rng.random(len(alive)) < 0.33
        for qid in [q for q, k in zip(alive, kill, strict=True) if k]:
            ops.append({"op": "terminate", "at": at + int(rng.integers(0, rows_per_file)), "id": qid})
        alive = [q for q, k in zip(alive, kill, strict=True) if not k]
        while len(alive) < alive_target:
            q = state["next_q"]
            state["next_q"] += 1
            qid = f"soak-{q}"
            kind = kinds[q % len(kinds)]
            if kind == 0:
                spec = {"type": "threshold", "where": {"symbol": "AAPL", "price": [0, 1e6]}, "weight": "shares",
                        "threshold": int(rng.integers(10_000, 10_000_000))}
            elif kind == 1:
                spec = {"type": "threshold", "where": {"nasdaq": [4400, 4600]}, "threshold": int(rng.integers(1000, 10**7))}
            elif kind == 2:
                spec = {"type": "window_aggregate", "agg": "sum", "column": "shares", "rows": [1000, 0]}
            else:
                spec = {"type": "quantile", "column": "price", "phi": 0.5, "epsilon": 0.01, "rows": 5000}
            ops.append({"op": "register", "at": at + int(rng.integers(0, rows_per_file)), "query": {"id": qid, **spec}})
            alive.append(qid)
        state["alive"] = alive
        (qd / f".ops-{i:06d}.jsonl.tmp").write_text("\n".join(json.dumps(o) for o in ops) + "\n")
        (qd / f".ops-{i:06d}.jsonl.tmp").rename(qd / f"ops-{i:06d}.jsonl")  # ops before their rows
        tmp.rename(sd / f"part-{i:06d}.parquet")
        state["files"] += 1

    write_step()

    def feeder() -> None:
        while not stop.is_set():
            write_step()
            stop.wait(1.0)

    spark = get_session()
    th = threading.Thread(target=feeder, daemon=True)
    th.start()
    rss: list[tuple[float, float]] = []
    t0 = time.perf_counter()

    def sampler() -> None:
        while not stop.is_set():
            rss.append((time.perf_counter() - t0, _rss_mb()))
            stop.wait(2.0)

    th2 = threading.Thread(target=sampler, daemon=True)
    th2.start()
    cfg = RunConfig(stream=str(sd), queries=str(qd), out=str(work / "out"), checkpoint=str(work / "ck"),
                    trigger="2 seconds", max_files_per_batch=2, algos=algos, quiet=True, timeout=minutes * 60,
                    finish=False)
    try:
        s = run(cfg, spark)
    finally:
        stop.set()
        th.join()
        th2.join()
    ms = [m for m in sinks.read_metrics(work / "out") if not m.get("final")]
    snaps = [m["snapshot_bytes"] for m in ms]
    half = len(rss) // 2
    first, second = [r for _, r in rss[:half]], [r for _, r in rss[half:]]
    extra = {
        "point": {"minutes": minutes, "rows_per_file": rows_per_file, "alive_target": alive_target},
        "batches": len(ms), "rows": s["rows_in"], "ops": s["ops_in"],
        "rss_mb_first_half_max": max(first) if first else None,
        "rss_mb_second_half_max": max(second) if second else None,
        "snapshot_bytes_first": snaps[0] if snaps else None, "snapshot_bytes_last": snaps[-1] if snaps else None,
        "snapshot_bytes_max": max(snaps) if snaps else None,
        "alive_last": sum(ms[-1]["alive"].values()) if ms else 0,
        "curve": {"x": [t for t, _ in rss], "rss_mb": [r for _, r in rss],
                  "snapshot_bytes": snaps, "xlabel": "seconds"},
    }
    console.print(
        f"soak {minutes:g} min: {len(ms)} batches, {s['rows_in']:,} rows, {s['ops_in']:,} operations; driver RSS "
        f"max {extra['rss_mb_first_half_max']} MB (1st half) vs {extra['rss_mb_second_half_max']} MB (2nd half); "
        f"snapshot {extra['snapshot_bytes_first']} -> {extra['snapshot_bytes_last']} bytes; "
        f"alive queries at the end {extra['alive_last']}"
    )
    return [Result(algo="spark-driver/soak", seconds=s["seconds"], operations=max(1, s["rows_in"]), extra=extra)]


# ----------------------------------------------------------------------------- entry point


def run_preset(preset: str, scale: float | None = None, algos: dict[str, str] | None = None,
               out: str | Path = "results/pipeline.json", minutes: float | None = None,
               workdir: str | Path | None = None, repeat: int | None = None, **kw) -> dict[str, Any]:
    from rich.console import Console

    from vigil.bench.common import print_table, result_doc, write_json

    if preset not in PRESETS:
        raise ValueError(f"unknown pipeline preset {preset!r}; expected one of {PRESETS}")
    console = Console(stderr=True)
    scale = 1.0 if scale is None else float(scale)
    algos = dict(algos or {})
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="vigil-bench-pipeline-"))
    try:
        if preset == "throughput":
            rep = REPEAT if repeat is None else int(repeat)
            results = throughput(scale, algos, tmp, console, repeat=rep, **kw)
            params = {"scale": scale, "batches": [max(1000, int(b * scale)) for b in kw.get("batches", BATCHES)],
                      "algos": algos, "repeat": rep, "timing": "both sides `repeat` times interleaved after an "
                      "untimed warm-up on a small input; seconds = median wall, CPU samples beside"}
        elif preset == "scaleout":
            from .pipeline_scaleout import BATCHES as N_FILES
            from .pipeline_scaleout import scaleout

            results = scaleout(scale, algos, tmp, console, **kw)
            params = {"scale": scale, "batches": kw.get("batches", N_FILES), "algos": algos}
        else:
            minutes = 2.0 if minutes is None else float(minutes)
            results = soak(minutes, scale, algos, tmp, console, **kw)
            params = {"scale": scale, "minutes": minutes, "algos": algos}
    finally:
        if not workdir:
            shutil.rmtree(tmp, ignore_errors=True)
    doc = result_doc("pipeline", preset, params, results)
    write_json(out, doc)
    if preset == "throughput":  # seconds: Spark's median wall; note: its CPU median and range
        print_table(doc, reference=results[0].algo, console=console)
    _plot(doc, Path(out).with_suffix(".png"))
    return doc


def _plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if doc["preset"] == "scaleout":
        from .pipeline_scaleout import plot

        return plot(doc, path)
    fig, ax = plt.subplots(figsize=(8, 4))
    if doc["preset"] == "throughput":
        for wl in ("threshold", "mixed"):
            rs = [r for r in doc["results"] if r["extra"]["point"]["workload"] == wl]
            if not rs:
                continue
            x = [r["extra"]["point"]["batch"] for r in rs]
            ax.plot(x, [r["extra"]["engine_elements_per_s"] for r in rs], "o--", label=f"{wl}: engine in-process")
            ax.plot(x, [r["extra"]["spark_elements_per_s"] for r in rs], "s-", label=f"{wl}: spark driver mode")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows per micro-batch")
        ax.set_ylabel("elements / s")
        ax.set_title("vigil run (driver mode) vs the engine in-process")
    else:
        c = doc["results"][0]["extra"]["curve"]
        ax.plot(c["x"], c["rss_mb"], label="driver RSS (MB)")
        ax.set_xlabel("seconds")
        ax.set_ylabel("MB")
        ax2 = ax.twinx()
        ax2.plot(np.linspace(0, max(c["x"] or [1]), len(c["snapshot_bytes"])),
                 [b / 1e6 for b in c["snapshot_bytes"]], "r.", label="snapshot (MB)")
        ax2.set_ylabel("snapshot MB")
        ax.set_title("vigil run soak: memory under continuous query churn")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
