"""Sharded mode on a real multi-process cluster: ``--master local-cluster[2,1,1024]`` (two executor
JVMs, each with its own Python workers), through ``vigil run`` in a subprocess (a test process
holds one SparkContext). Two runs on one checkpoint: the second starts with no live shard engine
anywhere (new executors), so every shard is restored from its durable log (vigil.pipeline.
shard_store); outputs equal ``vigil replay``'s. Slow: make test-all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import assert_same_events, replay, run_outputs

from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def _run(tmp, *extra: str) -> None:
    cmd = [str(Path(sys.executable).parent / "vigil"), "run", "--stream", str(tmp / "s"), "--queries", str(tmp / "q"),
           "--out", str(tmp / "out"), "--checkpoint", str(tmp / "ck"), "--mode", "sharded", "--shards", "4",
           "--master", "local-cluster[2,1,1024]", "--max-files-per-batch", "1", "--algo", "threshold=scan",
           "--quiet", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]


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
    _run(tmp_path, "--no-finish")
    write_files(t.slice(n // 2), ops2, tmp_path / "s", tmp_path / "q", n_files=3, first=3)
    _run(tmp_path)
    ref = replay([(ops1, t.slice(0, n // 2)), (ops2, t.slice(n // 2))], columns=set(t.column_names),
                 algos={"threshold": "scan"})
    got = run_outputs(tmp_path / "out")
    assert_same_events(got, ref.to_pylist(), t, ops1 + ops2)
    assert {"matured", "answer"} <= {r["event"] for r in got}
    shards = sorted(p.name for p in (tmp_path / "ck" / "vigil" / "shards").iterdir())
    assert shards == [f"shard-{i:04d}" for i in range(4)]
