"""Conformance suite: any implementation of a family against that family's oracle.

Like river's ``check_estimator``: ``check_family(family, name, log)`` replays an event log through
the Engine twice — once with the family's oracle, once with implementation ``name`` (snapshotted
and restored at a cut point, so state()/from_state() is exercised too) — and compares the output
events. Exact families must agree row for row; approximate answers (quantiles; substream filters
with epsilon) are checked against their stated bound instead.

``logs(family)`` is a hypothesis strategy of event logs for a family: many queries, ties on range
endpoints, duplicate values, huge weights, threshold 1, empty windows, registrations and
terminations between elements, lookups at every position. Adding an algorithm to
``vigil.registry.IMPLEMENTATIONS`` is all it takes for the test-suite to check it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from . import registry
from .engine import Engine
from .events import output_rows


@dataclass
class Log:
    stream: pa.Table
    ops: list[dict[str, Any]] = field(default_factory=list)
    quantile_epsilon: float = 0.05
    join_output: str = "pairs"
    join_history: str | None = None  # Engine(join_history=...): "COLUMN:H" (vigil.history)


def run_log(log: Log, algos: dict[str, str] | None = None, cut: int | None = None, batch: int = 7) -> list[dict]:
    """Replay ``log`` through an Engine in batches of ``batch`` rows; if ``cut`` is given, snapshot
    after that many rows, restore into a fresh Engine and go on. Returns the output rows."""
    eng = Engine(algos, log.quantile_epsilon, log.join_output, columns=set(log.stream.column_names),
                 join_history=log.join_history)
    eng.add_operations(log.ops)
    outs = []
    n = log.stream.num_rows
    start = 0
    while start < n:
        size = batch if cut is None or start >= cut else min(batch, cut - start)
        outs.append(eng.process(log.stream.slice(start, size)))
        start += size
        if cut is not None and start == cut:
            eng = Engine.restore(eng.snapshot())
    outs.append(eng.finish())
    c = eng.counts
    assert c["rows_in"] == c["rows_applied"] + c["rows_rejected"], c
    assert c["ops_in"] == c["ops_applied"] + c["ops_rejected"], c
    return [r for t in outs for r in output_rows(t)]


def check_family(family: str, name: str, log: Log, cut: int | None = None) -> None:
    """Raise AssertionError when implementation ``name`` of ``family`` disagrees with the oracle."""
    expected = run_log(log, {family: "oracle"})
    got = run_log(log, {family: name}, cut=cut)
    # queries the implementation declares it cannot serve are out of its contract
    skip = {r["id"] for r in got if r["event"] == "rejected" and (r.get("reason") or "").startswith("unsupported by")}
    if skip:
        expected = [r for r in expected if r["id"] not in skip]
        got = [r for r in got if r["id"] not in skip]
    if family == "quantiles":
        _check_quantiles(log, expected, got, skip)
    elif family == "substream" and any(
        (op.get("query") or {}).get("epsilon") is not None for op in log.ops if op.get("op") == "register"
    ):
        _check_substream(log, expected, got)
    else:
        assert got == expected, _diff(expected, got)


def _diff(expected: list[dict], got: list[dict]) -> str:
    for i, (a, b) in enumerate(zip(expected, got, strict=False)):
        if a != b:
            return f"first difference at output {i}: expected {a}, got {b}"
    return f"lengths differ: expected {len(expected)} outputs, got {len(got)}"


def _starts(log: Log) -> dict[str, int]:
    return {op["query"]["id"]: op.get("at", 0) for op in log.ops if op.get("op") == "register"}


def _check_quantiles(log: Log, expected: list[dict], got: list[dict], skip: set[str] = frozenset()) -> None:
    from .quantiles.oracle import rank_error_ok

    # update events (notify queries) differ between implementations: each is checked on its own
    check_quantile_updates(log, got, skip)
    pushed = ("update", "cluster", "cluster_update")
    expected = [r for r in expected if r["event"] not in pushed]
    got = [r for r in got if r["event"] not in pushed]
    assert [(r["event"], r["id"], r["at"]) for r in got] == [(r["event"], r["id"], r["at"]) for r in expected]
    specs = {op["query"]["id"]: op["query"] for op in log.ops if op.get("op") == "register"}
    starts = _starts(log)
    seq = np.arange(1, log.stream.num_rows + 1)
    for e, g in zip(expected, got, strict=True):
        if g["event"] != "answer":
            assert g == e
            continue
        q = specs[g["id"]]
        vals, ok = _column(log.stream, q["column"])
        lo = starts[g["id"]] + 1
        if q.get("rows"):
            lo = max(lo, g["at"] - q["rows"] + 1)
        window = vals[ok & (seq >= lo) & (seq <= g["at"])]
        eps = max(q["epsilon"], log.quantile_epsilon)
        ans = math.nan if g["value"] is None else g["value"]
        assert rank_error_ok(window, ans, q["phi"], eps), (g, sorted(window.tolist()), eps)


def check_quantile_updates(log: Log, got: list[dict], skip: set[str] = frozenset()) -> None:
    """The notify contract (docs/contract.md), replayed element by element: a notify query's
    updates start at its first element, each carries a value different from the previous one, and
    at every position from its first element until it ends the latest value is a valid answer
    over the query's window (within max(eps_q, summary eps)*N + 1 of rank max(1, ceil(phi*N)));
    queries without notify get no update. ``"notify": "cluster"`` queries: see
    :func:`_check_cluster_notify`. Rows of the stream are assumed to have seq = row + 1; a row
    whose value is not a number is rejected: not an element (a query's first element is its first
    applied row), but its position counts (it moves a rows window)."""
    from .quantiles.oracle import rank_error_ok

    specs = {op["query"]["id"]: op["query"] for op in log.ops if op.get("op") == "register"}
    starts = _starts(log)
    ends: dict[str, int] = {}
    for op in log.ops:
        if op.get("op") == "terminate" and op["id"] in specs:
            ends.setdefault(op["id"], op.get("at", 0))
    # queries whose registration was rejected (a lookup after the end is rejected too: not those)
    applied = {r["id"] for r in got if r["event"] == "rejected" and "is not alive" not in (r.get("reason") or "")}
    applied |= set(skip)
    n_rows = log.stream.num_rows
    ups: dict[str, list[tuple[int, float]]] = {}
    for r in got:
        if r["event"] == "update":
            ups.setdefault(r["id"], []).append((r["at"], math.nan if r["value"] is None else r["value"]))
    firsts: dict[str, int | None] = {}  # position of a query's first element (None: none in its life)
    for qid, q in specs.items():
        live = np.flatnonzero(_column(log.stream, q["column"])[1][starts[qid]:min(ends.get(qid, n_rows), n_rows)])
        firsts[qid] = starts[qid] + 1 + int(live[0]) if len(live) else None
    follow = _check_cluster_notify(log, got, specs, firsts, ends, applied)
    for qid, q in specs.items():
        if qid in applied:
            continue
        u = ups.get(qid, [])
        if q.get("notify") == "cluster":
            assert not u, f"{qid}: update events for a notify 'cluster' query"
            u = follow.get(qid, [])
        if not q.get("notify"):
            assert not u, f"{qid}: updates for a query without notify"
            continue
        start, first = starts[qid], firsts[qid]
        end = min(ends.get(qid, n_rows), n_rows)
        if first is None:
            assert not u, f"{qid}: updates but no element in its life"
            continue
        assert u and u[0][0] == first, f"{qid}: first update {u[:1]} is not at its first element {first}"
        ats = [a for a, _ in u]
        assert ats == sorted(set(ats)), f"{qid}: several updates at one position or out of order: {ats}"
        assert all(a <= end for a in ats), f"{qid}: update after its end {end}"
        for (_, v0), (_, v1) in zip(u, u[1:], strict=False):
            assert q.get("notify") == "cluster" or v0 != v1, f"{qid}: an update repeats the value {v1}"
        vals, ok = _column(log.stream, q["column"])
        eps = max(q["epsilon"], log.quantile_epsilon)
        k = 0
        for n in range(first, end + 1):
            while k + 1 < len(u) and u[k + 1][0] <= n:
                k += 1
            lo = start + 1
            if q.get("rows"):
                lo = max(lo, n - q["rows"] + 1)
            window = vals[lo - 1:n][ok[lo - 1:n]]
            assert rank_error_ok(window, u[k][1], q["phi"], eps), (qid, n, u[k], sorted(window.tolist()), eps)


def _check_cluster_notify(log: Log, got: list[dict], specs: dict, firsts: dict, ends: dict,
                          applied: set) -> dict[str, list[tuple[int, float]]]:
    """``"notify": "cluster"`` queries (docs/contract.md): ``cluster`` events name a query's cluster
    (the first at its first element, then one per move, each to another cluster, none after its
    end), ``cluster_update`` events (id null) a cluster's value (one per cluster and position,
    consecutive values differ). Returns, per such query, the value it shows as (position, value)
    at each position where it may change (its cluster events and its clusters' updates), which
    :func:`check_quantile_updates` checks at every position like a query's own updates."""
    cl: dict[str, list[tuple[int, int]]] = {}
    cu: dict[int, list[tuple[int, float]]] = {}
    for r in got:
        if r["event"] == "cluster":
            assert specs.get(r["id"], {}).get("notify") == "cluster", f"cluster event for {r['id']}"
            cl.setdefault(r["id"], []).append((r["at"], r["cluster"]))
        elif r["event"] == "cluster_update":
            assert r["id"] is None, r
            cu.setdefault(r["cluster"], []).append((r["at"], math.nan if r["value"] is None else r["value"]))
    for c, u in cu.items():
        ats = [a for a, _ in u]
        assert ats == sorted(set(ats)), f"cluster {c}: several updates at one position or out of order: {ats}"
        for (_, v0), (_, v1) in zip(u, u[1:], strict=False):
            assert v0 != v1, f"cluster {c}: an update repeats the value {v1}"
    follow: dict[str, list[tuple[int, float]]] = {}
    for qid, moves in cl.items():
        if qid in applied:
            continue
        ats = [a for a, _ in moves]
        assert ats == sorted(set(ats)), f"{qid}: several cluster events at one position or out of order: {ats}"
        end = min(ends.get(qid, log.stream.num_rows), log.stream.num_rows)
        assert ats[0] == firsts[qid] and ats[-1] <= end, f"{qid}: cluster events {moves} outside its life"
        for (_, c0), (_, c1) in zip(moves, moves[1:], strict=False):
            assert c0 != c1, f"{qid}: a cluster event repeats cluster {c1}"
        # the value q shows: at each of its moves and each update of its cluster while it is in it
        pts = []
        for i, (a, c) in enumerate(moves):
            b = moves[i + 1][0] if i + 1 < len(moves) else end + 1
            hist = cu.get(c, [])
            before = [v for t, v in hist if t <= a]
            assert before, f"{qid}: cluster {c} has no value at {a}"
            pts.append((a, before[-1]))
            pts += [(t, v) for t, v in hist if a < t < b]
        follow[qid] = pts
    return follow


def _check_substream(log: Log, expected: list[dict], got: list[dict]) -> None:
    assert [(r["event"], r["id"], r["at"]) for r in got] == [(r["event"], r["id"], r["at"]) for r in expected]
    specs = {op["query"]["id"]: op["query"] for op in log.ops if op.get("op") == "register"}
    for e, g in zip(expected, got, strict=True):
        if g["event"] != "answer" or specs[g["id"]].get("epsilon") is None:
            assert g == e, (e, g)
            continue
        q = specs[g["id"]]
        exact, cand = set(e["value"]), set(g["value"])
        assert exact <= cand, f"{g['id']} at {g['at']}: missed keys {exact - cand}"
        # every extra key must satisfy the relaxed range: recompute its aggregate
        extra = cand - exact
        if extra:
            aggs = _substream_aggs(log, q, g["at"], _starts(log)[g["id"]])
            lo, hi = q["range"]
            eps = q["epsilon"]
            for k in extra:
                v = aggs.get(k)
                assert v is not None, f"reported key {k!r} has no element in the window"
                if lo is not None:
                    assert v > lo * (1 - eps), (k, v, lo, eps)
                if hi is not None:
                    assert v < hi * (1 + eps), (k, v, hi, eps)


def _column(t: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    from .events import numeric_column

    vals, bad = numeric_column(t, name)
    ok = np.ones(len(vals), bool)
    if bad:
        ok[list(bad)] = False
    return vals, ok


def _substream_aggs(log: Log, q: dict, at: int, start: int) -> dict[str, float]:
    t = log.stream.slice(0, min(at, log.stream.num_rows))
    ts, _ = _column(t, q.get("time_column", "ts"))
    if not len(ts):
        return {}
    now = ts[-1]
    vals = _column(t, q["column"])[0] if q.get("column") else np.ones(len(ts))
    keys = [str(k) for k in t.column(q["key"]).to_pylist()]
    out: dict[str, float] = {}
    for i in range(len(ts)):
        if i + 1 > start and now - q["time"] < ts[i] <= now:
            out[keys[i]] = out.get(keys[i], 0.0) + vals[i]
    return out


# ----------------------------------------------------------------------------- strategies


def _ops_strategy(draw, n: int, make_query, lookups: bool, max_queries: int = 12) -> list[dict]:
    ops: list[dict] = []
    ids: list[str] = []
    for i in range(draw(st.integers(1, max_queries))):
        at = draw(st.integers(0, n))
        q = make_query(draw)
        q["id"] = f"q{i}"
        ops.append({"op": "register", "at": at, "query": q})
        ids.append(q["id"])
        if draw(st.integers(0, 3)) == 0:
            ops.append({"op": "terminate", "at": draw(st.integers(at, n)), "id": q["id"]})
    if lookups and ids:
        for at in range(n + 1):
            for qid in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)):
                ops.append({"op": "lookup", "at": at, "id": qid})
    ops.sort(key=lambda o: o["at"])  # file order among equal at is kept (stable)
    return ops


_SMALL = st.integers(0, 6)  # small domains: many ties on endpoints and duplicate values


def _range(draw, dom=_SMALL, unbounded=True):
    a, b = sorted((draw(dom), draw(dom)))
    if unbounded and draw(st.integers(0, 5)) == 0:
        a = None
    if unbounded and draw(st.integers(0, 5)) == 0:
        b = None
    return [a, b]


@st.composite
def threshold_logs(draw, max_rows: int = 40) -> Log:
    d = draw(st.integers(1, 3))
    n = draw(st.integers(0, max_rows))
    cols = {f"x{j}": draw(st.lists(_SMALL, min_size=n, max_size=n)) for j in range(d)}
    cols["w"] = draw(st.lists(st.sampled_from([1, 1, 2, 3, 7, 10**9]), min_size=n, max_size=n))
    cols["k"] = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    dims = [f"x{j}" for j in range(d)]

    def make(draw):
        where: dict[str, Any] = {c: _range(draw) for c in dims}
        if draw(st.booleans()):
            where["k"] = draw(st.sampled_from(["a", "b"]))
        q = {"type": "threshold", "where": where, "threshold": draw(st.sampled_from([1, 1, 2, 3, 5, 10, 40, 10**9, 3 * 10**9]))}
        if draw(st.booleans()):
            q["weight"] = "w"
        return q

    return Log(pa.table(cols) if n else pa.table({c: pa.array([], pa.int64()) for c in [*dims, "w"]} | {"k": pa.array([], pa.string())}),
               _ops_strategy(draw, n, make, lookups=False, max_queries=16))


def _times(draw, n):
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 5]), min_size=n, max_size=n))
    return np.cumsum(steps).tolist()


@st.composite
def window_logs(draw, max_rows: int = 30) -> Log:
    n = draw(st.integers(0, max_rows))
    v = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))

    def make(draw):
        agg = draw(st.sampled_from(["sum", "count", "avg", "min", "max", "quantile"]))
        q: dict[str, Any] = {"type": "window_aggregate", "agg": agg, "column": "v"}
        if agg == "quantile":
            q["phi"] = draw(st.sampled_from([0.1, 0.25, 0.5, 0.9, 1.0]))
        if draw(st.booleans()):
            nr = draw(st.integers(0, 4))
            q["rows"] = [nr + draw(st.integers(1, 10)), nr]
        else:
            tr = draw(st.integers(0, 3))
            q["time"] = [tr + draw(st.integers(1, 8)), tr]
        return q

    return Log(pa.table({"v": pa.array(v, pa.int64()), "ts": pa.array(_times(draw, n), pa.int64())}),
               _ops_strategy(draw, n, make, lookups=True))


@st.composite
def substream_logs(draw, max_rows: int = 30, approximate: bool = True) -> Log:
    n = draw(st.integers(0, max_rows))
    v = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    k = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=n, max_size=n))

    def make(draw):
        agg = draw(st.sampled_from(["count", "sum"]))
        q: dict[str, Any] = {"type": "substream_filter", "agg": agg, "key": "k", "time": draw(st.integers(1, 8))}
        if agg == "sum" or draw(st.booleans()):
            q["column"] = "v"
        lo, hi = draw(st.integers(0, 6)), None
        if draw(st.booleans()):
            lo, hi = None, draw(st.integers(1, 12))
        elif not approximate or draw(st.booleans()):
            hi = lo + draw(st.integers(1, 10))
        q["range"] = [lo, hi]
        if approximate and (lo is None or hi is None) and draw(st.booleans()):
            q["epsilon"] = draw(st.sampled_from([0.1, 0.5]))
        return q

    return Log(pa.table({"k": pa.array(k, pa.string()), "v": pa.array(v, pa.int64()), "ts": pa.array(_times(draw, n), pa.int64())}),
               _ops_strategy(draw, n, make, lookups=True))


@st.composite
def join_logs(draw, max_rows: int = 30, output: str = "pairs") -> Log:
    n = draw(st.integers(0, max_rows))
    rel = draw(st.lists(st.sampled_from(["R", "S"]), min_size=n, max_size=n))
    cols = {
        "rel": pa.array(rel, pa.string()),
        "B": pa.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), pa.int64()),
        "A": pa.array(draw(st.lists(_SMALL, min_size=n, max_size=n)), pa.int64()),
        "C": pa.array(draw(st.lists(_SMALL, min_size=n, max_size=n)), pa.int64()),
        "T": pa.array(_times(draw, n), pa.int64()),
    }

    def make(draw):
        kind = draw(st.sampled_from(["band_join", "select_join", "window_join"]))
        q: dict[str, Any] = {"type": kind, "left": "R", "right": "S", "left_on": "B", "right_on": "B"}
        if kind == "band_join":
            a = draw(st.integers(-3, 3))
            q["band"] = [a, a + draw(st.integers(0, 3))]
        else:
            if draw(st.booleans()):
                q["left_range"] = {"A": _range(draw)}
            if draw(st.booleans()):
                q["right_range"] = {"C": _range(draw)}
            if kind == "window_join":
                q["window"] = draw(st.integers(1, 6))
                q["time_column"] = "T"
        return q

    return Log(pa.table(cols), _ops_strategy(draw, n, make, lookups=False), join_output=output)


@st.composite
def quantile_logs(draw, max_rows: int = 40) -> Log:
    n = draw(st.integers(0, max_rows))
    v = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))

    def make(draw):
        q: dict[str, Any] = {"type": "quantile", "column": "v", "phi": draw(st.sampled_from([0.01, 0.25, 0.5, 0.75, 0.99, 1.0])),
                             "epsilon": draw(st.sampled_from([0.01, 0.05, 0.1]))}
        if draw(st.booleans()):
            q["rows"] = draw(st.integers(1, 15))
        if draw(st.booleans()):
            q["notify"] = draw(st.sampled_from([True, "cluster"]))
        return q

    return Log(pa.table({"v": pa.array(v, pa.int64())}), _ops_strategy(draw, n, make, lookups=True),
               quantile_epsilon=draw(st.sampled_from([0.01, 0.05])))


STRATEGIES = {
    "threshold": threshold_logs,
    "windows": window_logs,
    "substream": substream_logs,
    "joins": join_logs,
    "quantiles": quantile_logs,
}


def logs(family: str, **kw) -> st.SearchStrategy[Log]:
    return STRATEGIES[family](**kw)


def implementations(family: str) -> list[str]:
    """Every registered implementation of ``family`` (the oracle included: it is checked for
    snapshot/restore and batch-size independence)."""
    return sorted(registry.IMPLEMENTATIONS[family])
