"""Numba kernels of the batch sweep (``vigil.threshold.sweep``) for re-arming queries: every
maturity of a re-arming candidate inside a sub-batch. 1D: :func:`rearm_1d`, O(log B) per maturity
over the full time halving of ``_sweep_kernels.locate_1d``; 2D: :func:`rearm_walk`, the elements
inside the rectangle in time order."""

from __future__ import annotations

import numba as nb
import numpy as np

from ._sweep_kernels import LEAF


@nb.njit(cache=True, nogil=True)
def rearm_walk(order, yrank, w, rem, rep, cand, ca, cb, cya, cyb, k, use_y):
    """Every maturity inside the batch of the k re-arming candidates (``rep[q] >= 1``): the
    elements inside the candidate's range (x-positions ``[ca, cb)`` of ``order``, and with
    ``use_y`` y-ranks in ``[cya, cyb)``) are taken in time order and walked: a maturity where the
    weight reaches the remaining threshold, then weight 0 and threshold ``rep[q]`` from the next
    element on. O(E log E) for a candidate with E elements in its range. Returns (slots, offsets)
    of every maturity, by candidate; the candidates' rem are left at their end-of-batch value."""
    out_p = np.empty(max(16, k), np.int64)
    out_o = np.empty(max(16, k), np.int64)
    n = 0
    buf = np.empty(16, np.int64)
    for c in range(k):
        q = cand[c]
        m = 0
        e = cb[c] - ca[c]
        if buf.shape[0] < e:
            buf = np.empty(e, np.int64)
        for i in range(ca[c], cb[c]):
            el = order[i]
            if use_y and (yrank[el] < cya[c] or yrank[el] >= cyb[c]):
                continue
            buf[m] = el
            m += 1
        ts = np.sort(buf[:m])
        r = rem[q]
        acc = np.int64(0)
        for i in range(m):
            acc += w[ts[i]]
            if acc >= r:
                if n >= out_p.shape[0]:
                    p2 = np.empty(2 * n, np.int64)
                    o2 = np.empty(2 * n, np.int64)
                    p2[:n] = out_p[:n]
                    o2[:n] = out_o[:n]
                    out_p, out_o = p2, o2
                out_p[n] = q
                out_o[n] = ts[i]
                n += 1
                r = rep[q]
                acc = 0
        rem[q] = r - acc
    return out_p[:n], out_o[:n]


@nb.njit(cache=True, nogil=True)
def rearm_1d(order, x, w, P, lo, hi, rem, rep, cand, ca, cb, k):
    """Every maturity inside the batch of the k re-arming 1D candidates, O(log B) each: the time
    halving of :func:`locate_1d` is built in full once (every level's left counts and weights,
    O(B log B) time, O(B log B) space), then each maturity is one root-to-leaf descent for the
    first element at which the weight inside the range, counted from the batch start, reaches an
    absolute target: the remaining threshold first, then the weight up to the last maturity plus
    ``rep[q]`` (weight 0 from the element after it; the overshoot is dropped), until the target
    passes the candidate's weight in the batch ``P[cb] - P[ca]``. Returns (slots, offsets) by
    candidate; the candidates' rem are left at their end-of-batch value."""
    B = order.shape[0]
    L = 1
    n = B
    while n > LEAF:
        n = (n + 1) >> 1
        L += 1
    lcnt = np.zeros((L, B), np.int32)
    lw = np.zeros((L, B), np.int64)
    cur = order.copy()
    nxt = order.copy()
    ns = np.zeros(B + 1, np.int64)  # node starts of the current level (sizes > LEAF)
    ne = np.zeros(B + 1, np.int64)
    ns2 = np.zeros(B + 1, np.int64)
    ne2 = np.zeros(B + 1, np.int64)
    nn = 0
    if B > LEAF:
        ns[0] = 0
        ne[0] = B
        nn = 1
    lev = 0
    while nn > 0:
        m = 0
        for t in range(nn):
            s = ns[t]
            e = ne[t]
            mid = (s + e) >> 1
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
                lcnt[lev, i] = c
                lw[lev, i] = sw
            if mid - s > LEAF:
                ns2[m] = s
                ne2[m] = mid
                m += 1
            if e - mid > LEAF:
                ns2[m] = mid
                ne2[m] = e
                m += 1
        for t in range(m):
            ns[t] = ns2[t]
            ne[t] = ne2[t]
            for i in range(ns[t], ne[t]):
                cur[i] = nxt[i]
        nn = m
        lev += 1
    out_p = np.empty(max(16, 2 * k), np.int64)
    out_o = np.empty(max(16, 2 * k), np.int64)
    nout = 0
    qa = lo[0]
    qb = hi[0]
    for c in range(k):
        q = cand[c]
        Wq = P[cb[c]] - P[ca[c]]
        T = rem[q]  # absolute target: weight inside the range from the batch start
        while T <= Wq:
            s = 0
            e = B
            a = ca[c]
            b = cb[c]
            r = T
            skipped = np.int64(0)
            lv = 0
            while e - s > LEAF:
                mid = (s + e) >> 1
                la = lcnt[lv, a - 1] if a > s else 0
                lb = lcnt[lv, b - 1] if b > s else 0
                wa = lw[lv, a - 1] if a > s else 0
                wb = lw[lv, b - 1] if b > s else 0
                WL = wb - wa
                if WL >= r:
                    a = s + la
                    b = s + lb
                    e = mid
                else:
                    r -= WL
                    skipped += WL
                    a = mid + (a - s - la)
                    b = mid + (b - s - lb)
                    s = mid
                lv += 1
            acc = np.int64(0)
            t = s
            while t < e:
                xt = x[t]
                if xt >= qa[q] and xt <= qb[q]:
                    acc += w[t]
                    if acc >= r:
                        break
                t += 1
            if nout >= out_p.shape[0]:
                p2 = np.empty(2 * nout, np.int64)
                o2 = np.empty(2 * nout, np.int64)
                p2[:nout] = out_p[:nout]
                o2[:nout] = out_o[:nout]
                out_p, out_o = p2, o2
            out_p[nout] = q
            out_o[nout] = t
            nout += 1
            T = skipped + acc + rep[q]  # re-arm: the weight up to t, plus the threshold
        rem[q] = T - Wq
    return out_p[:nout], out_o[:nout]
