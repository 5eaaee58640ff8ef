"""Sorting networks for the <= 16-element windows of ``wavelet_qnt`` (:func:`vigil.windows.
_wavelet_kernels.small_select`): the window's values are loaded from the ring into scalars and
sorted by straight-line compare-exchanges (min/max, no data-dependent branch), Batcher's odd-even
merge sort (Batcher, "Sorting networks and their applications", AFIPS 1968; Knuth TAOCP vol. 3,
§5.3.4) on the next power of two, pruned to the padded size P (a comparator touching a slot >= P
is a no-op when slots >= P hold +inf). Generated code (one function per even P);
``tests/windows/test_wavelet_qnt.py`` checks every network on all 2^P 0-1 inputs (the 0-1
principle)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _ld(vals, mask, a, n, i):
    """(value, 1) of ring position a+i, (+inf, 0) for a NULL or past the window (i >= n)."""
    if i >= n:
        return np.inf, 0
    y = vals[(a + i) & mask]
    return (y, 1) if y == y else (np.inf, 0)


@numba.njit(cache=True, nogil=True)
def sort2(vals, mask, a, n, buf):
    """buf[:2] = ring values a..a+n-1 (n <= 2) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 2 inputs pruned to 2: 1 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    c = c0 + c1
    x0, x1 = min(x0, x1), max(x0, x1)
    buf[0] = x0
    buf[1] = x1
    return c


@numba.njit(cache=True, nogil=True)
def sort4(vals, mask, a, n, buf):
    """buf[:4] = ring values a..a+n-1 (n <= 4) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 4 inputs pruned to 4: 5 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    c = c0 + c1 + c2 + c3
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    return c


@numba.njit(cache=True, nogil=True)
def sort6(vals, mask, a, n, buf):
    """buf[:6] = ring values a..a+n-1 (n <= 6) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 8 inputs pruned to 6: 12 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    x4, c4 = _ld(vals, mask, a, n, 4)
    x5, c5 = _ld(vals, mask, a, n, 5)
    c = c0 + c1 + c2 + c3 + c4 + c5
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    x4, x5 = min(x4, x5), max(x4, x5)
    x0, x4 = min(x0, x4), max(x0, x4)
    x2, x4 = min(x2, x4), max(x2, x4)
    x1, x5 = min(x1, x5), max(x1, x5)
    x3, x5 = min(x3, x5), max(x3, x5)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    buf[4] = x4
    buf[5] = x5
    return c


@numba.njit(cache=True, nogil=True)
def sort8(vals, mask, a, n, buf):
    """buf[:8] = ring values a..a+n-1 (n <= 8) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 8 inputs pruned to 8: 19 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    x4, c4 = _ld(vals, mask, a, n, 4)
    x5, c5 = _ld(vals, mask, a, n, 5)
    x6, c6 = _ld(vals, mask, a, n, 6)
    x7, c7 = _ld(vals, mask, a, n, 7)
    c = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    x4, x5 = min(x4, x5), max(x4, x5)
    x6, x7 = min(x6, x7), max(x6, x7)
    x4, x6 = min(x4, x6), max(x4, x6)
    x5, x7 = min(x5, x7), max(x5, x7)
    x5, x6 = min(x5, x6), max(x5, x6)
    x0, x4 = min(x0, x4), max(x0, x4)
    x2, x6 = min(x2, x6), max(x2, x6)
    x2, x4 = min(x2, x4), max(x2, x4)
    x1, x5 = min(x1, x5), max(x1, x5)
    x3, x7 = min(x3, x7), max(x3, x7)
    x3, x5 = min(x3, x5), max(x3, x5)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    buf[4] = x4
    buf[5] = x5
    buf[6] = x6
    buf[7] = x7
    return c


@numba.njit(cache=True, nogil=True)
def sort10(vals, mask, a, n, buf):
    """buf[:10] = ring values a..a+n-1 (n <= 10) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 16 inputs pruned to 10: 32 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    x4, c4 = _ld(vals, mask, a, n, 4)
    x5, c5 = _ld(vals, mask, a, n, 5)
    x6, c6 = _ld(vals, mask, a, n, 6)
    x7, c7 = _ld(vals, mask, a, n, 7)
    x8, c8 = _ld(vals, mask, a, n, 8)
    x9, c9 = _ld(vals, mask, a, n, 9)
    c = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7
    c += c8 + c9
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    x4, x5 = min(x4, x5), max(x4, x5)
    x6, x7 = min(x6, x7), max(x6, x7)
    x4, x6 = min(x4, x6), max(x4, x6)
    x5, x7 = min(x5, x7), max(x5, x7)
    x5, x6 = min(x5, x6), max(x5, x6)
    x0, x4 = min(x0, x4), max(x0, x4)
    x2, x6 = min(x2, x6), max(x2, x6)
    x2, x4 = min(x2, x4), max(x2, x4)
    x1, x5 = min(x1, x5), max(x1, x5)
    x3, x7 = min(x3, x7), max(x3, x7)
    x3, x5 = min(x3, x5), max(x3, x5)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x8, x9 = min(x8, x9), max(x8, x9)
    x0, x8 = min(x0, x8), max(x0, x8)
    x4, x8 = min(x4, x8), max(x4, x8)
    x2, x4 = min(x2, x4), max(x2, x4)
    x6, x8 = min(x6, x8), max(x6, x8)
    x1, x9 = min(x1, x9), max(x1, x9)
    x5, x9 = min(x5, x9), max(x5, x9)
    x3, x5 = min(x3, x5), max(x3, x5)
    x7, x9 = min(x7, x9), max(x7, x9)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x7, x8 = min(x7, x8), max(x7, x8)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    buf[4] = x4
    buf[5] = x5
    buf[6] = x6
    buf[7] = x7
    buf[8] = x8
    buf[9] = x9
    return c


@numba.njit(cache=True, nogil=True)
def sort12(vals, mask, a, n, buf):
    """buf[:12] = ring values a..a+n-1 (n <= 12) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 16 inputs pruned to 12: 42 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    x4, c4 = _ld(vals, mask, a, n, 4)
    x5, c5 = _ld(vals, mask, a, n, 5)
    x6, c6 = _ld(vals, mask, a, n, 6)
    x7, c7 = _ld(vals, mask, a, n, 7)
    x8, c8 = _ld(vals, mask, a, n, 8)
    x9, c9 = _ld(vals, mask, a, n, 9)
    x10, c10 = _ld(vals, mask, a, n, 10)
    x11, c11 = _ld(vals, mask, a, n, 11)
    c = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7
    c += c8 + c9 + c10 + c11
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    x4, x5 = min(x4, x5), max(x4, x5)
    x6, x7 = min(x6, x7), max(x6, x7)
    x4, x6 = min(x4, x6), max(x4, x6)
    x5, x7 = min(x5, x7), max(x5, x7)
    x5, x6 = min(x5, x6), max(x5, x6)
    x0, x4 = min(x0, x4), max(x0, x4)
    x2, x6 = min(x2, x6), max(x2, x6)
    x2, x4 = min(x2, x4), max(x2, x4)
    x1, x5 = min(x1, x5), max(x1, x5)
    x3, x7 = min(x3, x7), max(x3, x7)
    x3, x5 = min(x3, x5), max(x3, x5)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x8, x9 = min(x8, x9), max(x8, x9)
    x10, x11 = min(x10, x11), max(x10, x11)
    x8, x10 = min(x8, x10), max(x8, x10)
    x9, x11 = min(x9, x11), max(x9, x11)
    x9, x10 = min(x9, x10), max(x9, x10)
    x9, x10 = min(x9, x10), max(x9, x10)
    x0, x8 = min(x0, x8), max(x0, x8)
    x4, x8 = min(x4, x8), max(x4, x8)
    x2, x10 = min(x2, x10), max(x2, x10)
    x6, x10 = min(x6, x10), max(x6, x10)
    x2, x4 = min(x2, x4), max(x2, x4)
    x6, x8 = min(x6, x8), max(x6, x8)
    x1, x9 = min(x1, x9), max(x1, x9)
    x5, x9 = min(x5, x9), max(x5, x9)
    x3, x11 = min(x3, x11), max(x3, x11)
    x7, x11 = min(x7, x11), max(x7, x11)
    x3, x5 = min(x3, x5), max(x3, x5)
    x7, x9 = min(x7, x9), max(x7, x9)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x7, x8 = min(x7, x8), max(x7, x8)
    x9, x10 = min(x9, x10), max(x9, x10)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    buf[4] = x4
    buf[5] = x5
    buf[6] = x6
    buf[7] = x7
    buf[8] = x8
    buf[9] = x9
    buf[10] = x10
    buf[11] = x11
    return c


@numba.njit(cache=True, nogil=True)
def sort14(vals, mask, a, n, buf):
    """buf[:14] = ring values a..a+n-1 (n <= 14) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 16 inputs pruned to 14: 53 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    x4, c4 = _ld(vals, mask, a, n, 4)
    x5, c5 = _ld(vals, mask, a, n, 5)
    x6, c6 = _ld(vals, mask, a, n, 6)
    x7, c7 = _ld(vals, mask, a, n, 7)
    x8, c8 = _ld(vals, mask, a, n, 8)
    x9, c9 = _ld(vals, mask, a, n, 9)
    x10, c10 = _ld(vals, mask, a, n, 10)
    x11, c11 = _ld(vals, mask, a, n, 11)
    x12, c12 = _ld(vals, mask, a, n, 12)
    x13, c13 = _ld(vals, mask, a, n, 13)
    c = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7
    c += c8 + c9 + c10 + c11 + c12 + c13
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    x4, x5 = min(x4, x5), max(x4, x5)
    x6, x7 = min(x6, x7), max(x6, x7)
    x4, x6 = min(x4, x6), max(x4, x6)
    x5, x7 = min(x5, x7), max(x5, x7)
    x5, x6 = min(x5, x6), max(x5, x6)
    x0, x4 = min(x0, x4), max(x0, x4)
    x2, x6 = min(x2, x6), max(x2, x6)
    x2, x4 = min(x2, x4), max(x2, x4)
    x1, x5 = min(x1, x5), max(x1, x5)
    x3, x7 = min(x3, x7), max(x3, x7)
    x3, x5 = min(x3, x5), max(x3, x5)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x8, x9 = min(x8, x9), max(x8, x9)
    x10, x11 = min(x10, x11), max(x10, x11)
    x8, x10 = min(x8, x10), max(x8, x10)
    x9, x11 = min(x9, x11), max(x9, x11)
    x9, x10 = min(x9, x10), max(x9, x10)
    x12, x13 = min(x12, x13), max(x12, x13)
    x8, x12 = min(x8, x12), max(x8, x12)
    x10, x12 = min(x10, x12), max(x10, x12)
    x9, x13 = min(x9, x13), max(x9, x13)
    x11, x13 = min(x11, x13), max(x11, x13)
    x9, x10 = min(x9, x10), max(x9, x10)
    x11, x12 = min(x11, x12), max(x11, x12)
    x0, x8 = min(x0, x8), max(x0, x8)
    x4, x12 = min(x4, x12), max(x4, x12)
    x4, x8 = min(x4, x8), max(x4, x8)
    x2, x10 = min(x2, x10), max(x2, x10)
    x6, x10 = min(x6, x10), max(x6, x10)
    x2, x4 = min(x2, x4), max(x2, x4)
    x6, x8 = min(x6, x8), max(x6, x8)
    x10, x12 = min(x10, x12), max(x10, x12)
    x1, x9 = min(x1, x9), max(x1, x9)
    x5, x13 = min(x5, x13), max(x5, x13)
    x5, x9 = min(x5, x9), max(x5, x9)
    x3, x11 = min(x3, x11), max(x3, x11)
    x7, x11 = min(x7, x11), max(x7, x11)
    x3, x5 = min(x3, x5), max(x3, x5)
    x7, x9 = min(x7, x9), max(x7, x9)
    x11, x13 = min(x11, x13), max(x11, x13)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x7, x8 = min(x7, x8), max(x7, x8)
    x9, x10 = min(x9, x10), max(x9, x10)
    x11, x12 = min(x11, x12), max(x11, x12)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    buf[4] = x4
    buf[5] = x5
    buf[6] = x6
    buf[7] = x7
    buf[8] = x8
    buf[9] = x9
    buf[10] = x10
    buf[11] = x11
    buf[12] = x12
    buf[13] = x13
    return c


@numba.njit(cache=True, nogil=True)
def sort16(vals, mask, a, n, buf):
    """buf[:16] = ring values a..a+n-1 (n <= 16) sorted, NULLs and padding as +inf; returns the
    non-null count. Batcher on 16 inputs pruned to 16: 63 compare-exchanges."""
    x0, c0 = _ld(vals, mask, a, n, 0)
    x1, c1 = _ld(vals, mask, a, n, 1)
    x2, c2 = _ld(vals, mask, a, n, 2)
    x3, c3 = _ld(vals, mask, a, n, 3)
    x4, c4 = _ld(vals, mask, a, n, 4)
    x5, c5 = _ld(vals, mask, a, n, 5)
    x6, c6 = _ld(vals, mask, a, n, 6)
    x7, c7 = _ld(vals, mask, a, n, 7)
    x8, c8 = _ld(vals, mask, a, n, 8)
    x9, c9 = _ld(vals, mask, a, n, 9)
    x10, c10 = _ld(vals, mask, a, n, 10)
    x11, c11 = _ld(vals, mask, a, n, 11)
    x12, c12 = _ld(vals, mask, a, n, 12)
    x13, c13 = _ld(vals, mask, a, n, 13)
    x14, c14 = _ld(vals, mask, a, n, 14)
    x15, c15 = _ld(vals, mask, a, n, 15)
    c = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7
    c += c8 + c9 + c10 + c11 + c12 + c13 + c14 + c15
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    x4, x5 = min(x4, x5), max(x4, x5)
    x6, x7 = min(x6, x7), max(x6, x7)
    x4, x6 = min(x4, x6), max(x4, x6)
    x5, x7 = min(x5, x7), max(x5, x7)
    x5, x6 = min(x5, x6), max(x5, x6)
    x0, x4 = min(x0, x4), max(x0, x4)
    x2, x6 = min(x2, x6), max(x2, x6)
    x2, x4 = min(x2, x4), max(x2, x4)
    x1, x5 = min(x1, x5), max(x1, x5)
    x3, x7 = min(x3, x7), max(x3, x7)
    x3, x5 = min(x3, x5), max(x3, x5)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x8, x9 = min(x8, x9), max(x8, x9)
    x10, x11 = min(x10, x11), max(x10, x11)
    x8, x10 = min(x8, x10), max(x8, x10)
    x9, x11 = min(x9, x11), max(x9, x11)
    x9, x10 = min(x9, x10), max(x9, x10)
    x12, x13 = min(x12, x13), max(x12, x13)
    x14, x15 = min(x14, x15), max(x14, x15)
    x12, x14 = min(x12, x14), max(x12, x14)
    x13, x15 = min(x13, x15), max(x13, x15)
    x13, x14 = min(x13, x14), max(x13, x14)
    x8, x12 = min(x8, x12), max(x8, x12)
    x10, x14 = min(x10, x14), max(x10, x14)
    x10, x12 = min(x10, x12), max(x10, x12)
    x9, x13 = min(x9, x13), max(x9, x13)
    x11, x15 = min(x11, x15), max(x11, x15)
    x11, x13 = min(x11, x13), max(x11, x13)
    x9, x10 = min(x9, x10), max(x9, x10)
    x11, x12 = min(x11, x12), max(x11, x12)
    x13, x14 = min(x13, x14), max(x13, x14)
    x0, x8 = min(x0, x8), max(x0, x8)
    x4, x12 = min(x4, x12), max(x4, x12)
    x4, x8 = min(x4, x8), max(x4, x8)
    x2, x10 = min(x2, x10), max(x2, x10)
    x6, x14 = min(x6, x14), max(x6, x14)
    x6, x10 = min(x6, x10), max(x6, x10)
    x2, x4 = min(x2, x4), max(x2, x4)
    x6, x8 = min(x6, x8), max(x6, x8)
    x10, x12 = min(x10, x12), max(x10, x12)
    x1, x9 = min(x1, x9), max(x1, x9)
    x5, x13 = min(x5, x13), max(x5, x13)
    x5, x9 = min(x5, x9), max(x5, x9)
    x3, x11 = min(x3, x11), max(x3, x11)
    x7, x15 = min(x7, x15), max(x7, x15)
    x7, x11 = min(x7, x11), max(x7, x11)
    x3, x5 = min(x3, x5), max(x3, x5)
    x7, x9 = min(x7, x9), max(x7, x9)
    x11, x13 = min(x11, x13), max(x11, x13)
    x1, x2 = min(x1, x2), max(x1, x2)
    x3, x4 = min(x3, x4), max(x3, x4)
    x5, x6 = min(x5, x6), max(x5, x6)
    x7, x8 = min(x7, x8), max(x7, x8)
    x9, x10 = min(x9, x10), max(x9, x10)
    x11, x12 = min(x11, x12), max(x11, x12)
    x13, x14 = min(x13, x14), max(x13, x14)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3
    buf[4] = x4
    buf[5] = x5
    buf[6] = x6
    buf[7] = x7
    buf[8] = x8
    buf[9] = x9
    buf[10] = x10
    buf[11] = x11
    buf[12] = x12
    buf[13] = x13
    buf[14] = x14
    buf[15] = x15
    return c
