"""``vigil bench quantiles --preset sliding|registered``: quantile queries on the user's path.

* sliding — 1,000 quantile queries (phi uniform in (0, 1], epsilon 0.01) over 10,000-row windows
  at summary epsilon 0.01, on 200,000*F uniform elements (``--scale F``, default 1): notify queries
  (update events) and plain ones looked up all together every 1,000 rows. Each through the
  engine (``engine/...``: :class:`vigil.engine.Engine` over 10,000-row batches, outputs written to
  Parquet as ``vigil replay`` writes them) and through the operator alone (``operator/...``:
  :class:`vigil.quantiles.sliding.Sliding`'s push and lookup). Beside them the structure that
  served rows windows before (:mod:`.sliding_baseline`, per-evaluation merge of every bucket) and
  the current one on the baseline's affordable workload: 10 notify queries over a 1,000-row
  window, 3,000 elements (``baseline/...`` and ``current/...``).
* registered — 500 quantile queries (phi uniform, epsilon 0.01, summary epsilon 0.005) over
  100,000*F uniform elements through the engine, registered all at position 0 (``one/...``) or at
  500 distinct positions spread over the first half of the stream (``distinct/...``), as notify
  queries and as plain ones looked up every 10,000 rows, whole-stream and over 10,000-row windows.
  ``x one`` = distinct / one (target: <= 2).

CPU seconds (``time.process_time``); every configuration runs once untimed first (numba compiles),
then ``--repeat`` times (3), interleaved; the median is reported, with every sample and the range.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .common import Result, png_path, print_table, result_doc, sample_fields, write_json

W = 10_000
BATCH = 10_000


def engine_run(table: pa.Table, ops: list[dict], eps: float, out: Path) -> tuple[float, int]:
    """replay's path: (CPU seconds, output rows)."""
    from ..engine import Engine
    from ..events import write_outputs

    lines = [json.dumps(o) for o in ops]
    t0 = time.process_time()
    eng = Engine({}, eps, "pairs", columns=set(table.column_names))
    eng.add_operations(lines, list(range(1, len(lines) + 1)))
    parts = [eng.process(table.slice(s, BATCH)) for s in range(0, table.num_rows, BATCH)]
    parts.append(eng.finish())
    outputs = pa.concat_tables(parts)
    write_outputs(outputs, out)
    return time.process_time() - t0, outputs.num_rows


def _queries(nq: int, rows: int | None, notify: bool, seed: int, at: np.ndarray | None = None) -> list[dict]:
    phi = np.round(np.random.default_rng(seed).uniform(0.001, 1.0, nq), 3)
    ops = []
    for i in range(nq):
        q: dict[str, Any] = {"type": "quantile", "id": f"q{i}", "column": "v", "phi": float(phi[i]), "epsilon": 0.01}
        if rows:
            q["rows"] = rows
        if notify:
            q["notify"] = True
        ops.append({"op": "register", "at": 0 if at is None else int(at[i]), "query": q})
    return ops


def _lookups(nq: int, n: int, every: int, first: np.ndarray | None = None) -> list[dict]:
    return [{"op": "lookup", "at": a, "id": f"q{i}"} for a in range(every, n + 1, every) for i in range(nq)
            if first is None or first[i] < a]


def _operator_run(x: np.ndarray, nq: int, notify: bool, eps: float, cls=None, lookup_every: int = 0,
                  seed: int = 0, window: int = W) -> tuple[float, int]:
    from ..quantiles.sliding import Sliding

    phi = np.round(np.random.default_rng(seed).uniform(0.001, 1.0, nq), 3)
    seqs = np.arange(1, len(x) + 1, dtype=np.int64)
    t0 = time.process_time()
    op = (cls or Sliding)(eps, window)
    for i in range(nq):
        op.register(i, float(phi[i]), 0.01, 0, notify=notify)
    events = 0
    step = lookup_every or BATCH
    qids = np.arange(nq, dtype=np.int64)
    for p in range(0, len(x), step):
        events += len(op.push(x[p:p + step], seqs[p:p + step])[0])
        if lookup_every:
            events += len(op.lookup(qids, int(seqs[min(p + step, len(x)) - 1])))
    return time.process_time() - t0, events


def _repeat(configs: dict[str, Callable[[], tuple[float, int]]], repeat: int) -> dict[str, list[tuple[float, int]]]:
    for f in configs.values():  # untimed: numba compiles, caches fill
        f()
    runs: dict[str, list[tuple[float, int]]] = {k: [] for k in configs}
    for _ in range(repeat):
        for k, f in configs.items():
            runs[k].append(f())
    return runs


def _result(label: str, runs: list[tuple[float, int]], n: int, **extra) -> Result:
    """The median of the interleaved repetitions (CPU seconds), with every sample and the range."""
    secs = [r[0] for r in runs]
    med = float(np.median(secs))
    return Result(label, med, n, extra={"elements_per_s": n / med, "seconds_range": [min(secs), max(secs)],
                                        "events": runs[0][1], **sample_fields(secs, warmed=True), **extra})


def run_sliding(scale: float, repeat: int, seed: int, tmp: Path) -> tuple[list[Result], dict]:
    from .sliding_baseline import OldSliding

    n = max(2 * W, int(200_000 * scale))
    x = np.random.default_rng(seed).random(n)
    table = pa.table({"v": x})
    nq, eps = 1000, 0.01
    notify_ops = _queries(nq, W, True, seed)
    lookup_ops = _queries(nq, W, False, seed) + _lookups(nq, n, 1000)
    nb = 3000
    configs = {
        "engine/notify": lambda: engine_run(table, notify_ops, eps, tmp / "n.parquet"),
        "operator/notify": lambda: _operator_run(x, nq, True, eps, seed=seed),
        "engine/lookup": lambda: engine_run(table, lookup_ops, eps, tmp / "l.parquet"),
        "operator/lookup": lambda: _operator_run(x, nq, False, eps, lookup_every=1000, seed=seed),
        "baseline/notify10": lambda: _operator_run(x[:nb], 10, True, eps, cls=OldSliding, seed=seed, window=1000),
        "current/notify10": lambda: _operator_run(x[:nb], 10, True, eps, seed=seed, window=1000),
    }
    runs = _repeat(configs, repeat)
    res = []
    for k, r in runs.items():
        m = nb if k.endswith("notify10") else n
        small = k.endswith("notify10")
        res.append(_result(k, r, m, queries=10 if small else nq, window=1000 if small else W, eps=eps))
    by = {r.algo: r for r in res}
    for mode in ("notify", "lookup"):
        by[f"engine/{mode}"].extra["engine_over_operator"] = by[f"engine/{mode}"].seconds / by[f"operator/{mode}"].seconds
    by["current/notify10"].extra["x_faster_than_baseline"] = by["baseline/notify10"].seconds / by["current/notify10"].seconds
    return res, {"elements": n, "queries": nq, "window": W, "eps": eps, "lookup_every": 1000, "baseline_elements": nb}


def run_registered(scale: float, repeat: int, seed: int, tmp: Path) -> tuple[list[Result], dict]:
    n = max(20_000, int(100_000 * scale))
    nq, eps = 500, 0.005
    table = pa.table({"v": np.random.default_rng(seed).random(n)})
    spread = np.linspace(0, n // 2, nq).astype(np.int64)
    configs = {}
    for rows in (None, W):
        for notify in (True, False):
            for where, at in (("one", None), ("distinct", spread)):
                ops = _queries(nq, rows, notify, seed, at)
                if not notify:
                    ops += _lookups(nq, n, 10_000, at)
                    ops.sort(key=lambda o: o["at"])
                label = f"{where}/{'rows' if rows else 'whole'}/{'notify' if notify else 'lookup'}"
                configs[label] = (lambda o=ops, lab=label: engine_run(table, o, eps, tmp / f"{lab.replace('/', '_')}.parquet"))
    runs = _repeat(configs, repeat)
    res = [_result(k, r, n, queries=nq) for k, r in runs.items()]
    by = {r.algo: r for r in res}
    for r in res:
        if r.algo.startswith("distinct/"):
            r.extra["x_one"] = r.seconds / by["one/" + r.algo.split("/", 1)[1]].seconds
    return res, {"elements": n, "queries": nq, "eps": eps, "positions": "0..n/2, 500 distinct", "lookup_every": 10_000}


def _plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    fig, ax = plt.subplots(figsize=(7.2, 4.2), dpi=80)
    ax.barh([r["algo"] for r in res], [r["extra"]["elements_per_s"] for r in res], color="C0")
    ax.set_xscale("log")
    ax.set_xlabel("elements per CPU second")
    ax.invert_yaxis()
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.set_title(f"quantiles / {doc['preset']}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def run_user_preset(preset: str, scale: float | None, out: str | Path, seed: int = 0, repeat: int = 3) -> dict:
    f = 1.0 if scale is None else float(scale)
    with tempfile.TemporaryDirectory() as d:
        fn = run_sliding if preset == "sliding" else run_registered
        results, params = fn(f, repeat, seed, Path(d))
    params.update(scale=f, repeat=repeat)
    doc = result_doc("quantiles", preset, params, results)
    p = write_json(out, doc)
    print_table(doc, reference=results[0].algo)
    for r in results:
        ex = r.extra
        extra = {k: round(v, 3) for k, v in ex.items() if k in ("engine_over_operator", "x_faster_than_baseline", "x_one")}
        print(f"{r.algo:28s} {ex['elements_per_s']:>14,.0f} el/s  {r.seconds:8.3f} s  events {ex['events']:>9,}  {extra or ''}")
    try:
        _plot(doc, png_path(out))
    except Exception as e:  # noqa: BLE001 - a plot must not lose the results
        print(f"plot skipped: {e}")
    print(f"wrote {p}")
    return doc
