"""``vigil demo``: a trade stream and standing queries of every family through ``vigil run``.

Writes under ``--workdir``: ``stream/`` (Parquet files, one micro-batch each), ``queries/``
(JSONL operations: registrations, terminations and lookups over time), ``out/`` (the run's
events, rejections, metrics), ``checkpoint/``, and ``alerts.png`` (outputs per family over the
stream). Prints a summary table per family.
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
    s = run(cfg)
    # ---- summary per family
    fam_of_id = {}
    registered: Counter = Counter()
    for o in ops:
        if o["op"] == "register":
            f = FAMILY_OF.get(o["query"]["type"], "?")
            fam_of_id[o["query"]["id"]] = f
            registered[f] += 1
    ev = sinks.read_events(wd / "out").to_pylist()
    rej = sinks.read_rejected(wd / "out").to_pylist()
    outs: Counter = Counter()
    kinds: dict[str, Counter] = {}
    for r in ev:
        f = fam_of_id.get(r["id"], "?")
        outs[f] += 1
        kinds.setdefault(f, Counter())[r["event"]] += 1
    rejected: Counter = Counter(fam_of_id.get(r["id"], "rows" if r["id"] is None else "?") for r in rej)
    t = Table(title=f"vigil demo ({mode} mode): {s['rows_in']:,} elements, {s['batches']} batches, "
                    f"{s['elements_per_s']:,.0f} elements/s end to end")
    for col in ("family", "queries", "outputs", "of which", "rejected"):
        t.add_column(col, justify="left" if col in ("family", "of which") else "right")
    for f in ("threshold", "windows", "substream", "joins", "quantiles"):
        t.add_row(f, f"{registered[f]:,}", f"{outs[f]:,}",
                  ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.get(f, {}).items())), f"{rejected[f]:,}")
    t.add_row("stream rows", f"{s['rows_in']:,}", "", "", f"{rejected['rows']:,}")
    Console().print(t)
    png = wd / "alerts.png"
    plot_alerts(ev, fam_of_id, rows, png)
    console.print(f"events in {wd / 'out' / 'events'}, plot in {png}")
    return {**s, "registered": dict(registered), "outputs_per_family": dict(outs), "png": str(png)}


def plot_alerts(events: list[dict], fam_of_id: dict[str, str], n_rows: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    bins = np.linspace(0, max(n_rows, 1), 41)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for fam in ("threshold", "windows", "substream", "joins", "quantiles"):
        at = [r["at"] for r in events if fam_of_id.get(r["id"]) == fam and r["at"] is not None]
        if not at:
            continue
        h, _ = np.histogram(at, bins=bins)
        ax.step(bins[:-1], np.maximum(h, 0.8), where="post", label=f"{fam} ({len(at):,})")
    ax.set_yscale("log")
    ax.set_xlabel("position in the trade stream (seq)")
    ax.set_ylabel("outputs per bin (log)")
    ax.set_title("vigil demo: alerts, answers and join results over the stream")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
