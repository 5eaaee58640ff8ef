"""SlickDeque-style shared MIN/MAX over many suffix windows (beyond paper 002: in the spirit of
Shein, Chrysanthis, Labrinidis, "SlickDeque: High Throughput and Low Latency Incremental Sliding-
Window Aggregation", EDBT 2018, its non-invertible case).

One monotone deque serves every suffix window of a (column, MIN|MAX) group: for MAX it holds the
positions whose value is larger than every later value (values strictly decreasing front to back;
for MIN increasing). The maximum of the suffix window starting at position a is the value of the
first deque entry at a position >= a, found by binary search over the deque. A push pops the
dominated entries from the back (amortized O(1)) and expires the entries older than the last
N_max positions from the front.

Bounds: UPDATE amortized O(1); LOOKUP O(log d), d = deque length (expected O(log N_max) on
random input, N_max on a monotone run) after the O(1) (O(log N_max) with seq gaps or time
windows) search for the window's first position; space O(N_max).

Serves MIN and MAX over suffix windows (NR = 0 or TR = 0), rows or time. Historical windows
(NR > 0) are rejected: the deque drops every element dominated by a *later* one, and a historical
window ends before those later elements, so its maximum may be gone (B-INT serves them).
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_base import RingOperator
from ._window_kernels import window_bounds


@numba.njit(cache=True, nogil=True)
def slick_push(dq_pos, dq_val, ht, cap, pos0, vals, is_max):
    """Append positions pos0+1.. to the monotone deque; ht = [head, tail] (monotone counters)."""
    mask = cap - 1
    half = cap // 2
    head = ht[0]
    tail = ht[1]
    for j in range(len(vals)):
        v = vals[j]
        p = pos0 + 1 + j
        if v == v:
            if is_max:
                while tail > head and dq_val[(tail - 1) & mask] <= v:
                    tail -= 1
            else:
                while tail > head and dq_val[(tail - 1) & mask] >= v:
                    tail -= 1
            dq_pos[tail & mask] = p
            dq_val[tail & mask] = v
            tail += 1
        while tail > head and dq_pos[head & mask] <= p - half:
            head += 1
    ht[0] = head
    ht[1] = tail


@numba.njit(cache=True, nogil=True)
def slick_lookup(qids, n, t_now, time_based, is_max, q_left, q_right, q_start, seqs, times, vals, mask, V, m,
                 last_seq, dq_pos, dq_val, ht, out):
    head = ht[0]
    tail = ht[1]
    for k in range(len(qids)):
        a, b = window_bounds(qids[k], n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m,
                             last_seq)
        if a > b:
            out[k] = np.nan
            continue
        lo = head
        hi = tail  # first deque index in [lo, hi) whose position >= a
        while lo < hi:
            mid = (lo + hi) >> 1
            if dq_pos[mid & mask] >= a:
                hi = mid
            else:
                lo = mid + 1
        if lo < tail and dq_pos[lo & mask] <= b:
            out[k] = dq_val[lo & mask]
        elif lo == tail or b == m:
            out[k] = np.nan  # no non-null value in [a, m] (or none in [a, b] when b = m)
        else:  # a lookup of an earlier n (never from the engine): scan the raw ring
            r = np.nan
            for p in range(a, b + 1):
                x = vals[p & mask]
                if x == x and (r != r or (x > r if is_max else x < r)):
                    r = x
            out[k] = r


class SlickDeque(RingOperator):
    name = "slickdeque"
    aggs = ("min", "max")
    historical_ok = ("slickdeque serves suffix windows only (NR/TR = 0): its monotone deque drops "
                     "values dominated by later ones, which a historical window may need")

    def _alloc(self, cap: int) -> None:
        self.dq_pos = np.zeros(cap, np.int64)
        self.dq_val = np.zeros(cap, np.float64)
        self.ht = np.zeros(2, np.int64)

    def _struct_nbytes(self) -> int:
        return self.dq_pos.nbytes + self.dq_val.nbytes

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        slick_push(self.dq_pos, self.dq_val, self.ht, self.cap, pos0, vals, self.code == 4)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        slick_lookup(qids, n, t_now, self.time_based, self.code == 4, self.q_left, self.q_right, self.q_start,
                     self.seqs, self.times, self.vals, self.mask, self.V, self.m, self.last_seq,
                     self.dq_pos, self.dq_val, self.ht, out)
