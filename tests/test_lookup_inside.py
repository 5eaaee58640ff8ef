"""Lookups answered inside a segment (vigil.oprun.deferrable / lookups_inside): the same events as
element-at-a-time processing, including a time-window group whose rows up to the lookup are all
rejected while a later row of the segment carries a later time (the window's "now" is the time of
the group's last row up to the lookup, not the segment's)."""

from __future__ import annotations

import pyarrow as pa

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
