"""The two naive extremes of paper 002, §1.2 (baselines of the §6.1 experiment).

* :class:`MaterializeAll` ("materialize all"): every query's current answer is kept up to date at
  every element: for each element, every alive query slides its window (adds the elements that
  entered, subtracts those that left) -- O(#queries) per UPDATE (amortized; O(log N_max) more per
  query for time windows or seqs with gaps), O(1) LOOKUP, O(#queries + N_max) space. Needs a
  subtractable aggregate: SUM, COUNT, AVG (MIN/MAX/QUANTILE rejected: a running value cannot
  forget the element that leaves).
* :class:`MaterializeNone` ("materialize none"): the last N_max elements only; every LOOKUP
  aggregates its window from scratch: O(1) UPDATE, O(W) LOOKUP (O(W log W) for QUANTILE),
  O(N_max) space. Serves every aggregate.

Both serve rows and time windows, suffix and historical. materialize_all keeps each query's running
SUM as a double-double (hi, lo) pair, as R-INT does, so adding and subtracting a huge value does not
swallow the small ones beside it: exact on integers while the sums stay below 2^106 ([2^53, 1, 1]
with rows [2, 0] is 2, not 0); the sum restarts from exactly 0 whenever the window empties.
materialize_none adds the window's values in float64 (exact on integers below 2^53).
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_base import RingOperator, _grow
from ._window_kernels import quantile_rank, window_bounds


@numba.njit(cache=True, nogil=True, inline="always")
def _dd_add(qs, ql, q, v):
    """(qs[q], ql[q]) += v in double-double (TwoSum, then FastTwoSum renormalization; as R-INT)."""
    hi = qs[q]
    s = hi + v
    bb = s - hi
    e = (hi - (s - bb)) + (v - bb)
    lo = ql[q] + e
    hi = s + lo
    ql[q] = lo - (hi - s)
    qs[q] = hi


@numba.njit(cache=True, nogil=True)
def _slide(ids, qa, qb, qs, ql, qc, n, t_now, time_based, q_left, q_right, q_start, seqs, times, vals, mask, V, m,
           last_seq):
    for u in range(len(ids)):
        q = ids[u]
        a, b = window_bounds(q, n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq)
        if a > b + 1:
            a = b + 1
        while qb[q] < b:
            qb[q] += 1
            v = vals[qb[q] & mask]
            if v == v:
                _dd_add(qs, ql, q, v)
                qc[q] += 1
        while qa[q] < a:
            v = vals[qa[q] & mask]
            if v == v:
                _dd_add(qs, ql, q, -v)
                qc[q] -= 1
                if qc[q] == 0:  # an empty window: exactly 0 again, whatever the rounding was
                    qs[q] = 0.0
                    ql[q] = 0.0
            qa[q] += 1


@numba.njit(cache=True, nogil=True)
def mat_all_push(p0, p1, ids, qa, qb, qs, ql, qc, time_based, q_left, q_right, q_start, seqs, times, vals, mask, V0):
    """Positions p0..p1 arrived: after each one, slide every alive query's window."""
    for p in range(p0, p1 + 1):
        V = max(V0, p - (mask + 1) // 2 + 1)
        t = times[p & mask] if time_based else np.nan
        s = seqs[p & mask]
        _slide(ids, qa, qb, qs, ql, qc, s, t, time_based, q_left, q_right, q_start, seqs, times, vals, mask, V, p, s)


@numba.njit(cache=True, nogil=True)
def mat_all_lookup(qids, n, t_now, time_based, code, ids_one, qa, qb, qs, ql, qc, q_left, q_right, q_start, seqs, times,
                   vals, mask, V, m, last_seq, out):
    for k in range(len(qids)):
        q = qids[k]
        ids_one[0] = q  # a lookup after rejected rows may slide the window a little further
        _slide(ids_one, qa, qb, qs, ql, qc, n, t_now, time_based, q_left, q_right, q_start, seqs, times, vals, mask, V, m,
               last_seq)
        c = qc[q]
        if code == 1:
            out[k] = c
        elif c == 0:
            out[k] = np.nan
        else:
            tot = qs[q] + ql[q]
            out[k] = tot / c if code == 2 else tot


@numba.njit(cache=True, nogil=True)
def mat_none_lookup(qids, n, t_now, time_based, code, q_left, q_right, q_start, q_phi, q_num, q_den, seqs, times,
                    vals, mask, V, m, last_seq, out):
    buf = np.empty(mask + 1, np.float64)
    for k in range(len(qids)):
        q = qids[k]
        a, b = window_bounds(q, n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq)
        c = 0
        if code == 3 or code == 4:
            r = np.nan
            for p in range(a, b + 1):
                x = vals[p & mask]
                if x == x and (r != r or (x > r if code == 4 else x < r)):
                    r = x
            out[k] = r
            continue
        if code == 5:
            for p in range(a, b + 1):
                x = vals[p & mask]
                if x == x:
                    buf[c] = x
                    c += 1
            if c == 0:
                out[k] = np.nan
            else:
                r = quantile_rank(q_phi[q], q_num[q], q_den[q], c)
                out[k] = np.partition(buf[:c], r - 1)[r - 1]
            continue
        s = 0.0
        for p in range(a, b + 1):
            x = vals[p & mask]
            if x == x:
                s += x
                c += 1
        if code == 1:
            out[k] = c
        elif c == 0:
            out[k] = np.nan
        else:
            out[k] = s / c if code == 2 else s


class MaterializeNone(RingOperator):
    name = "materialize_none"
    aggs = ("sum", "count", "avg", "min", "max", "quantile")

    def _alloc(self, cap: int) -> None:
        pass

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        pass

    def _lookup_into(self, qids, n, t_now, out) -> None:
        mat_none_lookup(qids, n, t_now, self.time_based, self.code, self.q_left, self.q_right, self.q_start,
                        self.q_phi, self.q_num, self.q_den, self.seqs, self.times, self.vals, self.mask, self.V,
                        self.m, self.last_seq, out)


class MaterializeAll(RingOperator):
    name = "materialize_all"
    aggs = ("sum", "count", "avg")

    def __init__(self, agg: str, time_based: bool) -> None:
        self.qa = np.zeros(0, np.int64)
        self.qb = np.zeros(0, np.int64)
        self.qs = np.zeros(0, np.float64)  # running SUM (hi) and its low part (lo) per query
        self.ql = np.zeros(0, np.float64)
        self.qc = np.zeros(0, np.int64)
        self._ids: np.ndarray | None = None
        super().__init__(agg, time_based)

    def _alloc(self, cap: int) -> None:
        pass

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        pass

    headroom = 4  # rows: a push chunk of cap/4 never overwrites what a window still reads

    def push(self, values, seqs, times=None) -> None:
        if self.time_based:
            return super().push(values, seqs, times)
        k, i = len(values), 0
        while i < k:
            self._fit(k - i)  # capacity for what the windows hold after the rest of the batch
            j = min(k, i + max(1, self.cap // 4))
            super().push(values[i:j], seqs[i:j], None)
            i = j

    def _alive_ids(self) -> np.ndarray:
        if self._ids is None:
            self._ids = np.flatnonzero(self.q_alive).astype(np.int64)
        return self._ids

    def _registered(self, qid: int) -> None:
        n = qid + 1
        self.qa = _grow(self.qa, n, 0)
        self.qb = _grow(self.qb, n, 0)
        self.qs = _grow(self.qs, n, 0.0)
        self.ql = _grow(self.ql, n, 0.0)
        self.qc = _grow(self.qc, n, 0)
        self.qa[qid], self.qb[qid], self.qs[qid], self.ql[qid], self.qc[qid] = self.m + 1, self.m, 0.0, 0.0, 0
        self._ids = None

    def _terminated(self, qid: int) -> None:
        self._ids = None

    def _restored(self, st) -> None:
        self._fit()
        for qid in np.flatnonzero(self.q_alive):
            self._registered(int(qid))
            self.qa[qid], self.qb[qid] = self.V, self.V - 1  # the next slide re-adds the window

    def _pushed(self, i: int, j: int) -> None:
        p1 = self.m
        p0 = p1 - (j - i) + 1
        mat_all_push(p0, p1, self._alive_ids(), self.qa, self.qb, self.qs, self.ql, self.qc, self.time_based, self.q_left,
                     self.q_right, self.q_start, self.seqs, self.times, self.vals, self.mask, self.floor)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        mat_all_lookup(qids, n, t_now, self.time_based, self.code, np.zeros(1, np.int64), self.qa, self.qb, self.qs,
                       self.ql, self.qc, self.q_left, self.q_right, self.q_start, self.seqs, self.times, self.vals, self.mask,
                       self.V, self.m, self.last_seq, out)
