"""Groups are fed lazily: a group's rows reach its operator when an operation touches the group or
the batch ends, in one call per run of rows between its own operations, and the outputs come out
in the contract's order, as an eager feed (every group at every operation) would give them."""

import json

import numpy as np
import pyarrow as pa
import pytest

from vigil.bench.engine import EVENTS, floor_columns, split, workload
from vigil.bench.engine_floor import FLOORS
from vigil.engine import Engine
from vigil.events import output_rows


def _run(table, ops, batch=100_000):
    eng = Engine({}, 0.005, "pairs", columns=set(table.column_names))
    lines = [json.dumps(o) for o in ops]
    eng.add_operations(lines, list(range(1, len(lines) + 1)))
    parts = [eng.process(table.slice(s, batch)) for s in range(0, table.num_rows, batch)]
    parts.append(eng.finish())
    return output_rows(pa.concat_tables(parts))


class _Calls:
    def __init__(self, op):
        self.n = 0
        self.op = op
        push = op.push

        def counted(*a, **k):
            self.n += 1
            return push(*a, **k)
        op.push = counted


def test_a_group_is_fed_once_per_run_between_its_own_operations():
    """Window group A is looked up at 50 positions, group B never: B's operator gets one push
    for the whole batch, A one per lookup (plus the rest)."""
    n = 5_000
    table = pa.table({"x": np.arange(n, dtype=np.float64), "y": np.ones(n)})
    ops = [{"op": "register", "at": 0, "query": {"id": "a", "type": "window_aggregate", "agg": "sum",
                                                  "column": "x", "rows": [10, 0]}},
           {"op": "register", "at": 0, "query": {"id": "b", "type": "window_aggregate", "agg": "max",
                                                  "column": "y", "rows": [10, 0]}}]
    ops += [{"op": "lookup", "at": 100 * k, "id": "a"} for k in range(1, 51)]
    eng = Engine({}, 0.005, "pairs", columns={"x", "y"})
    eng.add_operations([json.dumps(o) for o in ops], list(range(len(ops))))
    eng.process(table.slice(0, 1))  # registers both at 0
    ga, gb = (eng.groups[eng.where[eng.by_id[q]]] for q in ("a", "b"))
    ca, cb = _Calls(ga.op), _Calls(gb.op)
    out = output_rows(eng.process(table.slice(1)))
    assert [r["value"] for r in out] == [float(sum(range(100 * k - 10, 100 * k))) for k in range(1, 51)]
    assert cb.n == 1
    assert 50 <= ca.n <= 51


@pytest.mark.timeout(600)
@pytest.mark.parametrize("batch", [100_000, 777])
def test_lazy_feed_gives_the_outputs_of_an_eager_feed_on_the_tour_workload(batch):
    """vigil gen's workload at a small scale (every family, registrations, terminations and lookups
    spread over the stream): the same output rows, in the same order, as each family run alone
    (whose groups see far fewer segments), and the counts the per-query floor computes."""
    table, ops = workload("tour", scale=0.25, seed=3)
    together = _run(table, ops, batch)
    alone = []
    cols = floor_columns(table)
    for fam, fam_ops in split(ops).items():
        got = _run(table, fam_ops, batch)
        assert sum(r["event"] in EVENTS[fam] for r in got) == FLOORS[fam](cols, fam_ops)[0], fam
        alone += got
    # the families' outputs interleave by position; per position the order is the contract's
    assert sorted(map(json.dumps, together)) == sorted(map(json.dumps, alone))
    ats = [r["at"] for r in together if r.get("at") is not None]
    assert ats == sorted(ats)
    assert together == _run(table, ops, 100_000)


def test_outputs_of_operations_follow_the_element_outputs_at_their_position():
    """A threshold query matures at element 3 (fed eagerly); a window lookup at 3 answers after
    it; a window group fed lazily still reports rejected rows in place."""
    table = pa.table({"x": [1.0, 1.0, 1.0, 1.0, float("nan"), 1.0]})
    ops = [{"op": "register", "at": 0, "query": {"id": "t", "type": "threshold", "where": {"x": [0, 2]},
                                                  "threshold": 3}},
           {"op": "register", "at": 0, "query": {"id": "w", "type": "window_aggregate", "agg": "sum",
                                                  "column": "x", "rows": [2, 0]}},
           {"op": "lookup", "at": 3, "id": "w"}, {"op": "lookup", "at": 6, "id": "w"}]
    out = _run(table, ops)
    assert [(r["event"], r.get("id"), r["at"]) for r in out] == [
        ("matured", "t", 3), ("answer", "w", 3), ("rejected", None, 5), ("answer", "w", 6)]
    assert out[1]["value"] == 2 and out[3]["value"] == 1


def test_snapshot_keeps_the_specs_of_alive_queries_only():
    """A terminated query's spec is not in the snapshot; its id still is (ids are unique per run)."""
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    ops = [{"op": "register", "at": 0, "query": {"id": "dead", "type": "window_aggregate", "agg": "sum",
                                                  "column": "x", "rows": [2, 0], "where": {"x": [0, 123456]}}},
           {"op": "register", "at": 0, "query": {"id": "alive", "type": "window_aggregate", "agg": "max",
                                                  "column": "x", "rows": [2, 0]}},
           {"op": "terminate", "at": 1, "id": "dead"}]
    eng = Engine({}, 0.005, "pairs", columns={"x"})
    eng.add_operations([json.dumps(o) for o in ops], [1, 2, 3])
    eng.process(table)
    blob = eng.snapshot()
    assert b"123456" not in blob and b"alive" in blob
    eng2 = Engine.restore(blob)
    eng2.add_operations([json.dumps({"op": "register", "at": 3, "query": ops[0]["query"]}),
                         json.dumps({"op": "lookup", "at": 3, "id": "alive"})], [4, 5])
    out = output_rows(eng2.finish())
    assert out[0]["event"] == "rejected" and "duplicate id" in out[0]["reason"]
    assert out[1] == {"event": "answer", "id": "alive", "at": 3, "value": 3}
