"""Numba kernels around the trigger kernels (:mod:`._trigger_kernels`, paper 004 §3.5): the order
of a push's per-query updates (:func:`order_updates`, a radix sort per offset, no global sort)
and best-tuple answers of single queries (:func:`lookup_many`, §3.2, Theorem 3)."""

from __future__ import annotations

import numba
import numpy as np

from ._gk_kernels import best_tuple


@numba.njit(cache=True, nogil=True)
def _argsort_keys(q):
    """Stable argsort of int64 keys: insertion sort when short, else LSD radix sort on 11-bit
    digits of q - min(q) (O(g) per digit; qids are small integers, so 1-3 digits)."""
    g = q.shape[0]
    idx = np.arange(g)
    if g <= 32:
        for i in range(1, g):
            t = idx[i]
            j = i - 1
            while j >= 0 and q[idx[j]] > q[t]:
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = t
        return idx
    base = q.min()
    span = q.max() - base
    tmp = np.empty(g, np.int64)
    cnt = np.empty(2049, np.int64)
    shift = 0
    while (span >> shift) > 0:
        cnt[:] = 0
        for i in range(g):
            cnt[(((q[idx[i]] - base) >> shift) & 2047) + 1] += 1
        for d in range(2048):
            cnt[d + 1] += cnt[d]
        for i in range(g):
            d = ((q[idx[i]] - base) >> shift) & 2047
            tmp[cnt[d]] = idx[i]
            cnt[d] += 1
        idx, tmp = tmp, idx
        shift += 11
    return idx


@numba.njit(cache=True, nogil=True)
def order_updates(rq, ro, rv, rp, k):
    """The kernel's updates (qid, offset, value, previous value), reported in offset order, as
    (qids, offsets, values) in (offset, qid) order: each offset's updates are radix-sorted by qid
    (registration order) on their own, so no global sort is needed. A query reported twice at one
    offset (never expected) keeps its last value, dropped if it equals its value before."""
    i = 0
    w = 0
    while i < k:
        off = ro[i]
        e = i
        srt = True
        while e + 1 < k and ro[e + 1] == off:
            if rq[e + 1] <= rq[e]:
                srt = False
            e += 1
        g = e + 1 - i
        if srt:
            if w != i:
                rq[w:w + g] = rq[i:i + g]
                ro[w:w + g] = ro[i:i + g]
                rv[w:w + g] = rv[i:i + g]
            w += g
        else:
            idx = _argsort_keys(rq[i:i + g])
            tq = rq[i:i + g].copy()
            tv = rv[i:i + g].copy()
            tp = rp[i:i + g].copy()
            t = 0
            while t < g:
                f = t
                while f + 1 < g and tq[idx[f + 1]] == tq[idx[t]]:
                    f += 1
                if tv[idx[f]] != tp[idx[t]]:  # a value is never NaN; a previous value may be
                    rq[w] = tq[idx[t]]
                    ro[w] = off
                    rv[w] = tv[idx[f]]
                    w += 1
                t = f + 1
        i = e + 1
    return rq[:w].copy(), ro[:w].copy(), rv[:w].copy()


@numba.njit(cache=True, nogil=True)
def lookup_many(v, lo, hi, m, n, eps, phi, eps_q, out):
    """Best-tuple answers of single queries (phi, eps_q) on the summary; NaN when empty."""
    for i in range(phi.shape[0]):
        if m == 0:
            out[i] = np.nan
            continue
        half = max(eps_q[i] - eps, 0.0)
        a = max(phi[i] - half, 0.0)
        b = min(phi[i] + half, 1.0)
        out[i] = v[best_tuple(lo, hi, m, a, b, eps, n, m // 2)]


@numba.njit(cache=True, nogil=True)
def take_moves(s, q, c, slot_qid, qclu, cnum):
    """Cluster mode's membership changes (:meth:`.epoch.Epoch._take_moves`) in one pass when the
    slots ``s`` are strictly increasing (each once): keeps the entries whose slot still holds query
    q and whose cluster changed (updating ``qclu``); returns (qids, cluster numbers, qids sorted?,
    done), done False (nothing changed) when the slots are not increasing."""
    g = s.shape[0]
    for i in range(1, g):
        if s[i] <= s[i - 1]:
            return np.empty(0, np.int64), np.empty(0, np.int64), False, False
    oq = np.empty(g, np.int64)
    oc = np.empty(g, np.int64)
    k = 0
    srt = True
    for i in range(g):
        t = s[i]
        if slot_qid[t] != q[i] or qclu[t] == c[i]:
            continue
        qclu[t] = c[i]
        if k > 0 and q[i] < oq[k - 1]:
            srt = False
        oq[k] = q[i]
        oc[k] = cnum[c[i]]
        k += 1
    return oq[:k], oc[:k], srt, True
