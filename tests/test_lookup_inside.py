"""Lookups answered inside a segment (vigil.oprun.deferrable / vigil.lookups.lookups_inside): the same events as
element-at-a-time processing, including a time-window group whose rows up to the lookup are all
rejected while a later row of the segment carries a later time (the window's "now" is the time of
the group's last row up to the lookup, not the segment's)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.checks import Log, run_log


def _log() -> Log:
    v = [None, None, 0.0, 2.0**53, 0.0, 0.0, 2.0**53, 0.0, 0.0, 2.0**53, 0.0, 0.0, 2.0**53, None, 0.0, None, 0.0,
         0.0, 2.0**53, 0.0, None, 2.0**53]
    k = [None, "a", "a", "a", "a", "a", "a", "a", "a", "a", "a", "a", "a", "a", "a", None, "a", None, None, None,
         "a", "a"]
    t = pa.table({"v": v, "ts": [0.0] * 21 + [2.0], "k": k})
    w = {"type": "window_aggregate", "agg": "sum", "column": "v", "time": [1, 0]}
    ops = [{"op": "register", "at": 0, "query": {**w, "id": f"q{i}"}} for i in (0, 2, 3, 4)]
    ops += [{"op": "register", "at": 0, "query": {**w, "group_by": "k", "id": "q7"}},
            {"op": "register", "at": 0, "query": {**w, "group_by": "k", "id": "q1"}},
            {"op": "terminate", "at": 11, "id": "q4"}, {"op": "terminate", "at": 18, "id": "q7"},
            {"op": "lookup", "at": 21, "id": "q0"}]
    return Log(t, ops)


def test_time_window_lookup_inside_a_segment_uses_the_time_up_to_it():
    one = run_log(_log(), batch=1)
    assert run_log(_log(), batch=10**6) == one
    (ans,) = [e for e in one if e["event"] == "answer"]
    assert ans["value"] is not None  # rows with ts 0 are in the window at 21, not the ts-2 row after it


def test_many_lookups_between_rows_equal_one_at_a_time():
    n = 400
    t = pa.table({"v": [float(i % 7) for i in range(n)], "ts": [float(i // 3) for i in range(n)]})
    ops = [{"op": "register", "at": 0, "query": {"type": "window_aggregate", "agg": "sum", "column": "v",
                                                 "rows": [r, 0], "id": f"r{r}"}} for r in (1, 5, 50)]
    ops += [{"op": "register", "at": 0, "query": {"type": "window_aggregate", "agg": "max", "column": "v",
                                                  "time": [4, 0], "id": "tmax"}}]
    ops += [{"op": "lookup", "at": at, "id": q} for at in range(0, n + 3, 7) for q in ("r1", "r5", "r50", "tmax")]
    ops += [{"op": "terminate", "at": 200, "id": "r5"}, {"op": "lookup", "at": 201, "id": "r5"}]
    ops.sort(key=lambda o: o["at"])
    ref = run_log(Log(t, ops), batch=1)
    for b in (10, 97, 10**6):
        assert run_log(Log(t, ops), batch=b) == ref
    assert sum(e["event"] == "answer" for e in ref) > 200
    assert any(e["event"] == "rejected" and e["id"] == "r5" for e in ref)  # looked up after its end


@st.composite
def _churn_with_lookups(draw):
    """Threshold queries (whose maturities split a segment into runs: a row bad for a threshold
    group is judged after the group is fed) beside window queries that are looked up and
    terminated between any two elements."""
    n = draw(st.integers(1, 50))
    t = pa.table({"x": draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)),
                  "w": draw(st.lists(st.sampled_from([1, 2, 5, 0]), min_size=n, max_size=n)),
                  "v": draw(st.lists(st.sampled_from([1.0, 2.5, None]), min_size=n, max_size=n))})
    ops = []
    for i in range(draw(st.integers(1, 10))):
        at = draw(st.integers(0, n))
        if draw(st.booleans()):
            lo = draw(st.integers(0, 6))
            q = {"id": f"q{i}", "type": "threshold", "where": {"x": [lo, lo + 3]}, "threshold": draw(st.integers(1, 9)),
                 "weight": "w"}
        else:
            q = {"id": f"q{i}", "type": "window_aggregate", "agg": "sum", "column": "v",
                 "rows": [draw(st.integers(1, 6)), 0]}
            for _ in range(draw(st.integers(0, 4))):
                ops.append({"op": "lookup", "at": draw(st.integers(at, n)), "id": f"q{i}"})
        ops.append({"op": "register", "at": at, "query": q})
        if draw(st.booleans()):
            ops.append({"op": "terminate", "at": draw(st.integers(at, n)), "id": f"q{i}"})
    ops.sort(key=lambda o: (o["at"], o["op"] != "register"))
    return Log(t, ops)


@settings(max_examples=300, deadline=None)
@given(_churn_with_lookups())
def test_lookups_terminations_and_maturities_inside_a_batch(log):
    assert run_log(log, batch=10**6) == run_log(log, batch=1)


@pytest.mark.parametrize("kind", ["rows", "time", "substream"])
def test_a_lookup_before_a_termination_across_a_run_split(kind):
    """A weight-0 row splits the segment into runs (judged after the threshold group is fed); the
    termination of qb applied where the runs meet fed the shared group past qa's waiting lookup:
    a time window answered at the wrong time, a substream filter refused the lookup. Lookups and
    terminations no longer wait in one segment."""
    n = 20
    t = pa.table({"x": [1] * n, "w": [1] * 11 + [0] + [1] * 8, "v": [float(i) for i in range(n)],
                  "ts": [float(i) for i in range(n)], "k": ["a", "b"] * 10})
    if kind == "substream":
        def q(i):
            return {"type": "substream_filter", "agg": "sum", "column": "v", "key": "k", "time": 2.0,
                    "time_column": "ts", "range": [1.0, None], "id": i}
    else:
        def q(i):
            return {"type": "window_aggregate", "agg": "sum", "column": "v", kind: [2, 0], "id": i,
                    **({"time_column": "ts"} if kind == "time" else {})}
    ops = [{"op": "register", "at": 0, "query": q("qa")}, {"op": "register", "at": 0, "query": q("qb")},
           {"op": "register", "at": 0, "query": {"id": "th", "type": "threshold", "where": {"x": [0, 5]},
                                                 "threshold": 10**6, "weight": "w"}},
           {"op": "lookup", "at": 5, "id": "qa"}, {"op": "terminate", "at": 10, "id": "qb"}]
    one = run_log(Log(t, ops), batch=1)
    assert run_log(Log(t, ops), batch=10**6) == one
    assert [e["value"] for e in one if e["event"] == "answer"] != [None]
