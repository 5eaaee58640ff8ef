"""PSoup baseline (paper 002, §3.1.3; Chandrasekaran & Franklin, VLDB 2002): an augmented search
tree whose leaves are the last N_max elements in insertion order and whose internal nodes hold
the aggregate of their subtree.

Here the tree is a complete binary tree stored implicitly in an array of 2*cap nodes over the ring
of cap leaves (the paper's experiment adapted libavl's red-black trees; an implicit tree is the
faster way to build the same augmented tree). A lookup (l, r) is one or two root-ward range walks
(two when the window wraps around the ring).

Bounds: UPDATE O(log N_max) (a leaf and its ancestors), LOOKUP O(log N_max), space O(N_max).
Serves SUM, COUNT, AVG, MIN, MAX over rows and time windows, suffix and historical.
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_base import RingOperator
from ._window_kernels import window_bounds


@numba.njit(cache=True, nogil=True)
def psoup_push(ts, tc, cap, pos0, vals, code):
    mask = cap - 1
    is_mm = code >= 3
    is_max = code == 4
    for j in range(len(vals)):
        v = vals[j]
        c = 1.0
        if v != v:
            c = 0.0
            v = (-np.inf if is_max else np.inf) if is_mm else 0.0
        i = cap + ((pos0 + 1 + j) & mask)
        ts[i] = v
        tc[i] = c
        i >>= 1
        while i >= 1:
            x = ts[2 * i]
            y = ts[2 * i + 1]
            if is_mm:
                ts[i] = (x if x > y else y) if is_max else (x if x < y else y)
            else:
                ts[i] = x + y
            tc[i] = tc[2 * i] + tc[2 * i + 1]
            i >>= 1


@numba.njit(cache=True, nogil=True)
def _range(ts, tc, cap, lo, hi, code, acc):
    """Fold ring slots [lo, hi] into acc = (value, count)."""
    is_mm = code >= 3
    is_max = code == 4
    r = acc[0]
    c = acc[1]
    lo += cap
    hi += cap + 1
    while lo < hi:
        if lo & 1:
            x = ts[lo]
            if is_mm:
                r = (r if r > x else x) if is_max else (r if r < x else x)
            else:
                r += x
            c += tc[lo]
            lo += 1
        if hi & 1:
            hi -= 1
            x = ts[hi]
            if is_mm:
                r = (r if r > x else x) if is_max else (r if r < x else x)
            else:
                r += x
            c += tc[hi]
        lo >>= 1
        hi >>= 1
    acc[0] = r
    acc[1] = c


@numba.njit(cache=True, nogil=True)
def psoup_lookup(qids, n, t_now, time_based, code, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq,
                 ts, tc, cap, out):
    acc = np.zeros(2)
    ident = 0.0
    if code == 3:
        ident = np.inf
    elif code == 4:
        ident = -np.inf
    for k in range(len(qids)):
        a, b = window_bounds(qids[k], n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m,
                             last_seq)
        if a > b:
            out[k] = 0.0 if code == 1 else np.nan
            continue
        acc[0] = ident
        acc[1] = 0.0
        ia = a & mask
        ib = b & mask
        if ia <= ib:
            _range(ts, tc, cap, ia, ib, code, acc)
        else:
            _range(ts, tc, cap, ia, cap - 1, code, acc)
            _range(ts, tc, cap, 0, ib, code, acc)
        if code == 1:
            out[k] = acc[1]
        elif acc[1] == 0:
            out[k] = np.nan
        elif code == 2:
            out[k] = acc[0] / acc[1]
        else:
            out[k] = acc[0]


class PSoup(RingOperator):
    name = "psoup"
    aggs = ("sum", "count", "avg", "min", "max")

    def _alloc(self, cap: int) -> None:
        self.ts = np.zeros(2 * cap, np.float64)
        self.tc = np.zeros(2 * cap, np.float64)

    def _struct_nbytes(self) -> int:
        return self.ts.nbytes + self.tc.nbytes

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        psoup_push(self.ts, self.tc, self.cap, pos0, vals, self.code)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        psoup_lookup(qids, n, t_now, self.time_based, self.code, self.q_left, self.q_right, self.q_start,
                     self.seqs, self.times, self.mask, self.V, self.m, self.last_seq, self.ts, self.tc, self.cap, out)
