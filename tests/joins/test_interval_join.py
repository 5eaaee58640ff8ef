"""Interval joins (issue 26 item 4): a window join's ``window: [lo, hi]`` pairs r and s with
lo <= s.T - r.T <= hi (Flink's interval join), in every window-join strategy, exact against the
oracle and against the definition, at several batch sizes, across snapshots, under max_window;
a number ``window: w`` keeps its meaning |r.T - s.T| < w."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, check_family, run_log
from vigil.specs import SpecError, parse_query

ALGOS = ["ssi", "hotspot", "join_first", "select_first", "dynamic"]


def _stream(n, seed):
    rng = np.random.default_rng(seed)
    return pa.table({"rel": rng.choice(["R", "S"], n), "k": rng.integers(0, 3, n).astype(str),
                     "A": rng.integers(0, 21, n) * 1.0, "ts": np.cumsum(rng.integers(0, 3, n)) * 0.5})


def _q(qid, window, **kw):
    return {"id": qid, "type": "window_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k",
            "window": window, **kw}


def _ops(max_window=None):
    mw = {} if max_window is None else {"max_window": max_window}
    return [{"op": "register", "at": 0, "query": _q("sym", 3.0, **mw)},
            {"op": "register", "at": 0, "query": _q("iv", [-1.5, 4], **mw)},
            {"op": "register", "at": 10, "query": _q("after", [1, 3.5], **mw)},  # s 1..3.5 after r
            {"op": "register", "at": 20, "query": _q("before", [-4, -0.5], left_range={"A": [2, 17]}, **mw)},
            {"op": "register", "at": 30, "query": _q("tie", [0, 0], **mw)},
            {"op": "terminate", "at": 250, "id": "iv"}]


def _definition(t, ops, qid):
    rel, k, ts, a = (t.column(c).to_pylist() for c in ("rel", "k", "ts", "A"))
    reg = next(o for o in ops if o["op"] == "register" and o["query"]["id"] == qid)
    q = reg["query"]
    lo, hi = q["window"]
    end = next((o["at"] for o in ops if o["op"] == "terminate" and o["id"] == qid), 10**9)
    rng = q.get("left_range", {}).get("A", [-np.inf, np.inf])
    out = set()
    for j in range(reg["at"], min(end, len(rel))):
        for i in range(j):
            if rel[i] == rel[j] or k[i] != k[j]:
                continue
            r, s = (i, j) if rel[i] == "R" else (j, i)
            if lo <= ts[s] - ts[r] <= hi and rng[0] <= a[r] <= rng[1]:
                out.add((r + 1, s + 1))
    return out


@pytest.mark.timeout(900)
@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("max_window", [None, 5.0])
def test_interval_joins_are_exact(algo, max_window):
    t = _stream(400, 21)
    ops = _ops(max_window)
    want = run_log(Log(t, ops), {"joins": "oracle"})
    for qid in ("iv", "after", "before", "tie"):
        pairs = {(r["r"], r["s"]) for r in want if r["event"] == "join" and r["id"] == qid}
        assert pairs == _definition(t, ops, qid), qid
        assert len(pairs) > 5, qid
    for batch, cut in ((1, None), (9, 200), (400, 133)):
        assert run_log(Log(t, ops), {"joins": algo}, batch=batch, cut=cut) == want, (algo, batch)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("algo", ALGOS)
def test_interval_joins_in_affected_mode(algo):
    import dataclasses

    log = dataclasses.replace(Log(_stream(300, 5), _ops()), join_output="affected", batch=17)
    check_family("joins", algo, log, cut=100)


def test_interval_window_specs():
    for w, msg in (([3, 1], "inverted interval"), ([1], "two finite"), ([0, float("inf")], "two finite")):
        with pytest.raises(SpecError, match=msg):
            parse_query(_q("x", w))
    with pytest.raises(SpecError, match="must exceed the window's reach 10"):
        parse_query(_q("x", [-5, 10], max_window=10))
    assert parse_query(_q("x", [-5, 10], max_window=10.5)).reach() == 10
    assert parse_query(_q("x", 4)).window == 4
