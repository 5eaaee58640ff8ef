"""numba kernels of the select-join strategies (paper 003 §3.2, §4.1) over a batch of arriving
tuples. The stored side is sorted by (key, attr): K int64, X float64, S seqs (the B-tree on
S(B, C)); the block of partners of key b is found by two binary searches. Queries are held by
local index j: Qid[j], other-side range [OLO[j], OHI[j]] (probed with the stored tuple's attr x),
arriving-side range [MLO[j], MHI[j]] (probed with the arriving attr a).
Modes: 0 pairs, 1 affected, 2 count (see _join_kernels_band). Outputs are written into fixed
arrays (put_range; select.run_fixed reruns on overflow); the kernels return (records, count).
"""

from __future__ import annotations

import numba
import numpy as np

from ._join_kernels_band import lb, put_one, put_range
from ._rtree import stab
from ._sj_ssi_index import BLK


@numba.njit(cache=True, nogil=True)
def key_block(K, b):
    lo, hi = 0, len(K)
    while lo < hi:
        m = (lo + hi) >> 1
        if K[m] < b:
            lo = m + 1
        else:
            hi = m
    a = lo
    hi = len(K)
    while lo < hi:
        m = (lo + hi) >> 1
        if K[m] <= b:
            lo = m + 1
        else:
            hi = m
    return a, lo


@numba.njit(cache=True, nogil=True, inline="always")
def xlb(X, v, a, b):
    """first k in [a, b) with X[k] >= v"""
    while a < b:
        m = (a + b) >> 1
        if X[m] < v:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, nogil=True, inline="always")
def xub(X, v, a, b):
    """first k in [a, b) with X[k] > v"""
    while a < b:
        m = (a + b) >> 1
        if X[m] <= v:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, nogil=True, inline="always")
def gallop_ub(X, v, a, b):
    """first k in [a, b) with X[k] > v, by doubling steps from a: O(log (k - a))"""
    if a >= b or X[a] > v:
        return a
    lo = a
    step = 1
    while True:
        hi = lo + step
        if hi >= b:
            hi = b
            break
        if X[hi] > v:
            break
        lo = hi
        step *= 2
    return xub(X, v, lo + 1, hi)


@numba.njit(cache=True, nogil=True, inline="always")
def gallop_lb_back(X, v, a, b):
    """first k in [a, b) with X[k] >= v, by doubling steps leftwards from b: O(log (b - k))"""
    if b <= a or X[b - 1] < v:
        return b
    hi = b - 1
    step = 1
    while True:
        lo = hi - step
        if lo <= a:
            lo = a
            break
        if X[lo] < v:
            break
        hi = lo
        step *= 2
    return xlb(X, v, lo, hi)


@numba.njit(cache=True, nogil=True, inline="always")
def _ok(NA, u, a, hr, q2, hl, q1):
    """node u may hold a member with MHI >= a and (OHI >= q2 or OLO <= q1)"""
    return NA[u, 0] >= a and ((hr and NA[u, 1] >= q2) or (hl and NA[u, 2] <= q1))


@numba.njit(cache=True, nogil=True)
def sj_ssi(K, X, S, kb, av, GP, GOFF, GN, GNOFF, GNS, IT, IQ, NA, FM, mode, oq, oi, oo):
    """SJ-SSI (§3.2.2, Fig. 5, Theorem 3) over the flat per-group index of _sj_ssi_index: per
    stabbing group g (sorted by point, so the searches for P[g] in a partner block move right)
    q1 < P[g] <= q2 are the partners around P[g]; the group's members with MLO <= a <= MHI and
    OHI >= q2 (they take the partners from q2 rightwards while x <= OHI) or OLO <= q1 (leftwards
    while x >= OLO) are found by a binary search for the last block with MLO <= a, then a walk
    leftwards over the blocks through the tree (up while the left sibling cannot hold a hit,
    down into the rightmost child that can), which stops as soon as the prefix max of MHI over
    the blocks left of it is < a: O(log) per block reached. A group whose root
    excludes a, q1 and q2 costs O(1) after the search for P[g]. Per arriving tuple
    O(tau (log m' + log n) + k log n). A batch is processed group by group (each group's
    arrays stay in cache across the batch's tuples, taken in (partner block, a) order); per-call
    buffers O(batch). Outputs go to the given arrays without reallocation (see put_range):
    returns (records, pairs counted)."""
    n = 0
    cnt = 0
    tau = len(GP)
    nt = len(kb)
    IDX = np.empty(nt, np.int64)
    T0 = np.empty(nt, np.int64)
    T1 = np.empty(nt, np.int64)
    act = 0
    for i in range(nt):
        if av[i] == av[i]:
            b0, b1 = key_block(K, kb[i])
            if b1 > b0:
                IDX[act], T0[act], T1[act] = i, b0, b1
                act += 1
    o = np.argsort(av[IDX[:act]], kind="mergesort")
    o = o[np.argsort(T0[:act][o], kind="mergesort")]  # active tuples by (partner block, a)
    TI, B0, B1 = IDX[:act][o], T0[:act][o], T1[:act][o]
    POS = B0.copy()  # per tuple: the position of the last group's point in its block
    for g in range(tau):
        for u in range(act):
            i = TI[u]
            a = av[i]
            b0 = B0[u]
            b1 = B1[u]
            pos = xlb(X, GP[g], POS[u], b1)
            POS[u] = pos
            hr = pos < b1
            hl = pos > b0
            q2 = X[pos] if hr else np.inf
            q1 = X[pos - 1] if hl else -np.inf
            base = GNOFF[g]
            if not _ok(NA, base + 1, a, hr, q2, hl, q1):
                continue
            ns = GNS[g]
            lf = base + ns
            bl = xub(FM, a, lf, lf + ns) - lf - 1  # the last block whose first MLO <= a
            if bl < 0:
                continue
            off = GOFF[g]
            end = off + GN[g]
            v = ns + bl
            live = _ok(NA, base + v, a, hr, q2, hl, q1)
            while True:
                if live:
                    k1 = min(end, off + (v - ns + 1) * BLK)
                    for k in range(off + (v - ns) * BLK, k1):
                        if not (IT[k, 0] <= a and IT[k, 1] >= a):
                            continue
                        if hr and IT[k, 3] >= q2:
                            e = gallop_ub(X, IT[k, 3], pos, b1)
                            if mode == 2:
                                cnt += e - pos
                            elif mode == 1:
                                n = put_one(oq, oi, oo, n, IQ[k], i)
                            else:
                                n = put_range(oq, oi, oo, n, IQ[k], i, S, pos, e)
                        if hl and IT[k, 2] <= q1:
                            s = gallop_lb_back(X, IT[k, 2], b0, pos)
                            if mode == 2:
                                cnt += pos - s
                            elif mode == 1:
                                n = put_one(oq, oi, oo, n, IQ[k], i)
                            else:
                                n = put_range(oq, oi, oo, n, IQ[k], i, S, s, pos)
                t = v  # stop when no block left of v's subtree has MHI >= a
                while t < ns:
                    t <<= 1
                if t == ns or NA[base + t - 1, 3] < a:
                    break
                # up while v is a left child or its left sibling cannot hold a hit
                while v > 1 and ((v & 1) == 0 or not _ok(NA, base + v - 1, a, hr, q2, hl, q1)):
                    v >>= 1
                if v <= 1:
                    break
                v -= 1
                live = True
                while v < ns:  # down into the rightmost child that can hold a hit
                    if _ok(NA, base + 2 * v + 1, a, hr, q2, hl, q1):
                        v = 2 * v + 1
                    elif _ok(NA, base + 2 * v, a, hr, q2, hl, q1):
                        v = 2 * v
                    else:  # the bounds combined, no single child qualifies: continue leftwards
                        v = 2 * v
                        live = False
                        break
    return n, cnt


@numba.njit(cache=True, nogil=True)
def sj_join_first(K, X, S, kb, av, root, NB, NC, IB, IQ, Qid, mode, oq, oi, oo):
    """SJ-JoinFirst (§3.2.1): the partners from the index on S.B, then each partner (x, a)
    probes ONE R-tree over all queries' rectangles. O(log m + m' g(n) + k). The partners are
    stored by (key, x), so those whose x lies inside the root's box are one run of the tuple's
    block, found by two binary searches; the others (rejected at the root) are not visited, nor
    is a tuple whose a lies outside the root's box (the same output: such a stab finds
    nothing; on fig9's query set, rangeC's over 1% of S.C's domain, ~99% of the partners)."""
    n = 0
    cnt = 0
    nq = len(Qid)
    if root < 0:
        return n, cnt
    buf = np.empty(nq + 1, np.int64)
    stack = np.empty(16 * 64, np.int64)
    seen = np.zeros(nq if mode == 1 else 0, np.int64)
    xlo, xhi, alo, ahi = NB[root, 0], NB[root, 1], NB[root, 2], NB[root, 3]
    for i in range(len(kb)):
        a = av[i]
        if not (alo <= a and a <= ahi):  # also a NaN a
            continue
        b0, b1 = key_block(K, kb[i])
        if b1 > b0:
            b0 = xlb(X, xlo, b0, b1)
            b1 = xub(X, xhi, b0, b1)
        for k in range(b0, b1):
            f = stab(NB, NC, IB, IQ, root, X[k], a, 0.0, buf, stack)
            if mode == 2:
                cnt += f
                continue
            for u in range(f):
                j = buf[u]
                if mode == 1:
                    if seen[j] != i + 1:
                        seen[j] = i + 1
                        n = put_one(oq, oi, oo, n, Qid[j], i)
                else:
                    n = put_range(oq, oi, oo, n, Qid[j], i, S, k, k + 1)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def stab_intervals(MLO_sorted, mx, size, a, buf, stack):
    """Positions j (in MLO-sorted order) of the ranges containing a: prefix MLO <= a by binary
    search, then MHI >= a by descending the max-hi tournament tree mx. O(log n + n' log n)."""
    nq = len(MLO_sorted)
    lo, hi = 0, nq
    while lo < hi:
        m = (lo + hi) >> 1
        if MLO_sorted[m] <= a:
            lo = m + 1
        else:
            hi = m
    u = lo
    if u == 0:
        return 0
    n = 0
    top = 1
    stack[0] = 1
    while top > 0:
        top -= 1
        v = stack[top]
        if not mx[v] >= a:
            continue
        t = v
        while t < size:
            t <<= 1
        if t - size >= u:
            continue
        if v >= size:
            buf[n] = v - size
            n += 1
        else:
            stack[top] = 2 * v
            stack[top + 1] = 2 * v + 1
            top += 2
    return n


@numba.njit(cache=True, nogil=True)
def sj_select_first(K, X, S, kb, av, MLO, mx, size, Qid, OLO, OHI, mode, oq, oi, oo):
    """SJ-SelectFirst, improved (§4.1): the queries whose arriving-side range contains a (index
    on those ranges), the partner block located once by key, then per selected query a binary
    search for its other-side range inside the block. O(log n + log m + n' log m' + k)."""
    n = 0
    cnt = 0
    buf = np.empty(len(Qid) + 1, np.int64)
    stack = np.empty(256, np.int64)
    for i in range(len(kb)):
        a = av[i]
        if a != a:
            continue
        b0, b1 = key_block(K, kb[i])
        if b0 == b1:
            continue
        f = stab_intervals(MLO, mx, size, a, buf, stack)
        for u in range(f):
            j = buf[u]
            s = xlb(X, OLO[j], b0, b1)
            e = xub(X, OHI[j], s, b1)
            if e > s:
                if mode == 2:
                    cnt += e - s
                elif mode == 1:
                    n = put_one(oq, oi, oo, n, Qid[j], i)
                else:
                    n = put_range(oq, oi, oo, n, Qid[j], i, S, s, e)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def sj_vanilla(K, X, S, kb, av, MLO, MHI, Qid, OLO, OHI, mode, oq, oi, oo):
    """SJ-Vanilla (§4.1): the partner block located once, then every query checks its
    arriving-side range and binary-searches its other-side range. O(log m + n log m' + k)."""
    n = 0
    cnt = 0
    for i in range(len(kb)):
        a = av[i]
        if a != a:
            continue
        b0, b1 = key_block(K, kb[i])
        if b0 == b1:
            continue
        for j in range(len(Qid)):
            if not (MLO[j] <= a and a <= MHI[j]):
                continue
            s = xlb(X, OLO[j], b0, b1)
            e = xub(X, OHI[j], s, b1)
            if e > s:
                if mode == 2:
                    cnt += e - s
                elif mode == 1:
                    n = put_one(oq, oi, oo, n, Qid[j], i)
                else:
                    n = put_range(oq, oi, oo, n, Qid[j], i, S, s, e)
    return n, cnt


_ = lb  # re-exported helper
