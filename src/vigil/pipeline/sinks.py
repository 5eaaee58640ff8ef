"""Sinks of ``vigil run``: per-batch Parquet outputs, metrics, and atomic file writes.

Layout under ``--out``::

    events/batch=K/part-0.parquet     matured, answer, join/affected, late events of batch K
    rejected/batch=K/part-0.parquet   rejected stream rows and operations of batch K, with reasons
    _metrics/batch=K.json             one JSON object of counts and timings per batch

Each batch directory is written to a hidden temporary directory and renamed into place, replacing
what was there: writing batch K twice (a batch replayed after a crash) leaves exactly one copy.
Event files keep the engine's order; :func:`read_events` concatenates batches in batch order.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vigil.events import OUTPUT_SCHEMA, conform_outputs

EVENTS, REJECTED, METRICS = "events", "rejected", "_metrics"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _replace_dir(target: Path, table: pa.Table) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # no "=" in a temporary name: Spark's file index lists "_x=y" directories as partitions
    # (the events are read back as a stream by vigil.spark.watch)
    tmp = target.parent / f"_tmp-{target.name.replace('=', '-')}-{uuid.uuid4().hex}"
    tmp.mkdir()
    pq.write_table(table, tmp / "part-0.parquet")
    if target.exists():
        old = target.parent / f"_old-{target.name.replace('=', '-')}-{uuid.uuid4().hex}"
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)
    _fsync_dir(target.parent)


def split_outputs(outputs: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(events, rejected) of one batch's output table."""
    outputs = outputs.cast(OUTPUT_SCHEMA) if outputs.schema != OUTPUT_SCHEMA else outputs
    is_rej = pc.fill_null(pc.equal(outputs.column("event"), "rejected"), False)
    return outputs.filter(pc.invert(is_rej)), outputs.filter(is_rej)


def write_batch(out: str | Path, batch_id: int, outputs: pa.Table) -> tuple[int, int]:
    """Write batch ``batch_id``'s outputs (replacing an earlier attempt); returns (#events, #rejected)."""
    out = Path(out)
    events, rejected = split_outputs(outputs)
    _replace_dir(out / EVENTS / f"batch={batch_id}", events)
    _replace_dir(out / REJECTED / f"batch={batch_id}", rejected)
    return events.num_rows, rejected.num_rows


def write_metrics(out: str | Path, batch_id: int, metrics: dict[str, Any]) -> None:
    atomic_write_bytes(Path(out) / METRICS / f"batch={batch_id}.json", json.dumps(metrics).encode())


def clean_partial(out: str | Path) -> None:
    """Remove temporary directories a killed writer may have left."""
    for sub in (EVENTS, REJECTED):
        d = Path(out) / sub
        if d.is_dir():
            for p in d.iterdir():
                if p.name.startswith(("_tmp-", "_old-")):
                    shutil.rmtree(p, ignore_errors=True)


def _batches(d: Path) -> list[tuple[int, Path]]:
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        if p.is_dir() and p.name.startswith("batch="):
            try:
                out.append((int(p.name.split("=", 1)[1]), p))
            except ValueError:
                continue
    return sorted(out)


def _read(out: str | Path, sub: str) -> pa.Table:
    tables = []
    for k, p in _batches(Path(out) / sub):
        for f in sorted(p.glob("*.parquet")):
            t = conform_outputs(pq.read_table(f))  # files written before asked_at existed too
            tables.append(t.append_column("batch", pa.array([k] * t.num_rows, pa.int64())))
    if not tables:
        return OUTPUT_SCHEMA.append(pa.field("batch", pa.int64())).empty_table()
    return pa.concat_tables(tables)


def read_events(out: str | Path) -> pa.Table:
    """Every event of a run (batch order, then the engine's order), with a ``batch`` column."""
    return _read(out, EVENTS)


def read_rejected(out: str | Path) -> pa.Table:
    return _read(out, REJECTED)


def read_all(out: str | Path) -> pa.Table:
    """Events and rejections of a run merged in batch order (the engine's order inside a batch is
    not kept across the two directories); use for set comparisons."""
    return pa.concat_tables([read_events(out), read_rejected(out)])


def read_metrics(out: str | Path) -> list[dict[str, Any]]:
    d = Path(out) / METRICS
    if not d.is_dir():
        return []
    rows = []
    for p in d.glob("batch=*.json"):
        try:
            rows.append(json.loads(p.read_text()))
        except ValueError:
            continue
    return sorted(rows, key=lambda r: r.get("batch", 0))
