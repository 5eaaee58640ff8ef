"""``vigil bench threshold --preset rearm``: re-arming threshold queries (``"repeat": true``) against
the same queries without re-arm, on fig3's workload (paper 000 §8.1: data space [0, 10^5]^d,
weights N(100, 15), queries of 10% of the volume centred by N(5*10^4, 7,500), one threshold for
all), not in the paper.

At scale 1: m = 100,000 queries, tau = 200,000 (a query expects to mature every tau / (0.1 * 100)
= 20,000 elements), a stream of 400,000 elements in pushes of ``batch``: each query re-arms about
20 times (more near the centre). Three runs of the same queries over the same elements, per
algorithm:

* ``rearm``: the queries registered with re-arm threshold tau; they mature again and again,
  re-armed inside the operator (every maturity reported);
* ``reregister``: one-shot queries, and after every push those that matured are registered again
  (same rectangle, same tau) in one bulk call: what a user would do without re-arm; a query's
  later crossings inside the push it matured in are not seen, so it matures a little less often;
* ``once``: one-shot queries, never re-registered: each matures once (most within the first
  ~1.5 x 20,000 elements) and the rest of the stream meets an empty operator.

Only the operator calls are timed, in CPU seconds (``time.process_time``); each run is repeated
``reps`` times (interleaved) and the median is reported. An operation is, as in the paper, an
element, a registration or a maturity, so per-operation costs count every maturity. The
document's ``summary`` holds the ratios rearm / reregister and rearm / once of CPU seconds, of CPU
per maturity and of CPU per operation.
"""

from __future__ import annotations

import gc
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ..workloads.threshold import ThresholdWorkloadParams, draw_elements, draw_queries
from .common import Result, png_path, result_doc, sample_fields, write_json

VARIANTS = ("rearm", "reregister", "once")
M, TAU, N = 100_000, 200_000, 400_000  # at scale 1


def _run(make, variant: str, qids, lo, hi, tau, pts, w, batch: int) -> tuple[float, int, int]:
    """(CPU seconds of the operator calls, maturities, registrations) of one run."""
    op = make()
    gc.collect()
    cpu = time.process_time
    t = 0.0
    t0 = cpu()
    op.register(qids, lo, hi, tau, tau if variant == "rearm" else None)
    t += cpu() - t0
    regs = qids.shape[0]
    mat = 0
    for a in range(0, w.shape[0], batch):
        t0 = cpu()
        q, _ = op.push(pts[a:a + batch], w[a:a + batch])
        if variant == "reregister" and q.shape[0]:
            u = np.unique(q)
            op.register(u, lo[u], hi[u], tau[u])
            regs += u.shape[0]
        t += cpu() - t0
        mat += q.shape[0]
    return t, mat, regs


def run_rearm(*, scale: float | None = None, algos: list[str] | None = None, dim: int = 1,
              out: str | Path | None = None, batch: int = 1000, seed: int = 0, reps: int = 3,
              console: Console | None = None, plot: bool = True) -> dict[str, Any]:
    from .threshold import make_operator, warm_up

    console = console or Console()
    scale = 1.0 if scale is None else float(scale)
    algos = list(algos) if algos else ["dt"]
    m, tau0, n = max(1, round(M * scale)), max(1, round(TAU * scale)), max(1, round(N * scale))
    p = ThresholdWorkloadParams(dim=dim, m=m, tau=tau0, batch=batch, seed=seed)
    rng = np.random.default_rng(seed)
    lo, hi = draw_queries(rng, m, p)
    pts, w = draw_elements(rng, n, p)
    qids = np.arange(m, dtype=np.int64)
    tau = np.full(m, tau0, np.int64)
    results: list[Result] = []
    summary: dict[str, Any] = {}
    for a in algos:
        warm_up(a, dim)
        runs: dict[str, list[tuple[float, int, int]]] = {v: [] for v in VARIANTS}
        for r in range(reps):
            for v in VARIANTS:
                runs[v].append(_run(lambda a=a: make_operator(a, dim), v, qids, lo, hi, tau, pts, w, batch))
                console.print(f"{a} {v} rep {r + 1}/{reps}: {runs[v][-1][0]:.3f} s CPU, {runs[v][-1][1]:,} maturities")
        per: dict[str, Result] = {}
        for v in VARIANTS:
            secs = [x[0] for x in runs[v]]
            mats = {x[1] for x in runs[v]}
            _, mat, regs = runs[v][0]
            ops = n + regs + mat
            per[v] = Result(f"{a}:{v}", statistics.median(secs), ops, extra={
                "variant": v, "cpu_seconds": secs, "maturities": mat, "registrations": regs, "elements": n,
                "us_per_maturity": statistics.median(secs) / max(mat, 1) * 1e6, "deterministic": len(mats) == 1,
                **sample_fields(secs, None, warmed=True)})
            results.append(per[v])
        s = {"rearm/reregister cpu": per["rearm"].seconds / per["reregister"].seconds,
             "rearm/once cpu": per["rearm"].seconds / per["once"].seconds,
             "rearm/reregister us_per_op": per["rearm"].per_op_us / per["reregister"].per_op_us,
             "rearm/once us_per_op": per["rearm"].per_op_us / per["once"].per_op_us,
             "rearm/reregister us_per_maturity": per["rearm"].extra["us_per_maturity"]
             / per["reregister"].extra["us_per_maturity"],
             "rearm/once us_per_maturity": per["rearm"].extra["us_per_maturity"] / per["once"].extra["us_per_maturity"]}
        summary[a] = s
    params = {"dim": dim, "scale": scale, "m": m, "tau": tau0, "elements": n, "batch": batch, "seed": seed,
              "reps": reps, "algos": algos, "expected_maturity": p.expected_maturity,
              "title": "Re-arming threshold queries vs the same queries without re-arm (fig3 workload)",
              "summary": summary}
    doc = result_doc("threshold", "rearm", params, results)
    _print(doc, console)
    if out is not None:
        path = write_json(out, doc)
        console.print(f"wrote {path}")
        if plot:
            console.print(f"wrote {plot_rearm(doc, png_path(out))}")
    return doc


def _print(doc: dict[str, Any], console: Console) -> None:
    prm = doc["params"]
    t = Table(title=f"{prm['title']}\nd={prm['dim']}, m={prm['m']:,}, tau={prm['tau']:,}, "
                    f"{prm['elements']:,} elements, batch {prm['batch']}, median of {prm['reps']} (CPU s)")
    for c in ("algo", "variant", "CPU s", "maturities", "registrations", "ops", "us/op", "us/maturity",
              "CPU vs rearm"):
        t.add_column(c, justify="left" if c in ("algo", "variant") else "right")
    rearm = {r["algo"].split(":")[0]: r for r in doc["results"] if r["extra"]["variant"] == "rearm"}
    for r in doc["results"]:
        a, v = r["algo"].split(":")
        e = r["extra"]
        t.add_row(a, v, f"{r['seconds']:.3f}", f"{e['maturities']:,}", f"{e['registrations']:,}",
                  f"{r['operations']:,}", f"{r['per_op_us']:.3g}", f"{e['us_per_maturity']:.3g}",
                  f"{rearm[a]['seconds'] / r['seconds']:.2f}x")
    console.print(t)
    for a, s in prm["summary"].items():
        console.print(f"{a}: rearm / reregister = {s['rearm/reregister cpu']:.2f}x CPU "
                      f"({s['rearm/reregister us_per_maturity']:.2f}x per maturity, "
                      f"{s['rearm/reregister us_per_op']:.2f}x per operation); rearm / once = "
                      f"{s['rearm/once cpu']:.2f}x CPU ({s['rearm/once us_per_maturity']:.2f}x per maturity, "
                      f"{s['rearm/once us_per_op']:.2f}x per operation)")


def plot_rearm(doc: dict[str, Any], path: str | Path) -> Path:
    """Bars: CPU seconds per algorithm and variant, maturities written on them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prm = doc["params"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=80)
    algos = prm["algos"]
    width = 0.8 / len(VARIANTS)
    for j, v in enumerate(VARIANTS):
        rs = {r["algo"].split(":")[0]: r for r in doc["results"] if r["extra"]["variant"] == v}
        xs = [i + (j - 1) * width for i in range(len(algos))]
        ys = [rs[a]["seconds"] if a in rs else 0.0 for a in algos]
        bars = ax.bar(xs, ys, width, label=v, color=f"C{j}")
        for b, a in zip(bars, algos, strict=True):
            if a in rs:
                ax.annotate(f"{rs[a]['extra']['maturities']:,}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(algos)), algos)
    ax.set_ylabel("CPU seconds (operator calls; maturities on the bars)")
    ax.set_title(f"{prm['title']}\nd={prm['dim']}, m={prm['m']:,}, tau={prm['tau']:,}, "
                 f"{prm['elements']:,} elements, batch {prm['batch']}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
