"""Numba kernels of the batch-sweep threshold operator (``vigil.threshold.sweep``).

A push of B elements is processed offline, as a whole:

1. *Weights in the batch.* 1D: the elements sorted by x with prefix sums of their weights; a
   query's weight in the batch is ``P[b] - P[a]`` with ``a, b`` two binary searches
   (:func:`weights_1d`). 2D: one sweep over the x-sorted elements with a Fenwick tree over the
   elements' y-ranks; a query contributes two events (just before its x-range, at its end), each
   a Fenwick range sum over its y-rank range (:func:`weights_2d`). O((B + m) log B).
2. *Exact maturity offsets.* A query whose weight in the batch reaches its remaining threshold
   ``r`` matures inside the batch; the element at which it does is found by halving the batch in
   time (:func:`locate_1d` / :func:`locate_2d`), wavelet-tree style: at level l the batch is cut
   into time nodes, and the elements of each node are kept sorted by x at the node's own
   positions (a stable partition of the parent's order, O(B) per level). A candidate carries its
   x-position range inside its node; its weight in the left (earlier) half is read in O(1) from
   the partition's prefix counts and weights (1D) or by one Fenwick sweep per level over y-ranks
   (2D); it descends left if that weight reaches r, else right with ``r`` reduced by it. Nodes
   of <= ``LEAF`` elements are finished by scanning them in time order. Only nodes holding
   candidates are partitioned. O(B log B + k log B) (1D) and O((B + k) log^2 B) (2D) for k
   candidates. Exact: every comparison is on the integer sums of the elements actually inside
   the query's range, never an estimate.

Sums are exact in int64 as long as the batch's total weight stays below 2**62; the operator cuts
a push into sub-batches by weight to guarantee it (``sweep.Sweep``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

DEAD = 4611686018427387904  # 2**62: the remaining weight of a dead slot (as in scan)
LEAF = 32  # time nodes of at most this many elements are finished by a scan


@nb.njit(cache=True, nogil=True, inline="always")
def _lower(xs, v):
    """First index i with xs[i] >= v (xs sorted ascending, NaN last). Branch-free halving: the
    comparisons compile to conditional moves (no mispredictions on random probes)."""
    n = xs.shape[0]
    if n == 0:
        return 0
    base = 0
    while n > 1:
        half = n >> 1
        base = base + half if xs[base + half - 1] < v else base
        n -= half
    return base + (1 if xs[base] < v else 0)


@nb.njit(cache=True, nogil=True, inline="always")
def _upper(xs, v):
    """First index i with xs[i] > v (NaN entries, sorted last, count as greater)."""
    n = xs.shape[0]
    if n == 0:
        return 0
    base = 0
    while n > 1:
        half = n >> 1
        base = base + half if xs[base + half - 1] <= v else base
        n -= half
    return base + (1 if xs[base] <= v else 0)


# --------------------------------------------------------------------------------------------
# step 1: weights of every alive query inside the batch
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def weights_1d(lo, hi, rem, n, xs, P, cand, ca, cb):
    """lo, hi: float64[1, cap]; rem: int64[cap] (remaining thresholds; >= DEAD = dead slot);
    xs: x of the batch sorted ascending; P: int64[B+1] prefix sums of the weights in that order.
    Alive queries not maturing get ``rem -= W``; maturing ones are written to ``cand`` with their
    x-position range ``[ca, cb)``, and keep rem untouched. Returns the number of candidates."""
    a = lo[0]
    b = hi[0]
    k = 0
    for q in range(n):
        r = rem[q]
        if r >= DEAD:
            continue
        i = _lower(xs, a[q])
        j = _upper(xs, b[q])
        if j <= i:
            continue
        W = P[j] - P[i]
        if W >= r:
            cand[k] = q
            ca[k] = i
            cb[k] = j
            k += 1
        else:
            rem[q] = r - W
    return k


@nb.njit(cache=True, nogil=True)
def _fw_add(fw, i, v):
    i += 1
    n = fw.shape[0]
    while i < n:
        fw[i] += v
        i += i & (-i)


@nb.njit(cache=True, nogil=True)
def _fw_sum(fw, i):
    """Sum of entries 0..i-1."""
    s = np.int64(0)
    while i > 0:
        s += fw[i]
        i -= i & (-i)
    return s


@nb.njit(cache=True, nogil=True)
def weights_2d(lo, hi, rem, n, xs, yr, ws, ys_sorted, cand, ca, cb, cya, cyb):
    """2D batch weights. xs: x sorted ascending (element order = x order), yr: y-rank of each of
    them, ws: their weights, ys_sorted: y sorted ascending. Same outputs as :func:`weights_1d`,
    plus the candidates' y-rank ranges ``[cya, cyb)``. One sweep over x with a Fenwick tree over
    y-ranks: O((B + m) log B)."""
    B = xs.shape[0]
    a0 = lo[0]
    a1 = lo[1]
    h0 = hi[0]
    h1 = hi[1]
    # events: (x-position, query) for the start (i) and the end (j) of every query's x-range
    qs = np.empty(n, np.int64)
    qi = np.empty(n, np.int64)
    qj = np.empty(n, np.int64)
    qya = np.empty(n, np.int64)
    qyb = np.empty(n, np.int64)
    m = 0
    for q in range(n):
        if rem[q] >= DEAD:
            continue
        i = _lower(xs, a0[q])
        j = _upper(xs, h0[q])
        ya = _lower(ys_sorted, a1[q])
        yb = _upper(ys_sorted, h1[q])
        if j <= i or yb <= ya:
            continue
        qs[m] = q
        qi[m] = i
        qj[m] = j
        qya[m] = ya
        qyb[m] = yb
        m += 1
    # counting sort of the 2m events by position (0..B)
    head = np.zeros(B + 2, np.int64)
    for e in range(m):
        head[qi[e] + 1] += 1
        head[qj[e] + 1] += 1
    for p in range(B + 1):
        head[p + 1] += head[p]
    ev = np.empty(2 * m, np.int64)  # e << 1 | is_end
    fill = head[: B + 1].copy()
    for e in range(m):
        p = qi[e]
        ev[fill[p]] = e << 1
        fill[p] += 1
        p = qj[e]
        ev[fill[p]] = (e << 1) | 1
        fill[p] += 1
    W = np.zeros(m, np.int64)
    fw = np.zeros(B + 1, np.int64)
    for p in range(B + 1):
        for t in range(head[p], head[p + 1]):
            x = ev[t]
            e = x >> 1
            s = _fw_sum(fw, qyb[e]) - _fw_sum(fw, qya[e])
            if x & 1:
                W[e] += s
            else:
                W[e] -= s
        if p < B:
            _fw_add(fw, yr[p], ws[p])
    k = 0
    for e in range(m):
        q = qs[e]
        r = rem[q]
        if W[e] >= r:
            cand[k] = q
            ca[k] = qi[e]
            cb[k] = qj[e]
            cya[k] = qya[e]
            cyb[k] = qyb[e]
            k += 1
        else:
            rem[q] = r - W[e]
    return k


# --------------------------------------------------------------------------------------------
# step 2: exact maturity offsets by halving the batch in time
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _partition(cur, nxt, w, s, e, mid, lcnt, lw):
    """Stable partition of positions [s, e) of ``cur`` (element ids, sorted by x within the node)
    into elements of time < mid (to nxt[s:mid]) and >= mid (to nxt[mid:e]); lcnt[i] / lw[i] =
    number / weight of the left-going elements at positions s..i (inclusive)."""
    pl = s
    pr = mid
    c = 0
    sw = np.int64(0)
    for i in range(s, e):
        el = cur[i]
        if el < mid:
            nxt[pl] = el
            pl += 1
            c += 1
            sw += w[el]
        else:
            nxt[pr] = el
            pr += 1
        lcnt[i] = c
        lw[i] = sw


@nb.njit(cache=True, nogil=True)
def _leaf_1d(x, w, s, e, qa, qb, r):
    acc = np.int64(0)
    for t in range(s, e):
        xt = x[t]
        if xt >= qa and xt <= qb:
            acc += w[t]
            if acc >= r:
                return t
    return -1  # unreachable when the candidate's weight in [s, e) is >= r


@nb.njit(cache=True, nogil=True)
def _leaf_2d(x, y, w, s, e, qa, qb, ya, yb, r):
    acc = np.int64(0)
    for t in range(s, e):
        xt = x[t]
        yt = y[t]
        if xt >= qa and xt <= qb and yt >= ya and yt <= yb:
            acc += w[t]
            if acc >= r:
                return t
    return -1


@nb.njit(cache=True, nogil=True)
def locate_1d(order, x, w, lo, hi, rem, cand, ca, cb, k, out_off):
    """Exact maturity offsets of the k candidates (``cand`` slots, x-position ranges
    ``[ca, cb)`` in ``order`` = element ids sorted by x, stable). x, w: the batch in time order.
    Writes ``out_off[c]`` (element offset of candidate c). Candidates' rem are set to DEAD."""
    B = order.shape[0]
    cur = order.copy()
    nxt = np.empty(B, np.int64)
    lcnt = np.empty(B, np.int64)
    lw = np.empty(B, np.int64)
    mark = np.full(B, -1, np.int64)
    cs = np.zeros(k, np.int64)
    ce = np.full(k, B, np.int64)
    r = np.empty(k, np.int64)
    for c in range(k):
        r[c] = rem[cand[c]]
    a = ca.copy()
    b = cb.copy()
    todo = np.arange(k)
    nt = k
    qa = lo[0]
    qb = hi[0]
    while nt > 0:
        # finish small nodes by a scan; mark the nodes to split
        m = 0
        for t in range(nt):
            c = todo[t]
            if ce[c] - cs[c] <= LEAF:
                out_off[c] = _leaf_1d(x, w, cs[c], ce[c], qa[cand[c]], qb[cand[c]], r[c])
            else:
                todo[m] = c
                m += 1
                mark[cs[c]] = ce[c]
        nt = m
        if nt == 0:
            break
        for t in range(nt):
            s = cs[todo[t]]
            e = mark[s]
            if e >= 0:
                _partition(cur, nxt, w, s, e, (s + e) >> 1, lcnt, lw)
                mark[s] = -1
        for t in range(nt):
            c = todo[t]
            s = cs[c]
            e = ce[c]
            mid = (s + e) >> 1
            ia = a[c]
            ib = b[c]
            la = lcnt[ia - 1] if ia > s else 0
            lb = lcnt[ib - 1] if ib > s else 0
            wa = lw[ia - 1] if ia > s else 0
            wb = lw[ib - 1] if ib > s else 0
            WL = wb - wa
            if WL >= r[c]:
                a[c] = s + la
                b[c] = s + lb
                ce[c] = mid
            else:
                r[c] -= WL
                a[c] = mid + (ia - s - la)
                b[c] = mid + (ib - s - lb)
                cs[c] = mid
        cur, nxt = nxt, cur
    for c in range(k):
        rem[cand[c]] = DEAD


@nb.njit(cache=True, nogil=True)
def locate_2d(order, x, y, w, yrank, lo, hi, rem, cand, ca, cb, cya, cyb, k, out_off):
    """2D version of :func:`locate_1d`: ``yrank[el]`` = rank of element el's y in the batch,
    ``[cya, cyb)`` the candidates' y-rank ranges. The left-half weight of a candidate at a level
    is a Fenwick range sum over y-ranks, taken by one sweep over the positions of the split
    nodes' left halves (events bucketed by position)."""
    B = order.shape[0]
    cur = order.copy()
    nxt = np.empty(B, np.int64)
    lcnt = np.empty(B, np.int64)
    lw = np.empty(B, np.int64)
    mark = np.full(B, -1, np.int64)
    fw = np.zeros(B + 1, np.int64)
    bcnt = np.zeros(B + 1, np.int64)
    cs = np.zeros(k, np.int64)
    ce = np.full(k, B, np.int64)
    r = np.empty(k, np.int64)
    for c in range(k):
        r[c] = rem[cand[c]]
    a = ca.copy()
    b = cb.copy()
    WL = np.zeros(k, np.int64)
    la = np.empty(k, np.int64)
    lb = np.empty(k, np.int64)
    ev = np.empty(2 * k, np.int64)
    todo = np.arange(k)
    starts = np.empty(k, np.int64)
    nt = k
    qa = lo[0]
    qb = hi[0]
    ya = lo[1]
    yb = hi[1]
    while nt > 0:
        m = 0
        for t in range(nt):
            c = todo[t]
            q = cand[c]
            if ce[c] - cs[c] <= LEAF:
                out_off[c] = _leaf_2d(x, y, w, cs[c], ce[c], qa[q], qb[q], ya[q], yb[q], r[c])
            else:
                todo[m] = c
                m += 1
        nt = m
        if nt == 0:
            break
        ns = 0
        for t in range(nt):
            c = todo[t]
            s = cs[c]
            if mark[s] < 0:
                mark[s] = ce[c]
                starts[ns] = s
                ns += 1
        st = np.sort(starts[:ns])
        for u in range(ns):
            s = st[u]
            _partition(cur, nxt, w, s, mark[s], (s + mark[s]) >> 1, lcnt, lw)
        # left-child ranges [la, lb) of the candidates; their two events bucketed by position
        for t in range(nt):
            c = todo[t]
            s = cs[c]
            ia = a[c]
            ib = b[c]
            la[c] = s + (lcnt[ia - 1] if ia > s else 0)
            lb[c] = s + (lcnt[ib - 1] if ib > s else 0)
            WL[c] = 0
            bcnt[la[c]] += 1
            bcnt[lb[c]] += 1
        acc = 0
        for u in range(ns):
            s = st[u]
            mid = (s + mark[s]) >> 1
            for p in range(s, mid + 1):
                v = bcnt[p]
                bcnt[p] = acc
                acc += v
        for t in range(nt):
            c = todo[t]
            p = la[c]
            ev[bcnt[p]] = c << 1
            bcnt[p] += 1
            p = lb[c]
            ev[bcnt[p]] = (c << 1) | 1
            bcnt[p] += 1
        # sweep: the events of bucket p are evaluated before position p is inserted
        pos = 0
        for u in range(ns):
            s = st[u]
            mid = (s + mark[s]) >> 1
            for p in range(s, mid + 1):
                end = bcnt[p]
                while pos < end:
                    xev = ev[pos]
                    pos += 1
                    c = xev >> 1
                    sm = _fw_sum(fw, cyb[c]) - _fw_sum(fw, cya[c])
                    if xev & 1:
                        WL[c] += sm
                    else:
                        WL[c] -= sm
                if p < mid:
                    el = nxt[p]
                    _fw_add(fw, yrank[el], w[el])
        # undo the insertions, clear the buckets and the marks
        for u in range(ns):
            s = st[u]
            mid = (s + mark[s]) >> 1
            for p in range(s, mid + 1):
                bcnt[p] = 0
                if p < mid:
                    el = nxt[p]
                    _fw_add(fw, yrank[el], -w[el])
            mark[s] = -1
        for t in range(nt):
            c = todo[t]
            s = cs[c]
            mid = (s + ce[c]) >> 1
            if WL[c] >= r[c]:
                a[c] = la[c]
                b[c] = lb[c]
                ce[c] = mid
            else:
                r[c] -= WL[c]
                a[c] = mid + (a[c] - la[c])
                b[c] = mid + (b[c] - lb[c])
                cs[c] = mid
        cur, nxt = nxt, cur
    for c in range(k):
        rem[cand[c]] = DEAD

