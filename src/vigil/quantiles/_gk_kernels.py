"""Numba kernels of the GK summary (paper 004 §2.3.1, in the paper's (v, r-, r+) form) and of the
result-tuple search of §3.2/§3.5 (Theorem 3, eqs. (10)-(12)).

Layout: a summary is three flat arrays ``v`` (float64), ``lo`` (int64, r-), ``hi`` (int64, r+) of
which the first ``m`` entries are used, over ``n`` elements. The order of elements is by value,
ties broken so that a newer element precedes older equal ones (the paper's insertion scans from
the tail while v_i >= v_new); ranks are positions in that order, so r- <= r <= r+ is exact
bookkeeping even with duplicates.

- :func:`merge_sorted`: batch insertion of a sorted chunk of c elements, one merge pass,
  O(m + c). For each new element the paper's insertion gives r- = r-(pred) + 1 and, as in GK,
  r+ = r+(succ) (the successor's rank bound before the shift, plus the j new elements of the
  chunk before it); every older tuple after k new elements is shifted by k. The first and last
  tuples stay exact (the minimum and maximum), and Theorem 1's condition 3 is preserved: a new
  tuple's gap r+ - r-(pred) equals the gap of the pair it was inserted between.
- Pins: a tuple that is the current result of some trigger (``pin`` > 0) is never merged away,
  so a result's rank bounds stay those of its own tuple and it can stay the result for long
  (vigil's refinement; at most one pinned tuple per query cluster).
- :func:`compress`: the merge step, run every 1/(2 eps) elements: scanning from the tail, tuple i
  is removed (as if merged into its successor) when r+(succ) - r-(i-1) <= floor(2 eps n).
  O(m). (GK's band restriction, which gives its O((1/eps) log(eps n)) space bound, is omitted:
  the greedy merge keeps Theorem 1's conditions, which is all the query processing relies on;
  sizes are measured in the benchmark.)
- :func:`lval`: L_{Q,t,N} = min(alpha, beta) of eqs. (10)-(12) for one tuple, with the upper
  rank bound (b + eps)*N + 1 instead of (b + eps)*N: the answer contract (docs/contract.md)
  measures ranks from ceil(phi*N) with a slack of 1, and ceil(phi*N) >= phi*N, so a rank up to
  (phi + e)*N + 1 is a valid answer (the lower side gains nothing: ceil(phi*N) - 1 may be just
  below phi*N). The band [(a - eps)*N, (b + eps)*N + 1] always holds an integer, so a cluster
  always has a valid tuple, also while the summary is exact and 2*eps*N < 1 (without the + 1
  a narrow cluster could have none and its best tuple, outside its band, could violate a
  member's bound by up to one rank).
- :func:`best_tuple`: the tuple with the largest L for a cluster interval [a, b]. alpha grows
  with r- and beta shrinks with r+ along the summary, so L rises then falls and its maximum is at
  the first tuple with alpha >= beta or just before it. The search starts at the tuple the
  cluster's trigger is linked to and gallops toward that crossing: right when alpha < beta there
  (the paper's case alpha < 0 <= beta), left otherwise (alpha >= 0 > beta); both sides when both
  are >= 0 reduce to one of the two by the sign of alpha - beta. O(log d) for a crossing d
  tuples away.
- :func:`first_hit`: the first tuple satisfying (1), scanning from the head (the §2.4 baseline).
"""

from __future__ import annotations

import numba
import numpy as np

INF_DEADLINE = np.int64(1) << np.int64(62)


@numba.njit(cache=True, nogil=True)
def merge_sorted(v, lo, hi, pin, m, n, xs, ov, olo, ohi, opin):
    """Merge sorted chunk ``xs`` into summary (v, lo, hi, pin)[:m] over n elements, writing into
    (ov, olo, ohi, opin); returns the new size. Needs len(ov) >= m + len(xs). ``pin`` counts the
    triggers whose result is the tuple (a pinned tuple is never merged away)."""
    c = xs.shape[0]
    i = 0
    j = 0
    k = 0
    last_lo = 0
    while i < m or j < c:
        if j < c and (i >= m or xs[j] <= v[i]):
            ov[k] = xs[j]
            opin[k] = 0
            olo[k] = last_lo + 1
            if i < m:
                ohi[k] = hi[i] + j
            else:
                ohi[k] = n + j + 1
            last_lo = olo[k]
            j += 1
        else:
            ov[k] = v[i]
            opin[k] = pin[i]
            olo[k] = lo[i] + j
            ohi[k] = hi[i] + j
            last_lo = olo[k]
            i += 1
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def merge_inplace(v, lo, hi, pin, m, n, xs):
    """:func:`merge_sorted` in place (same result), merging backward from the tail: the tuples
    before the first new element's position are not touched, so a chunk costs O(m - pos + c)
    (a small chunk cut at a fire rewrites the summary's tail only). Needs len(v) >= m + len(xs).
    A new element j (0-based in the chunk) inserted after old tuple i gets r- = r-(i) + j + 1 and
    r+ = r+(i + 1) + j (n + j + 1 at the tail), as in the forward merge."""
    c = xs.shape[0]
    i = m - 1
    j = c - 1
    k = m + c - 1
    shi = np.int64(-1)  # r+ of the old successor (before the shift); -1: none (the tail)
    while j >= 0:
        if i >= 0 and xs[j] <= v[i]:
            shi = hi[i]
            v[k] = v[i]
            lo[k] = lo[i] + j + 1
            hi[k] = shi + j + 1
            pin[k] = pin[i]
            i -= 1
        else:
            v[k] = xs[j]
            lo[k] = (lo[i] if i >= 0 else 0) + j + 1
            hi[k] = shi + j if shi >= 0 else n + j + 1
            pin[k] = 0
            j -= 1
        k -= 1
    return m + c


@numba.njit(cache=True, nogil=True)
def period_chunk(xs, p, c, period, pre, pf, pt):
    """The sorted chunk xs[p:p + c]: the presorted block of ``pre`` when the chunk is one whole
    merge period starting at a block of [pf, pt) (blocks of ``period`` elements from pf, sorted
    by numpy's vectorized sort in :func:`.gk.presort`), else sorted here."""
    if c == period and pf <= p and p + c <= pt and (p - pf) % period == 0:
        return pre[p:p + c]
    return np.sort(xs[p:p + c])


@numba.njit(cache=True, nogil=True)
def insert_run(v, lo, hi, pin, m, n, nxt, period, eps, xs, pre, pf, pt):
    """Insert ``xs`` into the summary (v, lo, hi, pin)[:m] over n elements: chunks cut at the merge
    boundary ``nxt`` (then compressed, ``nxt`` advanced by ``period``), each merged in place.
    Returns (elements consumed, m, n, nxt); stops early when the arrays lack room."""
    p = 0
    total = xs.shape[0]
    cap = v.shape[0]
    while p < total:
        c = min(total - p, nxt - n)
        if m + c > cap:
            break
        m = merge_inplace(v, lo, hi, pin, m, n, period_chunk(xs, p, c, period, pre, pf, pt))
        n += c
        p += c
        if n >= nxt:
            m = compress(v, lo, hi, pin, m, n, eps)
            while nxt <= n:
                nxt += period
    return p, m, n, nxt


@numba.njit(cache=True, nogil=True)
def compress(v, lo, hi, pin, m, n, eps):
    """Greedy GK merge from the tail (see module doc), in place; returns the new size. Pinned
    tuples (pin > 0) are kept."""
    if m <= 2:
        return m
    thr = np.int64(np.floor(2.0 * eps * n))
    w = m - 1
    nxt_hi = hi[m - 1]
    for i in range(m - 2, 0, -1):
        if pin[i] == 0 and nxt_hi - lo[i - 1] <= thr:
            continue
        w -= 1
        v[w] = v[i]
        lo[w] = lo[i]
        hi[w] = hi[i]
        pin[w] = pin[i]
        nxt_hi = hi[i]
    w -= 1
    v[w] = v[0]
    lo[w] = lo[0]
    hi[w] = hi[0]
    pin[w] = pin[0]
    k = m - w
    if w > 0:
        for t in range(k):
            v[t] = v[w + t]
            lo[t] = lo[w + t]
            hi[t] = hi[w + t]
            pin[t] = pin[w + t]
    return k


@numba.njit(cache=True, nogil=True)
def _alpha(lo_i, a, eps, n):
    if a <= eps:
        return np.inf
    return (lo_i + eps * n - a * n) / (a - eps)


@numba.njit(cache=True, nogil=True)
def _beta(hi_i, b, eps, n):
    # + 1: the contract's rounding (|r - ceil(phi*N)| <= e*N + 1) allows r+ <= (b + eps)*N + 1
    if b + eps >= 1.0:
        return np.inf
    return (b * n - hi_i + eps * n + 1.0) / (1.0 - b - eps)


@numba.njit(cache=True, nogil=True)
def lval(lo_i, hi_i, a, b, eps, n):
    """L_{Q,t,N} (eq. (12)) of a tuple with bounds (lo_i, hi_i) for cluster interval [a, b]."""
    return min(_alpha(lo_i, a, eps, n), _beta(hi_i, b, eps, n))


@numba.njit(cache=True, nogil=True)
def _right(lo, hi, i, a, b, eps, n):
    # True when the crossing (first index with alpha >= beta) is at or before i
    return _alpha(lo[i], a, eps, n) >= _beta(hi[i], b, eps, n)


@numba.njit(cache=True, nogil=True)
def best_tuple(lo, hi, m, a, b, eps, n, start):
    """Index of the tuple with the largest L for [a, b] (galloping from ``start``); -1 if m == 0."""
    if m == 0:
        return -1
    p = min(max(start, 0), m - 1)
    # find the first index c with alpha >= beta (m if none): the predicate is monotone
    if _right(lo, hi, p, a, b, eps, n):
        # crossing at or left of p: gallop left
        hi_i = p
        step = 1
        lo_i = p - step
        while lo_i >= 0 and _right(lo, hi, lo_i, a, b, eps, n):
            hi_i = lo_i
            step *= 2
            lo_i = p - step
        lo_i = max(lo_i, -1)  # predicate false at lo_i (or lo_i = -1)
    else:
        lo_i = p
        step = 1
        hi_i = p + step
        while hi_i < m and not _right(lo, hi, hi_i, a, b, eps, n):
            lo_i = hi_i
            step *= 2
            hi_i = p + step
        hi_i = min(hi_i, m)  # predicate true at hi_i (or hi_i = m)
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) // 2
        if _right(lo, hi, mid, a, b, eps, n):
            hi_i = mid
        else:
            lo_i = mid
    c = hi_i
    if c >= m:
        return m - 1
    if c == 0:
        return 0
    if lval(lo[c - 1], hi[c - 1], a, b, eps, n) > lval(lo[c], hi[c], a, b, eps, n):
        return c - 1
    return c


@numba.njit(cache=True, nogil=True)
def first_hit(lo, hi, m, a, b, eps, n):
    """The first tuple (from the head) with L >= 0, i.e. satisfying (1); falls back to the best
    tuple if none does (a summary violating Theorem 1, never expected)."""
    for i in range(m):
        if lval(lo[i], hi[i], a, b, eps, n) >= 0.0:
            return i
    return best_tuple(lo, hi, m, a, b, eps, n, 0)


@numba.njit(cache=True, nogil=True)
def deadline(lval_, n):
    """Last stream size at which a result with L = lval_ chosen at size n stays valid
    (Theorem 4: until the floor(L)+1-th new element, exclusive), conservatively rounded."""
    if lval_ >= 1e17:
        return INF_DEADLINE
    if not lval_ > 0.0:  # also NaN
        return n
    return n + max(np.int64(0), np.int64(np.floor(lval_ * (1.0 - 1e-12) - 1e-9)))


@numba.njit(cache=True, nogil=True)
def answer_ranks(lo, hi, m, phi, eps_q, eps, n):
    """Index of the best tuple for a single (phi, eps_q) query (its interval as a cluster)."""
    half = max(eps_q - eps, 0.0)
    a = max(phi - half, 0.0)
    b = min(phi + half, 1.0)
    return best_tuple(lo, hi, m, a, b, eps, n, m // 2)
