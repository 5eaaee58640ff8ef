"""WindowOracle and SubstreamOracle: hand-computed answers, and randomized agreement with DuckDB SQL
over the same data (plain WHERE filters, RANGE frames, GROUP BY ... HAVING)."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.specs import parse_query
from vigil.state import pack, unpack
from vigil.windows.oracle import (
    SubstreamOracle,
    WindowOracle,
    aggregate,
    quantile_rank,
    substream_ok,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def wspec(qid: str, agg: str, rows=None, time=None, phi=None):
    obj = {"id": qid, "type": "window_aggregate", "agg": agg, "column": "x"}
    if rows is not None:
        obj["rows"] = list(rows)
    if time is not None:
        obj["time"] = list(time)
    if phi is not None:
        obj["phi"] = phi
    return parse_query(obj)


def sspec(qid: str, agg: str, T, rng, eps=None):
    obj = {"id": qid, "type": "substream_filter", "agg": agg, "column": "x", "key": "k", "time": T, "range": list(rng)}
    if eps is not None:
        obj["epsilon"] = eps
    return parse_query(obj)


def roundtrip(op):
    return type(op).from_state(unpack(pack(op.state())))


# ----------------------------------------------------------------------------- hand-computed


def test_quantile_rank_reads_phi_as_decimal():
    assert 0.07 * 100 > 7  # the float product would give rank 8
    assert quantile_rank(0.07, 100) == 7
    assert quantile_rank(0.07, 101) == 8
    assert quantile_rank(0.5, 5) == 3
    assert quantile_rank(0.5, 4) == 2
    assert quantile_rank(0.01, 5) == 1  # max(1, ceil(0.05))
    assert quantile_rank(1, 7) == 7
    assert quantile_rank(0.1, 30) == 3
    assert quantile_rank(0.5, 0) == 0


def test_aggregate_sql_semantics():
    x = np.array([3.0, math.nan, 1.0, 2.0])
    assert aggregate("count", x) == 3  # NULL not counted
    assert aggregate("sum", x) == 6
    assert aggregate("avg", x) == 2
    assert aggregate("min", x) == 1 and aggregate("max", x) == 3
    assert aggregate("quantile", x, 0.5) == 2
    assert aggregate("count", np.array([math.nan])) == 0
    for agg in ("sum", "avg", "min", "max"):
        assert math.isnan(aggregate(agg, np.array([])))
    # SUM is correctly rounded, independent of order
    assert aggregate("sum", np.array([1e16, 1.0, -1e16])) == 1.0


def test_rows_windows_by_hand():
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    seqs = np.arange(1, 6)
    ops = {agg: WindowOracle(agg, time_based=False) for agg in ("sum", "count", "avg", "min", "max", "quantile")}
    for agg, op in ops.items():
        op.register(1, wspec("a", agg, rows=[3, 0], phi=0.5 if agg == "quantile" else None))  # seq 3..5
        op.register(2, wspec("b", agg, rows=[4, 1], phi=0.5 if agg == "quantile" else None))  # seq 2..4
        op.register(3, wspec("c", agg, rows=[2, 1], phi=1 if agg == "quantile" else None))  # seq n-1
        assert op.lookup(np.array([1]), 0, math.nan)[0] == (0 if agg == "count" else pytest.approx(math.nan, nan_ok=True))
        op.push(values, seqs, None)
    got = {agg: op.lookup(np.array([1, 2, 3]), 5).tolist() for agg, op in ops.items()}
    assert got["sum"] == [9, 7, 2]
    assert got["count"] == [3, 3, 1]
    assert got["avg"] == [3, 7 / 3, 2]
    assert got["min"] == [2, 1, 2]
    assert got["max"] == [4, 4, 2]
    assert got["quantile"] == [3, 2, 2]  # rank ceil(1.5)=2 of {2,3,4} -> 3; of {1,2,4} -> 2; rank 1 of {2}
    # after element 1: window of query 1 = seq in [-1, 1], query 3 = seq 0 -> empty
    assert ops["sum"].lookup(np.array([1, 3]), 1).tolist()[0] == 5
    assert math.isnan(ops["sum"].lookup(np.array([3]), 1)[0])
    assert ops["count"].lookup(np.array([3]), 1)[0] == 0
    # earlier n: elements after n are not in the window of rows [3,0]
    assert ops["sum"].lookup(np.array([1]), 3)[0] == 10


def test_rows_window_with_gaps_and_late_registration():
    op = WindowOracle("sum", time_based=False)
    op.push(np.array([1.0, 2.0, 4.0]), np.array([1, 2, 4]), None)  # seq 3 was rejected
    op.register(7, wspec("a", "sum", rows=[3, 0]))  # registered after element 4: still sees 2 and 4
    assert op.lookup(np.array([7]), 4)[0] == 6
    op.push(np.array([8.0, 16.0]), np.array([7, 8]), None)
    assert op.lookup(np.array([7]), 7)[0] == 8  # seq 5..7
    assert op.lookup(np.array([7]), 8)[0] == 24  # seq 6..8
    op.terminate(7)
    with pytest.raises(KeyError):
        op.lookup(np.array([7]), 8)
    op.terminate(7)  # terminating twice is harmless


def test_time_windows_by_hand():
    op = WindowOracle("sum", time_based=True)
    values = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    times = np.array([1.0, 2.0, 2.0, 5.0, 8.0, 8.0])
    op.push(values, np.arange(1, 7), times)
    op.register(1, wspec("a", "sum", time=[3, 0]))  # (t-3, t]
    op.register(2, wspec("b", "sum", time=[7, 1]))  # (t-7, t-1]
    op.register(3, wspec("c", "sum", time=[2, 1]))  # (t-2, t-1]
    got = op.lookup(np.array([1, 2, 3]), 6, 8.0)
    assert got[:2].tolist() == [48, 14]  # (5, 8]: 16 + 32 ; (1, 7]: 2 + 4 + 8
    assert math.isnan(got[2])  # (6, 7]: empty
    # after element 5 (time 8): element 6 (same time) is not in the window yet
    assert op.lookup(np.array([1]), 5, 8.0)[0] == 16
    # after element 3 (t=2): (t-3, t] = (-1, 2]
    assert op.lookup(np.array([1, 2]), 3, 2.0).tolist() == [7, 1]
    # no element yet: t_now NaN -> empty
    assert math.isnan(op.lookup(np.array([1]), 0, math.nan)[0])
    # boundaries: a time exactly t-TL is out, exactly t-TR is in
    assert op.lookup(np.array([1]), 4, 5.0)[0] == 8  # (2, 5]: the two elements at time 2 are out
    op.register(4, wspec("d", "sum", time=[4, 3]))  # after element 4 (t=5): (1, 2]
    assert op.lookup(np.array([4]), 4, 5.0)[0] == 6  # time 2 = t-TR is in, time 1 = t-TL is out


def test_window_register_checks():
    op = WindowOracle("sum", time_based=False)
    with pytest.raises(ValueError):
        op.register(1, wspec("a", "max", rows=[3, 0]))
    with pytest.raises(ValueError):
        op.register(1, wspec("a", "sum", time=[3, 0]))
    op.register(1, wspec("a", "sum", rows=[3, 0]))
    with pytest.raises(ValueError):
        op.register(1, wspec("b", "sum", rows=[4, 0]))
    op.push(np.array([1.0]), np.array([5]), None)
    with pytest.raises(ValueError):
        op.push(np.array([1.0]), np.array([5]), None)  # seqs must increase


def test_window_state_roundtrip():
    for time_based in (False, True):
        op = WindowOracle("quantile", time_based)
        win = {"time": [4, 1]} if time_based else {"rows": [4, 1]}
        op.register(3, wspec("a", "quantile", phi=0.3, **win))
        op.push(np.array([3.0, 1.0, math.nan, 2.0, 9.0]), np.array([1, 2, 3, 5, 6]), np.array([1.0, 2, 3, 3, 4]))
        op2 = roundtrip(op)
        for n, t in ((6, 4.0), (5, 3.0), (2, 2.0)):
            a, b = op.lookup(np.array([3]), n, t), op2.lookup(np.array([3]), n, t)
            np.testing.assert_array_equal(a, b)
        op2.push(np.array([7.0]), np.array([7]), np.array([5.0]))
        op2.register(4, wspec("b", "quantile", phi=1, **win))
        assert op2.alive() == 2


def test_substream_by_hand():
    op = SubstreamOracle("sum")
    # key: 1 1 2 2 3 1 ; times 1 2 3 4 5 6
    values = np.array([10.0, 5.0, 7.0, math.nan, 1.0, 2.0])
    times = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    keys = np.array([1, 1, 2, 2, 3, 1])
    op.push(values, times, keys, np.arange(1, 7))
    op.register(1, sspec("a", "sum", 5, [6, None]))  # (1, 6]: key1 = 5+2 = 7, key2 = 7, key3 = 1
    op.register(2, sspec("b", "sum", 5, [None, 7]))
    op.register(3, sspec("c", "sum", 2, [None, None]))  # (4, 6]: keys 3 and 1
    op.register(4, sspec("d", "sum", 2.5, [0, 8]))  # (3.5, 6]: key2 only NULL -> not reported
    res = op.lookup(np.array([1, 2, 3, 4]), 6, 6.0)
    assert [r.tolist() for r in res] == [[1, 2], [3], [1, 3], [1, 3]]
    assert op.aggregates(4, 6, 6.0)[1] == 2
    assert math.isnan(op.aggregates(4, 6, 6.0)[2])
    # after element 2 (t=2): window of query 1 = (-3, 2]: key 1 sum 15
    assert [r.tolist() for r in op.lookup(np.array([1, 2]), 2, 2.0)] == [[1], []]
    cnt = SubstreamOracle("count")
    cnt.push(values, times, keys, np.arange(1, 7))
    cnt.register(9, sspec("e", "count", 5, [None, 1]))  # (1, 6]: every key has COUNT(x) >= 1
    assert cnt.lookup(np.array([9]), 6, 6.0)[0].tolist() == []
    cnt.register(10, sspec("f", "count", 2.5, [None, 1]))  # (3.5, 6]: key 2 has 1 row, COUNT(x) = 0
    assert cnt.lookup(np.array([10]), 6, 6.0)[0].tolist() == [2]
    op2 = roundtrip(op)
    assert [r.tolist() for r in op2.lookup(np.array([1, 2, 3, 4]), 6, 6.0)] == [[1, 2], [3], [1, 3], [1, 3]]


def test_substream_ok():
    aggs = {1: 20.0, 2: 9.0, 3: 5.0}
    exact = [1]  # range (10, inf)
    assert substream_ok(exact, [1], aggs, 10, None, None)
    assert not substream_ok(exact, [1, 2], aggs, 10, None, None)
    assert substream_ok(exact, [1, 2], aggs, 10, None, 0.2)  # 9 > 8
    assert not substream_ok(exact, [1, 2, 3], aggs, 10, None, 0.2)  # 5 <= 8
    assert not substream_ok(exact, [2], aggs, 10, None, 0.2)  # not a superset
    assert not substream_ok(exact, [1, 1], aggs, 10, None, 0.2)
    assert not substream_ok(exact, [1, 4], aggs, 10, None, 0.2)  # key 4 has nothing in the window
    assert substream_ok([3], [3, 2], aggs, None, 6, 0.6)  # (-inf, 6) relaxed to (-inf, 9.6)
    assert not substream_ok([3], [3, 2], aggs, None, 6, 0.5)  # 9 is not < 9
    assert substream_ok([], [2], {2: -11.0}, -10, None, 0.2)  # negative bound relaxed: -12
    assert substream_ok([], [2], {2: 11.0}, None, -10, 0.2) is False


# ----------------------------------------------------------------------------- vs DuckDB

AGG_SQL = {"sum": "SUM(v)", "count": "COUNT(v)", "avg": "AVG(v)", "min": "MIN(v)", "max": "MAX(v)"}
PHIS = [0.07, 0.1, 0.25, 0.28, 0.3, 0.5, 0.56, 0.7, 0.9, 1.0, 1 / 3]  # 0.28*25, 0.56*25: float noise


@st.composite
def stream(draw, max_n=30):
    n = draw(st.integers(0, max_n))
    gaps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    seqs = np.cumsum(np.array(gaps, dtype=np.int64)) if n else np.zeros(0, np.int64)
    vals = draw(st.lists(st.one_of(st.integers(-20, 20).map(float), st.just(math.nan)), min_size=n, max_size=n))
    dts = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    times = np.cumsum(np.array(dts, dtype=np.float64)) if n else np.zeros(0)
    keys = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return seqs, np.array(vals, dtype=np.float64), times, np.array(keys, dtype=np.int64)


def duck(seqs, vals, times, keys):
    con = duckdb.connect()
    tbl = pa.table(
        {
            "seq": pa.array(seqs, pa.int64()),
            "v": pa.array(vals, pa.float64(), mask=np.isnan(vals)),
            "t": pa.array(times, pa.float64()),
            "k": pa.array(keys, pa.int64()),
        }
    )
    con.register("s_arrow", tbl)
    con.execute("CREATE TABLE s AS SELECT * FROM s_arrow")
    return con


def sql_window(con, agg, where, params, phi):
    if agg != "quantile":
        return con.execute(f"SELECT {AGG_SQL[agg]} FROM s WHERE {where}", params).fetchone()[0]
    row = con.execute(
        f"""SELECT v FROM (SELECT v, row_number() OVER (ORDER BY v) AS rn, count(*) OVER () AS n
                           FROM s WHERE {where} AND v IS NOT NULL)
            WHERE rn = greatest(1, ceil(CAST(? AS DECIMAL(20, 17)) * n))""",
        [*params, repr(phi)],
    ).fetchone()
    return None if row is None else row[0]


def same(a: float, b) -> bool:
    if b is None:
        return math.isnan(a)
    return a == pytest.approx(float(b), rel=1e-12, abs=1e-12)


@SETTINGS
@given(
    data=stream(),
    agg=st.sampled_from(["sum", "count", "avg", "min", "max", "quantile"]),
    wins=st.lists(st.tuples(st.integers(1, 12), st.integers(0, 11)).filter(lambda w: w[0] > w[1]), min_size=1, max_size=4),
    phi=st.sampled_from(PHIS),
    time_based=st.booleans(),
)
def test_windows_match_duckdb(data, agg, wins, phi, time_based):
    seqs, vals, times, keys = data
    con = duck(seqs, vals, times, keys)
    op = WindowOracle(agg, time_based)
    for i, (a, b) in enumerate(wins):
        win = {"time": [a, b]} if time_based else {"rows": [a, b]}
        op.register(i, wspec(f"q{i}", agg, phi=phi if agg == "quantile" else None, **win))
    # push in two batches; look up after the first batch too
    half = len(seqs) // 2
    lookups_at = []
    for lo, hi in ((0, half), (half, len(seqs))):
        op.push(vals[lo:hi], seqs[lo:hi], times[lo:hi] if time_based else None)
        lookups_at.append(hi)
    qids = np.arange(len(wins))
    for upto in lookups_at:
        n = int(seqs[upto - 1]) if upto else 0
        t_now = float(times[upto - 1]) if upto else math.nan
        got = op.lookup(qids, n, t_now)
        for i, (a, b) in enumerate(wins):
            if time_based:
                if upto == 0:
                    exp = 0 if agg == "count" else None
                else:
                    exp = sql_window(con, agg, "seq <= ? AND t > ? - ? AND t <= ? - ?", [n, t_now, a, t_now, b], phi)
            else:
                exp = sql_window(con, agg, "seq BETWEEN ? - ? + 1 AND ? - ?", [n, a, n, b], phi)
            assert same(got[i], exp), (agg, (a, b), n, got[i], exp)
    # a snapshot answers the same
    if lookups_at[-1]:
        n = int(seqs[-1])
        np.testing.assert_array_equal(roundtrip(op).lookup(qids, n, float(times[-1])), op.lookup(qids, n, float(times[-1])))


@SETTINGS
@given(data=stream(), agg=st.sampled_from(["sum", "count", "min", "max"]), nl=st.integers(1, 8), nr=st.integers(0, 7))
def test_rows_windows_match_duckdb_range_frames(data, agg, nl, nr):
    """The rows window after each element n equals SQL's RANGE frame over seq."""
    if nl <= nr:
        nl, nr = nr + 1, nl
    seqs, vals, times, keys = data
    con = duck(seqs, vals, times, keys)
    op = WindowOracle(agg, time_based=False)
    op.register(0, wspec("q", agg, rows=[nl, nr]))
    frame = f"RANGE BETWEEN {nl - 1} PRECEDING AND {nr} PRECEDING" if nr else f"RANGE BETWEEN {nl - 1} PRECEDING AND CURRENT ROW"
    rows = con.execute(f"SELECT seq, {AGG_SQL[agg]} OVER (ORDER BY seq {frame}) FROM s ORDER BY seq").fetchall()
    for i, (seq, exp) in enumerate(rows):
        op.push(vals[i : i + 1], seqs[i : i + 1], None)
        assert same(op.lookup(np.array([0]), seq)[0], exp if not (agg == "count" and exp is None) else 0)


@SETTINGS
@given(
    data=stream(),
    agg=st.sampled_from(["sum", "count"]),
    qs=st.lists(
        st.tuples(st.integers(1, 8), st.one_of(st.none(), st.integers(-10, 10)), st.one_of(st.none(), st.integers(-10, 30))),
        min_size=1,
        max_size=4,
    ).map(lambda qs: [(T, lo, hi) for T, lo, hi in qs if lo is None or hi is None or lo < hi] or [(3, None, None)]),
)
def test_substream_matches_duckdb(data, agg, qs):
    seqs, vals, times, keys = data
    if agg == "count":  # COUNT(x): ones, NULL where x is null
        vals = np.where(np.isnan(vals), math.nan, 1.0)
    con = duck(seqs, vals, times, keys)
    op = SubstreamOracle(agg)
    for i, (T, lo, hi) in enumerate(qs):
        op.register(i, sspec(f"q{i}", agg, T, [lo, hi]))
    op.push(vals, times, keys, seqs)
    for upto in sorted({len(seqs), len(seqs) // 2, min(1, len(seqs))} - {0}):
        n, t_now = int(seqs[upto - 1]), float(times[upto - 1])
        got = op.lookup(np.arange(len(qs)), n, t_now)
        for i, (T, lo, hi) in enumerate(qs):
            # a NULL aggregate (SUM over nulls only) is in no range, not even (-inf, inf)
            slo = "'-inf'::DOUBLE" if lo is None else lo
            shi = "'inf'::DOUBLE" if hi is None else hi
            having = f"{AGG_SQL[agg]} > {slo} AND {AGG_SQL[agg]} < {shi}"
            exp = con.execute(
                f"SELECT k FROM s WHERE seq <= ? AND t > ? - ? AND t <= ? GROUP BY k HAVING {having} ORDER BY k",
                [n, t_now, T, t_now],
            ).fetchall()
            assert got[i].tolist() == [k for (k,) in exp]
            # the exact answer passes the checker, for any epsilon
            aggs = op.aggregates(i, n, t_now)
            assert substream_ok(got[i], got[i], aggs, lo, hi, None)
            assert substream_ok(got[i], got[i], aggs, lo, hi, 0.3)
