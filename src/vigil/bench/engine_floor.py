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
        base = 0.0
        while True:  # a repeat query counts again from the element after each maturity
            i = int(np.searchsorted(c, base + q["threshold"]))
            if i >= len(seq) or seq[i] > end:
                break
            matured += 1
            check += float(seq[i])
            if not q.get("repeat"):
                break
            base = c[i]
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


def _agg(agg: str, x: np.ndarray | None, n_rows: int, phi: float | None = None) -> float:
    if agg == "count":
        return float(n_rows if x is None else len(x) - np.isnan(x).sum())
    if x is None or not len(x) or np.isnan(x).all():
        return math.nan
    if agg == "quantile":
        y = x[~np.isnan(x)]
        r = quantile_rank(phi, len(y)) - 1
        return float(np.partition(y, r)[r])
    return float({"sum": np.nansum, "avg": np.nanmean, "min": np.nanmin, "max": np.nanmax}[agg](x))


def _tails(keys: np.ndarray, n_last: int) -> tuple[np.ndarray, np.ndarray]:
    """Per key value of ``keys`` (in position order), the positions of its last ``n_last``
    entries: (order, starts) such that order[starts[k]:starts[k+1]] are key k's, in order."""
    u, inv = np.unique(keys, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    ends = np.cumsum(np.bincount(inv, minlength=len(u)))
    starts = np.maximum(ends - n_last, np.r_[0, ends[:-1]])
    keep = np.concatenate([order[a:b] for a, b in zip(starts, ends, strict=True)]) if len(u) else order
    return keep, np.r_[0, np.cumsum(ends - starts)]


def _keyed(cols, q, at, n, value_col, agg, phi=None, n_last=None) -> tuple[int, float]:
    """A where / group_by query's lookup after element n over the key's last ``n_last`` matching
    rows after registration: (answers, checksum)."""
    lo = at
    mask = _where_mask({k: v[lo:n] for k, v in cols.items()}, q.get("where") or {})
    pos = np.flatnonzero(mask)
    x = cols[value_col][lo:n][pos] if value_col else None
    if not q.get("group_by"):
        if n_last is not None:
            x = x[-n_last:] if x is not None else None
            pos = pos[-n_last:]
        v = _agg(agg, x, len(pos), phi)
        return 1, 0.0 if math.isnan(v) else v
    gb = q["group_by"] if isinstance(q["group_by"], list) else [q["group_by"]]
    keys = cols[gb[0]][lo:n][pos].astype(str)
    for c in gb[1:]:
        keys = np.char.add(np.char.add(keys, "\x1f"), cols[c][lo:n][pos].astype(str))
    keep, starts = _tails(keys, n_last if n_last is not None else len(keys))
    check = 0.0
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        v = _agg(agg, None if x is None else x[keep[a:b]], b - a, phi)
        check += 0.0 if math.isnan(v) else v
    return max(1, len(starts) - 1), check


def windows(cols: dict[str, np.ndarray], ops: list[dict]) -> tuple[int, float]:
    """Per lookup: slice the window and aggregate it with one numpy call (per key: the key's
    matching rows, the last rows of each key from one stable argsort)."""
    check, count = 0.0, 0
    for q, at, n in _lookups(ops, _lives(ops)):
        if q.get("where") or q.get("group_by"):
            if "rows" not in q or q["rows"][1]:
                raise ValueError("the engine bench floor has per-key suffix rows windows only")
            k, c = _keyed(cols, q, at, n, q.get("column"), q["agg"], q.get("phi"), int(q["rows"][0]))
            count += k
            check += c
            continue
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
        w = max(abs(float(b)) for b in q["window"]) if isinstance(q["window"], list) else float(q["window"])
        big = float(np.abs(np.concatenate([lt, rt])).max() + w) * 4 + 1
        rkey = rc * big + rt
        if isinstance(q["window"], list):  # an interval join: lo <= s.T - r.T <= hi
            lo = np.searchsorted(rkey, lc * big + lt + q["window"][0], "left")
            hi = np.searchsorted(rkey, lc * big + lt + q["window"][1], "right")
        else:
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
    """Per lookup: the exact quantile of the query's elements with one np.partition (per key: the
    key's last rows; a rank query: one count). Alert queries: the exact rolling quantile of the
    matching rows (pandas, O(n log rows)) and a pass for the crossings."""
    check, count = 0.0, 0
    lives = _lives(ops)
    for q, at, end in lives.values():
        if q.get("above") is not None or q.get("below") is not None:
            check += _alerts(cols, q, at, end)
    for q, at, n in _lookups(ops, lives):
        if q.get("notify"):
            raise ValueError("the engine bench floor answers quantile lookups, not notify queries")
        if q.get("where") or q.get("group_by") or q.get("rank_of") is not None:
            if q.get("rank_of") is not None:
                m = _where_mask({k: v[at:n] for k, v in cols.items()}, q.get("where") or {})
                x = cols[q["column"]][at:n][m]
                x = x[~np.isnan(x)][-int(q["rows"]):] if q.get("rows") else x[~np.isnan(x)]
                count += 1
                check += float((x <= q["rank_of"]).mean()) if len(x) else 0.0
                continue
            k, c = _keyed(cols, q, at, n, q["column"], "quantile", q["phi"], q.get("rows"))
            count += k
            check += c
            continue
        lo = max(at, n - int(q["rows"])) if q.get("rows") else at
        x = cols[q["column"]][lo:n]
        x = x[~np.isnan(x)]
        if len(x):
            r = quantile_rank(q["phi"], len(x)) - 1
            check += float(np.partition(x, r)[r])
        count += 1
    return count, check


def _alerts(cols, q, at, end) -> float:
    """Crossings of an alert query's exact rolling quantile (its matching rows after ``at``)."""
    import pandas as pd

    m = _where_mask(cols, q.get("where") or {}) & (cols["__seq__"] > at) & (cols["__seq__"] <= end)
    x = pd.Series(cols[q["column"]][m]).dropna()
    if not len(x):
        return 0.0
    v = (x.rolling(int(q["rows"]), min_periods=1) if q.get("rows") else x.expanding()).quantile(
        q["phi"], interpolation="lower").to_numpy()
    up = q.get("above") is not None
    level = q["above"] if up else q["below"]
    rearm = q.get("rearm", level) if q.get("rearm") is not None else level
    fired, n = False, 0
    for val in v:  # O(rows) Python on the matching rows: the crossings
        if not fired and (val > level if up else val < level):
            fired, n = True, n + 1
        elif fired and (val <= rearm if up else val >= rearm):
            fired, n = False, n + 1
    return float(n)


FLOORS = {"threshold": threshold, "windows": windows, "substream": substream, "joins": joins,
          "quantiles": quantiles}
