"""The same answers from DuckDB window functions on the same stream, and memory that stays flat
over a long stream (space O(N_max): intervals no window can use are discarded)."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from vigil import registry
from vigil.arrays import quantile_rank
from vigil.specs import parse_query


def spec(i, agg, time_based, left, right, phi=None):
    q = {"type": "window_aggregate", "id": f"q{i}", "agg": agg, "column": "v", "time" if time_based else "rows": [left, right]}
    if phi is not None:
        q["phi"] = phi
    return parse_query(q)


WINDOWS = [(1, 0), (5, 0), (17, 3), (64, 0), (100, 40), (400, 0)]
DUCK = {"sum": "SUM(v)", "count": "COUNT(v)", "avg": "AVG(v)", "min": "MIN(v)", "max": "MAX(v)", "quantile": "LIST(v)"}


@pytest.mark.parametrize("time_based", [False, True], ids=["rows", "time"])
@pytest.mark.parametrize("agg", ["sum", "count", "avg", "min", "max", "quantile"])
def test_default_agrees_with_duckdb_window_functions(agg, time_based):
    rng = np.random.default_rng(7)
    n = 600
    v = rng.integers(-50, 50, n).astype(np.float64)
    ts = np.cumsum(rng.integers(1, 4, n)).astype(np.int64)  # distinct times: no RANGE peers
    seq = np.arange(1, n + 1)
    con = duckdb.connect()
    con.register("s", pa.table({"seq": seq, "ts": ts, "v": v}))
    op = registry.resolve("windows")(agg, time_based)
    for i, (left, right) in enumerate(WINDOWS):
        op.register(i, spec(i, agg, time_based, left, right, 0.3 if agg == "quantile" else None), 0)
    for lo in range(0, n, 97):
        op.push(v[lo:lo + 97], seq[lo:lo + 97], ts[lo:lo + 97].astype(np.float64) if time_based else None)
    at = n
    for i, (left, right) in enumerate(WINDOWS):
        if time_based:  # (t-TL, t-TR] on integer times = RANGE [t-TL+1, t-TR]
            frame = f"RANGE BETWEEN {left - 1} PRECEDING AND {right} PRECEDING"
            order = "ts"
        else:
            frame = f"ROWS BETWEEN {left - 1} PRECEDING AND {right} PRECEDING"
            order = "seq"
        want = con.execute(f"SELECT {DUCK[agg]} OVER (ORDER BY {order} {frame}) FROM s ORDER BY seq").fetchall()[at - 1][0]
        if agg == "quantile":
            want = None if not want else sorted(want)[quantile_rank(0.3, len(want)) - 1]
        if agg == "count" and want is None:
            want = 0
        got = float(op.lookup(np.array([i]), at, float(ts[at - 1]))[0])
        if want is None:
            assert math.isnan(got), (agg, left, right, got)
        else:
            assert got == pytest.approx(float(want), rel=1e-12, abs=1e-12), (agg, time_based, left, right)


MEM_IMPLS = [("rint", "sum"), ("bint", "max"), ("bint_qnt", "quantile"), ("wavelet_qnt", "quantile"), ("slickdeque", "min"), ("psoup", "sum"),
             ("lint", "sum"), ("materialize_none", "avg"), ("materialize_all", "sum"), ("auto", "max")]


@pytest.mark.parametrize("time_based", [False, True], ids=["rows", "time"])
@pytest.mark.parametrize(("name", "agg"), MEM_IMPLS, ids=[n for n, _ in MEM_IMPLS])
def test_memory_flat_over_a_long_stream(name, agg, time_based):
    if name == "lint" and time_based:
        pytest.skip("lint serves rows windows only")
    op = registry.resolve("windows", name)(agg, time_based)
    wins = [(300, 0), (50, 0), (1000, 0)] if name == "slickdeque" else [(300, 0), (50, 10), (1000, 200)]
    if name == "auto":
        wins.append((40, 5))  # auto keeps B-INT beside the deque for historical MIN/MAX
    for i, (left, right) in enumerate(wins):
        op.register(i, spec(i, agg, time_based, left, right, 0.5 if agg == "quantile" else None), 0)
    rng = np.random.default_rng(1)
    sizes = []
    pos, t = 0, 0.0
    for step in range(60):  # 300k elements, ~300x the largest window
        k = 5000
        seqs = pos + np.arange(1, k + 1)
        times = t + np.cumsum(rng.integers(0, 2, k)).astype(np.float64)  # ~2 elements per time unit
        op.push(rng.normal(size=k), seqs, times if time_based else None)
        pos, t = int(seqs[-1]), float(times[-1])
        if step >= 5:
            sizes.append(op.nbytes())
    assert max(sizes) == min(sizes), sizes
    assert max(sizes) < 4_000_000  # O(N_max): KBs to a few MB, not the 300k-element stream
    op.terminate(2)  # the largest windows go: the structure shrinks at the next push
    op.terminate(0)
    op.push(np.zeros(10), pos + np.arange(1, 11), t + np.zeros(10) if time_based else None)
    assert op.nbytes() < sizes[-1]
