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

from ._rint_kernels import rint_lookup, rint_push
from ._window_base import RingOperator


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
