"""Typer commands of the Spark pipeline, mounted by ``vigil.cli`` as ``vigil run`` and ``vigil demo``::

    from vigil.pipeline.cli import demo, run
    app.command("run")(run)
    app.command("demo")(demo)
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

DEFAULT_MAX_REORDER_ROWS = 1_000_000  # = vigil.pipeline.reorder.DEFAULT_MAX_REORDER_ROWS (a test checks)
FORMAT_HELP = "stream format: parquet, json (JSON lines), csv, or kafka (with --option ...)"


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
    try:
        s = run_job(cfg)
    except (SourceError, CheckpointError, ValueError) as e:
        raise UserError(str(e)) from None
    console.print(
        f"[bold]done[/]: {s['batches']} batches, {s['rows_in']:,} rows ({s['rows_rejected']:,} rejected, {s['rows_late']:,} late), "
        f"{s['ops_in']:,} operations ({s['ops_rejected']:,} rejected), {s['outputs']:,} outputs, "
        f"{s['seconds']:.1f} s, {s['elements_per_s']:,.0f} elements/s -> {Path(out) / 'events'}"
    )


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
    kinds = ("threshold", "threshold_key", "window", "substream", "quantile", "select_join", "window_join", "band_join",
             "select", "band")  # what vigil.workloads.trades.trade_queries selects by
    bad = [f for f in family or [] if f not in kinds]
    if bad:
        raise cu.UserError(f"--family {bad[0]!r}: expected one of {', '.join(kinds[:-2])}")
    cu.output_dir(Path(workdir), "--workdir")
    try:
        run_demo(workdir, rows=rows, files=files, n_queries=queries, mode=mode, shards=shards,
                 algos=_algos(algo), seed=seed, families=tuple(family) if family else None)
    except KeyboardInterrupt:
        sys.exit(130)
