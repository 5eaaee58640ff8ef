"""What the ``foreachBatch`` functions of driver mode (:mod:`.driver`) and sharded mode
(:mod:`.sharded`) share: the checkpoint stores, collecting and ordering a batch, the reorder
buffer's rejections as output events, metrics and the console line."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from vigil.events import OUTPUT_SCHEMA

from . import sinks, sources
from .config import RunConfig
from .reorder import ReorderBuffer
from .store import ManifestLog, QueryLog, SnapshotStore


def counts_of(eng, buf: ReorderBuffer | None = None) -> dict[str, int]:
    """Cumulative counts of an engine and its reorder buffer: rows the buffer rejected (late,
    duplicate or without a seq) count as rows in and rows rejected; ``rows_arrived`` also counts
    the rows still held."""
    c = {k: int(v) for k, v in eng.counts.items()}
    c["outputs"] = int(sum(v for k, v in eng.out_counts.items() if k != "rejected"))
    c["ops_waiting"] = len(eng.pending)  # arrived, ``at`` not reached yet: neither applied nor rejected
    c.update(buffer_counts(buf, c["rows_in"]))
    return c


def buffer_counts(buf: ReorderBuffer | None, rows_in: int) -> dict[str, int]:
    """The buffer's share of the counts (added to an engine's, or a shard set's)."""
    if buf is None:
        return {"rows_arrived": rows_in, "rows_late": 0}
    rej = buf.counts["late"] + buf.counts["duplicate"] + buf.counts["no_seq"]
    return {"rows_arrived": rows_in + rej + len(buf), "rows_late": buf.counts["late"], "_buf_rejected": rej}


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


def rejected_rows(items: list[tuple[int | None, str]]) -> pa.Table:
    """Rows the reorder buffer rejected, as ``rejected`` output events (``at`` = their seq)."""
    return pa.Table.from_pylist([{"event": "rejected", "id": None, "at": a, "reason": r} for a, r in items],
                                schema=OUTPUT_SCHEMA)


class Reporter:
    """One rich console line per batch."""

    def __init__(self, quiet: bool = False) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.quiet = quiet

    def batch(self, m: dict[str, Any]) -> None:
        if self.quiet:
            return
        alive = sum(m.get("alive", {}).values())
        tag = "[bold magenta]final[/]" if m.get("final") else f"batch [bold]{m['batch']}[/]"
        skipped = " [dim](replayed: outputs already complete)[/]" if m.get("skipped") else ""
        held = f", late {m['rows_late']:,}" if m.get("rows_late") else ""
        held += f", held {m['rows_held']:,}" if m.get("rows_held") else ""
        self.console.print(
            f"{tag}  rows [cyan]{m['rows_in']:,}[/] (rej {m['rows_rejected']:,}{held})  "
            f"ops {ops_line(m)}  alive [green]{alive:,}[/]  out [yellow]{m['outputs']:,}[/]  "
            f"{m['latency_s']:.2f} s{queued_line(m)}  [bold]{m['elements_per_s']:,.0f}[/] el/s  "
            f"snap {m.get('snapshot_bytes', 0) / 1e6:.1f} MB{skipped}",
            soft_wrap=True,
        )


def ops_line(m: dict[str, Any]) -> str:
    """``in [+ waiting before] = applied + rej + waiting`` of a batch's metrics (they add up)."""
    before = m.get("ops_waiting_before", 0)
    carried = f" + {before:,} waiting" if before else ""
    late = f", {m['late']:,} late" if m.get("late") else ""
    return (f"[cyan]{m['ops_in']:,}[/]{carried} = applied {m['ops_applied']:,}{late} + rej {m['ops_rejected']:,} "
            f"+ waiting {m.get('ops_waiting', 0):,}")


def queued_line(m: dict[str, Any]) -> str:
    q = m.get("queue_s", 0.0)
    return f" (+{q:.2f} s queued)" if q >= 0.005 else ""


class BaseProcessor:
    """State and helpers of a ``foreachBatch`` function (see :mod:`.driver`, :mod:`.sharded`)."""

    def __init__(self, cfg: RunConfig, columns: set[str] | None, reporter: Reporter | None = None) -> None:
        self.cfg = cfg
        self.columns = columns
        self.store = SnapshotStore(cfg.checkpoint, cfg.keep_snapshots)
        self.reporter = reporter or Reporter(cfg.quiet)
        self.batch = None  # id of the last batch the in-memory state has absorbed
        self.metrics: list[dict[str, Any]] = []
        self.qlog = QueryLog(self.store.dir)
        self.manifests = ManifestLog(self.store.dir)
        self.reorder = ReorderBuffer(cfg.max_reorder_rows)
        self._error: BaseException | None = None
        # per batch id: bytes the driver received ("in": collected rows, shard results) and sent
        # ("out": shard state and rows), and manifest bytes written for it (metrics: see _report)
        self._io: dict[int, dict[str, int]] = {}
        self._written0 = 0

    def io(self, batch_id: int) -> dict[str, int]:
        return self._io.setdefault(batch_id, {"in": 0, "out": 0, "durable": 0})

    def write_manifest(self, batch_id: int, files: list[str]) -> None:
        self.io(batch_id)["durable"] += self.manifests.write(batch_id, files)

    def collect_split(self, df, order: list[str] | None = None, batch_id: int | None = None
                      ) -> tuple[list[str], pa.Table, list[str]]:
        """The batch's (operation lines, stream rows in arrival order, files in applied order);
        ``order``: the files in a recorded order (a batch applied again)."""
        table = sources.with_row_index(df).toArrow()
        if batch_id is not None:
            self.io(batch_id)["in"] += table.nbytes
        return sources.split_batch(table, self.cfg.fmt, order)

    def reorder_rows(self, rows: pa.Table) -> tuple[pa.Table, list[tuple[int | None, str]]]:
        """Rows that carry ``seq`` through the reorder buffer (others unchanged)."""
        if "seq" not in rows.column_names:
            return rows, []
        return self.reorder.push(rows)

    def _check(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the engine failed on a batch: {self._error!r}") from self._error

    def close(self) -> None:
        self._check()

    def _report(self, batch_id, after, before, n_files, snap_bytes, latency, t_collect, t_engine, t_snap,
                alive=None, skipped=False, final=False, position=None, files=None, queue_s=0.0) -> dict[str, Any]:
        """Metrics of a batch. ``after``/``before``: cumulative counts (driver mode), or ``after``
        the batch's own counts and ``before`` {} (sharded mode); ``ops_waiting`` is a level, not a
        count: the operations held after the batch (``ops_waiting_before``: before it), so
        ``ops_waiting_before + ops_in == ops_applied + ops_rejected + ops_waiting``. ``latency``:
        the batch's processing time (collect + engine + outputs + snapshot); ``queue_s``: the time
        it waited for the engine between them (pipelined driver mode), not part of ``latency``."""
        d = delta(after, before) if after else {}
        io = self._io.pop(batch_id, None) or {"in": 0, "out": 0, "durable": 0}
        written = self.store.written + self.qlog.written  # snapshots and query log: this thread's
        buf_rej = d.pop("_buf_rejected", 0)
        waiting = after.get("ops_waiting", 0) if after else 0
        waiting0 = (before.get("ops_waiting", 0) if before else after.get("ops_waiting_before", 0)) if after else 0
        m = {
            "batch": batch_id,
            "final": final,
            "skipped": skipped,
            "files": n_files,
            "rows_in": d.get("rows_in", 0) + buf_rej,
            "rows_applied": d.get("rows_applied", 0),
            "rows_rejected": d.get("rows_rejected", 0) + buf_rej,
            "rows_arrived": d.get("rows_arrived", 0),
            "rows_late": d.get("rows_late", 0),
            "rows_held": len(self.reorder),
            "reorder_bytes": self.reorder.nbytes,
            "ops_in": d.get("ops_in", 0),
            "ops_applied": d.get("ops_applied", 0),
            "ops_rejected": d.get("ops_rejected", 0),
            "ops_waiting_before": waiting0,
            "ops_waiting": waiting,
            "late": d.get("late", 0),
            "outputs": d.get("outputs", 0),
            "alive": alive or {},
            "position": position if position is not None else self._position(),
            "latency_s": latency,
            "queue_s": queue_s,
            "collect_s": t_collect,
            "engine_s": t_engine,
            "snapshot_s": t_snap,
            "snapshot_bytes": snap_bytes,
            # what the design's scale depends on (docs/pipeline.md, "Metrics"): bytes the driver
            # received (collected rows, shard results) and sent (shard state and rows), and the
            # bytes written durably (snapshot, query log, manifests) during this batch
            "driver_bytes_in": io["in"],
            "driver_bytes_out": io["out"],
            "state_bytes_written": io["durable"] + written - self._written0,
            # sharded mode: shard tasks that found no live engine at their version in their worker
            # and restored it from the shard's durable log (snapshot + ``replayed`` logged batches)
            "shard_restores": io.get("restores", 0),
            "shard_replayed": io.get("replayed", 0),
            "shard_restore_s": io.get("restore_s", 0.0),
            # sharded mode: seconds each shard's tasks took inside their worker (by shard), and the
            # driver's merge of their outputs: the rest of the shard job is Spark's scheduling and
            # the results' transfer
            "shard_task_s": [round(v, 4) for _, v in sorted(io.get("task_s", {}).items())],
            "merge_s": io.get("merge_s", 0.0),
            "elements_per_s": d.get("rows_in", 0) / latency if latency > 0 else 0.0,
            "time": time.time(),
        }
        if files is not None:
            m["order"] = files
        self._written0 = written
        if not skipped:
            sinks.write_metrics(self.cfg.out, batch_id, m)
        self.metrics.append(m)
        self.reporter.batch(m)
        return m

    def _position(self) -> int:
        return 0
