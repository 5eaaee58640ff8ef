"""``vigil demo``: a trade stream and standing queries of every family through ``vigil run``.

Writes under ``--workdir``: ``stream/`` (Parquet files, one micro-batch each), ``queries/``
(JSONL operations: registrations, terminations and lookups over time), ``out/`` (the run's
events, rejections, metrics; print them with ``vigil events WORKDIR/out``), ``checkpoint/``, and
``outputs.png``: per family, its outputs over the stream (cumulative, one line per kind of
event), and the elements per second of every micro-batch. Prints a summary table per family.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path

FAMILY_OF = {
    "threshold": "threshold", "window_aggregate": "windows", "substream_filter": "substream",
    "band_join": "joins", "select_join": "joins", "window_join": "joins", "quantile": "quantiles",
}
FAMILIES = ("threshold", "windows", "substream", "joins", "quantiles")
#: what each kind of output event is, in words (docs/contract.md)
KIND_LABEL = {
    "matured": "alerts (threshold matured)", "answer": "lookup answers", "update": "pushed updates",
    "join": "join pairs", "affected": "join-affected queries", "cluster": "cluster events",
    "cluster_update": "cluster updates",
}


def run_demo(workdir: str | Path = "demo-output", rows: int = 400_000, files: int = 8, n_queries: int = 2_000,
             mode: str = "driver", shards: int = 2, algos: dict[str, str] | None = None, seed: int = 0,
             quiet: bool = False, families: tuple[str, ...] | None = None) -> dict:
    from rich.console import Console
    from rich.table import Table

    from vigil.workloads.trades import trade_queries, trades, write_files

    from . import sinks
    from .driver import RunConfig, run

    console = Console(stderr=True)
    wd = Path(workdir)
    for sub in ("stream", "queries", "out", "checkpoint"):
        shutil.rmtree(wd / sub, ignore_errors=True)
    t0 = time.perf_counter()
    stream = trades(rows, n_symbols=60, seed=seed)
    ops = trade_queries(rows, n_queries, n_symbols=60, seed=seed + 1, lookups=20, families=families)
    write_files(stream, ops, wd / "stream", wd / "queries", n_files=files, op_files=2)
    console.print(f"[bold]demo[/]: {rows:,} trades in {files} files, {len(ops):,} query operations "
                  f"({n_queries:,} queries) generated in {time.perf_counter() - t0:.1f} s")
    cfg = RunConfig(stream=str(wd / "stream"), queries=str(wd / "queries"), out=str(wd / "out"),
                    checkpoint=str(wd / "checkpoint"), max_files_per_batch=1, mode=mode, shards=shards,
                    algos=dict(algos or {}), quiet=quiet)
    from vigil import warm

    warm.start(stream, ops, algos=dict(algos or {}))  # a cold numba cache compiles on every core while Spark starts
    s = run(cfg)
    # ---- summary per family
    fam_of_id = {}
    registered: Counter = Counter()
    for o in ops:
        if o["op"] == "register":
            f = FAMILY_OF.get(o["query"]["type"], "?")
            fam_of_id[o["query"]["id"]] = f
            registered[f] += 1
    ev = sinks.read_events(wd / "out").select(["event", "id", "at"]).to_pylist()
    rej = sinks.read_rejected(wd / "out").select(["event", "id", "at"]).to_pylist()
    outs: Counter = Counter()
    kinds: dict[str, Counter] = {}
    for r in ev:
        f = fam_of_id.get(r["id"], "?")
        kinds.setdefault(f, Counter())[r["event"]] += 1
        if r["event"] != "late":  # a notice that an operation came late, not an output
            outs[f] += 1
    rejected: Counter = Counter(fam_of_id.get(r["id"], "rows" if r["id"] is None else "?") for r in rej)
    t = Table(title=f"vigil demo ({mode} mode): {rows:,} trades, {n_queries:,} standing queries")
    for col in ("family", "queries", "outputs", "of which", "operations rejected"):
        t.add_column(col, justify="left" if col in ("family", "of which") else "right")
    for f in FAMILIES:
        t.add_row(f, f"{registered[f]:,}", f"{outs[f]:,}",
                  ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.get(f, {}).items())), f"{rejected[f]:,}")
    times = s.get("times", {})
    t.caption = (f"stream: {s['rows_in']:,} elements in {s['batches']} micro-batches, {s['rows_rejected']:,} rejected; "
                 f"{s['elements_per_s']:,.0f} elements/s over the streaming query and finish "
                 f"({s['seconds']:.1f} s; Spark start {times.get('spark_start', 0.0):.1f} s and schema "
                 f"{times.get('schema', 0.0):.1f} s not included)")
    Console().print(t)
    png = wd / "outputs.png"
    plot_outputs(ev, fam_of_id, rows, sinks.read_metrics(wd / "out"), png,
                 title=f"vigil demo ({mode} mode): {rows:,} trades, {n_queries:,} standing queries",
                 families=[f for f in FAMILIES if registered[f]])
    console.print(f"events in {wd / 'out'} (print them: vigil events {wd / 'out'}), picture in {png}")
    return {**s, "registered": dict(registered), "outputs_per_family": dict(outs), "png": str(png)}


def plot_outputs(events: list[dict], fam_of_id: dict[str, str], n_rows: int, metrics: list[dict], path: Path,
                 title: str = "vigil demo", families: list[str] | None = None) -> None:
    """One panel per family: its outputs up to each position of the stream (cumulative, linear
    scale, one line per kind of event: alerts, answers, join pairs, ...); a last panel: elements
    per second of each micro-batch (its processing time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    families = list(families if families is not None else FAMILIES)
    at_of: dict[tuple[str, str], list[int]] = {}
    for r in events:
        f = fam_of_id.get(r["id"])
        if f is not None and r["at"] is not None and r["event"] not in ("late", "rejected"):
            at_of.setdefault((f, r["event"]), []).append(r["at"])
    grid = np.linspace(0, max(n_rows, 1), 401)
    n = len(families) + 1
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.9 * n + 1.0), squeeze=False)
    axes = axes[:, 0]
    ms = [m for m in metrics if not m.get("final") and not m.get("skipped")]
    ends = [m["position"] for m in ms[:-1] if m.get("position")]
    for ax, fam in zip(axes, families, strict=False):
        for x in ends:
            ax.axvline(x, color="0.6", lw=0.8, ls=":")
        kinds = sorted(k for f, k in at_of if f == fam)
        for kind in kinds:
            at = np.sort(np.asarray(at_of[(fam, kind)], np.int64))
            ax.plot(grid, np.searchsorted(at, grid, side="right"), drawstyle="steps-post",
                    label=f"{KIND_LABEL.get(kind, kind)}: {len(at):,}")
        if not kinds:
            ax.text(0.5, 0.5, "no outputs", transform=ax.transAxes, ha="center", va="center", color="0.4")
        ax.set_xlim(0, max(n_rows, 1))
        ax.set_ylim(bottom=0)
        ax.set_title(f"{fam}: outputs up to each position (cumulative)"
                     + ("; dotted: ends of micro-batches" if ends else ""), fontsize=9, loc="left")
        ax.set_ylabel("outputs", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if kinds:
            ax.legend(loc="upper left", fontsize=7)
    if families:
        axes[len(families) - 1].set_xlabel("position in the trade stream (seq)", fontsize=8)
    ax = axes[-1]
    if ms:
        xs = np.arange(len(ms))
        rate = [m["elements_per_s"] for m in ms]
        ax.bar(xs, rate, color="tab:gray")
        for x, m, v in zip(xs, ms, rate, strict=True):
            ax.text(x, v, f"{m['rows_in']:,} el. in {m['latency_s']:.2f} s", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(xs, [str(m["batch"]) for m in ms], fontsize=7)
        ax.set_ylim(0, max(rate) * 1.25 if max(rate) > 0 else 1)
    ax.set_title("elements/s of each micro-batch over its processing time (collect, engine, outputs, "
                 "snapshot; queue time excluded)", fontsize=9, loc="left")
    ax.set_xlabel("micro-batch", fontsize=8)
    ax.set_ylabel("elements/s", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
