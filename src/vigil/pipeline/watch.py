"""Any Spark source in, events out as a streaming DataFrame: :func:`watch` (``vigil.spark.watch``),
the streaming query ``vigil run`` also starts (:func:`.driver.start_query`).

The user's streaming DataFrame (Kafka, Delta, ``rate``, files: anything ``readStream`` gives) is
unioned with the operation files of ``queries`` and handed to the same ``foreachBatch`` processor
as ``vigil run`` (driver or sharded mode), with the same exactly-once protocol: each batch's events
are written to ``out/events/batch=K`` before the engine's snapshot. :meth:`Watch.events` reads
them back as a streaming DataFrame (Spark's file source over ``out/events``: each batch's file
appears whole, by a directory rename), so they go to any sink the user writes to (``memory``,
Parquet, Delta, Kafka, console), with that sink's own checkpoint.

Order. Rows with a ``seq`` column are applied in seq order (the reorder buffer, as for files);
otherwise a batch's rows are applied partition by partition (Spark's partition index), rows of a
partition in the order the source gives them, which is deterministic for a batch Spark runs again
(Kafka: per topic-partition by offset; ``rate``: per partition by value). Give the stream a
``seq`` column (e.g. ``value + 1`` for ``rate``) for any other order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import sinks, sources
from .config import RunConfig
from .driver import start_query
from .store import SnapshotStore

EVENT_DDL = ("event string, id string, at long, value double, keys array<string>, r long, s long, "
             "reason string, asked_at long, left string, right string, batch int")


def _as_rows(bdf):
    """A micro-batch of the user's rows (and operation files) in the shape of vigil's file sources:
    ``_file`` = the partition (``watch:<index>``) for rows, ``_mtime`` 0."""
    from pyspark.sql import functions as F

    part = F.format_string("watch:%08d", F.spark_partition_id())
    if "_op" in bdf.columns:
        return (bdf.withColumn("_file", F.when(F.col("_op").isNull(), part).otherwise(F.col("_file")))
                .withColumn("_mtime", F.coalesce(F.col("_mtime"), F.lit(0).cast("timestamp"))))
    return bdf.withColumn("_file", part).withColumn("_mtime", F.lit(0).cast("timestamp"))


class Watch:
    """A running watch: the vigil streaming query and where its events go."""

    def __init__(self, spark, query, proc, cfg: RunConfig) -> None:
        self.spark, self.query, self.processor, self.cfg = spark, query, proc, cfg
        self.out = Path(cfg.out)

    def events(self, rejected: bool = False):
        """The events (``rejected=True``: the rejections) as a streaming DataFrame (columns of
        docs/contract.md plus ``batch``), for any sink."""
        d = self.out / (sinks.REJECTED if rejected else sinks.EVENTS)
        d.mkdir(parents=True, exist_ok=True)
        return self.spark.readStream.schema(EVENT_DDL).parquet(str(d))

    def process_all_available(self) -> None:
        self.query.processAllAvailable()
        self.processor._check()

    def metrics(self) -> list[dict[str, Any]]:
        return sinks.read_metrics(self.out)

    def stop(self, finish: bool = False) -> dict[str, Any] | None:
        """Stop the query; ``finish``: the input has ended (answer what waits for the end, e.g.
        rows held for a gap in seq, operations after the last element), written as one more batch."""
        if self.query.isActive:
            self.query.stop()
        self.processor.close()
        return self.processor.finish() if finish else None


def watch(stream_df, queries: str | Path | list, *, checkpoint: str | Path, out: str | Path | None = None,
          mode: str = "driver", shards: int = 2, trigger: str = "1 second", quantile_epsilon: float = 0.005,
          algos: dict[str, str] | None = None, quiet: bool = True, **settings: Any) -> Watch:
    """Watch a streaming DataFrame with vigil's standing queries; returns a :class:`Watch` whose
    :meth:`~Watch.events` is a streaming DataFrame of the events.

    ``queries``: a directory of JSON-lines operation files (read as a stream: new files register,
    terminate and look up as they arrive), or a list of operations (dicts or JSON lines), written
    once to ``checkpoint/queries`` and read from there. ``out`` (default ``checkpoint/out``):
    where each batch's events are written (Parquet, exactly once). ``mode``/``shards``: as
    ``vigil run --mode``. Other settings: the fields of :class:`.config.RunConfig`."""
    spark = stream_df.sparkSession
    if not stream_df.isStreaming:
        raise ValueError("watch() takes a streaming DataFrame (spark.readStream...)")
    ckpt = Path(checkpoint)
    if isinstance(queries, list | tuple):
        qdir = ckpt / "queries"
        qdir.mkdir(parents=True, exist_ok=True)
        f = qdir / "ops-00000.jsonl"
        if not f.exists():  # written once: the stream source reads it in the first batch
            f.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in queries))
        queries = qdir
    Path(queries).mkdir(parents=True, exist_ok=True)
    cfg = RunConfig(stream="<dataframe>", queries=str(queries), out=str(out or ckpt / "out"), checkpoint=str(ckpt),
                    fmt="dataframe", trigger=trigger, mode=mode, shards=shards, quantile_epsilon=quantile_epsilon,
                    algos=dict(algos or {}), quiet=quiet, finish=False, **settings)
    if mode not in ("driver", "sharded"):
        raise ValueError(f"mode takes driver or sharded, got {mode!r}")
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    SnapshotStore(ckpt, cfg.keep_snapshots).check_config(cfg)
    sinks.clean_partial(cfg.out)
    if mode == "sharded":
        spark.conf.set("spark.sql.shuffle.partitions", str(max(1, shards)))
    columns = {c for c in stream_df.columns if c not in sources.HELPER_COLUMNS}
    df = sources.combined(stream_df, sources.operations(spark, cfg.queries))
    query, proc = start_query(cfg, spark, df, columns, reader=None, prepare=_as_rows)
    return Watch(spark, query, proc, cfg)
