"""Numba kernels of the sliding-window quantile summary (:mod:`.sliding`; paper 004 §2.3.2).

State (flat arrays, one operator):

- ``meta`` int64 scalars (``M_*`` below).
- Blocks, a FIFO ring ``blk`` (6, cap): first seq, last seq, element count, offset and length of
  its samples, rank uncertainty ``unc``. Blocks [bh, bt) are live; [mh, bt) are in the merged
  array (every block whose first seq is inside the window at the current position); block
  bh < mh (if live) is the *partial* block, whose first seq is before the window.
- Samples of each closed block: its sorted values ``sv`` at every s-th rank and its maximum
  (s = max(1, floor(eps * count / 2))), with their exact in-block ranks and seqs ``si``; a block's
  count of values below v is known within ``unc`` = (largest rank step) - 1 (0: the block is
  exact, every element is a sample).
- The merged array (``mv``, ``mi``: weight = rank step, block index, LL = rank lower bound of
  "values < v" summed over the merged blocks, EL = the same for "values <= v"), rebuilt (one
  merge pass) when a block closes or leaves it; ``Mtot``/``Utot`` its count and uncertainty.
- ``ob``/``obs`` (2, B + 1) values sorted, with their seqs: row 0 the open block (at most
  B = max(1, floor(eps*W/4)) positions; positions without element close no block, so after a run
  of them the window may cut it: its elements before the window are dropped), row 1 the *front*:
  the in-window elements of an exact partial block, dropped as the window passes them.

A query's window after position n is [L, n] with L = max(start + 1, n - W + 1). Its count of
values < v is bounded by the merged LL (minus the blocks of the merged array before L, for a query
registered inside the window), the open block and the front (exact, when inside), and a sampled
partial block (first seq < L <= last seq: between 0 and its x in-window elements, x in
[xmin, xmax] from its seq range and count). With exact blocks (B < 4/eps) the window is known
exactly, also over sparse, clumped seq. A value's worst distance to the target rank
max(1, ceil(phi*N)) over every N in [Nmin, Nmax] is :func:`_dist`; :func:`best` finds the
candidate (a sample of a block inside the window, an open-block or front value) minimizing it by
bisection (the distance falls then rises along the values).

Notify queries. Between two positions the distance between a fixed value's rank (any rank it
occupies) and the target moves by at most 1 (an arrival and an expiry move the rank by -1..1
together and leave N unchanged; one alone moves N by 1 and the target by 0 or 1 with it), and
e*N shrinks by at most e: a value at distance d0 <= e*N stays within e*N (the contract allows
e*N + 1: the slack is kept for the rounding of tiny windows) for floor((e*N - d0) / (1 + e))
more positions, and as long as its element is in the window
(its seq, or its block's first seq, + W - 1). The evaluations at these deadlines (a heap of
the queries whose window starts inside the summary's, one shared sweep for the others) and the
push loop are in :mod:`._sliding_notify`; the heap functions here are shared with the suffix
kernels.
"""

from __future__ import annotations

import math

import numba
import numpy as np

M_N, M_OC, M_OLO, M_OHI, M_BH, M_BT, M_MH, M_T, M_MTOT, M_UTOT, M_SH, M_ST, M_HS, M_NOUT, M_W, M_B = range(16)
M_EVALS, M_NPUSHED, M_PC, M_FX, M_L0, M_SEARCHES, M_VER = range(16, 23)
M_FIRST, M_GDEAD, M_NMAT, M_SWEEPS = range(23, 27)  # notify sweeps (:mod:`._sliding_notify`)
M_XACT, M_RT, M_RE, M_RP, M_RA = range(27, 32)  # the sweeps' kept counts and their ring (:mod:`._sliding_notify`)
META_SIZE = 32
B_LO, B_HI, B_CNT, B_OFF, B_LEN, B_UNC = range(6)
I_W, I_B, I_LL, I_EL = range(4)
Q_START, Q_VEXP, Q_DEAD, Q_ON, Q_HINT, Q_VER = range(6)  # hint: the held value's merged index at version
F_PHI, F_E, F_LAST = range(3)

G = 16  # coarse index step of the merged array
_NJ = {"cache": True, "nogil": True}
_NI = {"cache": True, "nogil": True, "inline": "always"}  # hot helpers: no call (and array refcount) overhead


@numba.njit(**_NI)
def _left(a, lo, hi, v):
    """First index of a[lo:hi] with a[i] >= v (branchless bisection)."""
    n = hi - lo
    if n <= 0:
        return lo
    base = lo
    while n > 1:
        half = n >> 1
        base = base + half if a[base + half] < v else base
        n -= half
    return base + 1 if a[base] < v else base


@numba.njit(**_NI)
def _right(a, lo, hi, v):
    """First index of a[lo:hi] with a[i] > v."""
    return _eq_end(a, _left(a, lo, hi, v), hi, v)


@numba.njit(**_NI)
def _eq_end(a, i, hi, v):
    """First index of a[i:hi] with a[k] > v, given a[i:hi] >= v (i: the first index >= v): the
    values equal to v are skipped, by bisection beyond the first few."""
    k = i
    while k < hi and a[k] == v:
        k += 1
        if k - i > 8:
            n = hi - k
            base = k
            while n > 1:
                half = n >> 1
                base = base + half if a[base + half] <= v else base
                n -= half
            return base + 1 if n == 1 and a[base] <= v else base
    return k


@numba.njit(**_NJ)
def _ranks(mv, mi, t, cv):
    """LL/EL of the merged array (rank lower bounds of < v and <= v at each value), and its
    coarse index cv (every G-th value: a search touches a few cache lines, not log T)."""
    for k in range(0, t, G):
        cv[k // G] = mv[k]
    cw = 0
    i = 0
    while i < t:
        j = i
        tot = cw
        while j < t and mv[j] == mv[i]:
            tot += mi[I_W, j]
            j += 1
        for k in range(i, j):
            mi[I_LL, k] = cw
            mi[I_EL, k] = tot
        cw = tot
        i = j


@numba.njit(**_NJ)
def close_open(meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps):
    """Close the open block: sample it, append it to the blocks and merge it into the merged array."""
    c = meta[M_OC]
    if c == 0:
        return
    s = max(1, int(eps * c / 2.0))
    st = meta[M_ST]
    off = st
    k = s - 1
    prev = 0
    gap = 0
    while True:
        idx = min(k, c - 1)
        sv[st] = ob[0, idx]
        si[0, st] = idx + 1
        si[1, st] = obs[0, idx]
        gap = max(gap, idx + 1 - prev)
        prev = idx + 1
        st += 1
        if idx == c - 1:
            break
        k += s
    meta[M_ST] = st
    bt = meta[M_BT]
    blk[B_LO, bt] = meta[M_OLO]
    blk[B_HI, bt] = meta[M_OHI]
    blk[B_CNT, bt] = c
    blk[B_OFF, bt] = off
    blk[B_LEN, bt] = st - off
    blk[B_UNC, bt] = gap - 1
    meta[M_BT] = bt + 1
    t = meta[M_T]
    i = 0
    j = off
    o = 0
    while i < t or j < st:
        if j >= st or (i < t and mv[i] <= sv[j]):
            mv2[o] = mv[i]
            mi2[0, o] = mi[I_W, i]
            mi2[1, o] = mi[I_B, i]
            i += 1
        else:
            mv2[o] = sv[j]
            mi2[0, o] = si[0, j] - (si[0, j - 1] if j > off else 0)
            mi2[1, o] = bt
            j += 1
        o += 1
    cw = tot = rs = 0  # the copy back computes the rank bounds and the coarse index (one pass: _ranks)
    for q in range(o):
        v = mv2[q]
        if q > 0 and v != mv[q - 1]:
            for k in range(rs, q):
                mi[I_EL, k] = tot
            cw = tot
            rs = q
        mv[q] = v
        mi[I_W, q] = mi2[0, q]
        mi[I_B, q] = mi2[1, q]
        mi[I_LL, q] = cw
        tot += mi2[0, q]
        if q % G == 0:
            mv2[q // G] = v  # q // G <= q: mv2's merged values up to q are read already
    for k in range(rs, o):
        mi[I_EL, k] = tot
    meta[M_T] = o
    meta[M_VER] += 1
    meta[M_MTOT] += c
    meta[M_UTOT] += gap - 1
    meta[M_OC] = 0
    meta[M_OLO] = -1


@numba.njit(**_NJ)
def _remove_block(meta, blk, mv, mi, cv, b):
    t = meta[M_T]
    o = 0
    cw = tot = rs = 0  # rank bounds and coarse index in the compaction pass (as _ranks)
    for i in range(t):
        if mi[I_B, i] != b:
            v = mv[i]
            if o > 0 and v != mv[o - 1]:
                for k in range(rs, o):
                    mi[I_EL, k] = tot
                cw = tot
                rs = o
            mv[o] = v
            w = mi[I_W, i]
            mi[I_W, o] = w
            mi[I_B, o] = mi[I_B, i]
            mi[I_LL, o] = cw
            tot += w
            if o % G == 0:
                cv[o // G] = v
            o += 1
    for k in range(rs, o):
        mi[I_EL, k] = tot
    meta[M_T] = o
    meta[M_VER] += 1
    meta[M_MTOT] -= blk[B_CNT, b]
    meta[M_UTOT] -= blk[B_UNC, b]


@numba.njit(**_NJ)
def _drop_before(meta, ob, obs, row, cnt, l0):
    """Drop the elements with seq < l0 from row ``row`` of ob/obs; returns (count, min seq)."""
    o = 0
    lo = np.int64(9223372036854775807)
    for i in range(meta[cnt]):
        if obs[row, i] >= l0:
            ob[row, o] = ob[row, i]
            obs[row, o] = obs[row, i]
            lo = min(lo, obs[row, i])
            o += 1
    meta[cnt] = o
    return lo


@numba.njit(**_NJ)
def expire(meta, ob, obs, blk, sv, si, mv, mi, cv, l0):
    """Move the window's left end to l0 (module doc)."""
    if meta[M_OC] > 0 and meta[M_OLO] < l0:
        lo = _drop_before(meta, ob, obs, 0, M_OC, l0)
        meta[M_OLO] = lo if meta[M_OC] else -1
    pc = meta[M_PC]
    if pc > 0:  # the front: read up to its first element before l0, compact from there
        i = 0
        while i < pc and obs[1, i] >= l0:
            i += 1
        o = i
        for k in range(i + 1, pc):
            if obs[1, k] >= l0:
                ob[1, o] = ob[1, k]
                obs[1, o] = obs[1, k]
                o += 1
        meta[M_PC] = o
    bh, bt = meta[M_BH], meta[M_BT]
    while bh < bt and blk[B_HI, bh] < l0:
        if bh >= meta[M_MH]:
            _remove_block(meta, blk, mv, mi, cv, bh)
            meta[M_MH] = bh + 1
        bh += 1
    meta[M_BH] = bh
    meta[M_SH] = blk[B_OFF, bh] if bh < bt else meta[M_ST]
    if meta[M_FX] >= 0 and meta[M_FX] < bh:
        meta[M_FX] = -1
        meta[M_PC] = 0
    if bh < bt and bh >= meta[M_MH] and blk[B_LO, bh] < l0:
        _remove_block(meta, blk, mv, mi, cv, bh)
        meta[M_MH] = bh + 1
        if blk[B_UNC, bh] == 0:  # exact: its in-window elements become the front
            o = 0
            off = blk[B_OFF, bh]
            for i in range(off, off + blk[B_LEN, bh]):
                if si[1, i] >= l0:
                    ob[1, o] = sv[i]
                    obs[1, o] = si[1, i]
                    o += 1
            meta[M_PC] = o
            meta[M_FX] = bh
    if meta[M_MH] < bh:
        meta[M_MH] = bh
    meta[M_L0] = l0


@numba.njit(**_NI)
def _blk_less(blk, sv, si, b, v, strict):
    off = blk[B_OFF, b]
    end = off + blk[B_LEN, b]
    k = _left(sv, off, end, v) if strict else _right(sv, off, end, v)
    return si[0, k - 1] if k > off else 0


@numba.njit(**_NI)
def _mleft(mv, cv, t, v):
    """First index of the merged array with mv[i] >= v, through the coarse index."""
    k = _left(cv, 0, (t + G - 1) // G, v)  # mv[(k-1)*G] < v <= mv[k*G]
    return _left(mv, max(0, (k - 1) * G + 1), min(t, k * G + 1), v)


@numba.njit(**_NI)
def _counts(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, v, idx):
    """(lower bound of #values < v, lower bound of #values <= v) over the in-window merged blocks
    (merged blocks before ``je`` excluded), the open block and the front if inside (idx: v's
    index in the merged array, or -1)."""
    t = meta[M_T]
    mh, bt = meta[M_MH], meta[M_BT]
    if je - mh > bt - je:  # (a query registered inside the window) fewer blocks after je: sum them
        cl = 0
        ce = 0
        for j in range(je, bt):
            cl += _blk_less(blk, sv, si, j, v, True)
            ce += _blk_less(blk, sv, si, j, v, False)
    else:
        a = idx if idx >= 0 else _mleft(mv, cv, t, v)
        if a < t:
            cl = mi[I_LL, a]
            ce = mi[I_EL, a] if mv[a] == v else cl
        else:
            cl = ce = meta[M_MTOT]
        for j in range(mh, je):
            cl -= _blk_less(blk, sv, si, j, v, True)
            ce -= _blk_less(blk, sv, si, j, v, False)
    for row in range(2):
        if open_in if row == 0 else front_in:
            hi = meta[M_OC] if row == 0 else meta[M_PC]
            k = _left_row(ob, row, hi, v)
            cl += k
            e = k
            while e < hi and ob[row, e] == v:
                e += 1
            if e - k > 8:
                e = _eq_end(ob[row], k, hi, v)
            ce += e
    return cl, ce


@numba.njit(**_NI)
def _left_row(ob, row, hi, v):
    """_left(ob[row], 0, hi, v) without a view of the row (no reference count operations on a
    hot path)."""
    n = hi
    if n <= 0:
        return 0
    base = 0
    while n > 1:
        half = n >> 1
        base = base + half if ob[row, base + half] < v else base
        n -= half
    return base + 1 if ob[row, base] < v else base


@numba.njit(**_NI)
def window(meta, blk, lq):
    """(je, open_in, front_in, xmin, xmax, Nmin, unc) of the window [lq, n]."""
    mh, bt, bh = meta[M_MH], meta[M_BT], meta[M_BH]
    lo, hi = mh, bt
    if lo < hi and blk[B_LO, lo] >= lq:  # every merged block inside (a query started before the window)
        hi = lo
    while lo < hi:
        m = (lo + hi) >> 1
        if blk[B_LO, m] < lq:
            lo = m + 1
        else:
            hi = m
    je = lo
    cnt = meta[M_MTOT]
    unc = meta[M_UTOT]
    for j in range(mh, je):
        cnt -= blk[B_CNT, j]
        unc -= blk[B_UNC, j]
    xmin = 0
    xmax = 0
    p = je - 1 if je > mh else (mh - 1 if mh - 1 >= bh else -1)
    if p >= 0 and p < bt and p != meta[M_FX] and blk[B_LO, p] < lq <= blk[B_HI, p]:
        c = blk[B_CNT, p]
        xmax = min(c, blk[B_HI, p] - lq + 1)
        xmin = max(0, c - (lq - blk[B_LO, p]))
    front_in = meta[M_PC] > 0 and lq <= meta[M_L0]
    if front_in:
        cnt += meta[M_PC]
    oc = meta[M_OC]
    open_in = oc > 0 and meta[M_OLO] >= lq
    if open_in:
        cnt += oc
    elif oc > 0 and meta[M_OHI] >= lq:
        xmax += min(oc, meta[M_OHI] - lq + 1)
        xmin += max(0, oc - (lq - meta[M_OLO]))
    return je, open_in, front_in, xmin, xmax, cnt + xmin, unc


@numba.njit(**_NI)
def _target(phi, n):
    return max(1.0, math.ceil(phi * n - 1e-9))


@numba.njit(**_NI)
def _dist(cl, ce, unc, xmax, tmin, tmax):
    return max(0.0, cl + unc + xmax + 1 - tmin, tmax - ce)


@numba.njit(**_NJ)
def _bisect(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax, tmin, tmax, arr, lo, hi, merged):
    """First index of arr[lo:hi] where the rising side of the distance reaches the falling side
    (hi if none; the caller knows it is reached at hi)."""
    while lo < hi:
        m = (lo + hi) >> 1
        cl, ce = _counts(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, arr[m], m if merged else -1)
        if cl + unc + xmax + 1 - tmin >= tmax - ce:
            hi = m
        else:
            lo = m + 1
    return lo


@numba.njit(**_NI)
def _first_sum(mi, t, thr):
    """First index i < t with LL[i] + EL[i] >= thr (t if none)."""
    lo, hi = 0, t
    while lo < hi:
        m = (lo + hi) >> 1
        if mi[I_LL, m] + mi[I_EL, m] >= thr:
            hi = m
        else:
            lo = m + 1
    return lo


@numba.njit(**_NJ)
def best(meta, ob, obs, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax, tmin, tmax):
    """(value, distance, a seq at or before its element's) of the best candidate; NaN if none."""
    t = meta[M_T]
    bv = np.nan
    bd = np.inf
    bl = 0
    lo, hi = 0, t
    if je == meta[M_MH]:  # merged counts LL/EL, the open block and front add 0..2*o to cl + ce
        o = (meta[M_OC] if open_in else 0) + (meta[M_PC] if front_in else 0)
        k = tmin + tmax - unc - xmax - 1.0
        lo = _first_sum(mi, t, k - 2.0 * o)
        hi = _first_sum(mi, t, k)
    lo = _bisect(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax, tmin, tmax, mv, lo, hi, True)
    mlo = lo
    for direction in (-1, 1):
        i = lo - 1 if direction < 0 else lo
        while 0 <= i < t and mi[I_B, i] < je:
            i += direction
        if 0 <= i < t:
            cl, ce = _counts(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, mv[i], i)
            d = _dist(cl, ce, unc, xmax, tmin, tmax)
            if d < bd:
                bv, bd, bl = mv[i], d, blk[B_LO, mi[I_B, i]]
    for row in range(2):
        cnt = meta[M_OC] if row == 0 else meta[M_PC]
        if cnt == 0 or not (open_in if row == 0 else front_in):
            continue
        # the distance is reached between the merged values mlo - 1 and mlo: only the values
        # between them are probed
        a = _right(ob[row], 0, cnt, mv[mlo - 1]) if mlo > 0 else 0
        b = _left(ob[row], a, cnt, mv[mlo]) if mlo < t else cnt
        lo = _bisect(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax, tmin, tmax, ob[row], a, b,
                     False)
        for i in (lo - 1, lo):
            if 0 <= i < cnt:
                cl, ce = _counts(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, ob[row, i], -1)
                d = _dist(cl, ce, unc, xmax, tmin, tmax)
                if d < bd:
                    bv, bd, bl = ob[row, i], d, obs[row, i]
    return bv, bd, bl


@numba.njit(**_NJ)
def lookup(meta, ob, obs, blk, sv, si, mv, mi, cv, phi, start, n, out):
    w = meta[M_W]
    for k in range(len(phi)):
        lq = max(start[k] + 1, n - w + 1)
        je, open_in, front_in, xmin, xmax, nmin, unc = window(meta, blk, lq)
        nmax = nmin - xmin + xmax
        if nmax == 0:
            out[k] = np.nan
            continue
        out[k] = best(meta, ob, obs, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax, _target(phi[k], nmin),
                      _target(phi[k], nmax))[0]


@numba.njit(**_NJ)
def heap_push(heap, qi, hs, s):
    return _heap_push_i(heap, qi, hs, s)


@numba.njit(**_NI)
def _heap_push_i(heap, qi, hs, s):
    i = hs
    heap[i] = s
    while i > 0:
        p = (i - 1) >> 1
        if qi[Q_DEAD, heap[p]] <= qi[Q_DEAD, heap[i]]:
            break
        heap[p], heap[i] = heap[i], heap[p]
        i = p
    return hs + 1


@numba.njit(**_NI)
def _heap_pop(heap, qi, hs):
    top = heap[0]
    hs -= 1
    heap[0] = heap[hs]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= hs:
            break
        b = a + 1
        c = b if b < hs and qi[Q_DEAD, heap[b]] < qi[Q_DEAD, heap[a]] else a
        if qi[Q_DEAD, heap[i]] <= qi[Q_DEAD, heap[c]]:
            break
        heap[c], heap[i] = heap[i], heap[c]
        i = c
    return top, hs
