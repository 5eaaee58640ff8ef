"""``vigil bench quantiles``: paper 004's experiments (§5), scaled, plus peers and the targets preset.

Presets (``--scale F`` multiplies the paper's sizes; default 0.1):

* fig5  — clustering (§5.1, Figs. 5-6): clusters and time of QC_A, QC_B, OQC for growing query sets
  (uniform and Zipf (phi, eps_q), eps = min eps_q).
* fig8  — CASU over QC_A vs QC_B clusters (§5.2): time, trigger fires, messages; semisort and uniform.
* fig9  — asynchronous updates without clustering (§5.3): 1M*F queries, 5M*F elements, 3 streams.
* fig10 — CSU vs CASU with clustering, 2M*F predefined queries, 5M*F elements (§5.4).
* fig11 — 2M*F dynamically issued queries (arrivals uniform over the stream; whole-stream queries).
* fig12 — query batches issued and dropped like a sliding window (uni10, uni20, zipf10, zipf20).
* fig7  — OQC under query deletions (§5.1, Fig. 7): cluster ratios QC_A/OQC, QC_B/OQC and CPU
  (:mod:`.quantiles_paper`; default F = 0.1).
* fig13 — sliding windows (W = 500K*F) on the three streams, 1M*F notify queries (Table 1): CPU of the
  summary alone and with the queries.
* fig14 — sliding windows: W in {200K, 600K, 1M}*F and eps in {0.005, 0.01, 0.02}, 1M*F queries.
* fig15 — CSU and CASU on a word stream (§5.7, Fig. 15; a synthetic Zipf stand-in for the paper's news
  words), Fig. 12's query batches (:mod:`.quantiles_paper`; default F = 0.01).
* eager — the §2.4 baseline (every query re-answered by first-hit at every element) beside SU, CSU and
  CASU, 1K-100K queries, summary maintenance subtracted (:mod:`.quantiles_paper`; default F = 0.1).
* spark — Spark SQL's percentile_approx (and Spark's KLL functions) on the same stream and phis as GK
  and casu, answers at 20 checkpoints, time and rank error (:mod:`.quantiles_spark`; default F = 0.1).
* peers  — the GK summary against DataSketches KLL and REQ and t-digest (fastdigest): observed rank
  error, space, elements/s; and the continuous-query peer: a KLL sketch whose sorted view is
  recomputed every 1,000 elements and every notify query re-answered from it.
* alerts — quantile alerts (above/below with rearm) on 1M*F queries: alert events against the exact
  crossings and CPU against the same notify queries (:mod:`.quantile_alerts`).
* sliding — 1,000 queries over 10,000-row windows (eps 0.01) through the engine and the operator,
  notify and lookups, beside the previous window structure (:mod:`.quantiles_user`; default F = 1).
* registered — 500 queries registered at 500 distinct positions vs all at one, through the engine,
  whole-stream and windows, notify and lookups (:mod:`.quantiles_user`; default F = 1).
* clustered — the KLL re-answer peer answering every query and answering one phi per casu cluster,
  beside casu:cluster (CPU), with the peers' failures of the per-position rank contract
  (:mod:`.quantiles_peers`; default F = 0.05).
* matched — GK, KLL, REQ, t-digest tuned to the same observed worst rank error, then CPU, size and
  relative error near the top tail (:mod:`.quantiles_peers`; default F = 0.05).
* targets — 1M notify queries: casu with 1M*F notify queries on uniform and semisort streams
  (elements/s, query-processing overhead over summary maintenance alone), the KLL re-answer peer on
  the same input, OQC's cluster count against QC_B's.

``--notify query|cluster|query,cluster`` (default query): notify queries get one update event per
query whose value changes (query), or follow their cluster (cluster: cluster / cluster_update
events, docs/contract.md; such runs are labelled ``algo:cluster``).

Every processing result records ``extra``: fires (cluster re-evaluations triggered: the paper's
message number, "the number of total times to reprocess clusters", also as paper_messages),
evaluations, changes (cluster value changes), walks (member walks), chunks (summary insertions),
messages (every output event: update events in query mode; cluster_updates + memberships in
cluster mode), update_events, cluster_updates, memberships (cluster events), register_seconds
(registration and offline clustering of predefined queries, timed apart from the element loop),
vs_kll_reanswer (targets: the peer's time over ours, same run and input), clusters, summary_seconds (GK maintenance
alone at eps on the same input) and overhead = seconds / summary_seconds - 1. The targets preset
also times GK alone at eps/4, the precision CASU's summary runs at (summary_only_eps4; overhead4 =
seconds / summary4_seconds - 1).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..workloads.quantiles import arrivals, data_stream, query_batches, query_set
from .common import (
    Result,
    Timed,
    measure_interleaved,
    plot_doc,
    png_path,
    print_table,
    result_doc,
    write_json,
)

PRESETS = ("fig5", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13", "fig14", "peers", "targets", "alerts",
           "sliding", "registered", "clustered", "matched", "spark", "fig7", "fig15", "eager")
EPS = 0.005
BATCH = 100_000
TIMING = ("every run once untimed on a small input of the same kind (kernels compiled or loaded), then `repeat` "
          "runs, interleaved; the run with the median CPU time is reported (seconds: its wall time), with every "
          "sample (extra.cpu_s_samples, wall_s_samples)")


def _op(algo: str, eps: float, rows: int | None = None):
    from ..quantiles.casu import CASU
    from ..quantiles.csu import CSU
    from ..quantiles.naive import Naive
    from ..quantiles.su import SU

    if algo == "casu_noclust":  # Algorithm 4 without clustering (§5.3)
        cls = type("CASUNoClust", (CASU,), {"clustered": False})
    elif algo == "casu_qcb":
        cls = type("CASUQCB", (CASU,), {"offline_algo": "qc_b"})
    else:
        cls = {"casu": CASU, "csu": CSU, "su": SU, "naive": Naive}[algo]
    return cls(eps, rows)


def _label(algo: str, notify: str) -> str:
    return f"{algo}:cluster" if notify == "cluster" else algo


def summary_seconds(x: np.ndarray, eps: float, batch: int = BATCH) -> float:
    from ..quantiles.gk import GKSummary

    g = GKSummary(eps)
    g.insert(x[:10])  # compile
    g = GKSummary(eps)
    t = time.perf_counter()
    for p in range(0, len(x), batch):
        g.insert(x[p:p + batch])
    return time.perf_counter() - t


def run_processing(algo: str, x: np.ndarray, phi: np.ndarray, eq: np.ndarray, eps: float = EPS,
                   batch: int = BATCH, arrive: np.ndarray | None = None,
                   drops: list[np.ndarray] | None = None, summary_s: float | None = None,
                   notify: str = "query", summary4_s: float | None = None, clock=time.perf_counter) -> Result:
    """Push x through ``algo`` with notify queries (phi, eq): predefined (registered before the
    first element), dynamic (``arrive``: each query's arrival position) or batches (``drops``:
    batch i issued at a random position, the previous batch dropped gradually before it).
    ``notify``: "query" (one update event per query whose value changes) or "cluster" (cluster /
    cluster_update events, docs/contract.md). Predefined queries: their registration and
    clustering (QC_A) are timed apart (``register_seconds``), the element loop is ``seconds``."""
    op = _op(algo, eps)
    mode: bool | str = "cluster" if notify == "cluster" else True
    qids = np.arange(len(phi), dtype=np.int64)
    reg_s = 0.0
    if arrive is None and drops is None:
        t0 = clock()
        op.register_many(qids, phi, eq, 0, notify=mode)
        for ep in op.epochs.values():
            ep.flush()
        reg_s = clock() - t0
    t0, c0 = clock(), time.process_time()
    cuts = {0, len(x)}
    events: dict[int, list[tuple[str, np.ndarray]]] = {}
    if arrive is None and drops is None:
        pass
    elif arrive is not None:
        for pos in np.unique(arrive).tolist():
            events.setdefault(pos, []).append(("reg", qids[arrive == pos]))
    else:
        rng = np.random.default_rng(9)
        issue = np.sort(rng.integers(0, len(x), len(drops)))
        issue[0] = 0
        for i, b in enumerate(drops):
            events.setdefault(int(issue[i]), []).append(("reg", b))
            if i + 1 < len(drops):  # dropped gradually (random order) before the next batch arrives
                span = max(1, int(issue[i + 1]) - int(issue[i]))
                when = int(issue[i]) + 1 + (np.arange(len(b)) * span) // max(1, len(b))
                order = rng.permutation(b)
                for pos in np.unique(when).tolist():
                    events.setdefault(min(pos, int(issue[i + 1])), []).append(("drop", order[when == pos]))
    cuts |= set(events)
    cuts |= set(range(0, len(x), batch))
    stops = sorted(c for c in cuts if 0 <= c <= len(x))
    messages = cluster_updates = memberships = 0
    curve_x, curve_t = [], []
    for a, b in zip(stops, stops[1:], strict=False):
        for kind, qs in events.get(a, []):
            if kind == "reg":
                op.register_many(qs, phi[qs], eq[qs], 0, notify=mode)
            else:
                for q in qs.tolist():
                    op.terminate(q)
        if b > a:
            q, _, _ = op.push(x[a:b], np.arange(a + 1, b + 1, dtype=np.int64))
            messages += len(q)
            if notify == "cluster":
                (mq, _, _), (cq, _, _) = op.cluster_events()
                memberships += len(mq)
                cluster_updates += len(cq)
            curve_x.append(b)
            curve_t.append(clock() - t0)
    secs = clock() - t0
    cpu = time.process_time() - c0
    if summary_s is None:
        summary_s = summary_seconds(x, eps, batch)
    step = max(1, len(curve_x) // 40)
    extra4 = {} if summary4_s is None else {"summary4_seconds": summary4_s, "overhead4": secs / summary4_s - 1}
    return Result(algo, secs, len(x), extra={
        **{k: op.stats.get(k, 0) for k in ("fires", "evaluations", "changes", "walks", "chunks")},
        "notify": notify, "cpu_seconds": cpu,
        "messages": messages + cluster_updates + memberships, "update_events": messages,
        "cluster_updates": cluster_updates, "memberships": memberships, "register_seconds": reg_s, **extra4,
        "paper_messages": op.stats.get("fires", 0),
        "clusters": op.cluster_count(), "summary_tuples": op.summary_size(), "queries": len(phi),
        "elements_per_s": len(x) / secs, "summary_seconds": summary_s, "overhead": secs / summary_s - 1,
        "curve": {"x": curve_x[::step], "per_op_us": [t / n * 1e6 for t, n in zip(curve_t[::step], curve_x[::step],
                                                                                   strict=True)],
                  "xlabel": "elements"}})


def repeated(runs: dict[str, Callable[[], Any]], repeat: int,
             warm: dict[str, Callable[[], Any]] | None = None) -> dict[str, Any]:
    """Each run ``repeat`` times, interleaved, after an untimed warm-up call (``warm[name]``: the
    run on a small input, the same kernels; else the run itself) (:func:`.common.measure_interleaved`).
    A run returns a Result (or a list of them, CPU in ``extra.cpu_seconds`` of the first) timing
    its own loop; the value of the run with the median CPU time is kept, with every sample's CPU
    and wall seconds (:func:`.common.sample_fields`) in its extra."""
    def timed(fn: Callable[[], Any]) -> Any:
        v = fn()
        r = v[0] if isinstance(v, list) else v
        return Timed(r.extra["cpu_seconds"], r.seconds, v) if "cpu_seconds" in r.extra else v

    samples = measure_interleaved({n: functools.partial(timed, fn) for n, fn in runs.items()}, repeat,
                                  warmup={n: functools.partial(timed, fn) for n, fn in warm.items()} if warm else True)
    out = {}
    for n, smp in samples.items():
        v = smp.values[smp.median_index()]
        for r in v if isinstance(v, list) else [v]:
            r.extra.update(smp.fields())
        out[n] = v
    return out


def _small(x: np.ndarray, phi: np.ndarray, eq: np.ndarray, arrive, drops, k: int = 20_000, q: int = 500) -> dict:
    """run_processing's arguments on a small input of the same kind (a warm-up: the same kernels)."""
    xs, n = x[:k], min(q, len(phi))
    return {"x": xs, "phi": phi[:n], "eq": eq[:n], "summary_s": 1.0,
            "arrive": None if arrive is None else arrivals(n, len(xs), 5),
            "drops": None if drops is None else query_batches(n, len(drops), 5)}


def run_kll_reanswer(x: np.ndarray, phi: np.ndarray, every: int = 1000, k: int = 200, batch: int = BATCH) -> Result:
    """The continuous-query peer: KLL sketch, sorted view recomputed every ``every`` elements, every
    notify query re-answered from it (messages: answers that changed)."""
    from datasketches import kll_doubles_sketch

    sk = kll_doubles_sketch(k)
    ph = np.sort(phi)
    last = None
    messages = 0
    t0 = time.perf_counter()
    for p in range(0, len(x), every):
        sk.update(x[p:p + every])
        ans = np.asarray(sk.get_quantiles(ph))
        if last is not None:
            messages += int(np.count_nonzero(ans != last))
        else:
            messages += len(ans)
        last = ans
    secs = time.perf_counter() - t0
    return Result("kll_reanswer", secs, len(x), extra={"messages": messages, "queries": len(phi),
                                                       "elements_per_s": len(x) / secs, "every": every, "k": k,
                                                       "note": f"answers up to {every - 1} elements stale"})


def _rank_error(srt: np.ndarray, vals: np.ndarray, phis: np.ndarray) -> float:
    n = len(srt)
    lo = np.searchsorted(srt, vals, "left") + 1
    hi = np.searchsorted(srt, vals, "right")
    t = np.maximum(1, np.ceil(phis * n))
    return float(np.max(np.maximum(0, np.maximum(lo - t, t - hi))) / n)


def _peer_run(name: str, x: np.ndarray, phis: np.ndarray, eps: float, batch: int) -> Timed:
    """One peer fed ``x`` in batches (timed), then asked ``phis`` (untimed): Timed with (answers,
    space in bytes, the values its rank errors are measured against or None)."""
    import fastdigest
    from datasketches import kll_doubles_sketch, req_floats_sketch

    from ..quantiles.gk import GKSummary

    srt_r = None
    c0, t0 = time.process_time(), time.perf_counter()
    if name == "gk":
        g = GKSummary(eps)
        for p in range(0, len(x), batch):
            g.insert(x[p:p + batch])
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        vals = np.array([g.query(f) for f in phis])
        space = g.m * 24
    elif name == "kll":
        s = kll_doubles_sketch(200)
        for p in range(0, len(x), batch):
            s.update(x[p:p + batch])
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        vals = np.asarray(s.get_quantiles(phis))
        space = len(s.serialize())
    elif name == "req":
        s = req_floats_sketch(12)
        x32 = x.astype(np.float32)
        for p in range(0, len(x), batch):
            s.update(x32[p:p + batch])
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        vals = np.asarray(s.get_quantiles(phis), np.float64)
        srt_r = np.sort(x32).astype(np.float64)
        space = len(s.serialize())
    else:
        d = fastdigest.TDigest()
        for p in range(0, len(x), batch):
            d.batch_update(x[p:p + batch])
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        vals = np.asarray(d.quantile_vec(phis)) if hasattr(d, "quantile_vec") else np.array([d.quantile(f) for f in phis])
        space = d.n_centroids * 16
    return Timed(cpu, wall, (vals, space, srt_r))


def run_peers(x: np.ndarray, eps: float = EPS, batch: int = BATCH, repeat: int = 3) -> list[Result]:
    """GK, KLL, REQ, t-digest on ``x``: ``repeat`` interleaved runs after a warm-up on 10,000
    elements; seconds = wall time of the run with the median CPU time."""
    srt = np.sort(x)
    phis = np.linspace(0.001, 1.0, 1000)
    names = ("gk", "kll", "req", "tdigest")
    samples = measure_interleaved(
        {n: functools.partial(_peer_run, n, x, phis, eps, batch) for n in names}, repeat,
        warmup={n: functools.partial(_peer_run, n, x[:10_000], phis, eps, batch) for n in names})
    out = []
    for name, smp in samples.items():
        i = smp.median_index()
        vals, space, srt_r = smp.values[i]
        secs = smp.wall[i]
        err = _rank_error(srt if srt_r is None else srt_r, vals, phis)
        out.append(Result(name, secs, len(x), extra={"max_rank_error": err, "space_bytes": space,
                                                     "elements_per_s": len(x) / secs, **smp.fields()}))
    return out


def _cluster_run(name: str, a: np.ndarray, b: np.ndarray, eps: float) -> int:
    from ..quantiles.clustering import qc_a, qc_b
    from ..quantiles.oqc import OQC

    if name == "qc_a":
        return len(qc_a(a, b, eps)[1])
    if name == "qc_b":
        return len(qc_b(a, b)[1])
    o = OQC()
    for q, (x, y) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        o.register(q, x, y)
    return len(o)


def run_clustering(n_points: list[int], dist: str, seed: int = 0, repeat: int = 3) -> list[Result]:
    """QC_A, QC_B and OQC on growing query sets: per point ``repeat`` interleaved runs after a warm-up
    on the smallest point; seconds = wall time of the run with the median CPU time."""
    from ..quantiles.clustering import query_interval

    out = []
    phi, eq = query_set(max(n_points), dist, (1e-4, 1.0), seed)
    names = ("qc_a", "qc_b", "oqc")
    n0 = min(n_points)
    a0, b0 = query_interval(phi[:n0], eq[:n0], float(eq[:n0].min()))
    warm = {nm: functools.partial(_cluster_run, nm, a0, b0, float(eq[:n0].min())) for nm in names}
    for n in n_points:
        ph, e = phi[:n], eq[:n]
        eps = float(e.min())
        a, b = query_interval(ph, e, eps)
        samples = measure_interleaved({nm: functools.partial(_cluster_run, nm, a, b, eps) for nm in names}, repeat,
                                      warmup=warm)
        for nm, smp in samples.items():
            i = smp.median_index()
            out.append(Result(nm, smp.wall[i], n, extra={"clusters": smp.values[i], "point": {"queries": n},
                                                         "dist": dist, **smp.fields()}))
    return out


def _sliding_run(x: np.ndarray, window: int, eps: float, phi: np.ndarray, eq: np.ndarray, nq: int, batch: int,
                 label: str) -> Result:
    from ..quantiles.sliding import Sliding

    t0 = time.process_time()
    op = Sliding(eps, window)
    for q in range(nq):
        op.register(q, float(phi[q]), float(eq[q]), 0, notify=True)
    reg = time.process_time() - t0
    t0, w0 = time.process_time(), time.perf_counter()
    messages = 0
    for p in range(0, len(x), batch):
        q, _, _ = op.push(x[p:p + batch], np.arange(p + 1, p + 1 + len(x[p:p + batch]), dtype=np.int64))
        messages += len(q)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    return Result(label, cpu, len(x), extra={
        "window": window, "eps": eps, "queries": nq, "messages": messages, "evaluations": op.evaluations,
        "buckets": len(op.btup), "register_seconds": reg, "clock": "process_time", "wall_seconds": wall,
        "point": {"window": window, "eps": eps}})


def run_sliding(x: np.ndarray, window: int, eps: float, n_queries: int, batch: int = 10_000,
                repeat: int = 3) -> list[Result]:
    """The sliding-window summary alone and with ``n_queries`` notify queries, ``repeat`` times
    interleaved after a warm-up on a small input (CPU seconds of the push loop; the median run)."""
    phi, eq = query_set(n_queries, "uniform", (eps, 4 * eps), 5)
    labels = {"sliding_summary": 0, "sliding_csu": n_queries}

    def timed(fn: Callable[[], Result]) -> Timed:
        r = fn()
        return Timed(r.seconds, r.extra["wall_seconds"], r)

    runs = {lb: functools.partial(timed, functools.partial(_sliding_run, x, window, eps, phi, eq, nq, batch, lb))
            for lb, nq in labels.items()}
    xs = x[:4000]
    warm = {lb: functools.partial(_sliding_run, xs, min(window, 1000), eps, phi, eq, min(nq, 50), batch, lb)
            for lb, nq in labels.items()}
    res = []
    for smp in measure_interleaved(runs, repeat, warmup=warm).values():
        r = smp.values[smp.median_index()]
        r.extra.update(smp.fields())
        res.append(r)
    if res[0].seconds > 0:
        res[1].extra["x_summary"] = res[1].seconds / res[0].seconds
    return res


def _run_peers_preset(preset: str, scale: float | None, out: str | Path, seed: int, repeat: int = 3) -> dict[str, Any]:
    from .quantiles_peers import plot_peers, run_clustered_preset, run_matched_preset

    f = 0.05 if scale is None else float(scale)
    if preset == "clustered":
        results = run_clustered_preset(f, seed, EPS, lambda x, phi, eq, s: run_processing(
            "casu", x, phi, eq, summary_s=s, notify="cluster"), lambda x: summary_seconds(x, EPS), repeat)
        params = {"scale": f, "eps": EPS, "repeat": repeat, "elements": int(2_000_000 * f), "queries": max(1000, int(1_000_000 * f))}
    else:
        results = run_matched_preset(f, seed, repeat)
        params = {"scale": f, "elements": int(5_000_000 * f), "repeat": repeat, "target": "GK's observed worst rank error at eps 0.005"}
    doc = result_doc("quantiles", preset, params, results)
    p = write_json(out, doc)
    print_table(doc, reference=results[0].algo)
    try:
        plot_peers(doc, png_path(out))
    except Exception as e:  # noqa: BLE001 - a plot must not lose the results
        print(f"plot skipped: {e}")
    print(f"wrote {p}")
    return doc


def run_paper(preset: str, scale: float | None, out: str | Path, seed: int = 0, notify: str = "query",
              **kw: Any) -> dict[str, Any]:
    """fig7, fig15, eager (:mod:`.quantiles_paper`); ``kw``: repeat, budget, queries."""
    from .quantiles_paper import run_paper_preset

    hooks = {"run_processing": run_processing, "summary_seconds": summary_seconds, "op": _op}
    return run_paper_preset(preset, scale, out, seed, notify, hooks, **kw)


def run_preset(preset: str, scale: float | None = None, algos: list[str] | None = None,
               out: str | Path = "results/quantiles.json", seed: int = 0, progress: bool = True,
               notify: str = "query", peer: bool = True, repeat: int = 3) -> dict[str, Any]:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    if preset == "alerts":  # quantile alerts vs exact crossings: bench/quantile_alerts.py
        from .quantile_alerts import run_alerts_preset

        return run_alerts_preset(scale, algos, out, seed, repeats=repeat)
    if preset in ("clustered", "matched"):  # the peers in their strongest form: bench/quantiles_peers.py
        return _run_peers_preset(preset, scale, out, seed, repeat)
    if preset == "spark":  # Spark SQL's percentile_approx as a peer: bench/quantiles_spark.py
        from .quantiles_spark import run_spark_preset

        return run_spark_preset(scale, out, seed, repeat)
    if preset in ("fig7", "fig15", "eager"):  # the figures added last: bench/quantiles_paper.py
        return run_paper(preset, scale, out, seed, notify, repeat=repeat)
    if preset in ("sliding", "registered"):  # the user's path: bench/quantiles_user.py
        from .quantiles_user import run_user_preset

        return run_user_preset(preset, scale, out, seed, repeat)
    f = 0.1 if scale is None else float(scale)
    n_q = max(1000, int(2_000_000 * f))
    results: list[Result] = []
    modes = [m.strip() for m in notify.split(",") if m.strip()]
    if not modes or set(modes) - {"query", "cluster"}:
        raise ValueError(f"notify must be query, cluster or both (comma-separated), got {notify!r}")
    params: dict[str, Any] = {"scale": f, "eps": EPS, "notify": notify, "repeat": repeat, "timing": TIMING}
    if preset == "fig5":
        pts = sorted({max(100, int(p * f)) for p in (20_000, 60_000, 100_000, 200_000, 400_000, 1_000_000, 2_000_000)})
        for dist in ("uniform", "zipf"):
            results += run_clustering(pts, dist, seed, repeat=repeat)
        params.update(points=pts)
    elif preset in ("fig8", "fig9", "fig10", "fig11", "fig12", "targets"):
        n_x = int((2_000_000 if preset in ("fig8", "fig12", "targets") else 5_000_000) * f)
        streams = {"fig8": ["semisort", "uniform"], "fig9": ["uniform", "normal", "semisort"],
                   "fig10": ["uniform", "normal", "semisort"], "fig11": ["semisort", "normal"],
                   "fig12": ["semisort"], "targets": ["uniform", "semisort"]}[preset]
        names = algos or {"fig8": ["casu", "casu_qcb"], "fig9": ["casu_noclust"], "fig10": ["csu", "casu"],
                          "fig11": ["csu", "casu"], "fig12": ["casu"], "targets": ["casu"]}[preset]
        nq = int(1_000_000 * f) if preset in ("fig9", "targets") else n_q
        params.update(elements=n_x, queries=nq, streams=streams)
        for kind in streams:
            x = data_stream(kind, n_x, seed)
            sec = summary_seconds(x, EPS)
            sec4 = summary_seconds(x, EPS / 4) if preset == "targets" else None
            if preset == "fig12":
                for dist in ("uniform", "zipf"):
                    phi, eq = query_set(nq, dist, (0.005, 0.02), seed + 1)
                    for k in (10, 20):
                        drops = query_batches(nq, k, seed)
                        runs = {(a, md): functools.partial(run_processing, a, x, phi, eq, drops=drops, summary_s=sec,
                                                           notify=md) for a in names for md in modes}
                        sm = _small(x, phi, eq, None, drops)
                        warm = {(a, md): functools.partial(run_processing, a, notify=md, **sm) for a, md in runs}
                        for (a, md), r in repeated(runs, repeat, warm).items():
                            r.extra.update(stream=kind, pattern=f"{dist[:3]}{k}")
                            r.algo = f"{_label(a, md)}/{dist[:3]}{k}"
                            results.append(r)
                continue
            phi, eq = query_set(nq, "uniform", (0.005, 0.02), seed + 1)
            arrive = arrivals(nq, n_x, seed) if preset == "fig11" else None
            runs = {(a, md): functools.partial(run_processing, a, x, phi, eq, arrive=arrive, summary_s=sec, notify=md,
                                               summary4_s=sec4) for a in names for md in modes}
            sm = _small(x, phi, eq, arrive, None)
            warm = {(a, md): functools.partial(run_processing, a, notify=md, **sm) for a, md in runs}
            for (a, md), r in repeated(runs, repeat, warm).items():
                r.extra["stream"] = kind
                r.algo = f"{_label(a, md)}/{kind}"
                results.append(r)
            if preset == "targets":
                if peer:
                    r = repeated({"kll": functools.partial(run_kll_reanswer, x, phi)}, repeat,
                                 {"kll": functools.partial(run_kll_reanswer, x[:20_000], phi)})["kll"]
                    r.extra["stream"] = kind
                    r.algo = f"kll_reanswer/{kind}"
                    results.append(r)
                    for c in results[-1 - len(names) * len(modes):-1]:  # our speed over the peer's, same run and input
                        c.extra["vs_kll_reanswer"] = r.seconds / c.seconds
                results.append(Result(f"summary_only/{kind}", sec, n_x, extra={"stream": kind}))
                results.append(Result(f"summary_only_eps4/{kind}", sec4, n_x, extra={"stream": kind, "eps": EPS / 4}))
        if preset == "targets":
            from ..quantiles.clustering import qc_b, query_interval
            from ..quantiles.oqc import OQC

            phi, eq = query_set(nq, "uniform", (0.005, 0.02), seed + 1)
            a_, b_ = query_interval(phi, eq, EPS)
            o = OQC()
            t0 = time.perf_counter()
            for q in np.random.default_rng(seed).permutation(nq).tolist():
                o.register(q, float(a_[q]), float(b_[q]))
            t_oqc = time.perf_counter() - t0
            kb = len(qc_b(a_, b_)[1])
            results.append(Result("oqc_vs_qcb", t_oqc, nq, extra={"oqc_clusters": len(o), "qcb_clusters": kb,
                                                                  "ratio": len(o) / kb}))
    elif preset == "peers":
        n_x = int(5_000_000 * f)
        x = data_stream("uniform", n_x, seed)
        results += run_peers(x, repeat=repeat)
        params.update(elements=n_x)
    elif preset in ("fig13", "fig14"):
        n_x = int(2_000_000 * f)
        nq = max(100, int(1_000_000 * f))  # Table 1's N_q = 1M, scaled like the stream
        params.update(elements=n_x, queries=nq, clock="process_time", note="notify queries 1M*F (Table 1)")
        if preset == "fig13":
            for kind in ("uniform", "normal", "semisort"):
                for r in run_sliding(data_stream(kind, n_x, seed), int(500_000 * f), EPS, nq, repeat=repeat):
                    r.algo = f"{r.algo}/{kind}"
                    r.extra["stream"] = kind
                    results.append(r)
        else:
            x = data_stream("semisort", n_x, seed)
            for w in (200_000, 600_000, 1_000_000):
                for e in (0.005, 0.01, 0.02):
                    results += run_sliding(x, int(w * f), e, nq, repeat=repeat)
    doc = result_doc("quantiles", preset, params, results)
    p = write_json(out, doc)
    print_table(doc, reference=results[0].algo if results else "casu")
    try:
        plot_doc(doc, png_path(out), title=f"quantiles / {preset}")
    except Exception as e:  # noqa: BLE001 - a plot must not lose the results
        print(f"plot skipped: {e}")
    print(f"wrote {p}")
    return doc
