"""``vigil bench joins --fit`` and the data-sensitive presets ``fig12|fig15|fig18`` (paper 003
§5.4, Figs. 12-20).

Fit (§5.4, Table II): over a grid of |Q| x |S| (100,000-500,000 each in steps of 100,000, times
``--scale``), Table I's select workload (our B domain of 100, see workloads.joins) with
arriving R tuples drawn from mixed distributions (so m', n' and n'' vary), every plan of
``dynamic`` is timed on each arriving tuple alone (``per_tuple_us``: one probe call per tuple,
minus the median time of the same call on an empty batch), with the exact m', n', n'' of the
tuple; each strategy's parameters are fitted by least squares on all its (features, time) rows
with 95% confidence intervals (:func:`vigil.joins.costs.fit`). Window joins: the same with times
(S.T = 0..|S|-1, arrivals after, windows ~ Uni(0.1, 0.2) |S|); band joins: Table I's band
workload. The JSON can be shipped (``ship``) or loaded by a run (``VIGIL_JOIN_COSTS``).

Presets (select joins, count mode = output cost excluded, one operator per point holding every
plan, so the static strategies are measured as ``dynamic`` forced to one plan: the same plan
objects on the same indexes and the same arriving tuples):

* fig12: |Q| = |S| = 100k..500k (x scale); fig15: |Q| = |S| = 500k (x scale), incoming keys
  ~ Normal(D/2, (spread D)^2) (event join rate); fig18: incoming R.A ~ Normal(500k, sigma^2)
  (event selection rate); fig9mix: fig9's clustered query set (70% of the rangeC's in hotspots,
  workloads.joins.cluster_rangec) at |Q| = 100k and 500k, |S| = 100k (x scale), arrivals from the
  fit's mixture of nine distributions (where the best plan varies from tuple to tuple).
* Per point: each static plan and ``dynamic`` push the same batches of ``batch`` tuples,
  interleaved chunk by chunk, for about ``budget`` seconds each (tuples/s); ``optimum`` (SJ-Optimum) times every plan on each of ``n_opt`` tuples and
  keeps the cheapest (its rate: tuples / sum of the per-tuple minima), with dynamic's choice
  for the same tuples: the fraction of matching decisions (Figs. 14, 17, 20) and the breakdown
  of choices (Figs. 13, 16, 19); dynamic's routing time (estimating and choosing) as a fraction
  of its run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..joins import costs as cm
from ..joins.dynamic import Dynamic
from ..workloads import joins as wl
from .common import Result, machine_info, print_table, result_doc, sample_fields, write_json

GRID = [100_000, 200_000, 300_000, 400_000, 500_000]
DYN_PRESETS: dict[str, dict[str, Any]] = {
    "fig12": {"points": [(n, n, None, None) for n in GRID], "key": "size"},
    "fig15": {"points": [(500_000, 500_000, s, None) for s in (3.0, 1.0, 0.3, 0.1, 0.03)], "key": "key_spread"},
    "fig18": {"points": [(500_000, 500_000, None, s) for s in (3e6, 1e6, 3e5, 1e5, 3e4)], "key": "a_sigma"},
    # where routing wins: fig9's clustered query set (70% of the rangeC's in hotspots) and the
    # fit's mixed arrival distributions; size = |Q| (thousands), |S| = 100,000 (x scale)
    "fig9mix": {"points": [(n, 100_000, None, None) for n in (100_000, 500_000)], "key": "size",
                "hot_frac": 0.7, "mixed": True, "ceiling": True},
}


def load(kind: str, nq: int, ns: int, seed: int, n_arr: int, key_spread=None, a_sigma=None, mixed=False,
         hot_frac=None, c_domain=10_000.0):
    """A count-mode ``Dynamic`` holding every plan, with |S| = ns stored and nq queries, and the
    arriving tuples (key, x, t) (``mixed``: the fit's mixture of arrival distributions;
    ``hot_frac``: select joins on fig9's clustered query set, workloads.joins.cluster_rangec)."""
    rng = np.random.default_rng(seed + 7)
    op = Dynamic(kind, "count")
    if kind == "band":
        w = wl.band_workload(n_queries=nq, n_tuples=ns, n_arrivals=n_arr, seed=seed)
        op.insert("right", np.arange(1, ns + 1), w["s_key"], None, None)
        for i, s in enumerate(wl.specs("band", w["rows"])):
            op.register(i, s)
        key, x, t = w["in_key"], np.zeros(n_arr), np.full(n_arr, np.nan)
    else:
        win = 0.2 * ns if kind == "window" else None
        w = wl.select_workload(n_queries=nq, n_tuples=ns, n_arrivals=1, seed=seed, window=win)
        if hot_frac is not None:
            w = wl.cluster_rangec(w, hot_frac, seed, c_domain)
        st = np.arange(ns, dtype=np.float64) if kind == "window" else None
        op.insert("right", np.arange(1, ns + 1), w["s_key"], w["s_x"].reshape(-1, 1), st)
        for i, s in enumerate(wl.specs(kind, w["rows"], w["w"])):
            op.register(i, s)
        if mixed:
            parts = [wl.arrivals(n_arr, 100, rng, ks, sa) for ks in (None, 0.05, 3.0) for sa in (None, 3e4, 3e6)]
            pick = rng.integers(0, len(parts), n_arr)
            key = np.array([parts[p][0][i] for i, p in enumerate(pick)], np.int64)
            x = np.array([parts[p][1][i] for i, p in enumerate(pick)], np.float64)
        else:
            key, x = wl.arrivals(n_arr, 100, rng, key_spread, a_sigma)
            x = x.astype(np.float64)
        t = ns + np.arange(n_arr, dtype=np.float64) if kind == "window" else np.full(n_arr, np.nan)
    op.seq = 2 * ns + 10
    push(op, key[:1], x[:1], t[:1])  # builds the statistics (first probe after the registrations)
    op.choose("left", key[1:3], x[1:3], t[1:3])  # and loads the batch router's kernel
    return op, key[1:], x[1:], t[1:]


def push(op: Dynamic, key, x, t) -> None:
    n = len(key)
    op.insert("left", np.arange(op.seq, op.seq + n), key, None if op.kind == "band" else x.reshape(-1, 1),
              t if op.kind == "window" else None)
    op.seq += n


def per_tuple_us(op: Dynamic, key, x, t, reps: int = 3) -> np.ndarray:
    """float64[n, plans]: microseconds of each plan on each tuple alone (the minimum of ``reps``
    calls: the machine is shared, a preempted call would dominate a least-squares fit), minus
    the median time of the same call on an empty batch (the Python call's fixed cost)."""
    side, seqs = "left", np.arange(len(key)) + op.seq
    e = slice(0, 0)
    null = np.zeros(len(op.choices))
    for j, c in enumerate(op.choices):
        op._run(c, side, seqs[e], key[e], x[e], t[e], 2)  # builds the plan's index
        ts = []
        for _ in range(21):
            t0 = time.perf_counter()
            op._run(c, side, seqs[e], key[e], x[e], t[e], 2)
            ts.append(time.perf_counter() - t0)
        null[j] = np.median(ts)
    out = np.empty((len(key), len(op.choices)))
    for i in range(len(key)):
        s = slice(i, i + 1)
        for j, c in enumerate(op.choices):
            best = np.inf
            for _ in range(reps):
                t0 = time.perf_counter()
                op._run(c, side, seqs[s], key[s], x[s], t[s], 2)
                best = min(best, time.perf_counter() - t0)
            out[i, j] = best
    return np.clip(out - null, 0, None) * 1e6


STATS = ("S", "Q", "QS", "sum_sqrt_hot", "QH", "tau", "hot", "mp", "np", "npp", "mb", "mbar", "mbar_h", "cov", "pbar")


def run_fit(scale: float = 0.1, kinds=("select", "window", "band"), per_point: int = 150, seed: int = 0,
            out: str | Path = "results/joins_fit.json", grid: list[int] | None = None, console=None) -> dict:
    """Measure (``per_tuple_us``) and fit; the raw rows (statistics + times) go to OUT.npz so
    that :func:`refit` can fit other model variants without measuring again."""
    console = console or Console()
    sizes = [max(100, int(g * scale)) for g in (grid or GRID)]
    raw: dict[str, np.ndarray] = {}
    for kind in kinds:
        rows: dict[str, list] = {}
        for nq in sizes:
            for ns in sizes:
                t0 = time.perf_counter()
                n_pt = per_point if kind != "band" else max(2, per_point // 20)  # band: tuple-independent
                op, key, x, t = load(kind, nq, ns, seed, n_pt + 1, mixed=True)
                st = op.stats("left", key, x, t, exact=True)
                for k in STATS:
                    if k in st:
                        rows.setdefault(k, []).append(np.broadcast_to(np.asarray(st[k], np.float64), (len(key),)))
                us = per_tuple_us(op, key, x, t)
                rows.setdefault("us", []).append(us)
                console.log(f"fit {kind} |Q|={nq:,} |S|={ns:,}: mean us/tuple "
                            + ", ".join(f"{c} {us[:, j].mean():,.1f}" for j, c in enumerate(op.choices))
                            + f" ({time.perf_counter() - t0:.1f} s)")
        for k, v in rows.items():
            raw[f"{kind}/{k}"] = np.concatenate(v)
    np.savez_compressed(Path(out).with_suffix(".npz"), **raw)
    config = {"scale": scale, "sizes": sizes, "per_point": per_point, "seed": seed}
    return refit(Path(out).with_suffix(".npz"), out, config, console)


def refit(npz: str | Path, out: str | Path, config: dict | None = None, console=None) -> dict:
    """Fit every strategy's model (vigil.joins.costs.MODELS) on the raw rows of a --fit run."""
    console = console or Console()
    raw = np.load(npz)
    doc: dict[str, Any] = {"family": "joins", "preset": "fit", "config": config or {}, "params": {}, "fit": {},
                           "machine": machine_info(), "raw": Path(npz).name}
    for kind in dict.fromkeys(k.split("/")[0] for k in raw.files):
        st = {k.split("/")[1]: raw[k] for k in raw.files if k.startswith(kind + "/")}
        us = st.pop("us")
        n = len(us)
        f = cm.features(kind, st)
        doc["params"][kind] = {}
        doc["fit"][kind] = {}
        for j, c in enumerate(cm.MODELS[kind]):
            A, y = cm.design(kind, c, f, n), us[:, j]
            theta, hw = cm.fit(A, y)
            names = [p for p, _ in cm.MODELS[kind][c]]
            r2 = 1 - float(((y - A @ theta) ** 2).sum()) / max(float(((y - y.mean()) ** 2).sum()), 1e-300)
            doc["params"][kind][c] = {nm: {"value": float(v), "ci95": [float(v - h), float(v + h)]}
                                      for nm, v, h in zip(names, theta, hw, strict=True)}
            doc["fit"][kind][c] = {"rows": n, "r2": r2, "mean_us": float(y.mean())}
            console.log(f"fit {kind} {c}: " + ", ".join(f"{nm}={v:.4g} [{v - h:.4g}, {v + h:.4g}]"
                        for nm, v, h in zip(names, theta, hw, strict=True)) + f"; R^2 {r2:.2f}")
    write_json(out, doc)
    return doc


BATCH_STATS = ("mp", "np", "npp")  # per tuple (exact); the rest of cm.features' inputs are per workload
BATCH_SCALARS = ("S", "Q", "QS", "sum_sqrt_hot", "cov", "pbar")
FIT_SETS = ((None, 1e6), (0.7, 10_000.0), (0.7, 1e6))  # (hot_frac, c_domain): Table I's; fig9's, twice


def run_batch_fit(scale: float = 0.1, grid: list[int] | None = None, batch: int = 1000, seed: int = 0,
                  out: str | Path = "results/joins_fit_batch.json", sets=FIT_SETS, console=None) -> dict:
    """Select joins: fit the models on *batch* times. Per workload (|Q| x |S| on ``grid``, for each
    query set of ``sets``: (None, _) Table I's, (h, c) fig9's clustered one with hot fraction h
    over [0, c], workloads.joins.cluster_rangec) and per arrival distribution (the fit's nine:
    keys uniform / near the S.B peak / in the tails x R.A uniform / concentrated / spread), every
    plan probes the same ``batch`` tuples in one call (CPU time, minimum of 2); the row is the sum
    of the tuples' feature vectors (the models are linear, so a batch's estimated cost is that
    sum times theta) and y the batch's time. Why: the plans' kernels process a batch as a whole
    (SJ-SSI / SJ-Hotspot group by group in (partner block, a) order since 1ac086d), so a tuple's
    cost inside a batch is not its cost alone, which is what :func:`run_fit` measures. The raw
    rows go to OUT.npz with the exact statistics of every tuple (``st/*``), so that
    :func:`refit_batch` recomputes the features of other model variants without timing again,
    and fits on a subset of the workloads for held-out checks; writes the --fit JSON format."""
    console = console or Console()
    sizes = [max(100, int(g * scale)) for g in (grid or GRID)]
    rng = np.random.default_rng(seed + 11)
    raw: dict[str, list] = {"workload": [], "dist": []}
    for c in cm.MODELS["select"]:
        raw[f"X/{c}"], raw[f"y/{c}"] = [], []
    for k in BATCH_STATS + BATCH_SCALARS:
        raw[f"st/{k}"] = []
    points = [(nq, ns, h, cd) for h, cd in sets for nq in sizes for ns in sizes]
    for w_id, (nq, ns, h, cd) in enumerate(points):
        t0 = time.perf_counter()
        op, _, _, _ = load("select", nq, ns, seed, 3, hot_frac=h, c_domain=cd if h is not None else 10_000.0)
        if h is None and cd != 1e6:
            raise ValueError("Table I's query set: its own c_domain (select_workload's 10^6)")
        for d_id, (ks, sa) in enumerate((ks, sa) for ks in (None, 0.05, 3.0) for sa in (None, 3e4, 3e6)):
            key, x = wl.arrivals(batch, 100, rng, ks, sa)
            x = x.astype(np.float64)
            t = np.full(batch, np.nan)
            st = op.stats("left", key, x, t, exact=True)
            f = cm.features("select", st)
            seqs = np.arange(batch)
            for c in op.choices:
                op._run(c, "left", seqs, key, x, t, 2)  # warm: the plan's kernels and index
                best = np.inf
                for _ in range(2):
                    c0 = time.thread_time()
                    op._run(c, "left", seqs, key, x, t, 2)
                    best = min(best, time.thread_time() - c0)
                raw[f"X/{c}"].append(cm.design("select", c, f, batch).sum(axis=0))
                raw[f"y/{c}"].append(best * 1e6)
            for k in BATCH_STATS:
                raw[f"st/{k}"].append(np.asarray(st[k], np.float64))
            for k in BATCH_SCALARS:
                raw[f"st/{k}"].append(float(st[k]))
            raw["workload"].append(w_id)
            raw["dist"].append(d_id)
        console.log(f"batch fit |Q|={nq:,} |S|={ns:,} hot={h} c_domain={cd:g} ({time.perf_counter() - t0:.1f} s)")
    npz = Path(out).with_suffix(".npz")
    np.savez_compressed(npz, points=np.array([(nq, ns, -1.0 if h is None else h, cd) for nq, ns, h, cd in points]),
                        **{k: np.array(v) for k, v in raw.items()})
    config = {"scale": scale, "sizes": sizes, "batch": batch, "seed": seed, "distributions": 9,
              "sets": [list(s) for s in sets]}
    return refit_batch(npz, out, config, console=console)


def batch_design(raw, c: str) -> np.ndarray:
    """The rows' design matrix of plan c's model (cm.MODELS): recomputed from the stored per-tuple
    statistics when the file has them (``st/*``), else the stored sums (``X/c``)."""
    if "st/mp" not in raw:
        return raw[f"X/{c}"]
    rows = []
    for r in range(len(raw["workload"])):
        st = {k: raw[f"st/{k}"][r] for k in BATCH_STATS} | {k: float(raw[f"st/{k}"][r]) for k in BATCH_SCALARS}
        n = len(st["mp"])
        rows.append(cm.design("select", c, cm.features("select", st), n).sum(axis=0))
    return np.array(rows)


def refit_batch(npz: str | Path, out: str | Path | None = None, config: dict | None = None, train=None,
                console=None) -> dict:
    """Fit the select models on the rows of :func:`run_batch_fit` (``train``: a boolean mask over
    the workloads, default all) with :func:`vigil.joins.costs.fit_bounded` (relative error, each
    term floored); writes ``out`` (the --fit JSON format) when given."""
    console = console or Console()
    raw = dict(np.load(npz))
    rows = np.ones(len(raw["workload"]), bool) if train is None else np.asarray(train)[raw["workload"]]
    doc: dict[str, Any] = {"family": "joins", "preset": "fit_batch", "params": {"select": {}}, "fit": {"select": {}},
                           "config": config or {}, "machine": machine_info(), "raw": Path(npz).name}
    for c in cm.MODELS["select"]:
        A, y = batch_design(raw, c)[rows], raw[f"y/{c}"][rows]
        theta, lower = cm.fit_bounded(A, y)
        names = [p for p, _ in cm.MODELS["select"][c]]
        r2 = 1 - float(((y - A @ theta) ** 2).sum()) / max(float(((y - y.mean()) ** 2).sum()), 1e-300)
        rel = float(np.median(np.abs(A @ theta - y) / np.maximum(y, 1e-9)))
        doc["params"]["select"][c] = {nm: {"value": float(v), "floor": float(lo)}
                                      for nm, v, lo in zip(names, theta, lower, strict=True)}
        doc["fit"]["select"][c] = {"rows": len(y), "r2": r2, "median_rel_error": rel,
                                   "mean_us_per_tuple": float(y.mean() / int((config or {}).get("batch", 1000)))}
        console.log(f"batch fit select {c}: " + ", ".join(f"{nm}={v:.4g}" for nm, v in zip(names, theta, strict=True))
                    + f"; R^2 {r2:.2f}; median relative error {rel:.2f}")
    if out is not None:
        write_json(out, doc)
    return doc


def ship(fit_json: str | Path, target: str | Path | None = None) -> Path:
    """Write a --fit JSON's parameters into vigil/joins/_cost_params.py (the shipped defaults)."""
    import json

    from ..joins import _cost_params

    doc = json.loads(Path(fit_json).read_text())
    params = cm.load_params(fit_json)
    target = Path(target or _cost_params.__file__)
    head = _cost_params.__doc__.strip().split("\n\nShipped from")[0]
    body = "PARAMS = {\n" + "".join(
        f"    {k!r}: {{\n" + "".join(f"        {s!r}: {{{', '.join(f'{n!r}: {v:.6g}' for n, v in p.items())}}},\n"
                                    for s, p in params[k].items()) + "    },\n" for k in params) + "}\n"
    src = f'"""{head}\n\nShipped from: {Path(fit_json).name} (config {doc.get("config")})."""\n\n{body}'
    target.write_text(src)
    return target


def oracle_choices(op: Dynamic, key, x, t, batch: int, tie_us: float = 0.5) -> np.ndarray:
    """The per-tuple oracle's plans: each plan's time on each tuple alone (per_tuple_us, min of
    2), scaled by that plan's batch efficiency (its CPU time on the same tuples in batches of
    ``batch`` over the sum of its one-tuple times: SJ-Hotspot and SJ-JoinFirst cost less per
    tuple in a batch, by different factors), then the fastest plan per tuple, except that a tuple
    on which the plan of lowest batch time (the best static plan here) is within ``tie_us`` of the
    fastest stays on it (tuples without partners cost every plan ~0: scattering them over the
    plans would only add sub-batches)."""
    us = per_tuple_us(op, key, x, t, reps=2)
    seqs = np.arange(len(key)) + op.seq
    tot = np.zeros(len(op.choices))
    for j, c in enumerate(op.choices):
        for i in range(0, len(key), batch):
            s = slice(i, i + batch)
            c0 = time.thread_time()
            op._run_ordered(c, "left", seqs[s], key[s], x[s], t[s], 2)
            tot[j] += time.thread_time() - c0
    us = us * (tot * 1e6 / np.maximum(us.sum(axis=0), 1e-9))
    inc = int(np.argmin(tot))
    return np.where(us[:, inc] <= us.min(axis=1) + tie_us, inc, us.argmin(axis=1))


def group_ceiling(op: Dynamic, key, x, t, batch: int, chunks: int = 10, reps: int = 3) -> dict:
    """What per-group routing reaches in batches: each chunk is cut into groups by the exact
    statistics (m' = 0, set aside as dynamic does; else n' in [0], [1, 10), [10, 100), [100, 1000),
    [1000, inf) x m' in [1, 100), [100, 300), [300, inf)), every plan probes every group (CPU
    time, min of ``reps`` calls taken in rotation over the groups and plans, the plans' batch
    order) and the ceiling adds each group's fastest plan; against the best static plan on the whole chunk and dynamic's routed probe of it (timed the
    same way, routing included; inserting the tuples, common to all, left out)."""
    seqs = np.arange(batch) + op.seq

    def cpu(fn, *args) -> float:
        best = np.inf
        for _ in range(reps):
            c0 = time.thread_time()
            fn(*args)
            best = min(best, time.thread_time() - c0)
        return best

    def cpu1(fn, *args) -> float:
        c0 = time.thread_time()
        fn(*args)
        return time.thread_time() - c0

    rows = []
    for ci in range(chunks):
        s = slice(ci * batch, (ci + 1) * batch)
        k, xx, tt = key[s], x[s], t[s]
        st = op.stats("left", k, xx, tt, exact=True)
        grp = np.where(st["mp"] == 0, -1, np.digitize(st["np"], [1, 10, 100, 1000]) * 3 + np.digitize(st["mp"], [100, 300]))
        static = min(cpu(op._run_ordered, c, "left", seqs, k, xx, tt, 2) for c in op.choices)
        # min over reps of one call per (group, plan), every group and plan in between: timing
        # the same small group back to back (min of reps in a row) found its data in cache and
        # put the ceiling above what the same plans reach on the chunk
        groups = [np.flatnonzero(grp == g) for g in np.unique(grp[grp >= 0])]
        best = np.full((len(groups), len(op.choices)), np.inf)
        for _ in range(reps):
            for gi, i in enumerate(groups):
                for j, c in enumerate(op.choices):
                    best[gi, j] = min(best[gi, j], cpu1(op._run_ordered, c, "left", seqs[i], k[i], xx[i], tt[i], 2))
        ceil = float(best.min(axis=1).sum())
        rows.append((static, ceil, cpu(op._probe, "left", seqs, k, xx, tt, 2)))
    r = np.array(rows)
    return {"chunks": chunks, "tuples": chunks * batch, "ceiling_s": float(r[:, 1].sum()),
            "best_static_over_ceiling": float(np.median(r[:, 0] / r[:, 1])),
            "best_static_over_dynamic": float(np.median(r[:, 0] / r[:, 2]))}


def _chunk_samples(cpu: list[float], wall: list[float], repeat: int, warm: float | None) -> dict:
    """The shared sample fields (:func:`.common.sample_fields`) of one strategy's chunks: the chunks
    cut into ``repeat`` consecutive slices (interleaved with the other strategies chunk by chunk),
    each slice's seconds scaled to all the chunks (a slice of k of n chunks: x n / k), so that each
    sample and the median estimate the whole run's CPU seconds."""
    parts = [p for p in np.array_split(np.arange(len(cpu)), max(1, min(repeat, len(cpu)))) if len(p)]
    c, w = np.asarray(cpu), np.asarray(wall)
    out = sample_fields([float(c[p].sum()) * len(c) / len(p) for p in parts],
                        [float(w[p].sum()) * len(w) / len(p) for p in parts], warmed=warm is not None)
    out.update(warmup_cpu_s=warm, sample_chunks=[len(p) for p in parts])
    return out


def run_dynamic_preset(preset: str, scale: float = 0.1, out: str | Path = "results/joins_dyn.json",
                       batch: int = 1000, budget: float = 2.0, n_opt: int = 300, seed: int = 0,
                       oracle_chunks: int = 20, console=None, repeat: int = 3) -> dict:
    """Every static plan, ``dynamic`` and the per-tuple oracle interleaved chunk by chunk (module
    docstring). The oracle (``oracle``, the first ``oracle_chunks`` chunks only): each tuple goes to
    the plan that was fastest on it (measured before the run: :func:`oracle_choices`), the
    chunk split by plan as ``dynamic`` splits it: what perfect per-tuple choices reach in batches.
    Every strategy first pushes the first chunk once untimed (warm-up: its plan's kernels and
    indexes); the timed chunks are then cut into ``repeat`` consecutive slices, interleaved by
    construction, each a sample (:func:`_chunk_samples`)."""
    console = console or Console()
    cfg = DYN_PRESETS[preset]
    results: list[Result] = []
    for nq0, ns0, ks, sa in cfg["points"]:
        nq, ns = max(100, int(nq0 * scale)), max(100, int(ns0 * scale))
        label = {"size": nq0 // 1000, "key_spread": ks, "a_sigma": sa}[cfg["key"]]
        n_arr = 200_000
        op, key, x, t = load("select", nq, ns, seed, n_arr + 1, key_spread=ks, a_sigma=sa,
                             mixed=cfg.get("mixed", False), hot_frac=cfg.get("hot_frac"),
                             c_domain=cfg.get("c_domain", 10_000.0))
        n_orc = min(oracle_chunks * batch, n_arr)
        orc = oracle_choices(op, key[:n_orc], x[:n_orc], t[:n_orc], batch) if n_orc else None
        st = op.stats("left", key[:2000], x[:2000], t[:2000], exact=True)
        point = {cfg["key"]: label, "queries": nq, "stored": ns, "join_rate": float(np.mean(st["mp"])),
                 "selection_rate": float(np.mean(st["np"]) / max(nq, 1))}
        algos = list(op.choices) + ["dynamic"]
        secs = dict.fromkeys(algos, 0.0)
        chunk: dict[str, list[float]] = {a: [] for a in algos + ["oracle"]}  # CPU time per chunk (thread_time)
        dec = np.zeros(len(op.choices), np.int64)
        route = 0.0
        pos = 0
        t_all = time.perf_counter()
        # interleaved: each chunk of `batch` tuples is pushed by every strategy in turn, so a
        # change of load on the shared machine hits them alike; the order is a fresh random
        # permutation per chunk, so that no strategy always runs right after (on the caches
        # warmed by) another: with a fixed cyclic order JF always followed dynamic, which had just
        # warmed JF's index, and was measured ~4% faster than dynamic routing every tuple to JF
        order_rng = np.random.default_rng(seed + 99)
        route_share: list[float] = []
        walls: dict[str, list[float]] = {a: [] for a in algos + ["oracle"]}
        warm_cpu = {}
        for algo in algos + (["oracle"] if n_orc >= batch else []):  # warm-up (untimed): the first chunk once each
            op.force = None if algo in ("dynamic", "oracle") else algo
            op.oracle_choice = orc[:batch] if algo == "oracle" else None
            c0 = time.thread_time()
            push(op, key[:batch], x[:batch], t[:batch])
            warm_cpu[algo] = time.thread_time() - c0
        op.force, op.oracle_choice = None, None
        np0 = op.no_partner
        while time.perf_counter() - t_all < budget * len(algos) and pos + batch <= n_arr:
            sl = slice(pos, pos + batch)
            here = algos + (["oracle"] if pos + batch <= n_orc else [])
            for algo in [here[i] for i in order_rng.permutation(len(here))]:
                op.force = None if algo in ("dynamic", "oracle") else algo
                op.oracle_choice = orc[sl] if algo == "oracle" else None
                if algo == "oracle":
                    c0, t0 = time.thread_time(), time.perf_counter()
                    push(op, key[sl], x[sl], t[sl])
                    chunk[algo].append(time.thread_time() - c0)
                    walls[algo].append(time.perf_counter() - t0)
                    op.oracle_choice = None
                    continue
                d0, r0 = op.decisions.copy(), op.route_seconds
                c0, t0 = time.thread_time(), time.perf_counter()
                push(op, key[sl], x[sl], t[sl])
                secs[algo] += time.perf_counter() - t0
                chunk[algo].append(time.thread_time() - c0)
                walls[algo].append(time.perf_counter() - t0)
                if algo == "dynamic":
                    dec += op.decisions - d0
                    route += op.route_seconds - r0
                    route_share.append((op.route_seconds - r0) / max(time.perf_counter() - t0, 1e-9))
            pos += batch
        for algo in algos:
            extra = {"point": point, "rate_per_s": pos / secs[algo], "batch": batch,
                     "cpu_rate_per_s": pos / sum(chunk[algo]),
                     **_chunk_samples(chunk[algo], walls[algo], repeat, warm_cpu.get(algo))}
            extra["cpu_rate_per_s_median"] = pos / extra["cpu_s_median"]
            if algo == "dynamic":
                extra["breakdown"] = {c: int(v) for c, v in zip(op.choices, dec, strict=True)}
                extra["no_partner"] = int(op.no_partner - np0)  # one-tuple calls answered without a plan
                extra["route_fraction"] = route / secs[algo]
                extra["route_fraction_median"] = float(np.median(route_share))  # per chunk: robust to preemption
                # CPU time (a preempted chunk does not count), median over chunks of static / dynamic
                extra["paired_speedup"] = {c: float(np.median(np.array(chunk[c]) / np.array(chunk["dynamic"])))
                                           for c in op.choices}
                ratios = np.array(chunk["dynamic"]) / np.array(chunk[min(op.choices, key=lambda c: sum(chunk[c]))])
                extra["vs_best_static_quartiles"] = [float(v) for v in np.percentile(1.0 / ratios, [25, 50, 75])]
            results.append(Result(algo, secs[algo], pos, extra=extra))
            console.log(f"{preset} {cfg['key']}={label} {algo}: {pos / secs[algo]:,.0f} tuples/s "
                        f"({extra['cpu_rate_per_s']:,.0f} per CPU second)"
                        + (f" (routing {100 * extra['route_fraction']:.1f}% of the time, median per chunk "
                           f"{100 * extra['route_fraction_median']:.1f}%; {extra['breakdown']}; "
                           f"median per chunk of static / dynamic time {extra['paired_speedup']})"
                           if algo == "dynamic" else ""))
        if chunk["oracle"]:
            k = len(chunk["oracle"])
            oc = np.array(chunk["oracle"])
            best = min(op.choices, key=lambda c: sum(chunk[c][:k]))
            extra = {"point": point, "batch": batch, "chunks": k, "cpu_rate_per_s": k * batch / oc.sum(),
                     **_chunk_samples(chunk["oracle"], walls["oracle"], repeat, warm_cpu.get("oracle")),
                     "breakdown": {c: int((orc[:k * batch] == j).sum()) for j, c in enumerate(op.choices)},
                     # on the oracle's chunks: best static plan's CPU time / the oracle's, and dynamic's
                     "best_static": best, "best_static_over_oracle": float(sum(chunk[best][:k]) / oc.sum()),
                     "best_static_over_dynamic": float(sum(chunk[best][:k]) / sum(chunk["dynamic"][:k])),
                     "paired_best_static_over_oracle": float(np.median(np.array(chunk[best][:k]) / oc))}
            results.append(Result("oracle", float(oc.sum()), k * batch, extra=extra))
            console.log(f"{preset} {cfg['key']}={label} oracle (per-tuple choices, {k} chunks): "
                        f"{extra['cpu_rate_per_s']:,.0f} per CPU second; best static ({best}) / oracle "
                        f"{extra['best_static_over_oracle']:.3f}, best static / dynamic on these chunks "
                        f"{extra['best_static_over_dynamic']:.3f}; {extra['breakdown']}")
        op.force = None
        if cfg.get("ceiling"):
            extra = {"point": point, **group_ceiling(op, key, x, t, batch)}
            results.append(Result("group_ceiling", extra["ceiling_s"], extra["tuples"], extra=extra))
            console.log(f"{preset} {cfg['key']}={label} per-group ceiling: best static / ceiling "
                        f"{extra['best_static_over_ceiling']:.3f}, best static / dynamic {extra['best_static_over_dynamic']:.3f} "
                        f"(probe and routing only, median over {extra['chunks']} chunks)")
        s = slice(0, n_opt)
        us = per_tuple_us(op, key[s], x[s], t[s])
        dyn = op.choose("left", key[s], x[s], t[s])
        route = np.inf
        for _ in range(3):  # routing cost of this batch: the minimum of 3 calls' CPU time (one call
            t0 = time.thread_time()  # preempted or rebuilding the router's state measured 12 ms once)
            op.choose("left", key[s], x[s], t[s])
            route = min(route, time.thread_time() - t0)
        best = np.argmin(us, axis=1)
        chosen = us[np.arange(len(best)), dyn]
        extra = {"point": point, "rate_per_s": len(best) / (us.min(axis=1).sum() * 1e-6), "n": len(best),
                 "match": float(np.mean(dyn == best)),
                 "dynamic_probe_rate_per_s": len(best) / (chosen.sum() * 1e-6 + route),
                 "per_plan_rate_per_s": {c: len(best) / (us[:, j].sum() * 1e-6) for j, c in enumerate(op.choices)},
                 "breakdown": {c: int((best == j).sum()) for j, c in enumerate(op.choices)},
                 "dynamic_breakdown": {c: int((dyn == j).sum()) for j, c in enumerate(op.choices)}}
        results.append(Result("optimum", float(us.min(axis=1).sum() * 1e-6), len(best), extra=extra))
        console.log(f"{preset} {cfg['key']}={label} optimum: {extra['rate_per_s']:,.0f} tuples/s; dynamic's "
                    f"decisions match {100 * extra['match']:.0f}%; optimum {extra['breakdown']}")
    doc = result_doc("joins", preset, {"scale": scale, "batch": batch, "budget_s": budget, "n_opt": n_opt,
                                       "seed": seed, "kind": "select", "repeat": repeat,
                                       "timing": "CPU (thread_time) per chunk, strategies interleaved chunk by chunk "
                                                 "after an untimed chunk each; samples: `repeat` slices of the "
                                                 "chunks, each scaled to the whole run"}, results)
    write_json(out, doc)
    print_table(doc, reference="dynamic", console=console)
    plot(doc, Path(out).with_suffix(".png"))
    return doc


def plot(doc: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    key = next(k for k in res[0]["extra"]["point"] if k in ("size", "key_spread", "a_sigma"))
    xlab = {"size": "workload (|Q| = |S|, thousands, paper scale)", "key_spread": "event join rate (m', measured)",
            "a_sigma": "event selection rate (measured)"}[key]
    xval = {"size": lambda p: p["size"], "key_spread": lambda p: p["join_rate"],
            "a_sigma": lambda p: p["selection_rate"]}[key]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4), dpi=80)
    algos = [a for a in dict.fromkeys(r["algo"] for r in res) if a not in ("optimum", "oracle", "group_ceiling")]
    for i, a in enumerate(algos):
        pts = sorted((xval(r["extra"]["point"]), r["extra"]["rate_per_s"]) for r in res if r["algo"] == a)
        axes[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=f"C{i}", label=a)
    # SJ-Optimum exists only as per-tuple probe-time accounting: drawn against dynamic's probe time
    opt_pts = sorted((xval(r["extra"]["point"]), r["extra"]["rate_per_s"], r["extra"]["dynamic_probe_rate_per_s"])
                     for r in res if r["algo"] == "optimum")
    if opt_pts:
        axes[0].plot([p[0] for p in opt_pts], [p[1] for p in opt_pts], marker="s", color="k", linestyle="--",
                     label="optimum (probe time)")
        axes[0].plot([p[0] for p in opt_pts], [p[2] for p in opt_pts], marker="s", color=f"C{algos.index('dynamic')}",
                     linestyle=":", label="dynamic (probe time)")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("incoming tuples per second")
    dyn = sorted(((xval(r["extra"]["point"]), r["extra"]["breakdown"]) for r in res if r["algo"] == "dynamic"),
                 key=lambda p: p[0])
    opt = sorted(((xval(r["extra"]["point"]), r["extra"]["match"]) for r in res if r["algo"] == "optimum"),
                 key=lambda p: p[0])
    names = list(dyn[0][1]) if dyn else []
    bottom = np.zeros(len(dyn))
    xs = np.arange(len(dyn))
    for j, c in enumerate(names):
        v = np.array([b[c] / max(1, sum(b.values())) for _, b in dyn])
        axes[1].bar(xs, v, bottom=bottom, label=c, color=f"C{j}")
        bottom += v
    axes[1].set_xticks(xs, [f"{p[0]:.3g}" for p in dyn])
    axes[1].set_ylabel("fraction of tuples (dynamic's choices)")
    axes[2].bar(np.arange(len(opt)), [m for _, m in opt], color="C7")
    axes[2].set_xticks(np.arange(len(opt)), [f"{p[0]:.3g}" for p in opt])
    axes[2].set_ylabel("decisions matching SJ-Optimum")
    axes[2].set_ylim(0, 1)
    for ax in axes:
        ax.set_xlabel(xlab)
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8)
    fig.suptitle(f"paper 003 {doc['preset']} (scale {doc['params']['scale']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
