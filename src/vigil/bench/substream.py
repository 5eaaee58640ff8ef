"""Substream-filter benchmark: paper 002 §6.3, Fig. 12 ("Performance of CI-COUNT for various values
of p. The naive approach processes 1000 inputs/second"; CI-COUNT with a well-chosen p about
25,000 inputs/second, 700 MHz Pentium III).

========  =====================================================================================
fig12     one trading day, ~5,000 Zipf symbols (:mod:`vigil.workloads.substream`), 100 COUNT
          queries (v, inf) with suffix windows of 15 min .. 3 h and 3-5% selectivity; after a
          3-hour warm-up (pushed untimed, so that every window is full), updates and lookups
          alternate in batches of ``batch`` elements then ``batch`` lookups of random queries at
          the same position. Algorithms: ``ci`` (CI-COUNT + exact post-filter) for p in
          1, 2, 4, 8, 16; ``naive`` (exact per-key R-INT style counts, every key per lookup: the
          paper's baseline); ``naive_probe`` (every key per lookup, but "count > v" decided by one
          probe of the key's (v+1)-th last element, as CI's post-filter: a stronger per-key peer);
          ``duckdb`` (each lookup batch recomputed in SQL: GROUP BY key HAVING count(*) > v over
          the rows of the window, the whole day's rows registered once as an Arrow table); ``engine``
          (the user's path: the same trades, queries and lookups as an event log through
          ``Engine.process``, outputs written, beside the same CI called directly; at batch
          1,000 over a prefix: ``vigil.bench.engine_path.FIG12_ENGINE``).
========  =====================================================================================

An *input* (operation) is one update or one lookup, as in the paper. Every algorithm replays the
same trace; algorithms other than ci stop after a time budget (wall clock) and are extrapolated
linearly in the number of inputs (``extra.prefix``: inputs measured). Times are the process's CPU
seconds (``time.process_time``; DuckDB runs on one thread) because the machine is shared: wall
clock is kept in ``extra.wall_seconds``. The answers of the first lookups are
compared across algorithms (``extra.verified``). ``extra.selectivity`` is the measured mean
fraction of symbols reported; ``extra.checked_per_lookup`` the exact per-key lookups CI needed.
"""

from __future__ import annotations

import functools
import gc
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ..specs import SubstreamFilterSpec
from ..windows.ci import CI
from ..windows.substream_naive import SubstreamNaive
from ..workloads.substream import DAY_OPEN, ssf_queries, trade_day
from .common import (
    Result,
    Timed,
    make_progress,
    measure_interleaved,
    png_path,
    range_note,
    result_doc,
    write_json,
)


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    trades: int  # trades in the day at scale 1
    n_symbols: int = 5000
    n_queries: int = 100
    warmup: float = 3 * 3600.0
    p_values: tuple[int, ...] = (1, 2, 4, 8, 16)
    batches: tuple[int, ...] = (1, 10, 100, 1000)
    default_scale: float = 0.5
    budget: float = 15.0  # seconds per baseline run at scale 1 (scaled with scale, >= 3)
    paper: str = ""


PRESETS: dict[str, Preset] = {
    "fig12": Preset("fig12", "Fig. 12: CI-COUNT + post-filter vs naive per-key, p swept", trades=1_000_000,
                    paper="naive ~1,000 inputs/s; CI-COUNT with a good p ~25,000 inputs/s (25x); 700 MHz PIII"),
}
DEFAULT_ALGOS = ("ci", "naive", "naive_probe", "duckdb", "engine")
VERIFY = 300  # lookups whose answers are compared across algorithms
WARM_SCALE = 0.01  # the warm-up trace: 10,000 trades of the same day
WARM_BUDGET = 2.0  # wall seconds of a budgeted algorithm's warm-up run (ci: the whole small trace)


@dataclass
class Trace:
    times: np.ndarray
    keys: np.ndarray
    seqs: np.ndarray
    warm: int  # elements pushed before the timed phase
    T: np.ndarray
    v: np.ndarray
    picks: np.ndarray  # query index of each lookup of the timed phase (one per timed update)
    n_symbols: int


def build_trace(preset: Preset, scale: float, seed: int) -> Trace:
    n = max(1000, int(round(preset.trades * scale)))
    day = trade_day(n, preset.n_symbols, seed=seed)
    qs = ssf_queries(day, preset.n_queries, seed=seed + 1)
    warm = int(np.searchsorted(day.times, DAY_OPEN + preset.warmup))
    picks = np.random.default_rng(seed + 2).integers(0, preset.n_queries, n - warm)
    return Trace(day.times, day.keys, np.arange(1, n + 1, dtype=np.int64), warm, qs.T, qs.v, picks, preset.n_symbols)


def _specs(tr: Trace) -> list[SubstreamFilterSpec]:
    return [SubstreamFilterSpec(type="substream_filter", id=f"q{i}", agg="count", key="symbol", time=float(T),
                                range=[float(v), None]) for i, (T, v) in enumerate(zip(tr.T, tr.v, strict=True))]


def _run_operator(op, tr: Trace, batch: int, budget: float) -> tuple[float, int, list[frozenset], int]:
    """Replay the trace through ``op``; returns (timed seconds, inputs timed, first answers,
    reported keys in total)."""
    for i, sp in enumerate(_specs(tr)):
        op.register(i, sp, 0)
    ones = np.ones(len(tr.keys))
    for a in range(0, tr.warm, 200_000):
        b = min(tr.warm, a + 200_000)
        op.push(ones[a:b], tr.times[a:b], tr.keys[a:b], tr.seqs[a:b])
    if tr.warm:  # a lookup changes nothing: its first call (numba compiles it) is not timed
        op.lookup(tr.picks[:1], tr.warm, float(tr.times[tr.warm - 1]))
    answers: list[frozenset] = []
    reported = 0
    n = len(tr.keys)
    done = 0
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        c0 = time.process_time()
        for a in range(tr.warm, n, batch):
            b = min(n, a + batch)
            op.push(ones[a:b], tr.times[a:b], tr.keys[a:b], tr.seqs[a:b])
            res = op.lookup(tr.picks[a - tr.warm: b - tr.warm], b, float(tr.times[b - 1]))
            done += 2 * (b - a)
            if len(answers) < VERIFY:
                answers.extend(frozenset(r.tolist()) for r in res)
            reported += sum(len(r) for r in res)
            if time.perf_counter() - t0 > budget:
                break
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
    finally:
        gc.enable()
    return cpu, wall, done, answers[:VERIFY], reported


def _run_duckdb(tr: Trace, batch: int, budget: float) -> tuple[float, int, list[frozenset], int]:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.execute("SET threads TO 1")  # one core, as every other algorithm here
    con.register("trades", pa.table({"seq": tr.seqs, "ts": tr.times, "sym": tr.keys}))
    sql = ("SELECT q.i, t.sym FROM trades t JOIN qb q ON t.ts > q.t0 WHERE t.seq <= ? "
           "GROUP BY q.i, t.sym, q.v HAVING count(*) > q.v")
    answers: list[frozenset] = []
    reported = 0
    done = 0
    n = len(tr.keys)
    t0 = time.perf_counter()
    c0 = time.process_time()
    for a in range(tr.warm, n, batch):
        b = min(n, a + batch)
        picks = tr.picks[a - tr.warm: b - tr.warm]
        t_now = float(tr.times[b - 1])
        qb = pa.table({"i": np.arange(len(picks)), "t0": t_now - tr.T[picks], "v": tr.v[picks]})
        con.register("qb", qb)
        rows = con.execute(sql, [b]).fetchnumpy()
        con.unregister("qb")
        done += 2 * (b - a)
        res: list[set] = [set() for _ in picks]
        for i, s in zip(rows["i"].tolist(), rows["sym"].tolist(), strict=True):
            res[i].add(s)
        if len(answers) < VERIFY:
            answers.extend(frozenset(r) for r in res)
        reported += sum(len(r) for r in res)
        if time.perf_counter() - t0 > budget:
            break
    return time.process_time() - c0, time.perf_counter() - t0, done, answers[:VERIFY], reported


def verified(runs: list[list[frozenset]], reference: list[frozenset]) -> bool:
    """Every run's first answers equal the reference's, as far as both go (a run cut by the
    budget answered fewer lookups, each repetition maybe a different number)."""
    return all(a[:m] == reference[:m] for a in runs for m in [min(len(a), len(reference))])


def _run_name(algo: str, p: int | None) -> str:
    return f"{algo} p={p}" if p else algo


def _sample(algo: str, p: int | None, tr: Trace, batch: int, budget: float) -> Timed:
    """One timed run of ``algo`` (a fresh operator) over ``tr``: :class:`.common.Timed` with the
    value (inputs done, first answers, keys reported, exact per-key checks of CI or None)."""
    if algo == "duckdb":
        cpu, wall, done, ans, reported = _run_duckdb(tr, batch, budget)
        return Timed(cpu, wall, (done, ans, reported, None))
    op = CI("count", p) if algo == "ci" else SubstreamNaive("count", probe=algo == "naive_probe")
    cpu, wall, done, ans, reported = _run_operator(op, tr, batch, budget)
    return Timed(cpu, wall, (done, ans, reported, op.checked if algo == "ci" else None))


def run_preset(preset: str, scale: float | None, algos: list[str] | None, out: Path, seed: int = 0,
               progress: bool = True, repeat: int = 3) -> dict[str, Any]:
    """Run preset ``fig12`` (see the module docstring); writes ``out`` (JSON) and a PNG beside it,
    prints the table, returns the result document."""
    if preset not in PRESETS:
        raise KeyError(f"unknown substream preset {preset!r}; expected one of {sorted(PRESETS)}")
    pr = PRESETS[preset]
    scale = pr.default_scale if scale is None else float(scale)
    algos = list(algos or DEFAULT_ALGOS)
    for a in algos:
        if a not in DEFAULT_ALGOS:
            raise KeyError(f"unknown algorithm {a!r} for {preset}; expected some of {list(DEFAULT_ALGOS)}")
    tr = build_trace(pr, scale, seed)
    budget = max(3.0, pr.budget * scale)
    total = 2 * (len(tr.keys) - tr.warm)
    runs: list[tuple[str, int, int | None]] = []
    for b in pr.batches:
        for a in algos:
            if a == "engine":
                continue
            if a == "ci":
                runs.extend(("ci", b, p) for p in pr.p_values)
            else:
                runs.append((a, b, None))
    # warm-up (untimed): every run once on a small trace of the same day (ci: all its blocks; the
    # others until WARM_BUDGET): numba compiles or loads every kernel specialization the timed runs
    # use, including those a run reaches only later (pool growth, compaction, more CI groups)
    small = build_trace(pr, min(scale, WARM_SCALE), seed)
    results: list[Result] = []
    reference: dict[int, list[frozenset]] = {}
    console = Console()
    with make_progress(console, progress) as bar:
        task = bar.add_task(f"substream {preset}", total=len(runs) * (repeat + 1))
        for b in pr.batches:
            names = {_run_name(a, p): (a, p) for a, bb, p in runs if bb == b}
            timed = {n: functools.partial(_sample, a, p, tr, b, math.inf if a == "ci" else budget / repeat)
                     for n, (a, p) in names.items()}
            warm = {n: functools.partial(_sample, a, p, small, b, math.inf if a == "ci" else WARM_BUDGET)
                    for n, (a, p) in names.items()}

            def step(name: str, rep: int, b: int = b) -> None:
                bar.update(task, description=f"{name} batch={b} (run {rep + 1}/{repeat})")
                bar.advance(task)

            samples = measure_interleaved(timed, repeat, warmup=warm, on_sample=step)
            bar.advance(task, len(names))
            for n, (algo, p) in names.items():
                s = samples[n]
                ext = [total / v[0] for v in s.values]  # a run cut by the budget: extrapolated
                f = s.fields(ext)
                i = s.median_index(ext)
                done, ans, reported, checked = s.values[i]
                secs = s.cpu[i]
                lookups = done // 2
                extra: dict[str, Any] = {"point": {"batch": b, **({"p": p} if p else {})},
                                         "selectivity": reported / max(1, lookups) / tr.n_symbols,
                                         "inputs_per_s": done / secs if secs else None, "wall_seconds": s.wall[i],
                                         **f}
                if checked is not None:
                    extra["checked_per_lookup"] = checked / (done / 2)
                if b not in reference:
                    reference[b] = ans
                extra["verified"] = verified([v[1] for v in s.values], reference[b])
                if done < total:
                    extra.update(prefix=done, measured_seconds=secs,
                                 extrapolation="linear in inputs (per-input cost of the measured prefix)")
                results.append(Result(algo, f["cpu_s_median"], total, extra=extra))
    if "engine" in algos:  # the user's path: the same trace through Engine.process (vigil.bench.engine_path)
        from . import engine_path

        results += engine_path.substream_column(tr, console)
    params = {"scale": scale, "trades": len(tr.keys), "symbols": pr.n_symbols, "queries": pr.n_queries,
              "warmup_elements": tr.warm, "timed_inputs": total, "windows_s": [900, 10800],
              "selectivity_target": [0.03, 0.05], "p_values": list(pr.p_values), "batches": list(pr.batches),
              "budget_s": budget, "seed": seed, "paper": pr.paper, "repeat": repeat,
              "timing": "every run once untimed on a small trace (warm-up: numba compiles or loads its kernels), "
                        "then `repeat` runs per batch size, the algorithms interleaved; seconds = CPU of the median run, "
                        "budget (wall) split across the repetitions"}
    doc = result_doc("substream", preset, params, results)
    write_json(out, doc)
    plot(doc, png_path(out))
    Console(width=max(console.width, 150)).print(table(doc))
    if "engine" in algos:
        Console(width=max(console.width, 130)).print(engine_path.engine_table(doc))
    return doc


def table(doc: dict[str, Any]) -> Table:
    """Inputs/s per (batch, algorithm, p) and the speedup over naive at the same batch size."""
    t = Table(title=f"substream / {doc['preset']} (inputs = updates + lookups)", title_justify="left")
    for c in ("batch", "algo", "p", "seconds", "inputs/s", "x naive", "sel.", "chk/lkp", "note"):
        t.add_column(c, justify="left" if c in ("algo", "note") else "right", no_wrap=True)
    naive = {r["extra"]["point"]["batch"]: r["per_op_us"] for r in doc["results"] if r["algo"] == "naive"}
    last = None
    for r in doc["results"]:
        ex = r["extra"]
        b = ex["point"]["batch"]
        if last is not None and b != last:
            t.add_section()
        last = b
        ratio = f"{naive[b] / r['per_op_us']:.3g}" if b in naive and r["per_op_us"] else "-"
        note = []
        if "prefix" in ex:
            note.append(f"prefix {ex['prefix']:,}")
        if ex.get("verified") is False:
            note.append("MISMATCH")
        if len(ex.get("cpu_s_samples") or ()) > 1:
            note.append(range_note(ex, median=False))
        chk = ex.get("checked_per_lookup")
        t.add_row(str(b), r["algo"], str(ex["point"].get("p", "")), f"{r['seconds']:,.3g}",
                  f"{1e6 / r['per_op_us']:,.0f}", ratio, f"{ex['selectivity']:.3f}",
                  "-" if chk is None else f"{chk:.1f}", "; ".join(note))
    return t


def plot(doc: dict[str, Any], path: Path) -> Path:
    """Fig. 12's axes: inputs/s against p for CI (one line per batch size), the naive approach and
    DuckDB as horizontal lines at each batch size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=80)
    res = doc["results"]
    batches = sorted({r["extra"]["point"]["batch"] for r in res})
    ps = sorted({r["extra"]["point"]["p"] for r in res if "p" in r["extra"]["point"]})
    for i, b in enumerate(batches):
        color = f"C{i}"
        ci = sorted((r["extra"]["point"]["p"], 1e6 / r["per_op_us"]) for r in res
                    if r["algo"] == "ci" and r["extra"]["point"]["batch"] == b)
        if ci:
            ax.plot([x for x, _ in ci], [y for _, y in ci], "o-", color=color, label=f"CI-COUNT, batch {b}")
        for r in res:
            if r["algo"] != "ci" and r["extra"]["point"]["batch"] == b and ps:
                ax.hlines(1e6 / r["per_op_us"], ps[0], ps[-1], colors=color,
                          linestyles={"naive": "--", "naive_probe": "-."}.get(r["algo"], ":"),
                          label=f"{r['algo']}, batch {b}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("p (levels per size; epsilon about 2/p)")
    ax.set_ylabel("inputs (updates + lookups) per second")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"substream / {doc['preset']}: CI-COUNT + post-filter vs naive per-key", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
