"""The fire path of CASU's cluster mode (``lazy`` < 0; :func:`._trigger_kernels.process`): the
re-evaluation over scalars and the search-free bound, each finding the cluster value's tuple from
a per-cluster index hint instead of a binary search over the whole summary.

The hint is the index where the cluster's value was found at its previous fire. While the
elements since the last merge stay pending (cluster mode defers the merge), no tuple moves, so
the hint is exact and the lookup is two comparisons; after a merge or a compression the tuple has
moved by at most the number of elements inserted or tuples removed before it, and a gallop from
the hint finds it in O(log shift) steps. The result equals ``np.searchsorted(v[:m], u)`` (the
first index with v >= u) in every case, so the fires, values and deadlines are the same as with
the binary search.
"""

from __future__ import annotations

import numba
import numpy as np

from ._gk_kernels import best_tuple, deadline, lval


@numba.njit(cache=True, nogil=True, inline="always")
def search_from(v, m, u, h):
    """The first index i in [0, m] with v[i] >= u (``np.searchsorted(v[:m], u)``), galloping from
    the hint h (any int; clamped)."""
    if m == 0:
        return 0
    h = min(max(h, 0), m - 1)
    if v[h] >= u:
        if h == 0 or v[h - 1] < u:
            return h
        # answer in [0, h): gallop left for an index with v < u
        hi_i = h - 1
        step = 2
        lo_i = h - step
        while lo_i >= 0 and v[lo_i] >= u:
            hi_i = lo_i
            step *= 2
            lo_i = h - step
        lo_i = max(lo_i, -1)  # v[lo_i] < u (or lo_i = -1); v[hi_i] >= u
    else:
        if h + 1 >= m or v[h + 1] >= u:
            return h + 1
        lo_i = h + 1
        step = 2
        hi_i = h + step
        while hi_i < m and v[hi_i] < u:
            lo_i = hi_i
            step *= 2
            hi_i = h + step
        hi_i = min(hi_i, m)  # v[lo_i] < u; v[hi_i] >= u (or hi_i = m)
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) >> 1
        if v[mid] >= u:
            hi_i = mid
        else:
            lo_i = mid
    return hi_i


@numba.njit(cache=True, nogil=True)
def _last_equal(v, m, u):
    return np.searchsorted(v[:m], u, side="right") - 1


@numba.njit(cache=True, nogil=True)
def _last_equal_from(v, m, u, i):
    """The last index with value u, given an index i <= it with v[i] == u (a short scan, else a
    binary search)."""
    for _ in range(8):
        if i + 1 >= m or v[i + 1] != u:
            return i
        i += 1
    return _last_equal(v, m, u)


@numba.njit(cache=True, nogil=True)
def unpin(v, pin, m, u):
    """Release the pin of result value u (its tuple is the last one with value u)."""
    if u == u:
        j = _last_equal(v, m, u)
        if j >= 0 and v[j] == u and pin[j] > 0:
            pin[j] -= 1


@numba.njit(cache=True, nogil=True)
def _kept_lval_at(v, lo, hi, m, n, a, b, eps, u, p):
    """L of the current result value u, p = searchsorted(v[:m], u): from its tuple, or, once GK
    merged that tuple into its successor p, from the bounds its neighbours give it:
    r-(p-1) + 1 <= rank(u) <= r+(p) - 1."""
    if p < m and v[p] == u:
        return lval(lo[p], hi[p], a, b, eps, n)
    if p == 0 or p >= m:
        return -np.inf
    return lval(lo[p - 1] + 1, hi[p] - 1, a, b, eps, n)


@numba.njit(cache=True, nogil=True, inline="always")
def _reeval(v, lo, hi, pin, m, n, eps, keep, a, b, u, force, h):
    """CASU's re-evaluation in cluster mode, :func:`._trigger_kernels._evaluate` over scalars (the
    caller updates the cluster: measured, ~14 arrays passed per call cost more than the work):
    search from the link u (its index found from the hint h), keep rule, pins. Returns (value,
    deadline, changed, index of the value's tuple: the next hint)."""
    has = u == u
    start = m // 2
    if has:
        start = search_from(v, m, u, h)
    i = best_tuple(lo, hi, m, a, b, eps, n, start)
    L = lval(lo[i], hi[i], a, b, eps, n)
    if has and not force:
        Lk = _kept_lval_at(v, lo, hi, m, n, a, b, eps, u, start)
        if Lk >= 0.0 and Lk >= keep * L:
            return u, deadline(Lk, n), False, start
    nv = v[i]
    if nv != u or force:
        if has and start < m and v[start] == u:
            j = _last_equal_from(v, m, u, start)
            if pin[j] > 0:
                pin[j] -= 1
        else:
            unpin(v, pin, m, u)
        pin[_last_equal_from(v, m, nv, i)] += 1
        return nv, deadline(L, n), True, i
    return u, deadline(L, n), False, start


@numba.njit(cache=True, nogil=True, inline="always")
def _quick_lval(v, lo, hi, m, n, eps, keep, a, b, u, xs, p0, p1, h):
    """The L of a cluster's value u at n when the re-evaluation (:func:`_reeval`) provably keeps
    it, else -1, and the index of u's tuple (found from the hint h; -1 when none): the best tuple's
    L never exceeds L* = (w n + 1) / (1 - w), w = b - a + 2 eps (the largest min(alpha, beta) of
    eqs. (10)-(12) over any rank bounds r- <= r+), so u's L >= keep * L* means the keep rule keeps
    u with the same deadline, without the search. u's rank bounds at n are its tuple's plus the
    count of the elements not merged yet (xs[p0:p1]) that are smaller (an equal one precedes it
    too: then, or when u has no tuple, the full path runs)."""
    w = b - a + 2.0 * eps
    if u != u or a <= eps or b + eps >= 1.0 or w >= 1.0:
        return -1.0, -1
    q = search_from(v, m, u, h)
    if q >= m or v[q] != u:
        return -1.0, -1
    k = 0
    e = 0
    for t in range(p0, p1):
        k += xs[t] < u
        e += xs[t] == u
    if e > 0:
        return -1.0, q
    Lk = lval(lo[q] + k, hi[q] + k, a, b, eps, n)
    if Lk >= 0.0 and Lk >= keep * ((w * n + 1.0) / (1.0 - w)) * (1.0 + 1e-9) + 1e-6:
        return Lk, q
    return -1.0, q
