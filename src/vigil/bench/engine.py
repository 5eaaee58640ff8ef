"""``vigil bench engine``: the user's path, measured. ``vigil gen``'s workload (a trade stream and
queries of every family, registered, terminated and looked up over the stream) runs through
``vigil replay``'s path (:class:`vigil.engine.Engine`: ``process`` per batch, ``finish``, the
outputs written as replay writes them), all families together and each family alone, beside the
floor to beat at small query counts: the per-query numpy loop a user would write
(:mod:`vigil.bench.engine_floor`).

Presets: ``tour`` (the README tour: 20,000 trades, 200 queries), ``mixed`` (10x: 200,000 trades,
2,000 queries); ``--scale`` multiplies both.

Method: every configuration runs once untimed (numba compiles, caches fill: start-up is excluded),
then ``--repeat`` times, the configurations interleaved, in CPU time (``time.process_time``);
the table shows the median and the range. A separate instrumented run splits the time into
*operator* time (inside the family operators' methods: the paper's algorithms) and *engine* time
(everything else on the path: parsing and ordering the operations, validating and routing rows,
cutting segments at operations, building and writing the output columns). The floor's output
count is checked against the engine's (a floor that misread the contract would show a mismatch).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import engine_floor
from .common import Result, png_path, result_doc, sample_fields, write_json

PRESETS = {"tour": {"elements": 20_000, "queries": 200}, "mixed": {"elements": 200_000, "queries": 2_000}}
FAMILY = {"threshold": "threshold", "window_aggregate": "windows", "substream_filter": "substream",
          "band_join": "joins", "select_join": "joins", "window_join": "joins", "quantile": "quantiles"}
FAMILIES = ("threshold", "windows", "substream", "joins", "quantiles")
# output events of each family that the floor reproduces
EVENTS = {"threshold": ("matured",), "windows": ("answer",), "substream": ("answer",), "joins": ("join",),
          "quantiles": ("answer",)}


def workload(preset: str, scale: float = 1.0, seed: int = 0) -> tuple[pa.Table, list[dict]]:
    from ..workloads.trades import trade_queries, trades

    p = PRESETS[preset]
    n, q = max(1, int(p["elements"] * scale)), max(1, int(p["queries"] * scale))
    return trades(n, seed=seed), trade_queries(n, q, seed=seed + 1)


def split(ops: list[dict]) -> dict[str, list[dict]]:
    """The operations of each family (lookups and terminations follow their query's family)."""
    fam_of: dict[str, str] = {}
    out: dict[str, list[dict]] = {f: [] for f in FAMILIES}
    for op in ops:
        if op["op"] == "register":
            fam_of[op["query"]["id"]] = FAMILY[op["query"]["type"]]
            out[fam_of[op["query"]["id"]]].append(op)
        elif op.get("id") in fam_of:
            out[fam_of[op["id"]]].append(op)
    return out


class _OpClock:
    """CPU time spent inside the family operators: while :meth:`patched` is active, every public
    method of every operator class of the registry (and the per-key call paths of keyed groups)
    runs under a timer that counts only the outermost call, so operators created inside a batch
    (a key's first rows) are counted too."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0

    def _timed(self, fn):
        @functools.wraps(fn)
        def timed(*a, **k):
            if self._depth:
                return fn(*a, **k)
            self._depth += 1
            t = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                self.seconds += time.process_time() - t
                self._depth -= 1
        return timed

    @contextlib.contextmanager
    def patched(self):
        from .. import registry
        from ..quantiles import keyed_fast

        saved: list[tuple[Any, str, Any]] = []
        classes: set[type] = set()
        for fam, impls in registry.IMPLEMENTATIONS.items():
            for name in impls:
                for cls in registry.resolve(fam, name).__mro__:
                    if cls.__module__.startswith("vigil."):
                        classes.add(cls)
        for cls in classes:
            for name, f in list(vars(cls).items()):
                if name.startswith("_") or not inspect.isfunction(f):
                    continue
                saved.append((cls, name, f))
                setattr(cls, name, self._timed(f))
        for name in ("push", "lookup"):
            saved.append((keyed_fast, name, getattr(keyed_fast, name)))
            setattr(keyed_fast, name, self._timed(getattr(keyed_fast, name)))
        try:
            yield self
        finally:
            for owner, name, f in reversed(saved):
                setattr(owner, name, f)


def run_engine(table: pa.Table, ops: list[dict], out: Path, batch: int) -> tuple[float, pa.Table]:
    """One run of replay's path: Engine over ``batch``-row slices, finish, outputs written to ``out``.
    CPU seconds and the output table."""
    import json

    from ..engine import Engine
    from ..events import write_outputs

    lines = [json.dumps(o) for o in ops]
    t0 = time.process_time()
    eng = Engine({}, 0.005, "pairs", columns=set(table.column_names))
    eng.add_operations(lines, list(range(1, len(lines) + 1)))
    parts = []
    for s in range(0, table.num_rows, batch):
        parts.append(eng.process(table.slice(s, batch)))
    parts.append(eng.finish())
    outputs = pa.concat_tables(parts)
    write_outputs(outputs, out)
    return time.process_time() - t0, outputs


def floor_columns(table: pa.Table) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {}
    for name in table.column_names:
        c = table.column(name)
        if pa.types.is_floating(c.type) or pa.types.is_integer(c.type):
            cols[name] = np.asarray(c.to_numpy(zero_copy_only=False), np.float64)
        else:
            cols[name] = np.asarray(c.to_numpy(zero_copy_only=False), object)
    cols["__seq__"] = np.arange(1, table.num_rows + 1, dtype=np.int64)
    return cols


def run_floor(family: str, cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[float, int]:
    t0 = time.process_time()
    n, _ = engine_floor.FLOORS[family](cols, ops)
    return time.process_time() - t0, n


def _count(outputs: pa.Table, events: tuple[str, ...]) -> int:
    return int(pc.sum(pc.is_in(outputs.column("event"), pa.array(list(events)))).as_py() or 0)


def run_preset(preset: str, scale: float | None = None, out: Path = Path("results/engine.json"),
               repeat: int = 3, batch: int = 100_000, seed: int = 0, families: list[str] | None = None) -> dict:
    from rich.console import Console

    console = Console(width=max(150, Console().width))
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    scale = 1.0 if scale is None else scale
    table, ops = workload(preset, scale, seed)
    by_fam = split(ops)
    fams = [f for f in (families or FAMILIES) if by_fam[f]]
    configs = {"all": ops, **{f: by_fam[f] for f in fams}}
    cols = floor_columns(table)
    tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-engine-"))
    console.print(f"[bold]engine path, preset {preset}[/]: {table.num_rows:,} rows, "
                  f"{sum(o['op'] == 'register' for o in ops):,} queries, "
                  f"{sum(o['op'] == 'lookup' for o in ops):,} lookups; warm-up run, then {repeat} timed runs")
    times: dict[str, list[float]] = {c: [] for c in configs}
    floor_times: dict[str, list[float]] = {f: [] for f in fams}
    outputs: dict[str, pa.Table] = {}
    floor_n: dict[str, int] = {}
    from .common import make_progress

    op_time: dict[str, float] = {}
    with make_progress(console) as prog:
        task = prog.add_task("engine runs", total=len(configs) * (repeat + 2))
        for c, o in configs.items():  # warm-up: compile, fill caches (not timed)
            prog.update(task, description=f"warm-up: {c}")
            _, outputs[c] = run_engine(table, o, tmp / f"{c}.jsonl", batch)
            if c != "all":
                _, floor_n[c] = run_floor(c, cols, o)
            prog.advance(task)
        for k in range(repeat):  # interleaved repetitions
            for c, o in configs.items():
                prog.update(task, description=f"run {k + 1}/{repeat}: {c}")
                times[c].append(run_engine(table, o, tmp / f"{c}.jsonl", batch)[0])
                if c != "all":
                    floor_times[c].append(run_floor(c, cols, o)[0])
                prog.advance(task)
        for c, o in configs.items():  # the split operator / engine, instrumented (not in the timings)
            prog.update(task, description=f"operator / engine split: {c}")
            clock = _OpClock()
            with clock.patched():
                total, _ = run_engine(table, o, tmp / f"{c}.jsonl", batch)
            op_time[c] = clock.seconds / total if total > 0 else math.nan  # fraction in the operators
            prog.advance(task)
    results = []
    n = table.num_rows
    for c, o in configs.items():
        med = statistics.median(times[c])
        extra: dict[str, Any] = {
            "queries": sum(x["op"] == "register" for x in o), "lookups": sum(x["op"] == "lookup" for x in o),
            "outputs": outputs[c].num_rows, "cpu_s": times[c], "elements_per_s": n / med if med > 0 else math.inf,
            "operator_s": med * op_time[c], "engine_s": med * (1 - op_time[c]),
            **sample_fields(times[c], warmed=True),
        }
        if c != "all":
            fmed = statistics.median(floor_times[c])
            extra.update(floor_cpu_s=floor_times[c], floor_elements_per_s=n / fmed if fmed > 0 else math.inf,
                         floor_outputs=floor_n[c], engine_outputs=_count(outputs[c], EVENTS[c]))
        else:
            fl = sum(statistics.median(floor_times[f]) for f in fams)
            extra.update(floor_elements_per_s=n / fl if fl > 0 else math.inf)
        results.append(Result(c, med, n, extra=extra))
    doc = result_doc("engine", preset, {"scale": scale, "rows": n, "batch": batch, "repeat": repeat,
                                        "seed": seed}, results)
    print_engine_table(doc, console)
    console.print(f"wrote {write_json(out, doc)}")
    console.print(f"wrote {plot_engine(doc, png_path(out))}")
    return doc


def _rate(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:,.0f}"


def print_engine_table(doc: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"vigil bench engine --preset {doc['preset']}: {doc['params']['rows']:,} rows, CPU time, "
                    f"median of {doc['params']['repeat']} (warm: start-up excluded)")
    for h in ("queries", "family", "lookups", "outputs", "CPU s (range)", "elements/s", "operator s", "engine s",
              "floor el/s", "x floor", "floor outputs"):
        t.add_column(h, justify="left" if h == "family" else "right")
    for r in doc["results"]:
        e = r["extra"]
        check = "-"
        if "floor_outputs" in e:
            ok = e["floor_outputs"] == e["engine_outputs"]
            check = f"{e['floor_outputs']:,} " + ("✓" if ok else f"≠ {e['engine_outputs']:,}")
        t.add_row(f"{e['queries']:,}", r["algo"], f"{e['lookups']:,}", f"{e['outputs']:,}",
                  f"{r['seconds']:.3f} ({min(e['cpu_s']):.3f}-{max(e['cpu_s']):.3f})", _rate(e["elements_per_s"]),
                  f"{e['operator_s']:.3f}", f"{e['engine_s']:.3f}", _rate(e["floor_elements_per_s"]),
                  f"{e['elements_per_s'] / e['floor_elements_per_s']:.2f}x", check)
    (console or Console()).print(t)


def plot_engine(doc: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = doc["results"]
    names = [r["algo"] for r in rs]
    x = np.arange(len(rs))
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].bar(x - 0.2, [r["extra"]["elements_per_s"] for r in rs], 0.4, label="vigil (engine path)")
    ax[0].bar(x + 0.2, [r["extra"]["floor_elements_per_s"] for r in rs], 0.4, label="per-query numpy floor")
    ax[0].set_yscale("log")
    ax[0].set_xticks(x, names)
    ax[0].set_ylabel("elements/s (CPU)")
    ax[0].legend()
    ax[1].bar(x, [r["extra"]["operator_s"] for r in rs], label="operators")
    ax[1].bar(x, [r["extra"]["engine_s"] for r in rs], bottom=[r["extra"]["operator_s"] for r in rs],
              label="engine")
    ax[1].set_xticks(x, names)
    ax[1].set_ylabel("CPU s per run")
    ax[1].legend()
    fig.suptitle(f"vigil bench engine --preset {doc['preset']} ({doc['params']['rows']:,} rows)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
