"""Per-key quantile lookups at many positions inside a segment go through the group's one-call path
(``KeyedQuantileGroup.push_lookup``, :mod:`vigil.quantiles.keyed_walk`) and give the events of one
lookup at a time: the same log run in one batch (lookups waiting inside the segment) and one row
per batch (each lookup on its own) writes the same outputs."""

import json

import numpy as np
import pyarrow as pa
import pytest

from vigil.engine import Engine
from vigil.quantiles import keyed_walk


def _log(seed: int, n: int):
    rng = np.random.default_rng(seed)
    syms = np.array(["AAPL", "MSFT", "NVDA", "PEP", "ZZ"])
    # keys appear over time (ZZ only after row n // 2), a few null keys, values with ties and NaN
    sym = rng.choice(syms[:4], n).astype(object)
    late = np.arange(n) >= n // 2
    sym[late & (rng.random(n) < 0.2)] = "ZZ"
    sym[rng.random(n) < 0.02] = None
    price = np.round(rng.normal(100, 10, n), 0)
    price[rng.random(n) < 0.01] = np.nan
    table = pa.table({"symbol": pa.array(sym.tolist(), pa.string()), "price": pa.array(price)})
    qs = [
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 40, "phi": 0.5, "group_by": "symbol", "id": "g1"},
        {"type": "quantile", "column": "price", "epsilon": 0.02, "rows": 25, "phi": 0.9, "group_by": "symbol", "id": "g2"},
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 40, "phi": 0.25, "group_by": "symbol",
         "notify": True, "id": "g3"},
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 30, "phi": 0.9, "where": {"symbol": "AAPL"},
         "above": 110.0, "rearm": 105.0, "id": "w1"},
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 30, "rank_of": 100.0,
         "where": {"symbol": "PEP"}, "id": "r1"},
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 30, "rank_of": 95.0, "group_by": "symbol",
         "id": "r2"},
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 50, "phi": 0.5,
         "where": {"symbol": "MSFT", "price": [90, 115]}, "id": "w2"},
        {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": 20, "phi": 0.5, "where": {"symbol": "ZZ"},
         "id": "w3"},
    ]
    ops = [{"op": "register", "at": int(rng.integers(0, 5)), "query": q} for q in qs]
    at = sorted(set(rng.integers(1, n + 3, 60).tolist()))
    for a in at:  # several queries looked up at many positions (also past the last row)
        for q in rng.choice([q["id"] for q in qs], int(rng.integers(1, 4)), replace=False).tolist():
            ops.append({"op": "lookup", "at": int(a), "id": q})
    ops.sort(key=lambda o: o["at"])
    return table, ops


def _run(table, ops, batch):
    eng = Engine({}, 0.005, "pairs", columns=set(table.column_names))
    lines = [json.dumps(o) for o in ops]
    eng.add_operations(lines, list(range(1, len(lines) + 1)))
    parts = [eng.process(table.slice(s, batch)) for s in range(0, table.num_rows, batch)]
    parts.append(eng.finish())
    return pa.concat_tables(parts).to_pylist()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lookups_at_many_positions_equal_one_at_a_time(seed, monkeypatch):
    table, ops = _log(seed, 900)
    served = []
    orig = keyed_walk.push_lookup

    def counted(*a, **k):
        got = orig(*a, **k)
        served.append(got is not None)
        return got

    monkeypatch.setattr(keyed_walk, "push_lookup", counted)
    one = _run(table, ops, 1)
    served.clear()
    whole = _run(table, ops, 100_000)
    assert any(served), "the one-call path never served"
    assert whole == one
    kinds = {(r["event"], r["id"]) for r in whole}
    assert ("answer", "g1") in kinds and ("update", "g3") in kinds  # the log exercises answers and pushes
