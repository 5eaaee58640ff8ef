"""A run of terminations at one position (vigil.oprun.terminate_run: one terminate_many per
group) against one operation at a time: the same outputs (rejections of unknown ids in their
place, maturities) and counts, with duplicate ids, unknown ids, matured and re-arming
queries, and groups left without queries. (Snapshots are not compared: the auto operator's
cost model holds measured times.)"""

import json
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil import oprun
from vigil.engine import Engine
from vigil.events import output_rows


def _one_by_one(eng, ops, n):
    for op in ops:
        eng._apply(op, n)


def _log(seed: int) -> tuple[pa.Table, list[str]]:
    rng = np.random.default_rng(seed)
    n = 3000
    table = pa.table({"x": rng.integers(0, 100, n).astype(float), "y": rng.integers(0, 100, n).astype(float),
                      "w": rng.integers(1, 4, n), "k": rng.choice(["a", "b"], n)})
    lines, ids = [], []
    for pos in range(0, n, 150):
        for _ in range(int(rng.integers(0, 30))):
            i = f"q{len(ids)}"
            lo = int(rng.integers(0, 90))
            where = [{"x": [lo, lo + 10]}, {"x": [lo, lo + 20], "y": [0, 50]}, {"y": [lo, None], "k": "a"}][
                int(rng.integers(0, 3))]
            q = {"type": "threshold", "id": i, "where": where, "weight": "w", "threshold": int(rng.integers(1, 60))}
            if rng.random() < 0.1:
                q["repeat"] = True
            lines.append(json.dumps({"op": "register", "at": pos, "query": q}))
            ids.append(i)
        for _ in range(int(rng.integers(0, 40))):
            i = ids[int(rng.integers(0, len(ids)))] if ids and rng.random() < 0.85 else f"nope{int(rng.integers(0, 5))}"
            lines.append(json.dumps({"op": "terminate", "at": pos + int(rng.integers(0, 2)), "id": i}))
    return table, lines


def _run(table, lines, batch):
    eng = Engine(columns=set(table.column_names))
    eng.add_operations(lines, list(range(1, len(lines) + 1)))
    out = [eng.process(table.slice(s, batch)) for s in range(0, table.num_rows, batch)]
    out.append(eng.finish())
    rows = [r for t in out for r in output_rows(t)]
    return rows, dict(eng.counts)


@pytest.mark.timeout(300)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), batch=st.sampled_from([97, 1000, 5000]))
def test_terminate_run_equals_one_by_one(seed, batch):
    table, lines = _log(seed)
    fast = _run(table, lines, batch)
    with mock.patch.object(oprun, "terminate_run", _one_by_one):
        slow = _run(table, lines, batch)
    assert fast[0] == slow[0]
    assert fast[1] == slow[1]


@pytest.mark.timeout(120)
def test_terminate_run_is_used():
    table, lines = _log(3)
    calls = []
    real = oprun.terminate_run

    def spy(eng, ops, n):
        calls.append(len(ops))
        return real(eng, ops, n)

    with mock.patch.object(oprun, "terminate_run", spy):
        _run(table, lines, 1000)
    assert calls and max(calls) > 1
