"""Driver mode end to end: same events as the in-process engine, order rules across batches,
malformed input landing in out/rejected/ with reasons, Kafka's missing-connector message."""

import json
import shutil

import pyarrow as pa
import pytest
from pipeline_helpers import canon, replay, run_outputs

from vigil.pipeline import sinks
from vigil.pipeline.driver import RunConfig, run
from vigil.pipeline.sources import SourceError
from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = pytest.mark.slow


def cfg(tmp, **kw):
    return RunConfig(stream=str(tmp / "s"), queries=str(tmp / "q"), out=str(tmp / "out"),
                     checkpoint=str(tmp / "ck"), quiet=True, **kw)


def test_driver_mode_equals_replay_and_late_ops(spark, tmp_path):
    n = 3000
    t = trades(n, n_symbols=8, with_rel=False)
    ops = trade_queries(n, 60, n_symbols=8, families=("threshold",), seed=3)
    # first run: 3 of 5 files, all operations known so far
    write_files(t.slice(0, 1800), ops, tmp_path / "s", tmp_path / "q", n_files=3)
    c = cfg(tmp_path, max_files_per_batch=2)
    s1 = run(c, spark)
    assert s1["batches"] == 2 and s1["rows_in"] == 1800
    # second run: two more files and a late operation (at 100 < position 1800) plus future ones
    late = [{"op": "register", "at": 100, "query": {"id": "late-1", "type": "threshold",
                                                   "where": {"price": [0, 1e9]}, "threshold": 5}},
            {"op": "register", "at": 2500, "query": {"id": "fut-1", "type": "threshold",
                                                    "where": {"price": [0, 1e9]}, "threshold": 3}},
            {"op": "register", "at": 10**9, "query": {"id": "end-1", "type": "nope"}}]
    write_files(t.slice(1800), late, tmp_path / "s", tmp_path / "q", n_files=2, first=3)
    s2 = run(c, spark)
    assert s2["rows_in"] == 1200
    ref = replay([(ops, t.slice(0, 1800)), (late, t.slice(1800))], columns=set(t.column_names))
    got = run_outputs(tmp_path / "out")
    assert canon(got) == canon(ref.to_pylist())
    kinds = {r["event"] for r in got}
    assert {"matured", "late", "rejected"} <= kinds
    late_ev = [r for r in got if r["event"] == "late"]
    assert late_ev[0]["id"] == "late-1" and late_ev[0]["at"] == 100
    fut = [r for r in got if r["id"] == "fut-1" and r["event"] == "matured"]
    assert fut and fut[0]["at"] == 2503  # counts elements 2501..2503 only
    m = sinks.read_metrics(tmp_path / "out")
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    assert m[-1]["final"] and sum(x["rows_in"] for x in m) == n
    for x in m[:-1]:  # I/O per batch: the collected rows, the snapshot + query log + manifest written
        assert x["driver_bytes_in"] > 0 and x["driver_bytes_out"] == 0
        assert x["state_bytes_written"] > x["snapshot_bytes"] > 0


def test_malformed_rows_and_operations_are_rejected_with_reasons(spark, tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "q").mkdir()
    good = [{"ts": float(i), "symbol": "A", "price": 100.0 + i, "shares": 10} for i in range(20)]
    lines = [json.dumps(r) for r in good[:5]]
    lines.append('{"ts": 5.0, "symbol": "A", "price": 10')  # truncated JSON
    lines.append(json.dumps({"ts": 6.0, "symbol": "A", "price": "abc", "shares": 10}))  # wrong type
    lines.append('{"ts": 7.0, "symbol": "A", "price": NaN, "shares": 10}')  # NaN
    lines.append(json.dumps({"ts": 8.0, "symbol": "A", "shares": 10}))  # missing column
    lines += [json.dumps(r) for r in good[9:]]
    (tmp_path / "s" / "part-0.jsonl").write_text("\n".join(lines) + "\n")
    ops = [
        {"op": "register", "at": 0, "query": {"id": "t", "type": "threshold", "where": {"price": [0, 1000]},
                                              "weight": "shares", "threshold": 100}},
        {"op": "register", "at": 0, "query": {"id": "u", "type": "what", "x": 1}},
        {"op": "terminate", "at": 3, "id": "nobody"},
    ]
    (tmp_path / "q" / "ops-0.jsonl").write_text("\n".join(json.dumps(o) for o in ops) + "\n{not json\n")
    s = run(cfg(tmp_path, fmt="json"), spark)
    rej = sinks.read_rejected(tmp_path / "out").to_pylist()
    rows_rej = {r["at"]: r["reason"] for r in rej if r["id"] is None and "operation" not in (r["reason"] or "")}
    assert set(rows_rej) == {6, 7, 8, 9}, rej
    assert "malformed JSON" in rows_rej[6]
    assert "wrong type" in rows_rej[7] or "not a number" in rows_rej[7]
    assert "NaN" in rows_rej[8] and "missing" in rows_rej[9] or "null" in rows_rej[9]
    reasons = " | ".join(r["reason"] for r in rej)
    assert "unknown query type" in reasons and "unknown query id" in reasons and "malformed JSON operation" in reasons
    assert s["rows_in"] == len(lines) == s["rows_rejected"] + 16
    assert s["ops_in"] == 4 and s["ops_rejected"] == 3
    ev = sinks.read_events(tmp_path / "out").to_pylist()
    assert [(r["event"], r["id"]) for r in ev] == [("matured", "t")]


def test_kafka_without_connector_says_what_to_add(spark, tmp_path):
    c = RunConfig(stream=None, queries=str(tmp_path / "q"), out=str(tmp_path / "out"),
                  checkpoint=str(tmp_path / "ck"), fmt="kafka", quiet=True,
                  options={"kafka.bootstrap.servers": "localhost:9092", "subscribe": "trades"})
    with pytest.raises(SourceError) as e:
        run(c, spark)
    msg = str(e.value)
    assert "spark-sql-kafka-0-10_2.13" in msg and "--packages" in msg


def test_bad_settings_on_an_existing_checkpoint_are_refused(spark, tmp_path):
    t = trades(200, with_rel=False)
    write_files(t, [], tmp_path / "s", tmp_path / "q", n_files=1)
    run(cfg(tmp_path), spark)
    with pytest.raises(Exception, match="other settings"):
        run(cfg(tmp_path, algos={"threshold": "oracle"}), spark)
    assert pa is not None


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_batches_spark_committed_before_the_engine_absorbed_them_are_replayed(spark, tmp_path, fmt):
    # the engine runs a batch behind Spark: a crash may leave Spark's commit of batch K without
    # the engine's snapshot K; the restart reads K's files again from its manifest
    n = 2400
    t = trades(n, n_symbols=8, with_rel=False)
    ops = trade_queries(n, 60, n_symbols=8, families=("threshold", "windows", "quantiles"), seed=4)
    write_files(t, ops, tmp_path / "s", tmp_path / "q", n_files=4, fmt=fmt)
    c = cfg(tmp_path, max_files_per_batch=1, fmt=fmt)
    run(c, spark)
    ref = canon(run_outputs(tmp_path / "out"))
    ck = tmp_path / "ck" / "vigil"
    snaps = sorted(ck.glob("snapshot-*.bin"))
    assert [p.name for p in sorted((ck / "manifests").glob("*.json"))] == ["batch-000000000003.json"]
    snaps[-1].unlink()  # the crash: batch 3 committed by Spark, its snapshot never written
    for d in (tmp_path / "out" / "events").glob("batch=*"):
        if d.name in ("batch=3", "batch=4"):
            shutil.rmtree(d)
    s = run(c, spark)  # Spark has nothing new: finish() replays batch 3 from its manifest
    assert s["batches"] == 1 and s["rows_in"] == n // 4
    assert canon(run_outputs(tmp_path / "out")) == ref
    assert ref == canon(replay([(ops, t)], columns=set(t.column_names)).to_pylist())
