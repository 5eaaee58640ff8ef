"""A late lookup (its ``at`` already passed when it arrives, as in `vigil run`) is answered with
the value at the position where it is evaluated: the answer's ``at`` is that position and
``asked_at`` the position it asked for (docs/contract.md, "Late operations"). The Spark driver
mode runs this engine and writes the same column (vigil.events.OUTPUT_SCHEMA)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vigil.engine import Engine
from vigil.events import OUTPUT_SCHEMA, conform_outputs, output_rows, read_outputs, write_outputs

N = 20
STREAM = pa.table({"price": [200.0 + i for i in range(1, N + 1)], "sym": ["A", "B"] * (N // 2),
                   "ts": [float(i) for i in range(1, N + 1)]})
LAST = {"id": "w1", "type": "window_aggregate", "agg": "sum", "column": "price", "rows": [1, 0]}  # x_n
QUERIES = {
    "windows": (LAST, lambda n: 200.0 + n),
    "quantiles": ({"id": "w1", "type": "quantile", "column": "price", "phi": 1.0, "epsilon": 0.001},
                  lambda n: 200.0 + n),  # the maximum
    "substream": ({"id": "w1", "type": "substream_filter", "key": "sym", "agg": "count", "time": 2.5,
                   "range": [0, None]}, lambda n: ["A", "B"]),
}


def _register(eng: Engine, q: dict) -> None:
    eng.add_operations([json.dumps({"op": "register", "at": 0, "query": q})])


def _answers(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["event"] == "answer"]


@pytest.mark.parametrize("family", sorted(QUERIES))
def test_late_lookup_answer_is_labelled_with_the_position_its_value_holds_for(family):
    q, value_at = QUERIES[family]
    eng = Engine(columns=set(STREAM.column_names))
    _register(eng, q)
    eng.process(STREAM.slice(0, 15))
    eng.add_operations([json.dumps({"op": "lookup", "at": 10, "id": "w1"})])
    rows = output_rows(eng.take_outputs())
    late = [r for r in rows if r["event"] == "late"]
    assert late and late[0]["at"] == 10 and "applied after element 15" in late[0]["reason"]
    (ans,) = _answers(rows)
    # the case: {"at": 10, "value": 215} -- the value after element 15 labelled 10
    assert ans["at"] == 15 and ans["asked_at"] == 10, ans
    assert ans["value"] == value_at(15)
    # the same value as a lookup at 15 that arrives in time, which carries no asked_at
    ref = Engine(columns=set(STREAM.column_names))
    _register(ref, q)
    ref.add_operations([json.dumps({"op": "lookup", "at": 15, "id": "w1"})])
    (in_time,) = _answers(output_rows(ref.process(STREAM.slice(0, 15))))
    assert in_time == {"event": "answer", "id": "w1", "at": 15, "value": value_at(15)}


def test_in_time_and_future_lookups_have_no_asked_at_and_keep_their_position():
    eng = Engine(columns=set(STREAM.column_names))
    _register(eng, LAST)
    eng.add_operations([json.dumps({"op": "lookup", "at": a, "id": "w1"}) for a in (0, 10, 10, 25)])
    t = pa.concat_tables([eng.process(STREAM.slice(0, 12)), eng.process(STREAM.slice(12)), eng.finish()])
    assert t.column("asked_at").null_count == t.num_rows
    got = [(r["at"], r["value"]) for r in _answers(output_rows(t))]
    # at 25, beyond the last element (20): applied after it, evaluated at 25 (the rows window
    # [25, 25] holds no element): not late, the answer keeps its position
    assert got == [(0, None), (10, 210), (10, 210), (25, None)]
    assert all("asked_at" not in r for r in output_rows(t))


def test_late_lookups_in_one_call_and_a_late_lookup_of_an_unknown_id():
    eng = Engine(columns=set(STREAM.column_names))
    _register(eng, LAST)
    eng.process(STREAM.slice(0, 15))
    eng.add_operations([json.dumps({"op": "lookup", "at": a, "id": i}) for a, i in
                        ((3, "w1"), (14, "w1"), (15, "w1"), (4, "nobody"))])
    rows = output_rows(eng.take_outputs())
    assert [(r["at"], r.get("asked_at")) for r in _answers(rows)] == [(15, 3), (15, 14), (15, None)]
    assert all(r["value"] == 215 for r in _answers(rows))
    rej = [r for r in rows if r["event"] == "rejected"]
    assert len(rej) == 1 and rej[0]["at"] == 4 and "asked_at" not in rej[0]  # a rejection keeps its at


def test_asked_at_survives_jsonl_parquet_and_snapshots(tmp_path):
    eng = Engine(columns=set(STREAM.column_names))
    _register(eng, LAST)
    eng.process(STREAM.slice(0, 15))
    eng = Engine.restore(eng.snapshot())
    eng.add_operations([json.dumps({"op": "lookup", "at": 10, "id": "w1"})])
    t = pa.concat_tables([eng.take_outputs(), eng.process(STREAM.slice(15)), eng.finish()])
    assert t.schema == OUTPUT_SCHEMA
    for name in ("o.jsonl", "o.parquet"):
        write_outputs(t, tmp_path / name)
        (ans,) = _answers(read_outputs(tmp_path / name))
        assert ans == {"event": "answer", "id": "w1", "at": 15, "value": 215, "asked_at": 10}
    assert pq.read_schema(tmp_path / "o.parquet").field("asked_at").type == pa.int64()


def test_outputs_written_before_asked_at_existed_still_read():
    old = pa.schema([f for f in OUTPUT_SCHEMA if f.name != "asked_at"])
    t = pa.Table.from_pylist([{"event": "answer", "id": "w", "at": 3, "value": 1.0}], schema=old)
    got = conform_outputs(t)
    assert got.schema == OUTPUT_SCHEMA and got.column("asked_at").to_pylist() == [None]
    assert output_rows(t) == [{"event": "answer", "id": "w", "at": 3, "value": 1}]


@pytest.mark.timeout(600)
def test_sharded_mode_answers_late_lookups_with_asked_at_too(tmp_path):
    """Sharded mode (run in-process, no Spark: the code Spark runs on executors): a late lookup of
    a window query (answered by its shard), a substream filter (keys merged over the shards) and a
    quantile query (answered by its column's home shard) carries at = the position and asked_at, as one engine does."""
    from vigil.pipeline import sinks
    from vigil.pipeline.driver import RunConfig
    from vigil.pipeline.sharded import ShardedProcessor

    regs = [json.dumps({"op": "register", "at": 0, "query": {**q, "id": f}}) for f, (q, _) in QUERIES.items()]
    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                    mode="sharded", shards=2, quiet=True)
    p = ShardedProcessor(cfg, set(STREAM.column_names), None)
    p.run_batch(0, regs, STREAM.slice(0, 15))
    p.run_batch(1, [json.dumps({"op": "lookup", "at": 10, "id": f}) for f in QUERIES], STREAM.slice(15))
    p.finish()
    got = sinks.read_events(tmp_path / "out").to_pylist()
    answers = {r["id"]: r for r in got if r["event"] == "answer"}
    assert {f: (r["at"], r["asked_at"]) for f, r in answers.items()} == {f: (15, 10) for f in QUERIES}
    assert answers["windows"]["value"] == 215 and answers["quantiles"]["value"] == 215
    assert answers["substream"]["keys"] == ["A", "B"]


@pytest.mark.timeout(600)
def test_driver_mode_writes_asked_at_to_its_parquet_events(tmp_path):
    """Driver mode's batch path (DriverProcessor.process_batch, in-process: what foreachBatch
    runs) writes the late answer with at and asked_at into events/batch=K/*.parquet."""
    from vigil.pipeline import sinks
    from vigil.pipeline.driver import DriverProcessor, RunConfig

    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), quiet=True)
    p = DriverProcessor(cfg, set(STREAM.column_names))
    p.process_batch(0, [json.dumps({"op": "register", "at": 0, "query": LAST})], STREAM.slice(0, 15), [], 0.0, 0.0)
    p.process_batch(1, [json.dumps({"op": "lookup", "at": 10, "id": "w1"})], STREAM.slice(15), [], 0.0, 0.0)
    p.finish()
    (part,) = (tmp_path / "out" / "events" / "batch=1").glob("*.parquet")
    assert pq.read_schema(part).field("asked_at").type == pa.int64()
    ans = [r for r in sinks.read_events(tmp_path / "out").to_pylist() if r["event"] == "answer"]
    assert [(r["at"], r["asked_at"], r["value"]) for r in ans] == [(15, 10, 215.0)]
