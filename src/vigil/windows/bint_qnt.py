"""B-INT-QNT, quantiles over base intervals (paper 002, §3.3).

For every active base-interval (§3.1.1) B-INT-QNT keeps a sorted array of its elements; a lookup
of QUANTILE(phi) over (l, r) decomposes (l, r) into p = O(log W) base-intervals (Theorem 3.1) and
selects the element of rank max(1, ceil(phi*N)) over their p sorted arrays by a greedy
weighted-median selection (kernels in ``_bint_qnt_kernels``). Queries of one group may differ in
phi (the paper's one exception to "same aggregate").

Bounds: UPDATE O(log N_max) amortized (a completed level-l block is the merge of its two
children), space O(N_max log N_max) (one ring of cap slots per level, cap = N_max+1 rounded up to
a power of two, x2 headroom), LOOKUP O(p log q log W) comparisons with p <= 2 log2 W pieces of
length q <= W (the paper states O(p log p log q) for its greedy algorithm, i.e. O(log^2 W log log W);
ours pays a log W for a simpler pivot rule: weighted median of the pieces' middles).

Rank: the paper selects the element of rank floor(phi*N) (§3.3); vigil selects rank
max(1, ceil(phi*N)), the one quantile definition of the project (docs/contract.md, "Window
aggregates"; ``vigil.arrays.quantile_rank``), which every windows implementation, the quantiles
family and the oracles share. The two differ whenever phi*N is not an integer (and at small phi*N,
where floor gives rank 0, which is no element): ceil is the SQL PERCENTILE_DISC / nearest-rank
definition, always names an element for phi in (0, 1], and gives the maximum at phi = 1. phi is
read as the decimal it is written as; the kernels compute the rank exactly in 64-bit integers from
``vigil.arrays.rank_fraction(phi)`` for windows of up to 2^47 elements.
Serves QUANTILE only, rows and time windows, suffix and historical.
"""

from __future__ import annotations

import numpy as np

from ._bint_qnt_kernels import qnt_lookup, qnt_push
from ._window_base import RingOperator


class BIntQnt(RingOperator):
    name = "bint_qnt"
    aggs = ("quantile",)
    # windows of <= direct elements: quickselect over the raw value ring (see _bint_qnt_kernels.
    # qnt_lookup); 0 = always the §3.3 selection (``bint_qnt``); ``auto`` sets auto.QUANTILE_DIRECT
    direct = 0

    def _alloc(self, cap: int) -> None:
        self.levels = cap.bit_length() - 2  # widths up to cap/2
        self.lq = np.full((self.levels + 1) * cap, np.nan, np.float64)
        self._tmp = np.empty(cap, np.float64)

    def _struct_nbytes(self) -> int:
        return self.lq.nbytes + self._tmp.nbytes

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        qnt_push(self.lq, self.cap, self.levels, pos0, vals, self._tmp)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        qnt_lookup(qids, n, t_now, self.time_based, self.q_left, self.q_right, self.q_start, self.q_phi,
                   self.q_num, self.q_den, self.seqs, self.times, self.mask, self.V, self.m, self.last_seq,
                   self.lq, self.cap, self.vals, self.direct, out)
