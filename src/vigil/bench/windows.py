"""Windows-family benchmarks: the experiments of paper 002 (Arasu & Widom, "Resource Sharing in
Continuous Sliding-Window Aggregates", VLDB 2004), §6.1-§6.2, plus today's peers:

========  =====================================================================================
fig9      §6.1, Fig. 9: input rate (updates + lookups per second) vs the fraction of updates, 1,000
          SUM operators S[N, 0], N = 1..1000, lookups uniform over the operators; R-INT, B-INT,
          PSoup, materialize-all, materialize-none (+ L-INT, DuckDB, bottleneck)
fig10     §6.2, Fig. 10: update rate vs N_max (R-INT SUM, B-INT MAX, B-INT-QNT, slickdeque MAX)
fig11     §6.2, Fig. 11: lookup rate vs window width W at N_max = 100,000, suffix and historical
          windows (slickdeque: suffix only); peers: DuckDB and bottleneck per lookup batch
fig12     §6.3 substream filters: dispatched to ``vigil.bench.substream`` (another module)
keyed     per-key windows (``where`` / ``group_by``), 10,000 keys x 10 queries, engine path vs one
          window per query: ``vigil.bench.windows_keyed``
========  =====================================================================================

Every algorithm of a point runs in this process on the same generated input, one after another,
through the batch API (one ``push`` per update batch, one ``lookup`` per lookup batch). Algorithm
names are ``<implementation>_<agg>`` (``rint_sum``, ``bint_max``, ``bint_qnt_quantile``,
``slickdeque_max``, ``auto_max`` ...) or a peer:

* ``duckdb_<agg>``, ``duckdb_rangejoin_<agg>``, ``bottleneck_<agg>``: today's tools recomputing
  each lookup batch from the retained elements (``vigil.bench.windows_peers``): DuckDB with prefix
  sums (SUM/COUNT/AVG) or window functions with per-lookup frames (MIN/MAX/QUANTILE), DuckDB's
  range join (O(W) per lookup), and the cheapest bottleneck/numpy reduction per looked-up slice.

``engine`` (fig9, fig11; in the defaults): the user's path, the same elements, queries and
lookups as an event log through ``Engine.process`` with the outputs written, beside the operator
path (the same implementation called directly): ``vigil.bench.engine_path`` says which points.

fig11's N_max is max(10^5, 2 W) (distinct windows at every W); ``VIGIL_FIG11_W=10000,100000``
restricts it to some widths.

Timing (fig9, fig10, fig11): at each point every algorithm first runs once untimed on the first
blocks of the point's input (the JIT compiles or loads the same kernel specializations), then
``repeat`` times (default 3), the algorithms interleaved (A B C A B C ...), each run from a fresh
operator (:func:`.common.measure_interleaved`). Each run is timed in wall and process CPU seconds
(DuckDB's threads count: it is the process's time); ``seconds`` is the median wall time,
``extra.cpu_seconds`` / ``extra.cpu_rate_per_s`` the median CPU time, with every sample and the
range (``extra.cpu_s_samples``, ``cpu_s_range``, ``wall_s_samples`` ...). A run whose measured wall
time exceeds ``budget / repeat`` seconds stops and its cost is extrapolated linearly to the whole
input (``extra.prefix``, ``extra.measured_seconds``: the median sample's). The first lookup batch of every
algorithm is checked against materialize_none (exact, independent code): ``extra.verified``.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..specs import parse_query
from ..workloads.windows import fig9_windows, lookup_qids, mixed_blocks, spread_windows, stream
from .common import Result, Samples, Timed, measure_interleaved, print_table, result_doc, write_json
from .windows_peers import KINDS as PEERS
from .windows_peers import Peer


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    algos: tuple[str, ...]
    paper: str
    default_scale: float = 0.1


PRESETS: dict[str, Preset] = {
    "fig9": Preset("fig9", "Fig. 9: input rate vs update fraction (1,000 SUM operators)",
                   ("rint_sum", "bint_sum", "lint_sum", "psoup_sum", "materialize_all_sum", "materialize_none_sum",
                    "duckdb_sum", "duckdb_rangejoin_sum", "bottleneck_sum", "engine"),
                   "R-INT best everywhere; B-INT and PSoup similar with no updates, PSoup falls and B-INT "
                   "improves as updates grow; materialize-all good only at low update rates, materialize-none "
                   "only at low lookup rates (700 MHz Pentium III)"),
    "fig10": Preset("fig10", "Fig. 10: update rate vs N_max",
                    ("rint_sum", "bint_max", "bint_qnt_quantile", "slickdeque_max", "psoup_max"),
                    "millions of updates per second; R-INT and B-INT flat in N_max, B-INT-QNT slower "
                    "(O(log N_max) per update)"),
    "fig11": Preset("fig11", "Fig. 11: lookup rate vs W (N_max = 100,000)",
                    ("rint_sum", "auto_sum", "bint_max", "slickdeque_max", "lint_max", "auto_max", "bint_qnt_quantile",
                     "auto_quantile", "psoup_max",
                     "duckdb_sum", "duckdb_max", "duckdb_quantile", "duckdb_rangejoin_sum", "duckdb_rangejoin_max",
                     "duckdb_rangejoin_quantile", "bottleneck_sum", "bottleneck_max", "engine"),
                    "R-INT ~10^7 lookups/s at every W; B-INT falls slowly with log W; B-INT-QNT ~22,000/s at "
                    "W = 100,000"),
    "keyed": Preset("keyed", "per-key windows: 10,000 keys x 10 SUM/MAX queries (where and group_by)",
                    ("engine_where", "engine_group_by", "op_shared", "op_per_query"),
                    "per substream (§3): queries sharing a key share its structure; target >= 1M elements/s "
                    "on the engine path, memory linear in keys x window", default_scale=0.2),
}

FIG9_FRACTIONS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
FIG10_NMAX = (1_000, 10_000, 100_000, 1_000_000)
FIG11_W = (1, 10, 100, 1_000, 10_000, 100_000)


def fig11_nmax(width: int) -> int:
    """N_max of a fig11 point: the paper's 10^5, or 2 W when larger, so that the 1,000 historical
    windows of width W are distinct (at W = N_max they would all be one window)."""
    return max(100_000, 2 * int(width))


# ----------------------------------------------------------------------------- operators / peers


def split_algo(algo: str) -> tuple[str, str]:
    impl, agg = algo.rsplit("_", 1)
    return impl, agg


def make(algo: str, n_max: int) -> tuple[Any, str]:
    impl, agg = split_algo(algo)
    if impl in PEERS:
        return Peer(impl, agg, n_max), agg
    from .. import registry

    return registry.resolve("windows", impl)(agg, False), agg


def register_all(op: Any, agg: str, windows: np.ndarray) -> None:
    for qid, (nl, nr) in enumerate(windows.tolist()):
        if isinstance(op, Peer):
            op.register(qid, nl, nr)
        else:
            d = {"type": "window_aggregate", "id": f"q{qid}", "agg": agg, "column": "v", "rows": [nl, nr]}
            if agg == "quantile":
                d["phi"] = 0.5
            op.register(qid, parse_query(d), 0)


def _push(op, v, s) -> None:
    if isinstance(op, Peer):
        op.push(v, s)
    else:
        op.push(v, s, None)


def _lookup(op, q, n) -> np.ndarray:
    return op.lookup(q, n) if isinstance(op, Peer) else op.lookup(q, n, np.nan)


def _verify(op, agg: str, windows: np.ndarray, vals, seqs, upto: int, qids: np.ndarray) -> bool:
    """The first lookups vs materialize_none (exact) on the same retained elements."""
    from ..windows.materialize import MaterializeNone

    ref = MaterializeNone(agg, False)
    register_all(ref, agg, windows)
    keep = int(windows[:, 0].max()) + 1
    lo = max(0, upto - keep)
    ref.push(vals[lo:upto], seqs[lo:upto], None)
    q = qids[:200]
    return bool(np.allclose(_lookup(op, q, upto), ref.lookup(q, upto, np.nan), rtol=1e-9, atol=1e-6, equal_nan=True))


# ----------------------------------------------------------------------------- runners


def _result(algo, seconds, ops, point, measured, done, verified=None, note=None) -> Result:
    extra: dict[str, Any] = {"point": point, "rate_per_s": ops / seconds if seconds > 0 else None}
    if done < ops:
        extra.update(prefix=done, measured_seconds=measured, extrapolation="linear in operations")
    if verified is not None:
        extra["verified"] = verified
    if note:
        extra["note"] = note
    return Result(algo, seconds, ops, extra=extra)


def _measured(algo: str, s: Samples, ops: int, point: dict, verified=None, note=None) -> Result:
    """The result of ``repeat`` interleaved samples of one algorithm at one point: each sample's
    CPU and wall seconds extrapolated to ``ops`` (a sample cut by the budget measured a prefix);
    ``seconds`` is the median wall time (as before), ``extra.cpu_seconds`` the median CPU time,
    both with every sample and their range (:func:`.common.sample_fields`)."""
    dones = [int(d) for d in s.values]
    f = s.fields([ops / d for d in dones])
    i = s.median_index()
    res = _result(algo, f["wall_s_median"], ops, point, float(np.median(s.wall)), dones[i], verified, note)
    res.extra.update(f, cpu_seconds=f["cpu_s_median"],
                     cpu_rate_per_s=ops / f["cpu_s_median"] if f["cpu_s_median"] > 0 else None)
    return res


def _log(console, text: str, res: Result, unit: str) -> None:
    ex = res.extra
    lo, hi = ex["cpu_s_range"]
    console.log(f"{text} {res.algo}: {res.operations / res.seconds:,.0f} {unit}/s "
                f"({ex['cpu_rate_per_s'] or 0:,.0f}/s of process CPU time; CPU median of {ex['repeat']} "
                f"{ex['cpu_s_median']:.3g} s, range {lo:.3g}-{hi:.3g} s)")


def _fig9_sample(algo, windows, vals, seqs, qids, blocks, budget, verified: dict, max_blocks=None) -> Timed:
    """One fig9 run: a fresh operator, every window filled and its lookups called once untimed,
    then the blocks (updates then lookups) timed until ``budget`` wall seconds. Value: events done."""
    op, agg = make(algo, 1000)
    register_all(op, agg, windows)
    _push(op, vals[:1000], seqs[:1000])  # every window full
    _lookup(op, qids[:4], 1000)
    if algo not in verified:
        verified[algo] = _verify(op, agg, windows, vals, seqs, 1000, qids)
    pos, qi, done, t_all, c_all = 1000, 0, 0, 0.0, 0.0
    for u, lk in blocks[:max_blocks]:
        t0, c0 = time.perf_counter(), time.process_time()
        if u:
            _push(op, vals[pos:pos + u], seqs[pos:pos + u])
            pos += u
        if lk:
            _lookup(op, qids[qi:qi + lk], pos)
            qi += lk
        t_all += time.perf_counter() - t0
        c_all += time.process_time() - c0
        done += u + lk
        if budget and t_all > budget:
            break
    return Timed(c_all, t_all, done)


def _warmups(algos, sample) -> dict:
    """The warm-up call of each algorithm: its sample on the first blocks only (the same kernels
    with the same argument types: it compiles or loads every specialization the timed runs use)."""
    return {a: functools.partial(sample, a, max_blocks=2) for a in algos}


def run_fig9(algos, scale, batches, budget, seed, console, repeat: int = 3) -> tuple[dict, list[Result]]:
    n_ops = 1000
    n_events = max(10_000, int(2_000_000 * scale))
    windows = fig9_windows(n_ops)
    vals, seqs, _ = stream(n_events + 2000, seed)
    qids = lookup_qids(n_events, n_ops, seed)
    results = []
    for frac in FIG9_FRACTIONS:
        for batch in batches:
            blocks = mixed_blocks(n_events, frac, batch)
            verified: dict[str, bool] = {}
            sample = functools.partial(_fig9_sample, windows=windows, vals=vals, seqs=seqs, qids=qids, blocks=blocks,
                                       budget=budget / repeat if budget else 0, verified=verified)
            runs = {a: functools.partial(sample, a) for a in algos}
            samples = measure_interleaved(runs, repeat, warmup=_warmups(algos, sample))
            for algo in algos:
                res = _measured(algo, samples[algo], n_events, {"update_fraction": frac, "batch": batch},
                                verified[algo])
                results.append(res)
                _log(console, f"fig9 frac={frac} batch={batch}", res, "events")
    return {"operators": n_ops, "events": n_events, "fractions": FIG9_FRACTIONS, "batches": batches}, results


def _fig10_sample(algo, n_max, vals, seqs, n_upd, batch, budget, seed, max_blocks=None) -> Timed:
    impl, agg = split_algo(algo)
    windows = spread_windows(100, max(1, n_max // 10), n_max, seed, suffix_only=impl == "slickdeque")
    op, agg = make(algo, n_max)
    register_all(op, agg, windows)
    for i in range(0, n_max, 1 << 20):  # N_max elements, untimed
        _push(op, vals[i:min(n_max, i + (1 << 20))], seqs[i:min(n_max, i + (1 << 20))])
    pos, done, t_all, c_all, calls = n_max, 0, 0.0, 0.0, 0
    while done < n_upd and (max_blocks is None or calls < max_blocks):
        k = min(batch, n_upd - done)
        t0, c0 = time.perf_counter(), time.process_time()
        _push(op, vals[pos:pos + k], seqs[pos:pos + k])
        t_all += time.perf_counter() - t0
        c_all += time.process_time() - c0
        pos += k
        done += k
        calls += 1
        if budget and t_all > budget:
            break
    return Timed(c_all, t_all, done)


def run_fig10(algos, scale, batches, budget, seed, console, repeat: int = 3) -> tuple[dict, list[Result]]:
    results = []
    n_upd = max(100_000, int(5_000_000 * scale))
    top = max(FIG10_NMAX)
    vals, seqs, _ = stream(top + n_upd + 10, seed)
    for n_max in FIG10_NMAX:
        for batch in batches:
            sample = functools.partial(_fig10_sample, n_max=n_max, vals=vals, seqs=seqs, n_upd=n_upd, batch=batch,
                                       budget=budget / repeat if budget else 0, seed=seed)
            runs = {a: functools.partial(sample, a) for a in algos}
            # warm-up: the smallest N_max's windows (the same kernels) instead of N_max elements
            warm = {a: functools.partial(_fig10_sample, a, n_max=min(n_max, FIG10_NMAX[0]), vals=vals, seqs=seqs,
                                         n_upd=n_upd, batch=batch, budget=0, seed=seed, max_blocks=2)
                    for a in algos}
            samples = measure_interleaved(runs, repeat, warmup=warm)
            for algo in algos:
                res = _measured(algo, samples[algo], n_upd, {"n_max": n_max, "batch": batch})
                results.append(res)
                _log(console, f"fig10 N_max={n_max} batch={batch}", res, "updates")
    return {"updates": n_upd, "n_max": FIG10_NMAX, "batches": batches, "operators": 100}, results


def _fig11_sample(algo, W, n_max, n_ops, vals, seqs, qids, n_look, batch, budget, seed, verified: dict,
                  max_blocks=None) -> Timed:
    impl, agg = split_algo(algo)
    windows = spread_windows(n_ops, W, n_max, seed, suffix_only=impl == "slickdeque")
    op, agg = make(algo, n_max)
    register_all(op, agg, windows)
    _push(op, vals[:n_max], seqs[:n_max])
    _lookup(op, qids[:4], n_max)
    if algo not in verified:
        verified[algo] = _verify(op, agg, windows, vals, seqs, n_max, qids)
    done, t_all, c_all, calls = 0, 0.0, 0.0, 0
    while done < n_look and (max_blocks is None or calls < max_blocks):
        k = min(batch, n_look - done)
        t0, c0 = time.perf_counter(), time.process_time()
        _lookup(op, qids[done:done + k], n_max)
        t_all += time.perf_counter() - t0
        c_all += time.process_time() - c0
        done += k
        calls += 1
        if budget and t_all > budget:
            break
    return Timed(c_all, t_all, done)


def run_fig11(algos, scale, batches, budget, seed, console, repeat: int = 3) -> tuple[dict, list[Result]]:
    n_ops = 1000
    n_look = max(20_000, int(10_000_000 * scale))
    widths = tuple(int(w) for w in (os.environ.get("VIGIL_FIG11_W") or ",".join(map(str, FIG11_W))).split(","))
    vals, seqs, _ = stream(fig11_nmax(max(widths)) + 10, seed)
    qids = lookup_qids(n_look, n_ops, seed)
    results = []
    for W in widths:
        n_max = fig11_nmax(W)
        for batch in batches:
            verified: dict[str, bool] = {}
            sample = functools.partial(_fig11_sample, W=W, n_max=n_max, n_ops=n_ops, vals=vals, seqs=seqs, qids=qids,
                                       n_look=n_look, batch=batch, budget=budget / repeat if budget else 0, seed=seed,
                                       verified=verified)
            runs = {a: functools.partial(sample, a) for a in algos}
            samples = measure_interleaved(runs, repeat, warmup=_warmups(algos, sample))
            for algo in algos:
                note = "suffix windows only" if split_algo(algo)[0] == "slickdeque" else None
                res = _measured(algo, samples[algo], n_look, {"W": W, "batch": batch}, verified[algo], note)
                res.extra["n_max"] = n_max
                results.append(res)
                _log(console, f"fig11 W={W} batch={batch}", res, "lookups")
    return {"n_max": [fig11_nmax(w) for w in widths], "operators": n_ops, "lookups": n_look, "W": widths,
            "batches": batches}, results


TIMING = ("every algorithm once untimed (its run on the first blocks: kernels compiled or loaded), "
          "then `repeat` runs, the algorithms interleaved, each from a fresh operator; seconds = median wall, "
          "extra.cpu_seconds = median process CPU, budget split across the repetitions")
RUNNERS = {"fig9": run_fig9, "fig10": run_fig10, "fig11": run_fig11}
DEFAULT_BATCHES = {"fig9": (100, 10_000), "fig10": (1_000, 100_000), "fig11": (100, 10_000)}
REFERENCE = {"fig9": "rint_sum", "fig10": "rint_sum", "fig11": "duckdb_max"}


def plot(doc: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = [r for r in doc["results"] if r["algo"] != "engine"] or doc["results"]  # engine: its own table
    batches = sorted({r["extra"]["point"]["batch"] for r in res})
    xkey = next(k for k in res[0]["extra"]["point"] if k != "batch")
    fig, axes = plt.subplots(1, len(batches), figsize=(6.0 * len(batches), 4.4), dpi=80, squeeze=False)
    for ax, b in zip(axes[0], batches, strict=True):
        algos = list(dict.fromkeys(r["algo"] for r in res))
        for i, a in enumerate(algos):
            pts = sorted((r["extra"]["point"][xkey], r["extra"]["rate_per_s"], "prefix" in r["extra"])
                         for r in res if r["algo"] == a and r["extra"]["point"]["batch"] == b)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=f"C{i % 10}", label=a,
                    linestyle="--" if a.split("_")[0] in ("duckdb", "bottleneck") else "-")
        if xkey in ("n_max", "W"):
            ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xkey)
        ax.set_ylabel("events per second" if doc["preset"] == "fig9" else
                      ("updates per second" if doc["preset"] == "fig10" else "lookups per second"))
        ax.set_title(f"{doc['preset']}: batch = {b}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def run_preset(preset: str, scale: float | None = None, algos: list[str] | None = None,
               out: str | Path = "results/windows.json", batches: list[int] | None = None, budget: float = 10.0,
               seed: int = 0, progress: bool = True, repeat: int = 3) -> dict:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    p = PRESETS[preset]
    if preset == "keyed":
        from .windows_keyed import run_preset as run_keyed

        return run_keyed(scale, algos, out, batches, seed, title=p.title, paper=p.paper, repeat=repeat)
    scale = p.default_scale if scale is None else float(scale)
    algos = list(algos or p.algos)
    engine = "engine" in algos and preset in ("fig9", "fig11")
    algos = [a for a in algos if a != "engine"]
    batches = tuple(batches or DEFAULT_BATCHES[preset])
    console = Console()
    params, results = RUNNERS[preset](algos, scale, batches, budget, seed, console, repeat=repeat)
    params.update(scale=scale, budget=budget, seed=seed, title=p.title, paper=p.paper, repeat=repeat,
                  timing=TIMING)
    if engine:  # the user's path: the same workload through Engine.process (vigil.bench.engine_path)
        from . import engine_path

        results += engine_path.windows_column(preset, scale, seed, console)
        params["engine"] = engine_path.FIG9_ENGINE if preset == "fig9" else engine_path.FIG11_ENGINE
    doc = result_doc("windows", preset, params, results)
    out = Path(out)
    write_json(out, doc)
    plot(doc, out.with_suffix(".png"))
    ref = REFERENCE[preset] if REFERENCE[preset] in algos else (algos or ["engine"])[0]
    print_table(doc, reference=ref, console=console)
    if engine:
        console.print(engine_path.engine_table(doc))
    console.print(f"wrote {out} and {out.with_suffix('.png')}")
    return doc
