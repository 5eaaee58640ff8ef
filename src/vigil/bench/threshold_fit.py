"""``vigil bench threshold --fit``: the cost model of ``vigil.threshold.auto`` timed on this
machine (push and build tables per algorithm, dimension, alive queries and batch size; DT's
pushes also at a second tau / m), written as the shipped defaults, and the map of which
algorithm wins over (m, batch size, d)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..workloads.threshold import ThresholdWorkloadParams
from .threshold import make_operator, warm_up

#: tau / m of the fit's workload (fig3's ratio) and of DT's second push table (fig4's smallest m)
FIT_RATIO, FIT_HI_RATIO = 20, 200


def fit_auto_model(*, scale: float = 1.0, dims: Sequence[int] = (1, 2), seed: int = 0,
                   console: Console | None = None, max_seconds: float = 1.0,
                   algos: Sequence[str] | None = None, ratio: int = FIT_RATIO,
                   hi_ratio: int | None = FIT_HI_RATIO) -> dict[str, Any]:
    """Time pushes (m alive queries x batch size B) and builds (registering m queries at once) of
    every algorithm auto chooses from, on this machine: the tables of
    ``vigil.threshold.auto.CostModel``.

    Workload: fig3's queries and elements with fig3's threshold-to-queries ratio (tau = 20 m, as
    in every fig3/fig4/batch point), so a push carries the signals, rounds and maturities of a
    real trace: with tau fixed at 20M the model saw DT almost without rounds and predicted its
    pushes ~20x too cheap on the batch preset. Each (algorithm, m, B) cell starts from a fresh
    operator (the build is timed) and pushes fresh batches while at least half of the m queries
    are alive (at most 20 pushes, ~0.2 max_seconds); the cell is the fastest of those pushes (to
    damp the load of a shared machine). Scan-like points beyond m x B = 3e9 are extrapolated from
    the largest measured B (their cost is linear in B). ``term``: seconds per terminated query,
    terminating 1% of the m queries per call (fig3 terminates about that many between pushes).
    DT's pushes depend on tau / m as well (its rounds: ~m / tau per element; fig4 keeps tau while
    m shrinks, so tau / m reaches 200 there): DT's push table is also timed at tau = ``hi_ratio``
    m (``push_hi``; ``CostModel`` interpolates in log(tau / m)). ``algos`` restricts the fit to
    some algorithms (tests). Returns ``{"tables", "machine"}``."""
    from ..threshold.auto import choices
    from ..workloads.threshold import draw_elements, draw_queries
    from .common import machine_info

    console = console or Console()
    rng = np.random.default_rng(seed)
    ms = sorted({max(10, int(round(x * scale))) for x in (1_000, 10_000, 100_000)})
    Bs = [1, 10, 100, 1000, 10_000, 100_000]
    perf = time.process_time  # CPU time: the fit must not depend on the load of a shared machine
    tables: dict[str, Any] = {}
    def time_pushes(a: str, d: int, m: int, p, lo, hi, qids, taus, row: list, builds: list | None) -> None:
        for j, B in enumerate(Bs):
            if a in ("scan", "interval_tree", "seg_intv") and m * B > 3e9:
                row[j] = row[j - 1] * B / Bs[j - 1]
                continue
            op = make_operator(a, d)
            t0 = perf()
            op.register(qids, lo, hi, taus)
            t_build = perf() - t0
            ts: list[float] = []
            while not ts or (sum(ts) < 0.2 * max_seconds and len(ts) < 20 and 2 * op.alive() >= m):
                pts, w = draw_elements(rng, B, p)
                t0 = perf()
                op.push(pts, w)
                ts.append(perf() - t0)
                if ts[-1] > max_seconds:
                    break
            # the first push after a build pays lazy index builds (stabbing structures,
            # sweep's sorted queries): it counts in the build, not in the push
            steady = sum(ts[1:]) / (len(ts) - 1) if len(ts) > 1 else ts[0]
            row[j] = float(steady)
            if builds is not None:
                builds.append(t_build + max(0.0, ts[0] - steady))

    for d in dims:
        algos_d = [a for a in choices(d) if algos is None or a in algos]
        for a in algos_d:
            warm_up(a, d)
        tab = {a: {"ms": ms, "Bs": Bs, "push": [[0.0] * len(Bs) for _ in ms], "build": [0.0] * len(ms),
                   "term": [0.0] * len(ms)} for a in algos_d}
        if hi_ratio and "dt" in tab:  # rho = tau / (m x mean element weight) of each push table
            w = ThresholdWorkloadParams().weight_mean
            tab["dt"].update(rho=ratio / w, rho_hi=hi_ratio / w, push_hi=[[0.0] * len(Bs) for _ in ms])
        for i, m in enumerate(ms):
            p = ThresholdWorkloadParams(dim=d, m=m, tau=max(1000, ratio * m))
            lo, hi = draw_queries(rng, m, p)
            qids = np.arange(m, dtype=np.int64)
            taus = np.full(m, p.tau, np.int64)
            for a in algos_d:
                builds: list[float] = []
                time_pushes(a, d, m, p, lo, hi, qids, taus, tab[a]["push"][i], builds)
                tab[a]["build"][i] = float(min(builds))
                if "push_hi" in tab[a]:
                    ph = ThresholdWorkloadParams(dim=d, m=m, tau=max(1000, hi_ratio * m))
                    time_pushes(a, d, m, ph, lo, hi, qids, np.full(m, ph.tau, np.int64),
                                tab[a]["push_hi"][i], None)
                # terminations: fig3 terminates ~1% of the alive queries between pushes
                op = make_operator(a, d)
                op.register(qids, lo, hi, taus)
                order = rng.permutation(m)
                k = max(1, m // 100)
                tt = []
                for c in range(5):
                    t0 = perf()
                    op.terminate(np.sort(order[c * k:(c + 1) * k]).astype(np.int64))
                    tt.append((perf() - t0) / k)
                tab[a]["term"][i] = float(sum(tt) / len(tt))
                console.print(f"fit: d={d} m={m:,} {a} done")
        tables[str(d)] = tab
    return {"tables": tables, "machine": machine_info()}


def write_auto_model(model: dict[str, Any], path: str | Path | None = None) -> Path:
    """Write the fitted model as the constants module ``vigil/threshold/_auto_model.py`` (the
    defaults that ship with the package), or to ``path``."""
    import pprint

    from ..threshold import auto

    path = Path(path) if path else Path(auto.__file__).with_name("_auto_model.py")
    mach = model.get("machine", {})
    body = pprint.pformat({"tables": model["tables"], "machine": mach}, width=100, sort_dicts=True)
    path.write_text('"""Cost model of ``vigil.threshold.auto``, fitted by ``vigil bench threshold --fit``\n'
                    f'on {time.strftime("%Y-%m-%d")} (seconds per push / per build; see auto.CostModel)."""\n\n'
                    f"MODEL = {body}\n")
    return path


def winner_map(tables: dict[str, Any]) -> dict[str, list[list[str]]]:
    """Per dimension, the fastest algorithm at every measured (m, B) of a fitted model's tables
    (``[i][j]`` = m index, B index)."""
    out: dict[str, list[list[str]]] = {}
    for d, tab in tables.items():
        algos = list(tab)
        ms, Bs = tab[algos[0]]["ms"], tab[algos[0]]["Bs"]
        out[d] = [[min(algos, key=lambda a, i=i, j=j: tab[a]["push"][i][j]) for j in range(len(Bs))]
                  for i in range(len(ms))]
    return out


def plot_winner_map(tables: dict[str, Any], path: str | Path) -> Path:
    """The map of which algorithm wins over (m, batch size, d), from measured push times: one
    panel per d, one cell per (m, B), coloured by the winner and labelled with its lead over the
    runner-up."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"dt": "#1f77b4", "sweep": "#2ca02c", "scan": "#d62728", "interval_tree": "#9467bd",
              "seg_intv": "#9467bd"}
    dims = sorted(tables)
    fig, axes = plt.subplots(1, len(dims), figsize=(5.2 * len(dims), 3.6), dpi=80, squeeze=False)
    for ax, d in zip(axes[0], dims, strict=True):
        tab = tables[d]
        algos = list(tab)
        ms, Bs = tab[algos[0]]["ms"], tab[algos[0]]["Bs"]
        for i in range(len(ms)):
            for j in range(len(Bs)):
                t = sorted((tab[a]["push"][i][j], a) for a in algos)
                ax.add_patch(plt.Rectangle((j, i), 1, 1, color=colors.get(t[0][1], "grey"), alpha=0.55))
                ax.text(j + 0.5, i + 0.5, f"{t[0][1]}\n{t[1][0] / t[0][0]:.1f}x", ha="center", va="center", fontsize=7)
        ax.set_xlim(0, len(Bs))
        ax.set_ylim(0, len(ms))
        ax.set_xticks([j + 0.5 for j in range(len(Bs))], [f"{b:,}" for b in Bs], fontsize=7)
        ax.set_yticks([i + 0.5 for i in range(len(ms))], [f"{m:,}" for m in ms], fontsize=7)
        ax.set_xlabel("elements per push (B)")
        ax.set_ylabel("alive queries (m)")
        ax.set_title(f"d = {d}: fastest exact algorithm (lead over 2nd)", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
