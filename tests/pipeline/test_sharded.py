"""Sharded mode: per-shard engines on executors give the events of driver mode (= replay)."""

import pytest
from pipeline_helpers import canon, replay, run_outputs

from vigil.pipeline import sinks
from vigil.pipeline.driver import RunConfig, run
from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("shards", [2, 4])
def test_sharded_equals_driver_mode(spark, tmp_path, shards):
    n = 4000
    t = trades(n, n_symbols=12, with_rel=False, seed=2)
    ops = trade_queries(n, 120, n_symbols=12, families=("threshold",), seed=4)
    ops += [{"op": "terminate", "at": 50, "id": "nobody"}, "{broken",
            {"op": "register", "at": 10, "query": {"id": ops[0]["query"]["id"], "type": "threshold",
                                                   "where": {"price": [0, 1]}, "threshold": 1}}]
    write_files(t, ops, tmp_path / "s", tmp_path / "q", n_files=4)
    c = RunConfig(stream=str(tmp_path / "s"), queries=str(tmp_path / "q"), out=str(tmp_path / "out"),
                  checkpoint=str(tmp_path / "ck"), mode="sharded", shards=shards, max_files_per_batch=2,
                  quiet=True, algos={"threshold": "scan"})
    s = run(c, spark)
    ref = replay([(ops, t)], columns=set(t.column_names), algos={"threshold": "scan"})
    got = run_outputs(tmp_path / "out")
    assert canon(got) == canon(ref.to_pylist())
    assert sum(1 for r in got if r["event"] == "matured") >= 5
    assert s["ops_rejected"] == 3 and s["rows_in"] == n
    m = sinks.read_metrics(tmp_path / "out")
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
