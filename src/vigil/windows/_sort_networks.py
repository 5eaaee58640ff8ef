"""Sorting networks for the <= 16-element windows of ``wavelet_qnt`` (:func:`vigil.windows.
_wavelet_kernels.small_select`): straight-line compare-exchanges over scalars (min/max, no
data-dependent branch), Batcher's odd-even merge sort (Batcher, "Sorting networks and their
applications", AFIPS 1968; Knuth TAOCP vol. 3, §5.3.4) on the next power of two, pruned to the
padded size P (a comparator touching a slot >= P is a no-op when slots >= P hold +inf).
Generated code (one function per even P); ``tests/windows/test_wavelet_qnt.py`` checks every
network on all 2^P 0-1 inputs (the 0-1 principle)."""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True, inline="always")
def net2(buf):
    """Sort buf[:2]: Batcher's odd-even merge sort on 2 inputs, pruned to 2 (1 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x0, x1 = min(x0, x1), max(x0, x1)
    buf[0] = x0
    buf[1] = x1


@numba.njit(cache=True, nogil=True, inline="always")
def net4(buf):
    """Sort buf[:4]: Batcher's odd-even merge sort on 4 inputs, pruned to 4 (5 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x0, x1 = min(x0, x1), max(x0, x1)
    x2, x3 = min(x2, x3), max(x2, x3)
    x0, x2 = min(x0, x2), max(x0, x2)
    x1, x3 = min(x1, x3), max(x1, x3)
    x1, x2 = min(x1, x2), max(x1, x2)
    buf[0] = x0
    buf[1] = x1
    buf[2] = x2
    buf[3] = x3


@numba.njit(cache=True, nogil=True, inline="always")
def net6(buf):
    """Sort buf[:6]: Batcher's odd-even merge sort on 8 inputs, pruned to 6 (12 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x4 = buf[4]
    x5 = buf[5]
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


@numba.njit(cache=True, nogil=True, inline="always")
def net8(buf):
    """Sort buf[:8]: Batcher's odd-even merge sort on 8 inputs, pruned to 8 (19 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x4 = buf[4]
    x5 = buf[5]
    x6 = buf[6]
    x7 = buf[7]
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


@numba.njit(cache=True, nogil=True, inline="always")
def net10(buf):
    """Sort buf[:10]: Batcher's odd-even merge sort on 16 inputs, pruned to 10 (32 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x4 = buf[4]
    x5 = buf[5]
    x6 = buf[6]
    x7 = buf[7]
    x8 = buf[8]
    x9 = buf[9]
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


@numba.njit(cache=True, nogil=True, inline="always")
def net12(buf):
    """Sort buf[:12]: Batcher's odd-even merge sort on 16 inputs, pruned to 12 (42 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x4 = buf[4]
    x5 = buf[5]
    x6 = buf[6]
    x7 = buf[7]
    x8 = buf[8]
    x9 = buf[9]
    x10 = buf[10]
    x11 = buf[11]
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


@numba.njit(cache=True, nogil=True, inline="always")
def net14(buf):
    """Sort buf[:14]: Batcher's odd-even merge sort on 16 inputs, pruned to 14 (53 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x4 = buf[4]
    x5 = buf[5]
    x6 = buf[6]
    x7 = buf[7]
    x8 = buf[8]
    x9 = buf[9]
    x10 = buf[10]
    x11 = buf[11]
    x12 = buf[12]
    x13 = buf[13]
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


@numba.njit(cache=True, nogil=True, inline="always")
def net16(buf):
    """Sort buf[:16]: Batcher's odd-even merge sort on 16 inputs, pruned to 16 (63 compare-exchanges)."""
    x0 = buf[0]
    x1 = buf[1]
    x2 = buf[2]
    x3 = buf[3]
    x4 = buf[4]
    x5 = buf[5]
    x6 = buf[6]
    x7 = buf[7]
    x8 = buf[8]
    x9 = buf[9]
    x10 = buf[10]
    x11 = buf[11]
    x12 = buf[12]
    x13 = buf[13]
    x14 = buf[14]
    x15 = buf[15]
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
