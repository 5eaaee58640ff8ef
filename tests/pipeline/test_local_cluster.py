"""Sharded mode on a real multi-process cluster: ``--master local-cluster[2,1,1024]`` (two executor
JVMs, each with its own Python workers), through ``vigil run`` in a subprocess (a test process
holds one SparkContext). Outputs equal driver mode's and the in-process engine's (``vigil
replay``'s) for every family, joins included; they survive a restart on new executors (every shard
restored from its durable log, vigil.pipeline.shard_store) and the loss of a Python worker in the
middle of a shard task (Spark runs the task again). Slow: make test-all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import assert_same_events, canon, replay, run_outputs

from vigil.pipeline import sinks
from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

CLUSTER = "local-cluster[2,1,1024]"
N = 2400  # rows of the every-family workload, in 4 files (4 batches)


def _run(stream: Path, queries: Path, out: Path, *extra: str, env: dict | None = None) -> None:
    cmd = [str(Path(sys.executable).parent / "vigil"), "run", "--stream", str(stream), "--queries", str(queries),
           "--out", str(out / "out"), "--checkpoint", str(out / "ck"), "--max-files-per-batch", "1",
           "--algo", "threshold=scan", "--quiet", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr[-3000:]


def _sharded(d: Path, out: Path, shards: int, *extra: str, env: dict | None = None) -> None:
    _run(d / "s", d / "q", out, "--mode", "sharded", "--shards", str(shards), "--master", CLUSTER, *extra, env=env)


def _every_family_ops(n: int) -> list[dict]:
    """trade_queries' mix (thresholds keyed, key-less and re-arming, windows, substream filters,
    quantiles with their per-key, alert and rank shapes, window and interval joins) plus select
    joins and band joins (its mix weights them 0), window joins and notify quantile queries."""
    ops = trade_queries(n, 70, n_symbols=10, seed=56, lookups=5, families=(
        "threshold", "window", "substream", "quantile", "repeat_threshold", "interval_join",
        "alert_quantile", "keyed_quantile", "rank_quantile"))
    ops += [{"op": "register", "at": at, "query": {"id": f"qn-{i}", "type": "quantile", "column": col, "phi": 0.9,
                                                   "epsilon": 0.02, "notify": notify}}
            for i, (at, col, notify) in enumerate([(0, "price", True), (n // 4, "shares", "cluster")])]
    for i, at in enumerate((0, n // 3, n // 2)):
        ops.append({"op": "register", "at": at, "query": {
            "id": f"sj-{i}", "type": "select_join", "left": "buy", "right": "sell", "left_on": "symbol",
            "right_on": "symbol", "left_range": {"shares": [500, None]}, "right_range": {"shares": [2000 + 1000 * i, None]}}})
        ops.append({"op": "register", "at": at + 7, "query": {
            "id": f"bj-{i}", "type": "band_join", "left": "buy", "right": "sell", "left_on": "nasdaq",
            "right_on": "nasdaq", "band": [0.0, 0.005 * (i + 1)]}})
        ops.append({"op": "register", "at": at + 3, "query": {
            "id": f"wj-{i}", "type": "window_join", "left": "buy", "right": "sell", "left_on": "symbol",
            "right_on": "symbol", "window": 0.02 * (i + 1), "time_column": "ts", "right_range": {"shares": [800, None]}}})
    ops.append({"op": "terminate", "at": 2 * n // 3, "id": "bj-0"})
    ops.sort(key=lambda o: o["at"])
    return ops


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    """The every-family stream and operations in files, the engine's reference, driver mode's outputs."""
    d = tmp_path_factory.mktemp("every")
    t = trades(N, n_symbols=10, seed=51)
    ops = _every_family_ops(N)
    write_files(t, ops, d / "s", d / "q", n_files=4)
    ref = replay([(ops, t)], columns=set(t.column_names), algos={"threshold": "scan"}).to_pylist()
    kinds = {r["event"] for r in ref}
    assert {"matured", "answer", "join"} <= kinds, kinds
    assert {"select_join", "window_join", "band_join"} <= {o["query"]["type"] for o in ops if o["op"] == "register"}
    _run(d / "s", d / "q", d / "driver", "--mode", "driver", "--master", "local[1]")
    driver = run_outputs(d / "driver" / "out")
    return d, t, ops, ref, driver


def test_driver_mode_equals_the_engine(workload):
    _, _, _, ref, driver = workload
    assert canon(driver) == canon(ref)


@pytest.mark.parametrize("shards", [2, 4])
def test_sharded_every_family_equals_driver_and_replay(workload, tmp_path, shards):
    d, t, ops, ref, driver = workload
    _sharded(d, tmp_path, shards)
    got = run_outputs(tmp_path / "out")
    assert_same_events(got, ref)
    assert_same_events(got, driver)
    joins = {r["id"].split("-")[0] for r in got if r["event"] == "join"}
    assert {"sj", "bj", "wj"} <= joins
    shards_dirs = sorted(p.name for p in (tmp_path / "ck" / "vigil" / "shards").iterdir())
    assert shards_dirs == [f"shard-{i:04d}" for i in range(shards)]
    if shards == 2:  # one shard per executor: every shard task finds its live engine (pinned.PinnedJobs)
        ms = sinks.read_metrics(tmp_path / "out")
        assert len(ms) >= 3 and sum(m["shard_restores"] for m in ms) == 0, [m["shard_restores"] for m in ms]


def test_worker_killed_mid_batch_outputs_unchanged(workload, tmp_path):
    """A shard task of batch 1 kills its own Python worker after applying its rows, before its
    commit (shard_task's VIGIL_FAULT_KILL_ONCE hook, once: a marker file); Spark runs the task again
    on a new worker, which restores the shard's engine from its durable log."""
    d, t, ops, ref, _ = workload
    marker = tmp_path / "killed"
    _sharded(d, tmp_path, 2, env={"VIGIL_FAULT_KILL_ONCE": str(marker)})
    assert marker.exists()  # the fault did happen
    assert_same_events(run_outputs(tmp_path / "out"), ref)
    assert sum(m["shard_restores"] for m in sinks.read_metrics(tmp_path / "out")) >= 1  # the retry restored


def test_sharded_on_two_executors_with_a_restart(tmp_path):
    n = 2400
    t = trades(n, n_symbols=10, seed=41)
    ops1 = trade_queries(n // 2, 60, n_symbols=10, seed=42, lookups=6,
                         families=("threshold", "window", "substream", "quantile"))
    ops2 = trade_queries(n, 30, n_symbols=10, seed=43, lookups=4, families=("threshold", "window"))
    ops2 = [o for o in ops2 if o.get("at", 0) >= n // 2 or o["op"] == "register"]
    for o in ops2:
        if o["op"] == "register":
            o["at"] = max(o["at"], n // 2)
            o["query"]["id"] += "-b"
        else:
            o["id"] += "-b"
    write_files(t.slice(0, n // 2), ops1, tmp_path / "s", tmp_path / "q", n_files=3)
    _sharded(tmp_path, tmp_path, 4, "--no-finish")
    write_files(t.slice(n // 2), ops2, tmp_path / "s", tmp_path / "q", n_files=3, first=3)
    _sharded(tmp_path, tmp_path, 4)
    ref = replay([(ops1, t.slice(0, n // 2)), (ops2, t.slice(n // 2))], columns=set(t.column_names),
                 algos={"threshold": "scan"})
    got = run_outputs(tmp_path / "out")
    assert_same_events(got, ref.to_pylist())
    assert {"matured", "answer"} <= {r["event"] for r in got}
    shards = sorted(p.name for p in (tmp_path / "ck" / "vigil" / "shards").iterdir())
    assert shards == [f"shard-{i:04d}" for i in range(4)]
