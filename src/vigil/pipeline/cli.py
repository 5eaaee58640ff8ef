"""Typer commands of the Spark pipeline, mounted by ``vigil.cli`` as ``vigil run`` and ``vigil demo``::

    from vigil.pipeline.cli import demo, run
    app.command("run")(run)
    app.command("demo")(demo)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import typer

DEFAULT_MAX_REORDER_ROWS = 1_000_000  # = vigil.pipeline.reorder.DEFAULT_MAX_REORDER_ROWS (a test checks)
FORMAT_HELP = "stream format: parquet, json (JSON lines), csv, or kafka (with --option ...)"


_IMPORTED = time.perf_counter()  # fallback start of the command where /proc is not available


def process_age(pid: int | str = "self") -> float:
    """Wall seconds since process ``pid`` started (Linux: /proc; elsewhere since this module was
    imported, which misses the interpreter's start-up)."""
    try:
        start_ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


def command_age() -> tuple[float, str]:
    """(seconds since the command started, what they were spent on): under ``spark-submit`` the
    command is the JVM that started this Python (it passes ``PYSPARK_GATEWAY_PORT``)."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        return max(process_age(os.getppid()), process_age()), "spark-submit's JVM, Python start-up and imports"
    return process_age(), "start-up and imports"


def done_lines(s: dict, wall: float, before: float, stop: float, out: str | Path,
               start_label: str = "start-up and imports") -> list[str]:
    """The two summary lines of ``vigil run``: counts (operations: in = applied + rejected +
    waiting), then the wall time since the command started and where it went."""
    t = s.get("times", {})
    waiting = s.get("ops_waiting", 0)
    carried = f" + {s['ops_waiting_before']:,} waiting from before" if s.get("ops_waiting_before") else ""
    counts = (
        f"[bold]done[/]: {s['batches']} batches, {s['rows_in']:,} rows ({s['rows_rejected']:,} rejected, "
        f"{s['rows_late']:,} late), {s['ops_in']:,} operations{carried} = {s.get('ops_applied', 0):,} applied + "
        f"{s['ops_rejected']:,} rejected + {waiting:,} waiting, {s['outputs']:,} outputs -> {Path(out) / 'events'}"
    )
    parts = [(start_label, before), ("Spark start" + (f" ({s['master']})" if s.get("master") else ""),
                                     t.get("spark_start", 0.0)),
             ("schema inference", t.get("schema", 0.0)), ("query set-up", t.get("query_setup", 0.0)),
             ("streaming query", t.get("stream", 0.0)),
             ("finish", t.get("finish", 0.0)), ("Spark stop", stop)]
    other = wall - sum(v for _, v in parts)
    breakdown = " + ".join(f"{name} {v:.1f} s" for name, v in parts) + f" + other {max(other, 0.0):.1f} s"
    rate = s["rows_in"] / wall if wall > 0 else 0.0
    timing = (
        f"[bold]time[/]: {wall:.1f} s since the command started = {breakdown}; batches: "
        f"{s.get('processing_s', 0.0):.1f} s processing, {s.get('queue_s', 0.0):.1f} s queued; "
        f"{rate:,.0f} elements/s over the whole command, {s['elements_per_s']:,.0f} over the streaming query and finish"
    )
    return [counts, timing]


def _algos(algo: list[str] | None) -> dict[str, str]:
    from vigil.cliutil import parse_algos  # one parser for --algo

    return parse_algos(algo)


def run(
    stream: str = typer.Option(None, "--stream", help="directory of stream files (not needed with kafka)"),
    queries: str = typer.Option(..., "--queries", help="directory of query-operation files (JSONL)"),
    out: str = typer.Option(..., "--out", help="output directory: events/, rejected/, _metrics/"),
    checkpoint: str = typer.Option(..., "--checkpoint", help="checkpoint directory (Spark's + engine snapshots)"),
    fmt: str = typer.Option("parquet", "--format", help=FORMAT_HELP),
    schema: str = typer.Option(None, "--schema", help="stream schema as DDL; default: inferred from files present"),
    trigger: str = typer.Option("available-now", "--trigger", help="'available-now' or an interval, e.g. '10 seconds'"),
    max_files_per_batch: int = typer.Option(None, "--max-files-per-batch", help="stream files per micro-batch"),
    max_reorder_rows: int = typer.Option(
        DEFAULT_MAX_REORDER_ROWS, "--max-reorder-rows",
        help="rows with seq held beyond a gap in seq until it fills (then the gap is accepted; 0: only sort each batch)"),
    mode: str = typer.Option("driver", "--mode", help="driver (engine on the driver) or sharded (executors)"),
    shards: int = typer.Option(2, "--shards", help="number of shards in sharded mode"),
    master: str = typer.Option(None, "--master", help="Spark master URL (default local[*] or spark-submit's)"),
    algo: list[str] = typer.Option(None, "--algo", help="FAMILY=NAME implementation choice (repeatable; `vigil algos` lists them)"),
    option: list[str] = typer.Option(None, "--option", help="KEY=VALUE passed to the Spark source (repeatable)"),
    quantile_epsilon: float = typer.Option(0.005, "--quantile-epsilon"),
    join_output: str = typer.Option("pairs", "--join-output", help="pairs or affected"),
    join_history: str = typer.Option(None, "--join-history", help="COLUMN:H: keep join history within H of the newest COLUMN only (see `vigil replay --help`)"),
    finish: bool = typer.Option(None, "--finish/--no-finish",
                                help="apply operations beyond the last element at the end (default with available-now)"),
    timeout: float = typer.Option(None, "--timeout", help="stop a processing-time run after this many seconds"),
    quiet: bool = typer.Option(False, "--quiet", help="no per-batch lines"),
) -> None:
    """Run the standing queries over a stream with Spark Structured Streaming (exactly-once outputs)."""
    from rich.console import Console

    from vigil.cliutil import UserError

    from .config import CheckpointError, RunConfig
    from .driver import run as run_job
    from .sources import SourceError

    console = Console(stderr=True)
    # every check that needs no Spark comes first: a mistake costs no Spark start-up (~30 s)
    algos, opts = check_run_args(stream, queries, out, checkpoint, fmt, schema, trigger, max_files_per_batch,
                                 max_reorder_rows, mode, shards, algo, option, quantile_epsilon, join_output,
                                 join_history, timeout)
    cfg = RunConfig(
        stream=stream, queries=queries, out=out, checkpoint=checkpoint, fmt=fmt, schema=schema,
        trigger=trigger, max_files_per_batch=max_files_per_batch, mode=mode, shards=shards, master=master,
        algos=algos, options=opts, quantile_epsilon=quantile_epsilon, join_output=join_output,
        join_history=join_history,
        finish=finish, timeout=timeout, quiet=quiet, max_reorder_rows=max_reorder_rows,
    )
    before, start_label = command_age()  # interpreter start-up, imports, argument checks
    t = time.perf_counter()
    try:
        s = run_job(cfg)
    except (SourceError, CheckpointError, ValueError) as e:
        raise UserError(str(e)) from None
    stop = _stop_spark()
    wall = before + time.perf_counter() - t
    for line in done_lines(s, wall, before, stop, out, start_label):
        console.print(line, soft_wrap=True, highlight=False)


def _stop_spark() -> float:
    """Stop the session ``vigil run`` started (its JVM would stop at exit anyway, uncounted)."""
    t = time.perf_counter()
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if spark is not None:
            spark.stop()
    except Exception:  # noqa: BLE001 - the run is done; stopping is best effort
        pass
    return time.perf_counter() - t


def check_run_args(stream, queries, out, checkpoint, fmt, schema, trigger, max_files_per_batch, max_reorder_rows,
                   mode, shards, algo, option, quantile_epsilon, join_output, join_history, timeout):
    """The checks of ``vigil run``'s arguments that need no Spark; returns (algos, source options).
    Raises :class:`vigil.cliutil.UserError` (one line: what is wrong, what to do)."""
    from vigil import cliutil as cu

    from . import sources
    from .driver import _trigger

    cu.one_of(fmt, sources.FORMATS, "--format")
    cu.one_of(mode, ("driver", "sharded"), "--mode")
    cu.at_least(shards, 1, "--shards")
    cu.at_least(max_files_per_batch, 1, "--max-files-per-batch")
    cu.at_least(max_reorder_rows, 0, "--max-reorder-rows")
    if timeout is not None and not timeout > 0:
        raise cu.UserError(f"--timeout must be > 0 seconds, got {timeout:g}")
    cu.epsilon(quantile_epsilon)
    cu.one_of(join_output, ("pairs", "affected"), "--join-output")
    cu.join_history(join_history)

    class _Probe:  # the driver's own parser of --trigger, without a Spark writer
        def trigger(self, **kw):
            return kw

    try:
        _trigger(_Probe(), trigger)
    except ValueError as e:
        raise cu.UserError(str(e)) from None
    algos = cu.parse_algos(algo)
    try:
        opts = sources.kafka_options(option)
    except sources.SourceError as e:
        raise cu.UserError(str(e)) from None
    if fmt != "kafka":
        if not stream:
            raise cu.UserError("--stream DIR is required (except with --format kafka)")
        cu.input_dir(Path(stream), "--stream", "stream files arrive in it")
        if not schema and not sources._files(Path(stream), fmt):
            others = [f for f in ("parquet", "json", "csv") if f != fmt and sources._files(Path(stream), f)]
            hint = (f"it holds {others[0]} files: pass --format {others[0]}" if others else
                    "add one, or pass --schema 'price DOUBLE, shares BIGINT, symbol STRING, ...'")
            raise cu.UserError(f"--stream {stream}: no {fmt} files to infer the stream's schema from; {hint}")
    cu.input_dir(Path(queries), "--queries", "query-operation files (JSONL) arrive in it; it may be empty")
    cu.output_dir(Path(out), "--out")
    cu.output_dir(Path(checkpoint), "--checkpoint")
    return algos, opts


def demo(
    workdir: str = typer.Option("demo-output", "--workdir", help="where the demo writes its files"),
    rows: int = typer.Option(100_000, "--rows", help="trades in the stream"),
    files: int = typer.Option(4, "--files", help="stream files (one micro-batch each)"),
    queries: int = typer.Option(600, "--queries", help="standing queries registered over time"),
    mode: str = typer.Option("driver", "--mode"),
    shards: int = typer.Option(2, "--shards"),
    algo: list[str] = typer.Option(None, "--algo"),
    seed: int = typer.Option(0, "--seed"),
    family: list[str] = typer.Option(None, "--family", help="only these query kinds (default: all families)"),
) -> None:
    """Generate a trade stream and a mix of queries, run them through `vigil run`, summarize, plot."""
    from vigil import cliutil as cu

    from .demo import run_demo

    for value, lo, opt in ((rows, 1, "--rows"), (files, 1, "--files"), (queries, 0, "--queries"), (shards, 1, "--shards")):
        cu.at_least(value, lo, opt)
    cu.one_of(mode, ("driver", "sharded"), "--mode")
    from vigil.workloads.trades import SHAPES

    kinds = ("threshold", "threshold_key", "window", "substream", "quantile", "select_join", "window_join", "band_join",
             *SHAPES, "interval_join", "select", "band")  # what vigil.workloads.trades.trade_queries selects by
    bad = [f for f in family or [] if f not in kinds]
    if bad:
        raise cu.UserError(f"--family {bad[0]!r}: expected one of {', '.join(kinds[:-2])}")
    cu.output_dir(Path(workdir), "--workdir")
    try:
        run_demo(workdir, rows=rows, files=files, n_queries=queries, mode=mode, shards=shards,
                 algos=_algos(algo), seed=seed, families=tuple(family) if family else None)
    except KeyboardInterrupt:
        sys.exit(130)
