"""CASU's full re-evaluation in cluster mode over a *virtual* merge: the summary's tuples plus the
elements not merged yet, without merging them (:func:`._trigger_kernels.process`, ``defer``).

Cluster mode defers the merge of the elements since the last merge ("pending") to the merge
period's end. A re-evaluation needs the summary at n, and merging the pending elements for it
moved the summary's tail each time (measured: the largest part of a fire's cost). Instead the
pending elements are kept sorted in a buffer ``ps`` (sorted in when a re-evaluation needs them:
the new ones sorted, then merged backward into the buffer) and the merged summary is read
through :func:`entry`: merged index t holds pending element f or old tuple t - f, f the number
of pending elements among the first t (a merge-path binary search), with the rank bounds that
:func:`._gk_kernels.merge_inplace` would give it (a new element after old tuple i: r- = r-(i) +
f + 1, r+ = r+(i + 1) + f; an old tuple after f new ones: both + f). The merge gives the same
(v, r-, r+) whether the pending elements arrive in one chunk or several (a new tuple's bounds
depend only on its neighbours in the merged order), so every result, deadline and event equals
that of the merge-then-search path.

Pins: a result whose tuple is a pending element has no summary slot yet; its pin is kept in
``pp`` beside the last sorted pending element with that value and put on the last tuple with
that value when the pending elements are merged (:func:`apply_pins`), which is where the
merge-then-pin path has it: a newer equal element precedes the older ones (in ``ps`` too), so
the last tuple with a value never changes while it is pinned. No pin is read before that merge (only the compression reads pins).
"""

from __future__ import annotations

import numba
import numpy as np

from ._fire_kernels import _last_equal, _last_equal_from, search_from
from ._gk_kernels import _alpha, _beta, deadline, lval


@numba.njit(cache=True, nogil=True)
def sort_in(ps, pp, c, xs, a, b, tmp):
    """Sort xs[a:b] into the sorted ps[:c] (their deferred pins ``pp`` moved along); returns the
    new count c + b - a."""
    k = b - a
    if k <= 0:
        return c
    for t in range(k):
        tmp[t] = xs[a + t]
    tmp[:k].sort()
    i = c - 1
    j = k - 1
    w = c + k - 1
    while j >= 0:
        if i >= 0 and ps[i] >= tmp[j]:  # an equal new one goes first: a pinned one stays the last
            ps[w] = ps[i]
            pp[w] = pp[i]
            i -= 1
        else:
            ps[w] = tmp[j]
            pp[w] = 0
            j -= 1
        w -= 1
    return c + k


@numba.njit(cache=True, nogil=True, inline="always")
def corank(v, m, ps, c, t):
    """The number of pending elements among the first t entries of the merged summary (a pending
    element precedes an old tuple of equal or larger value)."""
    lo_f = max(0, t - m)
    hi_f = min(t, c)
    while lo_f < hi_f:
        f = (lo_f + hi_f) >> 1
        if ps[f] <= v[t - f - 1]:
            lo_f = f + 1
        else:
            hi_f = f
    return lo_f


@numba.njit(cache=True, nogil=True, inline="always")
def entry(v, lo, hi, m, ps, c, n0, t):
    """Merged entry t: (value, r-, r+, old tuple index or -1 for a pending element); n0 = n - c."""
    f = corank(v, m, ps, c, t)
    i = t - f
    if f < c and (i >= m or ps[f] <= v[i]):
        rl = (lo[i - 1] if i > 0 else 0) + f + 1
        rh = hi[i] + f if i < m else n0 + f + 1
        return ps[f], rl, rh, -1
    return v[i], lo[i] + f, hi[i] + f, i


@numba.njit(cache=True, nogil=True, inline="always")
def _right_v(v, lo, hi, m, ps, c, n0, t, a, b, eps, n):
    _, rl, rh, _ = entry(v, lo, hi, m, ps, c, n0, t)
    return _alpha(rl, a, eps, n) >= _beta(rh, b, eps, n)


@numba.njit(cache=True, nogil=True, inline="always")
def _lval_v(v, lo, hi, m, ps, c, n0, t, a, b, eps, n):
    _, rl, rh, _ = entry(v, lo, hi, m, ps, c, n0, t)
    return lval(rl, rh, a, b, eps, n)


@numba.njit(cache=True, nogil=True)
def best_v(v, lo, hi, m, ps, c, n0, a, b, eps, n, start):
    """:func:`._gk_kernels.best_tuple` over the merged summary (M = m + c entries)."""
    M = m + c
    p = min(max(start, 0), M - 1)
    if _right_v(v, lo, hi, m, ps, c, n0, p, a, b, eps, n):
        hi_i = p
        step = 1
        lo_i = p - step
        while lo_i >= 0 and _right_v(v, lo, hi, m, ps, c, n0, lo_i, a, b, eps, n):
            hi_i = lo_i
            step *= 2
            lo_i = p - step
        lo_i = max(lo_i, -1)
    else:
        lo_i = p
        step = 1
        hi_i = p + step
        while hi_i < M and not _right_v(v, lo, hi, m, ps, c, n0, hi_i, a, b, eps, n):
            lo_i = hi_i
            step *= 2
            hi_i = p + step
        hi_i = min(hi_i, M)
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) // 2
        if _right_v(v, lo, hi, m, ps, c, n0, mid, a, b, eps, n):
            hi_i = mid
        else:
            lo_i = mid
    t = hi_i
    if t >= M:
        return M - 1
    if t == 0:
        return 0
    if _lval_v(v, lo, hi, m, ps, c, n0, t - 1, a, b, eps, n) > _lval_v(v, lo, hi, m, ps, c, n0, t, a, b, eps, n):
        return t - 1
    return t


@numba.njit(cache=True, nogil=True)
def reeval_v(v, lo, hi, pin, m, ps, pp, c, n, eps, keep, a, b, u, force, h, nd):
    """:func:`._fire_kernels._reeval` over the merged summary (module doc): the same value,
    deadline and change, with pins on pending elements deferred to ``pp`` (beside ``ps``; ``nd``
    counts the deferred pins made). Returns (value, deadline, changed, hint: u's old tuple index,
    nd)."""
    n0 = n - c
    M = m + c
    has = u == u
    start = M // 2
    iu = h
    if has:
        iu = search_from(v, m, u, h)
        start = iu + np.searchsorted(ps[:c], u)
    t = best_v(v, lo, hi, m, ps, c, n0, a, b, eps, n, start)
    nv, rl, rh, ti = entry(v, lo, hi, m, ps, c, n0, t)
    L = lval(rl, rh, a, b, eps, n)
    if has and not force:
        if start < M:
            su, sl, sh, _ = entry(v, lo, hi, m, ps, c, n0, start)
        else:
            su = np.nan
            sh = 0
        if start < M and su == u:
            Lk = lval(sl, sh, a, b, eps, n)
        elif start == 0 or start >= M:
            Lk = -np.inf
        else:
            _, pl, _, _ = entry(v, lo, hi, m, ps, c, n0, start - 1)
            Lk = lval(pl + 1, sh - 1, a, b, eps, n)
        if Lk >= 0.0 and Lk >= keep * L:
            return u, deadline(Lk, n), False, iu, nd
    if nv != u or force:
        if has:  # release u's pin: on its last tuple (an old one if any has value u, else deferred)
            if iu < m and v[iu] == u:
                j = _last_equal_from(v, m, u, iu)
                if pin[j] > 0:
                    pin[j] -= 1
            else:
                k = np.searchsorted(ps[:c], u, side="right") - 1
                if k >= 0 and ps[k] == u and pp[k] > 0:
                    pp[k] -= 1
        if ti >= 0:
            pin[_last_equal_from(v, m, nv, ti)] += 1
            hv = ti
        else:
            hv = search_from(v, m, nv, iu)
            if hv < m and v[hv] == nv:
                pin[_last_equal_from(v, m, nv, hv)] += 1
            else:
                pp[np.searchsorted(ps[:c], nv, side="right") - 1] += 1
                nd += 1
        return nv, deadline(L, n), True, hv, nd
    return u, deadline(L, n), False, iu, nd


@numba.njit(cache=True, nogil=True)
def apply_pins(v, pin, m, ps, pp, c):
    """Put the deferred pins of the merged pending elements ps[:c] on their tuples (the last one
    with each value) and clear them."""
    for j in range(c):
        if pp[j] > 0:
            pin[_last_equal(v, m, ps[j])] += pp[j]
            pp[j] = 0
    return 0
