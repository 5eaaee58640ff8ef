"""``vigil run`` in driver mode (the embedded default) and the run loop shared with sharded mode.

Per micro-batch K (``foreachBatch``, Spark's thread)::

    df.toArrow()                      rows + operation lines of batch K (one Spark job)
    -> split_batch                    deterministic order: files by (modification time, path),
                                      rows by position (a batch applied again: its manifest's order)
    -> checkpoint/vigil/manifests/batch-K.json   the files of K in that order (fsync), hand K over

and on the engine thread, batch after batch in order::

    -> engine state after K-1         kept in memory; after a restart, restored (see below)
    -> add_operations(ops); reorder buffer (rows with seq: see .reorder); process(released rows)
    -> out/events|rejected/batch=K    replaced as a whole (a replayed batch is idempotent)
    -> checkpoint/vigil/snapshot-K    engine + reorder buffer, written atomically, AFTER the outputs
    -> out/_metrics/batch=K.json, one console line

Pipelining. The engine works on batch K while Spark plans, lists, reads and converts batch K+1
on the other core (the numba kernels release the GIL); ``foreachBatch(K+1)`` waits while the
engine is still a whole batch behind (at most one batch waits in memory). Spark writes
``commits/K`` when ``foreachBatch(K)`` returns, which may now be before the engine's snapshot K.
The manifest closes that gap: input files are immutable in a file source, so a batch Spark
committed can be read again (:func:`vigil.pipeline.sources.batch_of`, same files, same order,
same rows). Kafka batches cannot be re-read this way, so with Kafka the engine runs inside
``foreachBatch`` (no pipelining).

Restart. Let J be the latest engine snapshot. The engine restores J and replays the batches
J+1 .. K-1 from their manifests before batch K (or before ``finish``); then:

* Spark runs batch K again after a crash before ``commits/K`` (its offset log fixed the files
  of K before the batch started): no snapshot K yet -> processed again, outputs of K
  overwritten -> same bytes; snapshot K exists (crash after the engine finished K) -> outputs
  of K are complete, the batch is skipped and the engine continues from snapshot K.

So a job killed at any moment and restarted writes exactly the events of an uninterrupted run.
Manifests of batches covered by the oldest kept snapshot are deleted.

The snapshot leaves out the per-query bookkeeping that only grows (each registered query's id and
spec, kept by the engine for ever): :class:`QueryLog` appends the new ones to
``checkpoint/vigil/queries.jsonl`` (fsync) *before* snapshot K is written, and snapshot K records
how many queries and log bytes belong to it. Restoring K truncates the log to that length (a
crashed attempt of K+1 may have appended more) and gives the engine its ids and specs back. So a
batch that registers nothing writes nothing per query (at 100,000 queries that is 14 MB and
~0.45 s a batch less), and the guarantee above is unchanged.
With ``--trigger available-now`` the run ends with ``Engine.finish()`` (operations whose ``at``
lies beyond the last element), written as batch ``last+1`` and marked ``final`` in its metrics:
if more input arrives later, the next real batch has that id and replaces it.
"""

from __future__ import annotations

import queue
import re
import struct
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from vigil import warm
from vigil.state import pack, unpack

from . import sinks, sources
from .config import CheckpointError, RunConfig
from .processor import BaseProcessor, Reporter, counts_of, rejected_rows
from .reorder import ReorderBuffer
from .store import SnapshotStore

__all__ = ["CheckpointError", "DriverProcessor", "RunConfig", "run"]

SNAP_MAGIC = b"VIGILDRV\x01"  # driver snapshot: magic, int64 queries, int64 log bytes, engine snapshot
SNAP_MAGIC2 = b"VIGILDRV\x02"  # + int64 length of the reorder buffer's state, that state, engine snapshot
_HEADER = struct.Struct("<qq")
_HEADER2 = struct.Struct("<qqq")


class DriverProcessor(BaseProcessor):
    """The ``foreachBatch`` function of driver mode."""

    def __init__(self, cfg: RunConfig, columns: set[str] | None, reporter: Reporter | None = None,
                 reader=None) -> None:
        super().__init__(cfg, columns, reporter)
        self.engine = None
        self.logged = (0, 0)  # (queries, bytes) of the query log that belong to self.engine's lineage
        # pipelining (file sources): reader(files) -> batch DataFrame of exactly those files
        self.reader = reader
        self.pipelined = reader is not None
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- engine lifecycle
    def new_engine(self):
        from vigil.engine import Engine

        return Engine(
            algos=self.cfg.algos,
            quantile_epsilon=self.cfg.quantile_epsilon,
            join_output=self.cfg.join_output,
            columns=self.columns,
            join_history=self.cfg.join_history,
        )

    def restore(self, k: int | None):
        """The engine of snapshot ``k`` (a new one for None); sets ``self.reorder`` with it."""
        from vigil.engine import Engine

        self.reorder = ReorderBuffer(self.cfg.max_reorder_rows)
        if k is None or k < 0:
            self.qlog.read(0, 0)
            self.logged = (0, 0)
            return self.new_engine()
        data = self.store.load(k)
        if data is None:
            raise CheckpointError(f"no engine snapshot for batch {k} in {self.store.dir}: the checkpoint is incomplete")
        if data.startswith(SNAP_MAGIC2):
            n, nbytes, nre = _HEADER2.unpack_from(data, len(SNAP_MAGIC2))
            at = len(SNAP_MAGIC2) + _HEADER2.size
            self.reorder = ReorderBuffer.from_state(unpack(data[at:at + nre]), self.cfg.max_reorder_rows)
            body = data[at + nre:]
        elif data.startswith(SNAP_MAGIC):
            n, nbytes = _HEADER.unpack_from(data, len(SNAP_MAGIC))
            body = data[len(SNAP_MAGIC) + _HEADER.size:]
        else:  # a whole-engine snapshot (older checkpoints)
            self.qlog.read(0, 0)
            self.logged = (0, 0)
            return Engine.restore(data)
        eng = Engine.restore(body)
        eng.ids, eng.specs = self.qlog.read(nbytes, n)
        eng.by_id = {ident: q for q, ident in enumerate(eng.ids)}
        self.logged = (n, nbytes)
        return eng

    def snapshot(self, eng) -> bytes:
        """Snapshot of ``eng`` without its ids and specs, which go to the query log (only the
        queries registered since the last snapshot), plus the reorder buffer; see the module doc."""
        ids, specs = eng.ids, eng.specs
        n0, nbytes = self.logged
        if len(ids) > n0:
            nbytes = self.qlog.append(ids[n0:], specs[n0:])
        eng.ids, eng.specs = [], []
        try:
            body = eng.snapshot()
        finally:
            eng.ids, eng.specs = ids, specs
        self.logged = (len(ids), nbytes)
        re_state = pack(self.reorder.state())
        return SNAP_MAGIC2 + _HEADER2.pack(len(ids), nbytes, len(re_state)) + re_state + body

    def engine_before(self, batch_id: int):
        """The engine after batch ``batch_id - 1``: in memory, or restored from the latest
        snapshot and brought forward by the batches Spark committed after it (their manifests;
        see the module doc)."""
        if self.engine is not None and self.batch == batch_id - 1:
            return self.engine
        j = max((k for k in self.store.ids() if k < batch_id), default=-1)
        self.engine = self.restore(j)
        self.batch = j
        for k in range(j + 1, batch_id):
            self._replay(k)
        return self.engine

    def _replay(self, k: int) -> None:
        files = self.manifests.read(k)
        if files is None or self.reader is None:
            raise CheckpointError(f"no engine snapshot for batch {k} in {self.store.dir} and no manifest to "
                                  "replay it from: the checkpoint is incomplete")
        ops, rows, _ = self.collect_split(self.reader(files), files) if files else ([], pa.table({}), [])
        self.process_batch(k, ops, rows, files, time.perf_counter(), 0.0)

    def _position(self) -> int:
        return self.engine.position if self.engine is not None else 0

    # ---------------------------------------------------------------- one batch
    def __call__(self, df, batch_id: int) -> None:
        t0 = time.perf_counter()
        self._check()
        if self.store.path(batch_id).exists():  # replay of a batch whose outputs are complete
            self.drain()
            self.engine = self.restore(batch_id)
            self.batch = batch_id
            self._report(batch_id, {}, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0, skipped=True)
            return
        if not self.pipelined:
            ops, rows, files = self.collect_split(df, batch_id=batch_id)
            self.process_batch(batch_id, ops, rows, files, t0, time.perf_counter() - t0)
            return
        # One Spark job. The DataFrame foreachBatch gets is the micro-batch's executed plan (a
        # LogicalRDD), so filtering it for the operation files (an earlier design: operations
        # first, rows in a second job) read every file of the batch twice; split on the driver.
        order = self.manifests.read(batch_id)  # Spark runs K again after a crash: the order of the first attempt
        ops, rows, files = self.collect_split(df, order, batch_id)
        self.write_manifest(batch_id, files)  # durable before Spark commits the batch
        self._hand_over((batch_id, ops, rows, files, t0, time.perf_counter() - t0))

    def _hand_over(self, item: tuple) -> None:
        """Queue a batch for the engine thread; waits while the engine is a whole batch behind."""
        if self._thread is None:
            self._queue = queue.Queue(maxsize=1)
            self._thread = threading.Thread(target=self._work, name="vigil-engine", daemon=True)
            self._thread.start()
        while True:
            self._check()
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def process_batch(self, batch_id: int, ops: list[str], rows: pa.Table, files: list[str], t0: float,
                      t_collect: float) -> None:
        """Batch ``batch_id`` through the engine: outputs, snapshot, metrics. ``t0 + t_collect``:
        when the batch was collected and handed over; the wait from then until now is its queue
        time (the engine was busy with earlier batches), reported beside its processing time."""
        warm.wait()  # a first run's parallel compilation (vigil.warm, started by the demo) ends first
        t_start = time.perf_counter()
        queued = max(0.0, t_start - (t0 + t_collect))
        eng = self.engine_before(batch_id)
        before = counts_of(eng, self.reorder)
        t1 = time.perf_counter()
        if ops:
            eng.add_operations(ops)
        t_engine = time.perf_counter() - t1
        t1 = time.perf_counter()
        rows, late = self.reorder_rows(rows)
        out = eng.process(rows)
        if late:
            out = pa.concat_tables([rejected_rows(late), out])
        t_engine += time.perf_counter() - t1
        sinks.write_batch(self.cfg.out, batch_id, out)
        t2 = time.perf_counter()
        snap = self.snapshot(eng)
        self.store.save(batch_id, snap)
        self.manifests.prune(min(self.store.ids()))
        t_snap = time.perf_counter() - t2
        self.batch = batch_id
        self._report(
            batch_id, counts_of(eng, self.reorder), before, len(files), len(snap),
            t_collect + time.perf_counter() - t_start, t_collect, t_engine, t_snap, alive=eng.alive(), files=files,
            queue_s=queued,
        )

    # ---------------------------------------------------------------- the engine thread
    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:
                    self.process_batch(*item)
            except BaseException as e:  # noqa: BLE001 - reported by the next foreachBatch / close()
                self._error = e
                self.engine, self.batch = None, None
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Wait until the engine has absorbed every batch handed to it."""
        if self._queue is not None:
            self._queue.join()
        self._check()

    def close(self) -> None:
        """Drain and stop the engine thread; raises if the engine failed."""
        if self._thread is not None:
            self._queue.join()
            self._queue.put(None)
            self._thread.join()
            self._thread, self._queue = None, None
        self._check()

    # ---------------------------------------------------------------- end of input
    def finish(self) -> dict[str, Any]:
        """Release the rows the reorder buffer still holds (the gaps before them are accepted),
        then apply the operations still pending after the last element (as ``vigil replay``
        does). Nothing is snapshotted: more input later continues from the last batch."""
        self.close()
        t0 = time.perf_counter()
        k = max([*self.store.ids(), *self.manifests.ids()], default=-1) + 1  # after the last batch
        eng = self.engine_before(k)
        self.engine, self.batch = None, None  # finished: no longer the state of any batch
        before = counts_of(eng, self.reorder)
        held = self.reorder.flush()
        outs = [eng.process(held)] if held is not None else []
        outs.append(eng.finish())
        sinks.write_batch(self.cfg.out, k, pa.concat_tables(outs))
        return self._report(k, counts_of(eng, self.reorder), before, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0.0,
                            alive=eng.alive(), final=True, position=eng.position)


# ----------------------------------------------------------------------------- the run loop


def _trigger(writer, trigger: str):
    t = trigger.strip().lower()
    if t in ("available-now", "availablenow", "available_now"):
        return writer.trigger(availableNow=True)
    if t == "once":
        return writer.trigger(once=True)
    if re.match(r"^\d+(\.\d+)?\s*(ms|milliseconds?|s|seconds?|minutes?)$", t):
        return writer.trigger(processingTime=t)
    raise ValueError(f"--trigger takes 'available-now' or an interval like '10 seconds', got {trigger!r}")


def start_query(cfg: RunConfig, spark, df, columns: set[str] | None, reader=None, prepare=None):
    """Start the streaming query of ``df`` (stream rows unioned with operation files) through the
    processor of ``cfg.mode``: ``vigil run`` (file or Kafka sources) and ``vigil.spark.watch`` (any
    streaming DataFrame) both run it. ``prepare(batch_df)``: applied to each micro-batch first.
    Returns (query, processor)."""
    if cfg.mode == "sharded":
        from .sharded import ShardedProcessor

        proc = ShardedProcessor(cfg, columns, spark)
    else:
        proc = DriverProcessor(cfg, columns, reader=reader)
    fn = proc if prepare is None else (lambda bdf, k: proc(prepare(bdf), k))
    writer = df.writeStream.foreachBatch(fn).option("checkpointLocation", str(Path(cfg.checkpoint) / "spark"))
    writer = _trigger(writer, cfg.trigger)
    return writer.queryName(f"vigil-{cfg.mode}-{uuid.uuid4().hex[:8]}").start(), proc


def stream_columns(schema) -> set[str] | None:
    if schema is None:
        return None
    return {f.name for f in schema.fields if f.name not in sources.HELPER_COLUMNS}


def run(cfg: RunConfig, spark=None) -> dict[str, Any]:
    """Run the streaming job until the input is exhausted (available-now), ``cfg.timeout`` passes,
    or it is interrupted. Returns a summary (totals over the batches of this invocation).
    Unless quiet, numba compilations (a first run's) show as a status line (:mod:`vigil.jit`)."""
    if cfg.quiet:
        return _run(cfg, spark)
    from rich.console import Console

    from vigil.jit import compile_status

    with compile_status(Console(stderr=True)):
        return _run(cfg, spark)


def _run(cfg: RunConfig, spark=None) -> dict[str, Any]:
    from .session import get_session

    if cfg.mode not in ("driver", "sharded"):
        raise ValueError(f"--mode takes driver or sharded, got {cfg.mode!r}")
    if cfg.fmt not in sources.FORMATS:
        raise sources.SourceError(f"unknown --format {cfg.fmt!r}; expected one of {list(sources.FORMATS)}")
    out, ckpt = Path(cfg.out), Path(cfg.checkpoint)
    out.mkdir(parents=True, exist_ok=True)
    Path(cfg.queries).mkdir(parents=True, exist_ok=True)
    store = SnapshotStore(ckpt, cfg.keep_snapshots)
    store.check_config(cfg)
    sinks.clean_partial(out)
    times: dict[str, float] = {}  # wall seconds of the phases (the summary's "times")
    t = time.perf_counter()
    spark = spark or get_session(cfg.master, shards=cfg.shards if cfg.mode == "sharded" else 0,
                                 whole_files=cfg.mode == "driver" and cfg.fmt == "parquet")
    times["spark_start"] = time.perf_counter() - t  # ~0 when a started session was passed in
    master = spark.sparkContext.master
    schema = None
    t = time.perf_counter()
    if cfg.fmt != "kafka":
        schema = (
            sources.parse_schema(cfg.schema, cfg.fmt)
            if cfg.schema
            else sources.infer_schema(spark, cfg.stream, cfg.fmt, cfg.options)
        )
    times["schema"] = time.perf_counter() - t
    t = time.perf_counter()
    rows_df = sources.stream_rows(spark, cfg.stream, cfg.fmt, schema, cfg.max_files_per_batch, cfg.options)
    ops_df = sources.operations(spark, cfg.queries, cfg.max_op_files_per_batch)
    df = sources.combined(rows_df, ops_df)
    columns = stream_columns(schema)
    reader = None
    if cfg.fmt != "kafka":  # files can be read again: the engine may run a batch behind Spark
        def reader(files: list[str]):
            return sources.batch_of(spark, cfg.stream, cfg.queries, cfg.fmt, schema, files, cfg.options)
    t0 = time.perf_counter()
    times["query_setup"] = t0 - t  # the sources' DataFrames (Spark analyses them)
    query, proc = start_query(cfg, spark, df, columns, reader)
    try:
        if cfg.timeout:
            query.awaitTermination(cfg.timeout)
        else:
            query.awaitTermination()
    except KeyboardInterrupt:
        pass
    finally:
        if query.isActive:
            query.stop()
    exc = query.exception()
    try:
        proc.close()  # the engine thread absorbs the batches handed to it
    except Exception:
        if exc is None:
            raise
    if exc is not None:
        raise RuntimeError(f"the streaming query failed: {exc}")
    times["stream"] = time.perf_counter() - t0
    t = time.perf_counter()
    finish = cfg.finish if cfg.finish is not None else cfg.trigger.strip().lower().startswith("available")
    final = proc.finish() if finish else None
    times["finish"] = time.perf_counter() - t
    elapsed = time.perf_counter() - t0
    ms = [m for m in proc.metrics if not m.get("skipped")]
    rows = sum(m["rows_in"] for m in ms)
    summary = {
        "batches": len([m for m in ms if not m.get("final")]),
        "rows_in": rows,
        "rows_rejected": sum(m["rows_rejected"] for m in ms),
        "rows_late": sum(m.get("rows_late", 0) for m in ms),
        "rows_held": ms[-1].get("rows_held", 0) if ms else 0,
        "ops_in": sum(m["ops_in"] for m in ms),
        "ops_applied": sum(m["ops_applied"] for m in ms),
        "ops_rejected": sum(m["ops_rejected"] for m in ms),
        "ops_waiting_before": ms[0].get("ops_waiting_before", 0) if ms else 0,  # held by a restored snapshot
        "ops_waiting": ms[-1].get("ops_waiting", 0) if ms else 0,  # at > the last element, --no-finish
        "outputs": sum(m["outputs"] for m in ms),
        "seconds": elapsed,  # the streaming query and finish(); without Spark start and schema
        "elements_per_s": rows / elapsed if elapsed > 0 else 0.0,
        "times": times,  # spark_start, schema, query_setup, stream (query start to its end), finish
        "processing_s": sum(m["latency_s"] for m in ms),  # the batches' processing times (may overlap)
        "queue_s": sum(m.get("queue_s", 0.0) for m in ms),
        "master": master,
        "final": final,
        "config": asdict(cfg),
    }
    return summary
