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
    algo: list[str] = typer.Option(None, "--algo", help="FAMILY=NAME implementation choice (repeatable)"),
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

    from vigil.history import parse_horizon

    from .config import CheckpointError, RunConfig
    from .driver import run as run_job
    from .sources import SourceError, kafka_options

    console = Console(stderr=True)
    try:
        opts = kafka_options(option)
        parse_horizon(join_history)  # a bad COLUMN:H fails here, with its reason
        if fmt != "kafka" and not stream:
            raise SourceError("--stream DIR is required (except with --format kafka)")
        cfg = RunConfig(
            stream=stream, queries=queries, out=out, checkpoint=checkpoint, fmt=fmt, schema=schema,
            trigger=trigger, max_files_per_batch=max_files_per_batch, mode=mode, shards=shards, master=master,
            algos=_algos(algo), options=opts, quantile_epsilon=quantile_epsilon, join_output=join_output,
            join_history=join_history,
            finish=finish, timeout=timeout, quiet=quiet, max_reorder_rows=max_reorder_rows,
        )
        s = run_job(cfg)
    except (SourceError, CheckpointError, ValueError) as e:
        console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2) from None
    console.print(
        f"[bold]done[/]: {s['batches']} batches, {s['rows_in']:,} rows ({s['rows_rejected']:,} rejected, {s['rows_late']:,} late), "
        f"{s['ops_in']:,} operations ({s['ops_rejected']:,} rejected), {s['outputs']:,} outputs, "
        f"{s['seconds']:.1f} s, {s['elements_per_s']:,.0f} elements/s -> {Path(out) / 'events'}"
    )


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
    from .demo import run_demo

    try:
        run_demo(workdir, rows=rows, files=files, n_queries=queries, mode=mode, shards=shards,
                 algos=_algos(algo), seed=seed, families=tuple(family) if family else None)
    except KeyboardInterrupt:
        sys.exit(130)
