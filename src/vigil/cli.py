"""The ``vigil`` command: replay (event log in, rows out), gen, bench, run (Spark), demo."""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "vigil-numba"))

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from .cliutil import JOIN_HISTORY_HELP, parse_algos  # noqa: E402,F401  (re-exported: vigil.cli.parse_algos)

app = typer.Typer(help="vigil: millions of standing queries over data streams.", no_args_is_help=True)
console = Console(stderr=True)


@app.callback()
def main() -> None:
    """vigil: range-thresholding triggers, shared window aggregates, continuous joins and
    quantiles over streams, with millions of standing queries."""


def summary_table(title: str, counts: dict, out_counts: dict, elapsed: float) -> Table:
    t = Table(title=title)
    t.add_column("what")
    t.add_column("count", justify="right")
    rows = [
        ("elements in", counts["rows_in"]),
        ("  applied", counts["rows_applied"]),
        ("  rejected", counts["rows_rejected"]),
        ("operations in", counts["ops_in"]),
        ("  applied", counts["ops_applied"]),
        ("  rejected", counts["ops_rejected"]),
        ("  late", counts.get("late", 0)),
    ]
    rows += [(f"outputs: {k}", v) for k, v in sorted(out_counts.items())]
    for k, v in rows:
        t.add_row(k, f"{v:,}")
    t.add_row("elapsed", f"{elapsed:.2f} s")
    if elapsed > 0:
        t.add_row("elements/s", f"{counts['rows_in'] / elapsed:,.0f}")
    return t


@app.command()
def replay(
    stream: Path = typer.Option(..., help="stream file (.parquet, .csv, .jsonl)"),
    queries: Path = typer.Option(..., help="query operations (.jsonl)"),
    out: Path = typer.Option(..., help="output events (.jsonl or .parquet)"),
    algo: list[str] = typer.Option(None, help="FAMILY=NAME, e.g. threshold=dt (repeatable)"),
    quantile_epsilon: float = typer.Option(0.005, help="precision of the shared quantile summaries"),
    join_output: str = typer.Option("pairs", help="pairs | affected"),
    join_history: str = typer.Option(None, help=JOIN_HISTORY_HELP),
    batch: int = typer.Option(100_000, help="elements per engine batch"),
    quiet: bool = typer.Option(False, help="no progress bar and no summary"),
) -> None:
    """Run an event log end to end: stream + query operations in, output events out."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from .engine import Engine
    from .events import ERROR_COLUMN, read_operations, read_stream, write_outputs

    algos = parse_algos(algo)
    t0 = time.perf_counter()
    table = read_stream(stream)
    ops = read_operations(queries)
    try:
        eng = Engine(algos, quantile_epsilon, join_output, columns=set(table.column_names) - {ERROR_COLUMN},
                     join_history=join_history)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    import pyarrow as pa

    parts = []
    eng.add_operations(ops)
    with Progress(
        TextColumn("replay"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} elements"),
        TimeElapsedColumn(), console=console, disable=quiet,
    ) as prog:
        task = prog.add_task("replay", total=table.num_rows)
        for start in range(0, table.num_rows, batch):
            parts.append(eng.process(table.slice(start, batch)))
            prog.update(task, advance=min(batch, table.num_rows - start))
    parts.append(eng.finish())
    outputs = pa.concat_tables(parts)
    write_outputs(outputs, out)
    elapsed = time.perf_counter() - t0
    c = eng.counts
    assert c["rows_in"] == c["rows_applied"] + c["rows_rejected"], c
    assert c["ops_in"] == c["ops_applied"] + c["ops_rejected"], c
    if not quiet:
        console.print(summary_table(f"vigil replay -> {out}", c, eng.out_counts, elapsed))


@app.command()
def gen(
    out: Path = typer.Option(Path("runs/example"), help="directory for stream.parquet + queries.jsonl"),
    elements: int = typer.Option(20_000, help="stream rows (trades)"),
    queries: int = typer.Option(200, help="standing queries (every family)"),
    seed: int = typer.Option(0),
) -> None:
    """Generate a mixed example event log: a trade stream and queries of every family."""
    import json

    import pyarrow.parquet as pq

    from .workloads.trades import trade_queries, trades

    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(trades(elements, seed=seed), out / "stream.parquet")
    with open(out / "queries.jsonl", "w") as f:
        for op in trade_queries(elements, queries, seed=seed + 1):
            f.write(json.dumps(op) + "\n")
    console.print(f"wrote {out / 'stream.parquet'} and {out / 'queries.jsonl'}")


def _mount() -> None:
    try:
        from .bench.cli import bench_app

        app.add_typer(bench_app, name="bench", help="Reproduce the papers' experiments.")
    except ImportError:  # pragma: no cover - during development only
        pass
    try:
        from .pipeline import cli as pcli

        app.command(name="run")(pcli.run)
        app.command(name="demo")(pcli.demo)
    except (ImportError, AttributeError):  # pragma: no cover
        pass


_mount()

if __name__ == "__main__":  # pragma: no cover
    app()
