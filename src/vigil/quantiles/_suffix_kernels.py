"""Numba kernels of the suffix summary (:mod:`.suffix`): whole-stream quantile queries registered
at many stream positions, each answered over the elements after its own registration.

Summaries. A summary of c elements is a sorted array of distinct element values v_i with, for
each, ``a_i`` a lower bound of #(elements <= v_i) and ``b_i`` an upper bound of #(elements < v_i).
For any y: #(<= y) >= a_i (i the last index with v_i <= y; 0 if none) and #(< y) <= b_j (j the
first index with v_j >= y; c if none). Its *gap* is max_i (b_{i+1} - a_i): the uncertainty of
either count at any y. An exact summary (every distinct value, exact counts) has gap 0.

:func:`combine` merges two summaries (the counts add, so gap(A+B) <= gap(A) + gap(B) at every
y) and prunes the result greedily to gap <= g (a tuple is dropped while the gap it leaves stays
<= g): with g = 2*delta*c the result has at most 1/delta + 2 tuples, and since the combined gaps
are <= 2*delta*c_A + 2*delta*c_B = g the pruning never compounds: every summary built this way,
of whatever depth, has gap <= 2*delta*(its count) (exact while 2*delta*c < 1).

Suffix counts. A query registered when ``k`` segments were closed counts the segments [k, K)
(decomposed into <= 2 log2 K aligned nodes of the binary tree over segments, each a summary of its
segments), the open summary ``os`` and the open buffer ``ob`` (exact, sorted): its rank
uncertainty is at most 2*delta*N, N its exact element count. :func:`best` finds the candidate
(a value of one of these summaries, hence an element of the query's window) minimizing the worst
distance max(0, ub(#<y) + 1 - t, t - lb(#<=y)) to the target t = max(1, ceil(phi*N)): bisection
on the largest part, then the other parts' values between the two values bracketing the crossing
(the distance is the max of a rising and a falling function of y, so the best candidate of the
union is next to the crossing). Its distance is <= delta*N + 1.

Notify deadlines. After k more elements a fixed value's rank rises by at most k, the target by
about phi*k and the bound e*N by e*k: a value with slack S_hi below the upper end of the allowed
ranks and S_lo above the lower end stays valid for min(S_hi / (1 - phi - e), S_lo / (phi - e))
more elements (:func:`_life`); only the queries due are re-evaluated (the held value is kept
while it stays valid long enough, as in :mod:`._sliding_kernels`), and a new value is aimed
where both sides last about as long (the push loop, the deadline buckets and the exact young
phase: :mod:`._suffix_notify`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

_NJ = {"cache": True, "nogil": True}
_NI = {"cache": True, "nogil": True, "inline": "always"}

# meta slots (M_NYB, M_NYQ: young buffers and young queries, :mod:`._suffix_notify`)
M_K, M_NE, M_OC, M_OSN, M_OSC, M_HS, M_NOUT, M_EVALS, M_SEARCHES, M_PT, M_SRT, M_NS, M_NYB, M_NYQ = range(14)
META_SIZE = 14
# per-summary table rows (sum_): offset in the pool, length, element count
S_OFF, S_LEN, S_CNT = range(3)
# per-slot integer rows (qi): segment index at registration, element count at registration, deadline, on
Q_K, Q_S0, Q_DEAD, Q_ON = range(4)
F_PHI, F_E, F_LAST, F_CV = range(4)  # F_CV: the value whose closed-segment counts qc caches
C_K, C_LB, C_UB = range(3)  # qc rows: K at the cache, lower bound of #<=v, upper bound of #<v over [Q_K, C_K)
MAXL = 48


@numba.njit(**_NI)
def _left(a, lo, hi, v):
    """The first index in [lo, hi) with a[i] >= v (hi if none); branch-free halving."""
    n = hi - lo
    while n > 1:
        h = n >> 1
        lo = lo + h if a[lo + h - 1] < v else lo
        n -= h
    if n == 1 and a[lo] < v:
        lo += 1
    return lo


@numba.njit(**_NI)
def _right(a, lo, hi, v):
    """The first index in [lo, hi) with a[i] > v (hi if none); branch-free halving."""
    n = hi - lo
    while n > 1:
        h = n >> 1
        lo = lo + h if a[lo + h - 1] <= v else lo
        n -= h
    if n == 1 and a[lo] <= v:
        lo += 1
    return lo


@numba.njit(**_NJ)
def combine(av, aa, ab, ao, al, ac, bv, ba, bb, bo, bl, bc, ov, oa, ob_, oo, g):
    """Summary A + summary B written at ov/oa/ob_[oo:], pruned to gap <= g; returns its length."""
    i = 0
    j = 0
    w = oo
    while i < al or j < bl:
        if j >= bl or (i < al and av[ao + i] <= bv[bo + j]):
            y = av[ao + i]
        else:
            y = bv[bo + j]
        ub = (ab[ao + i] if i < al else ac) + (bb[bo + j] if j < bl else bc)
        while i < al and av[ao + i] == y:
            i += 1
        while j < bl and bv[bo + j] == y:
            j += 1
        lb = (aa[ao + i - 1] if i > 0 else 0) + (ba[bo + j - 1] if j > 0 else 0)
        ov[w] = y
        oa[w] = lb
        ob_[w] = ub
        w += 1
    return prune(ov, oa, ob_, oo, w - oo, g)


@numba.njit(**_NJ)
def prune(v, a, b, off, ln, g):
    """Greedy in-place pruning of v/a/b[off:off+ln] to gap <= g (first and last kept)."""
    if ln <= 2:
        return ln
    w = off + 1
    last = off
    for i in range(off + 1, off + ln - 1):
        if b[i + 1] - a[last] > g:
            v[w] = v[i]
            a[w] = a[i]
            b[w] = b[i]
            last = w
            w += 1
    v[w] = v[off + ln - 1]
    a[w] = a[off + ln - 1]
    b[w] = b[off + ln - 1]
    return w + 1 - off


@numba.njit(**_NJ)
def exact(x, c, ov, oa, ob_, oo):
    """The exact summary of sorted x[:c] at ov/oa/ob_[oo:]; returns its length."""
    w = oo
    i = 0
    while i < c:
        j = i
        while j < c and x[j] == x[i]:
            j += 1
        ov[w] = x[i]
        oa[w] = j
        ob_[w] = i
        w += 1
        i = j
    return w - oo


@numba.njit(**_NJ)
def sort_open(meta, ob):
    """Sort the open buffer's unsorted tail into place (elements are appended; sorted on demand)."""
    c = meta[M_OC]
    for i in range(meta[M_SRT], c):
        v = ob[i]
        k = _right(ob, 0, i, v)
        for j in range(i, k, -1):
            ob[j] = ob[j - 1]
        ob[k] = v
    meta[M_SRT] = c


@numba.njit(**_NJ)
def flush_open(meta, ob, osv, osa, osb, tv, ta, tb, delta):
    """Merge the open buffer into the open summary (os); tv/ta/tb: scratch of the same size."""
    c = meta[M_OC]
    if c == 0:
        return
    if meta[M_SRT] < c:
        ob[meta[M_SRT]:c].sort()
        sort_open(meta, ob)
    ln = exact(ob, c, tv, ta, tb, 0)
    n = meta[M_OSN]
    tot = meta[M_OSC] + c
    k = combine(osv, osa, osb, 0, n, meta[M_OSC], tv, ta, tb, 0, ln, c, tv, ta, tb, ln, 2.0 * delta * tot)
    for q in range(k):
        osv[q] = tv[ln + q]
        osa[q] = ta[ln + q]
        osb[q] = tb[ln + q]
    meta[M_OSN] = k
    meta[M_OSC] = tot
    meta[M_OC] = 0
    meta[M_SRT] = 0


@numba.njit(**_NJ)
def close_segment(meta, ob, osv, osa, osb, tv, ta, tb, pv, pa, pb, sm, nodes, delta):
    """Close the open part into segment K and build the tree nodes it completes. The caller
    reserved room (pool: the open summary plus BMAX, then 2/delta + 8 per level; sm: MAXL + 1
    summaries; nodes: K + 1 columns). Returns 0, or the level still to build when the pool is
    short (:func:`build_levels` continues once the caller grew it)."""
    flush_open(meta, ob, osv, osa, osb, tv, ta, tb, delta)
    n = meta[M_OSN]
    pt = meta[M_PT]
    for i in range(n):
        pv[pt + i] = osv[i]
        pa[pt + i] = osa[i]
        pb[pt + i] = osb[i]
    kk = meta[M_K]
    nodes[0, kk] = _new_summary(meta, sm, pt, n, meta[M_OSC])
    meta[M_K] = kk + 1
    meta[M_OSN] = 0
    meta[M_OSC] = 0
    return build_levels(meta, pv, pa, pb, sm, nodes, delta, 1)


@numba.njit(**_NI)
def _new_summary(meta, sm, off, ln, cnt):
    s = meta[M_NS]
    sm[S_OFF, s] = off
    sm[S_LEN, s] = ln
    sm[S_CNT, s] = cnt
    meta[M_NS] = s + 1
    meta[M_PT] = off + ln
    return s


@numba.njit(**_NJ)
def build_levels(meta, pv, pa, pb, sm, nodes, delta, lev):
    """Build the nodes completed by segment K - 1 from level ``lev`` up (see :func:`close_segment`)."""
    kk = meta[M_K]
    while lev < MAXL and kk % (1 << lev) == 0:
        i = (kk >> lev) - 1
        a = nodes[lev - 1, 2 * i]
        b = nodes[lev - 1, 2 * i + 1]
        la = sm[S_LEN, a]
        lb = sm[S_LEN, b]
        pt = meta[M_PT]
        if pt + la + lb > len(pv):
            return lev
        c = sm[S_CNT, a] + sm[S_CNT, b]
        ln = combine(pv, pa, pb, sm[S_OFF, a], la, sm[S_CNT, a], pv, pa, pb, sm[S_OFF, b], lb, sm[S_CNT, b],
                     pv, pa, pb, pt, 2.0 * delta * c)
        nodes[lev, i] = _new_summary(meta, sm, pt, ln, c)
        lev += 1
    return 0


@numba.njit(**_NI)
def _parts(meta, nodes, k, out):
    """The nodes covering segments [k, K) (summary ids) in out; returns their number."""
    return _range_parts(nodes, k, meta[M_K], out)


@numba.njit(**_NI)
def _range_parts(nodes, k, kk, out):
    """The nodes covering segments [k, kk) (kk <= K: every aligned node inside is built)."""
    i = k
    p = 0
    while i < kk:
        lev = 0
        while lev + 1 < MAXL and (i & ((1 << (lev + 1)) - 1)) == 0 and i + (1 << (lev + 1)) <= kk:
            lev += 1
        out[p] = nodes[lev, i >> lev]
        p += 1
        i += 1 << lev
    return p


@numba.njit(**_NI)
def _one(pv, pa, pb, sm, s, y):
    """(upper bound of #<y, lower bound of #<=y) in summary s."""
    off = sm[S_OFF, s]
    ln = sm[S_LEN, s]
    i = _right(pv, off, off + ln, y)
    lb = pa[i - 1] if i > off else 0
    j = i - 1 if i > off and pv[i - 1] == y else i  # (a summary's values are distinct)
    return (pb[j] if j < off + ln else sm[S_CNT, s]), lb


@numba.njit(**_NI)
def _counts(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, y):
    """(upper bound of #<y, lower bound of #<=y) over the parts, the open summary and buffer."""
    ub = 0
    lb = 0
    for p in range(np_):
        u, l_ = _one(pv, pa, pb, sm, parts[p], y)
        ub += u
        lb += l_
    return _open_counts(meta, osv, osa, osb, ob, y, ub, lb)


@numba.njit(**_NI)
def _open_counts(meta, osv, osa, osb, ob, y, ub, lb):
    """(ub, lb) plus the open summary's and (sorted) buffer's counts."""
    ub, lb = _os_counts(meta, osv, osa, osb, y, ub, lb)
    c = meta[M_OC]
    if c:
        i = _right(ob, 0, c, y)
        lb += i
        j = i
        while j > 0 and ob[j - 1] == y:  # (the buffer may hold ties)
            j -= 1
        ub += j
    return ub, lb


@numba.njit(**_NI)
def _os_counts(meta, osv, osa, osb, y, ub, lb):
    """(ub, lb) plus the open summary's counts."""
    n = meta[M_OSN]
    if n:
        i = _right(osv, 0, n, y)
        if i > 0:
            lb += osa[i - 1]
        j = i - 1 if i > 0 and osv[i - 1] == y else i
        ub += osb[j] if j < n else meta[M_OSC]
    return ub, lb


@numba.njit(**_NI)
def _counts_rng(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, y, L, R, RI):
    """:func:`_counts` searching part w only in [L[w], R[w]] (which must hold y's indices);
    RI[w]: the first index of part w with a value > y."""
    ub = 0
    lb = 0
    for w in range(np_):
        s = parts[w]
        off = sm[S_OFF, s]
        end = off + sm[S_LEN, s]
        i = _right(pv, L[w], R[w], y)
        RI[w] = i
        if i > off:
            lb += pa[i - 1]
        j = i - 1 if i > off and pv[i - 1] == y else i
        ub += pb[j] if j < end else sm[S_CNT, s]
    n = meta[M_OSN]
    i = _right(osv, L[np_], R[np_], y)
    RI[np_] = i
    if i > 0:
        lb += osa[i - 1]
    j = i - 1 if i > 0 and osv[i - 1] == y else i
    ub += osb[j] if j < n else meta[M_OSC]
    i = _right(ob, L[np_ + 1], R[np_ + 1], y)
    RI[np_ + 1] = i
    lb += i
    j = i
    while j > 0 and ob[j - 1] == y:
        j -= 1
    ub += j
    return ub, lb


@numba.njit(**_NI)
def _dist(ub, lb, t):
    return max(0.0, ub + 1.0 - t, t - lb)


@numba.njit(**_NI)
def _arr(meta, pv, sm, parts, np_, osv, ob, which):
    """(array, lo, hi) of part ``which`` (np_: the open summary, np_ + 1: the open buffer)."""
    if which < np_:
        s = parts[which]
        return pv, sm[S_OFF, s], sm[S_OFF, s] + sm[S_LEN, s]
    if which == np_:
        return osv, 0, meta[M_OSN]
    return ob, 0, meta[M_OC]


@numba.njit(**_NJ)
def best(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, t, L, R, RI, cand):
    """(value, worst distance, ub, lb) of the best candidate for target t, ub/lb its counts
    (:func:`_counts`); NaN if no element (L, R, RI: scratch of 2 * MAXL + 2 entries, cand: of 64)."""
    big = -1
    bl = 0
    for w in range(np_ + 2):
        a, lo, hi = _arr(meta, pv, sm, parts, np_, osv, ob, w)
        if hi - lo > bl:
            big, bl = w, hi - lo
    if big < 0:
        return np.nan, np.inf, 0, 0
    a, lo, hi = _arr(meta, pv, sm, parts, np_, osv, ob, big)
    l0, h0 = lo, hi
    # every part's search range [L, R) narrows with the bracket: a probe y bounds the indices of
    # the later probes (all above or all below y) in every part
    for w in range(np_ + 2):
        _, L[w], R[w] = _arr(meta, pv, sm, parts, np_, osv, ob, w)
    while lo < hi:  # first index where the rising side reaches the falling one
        m = (lo + hi) >> 1
        ub, lb = _counts_rng(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, a[m], L, R, RI)
        if ub + 1.0 - t >= t - lb:
            hi = m
            R[:] = RI
        else:
            lo = m + 1
            L[:] = RI
    ylo = a[lo - 1] if lo > l0 else -np.inf
    yhi = a[lo] if lo < h0 else np.inf
    # the union's values in [ylo, yhi] (the best candidate of the union is next to the crossing):
    # ylo, then every part's values in (ylo, yhi], i.e. [L, R)
    nc = 0
    if lo > l0:
        cand[0] = ylo
        nc = 1
    for w in range(np_ + 2):
        b, l1, h1 = _arr(meta, pv, sm, parts, np_, osv, ob, w)
        if nc + R[w] - L[w] > 64:
            nc = -1
            break
        for i in range(L[w], R[w]):
            cand[nc] = b[i]
            nc += 1
        L[w] = _left(b, l1, L[w], ylo)  # (the candidates' indices: from the first value >= ylo)
    bu = 0
    bl_ = 0
    if nc >= 0:
        cand[:nc].sort()
        bv = np.nan
        bd = np.inf
        lo2, hi2 = 0, nc
        while lo2 < hi2:
            m = (lo2 + hi2) >> 1
            ub, lb = _counts_rng(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, cand[m], L, R, RI)
            if ub + 1.0 - t >= t - lb:
                hi2 = m
            else:
                lo2 = m + 1
        for i in (lo2 - 1, lo2):
            if 0 <= i < nc:
                ub, lb = _counts_rng(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, cand[i], L, R, RI)
                d = _dist(ub, lb, t)
                if d < bd:
                    bv, bd, bu, bl_ = cand[i], d, ub, lb
        return bv, bd, bu, bl_
    bv = np.nan
    bd = np.inf
    for w in range(np_ + 2):  # many values in the bracket: each part's own crossing
        b, l1, h1 = _arr(meta, pv, sm, parts, np_, osv, ob, w)
        lo2 = _left(b, l1, h1, ylo)
        hi2 = _right(b, lo2, h1, yhi)
        v, d, u, l_ = _best_in(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, t, b, lo2, hi2)
        if d < bd:
            bv, bd, bu, bl_ = v, d, u, l_
    return bv, bd, bu, bl_


@numba.njit(**_NI)
def _best_in(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, t, b, lo2, hi2):
    """(value, distance, ub, lb) of the best of the sorted candidates b[lo2:hi2]."""
    bv = np.nan
    bd = np.inf
    bu = 0
    bl_ = 0
    l2, h2 = lo2, hi2
    while lo2 < hi2:
        m = (lo2 + hi2) >> 1
        ub, lb = _counts(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, b[m])
        if ub + 1.0 - t >= t - lb:
            hi2 = m
        else:
            lo2 = m + 1
    for i in (lo2 - 1, lo2):
        if l2 <= i < h2:
            ub, lb = _counts(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, b[i])
            d = _dist(ub, lb, t)
            if d < bd:
                bv, bd, bu, bl_ = b[i], d, ub, lb
    return bv, bd, bu, bl_


@numba.njit(**_NI)
def _target(phi, n):
    return max(1.0, math.ceil(phi * n - 1e-9))


@numba.njit(**_NJ)
def lookup(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, phi, k, s0, out):
    parts = np.empty(2 * MAXL + 2, np.int64)
    L, R, RI, cand = np.empty(2 * MAXL + 2, np.int64), np.empty(2 * MAXL + 2, np.int64), np.empty(2 * MAXL + 2, np.int64), np.empty(64)
    sort_open(meta, ob)
    for q in range(len(phi)):
        n = meta[M_NE] - s0[q]
        if n <= 0:
            out[q] = np.nan
            continue
        np_ = _parts(meta, nodes, k[q], parts)
        out[q] = best(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, _target(phi[q], n), L, R, RI, cand)[0]


@numba.njit(**_NJ)
def lookup_kept(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, slots, out):
    """Answer plain queries (their slots): a query's last answer (F_LAST) while it still meets
    the contract's bound over its window (as a notify query keeps its value: a check of its
    counts, through the closed-segment cache), else the best candidate, kept for the next lookup."""
    parts = np.empty(2 * MAXL + 2, np.int64)
    L, R, RI, cand = np.empty(2 * MAXL + 2, np.int64), np.empty(2 * MAXL + 2, np.int64), np.empty(2 * MAXL + 2, np.int64), np.empty(64)
    sort_open(meta, ob)
    for j in range(len(slots)):
        s = slots[j]
        n = meta[M_NE] - qi[Q_S0, s]
        if n <= 0:
            out[j] = np.nan
            continue
        phi = qf[F_PHI, s]
        e = qf[F_E, s]
        t = _target(phi, n)
        last = qf[F_LAST, s]
        if last == last:
            ub, lb = _closed(meta, pv, pa, pb, sm, nodes, qf, qi, qc, s, parts, last)
            ub, lb = _open_counts(meta, osv, osa, osb, ob, last, ub, lb)
            if _life(ub, lb, t, e * n, phi, e) >= 0:
                out[j] = last
                continue
        np_ = _parts(meta, nodes, qi[Q_K, s], parts)
        bv = best(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, t, L, R, RI, cand)[0]
        qf[F_LAST, s] = bv
        out[j] = bv


@numba.njit(**_NI)
def _closed(meta, pv, pa, pb, sm, nodes, qf, qi, qc, s, parts, y):
    """(ub, lb) of y over slot s's closed segments, through its cache (the counts of the
    value F_CV up to segment C_K: a held value is re-checked at the cost of the nodes covering
    the segments closed since, usually none)."""
    kk = meta[M_K]
    if qf[F_CV, s] == y:
        ub = qc[C_UB, s]
        lb = qc[C_LB, s]
        np_ = _range_parts(nodes, qc[C_K, s], kk, parts)
        for p in range(np_):
            u, l_ = _one(pv, pa, pb, sm, parts[p], y)
            ub += u
            lb += l_
    else:
        np_ = _parts(meta, nodes, qi[Q_K, s], parts)
        ub = 0
        lb = 0
        for p in range(np_):
            u, l_ = _one(pv, pa, pb, sm, parts[p], y)
            ub += u
            lb += l_
    qf[F_CV, s] = y
    qc[C_K, s] = kk
    qc[C_UB, s] = ub
    qc[C_LB, s] = lb
    return ub, lb


@numba.njit(**_NI)
def _life(ub, lb, t, top, phi, e):
    """Elements over which a value with these bounds stays valid (-1: not valid now). After k
    elements its rank's upper end (ub + 1) rises by at most k and the target by at least
    phi*k - 1, its lower end (lb) does not fall and the target rises by at most phi*k + 1, the
    bound e*N by e*k (the +-1: the rounding of ceil(phi*N), covered by the contract's +1)."""
    shi = top - (ub + 1.0 - t)
    slo = top - (t - lb)
    if shi < 0 or slo < 0:
        return np.int64(-1)
    k = 4.0e18
    if 1.0 - phi - e > 0:
        k = min(k, shi / (1.0 - phi - e))
    if phi - e > 0:
        k = min(k, slo / (phi - e))
    return np.int64(math.floor(k))
