"""vigil.warm: a first run's compilation split over processes, stamped, skipped when warm."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from vigil import jit, warm

OPS = [
    {"op": "register", "at": 0, "query": {"id": "t", "type": "threshold", "where": {"price": [1, 5]},
                                          "threshold": 3}},
    {"op": "register", "at": 5, "query": {"id": "w", "type": "window_aggregate", "agg": "sum",
                                          "column": "price", "rows": [3, 0]}},
    {"op": "register", "at": 2, "query": {"id": "q", "type": "quantile", "column": "price", "phi": 0.5,
                                          "epsilon": 0.1}},
    {"op": "lookup", "at": 9, "id": "w"},
]


def test_shares_balance_query_types_and_accept_json_lines():
    parts = warm.shares([json.dumps(o) for o in OPS] + ["{not json"], 2)
    types = [sorted({o["query"]["type"] for o in p}) for p in parts]
    assert types == [["quantile"], ["threshold", "window_aggregate"]]  # quantiles weigh most
    assert sorted(o["query"]["id"] for o in warm.shares(OPS, 1)[0]) == ["q", "t", "w"]
    assert warm.shares([{"op": "lookup", "at": 1, "id": "x"}], 2) == []


def test_sample_ops_register_early_and_look_up_each_query():
    ops = warm._sample_ops([OPS[1]], 100)
    assert ops[0]["at"] == 5 and [o["at"] for o in ops[1:]] == [50, 100]
    assert warm._sample_ops([{**OPS[1], "at": 90}], 100)[0]["at"] == 25


@pytest.mark.timeout(600)
def test_precompile_runs_once_per_workload_shape(tmp_path, monkeypatch):
    monkeypatch.setattr(jit, "cache_dir", lambda: tmp_path)  # fresh stamps; the kernels stay in numba's cache
    table = pa.table({"price": [float(i % 7) for i in range(50)]})
    assert warm.precompile(table, OPS, workers=2, rows=40) is True
    group, sources = warm._key(warm.shares(OPS, 2), {})
    assert jit.is_warm(group, sources)
    assert warm.precompile(table, OPS, workers=2, rows=40) is False  # stamped: nothing to do
    assert warm.precompile(table, OPS, workers=2, rows=40, algos={"threshold": "scan"}) is True  # other shape
    assert warm.precompile(table.slice(0, 0), OPS) is False  # no rows: nothing to sample


def test_start_and_wait():
    warm.start(pa.table({"x": [1.0]}), [])
    warm.wait(60)
    assert warm._done.is_set()
