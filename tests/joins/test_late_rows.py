"""Window joins over rows that arrived out of time order before the join could judge them
(issue 22, defect 7): a window join registered after its relations' rows sees every earlier row
it is entitled to (docs/contract.md: the pairs each tuple arriving after registration creates,
the other tuple possibly older), whatever the order of their times, as a select join over the
same relations does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, run_log


def _q(qid, kind, window=None, max_window=None):
    q = {"id": qid, "type": kind, "left": "R", "right": "S", "left_on": "k", "right_on": "k"}
    if kind == "window_join":
        q.update(window=window, time_column="ts")
        if max_window is not None:
            q["max_window"] = max_window
    return q


def _reg(at, q):
    return {"op": "register", "at": at, "query": q}


def _pairs(out, qid):
    return sorted((r["r"], r["s"]) for r in out if r["event"] == "join" and r["id"] == qid)


@pytest.mark.timeout(300)
def test_the_issue_repro_window_join_sees_the_older_rows():
    """R(10), S(4), R(10), both joins registered at 2: (r=3, s=2) is owed to both (gap 6 < 10)."""
    t = pa.table({"rel": ["R", "S", "R"], "k": ["1", "1", "1"], "ts": [10.0, 4.0, 10.0]})
    ops = [_reg(2, _q("sel", "select_join")), _reg(2, _q("win", "window_join", 10))]
    for algo in ("oracle", "ssi", "dynamic"):
        out = run_log(Log(t, ops), {"joins": algo})
        assert _pairs(out, "sel") == [(3, 2)], algo
        assert _pairs(out, "win") == [(3, 2)], algo
        assert not any(r["event"] == "rejected" for r in out)


def _stream(n, seed, skew=((100, 700), (800, 900))):
    """Times jitter by a few units; between the positions of each ``skew`` pair R's clock runs
    15 ahead of S's, so across relations the times go back and forth."""
    rng = np.random.default_rng(seed)
    rel = np.where(rng.random(n) < 0.5, "R", "S")
    pos = np.arange(n)
    ahead = (rel == "R") & np.any([(pos >= a) & (pos < b) for a, b in skew], axis=0)
    ts = pos + np.where(ahead, 15.0, 0.0) + rng.integers(0, 4, n)
    return pa.table({"rel": rel, "k": rng.integers(0, 4, n).astype(str), "ts": ts})


@pytest.mark.timeout(600)
@pytest.mark.parametrize("algo", ["oracle", "ssi", "join_first", "dynamic"])
def test_late_window_joins_get_the_select_joins_pairs_within_the_window(algo):
    """Window joins registered late (a new group, and an existing group that had no query for a
    while) output exactly the select join's pairs (same relations, same rows applied) whose times
    are within the window; rows the window group rejects (going back in time while it has a
    query) are rejected for every group, so the select join does not see them either."""
    t = _stream(1500, seed=4)
    ops = [_reg(0, _q("w0", "window_join", 6.0)), _reg(0, _q("s0", "select_join")),
           {"op": "terminate", "at": 100, "id": "w0"}, {"op": "terminate", "at": 100, "id": "s0"},
           _reg(700, _q("w1", "window_join", 30.0)), _reg(700, _q("s1", "select_join")),  # existing groups
           _reg(900, _q("w2", "window_join", 30.0, max_window=40.0)), _reg(900, _q("s2", "select_join"))]
    out = run_log(Log(t, ops), {"joins": algo}, batch=61)
    ts = np.asarray(t.column("ts"))
    for w, s, window in (("w0", "s0", 6.0), ("w1", "s1", 30.0), ("w2", "s2", 30.0)):
        want = [(r, s_) for r, s_ in _pairs(out, s) if abs(ts[r - 1] - ts[s_ - 1]) < window]
        assert _pairs(out, w) == want, (algo, w)
        assert len(want) > 20, (w, len(want))
    assert any(r["event"] == "rejected" for r in out)  # rows going back while a window join is alive


@pytest.mark.timeout(300)
def test_late_rows_survive_a_snapshot():
    t = _stream(900, seed=5, skew=((50, 600), (700, 800)))
    ops = [_reg(0, _q("w0", "window_join", 6.0)), {"op": "terminate", "at": 50, "id": "w0"},
           _reg(600, _q("w1", "window_join", 30.0)), _reg(800, _q("w2", "window_join", 25.0, max_window=30.0))]
    whole = run_log(Log(t, ops), {"joins": "ssi"})
    assert run_log(Log(t, ops), {"joins": "ssi"}, cut=350) == whole
    assert run_log(Log(t, ops), {"joins": "oracle"}) == whole
