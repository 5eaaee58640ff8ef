"""``vigil bench windows --preset keyed``: per-key window aggregates (issue 26's target).

10,000 keys x 10 per-key window queries: SUM and MAX over the last 200, 400, 600, 800 and 1,000
rows of each key, asked two ways over the same stream (keys uniform, ``10,000,000 x scale``
elements, default scale 0.2):

* ``engine_where``: 100,000 ``where`` queries (10 per key) through ``Engine.process``, with 10,000
  lookups of random queries spread over the stream (1,000 positions x 10);
* ``engine_group_by``: 10 ``group_by`` queries through ``Engine.process``, each looked up once
  (10 positions spread over the stream; each lookup answers one event per key);
* ``op_shared``: the operator alone (``vigil.windows.keyed.KeyedWindows``, one per aggregate):
  one structure per key, pushed once per row, and the where lookups;
* ``op_per_query``: the per-query baseline: the same operator with one window per (key, query)
  (100,000 windows, each row pushed into the 5 windows of its key per aggregate), same lookups.

Rates are elements per CPU second (``time.process_time``: the machine is shared), warm (each path
first runs once untimed on a 20,000-row prefix: kernels compiled or loaded), the median of
``repeat`` runs (default 3), the paths interleaved; every run's CPU and wall seconds are in the
JSON (``extra.cpu_s_samples``, ``cpu_s_range``, ``wall_s_samples``). Memory: the operators' array bytes after the stream
(``extra.nbytes``), and bytes per (key x largest window).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from rich.console import Console

from .common import Result, Timed, measure_interleaved, print_table, result_doc, write_json

KEYS = 10_000
WINDOWS = (200, 400, 600, 800, 1000)
AGGS = ("sum", "max")
ALGOS = ("engine_where", "engine_group_by", "op_shared", "op_per_query")


def _stream(n: int, seed: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    names = np.array([f"S{i:05d}" for i in range(KEYS)])
    k = rng.integers(0, KEYS, n)
    price = rng.integers(1, 100_000, n).astype(np.float64) / 100
    return pa.table({"symbol": pa.array(names[k]), "price": price}), k, price


def _qid(agg: str, w: int, k: int) -> str:
    return f"{agg}{w}-S{k:05d}"


def _lookups(n: int, seed: int) -> list[tuple[int, int, str, int]]:
    """(position, key, agg, window) of the where lookups: 1,000 positions x 10 random queries."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for at in np.linspace(max(1, n // 1000), n, 1000).astype(int).tolist():
        for _ in range(10):
            out.append((at, int(rng.integers(KEYS)), AGGS[int(rng.integers(2))], WINDOWS[int(rng.integers(5))]))
    return out


def _spec(agg: str, w: int, **kw) -> dict[str, Any]:
    return {"type": "window_aggregate", "agg": agg, "column": "price", "rows": [w, 0], **kw}


def _engine(mode: str, table: pa.Table, lookups, batch: int) -> tuple[float, int, int, int]:
    from ..engine import Engine

    n = table.num_rows
    eng = Engine()
    if mode == "where":
        ops = [{"op": "register", "at": 0, "query": {"id": _qid(a, w, k), **_spec(a, w, where={"symbol": f"S{k:05d}"})}}
               for k in range(KEYS) for a in AGGS for w in WINDOWS]
        ops += [{"op": "lookup", "at": at, "id": _qid(a, w, k)} for at, k, a, w in lookups]
    else:
        ops = [{"op": "register", "at": 0, "query": {"id": f"{a}{w}", **_spec(a, w, group_by="symbol")}}
               for a in AGGS for w in WINDOWS]
        ats = np.linspace(max(1, n // 10), n, 10).astype(int).tolist()
        ops += [{"op": "lookup", "at": at, "id": f"{AGGS[j % 2]}{WINDOWS[j // 2]}"} for j, at in enumerate(ats)]
    eng.add_operations(ops)
    events = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for s in range(0, n, batch):
        events += eng.process(table.slice(s, batch)).num_rows
    events += eng.finish().num_rows
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return Timed(cpu, wall, (events, sum(g.op.nbytes() for g in eng.groups.values()), len(eng.where)))


class _Spec:
    def __init__(self, w: int, agg: str) -> None:
        self.rows, self.time, self.phi, self.agg = [w, 0], None, None, agg


def _operator(per_query: bool, k: np.ndarray, price: np.ndarray, lookups, batch: int) -> Timed:
    """The keyed operators alone: shared (one window per key) or one window per (key, query)."""
    from ..windows.keyed import KeyedWindows

    n = len(k)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    ops = {a: KeyedWindows(a, False) for a in AGGS}
    nw = len(WINDOWS)
    for a, op in ops.items():
        if per_query:  # window j of key k is the "key" k * 5 + j
            op.keys(KEYS * nw)
            for key in range(KEYS):
                for j, w in enumerate(WINDOWS):
                    op.register(key * nw + j, _Spec(w, a), 0, key * nw + j)
        else:
            op.keys(KEYS)
            for key in range(KEYS):
                for j, w in enumerate(WINDOWS):
                    op.register(key * nw + j, _Spec(w, a), 0, key)
    at = np.array([x[0] for x in lookups])
    answered = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for s in range(0, n, batch):
        e = min(n, s + batch)
        for op in ops.values():
            if per_query:
                for j in range(nw):
                    op.push(price[s:e], seqs[s:e], None, k[s:e] * nw + j)
            else:
                op.push(price[s:e], seqs[s:e], None, k[s:e])
        lo, hi = np.searchsorted(at, s + 1), np.searchsorted(at, e, side="right")
        for i in range(lo, hi):  # lookups at their positions (here: at the batch's end)
            _, key, a, w = lookups[i]
            answered += len(ops[a].lookup(np.array([key * nw + WINDOWS.index(w)]), e, 0.0))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return Timed(cpu, wall, (answered, sum(op.nbytes() for op in ops.values()), KEYS * len(WINDOWS) * len(AGGS)))


def _run(algo: str, table: pa.Table, k: np.ndarray, price: np.ndarray, lookups, batch: int) -> Timed:
    if algo.startswith("engine_"):
        return _engine(algo.split("_", 1)[1], table, lookups, batch)
    return _operator(algo == "op_per_query", k, price, lookups, batch)


def run_keyed(algos, scale, batches, budget, seed, console: Console, repeat: int = 3) -> tuple[dict, list[Result]]:
    n = max(100_000, int(10_000_000 * scale))
    table, k, price = _stream(n, seed)
    lookups = _lookups(n, seed)
    # warm-up: each path once on a 20,000-row prefix (kernels compiled or loaded), then the timed runs
    warm = {a: functools.partial(_run, a, table.slice(0, 20_000), k[:20_000], price[:20_000], [], 10_000)
            for a in algos}
    results = []
    for batch in batches:
        samples = measure_interleaved({a: functools.partial(_run, a, table, k, price, lookups, batch) for a in algos},
                                      repeat, warmup=warm)
        for algo, smp in samples.items():
            f = smp.fields()
            events, nbytes, queries = smp.values[smp.median_index()]
            cpu = f["cpu_s_median"]
            held = KEYS * max(WINDOWS) * len(AGGS)
            results.append(Result(algo, cpu, n, extra={
                "point": {"batch": batch}, "rate_per_s": n / cpu if cpu > 0 else None, "cpu_seconds": cpu,
                "queries": queries, "events": events, "nbytes": nbytes,
                "bytes_per_key_window_slot": nbytes / held,
                "note": f"{n / cpu / 1e6:.2f}M el/s, {nbytes / 2**20:,.0f} MiB", **f}))
            lo, hi = f["cpu_s_range"]
            console.print(f"{algo} batch={batch}: {n / cpu:,.0f} elements/s (CPU, median of {repeat}; "
                          f"range {lo:.3g}-{hi:.3g} s), {events:,} events, {nbytes / 2**20:,.1f} MiB, {queries:,} queries")
    params = {"keys": KEYS, "windows": list(WINDOWS), "aggs": list(AGGS), "elements": n, "lookups_where": len(lookups),
              "lookups_group_by": 10, "batches": list(batches), "repeat": repeat}
    return params, results


def plot(doc: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=80)
    labels = [f"{r['algo']}\nbatch {r['extra']['point']['batch']:,}" for r in res]
    axes[0].bar(labels, [r["extra"]["rate_per_s"] for r in res], color=[f"C{i}" for i in range(len(res))])
    axes[0].axhline(1e6, color="k", linestyle="--", linewidth=1, label="target 1M elements/s")
    axes[0].set_ylabel("elements per CPU second")
    axes[0].legend(fontsize=7)
    axes[1].bar(labels, [r["extra"]["nbytes"] / 2**20 for r in res], color=[f"C{i}" for i in range(len(res))])
    axes[1].set_ylabel("operator arrays (MiB)")
    for ax in axes:
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"keyed windows: {doc['params']['keys']:,} keys x 10 queries, {doc['params']['elements']:,} elements",
                 fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def run_preset(scale: float | None = None, algos: list[str] | None = None, out: str | Path = "results/windows.json",
               batches: list[int] | None = None, seed: int = 0, title: str = "", paper: str = "",
               repeat: int = 3) -> dict:
    scale = 0.2 if scale is None else float(scale)
    algos = list(algos or ALGOS)
    console = Console()
    params, results = run_keyed(algos, scale, tuple(batches or (100_000,)), 0.0, seed, console, repeat=repeat)
    params.update(scale=scale, seed=seed, title=title, paper=paper)
    doc = result_doc("windows", "keyed", params, results)
    out = Path(out)
    write_json(out, doc)
    plot(doc, out.with_suffix(".png"))
    print_table(doc, reference="op_per_query" if "op_per_query" in algos else algos[0], console=console)
    console.print(f"wrote {out} and {out.with_suffix('.png')}")
    return doc
