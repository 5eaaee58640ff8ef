"""Rows are judged against the groups that check a column at the row's position, however the
groups change inside a batch (vigil.judge.roster: the groups a run is judged against, rebuilt when
the engine's groups change): a batch gives the outputs of one row at a time."""

import json

import numpy as np
import pyarrow as pa
import pytest

from vigil.engine import Engine
from vigil.events import output_rows


def _run(table, ops, batch):
    eng = Engine({}, 0.005, "pairs", columns=set(table.column_names))
    eng.add_operations([json.dumps(o) for o in ops], list(range(1, len(ops) + 1)))
    parts = [eng.process(table.slice(s, batch)) for s in range(0, table.num_rows, batch)]
    parts.append(eng.finish())
    return output_rows(pa.concat_tables(parts)), dict(eng.counts)


def _win(ident, col, at):
    return {"op": "register", "at": at, "query": {"id": ident, "type": "window_aggregate", "agg": "sum",
                                                  "column": col, "rows": [5, 0]}}


@pytest.mark.parametrize("batch", [1, 7, 1_000])
def test_a_bad_value_counts_only_while_a_group_checks_its_column(batch):
    n = 300
    a = np.arange(n, dtype=np.float64)
    b = np.ones(n)
    b[[50, 150, 250]] = np.nan  # rejected only while a query over b is alive (61..199)
    t = np.arange(n, dtype=np.float64)
    t[[120, 260]] = -1.0  # goes back in time: rejected only while a time-window query is alive (100..)
    table = pa.table({"seq": np.arange(1, n + 1), "a": a, "b": b, "t": t})
    ops = [_win("qa", "a", 0), _win("qb", "b", 60),
           {"op": "register", "at": 100, "query": {"id": "qt", "type": "window_aggregate", "agg": "count",
                                                    "time": [10, 0], "time_column": "t"}},
           {"op": "lookup", "at": 155, "id": "qb"}, {"op": "terminate", "at": 199, "id": "qb"},
           {"op": "lookup", "at": 255, "id": "qa"}, {"op": "lookup", "at": 265, "id": "qt"}]
    out, counts = _run(table, ops, batch)
    one, counts1 = _run(table, ops, 1)
    assert out == one and counts == counts1
    rejected = sorted(r["at"] for r in out if r["event"] == "rejected")
    assert rejected == [121, 151, 261]
