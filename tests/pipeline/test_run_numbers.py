"""`vigil run`'s numbers add up and mean what they say (no Spark: the batch paths in-process).

* per batch, ``ops_waiting_before + ops_in == ops_applied + ops_rejected + ops_waiting``
  (an operation whose ``at`` the stream has not reached yet is waiting, not missing);
* a batch's ``latency_s`` is its processing time; the time it sat in the queue behind the engine
  is ``queue_s``, beside it;
* the summary lines give the wall time since the command started, with Spark's start-up and
  schema inference as their own terms.
"""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from vigil.pipeline import sinks
from vigil.pipeline.cli import done_lines, process_age
from vigil.pipeline.driver import DriverProcessor, RunConfig
from vigil.pipeline.processor import ops_line
from vigil.pipeline.sharded import ShardedProcessor

STREAM = pa.table({"price": [200.0 + i for i in range(1, 21)]})
LAST = {"id": "w1", "type": "window_aggregate", "agg": "sum", "column": "price", "rows": [1, 0]}


def _op(**kw) -> str:
    return json.dumps(kw)


BATCHES = [  # (operations, rows): batch 0 holds elements 1..8, batch 1 9..20
    ([_op(op="register", at=0, query=LAST),
      _op(op="lookup", at=5, id="w1"),        # applied inside batch 0
      _op(op="lookup", at=12, id="w1"),       # waits for batch 1
      _op(op="lookup", at=40, id="w1"),       # waits until finish (beyond the stream)
      _op(op="terminate", at=15, id="nobody"),  # waits, then rejected (unknown id) in batch 1
      "{not json"],                           # rejected at once
     STREAM.slice(0, 8)),
    ([_op(op="lookup", at=16, id="w1"), _op(op="lookup", at=3, id="w1")],  # the second is late
     STREAM.slice(8)),
]


def _check_adds_up(metrics: list[dict]) -> None:
    for m in metrics:
        assert m["ops_waiting_before"] + m["ops_in"] == m["ops_applied"] + m["ops_rejected"] + m["ops_waiting"], m
    for a, b in zip(metrics, metrics[1:], strict=False):
        assert b["ops_waiting_before"] == a["ops_waiting"]


EXPECTED = [  # (in, applied, rejected, waiting) of batch 0, batch 1, final
    (6, 2, 1, 3), (2, 3, 1, 1), (0, 1, 0, 0),
]


def test_driver_mode_operation_counts_add_up_per_batch(tmp_path):
    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), quiet=True)
    p = DriverProcessor(cfg, {"price"})
    for k, (ops, rows) in enumerate(BATCHES):
        p.process_batch(k, ops, rows, [], time.perf_counter(), 0.0)
    p.finish()
    ms = sinks.read_metrics(tmp_path / "out")
    _check_adds_up(ms)
    assert [(m["ops_in"], m["ops_applied"], m["ops_rejected"], m["ops_waiting"]) for m in ms] == EXPECTED
    line = ops_line(ms[1])
    assert "2[/] + 3 waiting = applied 3, 1 late + rej 1 + waiting 1" in line


@pytest.mark.timeout(600)
def test_sharded_mode_operation_counts_add_up_per_batch(tmp_path):
    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                    mode="sharded", shards=2, quiet=True)
    p = ShardedProcessor(cfg, {"price"}, None)
    for k, (ops, rows) in enumerate(BATCHES):
        p.run_batch(k, ops, rows)
    p.finish()
    ms = sinks.read_metrics(tmp_path / "out")
    _check_adds_up(ms)
    assert [(m["ops_in"], m["ops_waiting"]) for m in ms] == [(e[0], e[3]) for e in EXPECTED]
    # a restarted driver carries the waiting operations in its snapshot
    q = ShardedProcessor(cfg, {"price"}, None)
    q.run_batch(2, [_op(op="lookup", at=30, id="w1")], pa.table({"price": [1.0]}))
    m = sinks.read_metrics(tmp_path / "out")[-1]
    assert (m["ops_waiting_before"], m["ops_in"], m["ops_waiting"]) == (1, 1, 2)


def test_latency_is_processing_time_and_queue_time_is_beside_it(tmp_path):
    """A batch collected in 0.1 s that then waited 3 s for the engine: latency ~0.1 s + the
    engine's work, queue ~3 s (before, latency counted the wait: > 3 s)."""
    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), quiet=True)
    p = DriverProcessor(cfg, {"price"})
    p.process_batch(0, [_op(op="register", at=0, query=LAST)], STREAM.slice(0, 8), [], 0.0, 0.0)  # warm-up
    handed = time.perf_counter() - 3.0  # collected (0.1 s) and handed over 3 s ago
    p.process_batch(1, [], STREAM.slice(8), [], handed - 0.1, 0.1)
    m = sinks.read_metrics(tmp_path / "out")[-1]
    assert m["queue_s"] >= 3.0 and m["queue_s"] < 3.0 + 2.0
    assert 0.1 <= m["latency_s"] < 2.5
    assert m["elements_per_s"] == pytest.approx(12 / m["latency_s"])


def test_done_lines_account_for_the_wall_time_from_the_command_start():
    s = {"batches": 3, "rows_in": 30, "rows_rejected": 0, "rows_late": 0, "ops_in": 12, "ops_applied": 10,
         "ops_rejected": 1, "ops_waiting": 1, "outputs": 45, "seconds": 15.4, "elements_per_s": 30 / 15.4,
         "times": {"spark_start": 42.6, "schema": 20.0, "query_setup": 1.0, "stream": 15.0, "finish": 0.4},
         "processing_s": 9.0, "queue_s": 2.5, "master": "local[2]"}
    counts, timing = done_lines(s, wall=100.0, before=8.0, stop=1.0, out="out")
    assert "12 operations = 10 applied + 1 rejected + 1 waiting" in counts
    assert timing.startswith("[bold]time[/]: 100.0 s since the command started = start-up and imports 8.0 s")
    for part in ("Spark start (local[2]) 42.6 s", "schema inference 20.0 s", "streaming query 15.0 s",
                 "query set-up 1.0 s", "finish 0.4 s", "Spark stop 1.0 s", "other 12.0 s", "9.0 s processing, 2.5 s queued",
                 "0 elements/s over the whole command"):
        assert part in timing, part


def test_process_age_counts_from_the_process_start():
    age = process_age()
    assert 0.0 < age < 24 * 3600
    time.sleep(0.05)
    assert process_age() >= age + 0.04
