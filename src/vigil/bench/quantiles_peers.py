"""``vigil bench quantiles --preset clustered|matched``: the quantile peers in their strongest form.

* clustered — the continuous-query peer (one KLL sketch, sorted view recomputed every 1,000
  elements) in two forms: ``kll_reanswer`` re-answers every notify query, ``kll_clustered``
  re-answers one representative phi per cluster of queries (the midpoint of the cluster's
  interval; the clusters are casu's own: QC_A over the query intervals at casu's summary eps,
  eps/4), beside ``casu:cluster`` on the same input. All timed in process CPU. Each peer is then run
  again (untimed) to score the per-position rank contract of docs/contract.md (an answer for
  (phi, eps_q) at position N has a rank within eps_q N + 1 of max(1, ceil(phi N))): *fresh* checks
  right after a recomputation, *stale* checks at a random position before the next one, the
  answer held there being the last computed. ``kll_clustered_k`` uses a larger k (``KLL_K_FINE``).
* matched — GK, KLL, REQ and t-digest tuned (k / compression over a grid) to the worst rank error
  GK shows at eps = 0.005, then CPU per element and serialized size side by side, and the relative
  rank error near the top tail (phi in [0.9, 0.9999]: rank error / (N - rank + 1), what REQ in
  high-rank-accuracy mode bounds) beside the additive error.

Timing (both): an untimed warm-up run each, then ``repeat`` runs interleaved (A B C A B C ...,
:func:`.common.measure_interleaved`), process CPU; ``seconds`` is the median, every sample is in
``extra.cpu_s_samples`` (``cpu_s_median``, ``cpu_s_range``, ``wall_s_*``, ``repeat``, ``warmed``).
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from ..workloads.quantiles import data_stream, query_set
from .common import Result, Timed, measure_interleaved

EVERY = 1000
KLL_K = 200
KLL_K_FINE = 1600
MAX_CHECKS = 200  # checkpoints scored per kind (fresh, stale) and peer
MAX_CHECK_QUERIES = 20_000


def casu_clusters(phi: np.ndarray, eq: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(cluster of each query, representative phi of each cluster): QC_A over the query intervals at
    casu's summary eps (eps * CASU.summary_ratio), as its epoch clusters predefined queries."""
    from ..quantiles.casu import CASU
    from ..quantiles.clustering import qc_a, query_interval

    seps = eps * CASU.summary_ratio
    a, b = query_interval(phi, np.maximum(eq, eps), seps)
    cluster, ca, cb = qc_a(a, b, seps)
    return cluster, np.clip((np.asarray(ca) + np.asarray(cb)) / 2, 1e-12, 1.0)


def _ranks(srt: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.searchsorted(srt, vals, "left") + 1, np.searchsorted(srt, vals, "right")


def contract_failures(srt: np.ndarray, vals: np.ndarray, phi: np.ndarray, eq: np.ndarray) -> np.ndarray:
    """bool per query: the answer's rank interval misses max(1, ceil(phi N)) by more than eq N + 1."""
    n = len(srt)
    lo, hi = _ranks(srt, vals)
    t = np.maximum(1, np.ceil(phi * n - 1e-9))
    return np.maximum(0, np.maximum(lo - t, t - hi)) > eq * n + 1


def run_kll_peer(x: np.ndarray, phi: np.ndarray, eq: np.ndarray, cluster: np.ndarray | None = None,
                 rep: np.ndarray | None = None, k: int = KLL_K, every: int = EVERY, check: bool = False,
                 seed: int = 0) -> tuple[float, dict[str, Any]]:
    """CPU seconds and extra of the KLL re-answer peer: every query (cluster None) or one
    representative phi per cluster, answers recomputed every ``every`` elements. ``check``: score
    the contract instead (not timed)."""
    from datasketches import kll_doubles_sketch

    sk = kll_doubles_sketch(k)
    ask = np.sort(phi) if cluster is None else rep
    last = None
    messages = 0
    n_chk = len(range(0, len(x), every))
    stride = max(1, n_chk // MAX_CHECKS)
    rng = np.random.default_rng(seed)
    qs = np.sort(rng.choice(len(phi), min(len(phi), MAX_CHECK_QUERIES), replace=False))
    fails = {"fresh": [0, 0, 0, 0], "stale": [0, 0, 0, 0]}  # failed pairs, pairs, failed positions, positions
    t0, w0 = time.process_time(), time.perf_counter()
    for i, p in enumerate(range(0, len(x), every)):
        sk.update(x[p:p + every])
        ans = np.asarray(sk.get_quantiles(ask))
        if not check:
            messages += len(ans) if last is None else int(np.count_nonzero(ans != last))
            last = ans
            continue
        if i % stride:
            continue
        n = min(p + every, len(x))
        if cluster is None:
            held = ans[np.searchsorted(ask, phi[qs])]  # ask is phi sorted: the answer of each phi
        else:
            held = ans[cluster[qs]]
        stale_n = int(rng.integers(n + 1, n + every)) if n + 1 < min(n + every, len(x) + 1) else None
        for kind, at in (("fresh", n), ("stale", stale_n)):
            if at is None or at > len(x):
                continue
            bad = contract_failures(np.sort(x[:at]), held, phi[qs], np.maximum(eq[qs], 0.0))
            f = fails[kind]
            f[0] += int(bad.sum())
            f[1] += len(bad)
            f[2] += int(bad.any())
            f[3] += 1
    secs = time.process_time() - t0
    if check:
        return secs, {f"{kind}_{name}": v for kind, f in fails.items()
                      for name, v in (("pair_fail_frac", f[0] / max(1, f[1])), ("position_fail_frac", f[2] / max(1, f[3])),
                                      ("pairs", f[1]), ("positions", f[3]))}
    return secs, {"messages": messages, "answered_per_recompute": len(ask), "k": k, "every": every,
                  "wall_seconds": time.perf_counter() - w0}


def _kll_timed(*args, **kw) -> Timed:
    secs, extra = run_kll_peer(*args, **kw)
    return Timed(secs, extra["wall_seconds"], extra)


def _casu_timed(run_casu, *args) -> Timed:
    r = run_casu(*args)
    return Timed(r.extra["cpu_seconds"], r.seconds, r)


def run_clustered_preset(f: float, seed: int, eps: float, run_casu, summary=None, repeat: int = 3,
                         streams: tuple[str, ...] = ("uniform", "semisort"),
                         kinds: tuple[str, ...] = ("kll_reanswer", "kll_clustered", "kll_clustered_k")) -> list[Result]:
    """``run_casu(x, phi, eq, summary_s)``: casu:cluster's Result on the same input (wall seconds,
    CPU in ``extra.cpu_seconds``; passed in by :mod:`.quantiles`, which this module does not import),
    ``summary(x)``: the summary's seconds on ``x`` (None: not measured). casu and every peer run once
    untimed on a small input (20,000 elements, 500 queries), then ``repeat`` times interleaved
    (:func:`.common.measure_interleaved`); the median CPU seconds are reported, with every sample."""
    n_x, nq = int(2_000_000 * f), max(1000, int(1_000_000 * f))
    phi, eq = query_set(nq, "uniform", (0.005, 0.02), seed + 1)
    cluster, rep = casu_clusters(phi, eq, eps)
    sq = min(500, nq)
    cl_s, rep_s = casu_clusters(phi[:sq], eq[:sq], eps)
    out: list[Result] = []
    for kind in streams:
        x = data_stream(kind, n_x, seed)
        sm = x[:20_000]
        sum_s = summary(x) if summary is not None else None
        runs = {"casu": functools.partial(_casu_timed, run_casu, x, phi, eq, sum_s)}
        warm = {"casu": functools.partial(_casu_timed, run_casu, sm, phi[:sq], eq[:sq], 1.0)}
        for peer in kinds:
            cl = None if peer == "kll_reanswer" else cluster
            k = KLL_K_FINE if peer == "kll_clustered_k" else KLL_K
            runs[peer] = functools.partial(_kll_timed, x, phi, eq, cl, rep, k)
            warm[peer] = functools.partial(_kll_timed, sm, phi[:sq], eq[:sq], None if cl is None else cl_s, rep_s, k)
        smp = measure_interleaved(runs, repeat, warmup=warm)
        fields = {name: sm_.fields() for name, sm_ in smp.items()}
        c = smp["casu"]
        r = c.values[c.median_index()]
        casu_s = fields["casu"]["cpu_s_median"]
        r.algo = f"casu:cluster/{kind}"
        r.seconds, r.per_op_us = casu_s, casu_s / n_x * 1e6
        r.extra.update(stream=kind, clock="process_time", elements_per_s=n_x / casu_s, **fields["casu"])
        r.extra.pop("curve", None)
        out.append(r)
        for peer in kinds:
            cl = None if peer == "kll_reanswer" else cluster
            k = KLL_K_FINE if peer == "kll_clustered_k" else KLL_K
            ps = smp[peer]
            secs = fields[peer]["cpu_s_median"]
            _, chk = run_kll_peer(x, phi, eq, cl, rep, k, check=True, seed=seed)
            res = Result(f"{peer}/{kind}", secs, n_x, extra={**ps.values[ps.median_index()], **chk, "stream": kind,
                                                             "queries": nq, "clusters": int(rep.size),
                                                             "clock": "process_time", "elements_per_s": n_x / secs,
                                                             **fields[peer]})
            res.extra["casu_speedup"] = secs / casu_s  # the peer's CPU over casu's, medians of the same runs
            out.append(res)
    return out


def _rank_err(srt: np.ndarray, vals: np.ndarray, phis: np.ndarray) -> np.ndarray:
    n = len(srt)
    lo, hi = _ranks(srt, vals)
    t = np.maximum(1, np.ceil(phis * n - 1e-9))
    return np.maximum(0, np.maximum(lo - t, t - hi)).astype(np.float64)


def _build(name: str, param: float, x: np.ndarray, batch: int = 100_000):
    """(sketch, its answer function, its size in bytes)."""
    if name == "gk":
        from ..quantiles.gk import GKSummary

        g = GKSummary(param)
        for p in range(0, len(x), batch):
            g.insert(x[p:p + batch])
        return g, lambda ph: np.array([g.query(float(v)) for v in ph]), lambda: g.m * 24
    if name == "kll":
        from datasketches import kll_doubles_sketch

        s = kll_doubles_sketch(int(param))
    elif name == "req":
        from datasketches import req_floats_sketch

        s = req_floats_sketch(int(param))
    else:
        import fastdigest

        d = fastdigest.TDigest(max_centroids=int(param))
        for p in range(0, len(x), batch):
            d.batch_update(x[p:p + batch])
        return d, lambda ph: np.asarray(d.quantile_vec(ph)), lambda: d.n_centroids * 16
    xs = x.astype(np.float32) if name == "req" else x
    for p in range(0, len(x), batch):
        s.update(xs[p:p + batch])
    return s, lambda ph: np.asarray(s.get_quantiles(ph), np.float64), lambda: len(s.serialize())


GRIDS = {"gk": [0.005], "kll": [64, 96, 128, 160, 200, 256, 320, 400, 512, 640, 800, 1024, 1600],
         "req": [4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024],
         "tdigest": [4, 6, 8, 10, 12, 14, 17, 20, 25, 30, 40, 60, 80, 100, 130, 200, 400, 1000]}
TAIL = 1.0 - np.logspace(-4, -1, 60)  # phi in [0.9, 0.9999]


def _score(name: str, prm: float, x: np.ndarray, srt: np.ndarray, phis: np.ndarray, times: int):
    """Median over ``times`` builds (KLL and REQ are randomized) of the worst additive rank error /
    N, and per build: CPU seconds, size, the tail's relative errors."""
    errs, cpu, rels, size = [], [], [], 0
    n = len(x)
    for _ in range(times):
        t0 = time.process_time()
        _, ans, sz = _build(name, prm, x)
        cpu.append(time.process_time() - t0)
        errs.append(float(_rank_err(srt, ans(phis), phis).max() / n))
        rels.append(_rank_err(srt, ans(TAIL), TAIL) / (n - np.maximum(1, np.ceil(TAIL * n - 1e-9)) + 1))
        size = int(sz())
    return float(np.median(errs)), errs, cpu, rels, size


def run_matched_preset(f: float, seed: int, repeat: int = 3) -> list[Result]:
    """GK at eps = 0.005 sets the target (its observed worst rank error); every other sketch's
    parameter is the grid value whose median observed worst error is nearest (log ratio) to it."""
    n_x = int(5_000_000 * f)
    x = data_stream("uniform", n_x, seed).astype(np.float32).astype(np.float64)  # one reference for all
    srt = np.sort(x)
    phis = np.linspace(0.001, 1.0, 1000)
    _build("gk", 0.005, x[:1000])  # compile the kernels outside the timing
    target = None
    out: list[Result] = []
    tuned = {}
    for name, grid in GRIDS.items():
        tries = 1 if name in ("gk", "tdigest") else repeat  # deterministic ones once
        tried = [(_score(name, prm, x, srt, phis, tries)[0], prm) for prm in grid]
        if target is None:
            target = tried[0][0]
        _, prm = min(tried, key=lambda e: abs(np.log(max(e[0], 1e-12) / target)))
        tuned[name] = (prm, tried, _score(name, prm, x, srt, phis, repeat))
    # CPU of each tuned sketch's build: an untimed build each, then `repeat` builds interleaved
    smp = measure_interleaved({nm: functools.partial(_build, nm, prm, x) for nm, (prm, _, _) in tuned.items()}, repeat)
    for name, (prm, tried, (err, errs, _, rels, size)) in tuned.items():
        rel = np.vstack(rels)
        fl = smp[name].fields()
        med = fl["cpu_s_median"]
        out.append(Result(name, med, n_x, extra={
            "param": prm, "param_name": "eps" if name == "gk" else ("max_centroids" if name == "tdigest" else "k"),
            "max_rank_error": err, "max_rank_error_runs": errs, "target": target, "vs_target": err / target,
            "space_bytes": size, "elements_per_s": n_x / med, "cpu_runs": fl["cpu_s_samples"],
            "tail_max_rel_error": float(np.median(rel.max(axis=1))),
            "tail_median_rel_error": float(np.median(np.median(rel, axis=1))),
            "tuning": [{"param": p, "max_rank_error": e} for e, p in tried], "clock": "process_time", **fl}))
    return out


def plot_peers(doc: dict[str, Any], path) -> None:
    """clustered: CPU seconds and the contract's failed fractions per run; matched: CPU per
    element, size, additive and tail relative error per sketch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    names = [r["algo"] for r in res]
    if doc["preset"] == "clustered":
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=80)
        a.barh(names, [r["seconds"] for r in res], color="C0")
        a.set_xscale("log")
        a.set_xlabel("CPU seconds (element loop)")
        y = np.arange(len(res))
        for off, kind, c in ((-0.2, "fresh", "C2"), (0.2, "stale", "C3")):
            b.barh(y + off, [r["extra"].get(f"{kind}_pair_fail_frac", 0) for r in res], 0.4, color=c, label=kind)
        b.set_yticks(y, names)
        b.set_xlabel("fraction of (query, position) checks failing the contract")
        b.legend()
    else:
        fig, axs = plt.subplots(1, 4, figsize=(14, 3.6), dpi=80)
        for ax, key, lab in zip(axs, ("per_op_us", "space_bytes", "max_rank_error", "tail_max_rel_error"),
                                ("CPU us / element", "serialized bytes", "worst rank error / N",
                                 "worst relative rank error, phi 0.9-0.9999"), strict=True):
            ax.bar(names, [r[key] if key in r else r["extra"][key] for r in res], color="C0")
            ax.set_title(lab, fontsize=9)
            if key == "tail_max_rel_error":
                ax.set_yscale("log")
    fig.suptitle(f"quantiles / {doc['preset']} ({doc['machine']['date'][:16]}, {doc['machine']['git_commit']})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
