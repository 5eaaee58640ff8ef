"""Numba kernels of B-INT-QNT (paper 002, §3.3): one sorted array per active base-interval.

Level l (0 <= l <= L) is a ring of cap float64 slots in which every aligned block of 2^l slots is
the sorted content of one level-l base-interval: block i (positions i*2^l+1 .. (i+1)*2^l) starts at
slot (i << l) & (cap - 1). A completed level-(l+1) block is the merge of its two level-l children
(O(2^l)), so each element costs O(1) per level: O(log N_max) amortized, O(N_max log N_max) space.
NULLs (NaN) sort last and are not counted.

Selection of the k-th smallest over the p sorted pieces of a lookup (the "greedy algorithm" of
§3.3): repeat { pivot = the weighted median of the pieces' middle elements (weights = their active
lengths); count the active elements < pivot and <= pivot in every piece by binary search; keep
the side that holds rank k }. Every round discards >= 1/4 of the active elements, so a lookup is
O(p log q log W) comparisons (p <= 2 log W pieces of length <= q); the last <= GATHER = 64 active elements
are gathered and quickselected.
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_kernels import quantile_rank, window_bounds


@numba.njit(cache=True, nogil=True)
def _le(x, y):  # x <= y with NaN the largest value
    return x <= y or y != y


@numba.njit(cache=True, nogil=True)
def qnt_push(lq, cap, levels, pos0, vals, tmp):
    mask = cap - 1
    for j in range(len(vals)):
        p = pos0 + j
        lq[p & mask] = vals[j]
        q = p
        lev = 0
        while (q & 1) == 1 and lev < levels:
            w = 1 << lev
            a0 = lev * cap + (((q - 1) << lev) & mask)
            b0 = lev * cap + ((q << lev) & mask)
            dst = (lev + 1) * cap + (((q - 1) << lev) & mask)
            i = 0
            jj = 0
            o = 0
            while i < w and jj < w:
                x = lq[a0 + i]
                y = lq[b0 + jj]
                if _le(x, y):
                    tmp[o] = x
                    i += 1
                else:
                    tmp[o] = y
                    jj += 1
                o += 1
            while i < w:
                tmp[o] = lq[a0 + i]
                i += 1
                o += 1
            while jj < w:
                tmp[o] = lq[b0 + jj]
                jj += 1
                o += 1
            for t in range(2 * w):
                lq[dst + t] = tmp[t]
            q >>= 1
            lev += 1


@numba.njit(cache=True, nogil=True)
def _lower(lq, lo, hi, x):  # first index in [lo, hi) with lq[i] >= x (values non-NaN)
    while lo < hi:
        mid = (lo + hi) >> 1
        if lq[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _upper(lq, lo, hi, x):  # first index in [lo, hi) with lq[i] > x
    while lo < hi:
        mid = (lo + hi) >> 1
        if lq[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


GATHER = 64  # at most this many active elements: gather them and quickselect
DIRECT_MAX = 512  # largest ``direct`` cut (the gather buffer)


@numba.njit(cache=True, nogil=True)
def _quickselect(a, n, k):
    """k-th smallest (0-based) of a[:n], in place (Hoare partition, median-of-three pivot)."""
    lo = 0
    hi = n - 1
    while hi > lo:
        mid = (lo + hi) >> 1
        x, y, z = a[lo], a[mid], a[hi]
        piv = y if (x <= y <= z or z <= y <= x) else (x if (y <= x <= z or z <= x <= y) else z)
        i = lo
        j = hi
        while i <= j:
            while a[i] < piv:
                i += 1
            while a[j] > piv:
                j -= 1
            if i <= j:
                t = a[i]
                a[i] = a[j]
                a[j] = t
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
    return a[k]


@numba.njit(cache=True, nogil=True)
def _count_select(a, n, k):
    """k-th smallest (0-based) of a[:n] by counting ranks: O(n^2) branch-free compares, faster than
    quickselect for a handful of values (n <= SMALL)."""
    for i in range(n):
        x = a[i]
        lt = 0
        le = 0
        for j in range(n):
            y = a[j]
            lt += y < x
            le += y <= x
        if lt <= k < le:
            return x
    return a[k]


SMALL = 8


@numba.njit(cache=True, nogil=True)
def select_kth(lq, lo, hi, p, k, mv, mw, less, leq, tmp):
    """k-th smallest (1-based) over the sorted pieces lq[lo[i]:hi[i]], i < p (lo/hi modified)."""
    total = 0
    for i in range(p):
        total += hi[i] - lo[i]
    while True:
        if total <= GATHER:
            c = 0
            for i in range(p):
                for t in range(lo[i], hi[i]):
                    tmp[c] = lq[t]
                    c += 1
            return _quickselect(tmp, c, k - 1)
        c = 0
        for i in range(p):
            w = hi[i] - lo[i]
            if w > 0:
                x = lq[lo[i] + (w >> 1)]
                u = c
                while u > 0 and mv[u - 1] > x:
                    mv[u] = mv[u - 1]
                    mw[u] = mw[u - 1]
                    u -= 1
                mv[u] = x
                mw[u] = w
                c += 1
        acc = 0
        piv = mv[c - 1]
        for u in range(c):
            acc += mw[u]
            if 2 * acc >= total:
                piv = mv[u]
                break
        nl = 0
        ne = 0
        for i in range(p):
            a = _lower(lq, lo[i], hi[i], piv)
            b = _upper(lq, a, hi[i], piv)
            less[i] = a
            leq[i] = b
            nl += a - lo[i]
            ne += b - a
        if k <= nl:
            for i in range(p):
                hi[i] = less[i]
            total = nl
        elif k <= nl + ne:
            return piv
        else:
            k -= nl + ne
            for i in range(p):
                lo[i] = leq[i]
            total -= nl + ne


@numba.njit(cache=True, nogil=True)
def _nonnull(lq, lo, hi):  # end of the non-NaN prefix of a sorted piece
    if hi > lo and lq[hi - 1] == lq[hi - 1]:
        return hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if lq[mid] == lq[mid]:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def qnt_lookup(qids, n, t_now, time_based, q_left, q_right, q_start, q_phi, q_num, q_den, seqs, times, mask, V, m,
               last_seq, lq, cap, vals, direct, out):
    """QUANTILE LOOKUP of every qid. ``direct`` = 0: the §3.3 selection over the window's sorted
    base-interval arrays. ``direct`` = d > 0 (<= GATHER; set by ``auto``, never by ``bint_qnt``
    itself): a window of <= d elements gathers its non-null values from the raw value ring (one
    contiguous run, instead of its p pieces scattered over the levels) and quickselects; the same
    element is selected (the k-th smallest of the same multiset)."""
    lo = np.empty(128, np.int64)
    hi = np.empty(128, np.int64)
    less = np.empty(128, np.int64)
    leq = np.empty(128, np.int64)
    mv = np.empty(128, np.float64)
    mw = np.empty(128, np.int64)
    tmp = np.empty(max(GATHER, DIRECT_MAX) + 1, np.float64)
    for k in range(len(qids)):
        q = qids[k]
        a, b = window_bounds(q, n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq)
        if a > b:
            out[k] = np.nan
            continue
        if b - a < direct:
            c = 0
            for x in range(a, b + 1):
                y = vals[x & mask]
                if y == y:
                    tmp[c] = y
                    c += 1
            if c == 0:
                out[k] = np.nan
            elif c <= SMALL:
                out[k] = _count_select(tmp, c, quantile_rank(q_phi[q], q_num[q], q_den[q], c) - 1)
            else:
                out[k] = _quickselect(tmp, c, quantile_rank(q_phi[q], q_num[q], q_den[q], c) - 1)
            continue
        # decompose (a, b) into base-intervals, bottom-up (as B-INT)
        x0 = a - 1
        x1 = b
        lev = 0
        p = 0
        tot = 0
        while x0 < x1:
            if x0 & 1:
                s = lev * cap + ((x0 << lev) & mask)
                e = _nonnull(lq, s, s + (1 << lev))
                if e > s:
                    lo[p] = s
                    hi[p] = e
                    tot += e - s
                    p += 1
                x0 += 1
            if x1 & 1:
                x1 -= 1
                s = lev * cap + ((x1 << lev) & mask)
                e = _nonnull(lq, s, s + (1 << lev))
                if e > s:
                    lo[p] = s
                    hi[p] = e
                    tot += e - s
                    p += 1
            x0 >>= 1
            x1 >>= 1
            lev += 1
        if tot == 0:
            out[k] = np.nan
            continue
        r = quantile_rank(q_phi[q], q_num[q], q_den[q], tot)
        out[k] = select_kth(lq, lo, hi, p, r, mv, mw, less, leq, tmp)
