"""``vigil bench quantiles --preset spark``: Spark SQL's ``percentile_approx`` as a peer.

The same stream and the same queries through Spark SQL (local mode, ``local[2]``) and through
vigil: ``2M*F`` elements of the bench workload (uniform and semisort streams, ``--scale F``,
default 0.1), ``PHIS`` quantile queries (phi uniform in (0, 1], as the bench's query sets) answered
at ``CHECKPOINTS`` checkpoints of the stream (every n/20 elements: the answers a continuous query
shows at those positions). Accuracy matched to eps = 0.005: ``percentile_approx(v, phis, 200)``
(Spark's relative error is 1 / accuracy, i.e. a rank error of at most eps N), GK at eps, casu with
eps_q = eps (its answers within eps N + 1 ranks, docs/contract.md).

Spark formulations (the table of (seq, v) cached in memory beforehand; each is one SQL statement):

* ``spark_join`` — what a Spark engineer writes to get every checkpoint in one job: join the
  checkpoint table on ``seq <= cp`` and ``GROUP BY cp`` (each checkpoint aggregates its prefix:
  sum of prefixes ~ n * m / 2 rows; measured the fastest percentile_approx formulation, 2.4 s wall
  against 7.6 s for one ``WHERE seq <= cp`` query per checkpoint at 200k x 20);
* ``spark_window`` — a running window, ``percentile_approx(...) OVER (ORDER BY seq ROWS BETWEEN
  UNBOUNDED PRECEDING AND CURRENT ROW)`` filtered to the checkpoints (one pass, but the
  percentiles are evaluated at every row, in one task);
* ``spark_kll`` — not percentile_approx: Spark's KLL sketch functions, one sketch per chunk
  between checkpoints (``kll_sketch_agg_double``), merged cumulatively (``kll_merge_agg_double``
  over a running window of chunks) and queried per checkpoint (k = ``KLL_K``, the k the matched
  preset found for GK's worst error at eps 0.005); O(n) work.

vigil (in this process): ``gk`` (GK summary at eps, chunks inserted between checkpoints, every phi
queried at each checkpoint) and ``casu:cluster`` (the phis as notify queries maintained at every
element; their values read at the checkpoints).

Timing: the Spark session start and the table load (createDataFrame + cache + count) are timed
apart (wall). Every engine runs once untimed first (numba compiles, the JVM's JIT warms), then
``repeat`` times interleaved (:func:`.common.measure_interleaved`); the median is reported, with
every sample and the range (``cpu_s_samples``, ``cpu_s_median``, ``cpu_s_range``, ``wall_s_*``) and
the fastest (``fastest_cpu_s``). Spark is measured in wall seconds and in CPU
seconds of the JVM (``/proc/<pid>/stat``, every thread of the driver and its local executors) plus
this process; vigil in wall and process CPU. Error: the worst distance of an answer's rank interval
from max(1, ceil(phi N)), over every (phi, checkpoint), divided by N, against the exact answer.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..workloads.quantiles import data_stream, query_set
from .common import Result, Timed, measure_interleaved, png_path, print_table, result_doc, write_json

EPS = 0.005
PHIS = 200
CHECKPOINTS = 20
KLL_K = 320
FORMS = ("spark_join", "spark_window", "spark_kll")


def _jvm_cpu(spark) -> float:
    """CPU seconds of the Spark JVM so far (driver and local executors)."""
    pid = getattr(spark, "_vigil_pid", None)
    if pid is None:
        pid = spark._vigil_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def rank_errors(x: np.ndarray, cps: list[int], answers: np.ndarray, phis: np.ndarray) -> np.ndarray:
    """(checkpoint, phi) rank error / N of the answers (rows: checkpoints) against the prefixes."""
    out = np.empty(answers.shape)
    for i, n in enumerate(cps):
        srt = np.sort(x[:n])
        lo = np.searchsorted(srt, answers[i], "left") + 1
        hi = np.searchsorted(srt, answers[i], "right")
        t = np.maximum(1, np.ceil(phis * n - 1e-9))
        out[i] = np.maximum(0, np.maximum(lo - t, t - hi)) / n
    return out


def _spark_sql(form: str, phis: np.ndarray, cps: list[int], eps: float) -> str:
    arr = "array(" + ", ".join(repr(float(p)) for p in phis) + ")"
    acc = int(round(1 / eps))
    if form == "spark_join":
        return (f"SELECT cp, percentile_approx(v, {arr}, {acc}) AS q FROM stream JOIN checkpoints ON seq <= cp "
                "GROUP BY cp")
    if form == "spark_window":
        return (f"SELECT seq AS cp, q FROM (SELECT seq, percentile_approx(v, {arr}, {acc}) OVER (ORDER BY seq "
                "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS q FROM stream) "
                f"WHERE seq IN ({', '.join(str(c) for c in cps)})")
    step = cps[0]
    return (f"SELECT cp, kll_sketch_get_quantile_double(s, {arr}) AS q FROM ("
            f"SELECT chunk * {step} AS cp, kll_merge_agg_double(sk) OVER (ORDER BY chunk ROWS BETWEEN UNBOUNDED "
            "PRECEDING AND CURRENT ROW) AS s FROM ("
            f"SELECT CAST(ceil(seq / {step}) AS BIGINT) AS chunk, kll_sketch_agg_double(v, {KLL_K}) AS sk "
            "FROM stream GROUP BY 1))")


def run_spark(spark, form: str, phis: np.ndarray, cps: list[int], eps: float) -> tuple[float, float, np.ndarray]:
    """(wall s, CPU s of the JVM + this process, answers (checkpoint, phi)) of one formulation."""
    sql = _spark_sql(form, phis, cps, eps)
    c0, p0, t0 = _jvm_cpu(spark), time.process_time(), time.perf_counter()
    rows = spark.sql(sql).collect()
    wall = time.perf_counter() - t0
    cpu = _jvm_cpu(spark) - c0 + time.process_time() - p0
    got = {int(r[0]): r[1] for r in rows}
    return wall, cpu, np.array([got[c] for c in cps], np.float64)


def run_vigil(algo: str, x: np.ndarray, phis: np.ndarray, cps: list[int], eps: float) -> tuple[float, float, np.ndarray]:
    """(wall s, CPU s, answers (checkpoint, phi)) of ``gk`` or ``casu:cluster``."""
    from ..quantiles.casu import CASU
    from ..quantiles.gk import GKSummary

    ans = np.empty((len(cps), len(phis)))
    t0, p0 = time.perf_counter(), time.process_time()
    if algo == "gk":
        g = GKSummary(eps)
        prev = 0
        for i, c in enumerate(cps):
            g.insert(x[prev:c])
            prev = c
            ans[i] = [g.query(float(f)) for f in phis]
    else:
        op = CASU(eps, None)
        qids = np.arange(len(phis), dtype=np.int64)
        op.register_many(qids, phis, np.full(len(phis), eps), 0, notify="cluster")
        prev = 0
        for i, c in enumerate(cps):
            op.push(x[prev:c], np.arange(prev + 1, c + 1, dtype=np.int64))
            op.cluster_events()
            prev = c
            ans[i] = op.lookup(qids, c)
    return time.perf_counter() - t0, time.process_time() - p0, ans


def _timed(fn, *args) -> Timed:
    """``fn(*args)`` -> (wall, cpu, answers) as a :class:`.common.Timed` (its own clocks: Spark's CPU
    includes the JVM's)."""
    wall, cpu, ans = fn(*args)
    return Timed(cpu, wall, ans)


def run_spark_preset(scale: float | None, out: str | Path, seed: int = 0, repeat: int = 3,
                     streams: tuple[str, ...] = ("uniform", "semisort"), forms: tuple[str, ...] = FORMS,
                     n_phis: int = PHIS, spark=None) -> dict[str, Any]:
    import pandas as pd

    f = 0.1 if scale is None else float(scale)
    n = max(CHECKPOINTS * 100, int(2_000_000 * f))
    step = n // CHECKPOINTS
    cps = [step * (i + 1) for i in range(CHECKPOINTS)]
    phis, _ = query_set(n_phis, "uniform", (EPS, EPS), seed + 1)
    t0 = time.perf_counter()
    if spark is None:
        from ..pipeline.session import get_session

        spark = get_session("local[2]", app_name="vigil-bench-spark", conf={"spark.sql.shuffle.partitions": "2"})
    session_s = time.perf_counter() - t0
    spark.createDataFrame(pd.DataFrame({"cp": np.array(cps, np.int64)})).createOrReplaceTempView("checkpoints")
    results: list[Result] = []
    for kind in streams:
        x = data_stream(kind, n, seed)[:cps[-1]]
        t0 = time.perf_counter()
        df = spark.createDataFrame(pd.DataFrame({"seq": np.arange(1, len(x) + 1, dtype=np.int64), "v": x}))
        df = df.repartition(2).cache()
        df.count()
        df.createOrReplaceTempView("stream")
        load_s = time.perf_counter() - t0
        engines = {a: functools.partial(_timed, run_vigil, a, x, phis, cps, EPS) for a in ("gk", "casu:cluster")}
        engines.update({fm: functools.partial(_timed, run_spark, spark, fm, phis, cps, EPS) for fm in forms})
        # an untimed warm-up call each (numba compiles, the JVM's JIT), then `repeat` runs interleaved
        runs = measure_interleaved(engines, repeat)
        df.unpersist()
        med = {k: s.fields() for k, s in runs.items()}
        cpu_ref = {a: med[a]["cpu_s_median"] for a in ("gk", "casu:cluster")}
        wall_ref = {a: med[a]["wall_s_median"] for a in ("gk", "casu:cluster")}
        for k, rs in runs.items():
            err = rank_errors(x, cps, rs.values[0], phis)
            cpu, wall = med[k]["cpu_s_median"], med[k]["wall_s_median"]
            bound = EPS if k != "spark_kll" else None  # rank error <= eps N + 1 (KLL: probabilistic)
            ex: dict[str, Any] = {
                "stream": kind, "engine": "spark" if k.startswith("spark") else "vigil",
                "wall_seconds": wall, "wall_range": med[k]["wall_s_range"], "cpu_seconds": cpu,
                "cpu_range": med[k]["cpu_s_range"], "fastest_cpu_s": min(rs.cpu), "fastest_wall_s": min(rs.wall),
                **med[k], "clock": "cpu (spark: JVM + driver)",
                "max_rank_error": float(err.max()), "mean_rank_error": float(err.mean()),
                "bound": bound, "within_bound": None if bound is None else bool(np.all(
                    err * np.array(cps)[:, None] <= EPS * np.array(cps)[:, None] + 1 + 1e-9)),
                "answers": int(err.size), "elements_per_s_cpu": len(x) / cpu,
                "cpu_over_gk": cpu / cpu_ref["gk"], "cpu_over_casu": cpu / cpu_ref["casu:cluster"],
                "wall_over_gk": wall / wall_ref["gk"], "wall_over_casu": wall / wall_ref["casu:cluster"]}
            if k.startswith("spark"):
                ex.update(load_seconds=load_s, session_start_seconds=session_s, sql=_spark_sql(k, phis[:2], cps, EPS))
                if k == "spark_kll":
                    ex["k"] = KLL_K
                else:
                    ex["accuracy"] = int(round(1 / EPS))
            results.append(Result(f"{k}/{kind}", cpu, len(x), extra=ex))
    params = {"scale": f, "elements": cps[-1], "checkpoints": cps, "phis": n_phis, "eps": EPS, "repeat": repeat,
              "master": "local[2]", "session_start_seconds": session_s,
              "spark_version": spark.version, "seconds": "CPU (Spark: JVM + driver process), median of repeat (interleaved, after a warm-up run)"}
    doc = result_doc("quantiles", "spark", params, results)
    p = write_json(out, doc)
    print_table(doc, reference=results[0].algo)
    for r in results:
        e = r.extra
        print(f"{r.algo:24s} cpu {e['cpu_seconds']:8.3f} s  wall {e['wall_seconds']:8.3f} s  "
              f"err {e['max_rank_error']:.5f}  cpu/casu {e['cpu_over_casu']:8.2f}  wall/casu {e['wall_over_casu']:8.2f}")
    try:
        plot_spark(doc, png_path(out))
    except Exception as e:  # noqa: BLE001 - a plot must not lose the results
        print(f"plot skipped: {e}")
    print(f"wrote {p}")
    return doc


def plot_spark(doc: dict[str, Any], path: Path) -> None:
    """CPU and wall seconds per engine and stream (log), and the worst rank error beside eps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    names = [r["algo"] for r in res]
    y = np.arange(len(res))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 0.5 * len(res) + 1.8), dpi=80)
    a.barh(y - 0.2, [r["extra"]["cpu_seconds"] for r in res], 0.4, color="C0", label="CPU s")
    a.barh(y + 0.2, [r["extra"]["wall_seconds"] for r in res], 0.4, color="C1", label="wall s")
    a.set_yticks(y, names)
    a.set_xscale("log")
    a.invert_yaxis()
    a.legend()
    a.set_xlabel(f"seconds, {doc['params']['elements']:,} elements, {doc['params']['phis']} phis x "
                 f"{len(doc['params']['checkpoints'])} checkpoints")
    b.barh(y, [r["extra"]["max_rank_error"] for r in res], color="C2")
    b.axvline(doc["params"]["eps"], color="k", ls="--", label="eps")
    b.set_yticks(y, names)
    b.invert_yaxis()
    b.set_xlabel("worst rank error / N")
    b.legend()
    fig.suptitle(f"quantiles / spark ({doc['machine']['date'][:16]}, {doc['machine']['git_commit']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
