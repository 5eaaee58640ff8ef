"""vigil.checks for the quantile query shapes: alerts (``above`` / ``below``, ``rearm``), rank
queries (``rank_of``) and per-key queries (``where``, ``group_by``), docs/contract.md.

:func:`check_shapes` checks a run's events of those queries against the contract directly from
the log (the oracle's run gives the expected answer positions and key sets, which are exact):

* answers: the same (position, keys) as the oracle's; each value valid over its window
  (quantiles: rank within e*N + 1 of max(1, ceil(phi*N)); ranks: |f*N - #(values <= x)| <= e*N + 1);
* per-key notify updates: per (query, key), the first at the key's first element after the
  registration, no value repeated, and after every element of the key the latest value valid;
* alerts: per (query, key), alert / clear alternate starting with alert, at most one per
  position, within the query's life; each event's value is valid at its position and on its
  side of the bound (alert: > above / < below; clear: <= rearm / >= rearm); and at every position
  where every element within e*N + 1 ranks of the target is beyond the bound the query is
  alerted, where every such element is on the rearm side it is armed.

Windows: a query without where/group_by has positional windows (elements with seq in
[max(start+1, n-rows+1), n]); a per-key query's window is its key's matching elements after its
registration, the last ``rows`` of them. Straightforward loops: O(positions x window) per query,
for the logs of the conformance suite.
"""

from __future__ import annotations

import math

import numpy as np

_SEP = "\x1f"


def shaped(q: dict) -> bool:
    """Is ``q`` (a quantile spec) one of the shapes this module checks?"""
    return any(q.get(k) is not None for k in ("rank_of", "above", "below", "where", "group_by"))


def _keyed(q: dict) -> bool:
    return q.get("where") is not None or q.get("group_by") is not None


def _by(q: dict) -> list[str]:
    g = q.get("group_by")
    return [] if g is None else [g] if isinstance(g, str) else list(g)


def _substreams(log, q: dict, ok: np.ndarray) -> dict[tuple, np.ndarray]:
    """Key texts -> the row indices of the query's matching elements with that key (any start)."""
    from .events import key_column, key_equals, numeric_column

    t = log.stream
    m = ok.copy()
    for c, x in (q.get("where") or {}).items():
        if isinstance(x, list):
            v, bad = numeric_column(t, c)
            inr = np.ones(len(v), bool)
            if bad:
                inr[list(bad)] = False
            lo = -math.inf if x[0] is None else x[0]
            hi = math.inf if x[1] is None else x[1]
            m &= inr & (np.nan_to_num(v, nan=-math.inf) >= lo) & (v <= hi)
        else:
            m &= key_equals(t, c, x)
    by = _by(q)
    texts = [key_column(t, c)[0] for c in by]
    out: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(m).tolist():
        out.setdefault(tuple(str(tx[i]) for tx in texts), []).append(i)
    return {k: np.array(v, np.int64) for k, v in out.items()}


class _Windows:
    """The windows of one query: ``at(n, key)`` -> the window's values after position n."""

    def __init__(self, log, q: dict, start: int, seq, vals, ok) -> None:
        self.q, self.start, self.seq, self.vals, self.ok = q, start, seq, vals, ok
        self.rows = q.get("rows")
        if _keyed(q):
            subs = _substreams(log, q, ok)
            self.subs = {k: idx[seq[idx] > start] for k, idx in subs.items()}
            self.subs = {k: v for k, v in self.subs.items() if len(v)}
        else:
            self.subs = None

    def elements(self, key: tuple | None) -> np.ndarray:
        """Row indices of the elements of the query's (key's) substream (keyed) or of the query."""
        if self.subs is None:
            return np.flatnonzero(self.ok & (self.seq > self.start))
        return self.subs.get(key, np.empty(0, np.int64))

    def at(self, n: int, key: tuple | None = None) -> np.ndarray:
        if self.subs is None:
            lo = self.start + 1 if not self.rows else max(self.start + 1, n - int(self.rows) + 1)
            return self.vals[self.ok & (self.seq >= lo) & (self.seq <= n)]
        idx = self.subs.get(key, np.empty(0, np.int64))
        idx = idx[self.seq[idx] <= n]
        if self.rows:
            idx = idx[-int(self.rows):]
        return self.vals[idx]


def _valid(q: dict, window: np.ndarray, v: float, eps: float) -> bool:
    from .quantiles.oracle import rank_error_ok
    from .quantiles.rank import rank_ok

    if q.get("rank_of") is not None:
        return rank_ok(window, v, float(q["rank_of"]), eps)
    return rank_error_ok(window, v, q["phi"], eps)


def _band(q: dict, window: np.ndarray, eps: float) -> tuple[float, float, np.ndarray] | None:
    """The (lowest, highest) value an answer may have over ``window`` (None if empty)."""
    from .arrays import decimal_value, quantile_rank

    w = np.sort(window)
    n = len(w)
    if not n:
        return None
    t = quantile_rank(q["phi"], n)
    d = int(math.floor(decimal_value(eps) * n + 1))
    return float(w[max(1, t - d) - 1]), float(w[min(n, t + d) - 1]), w


def _starts(log) -> dict[str, int]:
    return {op["query"]["id"]: op.get("at", 0) for op in log.ops if op.get("op") == "register"}


def _elements(log, column: str, rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seq, values, is_element) of every stream row (as vigil.checks: a valid value, not rejected)."""
    from .events import numeric_column

    seq = log.seqs()
    vals, bad = numeric_column(log.stream, column)
    ok = np.ones(len(vals), bool)
    if bad:
        ok[list(bad)] = False
    rej = [r["at"] for r in rows if r["event"] == "rejected" and r["id"] is None and r["at"] is not None]
    if rej:
        ok &= ~np.isin(seq, np.array(rej, np.int64))
    return seq, vals, ok


def check_shapes(log, expected: list[dict], got: list[dict], skip: set[str] = frozenset()) -> None:
    specs = {op["query"]["id"]: op["query"] for op in log.ops
             if op.get("op") == "register" and op["query"].get("type") == "quantile" and shaped(op["query"])}
    if not specs:
        return
    rejected_q = {r["id"] for r in got if r["event"] == "rejected" and r["id"] in specs
                  and "is not alive" not in (r.get("reason") or "")} | set(skip)
    starts = _starts(log)
    ends: dict[str, int] = {}
    for op in log.ops:
        if op.get("op") == "terminate" and op["id"] in specs:
            ends.setdefault(op["id"], op.get("at", 0))
    seq = log.seqs()
    last = int(seq[-1]) if len(seq) else 0
    mine = ("answer", "update", "alert", "clear")
    e_ans = [(r["id"], r["at"], tuple(r.get("keys") or ()), r["value"] if isinstance(r.get("value"), list) else None)
             for r in expected if r["event"] == "answer" and r["id"] in specs]
    g_ans = [(r["id"], r["at"], tuple(r.get("keys") or ()), r["value"] if isinstance(r.get("value"), list) else None)
             for r in got if r["event"] == "answer" and r["id"] in specs]
    assert g_ans == e_ans, f"per-key answers differ from the oracle's: {g_ans[:5]} vs {e_ans[:5]}"
    cols: dict[str, tuple] = {}
    wins: dict[str, _Windows] = {}
    for qid, q in specs.items():
        if qid in rejected_q:
            continue
        if q["column"] not in cols:
            cols[q["column"]] = _elements(log, q["column"], got)
        wins[qid] = _Windows(log, q, starts[qid], *cols[q["column"]])
    pushed: dict[tuple[str, tuple], list[dict]] = {}
    for r in got:
        if r["id"] in wins and r["event"] in mine:
            q, eps = specs[r["id"]], max(specs[r["id"]]["epsilon"], log.quantile_epsilon)
            if r["event"] == "answer":
                if isinstance(r["value"], list):
                    continue  # no key with an element: compared with the oracle above
                w = wins[r["id"]].at(r["at"], tuple(r["keys"]) if r.get("keys") is not None else
                                     (() if _keyed(q) else None))
                v = math.nan if r["value"] is None else r["value"]
                assert _valid(q, w, v, eps), (r, sorted(w.tolist())[:100], eps)
            else:
                key = tuple(r["keys"]) if r.get("keys") is not None else (() if _keyed(q) else None)
                pushed.setdefault((r["id"], key), []).append(r)
        elif r["id"] in specs and r["event"] in ("update", "alert", "clear") and r["id"] not in rejected_q:
            raise AssertionError(f"event of a query the run rejected: {r}")
    for qid, q in specs.items():
        if qid in rejected_q:
            continue
        alert = q.get("above") is not None or q.get("below") is not None
        end = min(ends.get(qid, last), last)
        keys = list(wins[qid].subs) if wins[qid].subs is not None else [None]
        for key in keys:
            evs = pushed.pop((qid, key), [])
            if alert:
                assert all(r["event"] in ("alert", "clear") for r in evs), (qid, evs[:3])
                _check_alert(q, log, wins[qid], key, evs, end, max(q["epsilon"], log.quantile_epsilon), seq)
            elif q.get("notify"):
                _check_updates(q, wins[qid], key, evs, end, max(q["epsilon"], log.quantile_epsilon))
            else:
                assert not evs, f"{qid}: pushed events for a query without notify or alert: {evs[:3]}"
    assert not pushed, f"pushed events for keys or queries without elements: {list(pushed)[:3]}"


def _positions(win: _Windows, key, end: int, seq: np.ndarray) -> np.ndarray:
    """The positions where the query's (key's) window may change, from its first element to end."""
    el = win.elements(key)
    if not len(el):
        return np.empty(0, np.int64)
    first = int(seq[el[0]])
    if win.subs is not None:
        p = seq[el]
    else:  # positional windows move at every row
        p = seq
    return p[(p >= first) & (p <= end)]


def _check_updates(q, win: _Windows, key, evs: list[dict], end: int, eps: float) -> None:
    seq = win.seq
    pos = _positions(win, key, end, seq)
    if not len(pos):
        assert not evs, (q["id"], key, evs[:3])
        return
    ats = [r["at"] for r in evs]
    assert evs and ats[0] == pos[0], f"{q['id']} {key}: first update {evs[:1]} is not at its first element {pos[0]}"
    assert ats == sorted(set(ats)) and ats[-1] <= end, (q["id"], key, ats)
    vals = [math.nan if r["value"] is None else r["value"] for r in evs]
    assert all(a != b for a, b in zip(vals, vals[1:], strict=False)), (q["id"], key, vals)
    k = -1
    for n in pos.tolist():
        while k + 1 < len(ats) and ats[k + 1] <= n:
            k += 1
        w = win.at(n, key)
        assert _valid(q, w, vals[k], eps), (q["id"], key, n, vals[k], sorted(w.tolist())[:100], eps)


def _check_alert(q, log, win: _Windows, key, evs: list[dict], end: int, eps: float, seq) -> None:
    above = q.get("above") is not None
    x = float(q["above"] if above else q["below"])
    r = float(q["rearm"]) if q.get("rearm") is not None else x
    kinds = [e["event"] for e in evs]
    assert kinds == (["alert", "clear"] * len(kinds))[:len(kinds)], (q["id"], key, kinds)
    ats = [e["at"] for e in evs]
    assert ats == sorted(set(ats)), (q["id"], key, ats)
    pos = _positions(win, key, end, seq)
    assert not ats or (len(pos) and ats[0] >= pos[0] and ats[-1] <= end), (q["id"], key, ats, end)
    for e in evs:
        v = e["value"]
        w = win.at(e["at"], key)
        assert v is not None and _valid(q, w, v, eps), (q["id"], key, e, sorted(w.tolist())[:100])
        side = (v > x if above else v < x) if e["event"] == "alert" else (v <= r if above else v >= r)
        assert side, (q["id"], key, e, x, r)
    k = -1
    for n in pos.tolist():
        while k + 1 < len(ats) and ats[k + 1] <= n:
            k += 1
        on = k >= 0 and kinds[k] == "alert"
        b = _band(q, win.at(n, key), eps)
        if b is None:
            continue
        lo, hi, _ = b
        must_on = lo > x if above else hi < x
        must_off = hi <= r if above else lo >= r
        assert not (must_on and not on), f"{q['id']} {key}: not alerted at {n} though every answer is beyond {x}"
        assert not (must_off and on), f"{q['id']} {key}: still alerted at {n} though every answer is past rearm {r}"


def exact_crossings(values: np.ndarray, phi: float, above: float | None, below: float | None,
                    rearm: float | None) -> list[tuple[int, str, float]]:
    """The oracle's alert events over a stream of values (whole stream, every element): (index,
    event, exact quantile) at each transition of the machine run on the exact quantile."""
    from .arrays import quantile_rank

    x = above if above is not None else below
    r = x if rearm is None else rearm
    on = False
    out = []
    for i in range(len(values)):
        w = np.sort(values[:i + 1])
        v = float(w[quantile_rank(phi, len(w)) - 1])
        if not on and (v > x if above is not None else v < x):
            on = True
            out.append((i, "alert", v))
        elif on and (v <= r if above is not None else v >= r):
            on = False
            out.append((i, "clear", v))
    return out
