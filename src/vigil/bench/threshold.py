"""Threshold-family benchmarks: the experiments of paper 000 (Qiao, Gan, Tao, "Range
Thresholding on Streams", SIGMOD 2016), §8. Each preset is the figure of the same number:

========  =====================================================================================
fig3      §8.1, Fig. 3: amortised cost per operation as the stream evolves (static queries,
          m = 1M, tau = 20M); 3a is --dim 1, 3b is --dim 2
fig4      §8.1, Fig. 4: total time vs m (100k .. 2M), tau = 20M, static
fig5      §8.1, Fig. 5: total time vs tau (5M .. 80M), m = 1M, static
fig6      §8.2, Fig. 6: cost per operation over time, stochastic mode, p_ins = 0.3
fig7      §8.2, Fig. 7: total time vs p_ins (0.1 .. 0.5), stochastic mode
fig8      §8.2, Fig. 8: cost per operation over time, fixed-load mode
========  =====================================================================================

An *operation* is, as in the paper, the handling of one element, or one registration,
termination or maturity of a query. For every workload point one concrete trace is generated
(``vigil.workloads.threshold.generate_trace``) by driving an exact *resolver* operator through
the workload (default: dt when it runs, else the stabbing baseline); the resolver's own operator
calls are timed during that run (the generation itself is not), and every other algorithm then
replays the same trace in this process, one after another, timing only its operator calls. Each
algorithm's outputs are compared with the trace's (``verified``).

``dt_floor`` is ``DT(dim, floor_only=True)``: DT's counter-maintenance pass alone, the floor
under DT's cost. Algorithms other than dt/dt_floor stop once their measured time exceeds the
budget; their cost is then extrapolated to the whole trace: push time scales with the work
``sum(elements * alive queries)`` of the pushes (the per-element cost of every baseline is
proportional to the alive queries), register/terminate time with their count.

``engine`` (in the defaults, at points with >= 1,000 elements per push): the user's path, the
trace as an event log (elements as a stream table, registrations and terminations as operations
at their positions) through ``Engine.process`` with the maturities written, beside the engine's
implementation (auto) replaying the trace: ``vigil.bench.engine_path``.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..errors import Unsupported
from ..workloads.threshold import ThresholdTrace, ThresholdWorkloadParams, default_resolver, generate_trace
from .common import (
    Result,
    downsample,
    make_progress,
    plot_doc,
    png_path,
    print_table,
    result_doc,
    sample_fields,
    write_json,
)


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    mode: str
    sweep: tuple[str, tuple[float, ...]] | None = None  # (parameter, values at scale 1)
    base: dict[str, Any] = field(default_factory=dict)  # ThresholdWorkloadParams at scale 1
    default_scale: float = 0.1
    paper: str = ""  # what the paper reports (figures are missing from our copy; text only)


_P1 = ("DT took a fraction of a millisecond per operation and beat all competitors 'by a factor over "
       "two' in 1D and 'one order of magnitude' in 2D; all other methods needed nearly 1 ms per operation "
       "(3.7 GHz CPU)")
PRESETS: dict[str, Preset] = {
    "fig3": Preset("fig3", "Fig. 3: cost per operation over time (static, m=1M, tau=20M)", "static",
                   paper=_P1),
    "fig4": Preset("fig4", "Fig. 4: total time vs m (static, tau=20M)", "static",
                   sweep=("m", (100_000, 250_000, 500_000, 1_000_000, 2_000_000)),
                   paper="DT scaled much better than the other approaches; its advantage grows with m"),
    "fig5": Preset("fig5", "Fig. 5: total time vs tau (static, m=1M)", "static",
                   sweep=("tau", (5_000_000, 10_000_000, 20_000_000, 40_000_000, 80_000_000)),
                   paper="DT scaled much better; its advantage grows with tau"),
    "fig6": Preset("fig6", "Fig. 6: cost per operation over time (stochastic, p_ins=0.3)", "stochastic",
                   base={"p_ins": 0.3}, paper="trends and relative performance as in Fig. 3"),
    "fig7": Preset("fig7", "Fig. 7: total time vs p_ins (stochastic)", "stochastic",
                   sweep=("p_ins", (0.1, 0.2, 0.3, 0.4, 0.5)),
                   paper="running time grows with p_ins for every method; DT fastest; R-tree suffers from updates"),
    "fig8": Preset("fig8", "Fig. 8: cost per operation over time (fixed load)", "fixed",
                   paper="significant speedup of DT; R-tree worse even than Baseline (update cost on heavily "
                         "overlapping rectangles)"),
    # not in the paper: fig3's workload pushed in batches of 1 .. 1M elements (batch sizes are not scaled)
    "batch": Preset("batch", "Batch sizes: cost per operation vs elements per push (fig3 workload)", "static",
                    sweep=("batch", (1, 1000, 100_000, 1_000_000)), default_scale=0.05,
                    paper="(not in the paper) the fastest exact algorithm depends on m, the batch "
                          "size and d; auto should stay within 1.2x of the best at every point"),
}

DEFAULT_ALGOS = {1: ("dt", "dt_floor", "scan", "interval_tree", "engine"),
                 2: ("dt", "dt_floor", "scan", "seg_intv", "rtree", "engine")}
#: the batch preset: DT, the batch sweep, auto and the stabbing baselines (rtree, ~50x slower
#: than scan on this workload, only with --algos)
BATCH_ALGOS = {1: ("dt", "sweep", "auto", "scan", "interval_tree", "engine"),
               2: ("dt", "sweep", "auto", "scan", "seg_intv", "engine")}
UNBUDGETED = ("dt", "dt_floor", "auto")


def default_algos(dim: int, preset: str | None = None) -> tuple[str, ...]:
    if preset == "batch":
        return BATCH_ALGOS.get(dim, ("dt", "auto", "scan"))
    return DEFAULT_ALGOS.get(dim, ("dt", "dt_floor", "scan", "rtree"))


def make_operator(name: str, dim: int):
    """Instantiate algorithm ``name`` ("dt_floor" = DT's counter-maintenance pass alone)."""
    if name in ("dt", "dt_floor"):
        from ..threshold.dt import DT  # may not exist yet: the caller reports the ImportError

        return DT(dim, floor_only=True) if name == "dt_floor" else DT(dim)
    from ..registry import resolve

    return resolve("threshold", name)(dim)


def warm_up(name: str, dim: int) -> None:
    """Compile (or load from the numba cache) the kernels of ``name`` outside any timed region: a
    throwaway instance sees registrations (one large batch, then small ones), pushes that
    mature queries, and terminations. ``auto`` warms every algorithm it may switch to (a
    switch mid-run must not pay a kernel load that the single algorithms paid untimed)."""
    if name == "auto":
        from ..threshold.auto import choices

        for a in choices(dim):
            warm_up(a, dim)
    op = make_operator(name, dim)
    rng = np.random.default_rng(0)
    k = 200
    lo = rng.integers(0, 60, (k, dim)).astype(np.float64)
    op.register(np.arange(k, dtype=np.int64), lo, lo + 40, np.full(k, 5, np.int64))
    for j in range(3):
        lo = rng.integers(0, 60, (5, dim)).astype(np.float64)
        op.register(np.arange(k + 5 * j, k + 5 * j + 5, dtype=np.int64), lo, lo + 40,
                    np.full(5, 10**6, np.int64))
    for _ in range(2):
        op.push(rng.integers(0, 100, (600, dim)).astype(np.float64), rng.integers(1, 3, 600).astype(np.int64))
        op.terminate(np.arange(0, k + 15, 3, dtype=np.int64))


def run_on_trace(op, trace: ThresholdTrace, *, budget: float | None = None, verify: bool = True,
                 progress=None, task=None) -> tuple[float, int, dict[str, Any]]:
    """Replay ``trace`` through ``op``, timing only the operator calls. Returns (seconds,
    operations, extra); with a budget the run may stop early (after at least one push) and its
    cost is extrapolated (see ``summarize``)."""
    times: list[float] = []
    mismatches = 0
    done_ops = 0
    cum = 0.0
    has_push = False
    perf = time.process_time  # CPU seconds: the machine is shared, wall time is noisy
    wall = 0.0  # wall seconds of the same calls (beside the CPU seconds)
    nsteps = len(trace.steps)
    for i, s in enumerate(trace.steps):
        w0 = time.perf_counter()
        kind = s[0]
        if kind == "push":
            t0 = perf()
            q, o = op.push(s[1], s[2])
            dt = perf() - t0
            has_push = True
            if verify:
                rq, ro = trace.outputs[i]
                if not (np.array_equal(np.asarray(q), rq) and np.array_equal(np.asarray(o), ro)):
                    mismatches += 1
        elif kind == "register":
            t0 = perf()
            op.register(s[1], s[2], s[3], s[4])
            dt = perf() - t0
        else:
            t0 = perf()
            op.terminate(s[1])
            dt = perf() - t0
        wall += time.perf_counter() - w0
        times.append(dt)
        cum += dt
        done_ops += trace.step_ops(i)
        if progress is not None and task is not None:
            progress.update(task, completed=done_ops)
        if budget is not None and cum > budget and has_push and i < nsteps - 1:
            break
    secs, ops, extra = summarize(trace, times, mismatches if verify else None)
    extra["wall_seconds"] = wall * secs / cum if cum > 0 else wall  # extrapolated as the CPU seconds
    return secs, ops, extra


def _engine_operator(trace: ThresholdTrace, dim: int):
    """The engine's threshold implementation replaying ``trace`` (operator calls timed): the
    operator path beside the engine column. Returns a callable -> (CPU s, outputs verified)."""
    from ..registry import DEFAULTS

    def operator() -> tuple[float, bool]:
        warm_up(DEFAULTS["threshold"], dim)
        gc.collect()
        secs, _, extra = run_on_trace(make_operator(DEFAULTS["threshold"], dim), trace)
        return secs, extra["verified"] is True

    return operator


def summarize(trace: ThresholdTrace, times: Sequence[float], mismatches: int | None
              ) -> tuple[float, int, dict[str, Any]]:
    """Cost of a run whose step i took ``times[i]`` seconds (``len(times) < len(steps)``: a
    prefix). A prefix is extrapolated: push time x (total / measured work), work = sum over pushes
    of elements x (alive queries + 1); register/terminate time x (total / measured count)."""
    steps = trace.steps
    last = len(times)
    ops_of = [trace.step_ops(i) for i in range(len(steps))]
    total_ops = int(sum(ops_of))
    push_t = other_t = 0.0
    done_work = total_work = 0.0
    done_other = total_other = done_ops = elements = 0
    cum = 0.0
    xs: list[int] = []
    ys: list[float] = []
    for i, s in enumerate(steps):
        push = s[0] == "push"
        work = s[2].shape[0] * (trace.alive_before[i] + 1) if push else 0
        total_work += work
        total_other += 0 if push else ops_of[i]
        if i >= last:
            continue
        cum += times[i]
        done_ops += ops_of[i]
        if push:
            push_t += times[i]
            done_work += work
            elements += s[2].shape[0]
            xs.append(elements)
            ys.append(cum / done_ops * 1e6)
        else:
            other_t += times[i]
            done_other += ops_of[i]
    cx, cy = downsample(xs, ys)
    extra: dict[str, Any] = {"curve": {"x": cx, "per_op_us": cy, "xlabel": "elements received"},
                             "push_seconds": push_t, "register_terminate_seconds": other_t,
                             "verified": "skipped" if mismatches is None else mismatches == 0}
    if mismatches:
        extra["mismatched_pushes"] = mismatches
    if last < len(steps):
        est_push = push_t * (total_work / done_work) if done_work else 0.0
        est_other = other_t * (total_other / done_other) if done_other else other_t
        extra.update(prefix=done_ops, prefix_elements=elements, prefix_steps=last, measured_seconds=cum,
                     prefix_per_op_us=cum / max(done_ops, 1) * 1e6,
                     extrapolation="push time x (total/prefix elements*alive work) + "
                                   "register/terminate time x (total/prefix count)")
        return est_push + est_other, total_ops, extra
    return cum, total_ops, extra


def _median_run(runs: list[tuple[float, int, dict[str, Any]]]) -> tuple[float, int, dict[str, Any]]:
    """The median of an algorithm's repeated runs on one trace, with every run's seconds and the
    range in its extra (any run with wrong outputs marks the result unverified)."""
    order = sorted(range(len(runs)), key=lambda i: runs[i][0])
    secs, ops, extra = runs[order[(len(runs) - 1) // 2]]
    extra = dict(extra)
    extra["reps_seconds"] = [r[0] for r in runs]
    extra["range_seconds"] = [runs[order[0]][0], runs[order[-1]][0]]
    # every run follows warm_up() (an untimed throwaway instance compiles or loads the kernels)
    extra.update(sample_fields([r[0] for r in runs], [r[2].get("wall_seconds", math.nan) for r in runs], warmed=True))
    bad = [r[2] for r in runs if r[2].get("verified") is False]
    if bad:
        extra["verified"] = False
        extra["mismatched_pushes"] = max(b.get("mismatched_pushes", 0) for b in bad)
    return secs, ops, extra


def _resolver_name(resolver: str | None, run_algos: Sequence[str], dim: int) -> str | None:
    """The exact algorithm that generates the trace: --resolver, else dt when it runs here, else
    the stabbing baseline of the dimension, else None (``default_resolver``)."""
    if resolver:
        return resolver
    for a in ("dt", "interval_tree" if dim == 1 else "seg_intv", "scan"):
        if a in run_algos:
            return a
    return None


def _point_params(preset: Preset, dim: int, scale: float, batch: int, seed: int,
                  point: dict[str, float]) -> ThresholdWorkloadParams:
    p = ThresholdWorkloadParams(dim=dim, mode=preset.mode, batch=batch, seed=seed, **preset.base)
    for k, v in point.items():  # sweep values are given at scale 1
        p = replace(p, **{k: type(getattr(p, k))(v)})
    return p.scaled(scale)


def run_preset(preset: str, *, scale: float | None = None, algos: Sequence[str] | None = None, dim: int = 1,
               out: str | Path | None = None, budget: float | None = 20.0, batch: int = 1000, seed: int = 0,
               resolver: str | None = None, points: Sequence[float] | None = None,
               console: Console | None = None, progress: bool = True, plot: bool = True, reps: int = 3
               ) -> dict[str, Any]:
    """Run ``preset`` and return the result document; with ``out`` write it (JSON) and a PNG
    beside it. ``points`` overrides the sweep values (at scale 1). Every algorithm replays the
    point's trace ``reps`` times, the algorithms interleaved; the median run (CPU seconds) is
    reported with the range."""
    if preset not in PRESETS:
        raise KeyError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    pre = PRESETS[preset]
    scale = pre.default_scale if scale is None else float(scale)
    algos = list(algos) if algos else list(default_algos(dim, preset))
    engine = "engine" in algos  # the user's path (vigil.bench.engine_path), at points of >= 1,000 rows per batch
    algos = [a for a in algos if a != "engine"]
    console = console or Console()
    if budget is not None and budget <= 0:
        budget = None
    # instantiate once to find the algorithms that cannot run here (missing DT, unsupported dim)
    skipped: dict[str, str] = {}
    for a in algos:
        try:
            make_operator(a, dim)
        except (ImportError, Unsupported, KeyError, TypeError, ValueError) as e:
            skipped[a] = f"{type(e).__name__}: {e}"
            console.print(f"[yellow]skipping {a}: {skipped[a]}[/yellow]")
    run_algos = [a for a in algos if a not in skipped]
    sweep_vals = list(points) if points is not None else (list(pre.sweep[1]) if pre.sweep else [None])
    results: list[Result] = []
    point_info = []
    failed: dict[str, str] = {}

    def fail(a: str, label: str, e: BaseException) -> None:
        failed[f"{a}@{label}" if label else a] = f"{type(e).__name__}: {e}"[:500]
        console.print(f"[red]{a} failed{' at ' + label if label else ''}: {type(e).__name__}: "
                      f"{str(e)[:300]}[/red]")

    with make_progress(console, enabled=progress) as prog:
        for val in sweep_vals:
            point = {pre.sweep[0]: val} if pre.sweep and val is not None else {}
            wp = _point_params(pre, dim, scale, batch, seed, point)
            label = ", ".join(f"{k}={v:g}" for k, v in point.items())
            trace = None
            while trace is None:  # a resolver that fails is dropped and the next one is tried
                res_name = _resolver_name(resolver, run_algos, dim)
                task = prog.add_task(f"trace {label} ({res_name or 'default'})", total=wp.stream_length)
                t0 = time.perf_counter()
                try:
                    if res_name:
                        warm_up(res_name, dim)
                    res_op = make_operator(res_name, dim) if res_name else default_resolver(dim)
                    trace = generate_trace(wp, res_op,
                                           on_step=lambda t, task=task: prog.update(task, completed=t))
                except Exception as e:  # noqa: BLE001 - a broken algorithm must not end the benchmark
                    if res_name is None:
                        raise
                    fail(res_name, label, e)
                    if res_name in run_algos:
                        run_algos.remove(res_name)
                    resolver = None
                finally:
                    prog.remove_task(task)
                res_op = None
            gen_s = time.perf_counter() - t0
            stats = trace.stats()
            point_info.append({"point": point, "workload": wp.as_dict(), "trace": stats,
                               "resolver": res_name or trace.resolver, "generation_seconds": gen_s})
            runs: dict[str, list[tuple[float, int, dict[str, Any]]]] = {}
            for rep in range(reps):  # the algorithms interleaved, each run once per repetition
                for a in list(run_algos):
                    gc.collect()
                    task = prog.add_task(f"{a} {label} (run {rep + 1}/{reps})", total=stats["operations"])
                    try:
                        warm_up(a, dim)
                        op = make_operator(a, dim)
                        run = run_on_trace(op, trace, budget=None if a in UNBUDGETED else budget,
                                           verify=a != "dt_floor", progress=prog, task=task)
                    except Exception as e:  # noqa: BLE001
                        fail(a, label, e)
                        run_algos.remove(a)
                        runs.pop(a, None)
                        continue
                    finally:
                        prog.remove_task(task)
                        op = None
                    runs.setdefault(a, []).append(run)
            for a in run_algos:
                if a not in runs:
                    continue
                secs, ops, extra = _median_run(runs[a])
                if point:
                    extra["point"] = point
                    extra.pop("curve", None)
                results.append(Result(a, secs, ops, extra=extra))
                if extra.get("verified") is False:
                    console.print(f"[red]{a}: outputs differ from the trace ({trace.resolver}) "
                                  f"on {extra['mismatched_pushes']} pushes[/red]")
            if engine and wp.batch >= 1000:
                from .engine_path import threshold_column

                results.append(threshold_column(trace, wp.batch, dim, point, _engine_operator(trace, dim), console))
            del trace
    params = {
        "dim": dim, "scale": scale, "mode": pre.mode, "title": pre.title, "algos": algos, "budget_s": budget,
        "batch": batch, "seed": seed, "reps": reps, "clock": "cpu (time.process_time)", "sweep": {"name": pre.sweep[0], "values": sweep_vals} if pre.sweep else None,
        "points": point_info, "skipped": skipped, "failed": failed, "paper": pre.paper,
    }
    doc = result_doc("threshold", preset, params, results)
    ref = "dt" if any(r.algo == "dt" for r in results) else (results[0].algo if results else "dt")
    print_table(doc, reference=ref, console=console)
    if engine:
        from .engine_path import engine_table

        console.print(engine_table(doc))
    for line in summary_lines(doc):
        console.print(line)
    if out is not None:
        path = write_json(out, doc)
        console.print(f"wrote {path}")
        if plot:
            png = plot_result(doc, png_path(out))
            console.print(f"wrote {png}")
    return doc


def plot_result(doc: dict[str, Any], path: str | Path) -> Path:
    """The PNG of a threshold result document (also to re-render one from its JSON)."""
    prm = doc["params"]
    pre = PRESETS[doc["preset"]]
    if doc["preset"] == "batch":
        return _plot_batch(doc, path)
    scale = prm["scale"]
    run = f"d={prm['dim']}, scale={scale:g}"
    if not pre.sweep and prm.get("points"):
        w = prm["points"][0]["workload"]
        run += f": m={w['m']:,}, tau={w['tau']:,}"
    xlabel = None
    if pre.sweep and pre.sweep[0] in ("m", "tau") and scale != 1.0:
        xlabel = f"{pre.sweep[0]} (paper value; this run used {pre.sweep[0]} x {scale:g})"
    return plot_doc(doc, path, title=f"{pre.title}\nthis run: {run}", xlabel=xlabel)


def _plot_batch(doc: dict[str, Any], path: str | Path) -> Path:
    """us/op against elements per push (log-log), one line per algorithm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .common import _style

    prm = doc["params"]
    w = prm["points"][0]["workload"] if prm.get("points") else {}
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=80)
    by: dict[str, list] = {}
    for r in doc["results"]:
        b = (r["extra"].get("point") or {}).get("batch")
        if b is not None:
            by.setdefault(r["algo"], []).append((b, r["per_op_us"], "prefix" in r["extra"]))
    for i, (algo, pts) in enumerate(by.items()):
        pts.sort()
        color, marker = _style(algo, i)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, label=algo,
                linewidth=2.5 if algo == "auto" else 1.2)
        for p in pts:
            if p[2]:
                ax.plot([p[0]], [p[1]], marker=marker, color="white", markeredgecolor=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements per push (batch size)")
    ax.set_ylabel("cost per operation (us)")
    ax.set_title(f"{doc['params']['title']}\nd={prm['dim']}, m={w.get('m', 0):,}, tau={w.get('tau', 0):,} "
                 f"(hollow = prefix, extrapolated)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """Per point: DT us/op, dt_floor us/op, and the best baseline's cost relative to DT."""
    by_point: dict[tuple, dict[str, dict]] = {}
    for r in doc["results"]:
        key = tuple(sorted((r["extra"].get("point") or {}).items()))
        by_point.setdefault(key, {})[r["algo"]] = r
    lines = []
    for key, rs in by_point.items():
        dt = rs.get("dt")
        base = {a: r for a, r in rs.items() if a not in ("dt", "dt_floor", "auto", "sweep", "engine")}
        if dt is None or not base:
            continue
        best = min(base.values(), key=lambda r: r["per_op_us"])
        label = ", ".join(f"{k}={v:g}" for k, v in key) or "run"
        floor = rs.get("dt_floor")
        fl = f", dt_floor {floor['per_op_us']:.3g} us/op" if floor else ""
        lines.append(f"{label}: dt {dt['per_op_us']:.3g} us/op{fl}; best baseline {best['algo']} "
                     f"{best['per_op_us']:.3g} us/op = {best['per_op_us'] / dt['per_op_us']:.3g}x dt")
    return lines


def markdown_table(doc: dict[str, Any]) -> str:
    """A markdown table of a result document: one row per point, us/op per algorithm (``*`` =
    extrapolated from a prefix), and best baseline / dt and dt / dt_floor."""
    algos: list[str] = []
    rows: dict[tuple, dict[str, dict]] = {}
    for r in doc["results"]:
        if r["algo"] not in algos:
            algos.append(r["algo"])
        rows.setdefault(tuple(sorted((r["extra"].get("point") or {}).items())), {})[r["algo"]] = r
    has_auto = "auto" in algos
    head = ["point", *[f"{a} us/op" for a in algos], "best baseline / dt", "dt / dt_floor"]
    if has_auto:
        head.append("auto / best other")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, rs in rows.items():
        cells = [", ".join(f"{k}={v:g}" for k, v in key) or "-"]
        for a in algos:
            r = rs.get(a)
            cells.append("-" if r is None else f"{r['per_op_us']:.3g}" + ("*" if "prefix" in r["extra"] else ""))
        dt, fl = rs.get("dt"), rs.get("dt_floor")
        base = [r for a, r in rs.items() if a not in ("dt", "dt_floor", "auto", "sweep", "engine")]
        if dt and base:
            best = min(base, key=lambda r: r["per_op_us"])
            cells.append(f"{best['per_op_us'] / dt['per_op_us']:.3g} ({best['algo']})")
        else:
            cells.append("-")
        cells.append(f"{dt['per_op_us'] / fl['per_op_us']:.3g}" if dt and fl else "-")
        if has_auto:
            au = rs.get("auto")
            others = [r for a, r in rs.items() if a not in ("auto", "dt_floor", "engine")]
            if au and others:
                best = min(others, key=lambda r: r["per_op_us"])
                cells.append(f"{au['per_op_us'] / best['per_op_us']:.3g} ({best['algo']})")
            else:
                cells.append("-")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# auto's cost model (vigil bench threshold --fit)
# --------------------------------------------------------------------------------------------
