"""The floor to beat at small query counts: each family's queries answered by the per-query numpy
loop a user would write in a notebook, over the whole stream at once (no engine, no shared index).

Each function takes the stream (numpy columns, ``seq`` = row number + 1 as the engine numbers rows
without a ``seq`` column) and the operations of one family (dicts, in file order) and returns
``(outputs, work)``: the number of output events the family's queries produce in ``vigil replay``
(matured / answer / join rows; the bench checks it against the engine's count, so a floor that
misreads the contract shows up as a mismatch) and a checksum of the answers. The semantics are the
contract's (docs/contract.md): a query registered at ``at`` counts the elements with seq > at, a
termination at ``p`` drops its outputs after p, a lookup at ``n`` answers after element n.

Cost: O(rows) numpy work per threshold / join query, O(window) per window / quantile lookup and
O(window) per substream lookup; no sharing between queries.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import quantile_rank


def _lives(ops: list[dict]) -> dict[str, tuple[dict, int, float]]:
    """id -> (spec, registered at, terminated at or inf)."""
    out: dict[str, tuple[dict, int, float]] = {}
    for op in ops:
        if op["op"] == "register":
            out[op["query"]["id"]] = (op["query"], int(op["at"]), math.inf)
        elif op["op"] == "terminate" and op["id"] in out:
            q, a, end = out[op["id"]]
            out[op["id"]] = (q, a, min(end, int(op["at"])))
    return out


def _where_mask(cols: dict[str, np.ndarray], where: dict[str, Any]) -> np.ndarray:
    n = len(next(iter(cols.values())))
    ok = np.ones(n, bool)
    for c, v in where.items():
        x = cols[c]
        if isinstance(v, list):
            lo, hi = v
            if lo is not None:
                ok &= x >= lo
            if hi is not None:
                ok &= x <= hi
        else:
            ok &= x == v
    return ok


def threshold(cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[int, float]:
    """Per query: mask the rows inside its rectangle after its registration, one cumsum, one
    searchsorted for the first prefix reaching tau."""
    seq = cols["__seq__"]
    matured, check = 0, 0.0
    for q, at, end in _lives(ops).values():
        ok = _where_mask(cols, q["where"]) & (seq > at)
        w = cols[q["weight"]] if q.get("weight") else np.ones(len(seq))
        c = np.cumsum(np.where(ok, w, 0.0))
        i = int(np.searchsorted(c, q["threshold"]))
        if i < len(seq) and seq[i] <= end:
            matured += 1
            check += float(seq[i])
    return matured, check


def _lookups(ops: list[dict], lives: dict) -> list[tuple[dict, int, int]]:
    """(spec, registered at, lookup position) of every lookup of an alive query."""
    out = []
    for op in ops:
        if op["op"] == "lookup" and op["id"] in lives:
            q, at, end = lives[op["id"]]
            n = int(op["at"])
            if at <= n <= end:
                out.append((q, at, n))
    return out


def _t_now(cols, q, n):
    return float(cols[q["time_column"]][n - 1]) if n >= 1 else math.nan


def _window_slice(cols: dict[str, np.ndarray], q: dict, at: int, n: int) -> slice:
    """Rows of the window of q after element n (rows seq = index + 1, registered at ``at``)."""
    if "rows" in q:
        nl, nr = q["rows"]
        lo, hi = max(n - int(nl), at), n - int(nr)  # rows index [lo, hi) = seq (lo, hi]
        return slice(lo, max(lo, hi))
    tl, tr = q["time"]
    t = cols[q["time_column"]][:n]
    t_now = _t_now(cols, q, n)
    lo = max(int(np.searchsorted(t, t_now - tl, "right")), at)
    hi = int(np.searchsorted(t, t_now - tr, "right"))
    return slice(lo, max(lo, hi))


def windows(cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[int, float]:
    """Per lookup: slice the window and aggregate it with one numpy call."""
    check, count = 0.0, 0
    for q, at, n in _lookups(ops, _lives(ops)):
        x = cols[q["column"]][_window_slice(cols, q, at, n)] if q.get("column") else None
        agg = q["agg"]
        if agg == "count":
            v = float(len(x) - np.isnan(x).sum()) if x is not None else float(
                len(range(*_window_slice(cols, q, at, n).indices(n))))
        elif x is None or not len(x):
            v = math.nan
        elif agg == "sum":
            v = float(np.nansum(x))
        elif agg == "avg":
            v = float(np.nanmean(x))
        elif agg == "min":
            v = float(np.nanmin(x))
        elif agg == "max":
            v = float(np.nanmax(x))
        else:  # quantile
            y = x[~np.isnan(x)]
            v = float(np.partition(y, quantile_rank(q["phi"], len(y)) - 1)[quantile_rank(q["phi"], len(y)) - 1])
        count += 1
        check += 0.0 if math.isnan(v) else v
    return count, check


def substream(cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[int, float]:
    """Per lookup: slice the time window, group by key with np.unique + bincount, keep the keys in
    the open range."""
    check, count = 0.0, 0
    for q, at, n in _lookups(ops, _lives(ops)):
        t = cols[q["time_column"]][:n]
        t_now = _t_now(cols, q, n)
        lo = max(int(np.searchsorted(t, t_now - q["time"], "right")), at)
        keys = cols[q["key"]][lo:n]
        x = cols[q["column"]][lo:n] if q.get("column") else np.ones(n - lo)
        u, inv = np.unique(keys, return_inverse=True)
        good = ~np.isnan(x)
        if q["agg"] == "count":
            a = np.bincount(inv, weights=good.astype(float), minlength=len(u))
        else:
            a = np.bincount(inv, weights=np.where(good, x, 0.0), minlength=len(u))
            a[np.bincount(inv, weights=good.astype(float), minlength=len(u)) == 0] = np.nan
        v1, v2 = q["range"]
        hit = np.ones(len(u), bool) if v1 is None else a > v1
        if v2 is not None:
            hit &= a < v2
        count += 1
        check += float(hit.sum())
    return count, check


def joins(cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[int, float]:
    """Window joins, per query: the qualifying left and right rows, sorted by (key, time); per row of
    one side, two searchsorted calls find its partners; a pair is output at its later row if the
    query is alive there."""
    seq, rel = cols["__seq__"], cols["rel"]
    pairs, check = 0, 0.0
    for q, at, end in _lives(ops).values():
        if q["type"] != "window_join":
            raise ValueError(f"the engine bench floor has no {q['type']} (only window_join)")
        sides = []
        for s in ("left", "right"):
            ok = (rel == q[s]) & _where_mask(cols, q.get(f"{s}_range") or {})
            idx = np.flatnonzero(ok)
            key = cols[q[f"{s}_on"]][idx]
            t = cols[q["time_column"]][idx]
            o = np.lexsort((t, key))
            sides.append((idx[o], key[o], t[o]))
        (li, lk, lt), (ri, rk, rt) = sides
        if not len(li) or not len(ri):
            continue
        # per left row: the right rows of its key with |dt| < w; keys compared as ranks of one sort
        _, codes = np.unique(np.concatenate([lk, rk]), return_inverse=True)
        lc, rc = codes[: len(lk)].astype(np.float64), codes[len(lk):].astype(np.float64)
        big = float(np.abs(np.concatenate([lt, rt])).max() + q["window"]) * 4 + 1
        rkey = rc * big + rt
        lo = np.searchsorted(rkey, lc * big + lt - q["window"], "right")
        hi = np.searchsorted(rkey, lc * big + lt + q["window"], "left")
        cnt = hi - lo
        ll = np.repeat(np.arange(len(li)), cnt)
        rr = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
        later = np.maximum(seq[li[ll]], seq[ri[rr]])
        alive = (later > at) & (later <= end)
        pairs += int(alive.sum())
        check += float(later[alive].sum())
    return pairs, check


def quantiles(cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[int, float]:
    """Per lookup: the exact quantile of the query's elements with one np.partition."""
    check, count = 0.0, 0
    for q, at, n in _lookups(ops, _lives(ops)):
        if q.get("notify"):
            raise ValueError("the engine bench floor answers quantile lookups, not notify queries")
        lo = max(at, n - int(q["rows"])) if q.get("rows") else at
        x = cols[q["column"]][lo:n]
        x = x[~np.isnan(x)]
        if len(x):
            r = quantile_rank(q["phi"], len(x)) - 1
            check += float(np.partition(x, r)[r])
        count += 1
    return count, check


FLOORS = {"threshold": threshold, "windows": windows, "substream": substream, "joins": joins,
          "quantiles": quantiles}
