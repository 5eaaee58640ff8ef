"""The windows benchmarks' peers: today's tools recomputing each lookup from the retained elements
(rows windows, suffix or historical), in the strongest form we know for each.

* ``duckdb``: DuckDB over a table ``t(pos, v, cs)`` of the retained elements, ``cs`` the running
  sum (kept by an ``INSERT ... sum(v) OVER (ORDER BY pos)`` per update batch). One statement per
  lookup batch: SUM/COUNT/AVG are prefix-sum differences (two equality joins on ``pos`` per
  lookup, O(1) per window); MIN/MAX/QUANTILE are window functions with a per-row frame
  (``RANGE BETWEEN w PRECEDING AND CURRENT ROW`` over the elements and one NULL row per lookup at
  its window's right end: DuckDB's segment tree / merge-sort tree over the table).
* ``duckdb_rangejoin``: the range-join form, ``SELECT i, agg(v) FROM lk JOIN tail ON pos BETWEEN lo
  AND hi GROUP BY i`` (O(W) per lookup; chunks of <= 4M joined pairs).
* ``bottleneck``: per looked-up window, the cheapest call on its slice of a numpy array:
  ``bn.nansum``/``bn.nanmax``/... (lowest fixed cost) up to 2,048 elements, numpy's SIMD
  ``np.add.reduce``/``np.maximum.reduce`` beyond (O(W) in C per lookup, no shared state).

QUANTILE is ``quantile_disc(v, phi)``: the element of rank max(1, ceil(phi n)), the contract's rank
(``tests/windows/test_bench_peers.py`` checks every formulation against the oracle).
"""

from __future__ import annotations

import numpy as np

KINDS = ("duckdb", "duckdb_rangejoin", "bottleneck")
DELETE_SLACK = 1 << 20  # DuckDB rows kept beyond N_max before one DELETE (a DELETE per batch costs ~0.7 µs/row)
BN_MAX_WIDTH = 2048  # above this numpy's SIMD reductions beat bottleneck's per-call loops


class Tail:
    """The last ``keep`` elements in one contiguous numpy buffer (amortized O(1) append)."""

    def __init__(self, keep: int) -> None:
        self.keep = int(keep)
        self.buf = np.empty(4 * self.keep + 16)
        self.lo = self.hi = 0

    def push(self, v: np.ndarray) -> None:
        v = v[-self.keep:] if len(v) > self.keep else v
        if self.hi + len(v) > len(self.buf):
            k = min(self.hi - self.lo, self.keep)
            self.buf[:k] = self.buf[self.hi - k:self.hi]
            self.lo, self.hi = 0, k
            if self.hi + len(v) > len(self.buf):
                self.buf = np.concatenate([self.buf[:k], np.empty(len(v) + 4 * self.keep)])
        self.buf[self.hi:self.hi + len(v)] = v
        self.hi += len(v)
        self.lo = max(self.lo, self.hi - self.keep)

    def view(self) -> np.ndarray:
        return self.buf[self.lo:self.hi]


_RANGEJOIN = {"sum": "sum(v)", "max": "max(v)", "min": "min(v)", "avg": "avg(v)", "count": "count(v)"}


class Peer:
    """One peer of ``KINDS`` for one aggregate over rows windows ``(NL, NR)``."""

    def __init__(self, kind: str, agg: str, n_max: int, phi: float = 0.5) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown peer {kind!r}")
        self.kind, self.agg, self.phi = kind, agg, float(phi)
        self.keep = int(n_max)
        self.tail = Tail(n_max)
        self.m = 0
        self.first_seq = 0  # seq of the first element pushed
        self.win: dict[int, tuple[int, int]] = {}
        if kind.startswith("duckdb"):
            import duckdb

            self.con = duckdb.connect()
            self.con.execute("SET threads = 1")
            self.con.execute("SET memory_limit = '2GB'")
        if kind == "duckdb":
            self.con.execute("CREATE TABLE t (pos BIGINT, v DOUBLE, cs DOUBLE)")
            self.cs = 0.0  # running sum up to the last pushed element
            self.first = 0  # smallest pos in t

    def register(self, qid: int, nl: int, nr: int) -> None:
        self.win[qid] = (nl, nr)

    def push(self, v: np.ndarray, s: np.ndarray) -> None:
        if not self.first_seq:
            self.first_seq = self.first = int(s[0])
        if self.kind == "duckdb":
            import pyarrow as pa

            new = pa.table({"pos": np.asarray(s, np.int64), "v": np.asarray(v, np.float64)})  # noqa: F841
            self.con.execute("INSERT INTO t SELECT pos, v, ? + sum(v) OVER (ORDER BY pos ROWS UNBOUNDED PRECEDING) "
                             "FROM new", [self.cs])
            self.cs += float(np.sum(v))
            last = int(s[-1])
            if last - self.first + 1 > self.keep + max(self.keep, DELETE_SLACK):  # drop what no window reaches
                self.first = last - self.keep + 1
                self.con.execute("DELETE FROM t WHERE pos < ?", [self.first])
        else:
            self.tail.push(v)
        self.m = int(s[-1])

    def _bounds(self, qids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        base = max(self.m - self.keep + 1, self.first_seq)
        nl = np.array([self.win[int(q)][0] for q in qids], np.int64)
        nr = np.array([self.win[int(q)][1] for q in qids], np.int64)
        return np.maximum(n - nl + 1, base), n - nr

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        lo, hi = self._bounds(qids, n)
        out = np.full(len(qids), 0.0 if self.agg == "count" else np.nan)
        if self.kind == "duckdb":
            return self._duckdb(lo, hi, out)
        if self.kind == "duckdb_rangejoin":
            return self._rangejoin(lo, hi, out)
        return self._bottleneck(lo, hi, out)

    def _duckdb(self, lo, hi, out) -> np.ndarray:
        import pyarrow as pa

        ok = hi >= lo
        idx = np.flatnonzero(ok)
        if len(idx) == 0:
            return out
        lk = pa.table({"i": idx, "lo": lo[idx], "hi": hi[idx], "w": hi[idx] - lo[idx]})  # noqa: F841
        if self.agg in ("sum", "count", "avg"):
            expr = {"sum": "b.cs - a.cs + a.v", "count": "b.pos - a.pos + 1",
                    "avg": "(b.cs - a.cs + a.v) / (b.pos - a.pos + 1)"}[self.agg]
            sql = f"SELECT lk.i, {expr} AS r FROM lk JOIN t a ON a.pos = lk.lo JOIN t b ON b.pos = lk.hi"
            rows = self.con.execute(sql).fetchnumpy()
        else:
            fn = {"max": "max(v)", "min": "min(v)", "quantile": f"quantile_disc(v, {self.phi!r})"}[self.agg]
            sql = (f"SELECT i, r FROM (SELECT i, {fn} OVER (ORDER BY pos RANGE BETWEEN w PRECEDING AND CURRENT ROW) "
                   "AS r FROM (SELECT pos, v, NULL::BIGINT AS i, 0::BIGINT AS w FROM t WHERE pos BETWEEN ? AND ? "
                   "UNION ALL SELECT hi, NULL::DOUBLE, i, w FROM lk)) WHERE i IS NOT NULL")
            rows = self.con.execute(sql, [int(lo[idx].min()), int(hi[idx].max())]).fetchnumpy()
        out[rows["i"]] = rows["r"]
        return out

    def _rangejoin(self, lo, hi, out) -> np.ndarray:
        import pyarrow as pa

        x = self.tail.view()
        base = self.m - len(x) + 1  # seq of x[0]
        tail = pa.table({"pos": np.arange(base, base + len(x)), "v": x})  # noqa: F841 (used by SQL)
        fn = _RANGEJOIN.get(self.agg) or f"quantile_disc(v, {self.phi!r})"
        # one statement per chunk of lookups joining <= ~4M (lookup, element) pairs (memory bound)
        width = np.maximum(hi - lo + 1, 1)
        cuts = np.searchsorted(np.cumsum(width), np.arange(4_000_000, int(width.sum()) + 4_000_000, 4_000_000))
        a = 0
        for b in [*np.unique(np.clip(cuts + 1, 1, len(lo))).tolist(), len(lo)]:
            if b <= a:
                continue
            lk = pa.table({"i": np.arange(a, b), "lo": lo[a:b], "hi": hi[a:b]})  # noqa: F841
            rows = self.con.execute(f"SELECT i, {fn} AS r FROM lk JOIN tail ON tail.pos BETWEEN lk.lo AND lk.hi "
                                    "GROUP BY i").fetchnumpy()
            out[rows["i"]] = rows["r"]
            a = b
        return out

    def _bottleneck(self, lo, hi, out) -> np.ndarray:
        import bottleneck as bn

        x = self.tail.view()
        base = self.m - len(x) + 1
        small = {"sum": bn.nansum, "max": bn.nanmax, "min": bn.nanmin, "avg": bn.nanmean}[self.agg]
        large = {"sum": np.add.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce,
                 "avg": lambda s: np.add.reduce(s) / len(s)}[self.agg]
        a_all, b_all = (lo - base).tolist(), (hi - base + 1).tolist()
        for k in range(len(a_all)):
            a, b = a_all[k], b_all[k]
            if b > a:
                out[k] = small(x[a:b]) if b - a <= BN_MAX_WIDTH else large(x[a:b])
        return out
