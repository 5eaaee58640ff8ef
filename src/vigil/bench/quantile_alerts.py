"""``vigil bench quantiles --preset alerts``: quantile alerts (``above`` / ``below`` with
``rearm``) on 1M*F queries (default scale 0.1: 100,000) over 10M*F elements, against the exact
crossings and against the same queries as plain notify queries.

Stream: latencies drawn from a low mode (uniform on [0, 1000)) and a high mode (uniform on
[500, 1500)) in alternating phases whose lengths grow by 1.5x, so every whole-stream quantile in
the middle of the distribution keeps moving up and down across the alert bounds.
Queries: 200 distinct (phi, bound, rearm) alerts (phi on a grid in [0.3, 0.9], the bound between
the 25th and 75th percentile of that phi's exact quantile over the run, rearm 40 below for
``above``, 40 above for ``below``; half each), eps_q 0.01, each asked by 1M*F/200 queries.

Measured (CPU seconds, ``time.process_time``): the operator (``--algos``, default casu) with the
queries registered as notify queries, alone (``notify``: update events), and with the alert
machines on its updates (``alerts``: alert / clear events, :mod:`vigil.quantiles.alerts`);
``exact_crossings``: the crossings of the exact quantile computed with the same machines (a
compiled order-statistic pass per phi and one pass per distinct alert), ``alert_events`` /
``exact_crossings`` is the target ratio (within 2x). Each run is repeated (``repeats``, default 3,
interleaved, after an untimed run on a small input: :func:`.common.measure_interleaved`) and the
median CPU seconds reported (``seconds``), with every run's CPU seconds in ``extra.cpu_s_samples``
(``cpu_s_median``, ``cpu_s_range``, ``warmed``; the fastest in ``fastest_s``).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from .common import Result, Timed, measure_interleaved, png_path, print_table, result_doc, write_json

EPS_Q = 0.01
DISTINCT = 200
BAND = 40.0


def phase_stream(n: int, seed: int = 0) -> np.ndarray:
    """float64[n]: alternating low/high phases of lengths 1000 * 1.5^i (module doc)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n)
    pos, i, length = 0, 0, 1000.0
    while pos < n:
        m = min(n - pos, int(length))
        out[pos:pos + m] = rng.random(m) * 1000.0 + (500.0 if i % 2 else 0.0)
        pos += m
        i += 1
        length *= 1.5
    return out


@numba.njit(cache=True)
def _quantile_series(ranks, values_sorted, phi):
    """The exact phi-quantile after every element: a Fenwick tree over the values' ranks."""
    n = ranks.shape[0]
    tree = np.zeros(n + 1, np.int64)
    out = np.empty(n)
    top = 1
    while top * 2 <= n:
        top *= 2
    for i in range(n):
        j = ranks[i] + 1
        while j <= n:
            tree[j] += 1
            j += j & -j
        t = int(np.ceil(phi * (i + 1)))
        if t < 1:
            t = 1
        pos, rem, step = 0, t, top
        while step > 0:
            if pos + step <= n and tree[pos + step] < rem:
                pos += step
                rem -= tree[pos]
            step //= 2
        out[i] = values_sorted[pos]
    return out


@numba.njit(cache=True)
def _crossings(series, kind, x, rearm):
    """Transitions of the alert machine (vigil.quantiles.alerts) over a value series."""
    on = 0
    c = 0
    for v in series:
        if kind == 1:
            if on == 0 and v > x:
                on, c = 1, c + 1
            elif on == 1 and v <= rearm:
                on, c = 0, c + 1
        else:
            if on == 0 and v < x:
                on, c = 1, c + 1
            elif on == 1 and v >= rearm:
                on, c = 0, c + 1
    return c


def workload(n: int, nq: int, seed: int = 0):
    x = phase_stream(n, seed)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(n, np.int64)
    ranks[order] = np.arange(n)
    vs = x[order]
    rng = np.random.default_rng(seed + 1)
    grid = np.round(np.linspace(0.3, 0.9, 13), 2)
    series = {float(p): _quantile_series(ranks, vs, float(p)) for p in grid}
    t_phi = rng.choice(grid, DISTINCT)
    t_kind = np.where(np.arange(DISTINCT) % 2 == 0, 1, 2)
    t_x = np.empty(DISTINCT)
    for i, p in enumerate(t_phi.tolist()):
        s = series[p][n // 20:]
        lo, hi = np.percentile(s, [25, 75])
        t_x[i] = np.round(lo + rng.random() * (hi - lo))
    t_r = np.where(t_kind == 1, t_x - BAND, t_x + BAND)
    exact = np.array([_crossings(series[float(p)], int(k), float(b), float(r))
                      for p, k, b, r in zip(t_phi, t_kind, t_x, t_r, strict=True)], np.int64)
    which = rng.integers(0, DISTINCT, nq)
    return x, which, t_phi, t_kind, t_x, t_r, exact


def run(algo: str, x, phi, eps_q, alerts, batch: int) -> Timed:
    """The operator over ``x`` with the queries registered (untimed): CPU and wall seconds of the
    element loop, value (updates, alert events)."""
    from .. import registry

    op = registry.resolve("quantiles", algo)(0.005, None)
    qids = np.arange(len(phi), dtype=np.int64)
    op.register_many(qids, phi, eps_q, 0, notify=True)
    updates = events = 0
    t0, w0 = time.process_time(), time.perf_counter()
    for a in range(0, len(x), batch):
        q, o, v = op.push(x[a:a + batch], np.arange(a + 1, min(a + batch, len(x)) + 1, dtype=np.int64))
        updates += len(q)
        if alerts is not None:
            _, pos, _ = alerts.filter(q, v)
            events += len(pos)
    return Timed(time.process_time() - t0, time.perf_counter() - w0, (updates, events))


def _run_alerts(algo: str, x, phi, eps_q, state, batch: int) -> Timed:
    from ..quantiles.alerts import Alerts

    return run(algo, x, phi, eps_q, Alerts.from_state(state), batch)


def run_alerts_preset(scale: float | None = None, algos: list[str] | None = None,
                      out: str | Path = "results/quantiles_alerts.json", seed: int = 0,
                      batch: int = 100_000, repeats: int = 3) -> dict[str, Any]:
    from ..quantiles.alerts import Alerts

    f = 0.1 if scale is None else float(scale)
    n, nq = int(10_000_000 * f), int(1_000_000 * f)
    t0 = time.process_time()
    x, which, t_phi, t_kind, t_x, t_r, exact = workload(n, nq, seed)
    exact_s = time.process_time() - t0
    phi = t_phi[which].astype(np.float64)
    eps_q = np.full(nq, EPS_Q)
    exact_total = int(exact[which].sum())
    results = []
    for algo in algos or ["casu"]:
        al = Alerts()
        for q, w in enumerate(which.tolist()):
            al.set(q, int(t_kind[w]), float(t_x[w]), float(t_r[w]))
        small = (x[:20_000], phi[:1000], eps_q[:1000])  # the warm-up: the same kernels on a small input
        st = al.state()  # each alerts run starts from fresh machines
        smp = measure_interleaved(
            {"notify": functools.partial(run, algo, x, phi, eps_q, None, batch),
             "alerts": functools.partial(_run_alerts, algo, x, phi, eps_q, st, batch)}, repeats,
            warmup={"notify": functools.partial(run, algo, *small, None, batch),
                    "alerts": functools.partial(_run_alerts, algo, *small, st, batch)})
        cpu_n, cpu_a = smp["notify"], smp["alerts"]
        upd_n, _ = cpu_n.values[cpu_n.median_index()]
        upd_a, ev = cpu_a.values[cpu_a.median_index()]
        sec_n, sec_a = cpu_n.fields()["cpu_s_median"], cpu_a.fields()["cpu_s_median"]
        results.append(Result(f"{algo}:notify", sec_n, n, extra={"queries": nq, "update_events": upd_n,
                                                                 **cpu_n.fields(), "fastest_s": min(cpu_n.cpu)}))
        results.append(Result(f"{algo}:alerts", sec_a, n, extra={
            "queries": nq, "alert_events": ev, "exact_crossings": exact_total,
            "ratio_events_to_exact": ev / max(1, exact_total), "updates_seen": upd_a,
            "vs_notify": sec_a / sec_n, "exact_seconds": exact_s, **cpu_a.fields(), "fastest_s": min(cpu_a.cpu)}))
    params = {"scale": f, "elements": n, "queries": nq, "distinct_alerts": DISTINCT, "eps_q": EPS_Q,
              "summary_eps": 0.005, "band": BAND, "batch": batch, "repeats": repeats}
    doc = result_doc("quantiles", "alerts", params, results)
    p = write_json(out, doc)
    print_table(doc, reference=results[0].algo)
    for r in results:
        if "alert_events" in r.extra:
            print(f"{r.algo}: {r.extra['alert_events']:,} alert/clear events, {exact_total:,} exact crossings "
                  f"(ratio {r.extra['ratio_events_to_exact']:.3f}); {r.extra['vs_notify']:.3f}x the CPU of notify")
    try:
        plot_alerts(doc, png_path(out))
    except Exception as e:  # noqa: BLE001 - a plot must not lose the results
        print(f"plot skipped: {e}")
    print(f"wrote {p}")
    return doc


def plot_alerts(doc: dict[str, Any], path: str | Path) -> None:
    """Two panels: alert/clear events beside the exact crossings (and the notify updates the same
    queries would push), and CPU seconds of notify vs alerts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = {r["algo"]: r for r in doc["results"]}
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    for algo, r in res.items():
        if "alert_events" not in r["extra"]:
            continue
        base = algo.split(":")[0]
        upd = res.get(f"{base}:notify", {}).get("extra", {}).get("update_events", 0)
        names = ["exact crossings", "alert/clear events", "notify updates"]
        vals = [r["extra"]["exact_crossings"], r["extra"]["alert_events"], upd]
        a.bar(names, vals, color=["#888", "#1f77b4", "#ccc"])
        a.set_yscale("log")
        for i, v in enumerate(vals):
            a.text(i, v, f"{v:,}", ha="center", va="bottom", fontsize=8)
        a.set_title(f"{doc['params']['queries']:,} queries x {doc['params']['elements']:,} elements", fontsize=9)
    b.bar(list(res), [r["seconds"] for r in res.values()], color=["#ccc", "#1f77b4"][:len(res)])
    b.set_ylabel("CPU seconds (element loop)")
    b.set_title("time: alerts vs the same notify queries", fontsize=9)
    for ax in (a, b):
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("quantiles / alerts", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
