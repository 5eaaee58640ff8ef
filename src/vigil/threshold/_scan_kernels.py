"""Numba kernels of the threshold Baseline ``scan`` (paper 000 §3.1/§8; ``vigil.threshold.stabbing``)
and the output buffers every baseline kernel shares.

``scan_push_*``: block at a time and query-major: for every alive query the weight of a block of
<= ``SCAN_BLOCK`` elements is summed branch-free (SIMD), and only when the sum reaches the
query's remaining threshold is the block re-scanned for the exact offset of the crossing; a
re-arming query (``rep[q] >= 1``) restarts there at weight 0 with threshold ``rep[q]`` and the
re-scan goes on for its further crossings in the block.

Counters hold the *remaining* weight ``rem = tau - W``; dead entries hold ``DEAD = 2**62``.
Maturities go to ``(out_pos, out_off)``, grown inside the kernel when full (:func:`emit`: a
re-arming query may mature at many elements of one push), and the kernels return
``(count, out_pos, out_off)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

DEAD = 4611686018427387904  # 2**62
SCAN_BLOCK = 256  # elements per query-major block in scan (fits in L1 with the query columns)


@nb.njit(cache=True, nogil=True)
def _grow(out_pos, out_off):
    n = out_pos.shape[0]
    m = max(2 * n, 64)
    p = np.empty(m, np.int64)
    o = np.empty(m, np.int64)
    p[:n] = out_pos
    o[:n] = out_off
    return p, o


@nb.njit(cache=True, nogil=True, inline="always")
def emit(out_pos, out_off, cnt, p, off):
    """Append (p, off); returns (cnt + 1, out_pos, out_off), the buffers grown when full."""
    if cnt >= out_pos.shape[0]:
        out_pos, out_off = _grow(out_pos, out_off)
    out_pos[cnt] = p
    out_off[cnt] = off
    return cnt + 1, out_pos, out_off


@nb.njit(cache=True, nogil=True, inline="always")
def _crossings(inside_at, ws, nb_, b0, q, r, rq, out_pos, out_off, cnt):
    """Re-scan a block in which query q (remaining r) matures: report each crossing; returns
    (remaining after the block, cnt, out_pos, out_off)."""
    acc = 0
    for j in range(nb_):
        if inside_at[j]:
            acc += ws[j]
            if acc >= r:
                cnt, out_pos, out_off = emit(out_pos, out_off, cnt, q, b0 + j)
                if rq <= 0:
                    return DEAD, cnt, out_pos, out_off
                r = rq  # re-arm: from the next element on, weight 0
                acc = 0
    return r - acc, cnt, out_pos, out_off


@nb.njit(cache=True, nogil=True)
def scan_push_1d(lo, hi, rem, rep, n, pts, w, out_pos, out_off):
    """lo, hi: float64[1, cap]; rem, rep: int64[cap]; pts: float64[1, B]; returns
    (#matured, out_pos, out_off). (The block is sliced into local views so that LLVM vectorises
    the inner loop.)"""
    B = pts.shape[1]
    a = lo[0]
    b = hi[0]
    cnt = 0
    inside = np.empty(SCAN_BLOCK, np.bool_)
    for b0 in range(0, B, SCAN_BLOCK):
        b1 = min(B, b0 + SCAN_BLOCK)
        xs = pts[0, b0:b1]
        ws = w[b0:b1]
        nb_ = b1 - b0
        for q in range(n):
            r = rem[q]
            if r >= DEAD:
                continue
            qa = a[q]
            qb = b[q]
            s = 0
            for j in range(nb_):
                xj = xs[j]
                s += ws[j] * np.int64((xj >= qa) & (xj <= qb))
            if s >= r:
                for j in range(nb_):
                    inside[j] = xs[j] >= qa and xs[j] <= qb
                rq, cnt, out_pos, out_off = _crossings(inside, ws, nb_, b0, q, r, rep[q], out_pos, out_off, cnt)
                rem[q] = rq
            else:
                rem[q] = r - s
    return cnt, out_pos, out_off


@nb.njit(cache=True, nogil=True)
def scan_push_2d(lo, hi, rem, rep, n, pts, w, out_pos, out_off):
    B = pts.shape[1]
    a0 = lo[0]
    a1 = lo[1]
    h0 = hi[0]
    h1 = hi[1]
    cnt = 0
    inside = np.empty(SCAN_BLOCK, np.bool_)
    for c0 in range(0, B, SCAN_BLOCK):
        c1 = min(B, c0 + SCAN_BLOCK)
        xs = pts[0, c0:c1]
        ys = pts[1, c0:c1]
        ws = w[c0:c1]
        nb_ = c1 - c0
        for q in range(n):
            r = rem[q]
            if r >= DEAD:
                continue
            xa = a0[q]
            xb = h0[q]
            ya = a1[q]
            yb = h1[q]
            s = 0
            for j in range(nb_):
                xj = xs[j]
                yj = ys[j]
                s += ws[j] * np.int64((xj >= xa) & (xj <= xb) & (yj >= ya) & (yj <= yb))
            if s >= r:
                for j in range(nb_):
                    inside[j] = xs[j] >= xa and xs[j] <= xb and ys[j] >= ya and ys[j] <= yb
                rq, cnt, out_pos, out_off = _crossings(inside, ws, nb_, c0, q, r, rep[q], out_pos, out_off, cnt)
                rem[q] = rq
            else:
                rem[q] = r - s
    return cnt, out_pos, out_off


@nb.njit(cache=True, nogil=True)
def scan_push_nd(lo, hi, rem, rep, n, pts, w, out_pos, out_off):
    d = pts.shape[0]
    B = pts.shape[1]
    cnt = 0
    inside = np.empty(SCAN_BLOCK, np.int64)
    for c0 in range(0, B, SCAN_BLOCK):
        c1 = min(B, c0 + SCAN_BLOCK)
        ws = w[c0:c1]
        nb_ = c1 - c0
        for q in range(n):
            r = rem[q]
            if r >= DEAD:
                continue
            for j in range(nb_):
                inside[j] = 1
            for k in range(d):
                qa = lo[k, q]
                qb = hi[k, q]
                xk = pts[k, c0:c1]
                for j in range(nb_):
                    inside[j] &= np.int64((xk[j] >= qa) & (xk[j] <= qb))
            s = 0
            for j in range(nb_):
                s += ws[j] * inside[j]
            if s >= r:
                rq, cnt, out_pos, out_off = _crossings(inside, ws, nb_, c0, q, r, rep[q], out_pos, out_off, cnt)
                rem[q] = rq
            else:
                rem[q] = r - s
    return cnt, out_pos, out_off
