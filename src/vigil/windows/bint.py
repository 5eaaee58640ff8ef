"""B-INT, base intervals (paper 002, §3.1.1, Definition 3.1, Fig. 3, Theorems 3.1-3.2; §5: one
array per level, bit operations to decompose a lookup).

B-INT precomputes f(I_b) for the *active* base-intervals I_b = (2^l i + 1, 2^l (i+1)) (those inside
the last N_max positions) and answers LOOKUP(l, r) by combining the O(log W) base-intervals whose
disjoint union is (l, r) (Theorem 3.1). Serves every distributive / algebraic aggregate: SUM,
COUNT, AVG (level sums + level counts of non-null values) and MIN, MAX (one level array).

Layout (§5): level l is a ring of cap >> l slots (cap = N_max+1 rounded up to a power of two, x2
headroom), all levels in one flat array (2*cap slots); kernels in ``_bint_kernels``.

Bounds (Theorem 3.2): space O(N_max) (2*cap values per level array), UPDATE amortized O(1) (a new
element completes z+1 base-intervals when 2^z divides its position; each from its two children),
LOOKUP O(log W) worst case, independent of N_max (+ O(log N_max) to find the window's positions
when seqs have gaps or for time windows, by binary search over the seq / timestamp rings).

Precision: SUM adds O(log W) partial sums in float64 (exact for integers below 2^53; for other
floats within ~log2(W) ulps of sum |x|, unlike a running sum's cancellation). MIN/MAX assume
finite values (the engine rejects NaN/inf rows; a window whose values are all NULL reads NULL).
Serves rows and time windows, suffix and historical.

:func:`base_intervals` (below) is the reference decomposition of Theorem 3.1 in plain Python,
used by the tests and docs; the kernels do the same walk with bit operations.

Definition 3.1: over 1-based stream positions, the level-l base-interval number i >= 0 is
(2^l * i + 1, 2^l * (i + 1)): width 2^l, left end - 1 a multiple of 2^l ("dyadic intervals").

:func:`base_intervals` returns the *canonical* decomposition: from the left end, repeatedly take
the widest base-interval that starts there and fits in what is left. Widths first grow (the
alignment of the left end allows ever larger levels) then shrink (the remaining length does not),
so the result has at most 2*floor(log2 W) + 1 pieces (W = r - l + 1), it is the minimum number of
base-intervals whose disjoint union is (l, r), and it takes O(log W) time (Theorem 3.1).

Note on Example 3.1: the paper decomposes (1, 43) as (1,2), (3,4), (5,8), (9,16), (17,32),
(33,40), (41,42), (43,43). That is *a* valid disjoint union of base-intervals, but not the
minimal one: (1,2) through (17,32) together form the single level-5 base-interval
(1, 32) = (2^5*0 + 1, 2^5*1). This function returns (1,32), (33,40), (41,42), (43,43); the right
part coincides with the paper's. Both yield the same f(I) for a distributive f.
"""

from __future__ import annotations

import numpy as np

from ._bint_kernels import bint_lookup, bint_push_mm, bint_push_sum
from ._window_base import RingOperator


def base_intervals(l: int, r: int) -> list[tuple[int, int]]:  # noqa: E741
    """Canonical decomposition of the position interval (l, r) (1-based, inclusive) into
    base-intervals, left to right: [(l_1, r_1), ..., (l_k, r_k)] with l_1 = l, r_k = r and
    r_i + 1 = l_{i+1}. Empty list when l > r (an empty window). O(log W) time.

    >>> base_intervals(1, 43)
    [(1, 32), (33, 40), (41, 42), (43, 43)]
    >>> base_intervals(6, 13)
    [(6, 6), (7, 8), (9, 12), (13, 13)]
    """
    l, r = int(l), int(r)  # noqa: E741
    if l < 1:
        raise ValueError(f"positions are 1-based; got left end {l}")
    out: list[tuple[int, int]] = []
    p = l
    while p <= r:
        width = 1
        # grow while the doubled interval is still a base-interval (aligned) and still fits
        while (p - 1) % (2 * width) == 0 and p + 2 * width - 1 <= r:
            width *= 2
        out.append((p, p + width - 1))
        p += width
    return out


class BInt(RingOperator):
    name = "bint"
    aggs = ("sum", "count", "avg", "min", "max")

    def _alloc(self, cap: int) -> None:
        self.levels = cap.bit_length() - 1
        mm = self.code >= 3
        self.lv = np.zeros(2 * cap if mm else 1, np.float64)
        self.ls = np.zeros(1 if mm else 2 * cap, np.float64)
        self.lc = np.zeros(1 if mm else 2 * cap, np.float64)

    def _struct_nbytes(self) -> int:
        return self.lv.nbytes + self.ls.nbytes + self.lc.nbytes

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        if self.code >= 3:
            bint_push_mm(self.lv, self.cap, self.levels, pos0, vals, self.code == 4)
        else:
            bint_push_sum(self.ls, self.lc, self.cap, self.levels, pos0, vals)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        bint_lookup(qids, n, t_now, self.time_based, self.code, self.q_left, self.q_right, self.q_start,
                    self.seqs, self.times, self.mask, self.V, self.m, self.last_seq,
                    self.lv, self.ls, self.lc, self.cap, out)
