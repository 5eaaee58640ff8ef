"""Shared benchmark infrastructure: result records, the result JSON, machine information, a rich
table with ratios against a reference algorithm, PNG plots (matplotlib, Agg backend) and a rich
progress bar.

Result JSON (docs/architecture.md, "Benchmarks")::

    {"family", "preset", "params": {...}, "machine": {...},
     "results": [{"algo", "seconds", "operations", "per_op_us", "extra": {...}}]}

Conventions used by every family's runner:

* ``extra["point"]``: for sweeps, the swept parameter(s) of this result, e.g. ``{"m": 100000}``;
* ``extra["prefix"]``: when an algorithm was measured on a prefix only, the number of operations
  measured; ``seconds`` is then an extrapolation to the whole input (the runner states how in
  ``extra["extrapolation"]``) and ``extra["measured_seconds"]`` the time actually measured;
* ``extra["curve"]``: ``{"x": [...], "per_op_us": [...], "xlabel": ...}`` - cumulative (amortised)
  cost per operation as the input evolves, for time-trace presets;
* repeated measurements (:func:`measure_interleaved`, :func:`sample_fields`): ``extra["repeat"]``
  (timed repetitions), ``extra["warmed"]`` (every algorithm ran once untimed first: numba compiled
  or loaded its kernels, caches filled), ``extra["cpu_s_samples"]`` (CPU seconds of each
  repetition, ``time.process_time``; extrapolated to the whole input like ``seconds`` when a run
  was cut to a prefix), ``extra["cpu_s_median"]``, ``extra["cpu_s_range"]`` ([min, max]) and the
  same for wall-clock seconds (``wall_s_samples``, ``wall_s_median``, ``wall_s_range``);
  ``extra["warmup_cpu_s"]``: CPU seconds of the untimed warm-up call (numba's compilation on a cold
  cache lands there, not in the samples).
"""

from __future__ import annotations

import datetime as _dt
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table


@dataclass
class Result:
    algo: str
    seconds: float
    operations: int
    per_op_us: float = float("nan")
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if math.isnan(self.per_op_us) and self.operations:
            self.per_op_us = self.seconds / self.operations * 1e6

    def to_json(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def _jsonable(x: Any) -> Any:
    """numpy scalars/arrays -> Python; non-finite floats -> None (strict JSON)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if hasattr(x, "tolist"):
        return _jsonable(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


# --------------------------------------------------------------------------------------------
# repeated, interleaved measurements
# --------------------------------------------------------------------------------------------


@dataclass
class Timed:
    """What one run measured itself: a run that must not time all of its call (building the
    operator, an untimed warm-up of its state, checking answers) returns its own CPU and wall
    seconds of the timed part, and any value (operations done, answers) for the caller."""

    cpu: float
    wall: float
    value: Any = None


@dataclass
class Samples:
    """The timed repetitions of one run: CPU and wall seconds and the run's value per repetition,
    and the untimed warm-up call's CPU seconds (``warmup_cpu``, None without a warm-up)."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    warmed: bool = False
    warmup_cpu: float | None = None

    def median_index(self, scale: Sequence[float] | None = None) -> int:
        """The repetition with the median CPU time (each multiplied by ``scale[i]`` if given; the
        lower middle one for an even count)."""
        key = self.cpu if scale is None else [c * k for c, k in zip(self.cpu, scale, strict=True)]
        order = sorted(range(len(key)), key=key.__getitem__)
        return order[(len(order) - 1) // 2]

    def fields(self, scale: float | Sequence[float] = 1.0) -> dict[str, Any]:
        """:func:`sample_fields` of these samples, each multiplied by ``scale`` (one factor, or one
        per repetition: the extrapolation of a prefix to the whole input)."""
        f = [scale] * len(self.cpu) if isinstance(scale, int | float) else list(scale)
        out = sample_fields([c * k for c, k in zip(self.cpu, f, strict=True)],
                            [w * k for w, k in zip(self.wall, f, strict=True)], warmed=self.warmed)
        out["warmup_cpu_s"] = self.warmup_cpu
        return out


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return float(s[n // 2]) if n % 2 else float((s[n // 2 - 1] + s[n // 2]) / 2)


def sample_fields(cpu: Sequence[float], wall: Sequence[float] | None = None, *, warmed: bool) -> dict[str, Any]:
    """The result-JSON fields of repeated measurements (module docstring): ``repeat``, ``warmed``,
    ``cpu_s_samples``, ``cpu_s_median``, ``cpu_s_range`` and, with ``wall``, the same in wall
    seconds."""
    out: dict[str, Any] = {"repeat": len(cpu), "warmed": bool(warmed), "cpu_s_samples": [float(c) for c in cpu],
                           "cpu_s_median": _median(cpu) if cpu else None,
                           "cpu_s_range": [float(min(cpu)), float(max(cpu))] if cpu else None}
    if wall is not None:
        out.update(wall_s_samples=[float(w) for w in wall], wall_s_median=_median(wall) if wall else None,
                   wall_s_range=[float(min(wall)), float(max(wall))] if wall else None)
    return out


def measure_interleaved(runs: Mapping[str, Callable[[], Any]], repeat: int = 3, *,
                        warmup: bool | Mapping[str, Callable[[], Any]] = True,
                        on_sample: Callable[[str, int], None] | None = None) -> dict[str, Samples]:
    """Time every run ``repeat`` times, interleaved (A B C A B C ...: a change of load on the shared
    machine hits every run alike), after one untimed warm-up call per run (``warmup=True``: the run
    itself; a mapping: a cheaper call per name that compiles the same numba specializations, e.g.
    the run on a small input; names it lacks use the run itself; ``False``: none). Each call is
    timed in process CPU seconds (``time.process_time``) and wall seconds; a run returning a
    :class:`Timed` reports its own timed part instead. The garbage collector is run before and
    disabled during each call. ``on_sample(name, rep)`` is called before each timed call (a
    progress bar). Returns {name: Samples}."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    out = {name: Samples() for name in runs}
    if warmup:
        warm = dict(runs) if warmup is True else {n: warmup.get(n, fn) for n, fn in runs.items()}
        for name, fn in warm.items():
            c0 = time.process_time()
            fn()
            out[name].warmed = True
            out[name].warmup_cpu = time.process_time() - c0
    for rep in range(repeat):
        for name, fn in runs.items():
            if on_sample is not None:
                on_sample(name, rep)
            gc.collect()
            gc.disable()
            try:
                c0, t0 = time.process_time(), time.perf_counter()
                v = fn()
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            finally:
                gc.enable()
            if isinstance(v, Timed):
                cpu, wall, v = v.cpu, v.wall, v.value
            s = out[name]
            s.cpu.append(cpu)
            s.wall.append(wall)
            s.values.append(v)
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    """``git describe --always --dirty`` of the source tree (VIGIL_BENCH_COMMIT overrides it, for
    runs from an exported snapshot of a commit)."""
    if os.environ.get("VIGIL_BENCH_COMMIT"):
        return os.environ["VIGIL_BENCH_COMMIT"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict[str, Any]:
    import numba
    import numpy

    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _mem_gb(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "git_commit": _git_commit(),
        "loadavg_1min_at_end": load,
    }


def result_doc(family: str, preset: str, params: dict[str, Any], results: Sequence[Result]) -> dict:
    return {
        "family": family,
        "preset": preset,
        "params": _jsonable(params),
        "machine": machine_info(),
        "results": [r.to_json() for r in results],
    }


def write_json(path: str | Path, doc: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return path


def png_path(out: str | Path) -> Path:
    return Path(out).with_suffix(".png")


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------


def _fmt_s(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _point_key(r: dict) -> tuple:
    return tuple(sorted((r.get("extra") or {}).get("point", {}).items()))


def results_table(doc: dict[str, Any], reference: str = "dt") -> Table:
    """One row per algorithm (one block of rows per sweep point); ``x ref`` is the algorithm's
    cost per operation divided by the reference's at the same point (> 1: slower)."""
    res = doc["results"]
    points: dict[tuple, list[dict]] = {}
    for r in res:
        points.setdefault(_point_key(r), []).append(r)
    sweep = any(k for k in points)
    t = Table(title=f"{doc['family']} / {doc['preset']}", title_justify="left")
    if sweep:
        t.add_column("point")
    for c in ("algo", "seconds", "operations", "us/op", f"x {reference}", "note"):
        t.add_column(c, justify="right" if c not in ("algo", "note", "point") else "left")
    for key, rows in points.items():
        ref = next((r for r in rows if r["algo"] == reference), None)
        for i, r in enumerate(rows):
            ex = r.get("extra") or {}
            ratio = "-"
            if ref is not None and ref["per_op_us"] and r["per_op_us"] is not None:
                ratio = f"{r['per_op_us'] / ref['per_op_us']:.3g}"
            note = []
            if "prefix" in ex:
                note.append(f"prefix {ex['prefix']:,} ops, extrapolated")
            if ex.get("verified") is False:
                note.append("OUTPUT MISMATCH")
            if ex.get("note"):
                note.append(str(ex["note"]))
            if ex.get("range_seconds") and len(ex.get("reps_seconds") or ()) > 1:
                lo, hi = ex["range_seconds"]
                note.append(f"median of {len(ex['reps_seconds'])}, range {_fmt_s(lo)}-{_fmt_s(hi)} s")
            elif ex.get("cpu_s_range") and len(ex.get("cpu_s_samples") or ()) > 1:
                note.append(range_note(ex))
            cells = [r["algo"], _fmt_s(r["seconds"]), f"{r['operations']:,}", _fmt_s(r["per_op_us"]), ratio,
                     "; ".join(note)]
            if sweep:
                cells.insert(0, ", ".join(f"{k}={v:g}" if isinstance(v, int | float) else f"{k}={v}" for k, v in key)
                             if i == 0 else "")
            t.add_row(*cells)
        if sweep:
            t.add_section()
    return t


def range_note(ex: dict[str, Any], median: bool = True) -> str:
    """"CPU median of R X s, range lo-hi" for a result with :func:`sample_fields` (``median=False``:
    "R runs, CPU lo-hi s", when the seconds shown are that median)."""
    lo, hi = ex["cpu_s_range"]
    n = len(ex["cpu_s_samples"])
    if not median:
        return f"{n} runs, CPU {_fmt_s(lo)}-{_fmt_s(hi)} s"
    return f"CPU median of {n} {_fmt_s(ex['cpu_s_median'])} s, range {_fmt_s(lo)}-{_fmt_s(hi)}"


def print_table(doc: dict[str, Any], reference: str = "dt", console: Console | None = None) -> None:
    (console or Console()).print(results_table(doc, reference))


# --------------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------------

_STYLES = {"dt": ("C3", "o"), "dt_floor": ("C3", "."), "scan": ("C0", "s"), "interval_tree": ("C2", "^"),
           "seg_intv": ("C2", "v"), "rtree": ("C1", "D")}


def _style(algo: str, i: int) -> tuple[str, str]:
    return _STYLES.get(algo, (f"C{(i + 4) % 10}", "x"))


def plot_doc(doc: dict[str, Any], path: str | Path, title: str | None = None, xlabel: str | None = None) -> Path:
    """Write a PNG: time-trace presets (results with ``extra.curve``) plot amortised us/op against
    the curve's x; sweeps plot total seconds against the swept parameter (hollow markers =
    extrapolated from a prefix). Log y-axis, as in the paper."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=80)
    curves = [r for r in res if (r.get("extra") or {}).get("curve")]
    if curves:
        xlabel = "elements received"
        for i, r in enumerate(curves):
            c = r["extra"]["curve"]
            xlabel = c.get("xlabel", xlabel)
            color, marker = _style(r["algo"], i)
            label = r["algo"] + (" (prefix)" if "prefix" in r["extra"] else "")
            ax.plot(c["x"], c["per_op_us"], color=color, label=label,
                    linestyle=":" if r["algo"] == "dt_floor" else "-")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("amortised cost per operation (us)")
    else:
        by_algo: dict[str, list[dict]] = {}
        for r in res:
            by_algo.setdefault(r["algo"], []).append(r)
        xname = None
        for i, (algo, rows) in enumerate(by_algo.items()):
            pts = []
            for r in rows:
                point = (r.get("extra") or {}).get("point") or {}
                if not point:
                    continue
                xname = next(iter(point))
                pts.append((point[xname], r["seconds"], "prefix" in r["extra"]))
            pts.sort()
            if not pts:
                continue
            color, marker = _style(algo, i)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, label=algo,
                    linestyle=":" if algo == "dt_floor" else "-")
            for x, y, pre in pts:
                ax.plot([x], [y], marker=marker, color=color, markerfacecolor="none" if pre else color)
        ax.set_xlabel(xlabel or xname or "")
        ax.set_ylabel("total time (s; hollow = extrapolated)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or f"{doc['family']} / {doc['preset']}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------------------------


def make_progress(console: Console | None = None, enabled: bool = True) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not enabled,
    )


def downsample(xs: Sequence[float], ys: Sequence[float], k: int = 300) -> tuple[list, list]:
    """At most ~k evenly spaced points (always keeping the last)."""
    n = len(xs)
    if n <= k:
        return list(xs), list(ys)
    idx = sorted({int(round(i * (n - 1) / (k - 1))) for i in range(k)})
    return [xs[i] for i in idx], [ys[i] for i in idx]
