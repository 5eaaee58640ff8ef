"""JoinOracle: hand-computed pairs, and randomized agreement with a DuckDB SQL join of the whole
history (a pair is new at the later seq of its two tuples, for the queries alive then)."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.joins.oracle import JoinOracle
from vigil.specs import parse_query
from vigil.state import pack, unpack

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def band(qid, lo, hi):
    return parse_query({"id": qid, "type": "band_join", "left": "R", "right": "S", "left_on": "B",
                        "right_on": "B", "band": [lo, hi]})


def select(qid, a=(None, None), c=(None, None), window=None):
    obj = {"id": qid, "type": "select_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B",
           "left_range": {"A": list(a)}, "right_range": {"C": list(c)}}
    if window is not None:
        obj.update(type="window_join", window=window, time_column="T")
    return parse_query(obj)


def triples(res):
    return list(zip(*(x.tolist() for x in res), strict=True))


def test_band_by_hand():
    op = JoinOracle("band")
    op.insert("left", np.array([1]), np.array([10.0]), None, None)  # stored before any query
    op.register(1, band("a", 0, 5))  # s - r in [0, 5]
    op.register(2, band("b", -3, 0))
    # s=12 at seq 2: 12-10 = 2 -> query 1
    assert triples(op.insert("right", np.array([2]), np.array([12.0]), None, None)) == [(1, 1, 2)]
    # r=12 at 3: s 12 - 12 = 0 -> both; r=15 at 4: 12 - 15 = -3 -> query 2
    assert triples(op.insert("left", np.array([3, 4]), np.array([12.0, 15.0]), None, None)) == [
        (1, 3, 2), (2, 3, 2), (2, 4, 2)]
    op.terminate(2)
    # s=15 at 5: 15-10=5, 15-12=3, 15-15=0 -> query 1 with r = 1, 3, 4
    assert triples(op.insert("right", np.array([5]), np.array([15.0]), None, None)) == [(1, 1, 5), (1, 3, 5), (1, 4, 5)]
    aff = JoinOracle.from_state(unpack(pack(op.state())))
    aff.output = "affected"
    assert triples(aff.insert("right", np.array([6, 7]), np.array([13.0, 100.0]), None, None)) == [(1, 6, -1)]
    assert triples(op.insert("right", np.array([6, 7]), np.array([13.0, 100.0]), None, None)) == [
        (1, 1, 6), (1, 3, 6)]


def test_select_and_window_by_hand():
    sel = JoinOracle("select")
    win = JoinOracle("window")
    sel.register(1, select("a", a=(0, 10), c=(None, 5)))
    sel.register(2, select("b"))  # unbounded ranges: equality, and attrs not NULL
    win.register(1, select("a", a=(0, 10), c=(None, 5), window=3))
    # left tuples: (seq, B, A, T)
    L = [(1, 7, 5.0, 0.0), (2, 7, 11.0, 1.0), (3, 8, 1.0, 2.0), (4, 7, math.nan, 3.0)]
    for seq, b, a, t in L:
        for op in (sel, win):
            op.insert("left", np.array([seq]), np.array([b]), np.array([[a]]), np.array([t]))
    # right tuple seq 5: B=7, C=5 (closed upper bound), T=3.5
    res_s = sel.insert("right", np.array([5]), np.array([7]), np.array([[5.0]]), np.array([3.5]))
    res_w = win.insert("right", np.array([5]), np.array([7]), np.array([[5.0]]), np.array([3.5]))
    # query 1: r must have A in [0, 10]: seq 1 only (seq 2 has 11, seq 4 NULL); query 2: every B=7
    # whose A is not NULL (a NULL is inside no range, not even an unbounded one)
    assert triples(res_s) == [(1, 1, 5), (2, 1, 5), (2, 2, 5)]
    # window 3: |0 - 3.5| = 3.5 is not < 3
    assert triples(res_w) == []
    res_w = win.insert("right", np.array([6]), np.array([7]), np.array([[-1.0]]), np.array([2.9]))
    assert triples(res_w) == [(1, 1, 6)]  # |0 - 2.9| < 3
    # C = 6 fails query 1, passes query 2
    assert triples(sel.insert("right", np.array([6]), np.array([7]), np.array([[6.0]]), np.array([0.0]))) == [
        (2, 1, 6), (2, 2, 6)]


def test_join_register_checks():
    op = JoinOracle("select")
    op.insert("left", np.array([1]), np.array([1]), np.zeros((1, 2)), None)  # 2 attrs, names unknown
    with pytest.raises(ValueError):
        op.register(1, select("a"))  # 1 left range column
    assert op.alive() == 0 and op.cols["left"] is None
    with pytest.raises(ValueError):
        op.register(1, band("b", 0, 1))
    op2 = JoinOracle("select")
    op2.register(1, select("a"))
    two = parse_query({"id": "x", "type": "select_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B",
                       "left_range": {"A": [0, 1], "Z": [0, 1]}})
    with pytest.raises(ValueError):
        op2.register(2, two)
    op2.insert("left", np.array([3]), np.array([1]), np.zeros((1, 1)), None)
    with pytest.raises(ValueError):
        op2.insert("right", np.array([3]), np.array([1]), np.zeros((1, 1)), None)  # seq not increasing


# ----------------------------------------------------------------------------- vs DuckDB


@st.composite
def workload(draw, kind):
    n = draw(st.integers(0, 25))
    sides = draw(st.lists(st.sampled_from(["left", "right"]), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    attrs = draw(st.lists(st.one_of(st.integers(0, 10).map(float), st.just(math.nan)), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(0, 10).map(float), min_size=n, max_size=n))
    nq = draw(st.integers(1, 4))
    queries = []
    for _ in range(nq):
        reg = draw(st.integers(0, n))
        term = draw(st.one_of(st.none(), st.integers(reg, n)))
        if kind == "band":
            lo = draw(st.integers(-4, 4))
            params = (lo, lo + draw(st.integers(0, 4)))
        else:
            lo_a, lo_c = draw(st.integers(0, 10)), draw(st.integers(0, 10))
            params = (
                (lo_a, lo_a + draw(st.integers(0, 8))),
                (draw(st.sampled_from([None, lo_c])), draw(st.sampled_from([None, lo_c + 3]))),
                draw(st.integers(1, 5)),
            )
        queries.append((reg, term, params))
    return sides, keys, attrs, times, queries


def run_oracle(kind, output, sides, keys, attrs, times, queries):
    """Drive the oracle: apply register/terminate at their points, insert maximal same-side runs."""
    op = JoinOracle(kind, output)
    n = len(sides)
    ops_at: dict[int, list] = {}
    for qid, (reg, term, params) in enumerate(queries):
        ops_at.setdefault(reg, []).append(("reg", qid, params))
        if term is not None:
            ops_at.setdefault(term, []).append(("term", qid, None))
    out = []
    i = 0
    while i <= n:
        for what, qid, params in sorted(ops_at.get(i, []), key=lambda o: o[0] != "reg"):  # register first
            if what == "term":
                op.terminate(qid)
            elif kind == "band":
                op.register(qid, band(f"q{qid}", *params))
            else:
                a, c, w = params
                op.register(qid, select(f"q{qid}", a, c, w if kind == "window" else None))
        if i == n:
            break
        j = i + 1
        while j < n and sides[j] == sides[i] and j not in ops_at:
            j += 1
        seqs = np.arange(i + 1, j + 1)
        key = np.array(keys[i:j], dtype=np.float64 if kind == "band" else np.int64)
        at = None if kind == "band" else np.array(attrs[i:j]).reshape(-1, 1)
        tm = np.array(times[i:j]) if kind == "window" else None
        out += triples(op.insert(sides[i], seqs, key, at, tm))
        if i == n // 2:  # snapshot / restore midway
            op = JoinOracle.from_state(unpack(pack(op.state())))
        i = j
    return out


def sql_pairs(kind, output, sides, keys, attrs, times, queries):
    con = duckdb.connect()
    n = len(sides)
    seq = np.arange(1, n + 1)
    xs = np.array(attrs, dtype=np.float64)
    rows = pa.table({"seq": seq, "side": pa.array(sides, pa.string()), "b": pa.array(keys, pa.int64()),
                     "x": pa.array(xs, mask=np.isnan(xs)), "t": pa.array(times, pa.float64())})
    big = 10**9
    qs = pa.table({
        "qid": list(range(len(queries))),
        "reg": [q[0] for q in queries],
        "term": [big if q[1] is None else q[1] for q in queries],
        "lo": [float(q[2][0]) if kind == "band" else float(q[2][0][0]) for q in queries],
        "hi": [float(q[2][1]) if kind == "band" else float(q[2][0][1]) for q in queries],
        "clo": [None if kind == "band" or q[2][1][0] is None else float(q[2][1][0]) for q in queries],
        "chi": [None if kind == "band" or q[2][1][1] is None else float(q[2][1][1]) for q in queries],
        "w": [None if kind == "band" else float(q[2][2]) for q in queries],
    })
    con.register("tup", rows)
    con.register("q", qs)
    if kind == "band":
        pred = "s.b - r.b BETWEEN q.lo AND q.hi"
    else:
        pred = ("r.b = s.b AND r.x BETWEEN q.lo AND q.hi"
                " AND s.x >= coalesce(q.clo, '-inf'::DOUBLE) AND s.x <= coalesce(q.chi, 'inf'::DOUBLE)")
        if kind == "window":
            pred += " AND abs(r.t - s.t) < q.w"
    sql = f"""
        SELECT q.qid, r.seq AS rs, s.seq AS ss, greatest(r.seq, s.seq) AS arr
        FROM tup r, tup s, q
        WHERE r.side = 'left' AND s.side = 'right' AND {pred}
          AND greatest(r.seq, s.seq) > q.reg AND greatest(r.seq, s.seq) <= q.term"""
    if output == "pairs":
        res = con.execute(f"SELECT qid, rs, ss FROM ({sql}) ORDER BY arr, qid, rs, ss").fetchall()
    else:
        res = con.execute(f"SELECT DISTINCT qid, arr, -1 FROM ({sql}) ORDER BY arr, qid").fetchall()
    return [tuple(r) for r in res]


@pytest.mark.parametrize("kind", ["band", "select", "window"])
@pytest.mark.parametrize("output", ["pairs", "affected"])
def test_joins_match_duckdb(kind, output):
    @SETTINGS
    @given(w=workload(kind))
    def check(w):
        assert run_oracle(kind, output, *w) == sql_pairs(kind, output, *w)

    check()
