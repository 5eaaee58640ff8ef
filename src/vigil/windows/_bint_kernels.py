"""Numba kernels of B-INT (paper 002, §3.1.1, Fig. 3; §5: "an array of size N_max for the level-0
intervals, an array of size N_max/2 for level-1 intervals, and so on ... bit-level operations").

Levels live in one flat float64 array: level l starts at offset 2*cap - 2*(cap >> l) and is a ring
of cap >> l slots; the level-l base-interval number i (0-based: positions i*2^l+1 .. (i+1)*2^l)
sits in slot i & ((cap >> l) - 1). A lookup walks the levels bottom-up with the interval's two
ends (lo, hi) as in an iterative segment tree: at each level an odd end takes one base-interval
and both ends shift right by one bit, so (l, r) is decomposed into its canonical base-intervals
(Theorem 3.1) with O(log W) shifts and tests, no division.
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_kernels import window_bounds


@numba.njit(cache=True, nogil=True)
def bint_push_mm(lv, cap, levels, pos0, vals, is_max):
    """UPDATE for MIN/MAX (Fig. 3): the new level-0 interval, then every base-interval it
    completes, each from its two children (step 5); amortized O(1). Ring slots overwritten are
    the base-intervals that ceased to be active (step 6)."""
    ident = -np.inf if is_max else np.inf
    m0 = cap - 1
    for j in range(len(vals)):
        p = pos0 + j
        v = vals[j]
        if v != v:
            v = ident
        lv[p & m0] = v
        q = p
        off = 0
        size = cap
        lev = 0
        while (q & 1) == 1 and lev < levels:
            x = lv[off + ((q - 1) & (size - 1))]
            y = lv[off + (q & (size - 1))]
            r = x
            if is_max:
                if y > r:
                    r = y
            elif y < r:
                r = y
            off += size
            size >>= 1
            q >>= 1
            lev += 1
            lv[off + (q & (size - 1))] = r


@numba.njit(cache=True, nogil=True)
def bint_push_sum(ls, lc, cap, levels, pos0, vals):
    """UPDATE for SUM/COUNT/AVG: level sums and level counts of non-null values."""
    m0 = cap - 1
    for j in range(len(vals)):
        p = pos0 + j
        v = vals[j]
        c = 1.0
        if v != v:
            v = 0.0
            c = 0.0
        ls[p & m0] = v
        lc[p & m0] = c
        q = p
        off = 0
        size = cap
        lev = 0
        while (q & 1) == 1 and lev < levels:
            i0 = off + ((q - 1) & (size - 1))
            i1 = off + (q & (size - 1))
            s = ls[i0] + ls[i1]
            cc = lc[i0] + lc[i1]
            off += size
            size >>= 1
            q >>= 1
            lev += 1
            ls[off + (q & (size - 1))] = s
            lc[off + (q & (size - 1))] = cc


@numba.njit(cache=True, nogil=True)
def range_mm(lv, cap, a, b, is_max):
    """Aggregate of positions a..b (1-based) over the active base-intervals: O(log W)."""
    lo = a - 1
    hi = b
    r = -np.inf if is_max else np.inf
    off = 0
    size = cap
    while lo < hi:
        if lo & 1:
            x = lv[off + (lo & (size - 1))]
            if is_max:
                if x > r:
                    r = x
            elif x < r:
                r = x
            lo += 1
        if hi & 1:
            hi -= 1
            x = lv[off + (hi & (size - 1))]
            if is_max:
                if x > r:
                    r = x
            elif x < r:
                r = x
        lo >>= 1
        hi >>= 1
        off += size
        size >>= 1
    return r


@numba.njit(cache=True, nogil=True)
def range_sum(ls, lc, cap, a, b):
    lo = a - 1
    hi = b
    s = 0.0
    c = 0.0
    off = 0
    size = cap
    while lo < hi:
        if lo & 1:
            s += ls[off + (lo & (size - 1))]
            c += lc[off + (lo & (size - 1))]
            lo += 1
        if hi & 1:
            hi -= 1
            s += ls[off + (hi & (size - 1))]
            c += lc[off + (hi & (size - 1))]
        lo >>= 1
        hi >>= 1
        off += size
        size >>= 1
    return s, c


@numba.njit(cache=True, nogil=True)
def bint_lookup(qids, n, t_now, time_based, code, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq,
                lv, ls, lc, cap, out):
    """LOOKUP(I) (Fig. 3) for every qid: O(log W) each."""
    for k in range(len(qids)):
        a, b = window_bounds(qids[k], n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m,
                             last_seq)
        if a > b:
            out[k] = 0.0 if code == 1 else np.nan
            continue
        if code >= 3:
            r = range_mm(lv, cap, a, b, code == 4)
            out[k] = np.nan if (r == np.inf or r == -np.inf) else r
            continue
        s, c = range_sum(ls, lc, cap, a, b)
        if code == 1:
            out[k] = c
        elif c == 0:
            out[k] = np.nan
        else:
            out[k] = s / c if code == 2 else s
