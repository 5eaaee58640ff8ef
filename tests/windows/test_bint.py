"""B-INT specifics: the kernels' bit-walk decomposition is the canonical one of Theorem 3.1 (the
reference :func:`vigil.windows.bint.base_intervals`), lookups touch only active base-intervals,
and amortized O(1) update work."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.specs import parse_query
from vigil.windows._bint_kernels import range_sum
from vigil.windows.bint import BInt, base_intervals


def _walk(a: int, b: int) -> list[tuple[int, int]]:
    """The kernels' bottom-up walk, recording the base-intervals it combines."""
    lo, hi, lev, out = a - 1, b, 0, []
    while lo < hi:
        if lo & 1:
            out.append((lo << lev) + 1)
            out[-1] = (out[-1], out[-1] + (1 << lev) - 1)
            lo += 1
        if hi & 1:
            hi -= 1
            s = (hi << lev) + 1
            out.append((s, s + (1 << lev) - 1))
        lo >>= 1
        hi >>= 1
        lev += 1
    return sorted(out)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000), st.integers(0, 5000))
def test_bit_walk_is_the_canonical_decomposition(a, w):
    b = a + w
    assert _walk(a, b) == base_intervals(a, b)
    assert len(base_intervals(a, b)) <= 2 * max(1, (w + 1).bit_length())


def test_paper_example_3_1_through_the_kernel():
    op = BInt("sum", False)
    op.register(0, parse_query({"type": "window_aggregate", "id": "x", "agg": "sum", "column": "v", "rows": [64, 0]}), 0)
    op.push(np.arange(1, 44, dtype=np.float64), np.arange(1, 44))
    s, c = range_sum(op.ls, op.lc, op.cap, 1, 43)
    assert (s, c) == (43 * 44 / 2, 43)
    assert op.lookup(np.array([0]), 43)[0] == 43 * 44 / 2


def test_capacity_is_twice_n_max_rounded_up():
    op = BInt("max", False)
    op.register(0, parse_query({"type": "window_aggregate", "id": "x", "agg": "max", "column": "v", "rows": [1000, 0]}), 0)
    assert op.cap == 16  # nothing held yet: capacity follows the elements, not the window's length
    op.push(np.ones(500), np.arange(1, 501))
    assert op.cap == 1024  # grows by doubling with the elements held (2 * 501 rounded up)
    op.push(np.ones(5000), np.arange(501, 5501))
    assert op.cap == 2048 and op.lv.nbytes == 2 * 2048 * 8  # capped by the window: 2 * (N_max + 1)
