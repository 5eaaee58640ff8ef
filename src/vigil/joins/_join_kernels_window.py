"""numba kernels of the window-join strategies (paper 003 §3.3) over a batch of arriving tuples.
Window predicate |r.T - s.T| < w. Stored side in (key, attr) order K, X, S, T and, for
WJ-JoinFirst, in (key, seq) order (times nondecreasing inside a key: tuples arrive in time
order). D is the 3D R-tree of :mod:`vigil.joins._rtree` over all boxes (other range) x (arriving
range) x [0, w), probed with (x, a, |t - T|). Modes as in _join_kernels_band.
"""

from __future__ import annotations

import numba
import numpy as np

from ._join_kernels_band import put_one, put_range
from ._join_kernels_select import gallop_lb_back, gallop_ub, key_block, stab_intervals, xlb, xub
from ._rtree import stab
from ._skyline_cache import lookup, prepare


@numba.njit(cache=True, nogil=True)
def wj_join_first(K2, X2, S2, T2, kb, av, tv, wmax, root, NB, NC, IB, IQ, Qid, mode, oq, oi, oo):
    """WJ-JoinFirst (§3.3.1): partners S.B = b and S.T > t - w_max from the (B, T) index (binary
    search on T inside the key block), then each probes D with (x, a, t - T).
    O(log m + m_b g3(n) + k). A tuple whose a lies outside the root's arriving-side range joins no
    query and is skipped before its partners are searched; when D is one leaf (<= 16 boxes) the
    boxes whose arriving-side range holds a are listed once per tuple and each partner checks
    only those (the same boxes D's probe finds: the same pairs, O(n + m_b n'))."""
    n = 0
    cnt = 0
    nq = len(Qid)
    buf = np.empty(nq + 1, np.int64)
    mine = np.empty(nq + 1, np.int64)
    stack = np.empty(16 * 64, np.int64)
    seen = np.zeros(nq, np.int64)
    leaf = root >= 0 and NC[root, 2] == 1
    for i in range(len(kb)):
        a = av[i]
        t = tv[i]
        if a != a or t != t:
            continue
        if root < 0 or not (NB[root, 2] <= a and a <= NB[root, 3]):
            continue
        nm = 0
        if leaf:
            for it in range(NC[root, 0], NC[root, 0] + NC[root, 1]):
                if IB[it, 2] <= a and a <= IB[it, 3]:
                    mine[nm] = it
                    nm += 1
            if nm == 0:
                continue
        b0, b1 = key_block(K2, kb[i])
        lo, hi = b0, b1  # first k with t - T2[k] < wmax (a suffix: times ascending)
        while lo < hi:
            m = (lo + hi) >> 1
            if t - T2[m] < wmax:
                hi = m
            else:
                lo = m + 1
        for k in range(lo, b1):
            z = abs(t - T2[k])
            if leaf:
                x = X2[k]
                f = 0
                for v in range(nm):
                    it = mine[v]
                    if IB[it, 0] <= x and x <= IB[it, 1] and z < IB[it, 4]:
                        buf[f] = IQ[it]
                        f += 1
            else:
                f = stab(NB, NC, IB, IQ, root, X2[k], a, z, buf, stack)
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
                    n = put_range(oq, oi, oo, n, Qid[j], i, S2, k, k + 1)
    return n, cnt


@numba.njit(cache=True, nogil=True, inline="always")
def _scan(X, S, T, t, lo_x, hi_x, w, a0, a1, i, qid, mode, oq, oi, oo, n, cnt):
    """Partners in [a0, a1) (x-sorted, x inside the query's other range) within the window."""
    for k in range(a0, a1):
        if abs(t - T[k]) < w:
            if mode == 2:
                cnt += 1
            elif mode == 1:
                n = put_one(oq, oi, oo, n, qid, i)
                return n, cnt
            else:
                n = put_range(oq, oi, oo, n, qid, i, S, k, k + 1)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def wj_select_first(K, X, S, T, kb, av, tv, MLO, mx, size, Qid, OLO, OHI, W, mode, oq, oi, oo):
    """WJ-SelectFirst (§3.3.1): queries whose arriving-side range holds a, then per query the
    partners with x in its other range (binary search in the (B, C) block) checked against its
    window. O(log n + n' (log m' + r)) with r the partners in the range."""
    n = 0
    cnt = 0
    buf = np.empty(len(Qid) + 1, np.int64)
    stack = np.empty(256, np.int64)
    for i in range(len(kb)):
        a = av[i]
        t = tv[i]
        if a != a or t != t:
            continue
        b0, b1 = key_block(K, kb[i])
        if b0 == b1:
            continue
        f = stab_intervals(MLO, mx, size, a, buf, stack)
        for u in range(f):
            j = buf[u]
            s = xlb(X, OLO[j], b0, b1)
            e = xub(X, OHI[j], s, b1)
            n, cnt = _scan(X, S, T, t, OLO[j], OHI[j], W[j], s, e, i, Qid[j], mode, oq, oi, oo, n, cnt)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def wj_ssi(K, X, S, T, kb, av, tv, wmax, P, root, NB, NC, IB, IQ, Qid, OLO, OHI, W, QP, mode, oq, oi, oo):
    """WJ-SSI (§3.3.2, Fig. 6, Theorem 4): in one pass over the partner block S_b (sorted by x)
    mark the points of the skylines R_b^i (ascending from each stabbing point: kept iff newer
    than every point between the stabbing point and it) and L_b^i (descending towards each
    stabbing point), trimmed to w_max; probe D with the marked points only; each affected query
    then walks the block outward from its group's stabbing point. Skylines are recomputed per
    arriving tuple (the paper's stale case: O(m_b) pass; the skyline_cache = False path).
    O(log m + m_b + m̄_b g3(n) + k') per arriving tuple."""
    n = 0
    cnt = 0
    nq = len(Qid)
    tau = len(P)
    buf = np.empty(nq + 1, np.int64)
    stack = np.empty(16 * 64, np.int64)
    seen = np.zeros(nq, np.int64)
    aff = np.empty(nq + 1, np.int64)
    mark = np.zeros(0, np.bool_)
    for i in range(len(kb)):
        a = av[i]
        t = tv[i]
        if a != a or t != t:
            continue
        b0, b1 = key_block(K, kb[i])
        if b0 == b1:
            continue
        if len(mark) < b1 - b0:
            mark = np.zeros(2 * (b1 - b0), np.bool_)
        else:
            mark[: b1 - b0] = False
        g = -1
        run = -np.inf
        for k in range(b0, b1):  # right skylines
            x = X[k]
            moved = False
            while g + 1 < tau and P[g + 1] <= x:
                g += 1
                moved = True
            if moved:
                run = -np.inf
            if g < 0 or not abs(t - T[k]) < wmax:
                continue
            if T[k] > run:
                mark[k - b0] = True
                run = T[k]
        g = tau
        run = -np.inf
        for k in range(b1 - 1, b0 - 1, -1):  # left skylines
            x = X[k]
            moved = False
            while g - 1 >= 0 and P[g - 1] >= x:
                g -= 1
                moved = True
            if moved:
                run = -np.inf
            if g >= tau or not abs(t - T[k]) < wmax:
                continue
            if T[k] > run:
                mark[k - b0] = True
                run = T[k]
        na = 0
        for k in range(b0, b1):
            if not mark[k - b0]:
                continue
            f = stab(NB, NC, IB, IQ, root, X[k], a, abs(t - T[k]), buf, stack)
            for u in range(f):
                j = buf[u]
                if seen[j] != i + 1:
                    seen[j] = i + 1
                    aff[na] = j
                    na += 1
        for u in range(na):
            j = aff[u]
            if mode == 1:
                n = put_one(oq, oi, oo, n, Qid[j], i)
                continue
            pos = xlb(X, QP[j], b0, b1)
            e = xub(X, OHI[j], pos, b1)
            n, cnt = _scan(X, S, T, t, OLO[j], OHI[j], W[j], pos, e, i, Qid[j], mode, oq, oi, oo, n, cnt)
            s = xlb(X, OLO[j], b0, pos)
            n, cnt = _scan(X, S, T, t, OLO[j], OHI[j], W[j], s, pos, i, Qid[j], mode, oq, oi, oo, n, cnt)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def wj_ssi_cached(K1, X1, S1, T1, Kt1, Xt1, St1, Tt1, K2, X2, S2, T2, Kt2, Xt2, St2, Tt2, kb, av, tv, wmax,
                  root, NB, NC, IB, IQ, Qid, OLO, OHI, W, QP, QG, HK, HV, EM, EC, AX, AT, AF, ST, P, ver, SEEN, BUF,
                  AFF, base, mode, oq, oi, oo):
    """WJ-SSI (§3.3.2, Fig. 6, Theorem 4) over the skyline cache (:mod:`vigil.joins._skyline_cache`,
    first made fresh for the batch's keys (``prepare``, trimmed at the batch's earliest time; if
    it needs room, returns (-1, 0) and the caller grows the cache and calls again: the entries
    done stay done): probe D with the cached skyline points of key b
    inside the window, then each affected query collects its pairs in each stored part (K1..,
    K2..: the main part and the buffer, in (key, C) order; Kt1.., Kt2..: the same in (key, T)
    order): the partners in its C range walked outward from its group's stabbing point (QG: its
    group; the point's position found once per group and part, the range ends by galloping), or the
    part's partners inside w_max (a suffix of the (key, T) order) when these are fewer, and no
    walk in a part without one (an affected query is affected through one part, maybe not
    the other).
    O(log m + m̄_b' + m̄_b g3(n) + k') per arriving tuple, m̄_b' the cached (untrimmed) points.
    Past ``prepare`` it reads the cache only (a rerun for output room gives the same records).
    SEEN, BUF, AFF: the caller's scratch of len(Qid) + 1 (no O(n) allocation per call: it
    dominated one-tuple calls); SEEN holds stamps base + i + 1, so every call needs a base above
    the last call's base + len(kb)."""
    t0 = np.inf
    for i in range(len(tv)):
        if tv[i] < t0:
            t0 = tv[i]
    if t0 == np.inf or len(Qid) == 0:
        return 0, 0
    if prepare(HK, HV, EM, EC, AX, AT, AF, ST, P, ver, K1, X1, T1, K2, X2, T2, kb, t0, wmax, 0) < len(kb):
        return -1, 0
    tau = len(P)
    n = 0
    cnt = 0
    buf = BUF
    stack = np.empty(16 * 64, np.int64)
    seen = SEEN
    aff = AFF
    gpos = np.empty(max(tau, 1), np.int64)
    gst = np.zeros(max(tau, 1), np.int64)
    for i in range(len(kb)):
        a = av[i]
        t = tv[i]
        if a != a or t != t:
            continue
        e = lookup(HK, HV, kb[i])
        if e < 0:
            continue
        na = 0
        s = EM[e, 0]
        for k in range(s, s + EM[e, 1]):
            z = abs(t - AT[k])
            if not z < wmax:
                continue
            f = stab(NB, NC, IB, IQ, root, AX[k], a, z, buf, stack)
            for u in range(f):
                j = buf[u]
                if seen[j] != base + i + 1:
                    seen[j] = base + i + 1
                    aff[na] = j
                    na += 1
        if na == 0:
            continue
        if mode == 1:
            for u in range(na):
                n = put_one(oq, oi, oo, n, Qid[aff[u]], i)
            continue
        n, cnt = _walk(K1, X1, S1, T1, Kt1, Xt1, St1, Tt1, kb[i], t, wmax, aff, na, QP, QG, gpos, gst, 2 * i + 1,
                       OLO, OHI, W, Qid, i, mode, oq, oi, oo, n, cnt)
        n, cnt = _walk(K2, X2, S2, T2, Kt2, Xt2, St2, Tt2, kb[i], t, wmax, aff, na, QP, QG, gpos, gst, 2 * i + 2,
                       OLO, OHI, W, Qid, i, mode, oq, oi, oo, n, cnt)
    return n, cnt


@numba.njit(cache=True, nogil=True, inline="always")
def _walk(K, X, S, T, Kt, Xt, St, Tt, b, t, wmax, aff, na, QP, QG, gpos, gst, stamp, OLO, OHI, W, Qid, i, mode, oq, oi,
          oo, n, cnt):
    """The pairs of the na affected queries aff[:na] in one stored part's block of key b: per
    query the cheaper of its C range (in (key, C) order) and the part's partners inside w_max
    (a suffix of the (key, T) order: times ascending inside a key)."""
    b0, b1 = key_block(K, b)
    if b0 == b1:
        return n, cnt
    c0, c1 = key_block(Kt, b)
    lo, hi = c0, c1  # first partner with t - T < w_max
    while lo < hi:
        m = (lo + hi) >> 1
        if t - Tt[m] < wmax:
            hi = m
        else:
            lo = m + 1
    if lo == c1:
        return n, cnt  # no partner of b in this part inside the window
    for u in range(na):
        j = aff[u]
        g = QG[j]
        if gst[g] != stamp:
            gst[g] = stamp
            gpos[g] = xlb(X, QP[j], b0, b1)
        pos = gpos[g]
        e = gallop_ub(X, OHI[j], pos, b1)
        s = gallop_lb_back(X, OLO[j], b0, pos)
        if c1 - lo < e - s:
            for k in range(lo, c1):
                x = Xt[k]
                if OLO[j] <= x and x <= OHI[j] and abs(t - Tt[k]) < W[j]:
                    if mode == 2:
                        cnt += 1
                    else:
                        n = put_range(oq, oi, oo, n, Qid[j], i, St, k, k + 1)
            continue
        n, cnt = _scan(X, S, T, t, OLO[j], OHI[j], W[j], pos, e, i, Qid[j], mode, oq, oi, oo, n, cnt)
        n, cnt = _scan(X, S, T, t, OLO[j], OHI[j], W[j], s, pos, i, Qid[j], mode, oq, oi, oo, n, cnt)
    return n, cnt
