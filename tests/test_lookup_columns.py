"""Runs of lookups answered as columns (vigil.lookups.lookups_inside -> walk -> lookup_cols /
push_lookup -> emit_columns): window aggregates (rows and time windows, SUM and MAX), substream
filters (key lists) and per-key windows (answered as tuples) looked up interleaved at many
positions of one segment give the events of element-at-a-time processing, and the substream
operators' flat lookups equal their per-query lookups."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.checks import Log, run_log
from vigil.windows.ci import CI
from vigil.windows.group import ranked_lists
from vigil.windows.substream_naive import SubstreamNaive


def _log(n: int, seed: int, with_keyed: bool) -> Log:
    rng = np.random.default_rng(seed)
    v = rng.integers(-3, 9, n).astype(float)
    v[rng.random(n) < 0.1] = np.nan  # rows some groups reject
    t = pa.table({"v": v, "ts": np.arange(n) / 3.0, "k": rng.choice(["a", "b", "c", "d\"", "é"], n)})
    w = {"type": "window_aggregate", "column": "v"}
    specs = [{**w, "agg": "sum", "rows": [5, 0], "id": "s5"}, {**w, "agg": "sum", "rows": [40, 2], "id": "s40"},
             {**w, "agg": "max", "rows": [7, 0], "id": "m7"}, {**w, "agg": "avg", "time": [2, 0], "id": "ta"},
             {"type": "substream_filter", "agg": "count", "key": "k", "time": 3.0, "range": [2.0, None], "id": "f2"},
             {"type": "substream_filter", "agg": "count", "key": "k", "time": 9.0, "range": [0.0, 3.0], "id": "f9"}]
    if with_keyed:
        specs.append({**w, "agg": "sum", "rows": [6, 0], "group_by": "k", "id": "g6"})
    ops = [{"op": "register", "at": 0, "query": d} for d in specs]
    ids = [d["id"] for d in specs] + ["nope"]
    for at in sorted(rng.integers(0, n + 1, 3 * n // 4).tolist()):
        ops += [{"op": "lookup", "at": at, "id": q} for q in rng.choice(ids, int(rng.integers(1, 5))).tolist()]
    ops.append({"op": "terminate", "at": n // 2, "id": "s40"})
    ops.sort(key=lambda o: o["at"])
    return Log(t, ops)


@settings(max_examples=12, deadline=None)
@given(st.integers(5, 120), st.integers(0, 2**32 - 1), st.booleans())
def test_runs_of_lookups_as_columns_equal_one_at_a_time(n, seed, with_keyed):
    ref = run_log(_log(n, seed, with_keyed), batch=1)
    for b in (7, 10**6):
        assert run_log(_log(n, seed, with_keyed), batch=b) == ref
    assert any(e["event"] == "answer" and e["id"] == "f2" and isinstance(e["value"], list) for e in ref) or n < 40


def test_flat_lookups_equal_per_query_lookups():
    rng = np.random.default_rng(3)
    n = 3000
    keys = rng.integers(0, 40, n)
    times = np.arange(n, dtype=float)
    for cls in (CI, SubstreamNaive):
        op = cls("count")
        from vigil.specs import SubstreamFilterSpec

        for q in range(6):
            op.register(q, SubstreamFilterSpec(type="substream_filter", id=f"q{q}", agg="count", key="k",
                                               time=float(50 * (q + 1)), range=[float(q), None]), 0)
        op.push(np.ones(n), times, keys, np.arange(1, n + 1, dtype=np.int64))
        qids = np.array([3, 0, 5, 5, 1], np.int64)
        codes, offs = op.lookup_flat(qids, n, float(times[-1]))
        per = op.lookup(qids, n, float(times[-1]))
        assert [codes[offs[i]:offs[i + 1]].tolist() for i in range(len(qids))] == [c.tolist() for c in per]


def test_ranked_lists_sorted_by_text():
    texts = ["b", "a", "c", "aa"]
    order = sorted(range(4), key=texts.__getitem__)
    rank = np.empty(4, np.int64)
    rank[order] = np.arange(4)
    codes = np.array([2, 0, 1, 3, 0, 2], np.int64)
    offs = np.array([0, 4, 4, 6], np.int64)
    got = ranked_lists(rank, pa.array([texts[i] for i in order]), codes, offs).to_pylist()
    assert got == [["a", "aa", "b", "c"], [], ["b", "c"]]
