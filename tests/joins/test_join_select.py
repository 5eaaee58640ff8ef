"""Joins that say what joined (issue 26 item 4): a join query's ``select`` carries the selected
columns of r and s in each ``join`` event (docs/contract.md), read from the rows the join group
stores; queries without select keep their events unchanged."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, run_log
from vigil.engine import Engine
from vigil.events import output_rows, write_outputs


def _stream(n, seed):
    rng = np.random.default_rng(seed)
    rel = np.where(rng.random(n) < 0.5, "R", "S")
    price = np.round(rng.uniform(0, 20, n), 2)
    price[rng.random(n) < 0.05] = np.nan  # a null selected value stays null
    return pa.table({"rel": rel, "k": rng.integers(0, 4, n).astype(str), "ts": np.cumsum(rng.integers(0, 3, n)) * 1.0,
                     "price": price, "sym": np.array([f"s{i}" for i in range(n)]), "A": rng.integers(0, 21, n) * 1.0})


def _queries():
    base = {"left": "R", "right": "S", "left_on": "k", "right_on": "k"}
    return [
        {"op": "register", "at": 0, "query": {**base, "id": "plain", "type": "window_join", "window": 4.0}},
        {"op": "register", "at": 0, "query": {**base, "id": "w", "type": "window_join", "window": 4.0,
                                                "select": {"left": ["sym", "price"], "right": ["price"]}}},
        {"op": "register", "at": 0, "query": {**base, "id": "iv", "type": "window_join", "window": [-2, 5],
                                                "left_range": {"A": [3, 15]}, "select": {"right": ["sym"]}}},
        {"op": "register", "at": 90, "query": {**base, "id": "late", "type": "select_join",
                                                 "select": {"left": ["A", "sym"]}}},  # columns new to the store
        {"op": "register", "at": 50, "query": {"id": "b", "type": "band_join", "left": "R", "right": "S",
                                                 "left_on": "A", "right_on": "A", "band": [-1, 1],
                                                 "select": {"left": ["sym"], "right": ["sym", "price"]}}},
        {"op": "terminate", "at": 150, "id": "w"},
    ]


def _value(t, col, seq):
    v = t.column(col)[seq - 1].as_py()
    return None if isinstance(v, float) and v != v else v


@pytest.mark.timeout(600)
@pytest.mark.parametrize("algo", ["oracle", "ssi", "join_first", "dynamic"])
def test_selected_values_are_the_rows_values(algo):
    t = _stream(240, 3)
    ops = _queries()
    sel = {op["query"]["id"]: op["query"].get("select") for op in ops if op["op"] == "register"}
    base = None
    for batch, cut in ((1, None), (7, 100), (240, 120)):
        out = run_log(Log(t, ops), {"joins": algo}, batch=batch, cut=cut)
        joins = [r for r in out if r["event"] == "join"]
        refused = {r["id"] for r in out if r["event"] == "rejected"}  # join_first: no band joins
        assert {r["id"] for r in joins} == set(sel) - refused
        for r in joins:
            s = sel[r["id"]] or {}
            for side, seq in (("left", r["r"]), ("right", r["s"])):
                if side in s:
                    assert r[side] == {c: _value(t, c, seq) for c in s[side]}, (r, side)
                else:
                    assert side not in r
        base = base or out
        assert out == base, (algo, batch)


def test_queries_without_select_are_unchanged():
    t = _stream(200, 4)
    ops = _queries()
    plain_only = [op for op in ops if op.get("query", {}).get("id", op.get("id")) == "plain"]
    a = [r for r in run_log(Log(t, ops), {"joins": "ssi"}, batch=50) if r["id"] == "plain"]
    b = run_log(Log(t, plain_only), {"joins": "ssi"}, batch=50)
    assert a == b and len(a) > 10
    assert all(set(r) == {"event", "id", "at", "r", "s"} for r in a)


def test_parquet_holds_json_text(tmp_path):
    t = _stream(120, 5)
    eng = Engine({"joins": "dynamic"}, columns=set(t.column_names))
    eng.add_operations(_queries())
    out = pa.concat_tables([eng.process(t), eng.finish()])
    write_outputs(out, tmp_path / "o.parquet")
    import pyarrow.parquet as pq

    back = pq.read_table(tmp_path / "o.parquet")
    assert {"left", "right"} <= set(back.column_names)
    rows = back.to_pylist()
    w = [r for r in rows if r["id"] == "w"]
    assert w and all(json.loads(r["left"]).keys() == {"sym", "price"} for r in w)
    assert all(r["left"] is None and r["right"] is None for r in rows if r["id"] == "plain")
    assert output_rows(back) == output_rows(out)


def test_memory_follows_max_window():
    n = 6000
    t = pa.table({"rel": ["R", "S"] * (n // 2), "k": ["1"] * n, "ts": np.arange(n, dtype=np.float64),
                  "sym": [f"s{i}" for i in range(n)]})
    q = {"id": "w", "type": "window_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k",
         "window": 3.0, "max_window": 10.0, "select": {"left": ["sym"], "right": ["sym"]}}
    eng = Engine({"joins": "ssi"}, columns=set(t.column_names))
    eng.add_operations([{"op": "register", "at": 0, "query": q}])
    for a in range(0, n, 500):
        eng.process(t.slice(a, 500))
    g = next(g for g in eng.groups.values() if g.family == "joins") if isinstance(eng.groups, dict) else None
    if g is None:
        pytest.skip("engine groups not reachable")
    kept = sum(len(s) for side in ("left", "right") for s in g.sel.seqs[side])
    assert kept < 3000, kept
