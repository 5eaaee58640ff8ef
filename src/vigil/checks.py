"""Conformance suite: any implementation of a family against that family's oracle.

Like river's ``check_estimator``: ``check_family(family, name, log)`` replays an event log through
the Engine twice — once with the family's oracle, once with implementation ``name`` (snapshotted
and restored at a cut point, so state()/from_state() is exercised too) — and compares the output
events. Exact families must agree row for row; approximate answers (quantiles; substream filters
with epsilon) are checked against their stated bound instead.

``logs(family)`` is a hypothesis strategy of event logs for a family: many queries, ties on range
endpoints, duplicate values, huge weights, threshold 1, empty windows, registrations and
terminations between elements, lookups at every position, rejected rows (null, NaN), seq columns
with gaps beyond 2^53, many keys, windows longer than the stream, batches of 1 row to the whole
log; ``random_log(family, seed, rows)`` draws the same shapes at thousands of rows (both in
:mod:`vigil.checks_logs`). Adding an algorithm to ``vigil.registry.IMPLEMENTATIONS`` is all it
takes for the test-suite to check it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from . import registry
from .checks_logs import STRATEGIES, Log, logs, pool_logs, random_log, with_seq  # noqa: F401  (the suite's API)
from .engine import Engine
from .events import output_rows


def run_log(log: Log, algos: dict[str, str] | None = None, cut: int | None = None,
            batch: int | Sequence[int] | None = None) -> list[dict]:
    """Replay ``log`` through an Engine in batches of ``batch`` rows (default ``log.batch``; a
    sequence: successive batch sizes, the last repeated); if ``cut`` is given, snapshot after that
    many rows, restore into a fresh Engine and go on. Returns the output rows."""
    sizes = list(np.atleast_1d(log.batch if batch is None else batch).astype(int))
    eng = Engine(algos, log.quantile_epsilon, log.join_output, columns=set(log.stream.column_names),
                 join_history=log.join_history)
    eng.add_operations(log.ops)
    outs = []
    n = log.stream.num_rows
    start = 0
    while start < n:
        b = sizes.pop(0) if len(sizes) > 1 else sizes[0]
        size = b if cut is None or start >= cut else min(b, cut - start)
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
    if skip:  # compare on the log without them: a row only they would reject is an element there
        log = dataclasses.replace(log, ops=[op for op in log.ops if (op.get("id") or (op.get("query") or {}).get("id")) not in skip])
        expected = run_log(log, {family: "oracle"})
        got = run_log(log, {family: name}, cut=cut)
    if family == "quantiles":
        _check_quantiles(log, expected, got, skip)
    elif family == "substream" and any(
        (op.get("query") or {}).get("epsilon") is not None for op in log.ops if op.get("op") == "register"
    ):
        _check_substream(log, expected, got)
    else:
        if family == "windows":
            got = _beyond_exact(log, expected, got)
        assert got == expected, _diff(expected, got)


def _beyond_exact(log: Log, expected: list[dict], got: list[dict]) -> list[dict]:
    """SUM and AVG are exact while the window's sum stays within 2^53 (docs/contract.md): where
    the window's absolute sum exceeds 2^53, a got value within 4 ulps of it counts as equal."""
    specs = {op["query"]["id"]: op["query"] for op in log.ops if op.get("op") == "register"}
    out = []
    for e, g in zip(expected, got, strict=False):
        a, b = e.get("value"), g.get("value")
        if (e["event"] == g["event"] == "answer" and e["id"] == g["id"] and e["at"] == g["at"]
                and isinstance(a, float | int) and isinstance(b, float | int) and a != b):
            big = _window_abs_sum(log, specs[e["id"]], e["at"], _starts(log)[e["id"]], expected)
            if big > 2**53 and abs(a - b) <= 4 * math.ulp(big):
                g = {**g, "value": a}
        out.append(g)
    return out + got[len(out):]


def _window_abs_sum(log: Log, q: dict, at: int, start: int, rows: list[dict]) -> float:
    seq, vals, ok = _elements(log, q["column"], rows)
    m = ok & (seq > start) & (seq <= at)
    if q.get("rows"):
        nl, nr = q["rows"]
        m &= (seq >= at - min(nl, 2**62) + 1) & (seq <= at - nr)
    else:
        tl, tr = q["time"]
        ts = _column(log.stream, q.get("time_column", "ts"))[0]
        applied = np.flatnonzero(~np.isin(seq, _rejected(rows)) & (seq <= at))
        if not len(applied):
            return 0.0
        now = ts[applied[-1]]
        m &= (ts > now - tl) & (ts <= now - tr)
    return math.fsum(np.abs(vals[m]).tolist())


def _diff(expected: list[dict], got: list[dict]) -> str:
    for i, (a, b) in enumerate(zip(expected, got, strict=False)):
        if a != b:
            return f"first difference at output {i}: expected {a}, got {b}"
    return f"lengths differ: expected {len(expected)} outputs, got {len(got)}"


def _starts(log: Log) -> dict[str, int]:
    return {op["query"]["id"]: op.get("at", 0) for op in log.ops if op.get("op") == "register"}


def _rejected(rows: list[dict]) -> np.ndarray:
    """Positions (seq) of the stream rows the run rejected."""
    return np.array([r["at"] for r in rows if r["event"] == "rejected" and r["id"] is None and r["at"] is not None],
                    np.int64)


def _elements(log: Log, column: str, rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seq, values, is_element) of every stream row: an element is a row with a valid ``column``
    value that the run did not reject."""
    seq = log.seqs()
    vals, ok = _column(log.stream, column)
    rej = _rejected(rows)
    if len(rej):
        ok &= ~np.isin(seq, rej)
    return seq, vals, ok


def _check_quantiles(log: Log, expected: list[dict], got: list[dict], skip: set[str] = frozenset()) -> None:
    from .checks_quantiles import check_shapes, shaped
    from .quantiles.oracle import rank_error_ok

    # alerts, rank and per-key queries: checks_quantiles; the others below
    shapes = {op["query"]["id"] for op in log.ops if op.get("op") == "register"
              and op["query"].get("type") == "quantile" and shaped(op["query"])}
    if shapes:
        check_shapes(log, expected, got, skip)
        expected = [r for r in expected if r["id"] not in shapes]
        got = [r for r in got if r["id"] not in shapes]
    # update events (notify queries) differ between implementations: each is checked on its own
    check_quantile_updates(log, got, set(skip) | shapes)
    pushed = ("update", "cluster", "cluster_update")
    expected = [r for r in expected if r["event"] not in pushed]
    got = [r for r in got if r["event"] not in pushed]
    assert [(r["event"], r["id"], r["at"]) for r in got] == [(r["event"], r["id"], r["at"]) for r in expected]
    # the log may mix families (the pipeline tests' logs): only its quantile queries are checked
    specs = {op["query"]["id"]: op["query"] for op in log.ops
             if op.get("op") == "register" and op["query"].get("type") == "quantile"}
    starts = _starts(log)
    cols = {}
    for e, g in zip(expected, got, strict=True):
        if g["event"] != "answer":
            assert g == e
            continue
        q = specs[g["id"]]
        if q["column"] not in cols:
            cols[q["column"]] = _elements(log, q["column"], got)
        seq, vals, ok = cols[q["column"]]
        lo = starts[g["id"]] + 1
        if q.get("rows"):
            lo = max(lo, g["at"] - q["rows"] + 1)
        window = vals[ok & (seq >= lo) & (seq <= g["at"])]
        eps = max(q["epsilon"], log.quantile_epsilon)
        ans = math.nan if g["value"] is None else g["value"]
        assert rank_error_ok(window, ans, q["phi"], eps), (g, sorted(window.tolist())[:200], eps)


def check_quantile_updates(log: Log, got: list[dict], skip: set[str] = frozenset()) -> None:
    """The notify contract (docs/contract.md), checked at every stream row: a notify query's
    updates start at its first element, each carries a value different from the previous one, and
    at every row from its first element until it ends the latest value is a valid answer over the
    query's window (within max(eps_q, summary eps)*N + 1 of rank max(1, ceil(phi*N)));
    queries without notify get no update. ``"notify": "cluster"`` queries: see
    :func:`_check_cluster_notify`. Positions are the rows' seq (the ``seq`` column, else row + 1);
    a row whose value is not a number, or that the run rejected, is not an element (a query's
    first element is its first element after its registration), but its position counts (it
    moves a rows window). Vectorized: O(rows) per update (ranks by prefix counts)."""
    # the log may mix families (the pipeline tests' logs): only its quantile queries are checked
    specs = {op["query"]["id"]: op["query"] for op in log.ops
             if op.get("op") == "register" and op["query"].get("type") == "quantile"}
    starts = _starts(log)
    ends: dict[str, int] = {}
    for op in log.ops:
        if op.get("op") == "terminate" and op["id"] in specs:
            ends.setdefault(op["id"], op.get("at", 0))
    # queries whose registration was rejected (a lookup after the end is rejected too: not those)
    applied = {r["id"] for r in got if r["event"] == "rejected" and "is not alive" not in (r.get("reason") or "")}
    applied |= set(skip)
    seq = log.seqs()
    last = int(seq[-1]) if len(seq) else 0
    ups: dict[str, list[tuple[int, float]]] = {}
    for r in got:
        if r["event"] == "update":
            ups.setdefault(r["id"], []).append((r["at"], math.nan if r["value"] is None else r["value"]))
    cols = {}
    firsts: dict[str, int | None] = {}  # position of a query's first element (None: none in its life)
    for qid, q in specs.items():
        if q["column"] not in cols:
            cols[q["column"]] = _elements(log, q["column"], got)
        ok = cols[q["column"]][2]
        live = np.flatnonzero(ok & (seq > starts[qid]) & (seq <= min(ends.get(qid, last), last)))
        firsts[qid] = int(seq[live[0]]) if len(live) else None
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
        end = min(ends.get(qid, last), last)
        if first is None:
            assert not u, f"{qid}: updates but no element in its life"
            continue
        assert u and u[0][0] == first, f"{qid}: first update {u[:1]} is not at its first element {first}"
        ats = [a for a, _ in u]
        assert ats == sorted(set(ats)), f"{qid}: several updates at one position or out of order: {ats}"
        assert all(a <= end for a in ats), f"{qid}: update after its end {end}"
        for (_, v0), (_, v1) in zip(u, u[1:], strict=False):
            assert q.get("notify") == "cluster" or v0 != v1, f"{qid}: an update repeats the value {v1}"
        _check_values(q, log.quantile_epsilon, seq, *cols[q["column"]][1:], start, first, end, u)


def _check_values(q: dict, summary_eps: float, seq: np.ndarray, vals: np.ndarray, ok: np.ndarray, start: int,
                  first: int, end: int, u: list[tuple[int, float]]) -> None:
    """At every row with position in [first, end], the latest of the updates ``u`` (position,
    value) is a valid answer for ``q`` over its window (the element ``ok`` rows in it)."""
    from .arrays import decimal_value, quantile_rank

    rows = np.flatnonzero((seq >= first) & (seq <= end))
    pos = seq[rows]
    lo = np.full(len(rows), start + 1, np.int64)
    if q.get("rows"):
        lo = np.maximum(lo, pos - min(int(q["rows"]), 2**62) + 1)
    lo_row = np.searchsorted(seq, lo, side="left")  # first row of each position's window
    which = np.searchsorted(np.array([a for a, _ in u], np.int64), pos, side="right") - 1
    eps = decimal_value(max(q["epsilon"], summary_eps))
    c_ok = np.r_[0, np.cumsum(ok)]
    for k in np.unique(which):
        sel = np.flatnonzero(which == k)
        v = u[k][1]
        a, b = int(lo_row[sel].min()), int(rows[sel].max()) + 1  # the rows these windows cover
        i_lo, i_hi = lo_row[sel] - a, rows[sel] + 1 - a
        n = c_ok[rows[sel] + 1] - c_ok[lo_row[sel]]
        if math.isnan(v):
            bad = np.flatnonzero(n > 0)
        else:
            lt = np.r_[0, np.cumsum(ok[a:b] & (vals[a:b] < v))]
            le = np.r_[0, np.cumsum(ok[a:b] & (vals[a:b] <= v))]
            n_lt, n_le = lt[i_hi] - lt[i_lo], le[i_hi] - le[i_lo]
            ranks = {int(m): quantile_rank(q["phi"], int(m)) for m in np.unique(n)}
            target = np.array([ranks[int(m)] for m in n], np.int64)
            dist = np.maximum(0, np.maximum(n_lt + 1 - target, target - n_le))
            bad = [j for j in np.flatnonzero((n == 0) | (n_le <= n_lt) | (dist > 0))
                   if n[j] == 0 or n_le[j] <= n_lt[j] or dist[j] > eps * int(n[j]) + 1]
        if len(bad):
            j = sel[bad[0]]
            window = vals[lo_row[j]:rows[j] + 1][ok[lo_row[j]:rows[j] + 1]]
            raise AssertionError((q["id"], int(pos[j]), u[k], sorted(window.tolist())[:200], float(eps)))


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
        last = int(log.seqs()[-1]) if log.stream.num_rows else 0
        end = min(ends.get(qid, last), last)
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
    rejected = _rejected(expected)
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
            aggs = _substream_aggs(log, q, g["at"], _starts(log)[g["id"]], rejected)
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


def _substream_aggs(log: Log, q: dict, at: int, start: int, rejected: np.ndarray) -> dict[str, float]:
    """Each key's COUNT/SUM over the query's window after position ``at`` (the rows not rejected:
    null values count as SQL NULLs)."""
    seq = log.seqs()
    idx = np.flatnonzero((seq <= at) & ~np.isin(seq, rejected))
    if not len(idx):
        return {}
    ts = _column(log.stream, q.get("time_column", "ts"))[0]
    now = ts[idx[-1]]
    sel = idx[(seq[idx] > start) & (ts[idx] > now - q["time"]) & (ts[idx] <= now)]
    if q.get("column"):
        vals = _column(log.stream, q["column"])[0][sel]
        vals = np.nan_to_num(vals) if q["agg"] == "sum" else (~np.isnan(vals)).astype(float)
    else:
        vals = np.ones(len(sel))
    out: dict[str, float] = {}
    for k, v in zip(log.stream.column(q["key"]).take(pa.array(sel, pa.int64())).to_pylist(), vals.tolist(), strict=True):
        out[str(k)] = out.get(str(k), 0.0) + v
    return out


def implementations(family: str) -> list[str]:
    """Every registered implementation of ``family`` (the oracle included: it is checked for
    snapshot/restore and batch-size independence)."""
    return sorted(registry.IMPLEMENTATIONS[family])
