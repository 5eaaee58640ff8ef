"""``vigil bench joins``: paper 003 §5 (Figs. 7-11) on the Table I workload
(:mod:`vigil.workloads.joins`), every strategy in one process on the same generated input, plus
DuckDB joining each batch of arriving R tuples with the stored S and the queries as a table.

Per sweep point: R and S are loaded (|R| = |S| = 100,000 x scale) before any query exists, the
queries are registered (100,000 x scale) in one operator per strategy, then the same arriving R
tuples are pushed through every strategy, interleaved (:func:`_measure`): per batch size,
``repeats`` samples of >= ``min_tuples`` tuples, the strategies in a fresh random order per
sample, each sample timed in CPU time; a cell reports the median rate and the range over its
samples (and, against ``ssi``, the median of the per-sample time ratios). ``budget`` caps a
cell's CPU seconds. Mode ``count`` = output cost excluded (the operators count result pairs, as
the paper measures); ``pairs`` = outputs materialised (row ``ALGO+pairs``). DuckDB rows:
``duckdb`` (count(*) of the new pairs per batch) at the same batch sizes. Row ``engine``
(select presets fig7, fig7c, fig8; in the default algorithms): the point's workload as an event
log through ``vigil replay``'s path beside the registry default called directly
(:func:`vigil.bench.engine_path.joins_column`), printed in its own table.

Presets fig12, fig15, fig18, fig9mix (data-sensitive routing, §5.4): see bench/joins_dynamic.py;
appB (HIST-SSI vs HIST-EQW): bench/joins_hist.py.
Presets: fig7 (select joins on Table I, rangeC midpoints over S.C's whole domain: vs number of
queries; vs stabbing groups via rangeC lengths; a_len=2,500: the ~250 selected queries per event
that Fig. 7(ii)'s text states, few pairs per tuple), fig7c (fig7's query sweep on the "clustered
C" variant: rangeC midpoints in [0, 10^4]), fig8
(vs event selection rate via rangeA lengths; vs event join rate via the B domain), fig9
(SJ-Hotspot vs fraction of queries in hotspots), fig10 (band joins vs queries; vs groups;
``--points centres=30,300``: our clustered selective variant, see workloads.joins),
fig11 (band joins: cost per query update, 50% insertions / 50% deletions).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from .. import registry
from ..joins.partition import stabbing_number
from ..workloads import joins as wl
from .common import Result, Timed, measure_interleaved, print_table, result_doc, sample_fields, write_json

SELECT_ALGOS = ["ssi", "hotspot", "join_first", "select_first", "vanilla", "duckdb", "engine"]
BAND_ALGOS = ["ssi", "hotspot", "qouter", "douter", "mj", "duckdb"]
PRESETS: dict[str, dict[str, Any]] = {
    # fig7 a_len=2,500: the selection rate the text of Fig. 7(ii) states (~250 queries of 100,000
    # pass R.A, 0.25%; Fig. 7(i) says 10%): ~40x fewer result pairs per tuple
    "fig7": {"kind": "select", "sweeps": {"n_queries": [100, 1_000, 10_000, 100_000],
                                          "c_len": [200_000.0, 60_000.0, 15_000.0, 4_000.0],
                                          "a_len": [2_500.0]}},
    # fig7 on the "clustered C" variant: rangeC midpoints Uni(0, 10^4), S.C Uni(0, 10^6) (see workloads.joins)
    "fig7c": {"kind": "select", "sweeps": {"n_queries": [100, 1_000, 10_000, 100_000], "a_len": [2_500.0]},
              "fixed": {"c_domain": 10_000.0}},
    "fig8": {"kind": "select", "sweeps": {"a_len": [200_000.0, 100_000.0, 20_000.0, 2_000.0], "b_domain": [1_000, 100, 20]}},
    "fig9": {"kind": "select", "sweeps": {"hot_frac": [0.1, 0.4, 0.7, 1.0]}, "n_queries": 500_000},
    "fig10": {"kind": "band", "sweeps": {"n_queries": [100, 1_000, 10_000, 100_000], "b_len": [400.0, 100.0, 20.0, 4.0]}},
    "fig11": {"kind": "band", "updates": True},
    # data-sensitive routing (§5.4): bench/joins_dynamic.py
    "fig12": {"kind": "select", "dynamic": True},
    "fig15": {"kind": "select", "dynamic": True},
    "fig18": {"kind": "select", "dynamic": True},
    "fig9mix": {"kind": "select", "dynamic": True},  # fig9's query set (hot 0.7), mixed arrivals
    "appB": {"kind": "select", "hist": True},  # HIST-SSI vs HIST-EQW (App. B, Fig. 25)
}


def _params(kind: str, key: str | None, value, scale: float, n_queries: int) -> dict:
    p: dict[str, Any] = {"n_tuples": max(100, int(100_000 * scale)), "n_queries": max(10, int(n_queries * scale))}
    if key == "n_queries":
        p["n_queries"] = max(10, int(value * scale))
    elif key == "centres":  # our clustered, selective band variant: 1 centre per 3,000 queries
        p.update(centres=int(value), b_len=0.05, b_domain=10_000_000)
    elif key is not None and key != "hot_frac":
        p[key] = value
    return p


def _clustered(p: dict, hot_frac: float, seed: int) -> dict:
    """Fig. 9: a fraction of the rangeC's drawn around 20 hot centres, the rest scattered (short
    ranges spread over a disjoint part of the domain): :func:`vigil.workloads.joins.cluster_rangec`."""
    return wl.cluster_rangec(wl.select_workload(**p, seed=seed), hot_frac, seed)


class _DuckDB:
    """DuckDB joining each batch of arriving R tuples with the stored S and the query table."""

    def __init__(self, kind: str, w: dict):
        import duckdb
        import pyarrow as pa

        self.pa, self.kind, self.w = pa, kind, w
        con = self.con = duckdb.connect()
        con.execute("SET threads TO 1")
        if kind == "band":
            con.register("s0", pa.table({"b": w["s_key"]}))
            con.register("q0", pa.table({"lo": w["rows"][:, 0], "hi": w["rows"][:, 1]}))
            self.sql = "SELECT count(*) FROM rb r, s, q WHERE s.b - r.b BETWEEN q.lo AND q.hi"
        else:
            con.register("s0", pa.table({"b": w["s_key"], "c": w["s_x"]}))
            r = w["rows"]
            con.register("q0", pa.table({"alo": r[:, 0], "ahi": r[:, 1], "clo": r[:, 2], "chi": r[:, 3]}))
            self.sql = ("SELECT count(*) FROM rb r JOIN s ON r.b = s.b JOIN q ON r.a BETWEEN q.alo AND q.ahi "
                        "AND s.c BETWEEN q.clo AND q.chi")
        con.execute("CREATE TABLE s AS SELECT * FROM s0").fetchall()
        con.execute("CREATE TABLE q AS SELECT * FROM q0").fetchall()
        self.extra: dict[str, Any] = {}

    def push(self, lo: int, b: int) -> int:
        cols = {"b": self.w["in_key"][lo : lo + b]}
        if self.kind != "band":
            cols["a"] = self.w["in_x"][lo : lo + b]
        self.con.register("rb", self.pa.table(cols))
        n = self.con.execute(self.sql).fetchall()[0][0]
        self.con.unregister("rb")
        return int(n)


class _Ours:
    """One of our strategies: S and R loaded, the queries registered, the first arriving tuple
    pushed (compiles the kernels, builds the query index); ``push`` inserts arriving tuples."""

    def __init__(self, kind: str, algo: str, mode: str, w: dict):
        op = self.op = registry.resolve("joins", algo)(kind, mode)
        self.kind, self.mode, self.w = kind, mode, w
        n = len(w["s_key"])
        x_s = None if kind == "band" else w["s_x"].reshape(-1, 1)
        x_r = None if kind == "band" else w["r_x"].reshape(-1, 1)
        op.insert("right", np.arange(1, n + 1), w["s_key"], x_s, None)
        op.insert("left", np.arange(n + 1, 2 * n + 1), w["r_key"], x_r, None)
        t0 = time.perf_counter()
        for i, s in enumerate(wl.specs(kind, w["rows"], w.get("w"))):
            op.register(i, s)
        t_reg = time.perf_counter() - t0
        self.seq = 2 * n + 1
        self.x = None if kind == "band" else w["in_x"].reshape(-1, 1)
        t0 = time.perf_counter()
        self.push(0, 1)
        self.extra = {"register_s": t_reg, "first_insert_s": time.perf_counter() - t0}

    def push(self, lo: int, b: int) -> int:
        op, x = self.op, self.x
        c0 = op.counted
        q, _, _ = op.insert("left", np.arange(self.seq, self.seq + b), self.w["in_key"][lo : lo + b],
                            None if x is None else x[lo : lo + b], None)
        self.seq += b
        return (op.counted - c0) if self.mode == "count" else len(q)


def _measure(runners: dict, batches: list[int], repeats: int, budget: float, min_tuples: int, seed: int,
             log) -> dict:
    """The bench method (as in bench/joins_dynamic.py): for each batch size, ``repeats`` samples;
    a sample pushes ``calls`` = ceil(min_tuples / batch) batches of the same tuples through every
    runner, the runners in a fresh random order per sample (a change of load on the shared machine
    hits them alike, and none always runs on caches another just warmed); each sample is timed in
    CPU time (time.process_time, DuckDB included: it runs on its own threads, pinned to one).
    A runner stops sampling a batch size once its CPU time there exceeds ``budget`` seconds, and
    skips a batch size whose one call would take more than 3 x budget at the rate measured at the
    previous size. Before the samples of a batch size every runner makes one untimed call of that
    size (kernels compiled or loaded, caches filled: the runners' constructors pushed one tuple).
    Returns {(name, batch): {"cpu": [...], "wall": [...], "tuples", "pairs"}}."""
    rng = np.random.default_rng(seed + 99)
    names = list(runners)
    out: dict = {}
    last_rate: dict[str, float] = {}
    for batch in sorted(batches):
        calls = max(1, -(-min_tuples // batch))
        live = []
        for nm in names:
            est = batch / last_rate[nm] if nm in last_rate else 0.0
            if est > 3 * budget:
                log(f"batch={batch} {nm}: skipped (one batch would take ~{est:,.0f} s at the rate measured)")
                continue
            live.append(nm)
            out[(nm, batch)] = {"cpu": [], "wall": [], "tuples": 0, "pairs": 0}
        for nm in live:  # warm-up (untimed): one call at this batch size, the tuples of the first sample
            runners[nm].push(1, batch)
        for rep in range(repeats):
            lo = 1 + rep * calls * batch  # the same tuples for every runner in this sample
            for nm in [live[i] for i in rng.permutation(len(live))]:
                cell = out[(nm, batch)]
                if rep and sum(cell["cpu"]) > budget:
                    continue
                pairs = 0
                c0, t0 = time.process_time(), time.perf_counter()
                for k in range(calls):
                    pairs += runners[nm].push(lo + k * batch, batch)
                cell["cpu"].append(time.process_time() - c0)
                cell["wall"].append(time.perf_counter() - t0)
                cell["tuples"] += calls * batch
                cell["pairs"] += pairs
        for nm in live:
            c = out[(nm, batch)]
            last_rate[nm] = calls * batch / max(float(np.median(c["cpu"])), 1e-9)
    return out


FIG11_VARIANTS = {"ssi_eps3": ("ssi", "lazy", 3.0), "ssi_a2": ("ssi", "refined", 0.5),
                  "hotspot_a2": ("hotspot", "refined", 0.5)}


def _fig11_op(algo: str):
    """A band-join operator; ``ssi_eps3``: BJ-SSI with eps = 3, the paper's setting for Fig. 11
    (the registered strategies use eps = 0.5); ``ssi_a2`` / ``hotspot_a2``: BJ-SSI / BJ-Hotspot on
    App. A.2's refined partition (the registered strategies use App. A.1's lazy one)."""
    from ..joins import band

    base, part, eps = FIG11_VARIANTS.get(algo, (algo, "lazy", 0.5))
    op = registry.resolve("joins", base)("band", "count")
    if part != "lazy" or eps != 0.5:
        op.plan = (band.BJSSI if base == "ssi" else band.BJHotspot)(op, eps=eps, partition=part)
    return op


def _fig11_counters(op) -> dict:
    plan = op.plan
    part = getattr(plan, "part", None)
    tr = getattr(plan, "track", None)
    if tr is not None:
        part = tr.scattered
    c = {} if part is None else {"reconstructions": part.reconstructions, "groups": len(part.point)}
    if tr is not None:
        c |= {"moves": tr.moves, "hot_groups": len(tr.hot)}
    return c


def _fig11_once(algo: str, w: dict, sp: list, n0: int, seed: int, budget: float) -> Timed:
    """One timed run of :func:`_fig11` for one algorithm (the operator built and filled untimed)."""
    op = _fig11_op(algo)
    n = len(w["s_key"])
    op.insert("right", np.arange(1, n + 1), w["s_key"], None, None)
    for i in range(n0):
        op.register(i, sp[i])
    op.insert("left", np.array([n + 1]), w["in_key"][:1], None, None)
    c0 = _fig11_counters(op)
    part = getattr(op.plan, "part", None)
    rng = np.random.default_rng(seed)
    alive = list(range(n0))
    nxt = n0
    done = 0
    t_upd = t_idx = 0.0
    dirty = 0
    t0, w0 = time.process_time(), time.perf_counter()
    while done < n0 and time.process_time() - t0 < budget:
        t1 = time.process_time()
        if rng.random() < 0.5 and nxt < len(sp):
            op.register(nxt, sp[nxt])
            alive.append(nxt)
            nxt += 1
        else:
            k = int(rng.integers(len(alive)))
            alive[k], alive[-1] = alive[-1], alive[k]
            op.terminate(alive.pop())
        t2 = time.process_time()
        t_upd += t2 - t1
        done += 1
        if done % 100 == 0:  # bring the lazily rebuilt query index up to date (no probe timed)
            dirty += len(part.dirty) if part is not None else 0
            op._queries_changed()
            op._dirty = False
            t_idx += time.process_time() - t2
    secs, wall = time.process_time() - t0, time.perf_counter() - w0
    c1 = _fig11_counters(op)
    d = {k: c1[k] - c0[k] for k in ("reconstructions", "moves") if k in c1}
    extra = {"point": {"queries": n0}, "rate_per_s": done / secs, "update_us": t_upd / done * 1e6,
             "index_rebuild_us_per_update": t_idx / done * 1e6, **{f"{k}_per_update": v / done for k, v in d.items()},
             "groups_end": c1.get("groups"), "hot_groups_end": c1.get("hot_groups")}
    if part is not None:
        extra["groups_changed_per_update"] = dirty / done
    return Timed(secs, wall, (done, extra))


def _fig11(scale: float, algos: list[str], seed: int, budget: float, console: Console,
           repeat: int = 3) -> list[Result]:
    """Cost per query update: 100,000 x scale updates (insert a new query / delete a random
    alive one, p = 0.5) on 100,000 x scale queries; every 100 updates the lazily rebuilt query
    index is brought up to date as the next arriving tuple would (its rebuild is part of the
    cost; no probe is timed). Recorded apart: the time of the updates themselves (stabbing
    partition / hotspot maintenance, App. A and Theorem 1), the index rebuilds, the
    reconstructions of the partition, the groups changed (drained from ``dirty`` before each
    index rebuild) and, for hotspot tracking, intervals moved into or out of S per update.
    CPU time (time.process_time). Each algorithm runs once untimed on a tenth of the budget,
    then ``repeat`` times interleaved with the others (``budget / repeat`` CPU seconds each);
    the run of median cost per update is reported, with every sample."""
    p = _params("band", None, None, scale, 100_000)
    w = wl.band_workload(n_queries=2 * p["n_queries"], n_tuples=p["n_tuples"], n_arrivals=p["n_queries"], seed=seed)
    sp = wl.specs("band", w["rows"])
    n0 = p["n_queries"]
    names = [a for a in algos if a != "duckdb"]
    per = budget / repeat
    samples = measure_interleaved(
        {a: (lambda a=a: _fig11_once(a, w, sp, n0, seed, per)) for a in names}, repeat,
        warmup={a: (lambda a=a: _fig11_once(a, w, sp, n0, seed, budget / 10)) for a in names})
    out = []
    for algo in names:
        s = samples[algo]
        costs = [c / v[0] for c, v in zip(s.cpu, s.values, strict=True)]
        i = sorted(range(len(costs)), key=costs.__getitem__)[(len(costs) - 1) // 2]
        done, extra = s.values[i]
        extra = {**extra, **sample_fields(s.cpu, s.wall, warmed=s.warmed),
                 "us_per_update_samples": [c * 1e6 for c in costs]}
        out.append(Result(algo, s.cpu[i], done, extra=extra))
        console.log(f"fig11 {algo}: {costs[i] * 1e6:,.1f} us per query update (median of {repeat}: "
                    f"{min(costs) * 1e6:,.1f}-{max(costs) * 1e6:,.1f}; {extra['update_us']:,.1f} us maintenance, "
                    f"{extra['index_rebuild_us_per_update']:,.1f} us index rebuild)")
    return out


def _partition_once(kind: str, eps: float, what: str, rows: list, n0: int, seed: int, budget: float) -> Timed:
    """One run of :func:`_fig11_partitions`' update loop on a fresh partition (or tracker): the
    n0 insertions untimed, then up to n0 updates within ``budget`` CPU seconds."""
    from ..joins.hotspot import ALPHA, HotspotTracker
    from ..joins.partition import make_partition

    s = make_partition(kind, eps) if what == "partition" else HotspotTracker(ALPHA, eps, kind)
    for i in range(n0):
        s.insert(i, *rows[i])
    part = s if what == "partition" else s.scattered
    r0, m0, u0 = part.reconstructions, getattr(s, "moves", 0), getattr(s, "updates", 0)
    part.drain_dirty()
    rng = np.random.default_rng(seed)
    alive, nxt, done, dirty = list(range(n0)), n0, 0, 0
    t0, w0 = time.process_time(), time.perf_counter()
    while done < n0 and time.process_time() - t0 < budget:
        if rng.random() < 0.5 and nxt < len(rows):
            s.insert(nxt, *rows[nxt])
            alive.append(nxt)
            nxt += 1
        else:
            k = int(rng.integers(len(alive)))
            alive[k], alive[-1] = alive[-1], alive[k]
            s.delete(alive.pop())
        done += 1
        if what == "partition":
            dirty += len(part.drain_dirty())
    secs, wall = time.process_time() - t0, time.perf_counter() - w0
    extra = {"point": {"eps": eps}, "partition": kind, "rate_per_s": done / secs,
             "update_us": secs / done * 1e6, "reconstructions_per_update": (part.reconstructions - r0) / done,
             "groups": part.size(), "intervals": n0}
    if what == "partition":
        extra["groups_changed_per_update"] = dirty / done
    else:
        extra["moves_per_update"] = (s.moves - m0) / (s.updates - u0)
        extra["hot_groups"] = len(s.hot)
    return Timed(secs, wall, (done, extra))


def _fig11_partitions(scale: float, seed: int, budget: float, console: Console, repeat: int = 3) -> list[Result]:
    """App. A.1 (lazy) vs A.2 (refined) alone, on the band windows of fig11 (no join operator):
    n0 = 100,000 x scale intervals inserted (untimed), then up to n0 updates (p = 0.5 insert /
    delete) within ``budget`` s: time per update, reconstructions, groups changed (``dirty``)
    per update; and the same stream through a HotspotTracker (alpha = ALPHA) on either partition:
    intervals moved into or out of S per update (Theorem 1, I3: <= 5). As :func:`_fig11`: each
    configuration once untimed on a tenth of the budget, then ``repeat`` runs interleaved
    (``budget / repeat`` CPU seconds each); the run of median cost per update is reported."""
    p = _params("band", None, None, scale, 100_000)
    rows = wl.band_workload(n_queries=2 * p["n_queries"], n_tuples=100, n_arrivals=1, seed=seed)["rows"].tolist()
    n0 = p["n_queries"]
    cfgs = [(kind, eps, what) for kind in ("lazy", "refined") for eps in (0.5, 3.0) for what in ("partition", "hotspot")]
    samples = measure_interleaved(
        {c: functools.partial(_partition_once, *c, rows, n0, seed, budget / repeat) for c in cfgs}, repeat,
        warmup={c: functools.partial(_partition_once, *c, rows, n0, seed, budget / 10) for c in cfgs})
    out = []
    for kind, eps, what in cfgs:
        s = samples[(kind, eps, what)]
        costs = [c / v[0] for c, v in zip(s.cpu, s.values, strict=True)]
        i = sorted(range(len(costs)), key=costs.__getitem__)[(len(costs) - 1) // 2]
        done, extra = s.values[i]
        extra = {**extra, **sample_fields(s.cpu, s.wall, warmed=s.warmed), "warmup_cpu_s": s.warmup_cpu,
                 "us_per_update_samples": [c * 1e6 for c in costs]}
        name = f"{'partition' if what == 'partition' else 'tracker'}_{'a1' if kind == 'lazy' else 'a2'}_eps{eps:g}"
        out.append(Result(name, s.cpu[i], done, extra=extra))
        console.log(f"fig11 {name}: {extra['update_us']:,.2f} us per update (median of {repeat}: "
                    f"{min(costs) * 1e6:,.2f}-{max(costs) * 1e6:,.2f})")
    return out


def run_preset(preset: str, scale: float | None = None, algos: list[str] | None = None,
               out: str | Path = "results/joins.json", batches: list[int] | None = None, budget: float = 5.0,
               seed: int = 0, materialise: bool = True, progress: bool = True,
               points: dict[str, list[float]] | None = None, repeats: int = 5, min_tuples: int = 200) -> dict:
    """Run one preset; ``points`` replaces the preset's sweeps (e.g. {"n_queries": [100000]});
    ``repeats`` samples per cell, each of >= ``min_tuples`` arriving tuples (see :func:`_measure`)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    cfg = PRESETS[preset]
    if cfg.get("hist"):
        from .joins_hist import run_hist

        return run_hist(out=out, seed=seed, repeat=repeats)
    if cfg.get("dynamic"):
        from .joins_dynamic import run_dynamic_preset

        return run_dynamic_preset(preset, scale=0.1 if scale is None else float(scale), out=out,
                                  batch=max(batches) if batches else 1000, budget=budget, seed=seed,
                                  repeat=repeats)
    kind = cfg["kind"]
    scale = 0.1 if scale is None else float(scale)
    algos = algos or (BAND_ALGOS if kind == "band" else SELECT_ALGOS)
    # the user's path (vigil.bench.engine_path): select presets without a hotspot sweep (fig7, fig7c, fig8)
    engine = "engine" in algos and kind == "select" and "hot_frac" not in cfg.get("sweeps", {})
    if "engine" in algos:
        algos = [a for a in algos if a != "engine"]
    batches = batches or [1, 1_000, 100_000]
    console = Console()
    results: list[Result] = []
    if cfg.get("updates"):
        results = _fig11(scale, algos + (list(FIG11_VARIANTS) if algos is BAND_ALGOS else []), seed, budget, console)
        results += _fig11_partitions(scale, seed, budget, console)
    for key, values in (points or cfg.get("sweeps", {})).items():
        for v in values:
            p = cfg.get("fixed", {}) | _params(kind, key, v, scale, cfg.get("n_queries", 100_000))
            arrivals = 1 + repeats * max(max(-(-min_tuples // bt), 1) * bt for bt in batches)
            if kind == "band":
                w = wl.band_workload(**p, n_arrivals=arrivals, seed=seed)
                tau = stabbing_number(w["rows"][:, 0], w["rows"][:, 1])
            else:
                w = _clustered(p | {"n_arrivals": arrivals}, v, seed) if key == "hot_frac" else \
                    wl.select_workload(**p, n_arrivals=arrivals, seed=seed)
                tau = stabbing_number(w["rows"][:, 2], w["rows"][:, 3])
            point = {key: v}
            runners: dict[str, Any] = {}
            for algo in algos:
                if algo == "duckdb":
                    runners[algo] = _DuckDB(kind, w)
                    continue
                for mode in ["count"] + (["pairs"] if materialise and algo in ("ssi", "hotspot") else []):
                    runners[algo if mode == "count" else f"{algo}+pairs"] = _Ours(kind, algo, mode, w)
            cells = _measure(runners, batches, repeats, budget, min_tuples, seed,
                             lambda m, v=v, key=key: console.log(f"{preset} {key}={v:g} {m}"))
            for (name, batch), c in cells.items():
                us = np.array(c["cpu"]) / (c["tuples"] / len(c["cpu"])) * 1e6
                med = float(np.median(us))
                ref = cells.get(("ssi", batch))
                paired = {} if ref is None or len(ref["cpu"]) != len(c["cpu"]) else {
                    "paired_vs_ssi": float(np.median(np.array(c["cpu"]) / np.array(ref["cpu"])))}
                results.append(Result(name, float(sum(c["cpu"])), c["tuples"], per_op_us=med, extra={
                    "point": point | {"batch": batch}, "rate_per_s": 1e6 / med,
                    "rate_range_per_s": [1e6 / float(us.max()), 1e6 / float(us.min())],
                    "us_per_tuple_range": [float(us.min()), float(us.max())], "samples": len(us),
                    "wall_rate_per_s": c["tuples"] / sum(c["wall"]), "pairs_per_tuple": c["pairs"] / max(c["tuples"], 1),
                    "tau": tau, "queries": p["n_queries"], "stored": p["n_tuples"], **paired,
                    "note": f"median of {len(us)}, {us.min():.3g}-{us.max():.3g} us", **runners[name].extra,
                    **sample_fields(c["cpu"], c["wall"], warmed=True)}))
                console.log(f"{preset} {key}={v:g} batch={batch} {name}: {1e6 / med:,.0f} tuples/CPU s "
                            f"(range {1e6 / us.max():,.0f}-{1e6 / us.min():,.0f}, {len(us)} samples; tau={tau}, "
                            f"{c['pairs'] / max(c['tuples'], 1):,.0f} pairs/tuple)")
            del runners
            if engine:
                from .engine_path import joins_column

                results.append(joins_column(w, point, console))
    doc = result_doc("joins", preset, {"scale": scale, "batches": batches, "budget_s": budget, "seed": seed,
                                       "kind": kind, "repeats": repeats, "min_tuples": min_tuples,
                                       "timing": "CPU (process_time), median and range of the samples"}, results)
    if engine:
        from .engine_path import JOINS_ENGINE

        doc["params"]["engine"] = JOINS_ENGINE
    write_json(out, doc)
    print_table(doc, reference="ssi", console=console)
    if engine:
        from .engine_path import joins_engine_table

        Console(width=max(console.width, 160)).print(joins_engine_table(doc))
    _plot(doc, Path(out).with_suffix(".png"))
    return doc


def _plot(doc: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    keys = list(dict.fromkeys(k for r in res for k, v in r["extra"]["point"].items()
                              if k != "batch" and isinstance(v, int | float)))
    batch = 1_000 if any(r["extra"]["point"].get("batch") == 1_000 for r in res) else None
    fig, axes = plt.subplots(1, max(1, len(keys)), figsize=(6.0 * max(1, len(keys)), 4.4), dpi=80, squeeze=False)
    for ax, key in zip(axes[0], keys or ["queries"], strict=True):
        algos = list(dict.fromkeys(r["algo"] for r in res))
        for i, a in enumerate(algos):
            pts = sorted((r["extra"]["point"][key], r["extra"]["rate_per_s"]) for r in res
                         if r["algo"] == a and key in r["extra"]["point"] and r["extra"]["point"].get("batch") == batch)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=f"C{i % 10}", label=a,
                        linestyle="--" if a == "duckdb" else "-")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(key)
        ax.set_ylabel("updates per second" if doc["preset"] == "fig11" else "incoming tuples per second")
        ax.set_title(f"{doc['preset']} ({key}; batch {batch})", fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
