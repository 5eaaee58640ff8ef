"""The ``vigil`` command: replay (event log in, rows out), gen, bench, run (Spark), demo."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from . import cliutil as cu
from .cliutil import JOIN_HISTORY_HELP, UserError, parse_algos  # noqa: F401  (re-exported: vigil.cli.parse_algos)

app = typer.Typer(help="vigil: millions of standing queries over data streams.", no_args_is_help=True,
                  cls=cu.VigilGroup)
console = Console(stderr=True)


@app.callback()
def main(
    debug: bool = typer.Option(False, "--debug", envvar="VIGIL_DEBUG",
                               help="show the traceback of an error (also VIGIL_DEBUG=1); without it every "
                               "error is one line on stderr (exit code 2 for a user error, 1 otherwise)"),
) -> None:
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
    stream: Path = typer.Option(..., help="stream file (.parquet, .csv, .jsonl); an empty file is an empty stream"),
    queries: Path = typer.Option(..., help="query operations (.jsonl)"),
    out: Path = typer.Option(..., help="output events (.jsonl or .parquet, by suffix)"),
    algo: list[str] = typer.Option(None, help="FAMILY=NAME, e.g. threshold=dt (repeatable; `vigil algos` lists them)"),
    quantile_epsilon: float = typer.Option(0.005, help="precision of the shared quantile summaries"),
    join_output: str = typer.Option("pairs", help="pairs | affected"),
    join_history: str = typer.Option(None, help=JOIN_HISTORY_HELP),
    batch: int = typer.Option(100_000, help="elements per engine batch"),
    quiet: bool = typer.Option(False, help="no progress bar and no summary"),
    precompile: bool = typer.Option(True, help="on a cold numba cache, compile the workload's kernels on every "
                                               "core first (vigil.warm)"),
) -> None:
    """Run an event log end to end: stream + query operations in, output events out."""
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn

    from .engine import Engine
    from .events import ERROR_COLUMN, write_outputs

    # every argument is checked before any work starts: a mistake costs no processing
    cu.input_file(stream, "--stream", cu.STREAM_SUFFIXES)
    cu.input_file(queries, "--queries", cu.OPS_SUFFIXES)
    cu.output_file(out, "--out")
    cu.at_least(batch, 1, "--batch", "it is the number of elements per engine batch")
    algos = parse_algos(algo)
    cu.epsilon(quantile_epsilon)
    cu.one_of(join_output, ("pairs", "affected"), "--join-output")
    cu.join_history(join_history)
    t0 = time.perf_counter()
    table, ops, lines = cu.read_inputs(stream, queries)
    columns = set(table.column_names) - {ERROR_COLUMN}
    # a 0-byte stream file has no header: its columns are unknown, not none (queries register)
    eng = Engine(algos, quantile_epsilon, join_output, columns=columns or None, join_history=join_history)
    import pyarrow as pa

    parts = []
    eng.add_operations(ops, lines)
    from .jit import compile_progress

    with compile_progress(
        TextColumn("replay"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} elements"),
        TimeElapsedColumn(), console=console, disable=quiet,
    ) as prog:
        task = prog.add_task("replay", total=table.num_rows)
        if precompile:  # a first run compiles on every core before it needs the kernels (vigil.warm)
            from .warm import precompile as warm_kernels

            warm_kernels(table, ops, algos=algos, quantile_epsilon=quantile_epsilon, join_output=join_output,
                         join_history=join_history)
        for start in range(0, table.num_rows, batch):
            parts.append(eng.process(table.slice(start, batch)))
            prog.update(task, advance=min(batch, table.num_rows - start))
    parts.append(eng.finish())
    outputs = pa.concat_tables(parts)
    c = eng.counts
    if c["rows_in"] != table.num_rows or c["rows_in"] != c["rows_applied"] + c["rows_rejected"] \
            or c["ops_in"] != len(ops) or c["ops_in"] != c["ops_applied"] + c["ops_rejected"]:
        raise RuntimeError(f"counts do not add up: {table.num_rows} rows and {len(ops)} operations read, {c}")
    try:
        write_outputs(outputs, out)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write it ({e.strerror or e}); choose another place") from None
    elapsed = time.perf_counter() - t0
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

    cu.output_dir(out, "--out")
    cu.at_least(elements, 1, "--elements")
    cu.at_least(queries, 0, "--queries")
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(trades(elements, seed=seed), out / "stream.parquet")
    with open(out / "queries.jsonl", "w") as f:
        for op in trade_queries(elements, queries, seed=seed + 1):
            f.write(json.dumps(op) + "\n")
    console.print(f"wrote {out / 'stream.parquet'} and {out / 'queries.jsonl'}")


@app.command()
def algos() -> None:
    """List the implementations of every query family (--algo FAMILY=NAME) with their papers."""
    t = Table(title="vigil implementations (--algo FAMILY=NAME; * = default)")
    for col in ("family", "name", "paper / section", "what"):
        t.add_column(col, overflow="fold")
    for fam, name, default, section, summary in cu.algo_rows():
        t.add_row(fam, name + (" *" if default else ""), section, summary)
    Console().print(t)


@app.command()
def schema(
    qtype: str = typer.Argument(None, metavar="[TYPE]", help="one query type, e.g. threshold (default: all)"),
    markdown: bool = typer.Option(False, help="print the query reference (docs/queries.md) instead"),
) -> None:
    """Print the JSON Schema of the query specs (with an example per type), or the query reference."""
    from . import querydoc
    from .specs import SPEC_TYPES

    if qtype is not None and qtype not in SPEC_TYPES:
        raise UserError(f"unknown query type {qtype!r}; choose one of {', '.join(SPEC_TYPES)}")
    typer.echo(querydoc.markdown() if markdown else querydoc.schema_json(qtype), nl=False)


@app.command()
def sql(
    statement: str = typer.Argument(..., help="one SELECT, e.g. \"SELECT MAX(price) FROM trades [ROWS 5]\""),
    id: str = typer.Option("q1", "--id", help="the query's id"),  # noqa: A002
    op: bool = typer.Option(False, "--op", help="print the register operation (at 0) instead of the spec"),
) -> None:
    """Compile a standing query in SQL into its spec (docs/queries.md, SQL) and print it as JSON."""
    import json

    from .sql import SqlError, compile_sql

    try:
        spec = compile_sql(statement, id)
    except SqlError as e:
        raise UserError(f"not a standing query: {e}") from None
    typer.echo(json.dumps({"op": "register", "at": 0, "query": spec} if op else spec))


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
    from .pipeline.events_cmd import events

    app.command(name="events")(events)


_mount()

if __name__ == "__main__":  # pragma: no cover
    app()
