"""R-INT, running intervals (paper 002, §3.2, Fig. 6; §5: one circular array).

For a subtractable aggregate (SUM, COUNT, AVG) every window (l, r) is the difference of two
running intervals: f(l, r) = f(1, r) - f(1, l - 1). R-INT keeps f(1, r) for the active running
intervals only (r >= m - N_max) in a circular array of N_max+1 slots (rounded up to a power of two,
x2 headroom), so values f(1, r), f(1, r+1) sit in adjacent slots and a lookup is two memory reads.

Bounds (Fig. 1, row "Subtractable"): UPDATE O(1), LOOKUP O(1) (+ O(log N_max) to find a window's
positions when the stream's seqs have gaps, or for time windows), space O(N_max) (N_max = the
largest number of elements any alive window can reach).

Precision: running sums are double-double (hi, lo), so SUM is exact for integer values (running
sums below 2^106) and, for other floats, within ~n*2^-106*|running sum| of the exact window sum
before the final rounding. COUNT counts non-null values (NaN = SQL NULL); AVG = SUM / COUNT.

Serves rows and time windows (time windows: positions found by binary search over the timestamp
ring), suffix and historical. MIN, MAX, QUANTILE are not subtractable: rejected.
"""

from __future__ import annotations

import numpy as np

from ._rint_kernels import rint_lookup, rint_push, rint_push_lookup
from ._window_base import RingOperator
from ._window_kernels import first_dead, seqs_increasing


class RInt(RingOperator):
    name = "rint"
    aggs = ("sum", "count", "avg")

    def _alloc(self, cap: int) -> None:
        self.p_hi = np.zeros(cap, np.float64)
        self.p_lo = np.zeros(cap, np.float64)
        self.p_cnt = np.zeros(cap, np.int64)

    def _struct_nbytes(self) -> int:
        return self.p_hi.nbytes + self.p_lo.nbytes + self.p_cnt.nbytes

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        rint_push(self.p_hi, self.p_lo, self.p_cnt, self.mask, pos0, vals)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        rint_lookup(qids, n, t_now, self.time_based, self.code, self.q_left, self.q_right, self.q_start,
                    self.seqs, self.times, self.mask, self.V, self.m, self.last_seq,
                    self.p_hi, self.p_lo, self.p_cnt, out)

    def push_lookup(self, values: np.ndarray, seqs: np.ndarray, cuts: np.ndarray, ns: np.ndarray,
                    starts: np.ndarray, qids: np.ndarray) -> np.ndarray | None:
        """Rows windows: the elements pushed in turn up to each position ``ns[c]`` (the first
        ``cuts[c]`` of them) and the queries ``qids[starts[c]:starts[c + 1]]`` answered there, in
        one kernel call: the answers of ``push`` then ``lookup`` per position. None (nothing done)
        when one of those pushes would resize the rings (the caller then goes position by position)."""
        k = len(values)
        if self.time_based or self._dirty or (self.reach > self._room and self.m + k - self.p0min > self._room):
            return None
        v = np.ascontiguousarray(values, np.float64)
        s = np.ascontiguousarray(seqs, np.int64)
        if k and not seqs_increasing(s, self.last_seq if self.m else -(2**62)):
            raise ValueError("seqs must be strictly increasing across pushes")
        bad = first_dead(qids, self.q_alive)
        if bad >= 0:
            raise KeyError(f"qid {int(qids[bad])} is not registered")
        out = np.empty(len(qids), np.float64)
        m, last = rint_push_lookup(self.p_hi, self.p_lo, self.p_cnt, self.seqs, self.vals, self.mask, self.floor,
                                   self.m, self.last_seq, s, v, cuts, ns, starts, qids, self.code, self.q_left,
                                   self.q_right, self.q_start, out)
        if k:
            self.m, self.last_seq = int(m), int(last)
        return out
