"""QuantileOracle and rank_error_ok: hand-computed answers, a brute-force check of the checker, and
randomized agreement with DuckDB (ORDER BY over the window, rank computed in SQL DECIMAL)."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.quantiles.oracle import QuantileOracle, rank_error_ok
from vigil.state import pack, unpack

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PHIS = [0.01, 0.07, 0.1, 0.25, 0.28, 1 / 3, 0.5, 0.56, 0.7, 0.9, 0.99, 1.0]


def test_whole_stream_and_window_by_hand():
    whole = QuantileOracle(0.01, None)
    win = QuantileOracle(0.01, 3)
    for op in (whole, win):
        op.register(1, 0.5, 0.05)
        op.register(2, 1.0, 0.05)
        op.register(3, 0.01, 0.05)
        assert np.isnan(op.lookup(np.array([1, 2]), 0)).all()
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    for op in (whole, win):
        op.push(values, np.arange(1, 6))
    # whole stream sorted 1 2 3 4 5: ranks ceil(2.5)=3, 5, max(1, ceil(0.05))=1
    assert whole.lookup(np.array([1, 2, 3]), 5).tolist() == [3, 5, 1]
    # window seq 3..5 = {4, 2, 3}: ranks 2, 3, 1
    assert win.lookup(np.array([1, 2, 3]), 5).tolist() == [3, 4, 2]
    # after element 2: whole = {5, 1} rank 1 -> 1 ; window = {5, 1} too
    assert whole.lookup(np.array([1]), 2)[0] == 1
    assert win.lookup(np.array([2]), 2)[0] == 5
    # gaps in seq: the window is in seq units
    win.push(np.array([10.0]), np.array([7]))  # seq 6 was rejected
    assert win.lookup(np.array([2, 3]), 7).tolist() == [10, 3]  # seq 5..7 = {3, 10}
    whole.terminate(2)
    with pytest.raises(KeyError):
        whole.lookup(np.array([2]), 5)
    # NaN values are NULLs, not elements
    whole.push(np.array([math.nan, math.nan]), np.array([6, 7]))
    assert whole.lookup(np.array([1]), 7)[0] == 3
    # snapshot / restore
    w2 = QuantileOracle.from_state(unpack(pack(win.state())))
    assert w2.rows == 3 and w2.eps == 0.01
    np.testing.assert_array_equal(w2.lookup(np.array([1, 2, 3]), 7), win.lookup(np.array([1, 2, 3]), 7))


def test_rank_error_ok_by_hand():
    v = np.array([2.0, 5.0, 2.0, 1.0, 2.0])  # sorted 1 2 2 2 5; N = 5
    assert rank_error_ok(v, 2.0, 0.5, 0.0)  # target 3; 2 occupies ranks 2..4
    assert rank_error_ok(v, 2.0, 0.2, 0.0)  # target 1; rank 2 is within 0*5 + 1
    assert not rank_error_ok(v, 5.0, 0.5, 0.0)  # rank 5 vs 3: 2 > 1
    assert rank_error_ok(v, 5.0, 0.5, 0.2)  # 2 <= 0.2*5 + 1
    assert not rank_error_ok(v, 5.0, 0.5, 0.19)
    assert not rank_error_ok(v, 3.0, 0.5, 0.5)  # not one of the values
    assert not rank_error_ok(v, math.nan, 0.5, 0.5)
    assert rank_error_ok(np.array([]), math.nan, 0.5, 0.1)
    assert not rank_error_ok(np.array([]), 1.0, 0.5, 0.1)
    assert rank_error_ok(np.array([math.nan]), math.nan, 0.5, 0.1)  # only NULLs = empty
    # eps*N computed exactly: 0.01 * 300 = 3 (distance 4 allowed)
    w = np.arange(1.0, 301.0)
    assert rank_error_ok(w, 154.0, 0.5, 0.01) and not rank_error_ok(w, 155.0, 0.5, 0.01)


@SETTINGS
@given(
    v=st.lists(st.integers(0, 6).map(float), min_size=0, max_size=30),
    phi=st.sampled_from(PHIS),
    eps=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25]),
    pick=st.integers(0, 100),
)
def test_rank_error_ok_brute_force(v, phi, eps, pick):
    v = np.array(v)
    n = len(v)
    if n == 0:
        assert rank_error_ok(v, math.nan, phi, eps)
        return
    target = max(1, math.ceil(round(phi * n, 9)))  # phi*n rounded to kill float noise
    answer = float(v[pick % n])
    srt = sorted(v)
    ranks = [i + 1 for i, x in enumerate(srt) if x == answer]
    expect = any(abs(r - target) <= eps * n + 1 + 1e-9 for r in ranks)
    assert rank_error_ok(v, answer, phi, eps) == expect
    # the exact quantile always passes, even with eps = 0
    op = QuantileOracle(0.0, None)
    op.register(0, phi, eps)
    op.push(v, np.arange(1, n + 1))
    exact = op.lookup(np.array([0]), n)[0]
    assert exact == srt[target - 1]
    assert rank_error_ok(v, exact, phi, 0.0)


@SETTINGS
@given(
    vals=st.lists(st.one_of(st.integers(-9, 9).map(float), st.just(math.nan)), min_size=0, max_size=40),
    gaps=st.lists(st.integers(1, 3), min_size=40, max_size=40),
    rows=st.one_of(st.none(), st.integers(1, 12)),
    phis=st.lists(st.sampled_from(PHIS), min_size=1, max_size=4),
)
def test_quantiles_match_duckdb(vals, gaps, rows, phis):
    vals = np.array(vals, dtype=np.float64)
    seqs = np.cumsum(gaps)[: len(vals)].astype(np.int64)
    con = duckdb.connect()
    con.register("s", pa.table({"seq": pa.array(seqs, pa.int64()), "v": pa.array(vals, mask=np.isnan(vals))}))
    op = QuantileOracle(0.01, rows)
    for i, phi in enumerate(phis):
        op.register(i, phi, 0.05)
    third = len(vals) // 3
    for lo, hi in ((0, third), (third, len(vals))):
        op.push(vals[lo:hi], seqs[lo:hi])
        n = int(seqs[hi - 1]) if hi else 0
        got = op.lookup(np.arange(len(phis)), n)
        first = -(10**9) if rows is None else n - rows + 1
        for i, phi in enumerate(phis):
            row = con.execute(
                """SELECT v FROM (SELECT v, row_number() OVER (ORDER BY v) AS rn, count(*) OVER () AS cnt
                                  FROM s WHERE seq BETWEEN ? AND ? AND v IS NOT NULL)
                   WHERE rn = greatest(1, ceil(CAST(? AS DECIMAL(20, 17)) * cnt))""",
                [first, n, repr(phi)],
            ).fetchone()
            if row is None:
                assert math.isnan(got[i])
            else:
                assert got[i] == row[0]


def test_quantile_rank_matches_sql_decimal():
    """The target rank max(1, ceil(phi*N)) with phi a decimal, for every 2- and 3-decimal phi and
    N <= 120, equals SQL's DECIMAL computation (the float product differs e.g. for 0.28 * 25)."""
    from vigil.arrays import quantile_rank

    phis = [f"{d / 1000:.3f}" for d in range(1, 1001, 3)] + [f"{d / 100:.2f}" for d in range(1, 101)]
    grid = pa.table({"phi": [p for p in phis for _ in range(120)], "n": [n for _ in phis for n in range(1, 121)]})
    con = duckdb.connect()
    con.register("g", grid)
    exp = con.execute(
        "SELECT greatest(1, ceil(CAST(phi AS DECIMAL(10, 3)) * n))::BIGINT FROM g"
    ).fetchnumpy()
    exp = next(iter(exp.values()))
    got = np.array([quantile_rank(float(p), n) for p, n in zip(grid["phi"].to_pylist(), grid["n"].to_pylist(), strict=True)])
    np.testing.assert_array_equal(got, exp)
    assert quantile_rank(0.28, 25) == 7 and math.ceil(0.28 * 25) == 8
