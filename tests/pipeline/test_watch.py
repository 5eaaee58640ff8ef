"""vigil.spark.watch: any streaming DataFrame in, the events out as a streaming DataFrame for any
sink; driver and sharded mode; the same events as the engine over the same rows."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_helpers import assert_same_events, replay

import vigil.spark
from vigil.workloads.trades import trade_queries, trades

pytestmark = pytest.mark.slow


def _until(w, rows: int, timeout: float = 240.0) -> None:
    """Wait until the watch has applied ``rows`` rows (polling its metrics: processAllAvailable
    never returns on a source that keeps producing, such as ``rate``)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        w.processor._check()
        if w.query.exception() is not None:
            raise AssertionError(f"the watch failed: {w.query.exception()}")
        if sum(m["rows_in"] for m in w.metrics() if not m.get("final")) >= rows:
            return
        time.sleep(0.5)
    raise AssertionError(f"fewer than {rows} rows in {timeout} s")


def _ops(n: int) -> list[dict]:
    q = [
        {"op": "register", "at": 0, "query": {"id": "sum100", "type": "window", "column": "value", "agg": "sum",
                                              "rows": 100}},
        {"op": "register", "at": 10, "query": {"id": "thr", "type": "threshold", "weight": "value",
                                               "threshold": 50_000}},
        {"op": "register", "at": 0, "query": {"id": "med", "type": "quantile", "column": "value", "phi": 0.5,
                                              "epsilon": 0.01}},
    ]
    q += [{"op": "lookup", "at": a, "id": i} for a in range(200, n, 300) for i in ("sum100", "med")]
    return q


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["driver", "sharded"])
def test_rate_source_to_a_memory_sink(spark, tmp_path, mode):
    """Spark's rate source (seq = value + 1: applied in value order), events read back through the
    memory sink; equal to the engine over the same rows, for the positions the run reached."""
    n = 1_500
    src = (spark.readStream.format("rate").option("rowsPerSecond", 2_000).option("numPartitions", 2).load()
           .selectExpr("value", "value + 1 AS seq"))
    w = vigil.spark.watch(src, _ops(n), checkpoint=tmp_path / "ck", mode=mode, shards=2, trigger="1 second")
    name = f"ev_{mode}"
    sink = w.events().writeStream.format("memory").queryName(name).option(
        "checkpointLocation", str(tmp_path / "sinkck")).start()
    try:
        _until(w, n)
    finally:
        w.stop()
    sink.processAllAvailable()
    sink.stop()
    got = [r.asDict() for r in spark.table(name).collect()]
    pos = max(m["position"] for m in w.metrics())
    rows = pa.table({"value": pa.array(range(pos), pa.int64())})
    ref = replay([(_ops(n), rows)], columns={"value", "seq"}, finish=False).to_pylist()
    ref = [r for r in ref if r["event"] != "rejected"]
    got = [{k: v for k, v in r.items() if k != "batch"} for r in got]
    assert pos >= n and any(r["event"] == "answer" for r in got)
    if mode == "sharded":  # seq = value + 1 continues the stream in every batch: rows stay in Spark
        assert w.processor.spark_batches >= 1
    assert_same_events(got, ref)


@pytest.mark.timeout(600)
def test_file_source_sharded_to_a_parquet_sink(spark, tmp_path):
    """A Parquet file source (one file per batch, no seq column: rows in file order), sharded
    mode, events written by a Parquet sink."""
    n, files = 3_000, 3
    t = trades(n, n_symbols=8, seed=5)
    d = tmp_path / "s"
    d.mkdir()
    t0 = time.time() - 100
    for i in range(files):  # distinct modification times: Spark's file source takes files in that order
        pq.write_table(t.slice(i * n // files, n // files), d / f"part-{i}.parquet")
        os.utime(d / f"part-{i}.parquet", (t0 + 10 * i, t0 + 10 * i))
    ops = trade_queries(n, 40, n_symbols=8, seed=6, lookups=5, families=("threshold", "window", "substream"),
                        joins=False)
    src = spark.readStream.schema(spark.read.parquet(str(d)).schema).option("maxFilesPerTrigger", 1).parquet(str(d))
    w = vigil.spark.watch(src, ops, checkpoint=tmp_path / "ck", mode="sharded", shards=2, trigger="1 second")
    sink = w.events().writeStream.format("parquet").option("path", str(tmp_path / "sink")).option(
        "checkpointLocation", str(tmp_path / "sinkck")).start()
    try:
        _until(w, n)
    finally:
        w.stop()
    sink.processAllAvailable()
    sink.stop()
    got = [{k: v for k, v in r.items() if k != "batch"} for r in pq.read_table(tmp_path / "sink").to_pylist()]
    ref = [r for r in replay([(ops, t)], columns=set(t.column_names), finish=False).to_pylist()
           if r["event"] != "rejected"]
    assert len(ref) > 20
    assert_same_events(got, ref)
