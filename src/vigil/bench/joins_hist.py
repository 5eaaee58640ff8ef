"""``vigil bench joins --preset appB``: paper 003 App. B, Fig. 25: HIST-SSI vs HIST-EQW, mean
relative error of the histograms' stabbing-count estimates, and the CPU seconds of building each
histogram: one untimed build each, then ``repeat`` builds interleaved
(:func:`.common.measure_interleaved`), the median reported with every sample (``cpu_s_samples``,
``cpu_s_median``, ``cpu_s_range``, ``wall_s_*``, ``repeat``, ``warmed``)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from rich.console import Console

from ..workloads import joins as wl
from .common import Result, measure_interleaved, print_table, result_doc, write_json


def run_hist(out: str | Path = "results/joins_appB.json", n: int = 100_000, seed: int = 0,
             buckets=(20, 30, 40, 50, 60, 70, 100), console=None, repeat: int = 3) -> dict:
    """App. B, Fig. 25: mean relative error of HIST-SSI and HIST-EQW over 5,000 uniform stabbing
    queries, (a) the paper's intervals: n in [0, 10,000], midpoints ~ Normal(5,000, 1,500^2),
    lengths ~ Normal(1,000, 2,000) read as a variance (sd 44.7; with sd 2,000 the intervals form
    hundreds of stabbing groups, not the paper's 18), clipped to the domain; (b) the rangeA's of
    the fig12 workload (what n' estimates), stabbed by the arriving R.A of Table I."""
    from ..joins.hist_ssi import hist_eqw, hist_ssi, mean_relative_error
    from ..joins.partition import stabbing_number

    console = console or Console()
    rng = np.random.default_rng(seed)
    mid = rng.normal(5000, 1500, n)
    ln = np.abs(rng.normal(1000, np.sqrt(2000), n))
    sets = {"paper_appB": (np.clip(mid - ln / 2, 0, 1e4), np.clip(mid + ln / 2, 0, 1e4), rng.uniform(0, 1e4, 5000))}
    w = wl.select_workload(n_queries=n, n_tuples=100, n_arrivals=5000, seed=seed)
    sets["fig12_rangeA"] = (w["rows"][:, 0], w["rows"][:, 1], w["in_x"])
    results = []
    for name, (lo, hi, x) in sets.items():
        tau = stabbing_number(lo, hi)
        span = (float(lo.min()), float(hi.max()))
        for k in buckets:
            builds = {"hist_ssi": functools.partial(hist_ssi, lo, hi, k),
                      "hist_ssi_total": functools.partial(hist_ssi, lo, hi, k, total_weights=True),
                      "hist_eqw": functools.partial(hist_eqw, lo, hi, k, span)}
            smp = measure_interleaved(builds, repeat)
            for algo, sm in smp.items():
                h = sm.values[sm.median_index()]
                fl = sm.fields()
                err = mean_relative_error(h, lo, hi, x)
                results.append(Result(algo, fl["cpu_s_median"], len(lo), extra={
                    "point": {"set": name, "buckets": k}, "tau": tau, "error": err, "pieces": h.pieces,
                    "clock": "process_time", **fl}))
            hs = smp["hist_ssi"].values[0]
            console.log(f"appB {name} (tau={tau}) k={k}: HIST-SSI {results[-3].extra['error']:.3f} "
                        f"(weights 1/f_I^2: {results[-2].extra['error']:.3f}) "
                        f"({hs.pieces} buckets, {results[-3].seconds:.2f} s CPU, median of {repeat}), "
                        f"HIST-EQW {results[-1].extra['error']:.3f}")
    doc = result_doc("joins", "appB", {"n": n, "seed": seed, "queries": 5000, "repeat": repeat,
                                       "timing": "CPU (process_time) of each build: a warm-up build, then "
                                                 "`repeat` builds interleaved; the median and range"}, results)
    write_json(out, doc)
    print_table(doc, reference="hist_ssi", console=console)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(sets), figsize=(6 * len(sets), 4.2), dpi=80)
    for ax, name in zip(axes, sets, strict=True):
        for i, a in enumerate(("hist_ssi", "hist_ssi_total", "hist_eqw")):
            pts = [(r.extra["pieces"], r.extra["error"]) for r in results if r.algo == a and r.extra["point"]["set"] == name]
            ax.plot(*zip(*pts, strict=True), marker="o", color=f"C{i}", label=a)
        ax.set_xlabel("buckets")
        ax.set_ylabel("mean relative error")
        ax.set_title(f"{name} (tau = {results[[r.extra['point']['set'] for r in results].index(name)].extra['tau']})")
        ax.legend()
    fig.tight_layout()
    fig.savefig(Path(out).with_suffix(".png"))
    plt.close(fig)
    return doc
