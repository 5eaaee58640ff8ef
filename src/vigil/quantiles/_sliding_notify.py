"""Notify evaluations and the push loop of the sliding-window quantile summary (:mod:`.sliding`;
the summary's kernels and the deadline bound: :mod:`._sliding_kernels`).

A notify query holds a value with a deadline, the last position it is sure to stay valid; an
evaluation at position n checks the held value (kept while it stays valid for at least a quarter
of the longest lifetime e*N/(1+e), or half of the best candidate's) or takes the best candidate,
and sets the next deadline (:func:`_check`, :func:`_search`).

Two schedules share that rule:

- *Young* queries, whose window starts after the summary's left end (registered inside the
  window): each on a binary heap of deadlines, evaluated alone when due (:func:`_evaluate`: its
  window, the counts of its held value by bisection).
- *Mature* queries, whose window is the summary's whole window [n - W + 1, n] (their start is
  before it, or before the first position pushed: the same counts): they share one window, so
  they are evaluated together in one *sweep* (:func:`sweep`) when the first of them is due. The
  sweep walks the mature queries in the order of their held values, so the counts of every held
  value come from cursors moving forward over the merged array, the open block and the front
  (galloping: O(q log(T/q)) for q values over T merged entries) instead of a bisection each, and
  it re-evaluates every mature query due within ``HORIZON`` positions (their deadlines then
  fall together: the next sweep serves many). The window is computed once per sweep. A query
  moves from the heap to the sweep the first time it is evaluated after the window passes its
  start (and never back). Every query is evaluated at or before its deadline, each with the
  same rule as alone, so the contract's bound holds at every position as before.

With exact blocks (meta M_XACT) the mature queries also keep their held value's exact counts
(qi Q_HINT: values below, Q_VER: at or below; -1: not kept, Q_HINT/Q_VER being a young query's
merged-array hint until then): :func:`push_x` keeps the elements pushed in a ring (values and
seqs, from the window's left end at the last sweep on), and each sweep moves every kept count by
the values that entered and left the window since the last one (:func:`_deltas`), so a check
costs a few comparisons. :func:`push` (the per-key kernel's) has no ring and clears M_XACT.

Positions without element (NaN) move the window and run the due evaluations as any position.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._sliding_kernels import (
    _NI,
    _NJ,
    B_HI,
    B_LO,
    B_OFF,
    F_E,
    F_LAST,
    F_PHI,
    I_EL,
    I_LL,
    M_B,
    M_BH,
    M_BT,
    M_EVALS,
    M_FIRST,
    M_FX,
    M_GDEAD,
    M_HS,
    M_L0,
    M_MH,
    M_MTOT,
    M_N,
    M_NMAT,
    M_NOUT,
    M_NPUSHED,
    M_OC,
    M_OHI,
    M_OLO,
    M_PC,
    M_RA,
    M_RE,
    M_RP,
    M_RT,
    M_SEARCHES,
    M_SH,
    M_ST,
    M_SWEEPS,
    M_T,
    M_VER,
    M_W,
    M_XACT,
    Q_DEAD,
    Q_HINT,
    Q_ON,
    Q_START,
    Q_VER,
    Q_VEXP,
    _counts,
    _dist,
    _heap_pop,
    _heap_push_i,
    _left,
    _mleft,
    _right,
    _target,
    best,
    close_open,
    expire,
    window,
)

BIG = np.int64(9223372036854775807)
HORIZON = 32  # a sweep re-evaluates the mature queries due before n + HORIZON (module doc)
KEEP = 4.0  # a held value is kept while it stays valid for at least 1/KEEP of the longest lifetime


@numba.njit(**_NI)
def _check(e, phi, vexp, n, nmin, nmax, unc, xmax, held, cl, ce):
    """The held-value check of an evaluation at position n (window counts nmin..nmax, the held
    value's counts (cl, ce) if ``held``): (keep, deadline if kept or -1, tmin, tmax, top). Scalars
    only: arrays passed to an inlined helper cost reference counts per call on a hot loop."""
    tmin = _target(phi, nmin)
    tmax = _target(phi, nmax)
    top = e * nmin  # deadlines without the contract's +1 slack (tiny windows: exact answers preferred)
    dh = np.int64(-1)  # deadlines in integers: seqs reach 2^63 - 1, beyond float64's exact range
    if held:
        d0 = _dist(cl, ce, unc, xmax, tmin, tmax)
        if d0 <= top:
            dh = min(np.int64(math.floor((top - d0) / (1.0 + e))), vexp - n)
            if KEEP * dh >= math.floor(e * nmin / (1.0 + e)):
                return True, dh, tmin, tmax, top
    return False, dh, tmin, tmax, top


@numba.njit(**_NJ)
def _search(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, s, n, je, open_in, front_in, xmax, unc, tmin, tmax, top, e,
            dh, last):
    """An evaluation's search for the best candidate when the held value is not kept (:func:`_check`):
    sets slot s's deadline, returns (changed, value)."""
    w = meta[M_W]
    meta[M_SEARCHES] += 1
    if je == meta[M_BT] and open_in and not front_in and unc == 0 and xmax == 0 and tmin == tmax:
        # the window is the open block, exact (the first B positions, or a young query's until the
        # next block closes): its element at the target rank
        j = min(np.int64(tmin), meta[M_OC]) - 1
        bv, bd, bl = ob[0, j], 0.0, obs[0, j]
    else:
        bv, bd, bl = best(meta, ob, obs, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax, tmin, tmax)
    if bv != bv:
        qi[Q_DEAD, s] = n
        return last == last, np.nan
    db = max(np.int64(0), min(np.int64(max(-1.0, math.floor((top - bd) / (1.0 + e)))), (bl - n) + (w - 1)))
    if dh >= 0 and 2.0 * dh >= db:
        qi[Q_DEAD, s] = n + dh
        return False, last
    qi[Q_DEAD, s] = n + db
    qi[Q_VEXP, s] = bl + min(w - 1, BIG - bl)
    qi[Q_VER, s] = -1
    return bv != last, bv


@numba.njit(**_NI)
def _evaluate(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, s, n):
    """Re-evaluate notify slot s at position n alone (a young query)."""
    meta[M_EVALS] += 1
    lq = max(qi[Q_START, s] + 1, n - meta[M_W] + 1)
    je, open_in, front_in, xmin, xmax, nmin, unc = window(meta, blk, lq)
    nmax = nmin - xmin + xmax
    last = qf[F_LAST, s]
    held = last == last and n <= qi[Q_VEXP, s] and nmax > 0
    cl = ce = 0
    if held:
        if qi[Q_VER, s] != meta[M_VER]:  # the merged array changed since: search again
            qi[Q_HINT, s] = _mleft(mv, cv, meta[M_T], last)
            qi[Q_VER, s] = meta[M_VER]
        cl, ce = _counts(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, last, qi[Q_HINT, s])
    return _finish(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, s, n, je, open_in, front_in, xmax, nmin, nmax, unc,
                   held, cl, ce)


@numba.njit(**_NI)
def _finish(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, s, n, je, open_in, front_in, xmax, nmin, nmax, unc,
            held, cl, ce):
    """Evaluate notify slot s at position n in its window (``window``'s results; ``held``: its held
    value's element is in the window and (cl, ce) are its counts): sets its deadline; returns
    (changed, value)."""
    last = qf[F_LAST, s]
    if nmax == 0:
        qi[Q_DEAD, s] = n
        return last == last, np.nan
    e = qf[F_E, s]
    keep, dh, tmin, tmax, top = _check(e, qf[F_PHI, s], qi[Q_VEXP, s], n, nmin, nmax, unc, xmax, held, cl, ce)
    if keep:
        qi[Q_DEAD, s] = n + dh
        return False, last
    return _search(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, s, n, je, open_in, front_in, xmax, unc, tmin, tmax,
                   top, e, dh, last)


@numba.njit(**_NI)
def _gallop(a, p, hi, v, strict):
    """First index i >= p of a[p:hi] with a[i] >= v (strict) or a[i] > v, for a cursor p that
    only moves forward (a[p - 1] below v): exponential then binary search, O(log(distance))."""
    if p >= hi or (a[p] >= v if strict else a[p] > v):
        return p
    step = 1
    q = p  # a[q] below v
    while q + step < hi and (a[q + step] < v if strict else a[q + step] <= v):
        q += step
        step *= 2
    end = min(q + step, hi)
    return _left(a, q + 1, end, v) if strict else _right(a, q + 1, end, v)


@numba.njit(**_NJ)
def _sort_mature(qf, mat, m):
    """Insertion sort of mat[:m] by held value (NaN last): nearly sorted between sweeps."""
    for k in range(1, m):
        s = mat[k]
        v = qf[F_LAST, s]
        if v != v:
            continue
        j = k
        while j > 0:
            u = qf[F_LAST, mat[j - 1]]
            if u == u and u <= v:
                break
            mat[j] = mat[j - 1]
            j -= 1
        mat[j] = s


@numba.njit(**_NI)
def _is_mature(meta, qi, s, n):
    return qi[Q_START, s] + 1 <= max(n - meta[M_W] + 1, meta[M_FIRST])


@numba.njit(**_NJ)
def _deltas(meta, hv, hq):
    """The values that entered and left the window since the last sweep (sorted), from the ring of
    the elements pushed (:func:`push_x`); the ring's last-sweep marks move to now."""
    mask = len(hv) - 1
    rt, re, rp, ra = meta[M_RT], meta[M_RE], meta[M_RP], meta[M_RA]
    a0 = max(ra, re)
    arr = np.empty(max(np.int64(0), rt - a0))
    for j in range(a0, rt):
        arr[j - a0] = hv[j & mask]
    x1 = min(re, ra)
    exp = np.empty(max(np.int64(0), x1 - rp))
    for j in range(rp, x1):
        exp[j - rp] = hv[j & mask]
    meta[M_RP] = re
    meta[M_RA] = rt
    return np.sort(arr), np.sort(exp)


@numba.njit(**_NJ)
def sweep(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, mat, n, i, oslot, ooff, oval, hv, hq, xact):
    """Re-evaluate the mature queries due before n + HORIZON at position n (module doc); drops
    terminated ones; writes the changes as outputs at batch offset i. With ``xact`` (exact blocks,
    the ring of :func:`push_x`) every mature query keeps its held value's exact counts
    (Q_HINT: values below, Q_VER: values at or below; Q_VER -1: not kept), brought forward here by
    the window's arrivals and expiries since the last sweep instead of searched again."""
    meta[M_SWEEPS] += 1
    m = meta[M_NMAT]
    _sort_mature(qf, mat, m)
    lq = n - meta[M_W] + 1
    je, open_in, front_in, xmin, xmax, nmin, unc = window(meta, blk, lq)
    nmax = nmin - xmin + xmax
    cursors = je == meta[M_MH]  # the window holds every merged block (always, past the first W positions)
    exact = xact and cursors and unc == 0 and xmax == 0
    if xact:
        arr, exp = _deltas(meta, hv, hq)
    else:
        arr = exp = np.empty(0)
    na = len(arr)
    nx = len(exp)
    pal = pae = pxl = pxe = 0
    t = meta[M_T]
    oc = meta[M_OC] if open_in else 0
    pc = meta[M_PC] if front_in else 0
    r0 = ob[0]
    r1 = ob[1]
    a = ol = oe = fl = fe = 0
    gd = BIG
    hz = n + min(HORIZON, BIG - n)
    o = 0
    for k in range(m):
        s = mat[k]
        if qi[Q_ON, s] == 0:
            continue
        mat[o] = s
        o += 1
        last = qf[F_LAST, s]
        kept = exact and qi[Q_VER, s] >= 0 and last == last
        if kept:  # the held values ascend along mat: cursors over the sorted arrivals and expiries
            while pal < na and arr[pal] < last:
                pal += 1
            pae = max(pae, pal)
            while pae < na and arr[pae] <= last:
                pae += 1
            while pxl < nx and exp[pxl] < last:
                pxl += 1
            pxe = max(pxe, pxl)
            while pxe < nx and exp[pxe] <= last:
                pxe += 1
            qi[Q_HINT, s] += pal - pxl
            qi[Q_VER, s] += pae - pxe
        elif not exact:
            qi[Q_VER, s] = -1
        if qi[Q_DEAD, s] >= hz:
            gd = min(gd, qi[Q_DEAD, s])
            continue
        meta[M_EVALS] += 1
        held = last == last and n <= qi[Q_VEXP, s] and nmax > 0
        cl = ce = 0
        if held:
            if kept:
                cl = qi[Q_HINT, s]
                ce = qi[Q_VER, s]
            elif cursors:  # the held values ascend along mat: cursors (module doc)
                a = _gallop(mv, a, t, last, True)
                if a < t:
                    cl = mi[I_LL, a]
                    ce = mi[I_EL, a] if mv[a] == last else cl
                else:
                    cl = ce = meta[M_MTOT]
                if oc:
                    ol = _gallop(r0, ol, oc, last, True)
                    oe = _gallop(r0, max(oe, ol), oc, last, False)
                    cl += ol
                    ce += oe
                if pc:
                    fl = _gallop(r1, fl, pc, last, True)
                    fe = _gallop(r1, max(fe, fl), pc, last, False)
                    cl += fl
                    ce += fe
            else:
                cl, ce = _counts(meta, ob, blk, sv, si, mv, mi, cv, je, open_in, front_in, last, -1)
            if exact and not kept:
                qi[Q_HINT, s] = cl
                qi[Q_VER, s] = ce
        if nmax == 0:
            qi[Q_DEAD, s] = n
            changed, val = last == last, np.nan
        else:
            keep, dh, tmin, tmax, top = _check(qf[F_E, s], qf[F_PHI, s], qi[Q_VEXP, s], n, nmin, nmax, unc, xmax, held,
                                               cl, ce)
            if keep:
                qi[Q_DEAD, s] = n + dh
                changed, val = False, last
            else:
                changed, val = _search(meta, ob, obs, blk, sv, si, mv, mi, cv, qf, qi, s, n, je, open_in, front_in,
                                       xmax, unc, tmin, tmax, top, qf[F_E, s], dh, last)
        if changed:
            q = meta[M_NOUT]
            oslot[q], ooff[q], oval[q] = s, i, val
            meta[M_NOUT] = q + 1
            qf[F_LAST, s] = val
            qi[Q_VER, s] = -1
        gd = min(gd, qi[Q_DEAD, s])
    meta[M_NMAT] = o
    meta[M_GDEAD] = gd


@numba.njit(**_NI)
def _expires(meta, blk, l0):
    """Whether ``expire(..., l0)`` changes more than meta M_SH and M_L0 (an element, a block or
    the front leaves the window, or the block indices move): its conditions, without its call."""
    if meta[M_PC] > 0 or (meta[M_OC] > 0 and meta[M_OLO] < l0):
        return True
    bh = meta[M_BH]
    if meta[M_MH] < bh or (meta[M_FX] >= 0 and meta[M_FX] < bh):
        return True
    return bh < meta[M_BT] and (blk[B_HI, bh] < l0 or (bh >= meta[M_MH] and blk[B_LO, bh] < l0))


@numba.njit(**_NJ)
def push(x, seqs, p0, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat, nlive, oslot, ooff, oval):
    """:func:`push_x` without the ring of elements (the mature queries' counts are searched at
    each evaluation; the operator's kept counts are given up: M_XACT 0)."""
    meta[M_XACT] = 0
    ring = np.empty(1)
    return push_x(x, seqs, p0, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat, nlive, oslot,
                  ooff, oval, ring, np.zeros(1, np.int64))


@numba.njit(**_NJ)
def push_x(x, seqs, p0, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat, nlive, oslot, ooff, oval,
           hv, hq):
    """Insert x[p0:] (NaN: a position without element) and run the due notify evaluations (the
    mature queries' sweep, then the young ones' heap); stops early (returning the index reached)
    when the output buffers could overflow. With meta[M_XACT] (exact blocks), the elements are
    kept in the ring hv/hq (values, seqs; absolute indices masked by its power-of-two length) from
    the window's left end at the last sweep on (:func:`sweep`)."""
    w = meta[M_W]
    bsz = meta[M_B]
    xact = meta[M_XACT] == 1
    mask = len(hv) - 1
    for i in range(p0, len(x)):
        if meta[M_NOUT] + nlive + 1 > len(oslot):
            return i
        n = seqs[i]
        v = x[i]
        if v == v:
            if meta[M_OC] > 0 and n >= meta[M_OLO] + bsz:
                close_open(meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps)
            oc = meta[M_OC]
            if oc == 0:
                meta[M_OLO] = n
            k = _right(ob[0], 0, oc, v)
            for j in range(oc, k, -1):
                ob[0, j] = ob[0, j - 1]
                obs[0, j] = obs[0, j - 1]
            ob[0, k] = v
            obs[0, k] = n
            meta[M_OC] = oc + 1
            meta[M_OHI] = n
            if xact:
                rt = meta[M_RT]
                hv[rt & mask] = v
                hq[rt & mask] = n
                meta[M_RT] = rt + 1
        meta[M_N] = n
        meta[M_NPUSHED] += 1
        if _expires(meta, blk, n - w + 1):
            expire(meta, ob, obs, blk, sv, si, mv, mi, mv2, n - w + 1)
        else:  # what expire does when the window's left end passes nothing
            meta[M_SH] = blk[B_OFF, meta[M_BH]] if meta[M_BH] < meta[M_BT] else meta[M_ST]
            meta[M_L0] = n - w + 1
        if xact:
            re = meta[M_RE]
            rt = meta[M_RT]
            while re < rt and hq[re & mask] <= n - w:
                re += 1
            meta[M_RE] = re
            if meta[M_NMAT] == 0:  # no kept counts: the ring holds the window only
                meta[M_RP] = re
                meta[M_RA] = rt
        if meta[M_NMAT] > 0 and meta[M_GDEAD] < n:
            sweep(meta, ob, obs, blk, sv, si, mv, mi, mv2, qf, qi, mat, n, i, oslot, ooff, oval, hv, hq, xact)
        hs = meta[M_HS]
        while hs > 0 and qi[Q_DEAD, heap[0]] < n:
            s, hs = _heap_pop(heap, qi, hs)
            if qi[Q_ON, s] == 0:
                continue
            changed, val = _evaluate(meta, ob, obs, blk, sv, si, mv, mi, mv2, qf, qi, s, n)
            if changed:
                k = meta[M_NOUT]
                oslot[k], ooff[k], oval[k] = s, i, val
                meta[M_NOUT] = k + 1
                qf[F_LAST, s] = val
            if _is_mature(meta, qi, s, n):  # its window is the summary's from now on: the sweep's
                nm = meta[M_NMAT]
                if nm == 0:
                    meta[M_GDEAD] = BIG
                mat[nm] = s
                meta[M_NMAT] = nm + 1
                meta[M_GDEAD] = min(meta[M_GDEAD], qi[Q_DEAD, s])
                qi[Q_VER, s] = -1  # Q_HINT/Q_VER: the young query's merged index, kept counts from now on
            else:
                hs = _heap_push_i(heap, qi, hs, s)
        meta[M_HS] = hs
    return len(x)
