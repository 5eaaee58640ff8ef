"""Numba kernels of the n-of-N quantile structure (:mod:`.nofn`; paper 004 §2.1's n-of-N model,
Lin et al. ICDE 2004, with the dyadic levels of Arasu & Manku PODS 2004).

State (flat arrays, one operator; the layout is :class:`vigil.quantiles.nofn.NofN`'s):

- ``meta`` int64 scalars (``M_*`` below).
- ``lev`` int64 (LV_ROWS, L+1): per level l, its sample spacing s_l, the samples per node (capacity
  m_l), the ring of node slots (size), the offset of the level's samples in ``V``/``RK``, of its
  node slots in ``nj``/``nm``/``ng`` and of its pending exact union in ``acc``. Level 0 is the
  leaves: closed blocks of B elements (a ring of ``capb`` slots), sorted by value, every element a
  sample (rank i+1) and ``ls`` their seqs; ``blo``/``bhi`` each leaf's first and last seq.
- ``V`` float64 / ``RK`` int64: values and exact in-node ranks of every sample: the leaves, then
  the nodes of levels 1..L (node (l, j) covers blocks [j 2^l, (j+1) 2^l) and keeps its union's
  values at ranks 1, s_l, 2 s_l, ..., and its size 2^l B; slot j mod ring), then three scratch
  lists of B entries (a query's partial leaf, its part of the open block, the open block sorted).
- ``nj``/``nm``/``ng``: per node slot the node it holds (-1: none), its sample count and its
  largest rank step (<= s_l).
- ``acc``/``aj``: the exact sorted union of the left node of each level waiting for its right
  sibling (a binary counter over the blocks), and two carry buffers.
- ``ov``/``os``: the open block in arrival order; ``oss``: the sorted open block's seqs.

A query's window after position n is [Lq, n], Lq = max(start + 1, n - W + 1): the in-window
elements of the leaf Lq falls inside (exact, from its seqs), the greedy dyadic cover of the
closed blocks after it (at most 2 nodes per level) and the open block's elements with seq >= Lq.
"""

from __future__ import annotations

import numba
import numpy as np

M_N, M_OC, M_KLO, M_KHI, M_WMAX, M_L, M_CAPB, M_B, M_OSORT, M_NPUSH, M_SO, M_S1, M_S2 = range(13)
META_SIZE = 16
LV_S, LV_M, LV_RG, LV_POFF, LV_NOFF, LV_AOFF = range(6)
LV_ROWS = 6
NONE = -(2**62)  # meta[M_N] before any position

_NJ = {"cache": True, "nogil": True}
_NI = {"cache": True, "nogil": True, "inline": "always"}


@numba.njit(**_NI)
def _ub(V, lo, hi, x):
    """First index in [lo, hi) with V > x (V sorted there)."""
    while lo < hi:
        m = (lo + hi) >> 1
        if V[m] <= x:
            lo = m + 1
        else:
            hi = m
    return lo


@numba.njit(**_NI)
def _lb(V, lo, hi, x):
    """First index in [lo, hi) with V >= x."""
    while lo < hi:
        m = (lo + hi) >> 1
        if V[m] < x:
            lo = m + 1
        else:
            hi = m
    return lo


@numba.njit(**_NJ)
def quantile_rank(phi, num, den, cnt):
    """max(1, ceil(phi*cnt)) exactly, (num, den) = ``vigil.arrays.rank_fraction(phi)`` (den <= 0:
    in float64); the algorithm of ``vigil.arrays.quantile_rank``'s compiled twin."""
    if cnt <= 0:
        return 0
    if cnt == 1:
        return 1
    if den > 0 and num <= 2147483648 and cnt < 4294967296:
        p = num * cnt
        r = p // den
        if r * den < p:
            r += 1
    elif den > 0 and cnt <= 140737488355328:
        q = np.int64(np.floor(phi * cnt))
        rem = np.int64(np.uint64(num) * np.uint64(cnt) - np.uint64(q) * np.uint64(den))
        while rem < 0:
            q -= 1
            rem += den
        while rem >= den:
            q += 1
            rem -= den
        r = q + 1 if rem > 0 else q
    else:
        r = np.int64(np.ceil(phi * cnt))
    if r < 1:
        r = 1
    if r > cnt:
        r = cnt
    return r


@numba.njit(**_NJ)
def _build_node(lev, V, RK, nj, nm, ng, u, uoff, size, lv, j):
    """Node (lv, j) from its exact sorted union u[uoff:uoff+size]: ranks 1, s, 2s, ..., size."""
    s = lev[LV_S, lv]
    r = j % lev[LV_RG, lv]
    p = lev[LV_POFF, lv] + r * lev[LV_M, lv]
    m = 0
    V[p] = u[uoff]
    RK[p] = 1
    m = 1
    gap = 1
    rk = s
    if rk == 1:
        rk = 2
    while rk <= size:
        V[p + m] = u[uoff + rk - 1]
        RK[p + m] = rk
        if rk - RK[p + m - 1] > gap:
            gap = rk - RK[p + m - 1]
        m += 1
        rk += s
    if RK[p + m - 1] != size:
        V[p + m] = u[uoff + size - 1]
        RK[p + m] = size
        if size - RK[p + m - 1] > gap:
            gap = size - RK[p + m - 1]
        m += 1
    q = lev[LV_NOFF, lv] + r
    nj[q] = j
    nm[q] = m
    ng[q] = gap


@numba.njit(**_NJ)
def close_block(meta, lev, V, RK, ls, blo, bhi, ov, os_, nj, nm, ng, acc, aj):
    """Close the full open block: expire the leaves before the largest window, sort the block into
    its leaf, and carry it up the levels (each completed node built from its exact union)."""
    B = meta[M_B]
    capb = meta[M_CAPB]
    k = meta[M_KHI]
    n = meta[M_N]
    bound = n - meta[M_WMAX] + 1
    klo = meta[M_KLO]
    while klo < k and bhi[klo % capb] < bound:
        klo += 1
    if k - klo >= capb:  # never with the layout's capacity (Wmax / B + 3 leaves); kept safe
        klo = k - capb + 1
    meta[M_KLO] = klo
    slot = k % capb
    base = slot * B
    order = np.argsort(ov[:B], kind="mergesort")
    for i in range(B):
        V[base + i] = ov[order[i]]
        ls[base + i] = os_[order[i]]
        RK[base + i] = i + 1
    blo[slot] = os_[0]
    bhi[slot] = os_[B - 1]
    meta[M_KHI] = k + 1
    meta[M_OC] = 0
    meta[M_OSORT] = 0
    L = meta[M_L]
    if L == 0:
        return
    c0 = lev[LV_AOFF, L]  # the carry buffers: [c0, c0 + 2^L B) and the next as many
    c1 = c0 + (np.int64(1) << L) * B
    cur, nxt = c0, c1
    for i in range(B):
        acc[cur + i] = V[base + i]
    size = B
    idx = k
    for lv in range(L):
        if idx & 1 == 0:
            a = lev[LV_AOFF, lv]
            for i in range(size):
                acc[a + i] = acc[cur + i]
            aj[lv] = idx
            return
        if aj[lv] != idx - 1:  # its left sibling was not kept (the level did not exist then)
            return
        a = lev[LV_AOFF, lv]
        i1, i2, o = a, cur, nxt
        e1, e2 = a + size, cur + size
        while i1 < e1 and i2 < e2:
            if acc[i2] < acc[i1]:
                acc[o] = acc[i2]
                i2 += 1
            else:
                acc[o] = acc[i1]
                i1 += 1
            o += 1
        while i1 < e1:
            acc[o] = acc[i1]
            i1 += 1
            o += 1
        while i2 < e2:
            acc[o] = acc[i2]
            i2 += 1
            o += 1
        aj[lv] = -1
        cur, nxt = nxt, cur
        size *= 2
        idx >>= 1
        _build_node(lev, V, RK, nj, nm, ng, acc, cur, size, lv + 1, idx)


@numba.njit(**_NJ)
def push(x, seqs, meta, lev, V, RK, ls, blo, bhi, ov, os_, nj, nm, ng, acc, aj):
    """Positions ``seqs`` (increasing) with values ``x`` (NaN: a position without element)."""
    B = meta[M_B]
    oc = meta[M_OC]
    for i in range(len(x)):
        meta[M_N] = seqs[i]
        v = x[i]
        if v != v:
            continue
        ov[oc] = v
        os_[oc] = seqs[i]
        oc += 1
        if oc == B:
            meta[M_OC] = oc
            close_block(meta, lev, V, RK, ls, blo, bhi, ov, os_, nj, nm, ng, acc, aj)
            oc = 0
    meta[M_OC] = oc
    meta[M_OSORT] = 0
    meta[M_NPUSH] += len(x)


@numba.njit(**_NJ)
def sort_open(meta, V, RK, ov, os_, oss):
    """The open block sorted by value into its scratch list (once per push)."""
    if meta[M_OSORT]:
        return
    oc = meta[M_OC]
    so = meta[M_SO]
    order = np.argsort(ov[:oc], kind="mergesort")
    for i in range(oc):
        V[so + i] = ov[order[i]]
        oss[i] = os_[order[i]]
        RK[so + i] = i + 1
    meta[M_OSORT] = 1


@numba.njit(**_NJ)
def cover(meta, lev, V, RK, ls, blo, bhi, os_, oss, nj, nm, ng, lq, loff, llen, lgap, lsize):
    """The lists of window [lq, n] (the open block sorted first: :func:`sort_open`): offsets into
    V/RK, lengths, largest rank steps and element counts; returns their number. The partial leaf
    and a cut open block are copied into the scratch lists."""
    B = meta[M_B]
    capb = meta[M_CAPB]
    L = meta[M_L]
    klo, khi = meta[M_KLO], meta[M_KHI]
    K = 0
    lo, hi = klo, khi  # first closed block with last seq >= lq
    while lo < hi:
        m = (lo + hi) >> 1
        if bhi[m % capb] < lq:
            lo = m + 1
        else:
            hi = m
    a = lo
    if a < khi and blo[a % capb] < lq:  # the partial leaf: its in-window elements, exact
        base = (a % capb) * B
        s1 = meta[M_S1]
        c = 0
        for i in range(B):
            if ls[base + i] >= lq:
                V[s1 + c] = V[base + i]
                RK[s1 + c] = c + 1
                c += 1
        if c:
            loff[K], llen[K], lgap[K], lsize[K] = s1, c, 1, c
            K += 1
        a += 1
    while a < khi:  # greedy dyadic cover of the full blocks [a, khi)
        lv = 0
        while lv < L and (a >> (lv + 1)) << (lv + 1) == a and a + (np.int64(2) << lv) <= khi:
            lv += 1
        while lv > 0:
            j = a >> lv
            q = lev[LV_NOFF, lv] + j % lev[LV_RG, lv]
            if nj[q] == j:
                break
            lv -= 1
        if lv == 0:
            loff[K], llen[K], lgap[K], lsize[K] = (a % capb) * B, B, 1, B
        else:
            j = a >> lv
            r = j % lev[LV_RG, lv]
            q = lev[LV_NOFF, lv] + r
            loff[K] = lev[LV_POFF, lv] + r * lev[LV_M, lv]
            llen[K], lgap[K], lsize[K] = nm[q], ng[q], np.int64(B) << lv
        K += 1
        a += np.int64(1) << lv
    oc = meta[M_OC]
    if oc:
        so = meta[M_SO]
        if os_[0] >= lq:
            loff[K], llen[K], lgap[K], lsize[K] = so, oc, 1, oc
            K += 1
        else:
            s2 = meta[M_S2]
            c = 0
            for i in range(oc):
                if oss[i] >= lq:
                    V[s2 + c] = V[so + i]
                    RK[s2 + c] = c + 1
                    c += 1
            if c:
                loff[K], llen[K], lgap[K], lsize[K] = s2, c, 1, c
                K += 1
    return K


@numba.njit(**_NJ)
def select(V, RK, K, loff, llen, T, lo, hi, ub):
    """The smallest sample value x of the lists with R(x) >= T, R(x) = the sum over the lists of
    the rank of their last sample <= x (T <= the total size, so the largest sample qualifies).
    Bisection over values: the pivot halves the list with the most samples still in play."""
    best = -np.inf
    for j in range(K):
        lo[j] = loff[j]
        hi[j] = loff[j] + llen[j]
        if V[hi[j] - 1] > best:
            best = V[hi[j] - 1]
    for j in range(K):
        hi[j] = _lb(V, lo[j], hi[j], best)
    while True:
        js = -1
        w = 0
        for j in range(K):
            if hi[j] - lo[j] > w:
                w = hi[j] - lo[j]
                js = j
        if js < 0:
            return best
        p = V[(lo[js] + hi[js]) >> 1]
        R = 0
        for j in range(K):
            u = _ub(V, lo[j], hi[j], p)
            ub[j] = u
            if u > loff[j]:
                R += RK[u - 1]
        if R >= T:
            best = p
            for j in range(K):
                hi[j] = _lb(V, lo[j], ub[j], p)
        else:
            for j in range(K):
                lo[j] = ub[j]


@numba.njit(**_NJ)
def lookup(meta, lev, V, RK, ls, blo, bhi, ov, os_, oss, nj, nm, ng, phi, num, den, start, w, n, out):
    """Every query's answer after position n (NaN for an empty window): the smallest sample x of
    its window's lists with R(x) >= max(1, t - floor(D/2)), t the target rank, D the sum of the
    lists' largest rank steps minus one (the error is at most ceil(D/2) ranks: module doc)."""
    sort_open(meta, V, RK, ov, os_, oss)
    cap = meta[M_CAPB] + 8
    loff = np.empty(cap, np.int64)
    llen = np.empty(cap, np.int64)
    lgap = np.empty(cap, np.int64)
    lsize = np.empty(cap, np.int64)
    lo = np.empty(cap, np.int64)
    hi = np.empty(cap, np.int64)
    ub = np.empty(cap, np.int64)
    lqs = np.empty(len(phi), np.int64)
    for k in range(len(phi)):
        lqs[k] = max(start[k] + 1, n - w[k] + 1)
    order = np.argsort(lqs, kind="mergesort")  # queries of one window share its cover
    prev = NONE
    K = N = D = 0
    for i in range(len(phi)):
        k = order[i]
        lq = lqs[k]
        if lq != prev or i == 0:
            K = cover(meta, lev, V, RK, ls, blo, bhi, os_, oss, nj, nm, ng, lq, loff, llen, lgap, lsize)
            N = 0
            D = 0
            for j in range(K):
                N += lsize[j]
                D += lgap[j] - 1
            prev = lq
        if N == 0:
            out[k] = np.nan
            continue
        t = quantile_rank(phi[k], num[k], den[k], N)
        T = max(1, t - D // 2)
        out[k] = select(V, RK, K, loff, llen, T, lo, hi, ub)


@numba.njit(**_NJ)
def summary(V, RK, K, loff, llen, lsize, budget):
    """The lists merged as ``vigil.quantiles.merge_summaries`` merges (v, r, r) parts (in value
    order, ties by list then position: a tuple's r- adds every other list's rank before it, its
    r+ every other list's next rank minus one, or its size), by a heap over the list heads, then
    pruned to r+_next - r-_prev <= budget where the lists allow: float64 (m, 3)."""
    M = 0
    for j in range(K):
        M += llen[j]
    full = np.empty((M, 3))
    pos = np.empty(K, np.int64)
    lo = np.zeros(K, np.int64)  # rank of the list's last merged sample
    hi = np.empty(K, np.int64)  # rank of its next sample minus one (its size after its last)
    hv = np.empty(K)  # heap of list heads: (value, list)
    hp = np.empty(K, np.int64)
    h = 0
    s_lo = 0
    s_hi = 0
    for j in range(K):
        pos[j] = loff[j]
        hi[j] = RK[loff[j]] - 1 if llen[j] else lsize[j]
        s_hi += hi[j]
        if llen[j]:  # sift up
            c = h
            h += 1
            while c > 0:
                par = (c - 1) >> 1
                if hv[par] < V[loff[j]] or (hv[par] == V[loff[j]] and hp[par] < j):
                    break
                hv[c], hp[c] = hv[par], hp[par]
                c = par
            hv[c], hp[c] = V[loff[j]], j
    m = 0
    while h:
        j = hp[0]
        p = pos[j]
        r = RK[p]
        full[m, 0] = V[p]
        full[m, 1] = r + s_lo - lo[j]
        full[m, 2] = r + s_hi - hi[j]
        m += 1
        s_lo += r - lo[j]
        lo[j] = r
        p += 1
        pos[j] = p
        nh = RK[p] - 1 if p < loff[j] + llen[j] else lsize[j]
        s_hi += nh - hi[j]
        hi[j] = nh
        if p < loff[j] + llen[j]:  # replace the top by the list's next head, sift down
            x, xj = V[p], j
        else:
            h -= 1
            x, xj = hv[h], hp[h]
        c = 0
        while True:
            ch = 2 * c + 1
            if ch >= h:
                break
            if ch + 1 < h and (hv[ch + 1] < hv[ch] or (hv[ch + 1] == hv[ch] and hp[ch + 1] < hp[ch])):
                ch += 1
            if hv[ch] < x or (hv[ch] == x and hp[ch] < xj):
                hv[c], hp[c] = hv[ch], hp[ch]
                c = ch
            else:
                break
        if h:
            hv[c], hp[c] = x, xj
    if budget < 0 or M <= 2:
        return full
    keep = prune(full[:, 0], full[:, 1], full[:, 2], budget)
    out = np.empty((len(keep), 3))
    for i in range(len(keep)):
        out[i, 0] = full[keep[i], 0]
        out[i, 1] = full[keep[i], 1]
        out[i, 2] = full[keep[i], 2]
    return out


@numba.njit(**_NJ)
def prune(v, rlo, rhi, budget):
    """Indices of a merged summary's tuples to keep so that consecutive kept tuples have
    r+_next - r-_prev <= budget where the input allows it (the first and last tuples are kept)."""
    m = len(v)
    keep = np.empty(m, np.int64)
    if m == 0:
        return keep[:0]
    keep[0] = 0
    c = 1
    last = 0
    for i in range(1, m - 1):
        if rhi[i + 1] - rlo[last] > budget:
            keep[c] = i
            c += 1
            last = i
    if m > 1:
        keep[c] = m - 1
        c += 1
    return keep[:c]
