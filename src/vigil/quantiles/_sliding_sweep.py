"""Lookups of many queries at one position (:mod:`.sliding`): :func:`lookup_sorted` answers the
queries of one window, ordered by phi, with one forward walk over each candidate array instead of
a bisection per query (:func:`._sliding_kernels.best` gives the same answers one at a time)."""

from __future__ import annotations

import numba
import numpy as np

from ._sliding_kernels import (
    _NI,
    _NJ,
    I_EL,
    I_LL,
    M_MH,
    M_MTOT,
    M_OC,
    M_PC,
    M_T,
    _dist,
    _target,
    best,
    window,
)


@numba.njit(**_NI)
def _adv(a, p, hi, v, strict):
    """Advance p over a[p:hi] while a[p] < v (strict) or <= v (a cursor for nondecreasing v)."""
    if strict:
        while p < hi and a[p] < v:
            p += 1
    else:
        while p < hi and a[p] <= v:
            p += 1
    return p


@numba.njit(**_NJ)
def _sweep(meta, ob, obs, mv, mi, src, open_in, front_in, unc, xmax, tmin, tmax, order, k0, k1, bv, bd):
    """:func:`best`'s bisection over one candidate array (src 0: merged, 1: open block, 2: front)
    for the queries order[k0:k1] (phi ascending, one window whose merged blocks are all inside
    it): the first index where the rising side of the distance reaches the falling side is
    nondecreasing in phi, so one forward walk finds it for every query, with the counts of the
    other arrays kept by cursors (:func:`_adv`) instead of a bisection per probe. Updates
    bv/bd (per query) where a neighbour of that index is strictly nearer, as best does."""
    t = meta[M_T]
    if src == 0:
        arr = mv
        cnt = t
    else:
        arr = ob[src - 1]
        cnt = meta[M_OC] if src == 1 else meta[M_PC]
    oc = meta[M_OC] if open_in else 0
    pc = meta[M_PC] if front_in else 0
    mtot = meta[M_MTOT]
    am = 0
    ol = oe = fl = fe = 0
    i = -1
    pcl = pce = 0  # counts at index i - 1
    ccl = cce = 0  # counts at index i
    for kk in range(k0, k1):
        k = order[kk]
        a = tmin[k]
        b = tmax[k]
        while i < cnt:
            if i >= 0 and ccl + unc + xmax + 1 - a >= b - cce:
                break
            if i + 1 >= cnt:
                i = cnt
                break
            i += 1
            v = arr[i]
            pcl, pce = ccl, cce
            if src == 0:
                cl = mi[I_LL, i]
                ce = mi[I_EL, i]
            else:
                am = _adv(mv, am, t, v, True)
                if am < t:
                    cl = mi[I_LL, am]
                    ce = mi[I_EL, am] if mv[am] == v else cl
                else:
                    cl = ce = mtot
            if oc:
                ol = _adv(ob[0], ol, oc, v, True)
                oe = _adv(ob[0], max(oe, ol), oc, v, False)
                cl += ol
                ce += oe
            if pc:
                fl = _adv(ob[1], fl, pc, v, True)
                fe = _adv(ob[1], max(fe, fl), pc, v, False)
                cl += fl
                ce += fe
            ccl, cce = cl, ce
        if i == cnt:  # no index satisfies: lo = cnt, only lo - 1 is a candidate
            if cnt > 0:
                d = _dist(ccl, cce, unc, xmax, a, b)
                if d < bd[k]:
                    bv[k], bd[k] = arr[cnt - 1], d
            continue
        if i > 0:
            d = _dist(pcl, pce, unc, xmax, a, b)
            if d < bd[k]:
                bv[k], bd[k] = arr[i - 1], d
        d = _dist(ccl, cce, unc, xmax, a, b)
        if d < bd[k]:
            bv[k], bd[k] = arr[i], d


@numba.njit(**_NJ)
def lookup_sorted(meta, ob, obs, blk, sv, si, mv, mi, cv, phi, lqs, order, n, out):
    """:func:`lookup` for queries ordered by (window left end lq, phi): a window whose merged
    blocks are all inside it is answered for all its queries by :func:`_sweep` (O(T + q) for q
    queries instead of O(q log T) cache-missing bisections); others as :func:`lookup`."""
    q = len(order)
    tmin = np.empty(q)
    tmax = np.empty(q)
    bd = np.full(q, np.inf)
    k0 = 0
    while k0 < q:
        lq = lqs[order[k0]]
        k1 = k0 + 1
        while k1 < q and lqs[order[k1]] == lq:
            k1 += 1
        je, open_in, front_in, xmin, xmax, nmin, unc = window(meta, blk, lq)
        nmax = nmin - xmin + xmax
        if nmax == 0:
            for kk in range(k0, k1):
                out[order[kk]] = np.nan
        elif je > meta[M_MH]:  # blocks before the query's start are subtracted: one by one
            for kk in range(k0, k1):
                k = order[kk]
                out[k] = best(meta, ob, obs, blk, sv, si, mv, mi, cv, je, open_in, front_in, unc, xmax,
                              _target(phi[k], nmin), _target(phi[k], nmax))[0]
        else:
            for kk in range(k0, k1):
                k = order[kk]
                tmin[k] = _target(phi[k], nmin)
                tmax[k] = _target(phi[k], nmax)
                out[k] = np.nan
            _sweep(meta, ob, obs, mv, mi, 0, open_in, front_in, unc, xmax, tmin, tmax, order, k0, k1, out, bd)
            if open_in and meta[M_OC] > 0:
                _sweep(meta, ob, obs, mv, mi, 1, open_in, front_in, unc, xmax, tmin, tmax, order, k0, k1, out, bd)
            if front_in and meta[M_PC] > 0:
                _sweep(meta, ob, obs, mv, mi, 2, open_in, front_in, unc, xmax, tmin, tmax, order, k0, k1, out, bd)
        k0 = k1
