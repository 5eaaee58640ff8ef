"""``vigil events OUT_DIR``: a run's output events on stdout, as JSON lines or CSV.

``vigil run`` writes Parquet (``OUT_DIR/events/batch=K/``, ``OUT_DIR/rejected/batch=K/``, see
:mod:`.sinks`); this command prints them so that nobody needs a Parquet reader to see their
alerts. Batch after batch, in batch order; inside a batch its events (the engine's order), then
its rejections. JSON lines are the contract's objects (as ``vigil replay --out x.jsonl`` writes
them) with the batch first; CSV has one fixed header. Filters (``--id``, ``--event``,
``--batch``) are applied to the Parquet columns before any row is converted; batches not asked
for are not read.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import IO

import typer

CSV_COLUMNS = ("batch", "event", "id", "at", "asked_at", "value", "r", "s", "cluster", "reason")
FORMATS = ("jsonl", "csv")


def parse_batches(specs: list[str] | None) -> list[tuple[int, int]] | None:
    """``["3", "5-7"]`` -> [(3, 3), (5, 7)]; None: every batch."""
    from vigil.cliutil import UserError

    if not specs:
        return None
    out = []
    for spec in specs:
        lo, sep, hi = spec.strip().partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise UserError(f"--batch {spec!r}: expected a batch number (3) or a range (3-7)") from None
        if a < 0 or b < a:
            raise UserError(f"--batch {spec!r}: expected a batch number >= 0, or a range A-B with A <= B")
        out.append((a, b))
    return out


def batch_dirs(out: Path, batches: list[tuple[int, int]] | None) -> list[tuple[int, list[Path]]]:
    """[(K, [events/batch=K, rejected/batch=K that exist])] in batch order."""
    from .sinks import EVENTS, REJECTED, _batches

    found: dict[int, list[Path]] = {}
    for sub in (EVENTS, REJECTED):
        for k, p in _batches(out / sub):
            if batches is None or any(a <= k <= b for a, b in batches):
                found.setdefault(k, []).append(p)
    return sorted(found.items())


def select(table, ids: list[str] | None, events: list[str] | None):
    import pyarrow as pa
    import pyarrow.compute as pc

    if ids:
        table = table.filter(pc.fill_null(pc.is_in(table.column("id"), pa.array(ids, pa.string())), False))
    if events:
        table = table.filter(pc.fill_null(pc.is_in(table.column("event"), pa.array(events, pa.string())), False))
    return table


def write_rows(rows: list[dict], batch: int, fmt: str, f: IO[str], writer=None) -> None:
    if fmt == "jsonl":
        for d in rows:
            f.write(json.dumps({"batch": batch, **d}) + "\n")
        return
    for d in rows:
        v = d.get("value")
        writer.writerow({**d, "batch": batch, "value": json.dumps(v) if isinstance(v, list) else v})


def print_events(out: str | Path, ids: list[str] | None = None, events: list[str] | None = None,
                 batches: list[tuple[int, int]] | None = None, fmt: str = "jsonl", f: IO[str] | None = None) -> int:
    """Write the selected events of run output ``out`` to ``f`` (stdout); returns how many."""
    import pyarrow.parquet as pq

    from vigil.events import conform_outputs, output_rows

    f = f or sys.stdout
    writer = None
    if fmt == "csv":
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
    n = 0
    for k, dirs in batch_dirs(Path(out), batches):
        for d in dirs:
            for part in sorted(d.glob("*.parquet")):
                t = select(conform_outputs(pq.read_table(part)), ids, events)
                if t.num_rows:
                    write_rows(output_rows(t), k, fmt, f, writer)
                    n += t.num_rows
    return n


def events(
    out_dir: Path = typer.Argument(..., help="the --out folder of a `vigil run` (or `vigil demo`'s WORKDIR/out)"),
    ident: list[str] = typer.Option(None, "--id", help="only the events of this query id (repeatable)"),
    event: list[str] = typer.Option(None, "--event",
                                    help="only events of this kind: matured, answer, update, join, affected, "
                                         "late, rejected, ... (repeatable)"),
    batch: list[str] = typer.Option(None, "--batch", help="only batch K, or batches A-B (repeatable)"),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl (one JSON object per event) or csv"),
) -> None:
    """Print a run's output events (events/ and rejected/ of its --out folder) as JSON lines or CSV."""
    from vigil import cliutil as cu

    cu.one_of(fmt, FORMATS, "--format")
    ranges = parse_batches(batch)
    out = Path(out_dir)
    cu.input_dir(out, "OUT_DIR", "the --out folder of a `vigil run`")
    if not (out / "events").is_dir() and not (out / "rejected").is_dir():
        raise cu.UserError(f"{out}: no events/ or rejected/ folder in it; pass the --out folder of a `vigil run`")
    try:
        print_events(out, ident or None, event or None, ranges, fmt)
        sys.stdout.flush()
    except BrokenPipeError:  # `vigil events OUT | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
