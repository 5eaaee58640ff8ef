"""``vigil run`` in driver mode (the embedded default) and the run loop shared with sharded mode.

Per micro-batch K (``foreachBatch``, Spark's thread)::

    df.toArrow()                      rows + operation lines of batch K (one Spark job)
    -> split_batch                    deterministic order: files by name, rows by position
    -> checkpoint/vigil/manifests/batch-K.json   the files of K (fsync), then hand K over, return

and on the engine thread, batch after batch in order::

    -> engine state after K-1         kept in memory; after a restart, restored (see below)
    -> add_operations(ops); process(rows)
    -> out/events|rejected/batch=K    replaced as a whole (a replayed batch is idempotent)
    -> checkpoint/vigil/snapshot-K    written atomically, AFTER the outputs
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

import json
import os
import queue
import re
import struct
import threading
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import sinks, sources
from .sinks import atomic_write_bytes

SNAP_RE = re.compile(r"^snapshot-(\d+)\.bin$")
SNAP_MAGIC = b"VIGILDRV\x01"  # driver snapshot: magic, int64 queries, int64 log bytes, engine snapshot
_HEADER = struct.Struct("<qq")


@dataclass
class RunConfig:
    stream: str
    queries: str
    out: str
    checkpoint: str
    fmt: str = "parquet"
    schema: str | None = None
    trigger: str = "available-now"
    max_files_per_batch: int | None = None
    max_op_files_per_batch: int | None = None
    mode: str = "driver"
    shards: int = 2
    master: str | None = None
    algos: dict[str, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    quantile_epsilon: float = 0.005
    join_output: str = "pairs"
    finish: bool | None = None  # default: True with available-now
    timeout: float | None = None  # stop a processing-time run after this many seconds
    quiet: bool = False
    keep_snapshots: int = 2

    def fingerprint(self) -> dict[str, Any]:
        """Settings a checkpoint is bound to (changing them mid-run would change the results)."""
        return {
            "mode": self.mode,
            "shards": self.shards if self.mode == "sharded" else None,
            "algos": dict(sorted(self.algos.items())),
            "quantile_epsilon": self.quantile_epsilon,
            "join_output": self.join_output,
            "fmt": self.fmt,
        }


class CheckpointError(RuntimeError):
    pass


class SnapshotStore:
    """Engine snapshots beside Spark's checkpoint: ``checkpoint/vigil/snapshot-K.bin``."""

    def __init__(self, checkpoint: str | Path, keep: int = 2) -> None:
        self.dir = Path(checkpoint) / "vigil"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.keep = max(2, keep)

    def path(self, k: int) -> Path:
        return self.dir / f"snapshot-{k:012d}.bin"

    def ids(self) -> list[int]:
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := SNAP_RE.match(p.name)))

    def latest(self) -> int | None:
        ids = self.ids()
        return ids[-1] if ids else None

    def load(self, k: int) -> bytes | None:
        p = self.path(k)
        return p.read_bytes() if p.exists() else None

    def save(self, k: int, data: bytes) -> None:
        atomic_write_bytes(self.path(k), data)
        for old in self.ids()[: -self.keep]:
            self.path(old).unlink(missing_ok=True)

    def check_config(self, cfg: RunConfig) -> None:
        p = self.dir / "config.json"
        fp = cfg.fingerprint()
        if p.exists():
            old = json.loads(p.read_text())
            diff = {k: (old.get(k), v) for k, v in fp.items() if old.get(k) != v}
            if diff:
                raise CheckpointError(
                    f"checkpoint {self.dir.parent} was written with other settings {diff}; "
                    "use a new --checkpoint (and --out) to change them"
                )
        else:
            atomic_write_bytes(p, json.dumps(fp).encode())


class QueryLog:
    """``checkpoint/vigil/queries.jsonl``: the id and spec of every query the engine registered,
    append-only; each line is ``[[ids...], [specs...]]`` of one batch (the specs are joined as
    the engine encoded them at registration: nothing is encoded again)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / "queries.jsonl"

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def append(self, ids: list, specs: list[str]) -> int:
        """Append one record (fsync'd); returns the log's size in bytes. ``specs`` are JSON."""
        with open(self.path, "ab") as f:
            f.write(f"[{json.dumps(ids)},[{','.join(specs)}]]\n".encode())
            f.flush()
            os.fsync(f.fileno())
            return f.tell()

    def read(self, nbytes: int, n: int) -> tuple[list, list]:
        """The first ``n`` (id, spec) pairs, from the first ``nbytes`` of the log, which is cut
        to that length (anything after it was written by an attempt that did not complete)."""
        if self.size() < nbytes:
            raise CheckpointError(f"{self.path} is shorter than its snapshot says ({self.size()} < {nbytes} bytes)")
        ids: list = []
        specs: list = []
        if nbytes:
            with open(self.path, "r+b") as f:
                data = f.read(nbytes)
                f.truncate(nbytes)
            for line in data.splitlines():
                a, b = json.loads(line)
                ids.extend(a)
                specs.extend(json.dumps(q, separators=(",", ":")) for q in b)
        else:
            self.path.unlink(missing_ok=True)
        if len(ids) != n:
            raise CheckpointError(f"{self.path} holds {len(ids)} queries where its snapshot says {n}")
        return ids, specs


class ManifestLog:
    """``checkpoint/vigil/manifests/batch-K.json``: the input files of batch K, written (fsync)
    before Spark commits K, so that batches Spark committed before the engine absorbed them can
    be read again after a crash (input files are immutable in a file source)."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory) / "manifests"

    def path(self, k: int) -> Path:
        return self.dir / f"batch-{k:012d}.json"

    def write(self, k: int, files: list[str]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path(k), json.dumps({"batch": k, "files": files}).encode())

    def read(self, k: int) -> list[str] | None:
        p = self.path(k)
        return json.loads(p.read_text())["files"] if p.exists() else None

    def ids(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in self.dir.glob("batch-*.json")) if self.dir.is_dir() else []

    def prune(self, upto: int) -> None:
        """Drop the manifests of batches ``<= upto`` (covered by a snapshot)."""
        for k in self.ids():
            if k <= upto:
                self.path(k).unlink(missing_ok=True)


def counts_of(eng) -> dict[str, int]:
    c = {k: int(v) for k, v in eng.counts.items()}
    c["outputs"] = int(sum(v for k, v in eng.out_counts.items() if k != "rejected"))
    return c


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


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
        self.console.print(
            f"{tag}  rows [cyan]{m['rows_in']:,}[/] (rej {m['rows_rejected']:,})  "
            f"ops [cyan]{m['ops_in']:,}[/] (rej {m['ops_rejected']:,}, late {m.get('late', 0):,})  "
            f"alive [green]{alive:,}[/]  out [yellow]{m['outputs']:,}[/]  "
            f"{m['latency_s']:.2f} s  [bold]{m['elements_per_s']:,.0f}[/] el/s  "
            f"snap {m.get('snapshot_bytes', 0) / 1e6:.1f} MB{skipped}",
            soft_wrap=True,
        )


class DriverProcessor:
    """The ``foreachBatch`` function of driver mode."""

    def __init__(self, cfg: RunConfig, columns: set[str] | None, reporter: Reporter | None = None,
                 reader=None) -> None:
        self.cfg = cfg
        self.columns = columns
        self.store = SnapshotStore(cfg.checkpoint, cfg.keep_snapshots)
        self.reporter = reporter or Reporter(cfg.quiet)
        self.engine = None
        self.batch = None  # id of the last batch the in-memory engine has absorbed
        self.metrics: list[dict[str, Any]] = []
        self.qlog = QueryLog(self.store.dir)
        self.logged = (0, 0)  # (queries, bytes) of the query log that belong to self.engine's lineage
        # pipelining (file sources): reader(files) -> batch DataFrame of exactly those files
        self.reader = reader
        self.manifests = ManifestLog(self.store.dir)
        self.pipelined = reader is not None
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # ---------------------------------------------------------------- engine lifecycle
    def new_engine(self):
        from vigil.engine import Engine

        return Engine(
            algos=self.cfg.algos,
            quantile_epsilon=self.cfg.quantile_epsilon,
            join_output=self.cfg.join_output,
            columns=self.columns,
        )

    def restore(self, k: int | None):
        from vigil.engine import Engine

        if k is None or k < 0:
            self.qlog.read(0, 0)
            self.logged = (0, 0)
            return self.new_engine()
        data = self.store.load(k)
        if data is None:
            raise CheckpointError(f"no engine snapshot for batch {k} in {self.store.dir}: the checkpoint is incomplete")
        if not data.startswith(SNAP_MAGIC):  # a whole-engine snapshot (older checkpoints)
            self.qlog.read(0, 0)
            self.logged = (0, 0)
            return Engine.restore(data)
        n, nbytes = _HEADER.unpack_from(data, len(SNAP_MAGIC))
        eng = Engine.restore(data[len(SNAP_MAGIC) + _HEADER.size:])
        eng.ids, eng.specs = self.qlog.read(nbytes, n)
        eng.by_id = {ident: q for q, ident in enumerate(eng.ids)}
        self.logged = (n, nbytes)
        return eng

    def snapshot(self, eng) -> bytes:
        """Snapshot of ``eng`` without its ids and specs, which go to the query log (only the
        queries registered since the last snapshot), see the module doc."""
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
        return SNAP_MAGIC + _HEADER.pack(len(ids), nbytes) + body

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
        ops, rows, _ = self.collect_split(self.reader(files)) if files else ([], pa.table({}), [])
        self.process_batch(k, ops, rows, files, time.perf_counter(), 0.0)

    # ---------------------------------------------------------------- one batch
    def collect_split(self, df) -> tuple[list[str], pa.Table, list[str]]:
        """The batch's (operation lines, stream rows in arrival order, files)."""
        return sources.split_batch(sources.with_row_index(df).toArrow(), self.cfg.fmt)

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
            ops, rows, files = self.collect_split(df)
            self.process_batch(batch_id, ops, rows, files, t0, time.perf_counter() - t0)
            return
        # operations first (one small job), so that the engine applies them while Spark reads
        # the rows (a burst of registrations costs the engine more than reading a file)
        from pyspark.sql import functions as F

        op = F.col("_op")
        ops, _, op_files = self.collect_split(df.filter(op.isNotNull()).select("_file", "_op"))
        rows_f: Future = Future()
        self._hand_over((batch_id, ops, rows_f, op_files, t0, 0.0))
        try:
            _, rows, row_files = self.collect_split(df.filter(op.isNull()).drop("_op"))
            files = sorted(op_files + row_files)
            self.manifests.write(batch_id, files)  # durable before Spark commits the batch
        except BaseException as e:
            rows_f.set_exception(e)
            raise
        rows_f.set_result((rows, files, time.perf_counter() - t0))

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

    def process_batch(self, batch_id: int, ops: list[str], rows: pa.Table | Future, files: list[str], t0: float,
                      t_collect: float) -> None:
        """Batch ``batch_id`` through the engine: outputs, snapshot, metrics. ``rows`` may be a
        Future of (rows, files, collect seconds) that Spark completes while operations apply."""
        eng = self.engine_before(batch_id)
        before = counts_of(eng)
        t1 = time.perf_counter()
        if ops:
            eng.add_operations(ops)
        t_engine = time.perf_counter() - t1
        if isinstance(rows, Future):
            rows, files, t_collect = rows.result()
        t1 = time.perf_counter()
        out = eng.process(rows)
        t_engine += time.perf_counter() - t1
        sinks.write_batch(self.cfg.out, batch_id, out)
        t2 = time.perf_counter()
        snap = self.snapshot(eng)
        self.store.save(batch_id, snap)
        self.manifests.prune(min(self.store.ids()))
        t_snap = time.perf_counter() - t2
        self.batch = batch_id
        self._report(
            batch_id, counts_of(eng), before, len(files), len(snap), time.perf_counter() - t0,
            t_collect, t_engine, t_snap, alive=eng.alive(),
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

    def _check(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the engine failed on a batch: {self._error!r}") from self._error

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

    def _report(self, batch_id, after, before, n_files, snap_bytes, latency, t_collect, t_engine, t_snap,
                alive=None, skipped=False, final=False, position=None) -> dict[str, Any]:
        d = delta(after, before) if after else {}
        m = {
            "batch": batch_id,
            "final": final,
            "skipped": skipped,
            "files": n_files,
            "rows_in": d.get("rows_in", 0),
            "rows_applied": d.get("rows_applied", 0),
            "rows_rejected": d.get("rows_rejected", 0),
            "ops_in": d.get("ops_in", 0),
            "ops_applied": d.get("ops_applied", 0),
            "ops_rejected": d.get("ops_rejected", 0),
            "late": d.get("late", 0),
            "outputs": d.get("outputs", 0),
            "alive": alive or {},
            "position": position if position is not None else (self.engine.position if self.engine is not None else 0),
            "latency_s": latency,
            "collect_s": t_collect,
            "engine_s": t_engine,
            "snapshot_s": t_snap,
            "snapshot_bytes": snap_bytes,
            "elements_per_s": d.get("rows_in", 0) / latency if latency > 0 else 0.0,
            "time": time.time(),
        }
        if not skipped:
            sinks.write_metrics(self.cfg.out, batch_id, m)
        self.metrics.append(m)
        self.reporter.batch(m)
        return m

    # ---------------------------------------------------------------- end of input
    def finish(self) -> dict[str, Any]:
        """Apply the operations still pending after the last element (as ``vigil replay`` does)."""
        self.close()
        t0 = time.perf_counter()
        k = max([*self.store.ids(), *self.manifests.ids()], default=-1) + 1  # after the last batch
        eng = self.engine_before(k)
        self.engine, self.batch = None, None  # finished: no longer the state of any batch
        before = counts_of(eng)
        out = eng.finish()
        sinks.write_batch(self.cfg.out, k, out)
        return self._report(k, counts_of(eng), before, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0.0,
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


def stream_columns(schema) -> set[str] | None:
    if schema is None:
        return None
    return {f.name for f in schema.fields if f.name not in sources.HELPER_COLUMNS}


def run(cfg: RunConfig, spark=None) -> dict[str, Any]:
    """Run the streaming job until the input is exhausted (available-now), ``cfg.timeout`` passes,
    or it is interrupted. Returns a summary (totals over the batches of this invocation)."""
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
    spark = spark or get_session(cfg.master, shards=cfg.shards if cfg.mode == "sharded" else 0)
    schema = None
    if cfg.fmt != "kafka":
        schema = (
            sources.parse_schema(cfg.schema, cfg.fmt)
            if cfg.schema
            else sources.infer_schema(spark, cfg.stream, cfg.fmt, cfg.options)
        )
    rows_df = sources.stream_rows(spark, cfg.stream, cfg.fmt, schema, cfg.max_files_per_batch, cfg.options)
    ops_df = sources.operations(spark, cfg.queries, cfg.max_op_files_per_batch)
    df = sources.combined(rows_df, ops_df)
    columns = stream_columns(schema)
    if cfg.mode == "sharded":
        from .sharded import ShardedProcessor

        proc = ShardedProcessor(cfg, columns, spark)
    else:
        reader = None
        if cfg.fmt != "kafka":  # files can be read again: the engine may run a batch behind Spark
            def reader(files: list[str]):
                return sources.batch_of(spark, cfg.stream, cfg.queries, cfg.fmt, schema, files, cfg.options)
        proc = DriverProcessor(cfg, columns, reader=reader)
    t0 = time.perf_counter()
    writer = df.writeStream.foreachBatch(proc).option("checkpointLocation", str(ckpt / "spark"))
    writer = _trigger(writer, cfg.trigger)
    query = writer.queryName(f"vigil-{cfg.mode}").start()
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
    finish = cfg.finish if cfg.finish is not None else cfg.trigger.strip().lower().startswith("available")
    final = proc.finish() if finish else None
    elapsed = time.perf_counter() - t0
    ms = [m for m in proc.metrics if not m.get("skipped")]
    rows = sum(m["rows_in"] for m in ms)
    summary = {
        "batches": len([m for m in ms if not m.get("final")]),
        "rows_in": rows,
        "rows_rejected": sum(m["rows_rejected"] for m in ms),
        "ops_in": sum(m["ops_in"] for m in ms),
        "ops_rejected": sum(m["ops_rejected"] for m in ms),
        "outputs": sum(m["outputs"] for m in ms),
        "seconds": elapsed,
        "elements_per_s": rows / elapsed if elapsed > 0 else 0.0,
        "final": final,
        "config": asdict(cfg),
    }
    return summary
