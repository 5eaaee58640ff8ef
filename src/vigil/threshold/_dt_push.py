"""DT kernels: element processing and distributed tracking (paper 000 §4 steps 1-3, §7 weighted
rounds): an element descends each tree, bumps counters, and fires the queues whose minimum it
reached. O(h) per element plus O(log_4 n) per signal; see :mod:`vigil.threshold._kernels`."""

from __future__ import annotations

import numba as nb
import numpy as np

from ._dt_keys import (
    _LO32,
    CHUNK_BITS,
    DIRECT,
    I64_MAX,
    SHARE,
    ST_DIRECT,
    ST_MATURED,
    ST_PURGED,
    ST_ROUNDS,
    ST_SIGNALS,
)
from ._dt_queues import _cval, _rekey, _remove_query, _root, _set_pay

# --------------------------------------------------------------------------------------------
# distributed tracking: a counter reached the top of its heap (§4 steps 1-3, §7 weighted rounds)
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def _mature(q, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st, PH, P0, rep):
    """Query q matured at element i: report it (``push_dt`` keeps room for every query's
    maturity at the element); a one-shot query's entries are removed eagerly (§4), a re-arming
    one is restarted by the caller (:func:`_restart`)."""
    out_q[nout] = q
    out_o[nout] = i
    st[ST_MATURED] += 1
    if rep[q] <= 0:
        qalive[q] = 0
        qr[q, 1] = -1
        _remove_query(NR, tt, qn, qr, q, PH, P0)
    return nout + 1


@nb.njit(cache=True, inline="always")
def _sums(q, NR, qn, qr, PH, P0):
    """(exact weight S of q's counters, sum of their square roots, q's busiest entry)."""
    e0 = qr[q, 3]
    e1 = qr[q + 1, 3]
    S = np.int64(0)
    Z = 0.0
    best = e0
    cb = np.int64(-1)
    for j in range(e0, e1):
        cu = _cval(NR, PH, P0, qn[j, 0])
        S += cu
        Z += np.sqrt(np.float64(cu))
        if cu > cb:
            cb = cu
            best = j
    return S, Z, best


@nb.njit(cache=True, inline="always")
def _restart(q, S, Z, best, NR, tt, qn, qr, st, PH, P0):
    """Start q's next round at exact weight S (its target ``qr[q, 0]`` > S): direct mode if the
    remaining threshold is <= DIRECT h, else a round whose slacks are split by rate (§7)."""
    e0 = qr[q, 3]
    e1 = qr[q + 1, 3]
    h = e1 - e0
    remq = qr[q, 0] - S
    if remq <= DIRECT * h:
        qr[q, 1] = 0
        qr[q, 2] = S
        st[ST_DIRECT] += 1
        for j in range(e0, e1):
            u = qn[j, 0]
            _rekey(NR, tt, PH, P0, u, qn[j, 1], _cval(NR, PH, P0, u) + 1)
        return
    # next round: slack unit floor(tau' / (2 (1 + SHARE) h)); participant u gets
    # 1 + share_u units, shares ~ SHARE h sqrt(c(u)) / sum sqrt(c) (c(u) counts since
    # the build: u's rate; sqrt minimises the expected signals), the remainder to the
    # busiest; the slacks sum to (1 + SHARE) h units <= tau'/2
    nl = remq // (2 * (1 + SHARE) * h)
    qr[q, 1] = nl
    qr[q, 2] = (1 + SHARE) * h
    f = SHARE * h / Z if Z > 0.0 else 0.0
    used = np.int64(0)
    for j in range(e0, e1):
        if j == best:
            continue
        u = qn[j, 0]
        sl = qn[j, 1]
        cu = _cval(NR, PH, P0, u)
        mu = np.int64(f * np.sqrt(np.float64(cu))) if Z > 0.0 else np.int64(SHARE)
        mu = min(mu, SHARE * h - used)
        used += mu
        _set_pay(NR, tt, PH, P0, u, sl, (q << 32) | mu)
        _rekey(NR, tt, PH, P0, u, sl, cu + nl * (1 + mu))
    u = qn[best, 0]
    sl = qn[best, 1]
    mu = SHARE * h - used
    _set_pay(NR, tt, PH, P0, u, sl, (q << 32) | mu)
    _rekey(NR, tt, PH, P0, u, sl, _cval(NR, PH, P0, u) + nl * (1 + mu))


@nb.njit(cache=True, inline="always")
def _fire(r, c, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st, PH, P0, rep):
    """Counter of node r is now c (>= the top sigma of H(r)): deliver every due signal. A row
    r >= P0 is a private piece (``_dt_bucket``): one entry, key and payload in its row."""
    priv = PH.ndim == 1 and r >= P0  # (a 2-D PH: no pieces, compiled away)
    nleaf = np.int64(1)
    rp = np.int64(0)
    if not priv:
        info = NR[r, 3]
        nleaf = info & _LO32
        rp = _root(info >> 32, nleaf)  # fixed for the node
    lone = priv or nleaf == 1
    while True:
        s0 = NR[r, 2]  # = the key at the root of H(r)
        if s0 > c:
            break
        v = NR[r, 3] if priv else tt[rp, 1]
        q = v >> 32
        slot = rp if lone else v & _LO32  # a lone leaf is its own root
        lq = qr[q, 1]
        if lq < 0:
            # entry of a terminated query (lazy deletion): drop it now that it surfaced
            _rekey(NR, tt, PH, P0, r, slot, I64_MAX)
            st[ST_PURGED] += 1
            continue
        if lq > 0:
            # weighted round (§7, slack split by rate): this participant's slack is
            # lq * (1 + share); one increment may carry several signals, each reporting
            # (1 + share) units; the round ends when the reported units reach (1 + SHARE) h
            # (qr[q, 2] counts the units still missing: h is not needed here)
            sh = 1 + ((v if lone else tt[slot, 1]) & _LO32)
            lu = lq * sh
            ksig = 1 if c - s0 < lu else (c - s0) // lu + 1  # usually 1: no division
            add = ksig * sh
            st[ST_SIGNALS] += ksig
            if add < qr[q, 2]:
                qr[q, 2] -= add
                _rekey(NR, tt, PH, P0, r, slot, s0 + ksig * lu)
                continue
            st[ST_ROUNDS] += 1
            S, Z, best = _sums(q, NR, qn, qr, PH, P0)
            if S >= qr[q, 0]:
                nout = _mature(q, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st, PH, P0, rep)
                if rep[q] <= 0:
                    continue
                qr[q, 0] = S + rep[q]  # re-arm: weight 0 from the next element on
            _restart(q, S, Z, best, NR, tt, qn, qr, st, PH, P0)
        else:
            # direct mode (tau <= DIRECT h): every counter change is reported
            a = qr[q, 2] + c - (s0 - 1)
            qr[q, 2] = a
            st[ST_SIGNALS] += 1
            if a >= qr[q, 0]:
                nout = _mature(q, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st, PH, P0, rep)
                if rep[q] > 0:  # re-arm: weight 0 from the next element on
                    S, Z, best = _sums(q, NR, qn, qr, PH, P0)
                    qr[q, 0] = S + rep[q]
                    _restart(q, S, Z, best, NR, tt, qn, qr, st, PH, P0)
                continue
            _rekey(NR, tt, PH, P0, r, slot, c + 1)
    return nout


# --------------------------------------------------------------------------------------------
# element processing
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _locate(xk, w, i0, i1, tbase, tL, tH, tdim, NR, last, it_el, it_tree, it_leaf, cur, tmp):
    """Phase A of a group of elements ``i0..i1-1``: descend every tree an element must visit, level
    by level across all (element, tree) pairs at once (ordered by height, so each level is a prefix
    of the list), so that the cache misses of independent descents overlap (and phase B finds the
    rows in cache). Reads only split keys and child links, which never change after the build. Writes one item (element,
    last-dimension tree, leaf index) per visited last-dimension tree, grouped by element in
    increasing order; returns the number of items. ``cur``/``tmp``: int64[cap, 6] scratch."""
    # cur columns: 0 element, 1 tree, 2 j (index in level), 3 level offset, 4 x, 5 height
    ncur = 0
    for i in range(i0, i1):
        if w[i] > 0:
            cur[ncur, 0] = i
            cur[ncur, 1] = 0
            ncur += 1
    nit = 0
    hist = np.zeros(66, np.int64)
    while ncur > 0:
        kd = tdim[cur[0, 1]]
        # order by height, tallest first
        hist[:] = 0
        for p in range(ncur):
            hh = tH[cur[p, 1]]
            hist[64 - hh] += 1
        acc = 0
        for b in range(66):
            c = hist[b]
            hist[b] = acc
            acc += c
        for p in range(ncur):
            t = cur[p, 1]
            hh = tH[t]
            dst = hist[64 - hh]
            hist[64 - hh] = dst + 1
            tmp[dst, 0] = cur[p, 0]
            tmp[dst, 1] = t
            tmp[dst, 2] = 0
            tmp[dst, 3] = 0
            tmp[dst, 4] = xk[cur[p, 0], kd]
            tmp[dst, 5] = hh
        maxh = tmp[0, 5]
        nchild = 0
        active = ncur
        for lev in range(maxh + 1):
            while active > 0 and tmp[active - 1, 5] < lev:
                active -= 1
            for p in range(active):
                t = tmp[p, 1]
                H = tmp[p, 5]
                row = tbase[t] + tmp[p, 3] + tmp[p, 2]
                if kd != last:
                    ch = NR[row, 1]
                    if ch >= 0:
                        cur[nchild, 0] = tmp[p, 0]
                        cur[nchild, 1] = ch
                        nchild += 1
                if lev < H:
                    tmp[p, 3] += ((tL[t] - 1) >> (H - lev)) + 1
                    tmp[p, 2] = 2 * tmp[p, 2] + (1 if tmp[p, 4] >= NR[row, 0] else 0)
        if kd == last:
            for p in range(ncur):
                it_el[nit] = tmp[p, 0]
                it_tree[nit] = tmp[p, 1]
                it_leaf[nit] = tmp[p, 2]
                nit += 1
            break
        ncur = nchild
    # group items by element (stable counting sort over the small element range)
    if nit > 1:
        span = i1 - i0
        cnt = np.zeros(span + 1, np.int64)
        for p in range(nit):
            cnt[it_el[p] - i0 + 1] += 1
        for e in range(span):
            cnt[e + 1] += cnt[e]
        for p in range(nit):
            tmp[p, 0] = it_el[p]
            tmp[p, 1] = it_tree[p]
            tmp[p, 2] = it_leaf[p]
        for p in range(nit):
            k = tmp[p, 0] - i0
            dst = cnt[k]
            cnt[k] = dst + 1
            it_el[dst] = tmp[p, 0]
            it_tree[dst] = tmp[p, 1]
            it_leaf[dst] = tmp[p, 2]
    return nit


_GROUP = 16
_CS = 1 << CHUNK_BITS
_CMASK = _CS - 1


@nb.njit(cache=True, nogil=True)
def push_dt(xk, w, NR, tbase, tL, tH, tdim, PH, P0, tt, qn, qr, qalive, out_q, out_o, st, floor, rep, start,
            nrep):
    """Feed elements (keys ``xk[n, d]``, weights ``w[n]``; weight 0 = skip) through one structure.
    Each element visits the root-to-leaf path of the primary tree and, for d > 1, of the
    secondary trees of the nodes on it (§6); each visited node of the last dimension gets
    ``c(u) += w`` and, if its heap top is due, signals (§4).

    Elements are taken in groups of ``_GROUP``: phase A (:func:`_locate`) finds all their leaves,
    phase B then applies the elements strictly one after another, in order: counters along each
    path (addresses known, so the misses overlap) and heap inspection. Offsets are exact: an
    element touches at most one node of any query's canonical set, so the order of the counter
    updates *within* one element is immaterial, and nothing phase A reads ever changes.
    With a 1-D ``PH`` the last-dimension trees are bucketed (``_dt_bucket``; not bucketed: a 2-D
    ``PH``, so that numba compiles a separate kernel without the bucket code): at its leaf
    (bucket) the element also checks the bucket's private pieces p (rows ``P0 + p``: lower key
    ``NR[P0 + p, 0]``, upper key ``PH[p]``) and bumps those containing it (whole chunks of 32 by a lazy
    tag, see ``_dt_bucket``). With ``floor`` only
    counters are maintained. ``rep[q]`` >= 1: q re-arms at a maturity (weight 0 from the next
    element on, target ``S + rep[q]`` over its exact counter sum S, next round started at once).
    Elements from ``start`` on; with ``nrep`` > 0 re-arming queries the kernel stops before an
    element at which the maturities might no longer fit in ``out_q``/``out_o`` (k queries: k
    more). Returns (number of maturities written to ``out_q`` (local query) / ``out_o`` (row),
    in row order; the row to resume from, n when done). O(log^d m) per element plus O(log m) per
    signal (a re-arm costs what a round end costs, O(h log m))."""
    n = xk.shape[0]
    last = xk.shape[1] - 1
    nout = 0
    ph = PH.reshape(-1)  # (typed 1-D in both kernels; used only when PH is 1-D)
    CR = P0 + ph.shape[0]  # bucketed: the chunk tag rows follow the pieces
    # upper bound of items per element: product of (height + 1) over the dimensions
    per = 1
    hmax = 0
    for t in range(tH.shape[0]):
        if tH[t] > hmax:
            hmax = tH[t]
    for _ in range(last + 1):
        per *= hmax + 1
    G = _GROUP if per * _GROUP <= (1 << 20) else max(1, (1 << 20) // per)
    cap = per * G + 2
    it_el = np.empty(cap, np.int64)
    it_tree = np.empty(cap, np.int64)
    it_leaf = np.empty(cap, np.int64)
    cur = np.empty((cap, 6), np.int64)
    tmp = np.empty((cap, 6), np.int64)
    due = np.empty(1 << 16, np.int64)  # due private pieces of one bucket (<= B + 32 * chunks)
    dch = np.empty(1 << 11, np.int64)  # chunks whose bound was reached
    k = qr.shape[0] - 1
    cap = out_q.shape[0]
    prev = -1
    for i0 in range(start, n, G):
        i1 = min(n, i0 + G)
        nit = _locate(xk, w, i0, i1, tbase, tL, tH, tdim, NR, last, it_el, it_tree, it_leaf, cur, tmp)
        for p in range(nit):
            i = it_el[p]
            if nrep > 0 and i != prev:
                if nout + k > cap:  # the buffers might not hold this element's maturities
                    return nout, i
                prev = i
            wi = w[i]
            t = it_tree[p]
            leaf = it_leaf[p]
            base = tbase[t]
            L = tL[t]
            H = tH[t]
            off = 0
            row = 0
            if floor:
                for lev in range(H + 1):
                    row = base + off + (leaf >> (H - lev))
                    NR[row, 1] += wi
                    off += ((L - 1) >> (H - lev)) + 1
            else:
                for lev in range(H + 1):
                    row = base + off + (leaf >> (H - lev))
                    c = NR[row, 1] + wi
                    NR[row, 1] = c
                    if c >= NR[row, 2]:
                        nout = _fire(row, c, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st, PH, P0, rep)
                    off += ((L - 1) >> (H - lev)) + 1
            if PH.ndim == 1:  # bucketed (a compile-time constant)
                # the bucket's private pieces (``_dt_bucket``; at most one per query contains x):
                # left pieces [lo, end) contain x iff lo <= x, a prefix of their list by lower key;
                # right pieces [first key, hi) iff x < hi, a prefix by upper key descending; whole
                # chunks of such a prefix get one tag, the rest of it is bumped one by one; pieces
                # with both ends in the bucket (by lower key): a whole chunk below x is tagged if
                # all its upper keys are above x, skipped if none is, else bumped one by one
                v = NR[row, 0]
                p0 = (v >> 33) & 0x7FFFFFFF
                p1 = p0 + ((v >> 22) & 0x7FF)
                p2 = p1 + ((v >> 11) & 0x7FF)
                p3 = p2 + (v & 0x7FF)
                x = xk[i, last]
                nd = 0
                nc = 0
                for seg in range(3):
                    a = p0 if seg == 0 else (p1 if seg == 1 else p2)
                    b = p1 if seg == 0 else (p2 if seg == 1 else p3)
                    p = a
                    while p < b:
                        if ((p & _CMASK) == 0 and p + _CS <= b
                                and (x < ph[p + _CS - 1] if seg == 2 else NR[P0 + p + _CS - 1, 0] <= x)):
                            # a whole chunk of the list, all lower keys <= x (left, both) / all
                            # upper keys > x (right)
                            cr = CR + (p >> CHUNK_BITS)
                            if seg == 1:  # both ends inside: by the chunk's upper keys (min, max)
                                if NR[cr, 3] <= x:  # none contains x
                                    p += _CS
                                    continue
                                if NR[cr, 2] <= x:  # some do, some not: one by one
                                    cr = -1
                            if cr >= 0:  # the whole chunk contains x: one tag
                                ta = NR[cr, 0] + wi
                                NR[cr, 0] = ta
                                if not floor and NR[cr, 1] <= ta:
                                    # the bound is reached: its due pieces, then an exact bound
                                    for r in range(P0 + p, P0 + p + _CS):
                                        if NR[r, 1] + ta >= NR[r, 2]:
                                            due[nd] = r
                                            nd += 1
                                    dch[nc] = p
                                    nc += 1
                                p += _CS
                                continue
                        if seg == 2:
                            if x >= ph[p]:
                                break
                        elif NR[P0 + p, 0] > x:
                            break
                        elif seg == 1 and x >= ph[p]:
                            p += 1
                            continue
                        # piece p contains x: its own counter base (the chunk's minimum deficit
                        # stays a lower bound), fired if base + chunk tag reached its key
                        r = P0 + p
                        c = NR[r, 1] + wi
                        NR[r, 1] = c
                        cr = CR + (p >> CHUNK_BITS)
                        kk = NR[r, 2]
                        if kk - c < NR[cr, 1]:
                            NR[cr, 1] = kk - c
                        if not floor and c + NR[cr, 0] >= kk:
                            due[nd] = r
                            nd += 1
                        p += 1
                # fire the due pieces at one call site (code size; the order of the updates within
                # one element is immaterial, and firing one piece never makes another due)
                for d in range(nd):
                    r = due[d]
                    nout = _fire(r, _cval(NR, PH, P0, r), i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st, PH,
                                               P0, rep)
                for d in range(nc):
                    p = dch[d]
                    mn = I64_MAX
                    for r in range(P0 + p, P0 + p + _CS):
                        if NR[r, 2] - NR[r, 1] < mn:
                            mn = NR[r, 2] - NR[r, 1]
                    NR[CR + (p >> CHUNK_BITS), 1] = mn
    return nout, n
