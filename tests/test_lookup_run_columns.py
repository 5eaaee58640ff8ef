"""A run of lookups at one position is emitted as one table of answers (Outbox.emit_answers):
the same outputs, in the same order, as answering the lookups one by one (Engine._apply),
with rejected lookups, per-key answers and other events between them."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from vigil.engine import Engine


def _run(one_by_one: bool, monkeypatch) -> pa.Table:
    if one_by_one:
        monkeypatch.setattr(Engine, "_lookup_run", lambda self, ops, n: [self._apply(op, n) for op in ops])
    rng = np.random.default_rng(3)
    table = pa.table({"v": rng.random(300), "k": rng.integers(0, 3, 300).astype(str)})
    ops = [{"op": "register", "at": 0, "query": {"type": "quantile", "id": f"q{i}", "column": "v", "phi": p,
                                                 "epsilon": 0.05, "rows": 50}} for i, p in enumerate((0.1, 0.5, 0.9))]
    ops.append({"op": "register", "at": 0, "query": {"type": "quantile", "id": "w", "column": "v", "phi": 0.5,
                                                     "epsilon": 0.05}})
    ops.append({"op": "register", "at": 0, "query": {"type": "quantile", "id": "g", "column": "v", "phi": 0.5,
                                                     "epsilon": 0.05, "rows": 20, "group_by": ["k"]}})
    for at in (10, 100, 250):
        for ident in ("q0", "zz", "q2", "g", "w", "q1", "q0"):
            ops.append({"op": "lookup", "at": at, "id": ident})
        if at == 100:
            ops.append({"op": "terminate", "at": at, "id": "q1"})
    ops.append({"op": "lookup", "at": 100, "id": "q1"})
    eng = Engine({}, 0.05, "pairs", columns=set(table.column_names))
    eng.add_operations([json.dumps(o) for o in ops])
    parts = [eng.process(table.slice(s, 70)) for s in range(0, table.num_rows, 70)]
    parts.append(eng.finish())
    eng.add_operations([json.dumps({"op": "lookup", "at": 1, "id": "q0"}), json.dumps({"op": "lookup", "at": 1, "id": "q2"})])
    parts.append(eng.take_outputs())
    return pa.concat_tables(parts)


def test_answers_as_columns_equal_one_by_one(monkeypatch):
    got = _run(False, monkeypatch)
    assert got.num_rows > 25 and "answer" in got.column("event").to_pylist()
    with monkeypatch.context() as m:
        ref = _run(True, m)
    assert got.to_pylist() == ref.to_pylist()
