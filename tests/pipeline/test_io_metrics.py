"""Per-batch I/O metrics of vigil run (out/_metrics): bytes the driver receives and sends, bytes
written durably. Sharded mode run in-process (its shard tasks without Spark), driver mode through
its processor."""

from __future__ import annotations

import json

import pytest

from vigil.pipeline import sinks
from vigil.pipeline.config import RunConfig
from vigil.pipeline.sharded import ShardedProcessor
from vigil.workloads.trades import trade_queries, trades


def _run(tmp, rows_per_batch: int, queries: int, batches: int = 3) -> list[dict]:
    cfg = RunConfig(stream="", queries="", out=str(tmp / "out"), checkpoint=str(tmp / "ck"), mode="sharded",
                    shards=4, quiet=True)
    proc = ShardedProcessor(cfg, None, None)
    n = rows_per_batch * batches
    table = trades(n, seed=1)
    ops = [json.dumps({**o, "at": 0}) for o in trade_queries(n, queries, seed=2, families=("threshold", "windows"))
           if o["op"] == "register"]
    for k in range(batches):
        proc.run_batch(k, ops if k == 0 else [], table.slice(k * rows_per_batch, rows_per_batch))
    return sinks.read_metrics(cfg.out)


def test_sharded_metrics_count_driver_and_durable_bytes(tmp_path):
    ms = _run(tmp_path, 2_000, 100)
    assert [m["batch"] for m in ms] == [0, 1, 2]
    for m in ms:
        assert m["driver_bytes_in"] > 0 and m["driver_bytes_out"] > 0
        # the driver's snapshot (routing table) + the shards' logged inputs (and their snapshots
        # now and then); no manifest: batches handed in directly
        assert m["state_bytes_written"] > m["snapshot_bytes"] > 0
        # each of the 4 shards' own seconds, and the driver's merge of their outputs
        assert len(m["shard_task_s"]) == 4 and all(x > 0 for x in m["shard_task_s"]) and m["merge_s"] > 0


def test_sharded_driver_bytes_do_not_grow_with_the_queries(tmp_path):
    """Shard state stays on the executors (shard_store): 10x the queries, same rows: the driver's
    bytes per batch stay flat (they were x1.4-2 with every shard blob shipped each batch)."""
    small = _run(tmp_path / "a", 2_000, 100)[-1]
    large = _run(tmp_path / "b", 2_000, 1_000)[-1]
    assert large["driver_bytes_in"] + large["driver_bytes_out"] <= 1.5 * (
        small["driver_bytes_in"] + small["driver_bytes_out"])


def _spark_run(spark, tmp, rows_per_batch: int, queries: int, batches: int = 3) -> list[dict]:
    """vigil run --mode sharded on Spark: one stream file per batch, the registrations with the
    first; window and quantile queries (every row is routed to them) that answer no lookup."""
    from vigil.pipeline.driver import run
    from vigil.workloads.trades import write_files

    n = rows_per_batch * batches
    ops = [{**o, "at": 0} for o in trade_queries(n, queries, seed=2, lookups=0, families=("window", "quantile"), joins=False)
           if o["op"] == "register"]
    write_files(trades(n, seed=1), ops, tmp / "s", tmp / "q", n_files=batches)
    cfg = RunConfig(stream=str(tmp / "s"), queries=str(tmp / "q"), out=str(tmp / "out"), checkpoint=str(tmp / "ck"),
                    mode="sharded", shards=4, quiet=True, max_files_per_batch=1)
    run(cfg, spark)
    return [m for m in sinks.read_metrics(cfg.out) if not m["final"]]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sharded_driver_bytes_flat_under_10x_rows_and_queries(spark, tmp_path):
    """Rows stay in Spark (shard_route): the driver receives one record per file and the shards'
    outputs, and sends the routing plan and operations. 10x the rows and 10x the queries: the
    driver's bytes of a batch without operations stay within 1.5x."""
    small = _spark_run(spark, tmp_path / "a", 2_000, 100)
    large = _spark_run(spark, tmp_path / "b", 20_000, 1_000)
    assert sum(m["rows_in"] for m in large) == 60_000
    s, g = small[-1], large[-1]
    assert g["rows_in"] == 20_000 and g["driver_bytes_in"] > 0
    assert g["driver_bytes_in"] + g["driver_bytes_out"] <= 1.5 * (s["driver_bytes_in"] + s["driver_bytes_out"]), (s, g)


def test_sharded_snapshot_does_not_grow_with_the_queries(tmp_path):
    """The routing tables go to the routing log as changes: a batch that registers nothing writes
    a driver snapshot of the same size at 10x the queries."""
    small = _run(tmp_path / "a", 2_000, 100)[-1]
    large = _run(tmp_path / "b", 2_000, 1_000)[-1]
    assert large["snapshot_bytes"] <= 1.5 * small["snapshot_bytes"], (small["snapshot_bytes"], large["snapshot_bytes"])
