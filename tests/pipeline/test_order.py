"""Order through Spark (issue 9): stream files written in one burst — equal modification times on
purpose, or shuffled ones — with and without ``seq``, driver and sharded modes, one file per
micro-batch and several. With seq the outputs equal ``vigil replay`` on the stream in seq order
and no row is rejected; without seq the order is arrival order, files by (modification time,
path), recorded per batch; a row older than the reorder bound is reported late and counted.
(kill -9 with seq: test_recovery.py; the buffer's logic and memory: test_reorder.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_helpers import canon, replay, run_outputs

from vigil.pipeline import sinks
from vigil.pipeline.config import RunConfig
from vigil.pipeline.driver import run
from vigil.workloads.trades import trade_queries, trades

pytestmark = pytest.mark.slow

T0 = 1_700_000_000_000  # milliseconds (Spark compares modification times in ms)


def write_burst(t: pa.Table, d: Path, n_files: int, fmt: str, mtimes: list[int]) -> list[str]:
    """The stream cut into n_files files named part-00000.. in stream order, file i getting
    modification time mtimes[i] (ms): equal times model a burst within one millisecond."""
    d.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, t.num_rows, n_files + 1).astype(int)
    names = []
    for i in range(n_files):
        part = t.slice(bounds[i], bounds[i + 1] - bounds[i])
        p = d / f"part-{i:05d}.{'jsonl' if fmt == 'json' else 'parquet'}"
        if fmt == "json":
            p.write_text("".join(json.dumps(r) + "\n" for r in part.to_pylist()))
        else:
            pq.write_table(part, p)
        ns = int(mtimes[i]) * 1_000_000
        os.utime(p, ns=(ns, ns))
        names.append(p.name)
    return names


def write_ops(ops: list, d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "ops-00000.jsonl").write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in ops))
    os.utime(d / "ops-00000.jsonl", ns=((T0 - 1000) * 1_000_000,) * 2)


def cfg(tmp: Path, **kw) -> RunConfig:
    return RunConfig(stream=str(tmp / "s"), queries=str(tmp / "q"), out=str(tmp / "out"), checkpoint=str(tmp / "ck"),
                     quiet=True, algos={"threshold": "scan"}, **kw)


def with_seq(t: pa.Table) -> pa.Table:
    return t.append_column("seq", pa.array(np.arange(1, t.num_rows + 1), pa.int64()))


def applied_order(out: Path) -> list[str]:
    """Stream files in the order the run applied them (recorded in every batch's metrics)."""
    return [Path(f).name for m in sinks.read_metrics(out) for f in m.get("order", []) if "part-" in f]


@pytest.mark.parametrize("mode,fmt,times,per_batch", [
    ("driver", "parquet", "equal", 1),
    ("driver", "parquet", "shuffled", 3),
    ("sharded", "json", "shuffled", 1),
    ("sharded", "parquet", "equal", 4),
])
def test_seq_streams_equal_replay_whatever_the_file_times(spark, tmp_path, mode, fmt, times, per_batch):
    n, files = 2400, 8
    t = with_seq(trades(n, n_symbols=8, with_rel=False, seed=11))
    ops = trade_queries(n, 60, n_symbols=8, seed=12, families=("threshold", "window"))
    rng = np.random.default_rng(3)
    mtimes = [T0] * files if times == "equal" else [T0 + int(r) for r in rng.permutation(files)]
    write_burst(t, tmp_path / "s", files, fmt, mtimes)
    write_ops(ops, tmp_path / "q")
    s = run(cfg(tmp_path, mode=mode, shards=2, fmt=fmt, max_files_per_batch=per_batch), spark)
    got = run_outputs(tmp_path / "out")
    ref = replay([(ops, t)], columns=set(t.column_names), algos={"threshold": "scan"})
    assert canon(got) == canon(ref.to_pylist())
    assert s["rows_in"] == n and s["rows_rejected"] == 0 and s["rows_held"] == 0
    m = sinks.read_metrics(tmp_path / "out")
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    order = applied_order(tmp_path / "out")
    assert sorted(order) == sorted(f"part-{i:05d}.{'jsonl' if fmt == 'json' else 'parquet'}" for i in range(files))
    if times == "shuffled":  # Spark takes files by time, so did the run; rows were held across batches
        ext = "jsonl" if fmt == "json" else "parquet"
        assert order == [f"part-{i:05d}.{ext}" for i in sorted(range(files), key=lambda i: (mtimes[i], i))]
        assert per_batch > 1 or any(x["rows_held"] > 0 for x in m)


def test_without_seq_arrival_order_is_file_time_then_path(spark, tmp_path):
    """No seq: the stream's order is the arrival order — batches as Spark formed them (by
    modification time), files inside a batch by (modification time, path) — recorded per batch;
    shuffled and tied times, two files per batch: outputs equal replay on the files in that order."""
    n, files = 1800, 6
    t = trades(n, n_symbols=8, with_rel=False, seed=21)
    ops = trade_queries(n, 50, n_symbols=8, seed=22, families=("threshold", "window"))
    perm = [3, 0, 5, 1, 4, 2]  # file i gets time rank perm[i]; ties between 1 and 4 broken by path
    mtimes = [T0 + min(p, 2) for p in perm]
    write_burst(t, tmp_path / "s", files, "parquet", mtimes)
    write_ops(ops, tmp_path / "q")
    run(cfg(tmp_path, max_files_per_batch=2), spark)
    # Spark chose which of the tied files form which batch; inside a batch: (time, path)
    per_batch = [[int(Path(f).stem.split("-")[1]) for f in m.get("order", []) if "part-" in f]
                 for m in sinks.read_metrics(tmp_path / "out")]
    assert all(b == sorted(b, key=lambda i: (mtimes[i], i)) for b in per_batch), per_batch
    arrival = [i for b in per_batch for i in b]
    assert [mtimes[i] for i in arrival] == sorted(mtimes) and sorted(arrival) == list(range(files))
    bounds = np.linspace(0, n, files + 1).astype(int)
    arrived = pa.concat_tables([t.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in arrival])
    ref = replay([(ops, arrived)], columns=set(t.column_names), algos={"threshold": "scan"})
    assert canon(run_outputs(tmp_path / "out")) == canon(ref.to_pylist())


def test_late_rows_and_bad_numbers_through_spark(spark, tmp_path):
    """JSON lines with seq: the first file arrives last, after more rows than the bound came in
    -> its rows are late (rejected, counted); huge integers and text in numeric columns are
    rejected row by row; every batch balances; nothing crashes."""
    (tmp_path / "s").mkdir()
    big = 2**60
    rows = [{"seq": i + 1, "ts": i / 10, "k": f"k{i % 3}", "x": float(i % 11), "w": 1 + i % 2} for i in range(400)]
    rows[150]["w"] = big
    rows[160]["x"] = big + 1
    rows[170]["x"] = "abc"
    rows[180]["ts"] = 1e300
    for i in range(4):
        p = tmp_path / "s" / f"part-{i}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows[i * 100:(i + 1) * 100]))
        os.utime(p, ns=((T0 + (10 if i == 0 else i)) * 1_000_000,) * 2)  # part-0 is the newest
    ops = [{"op": "register", "at": 0, "query": {"id": "t", "type": "threshold", "where": {"x": [0, None]},
                                                 "weight": "w", "threshold": 10**6}},
           {"op": "register", "at": 0, "query": {"id": "w", "type": "window_aggregate", "agg": "sum", "column": "x",
                                                 "time": [5, 0], "time_column": "ts"}},
           *({"op": "lookup", "at": a, "id": "w"} for a in (250, 300, 400))]
    write_ops(ops, tmp_path / "q")
    s = run(cfg(tmp_path, fmt="json", max_files_per_batch=1, max_reorder_rows=150), spark)
    rej = sinks.read_rejected(tmp_path / "out").to_pylist()
    late = sorted(r["at"] for r in rej if r["reason"].startswith("late:"))
    assert late == list(range(1, 101))
    assert "passed position 400" in next(r["reason"] for r in rej if r["at"] == 1)
    other = {r["at"]: r["reason"] for r in rej if not r["reason"].startswith("late:") and r["id"] is None}
    assert set(other) == {151, 161, 171, 181}, other
    assert all("2^53" in other[a] for a in (151, 161, 181)) and "not a number" in other[171]
    assert s["rows_in"] == 400 and s["rows_late"] == 100 and s["rows_rejected"] == 104
    m = sinks.read_metrics(tmp_path / "out")
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    answers = [r for r in run_outputs(tmp_path / "out") if r["event"] == "answer"]
    assert len(answers) == 3 and all(r["value"] is not None for r in answers)
