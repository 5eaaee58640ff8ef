"""The trigger list of :mod:`._trigger_kernels`: a bucket queue on the integer deadline.

A trigger's key is a stream size (the element count at which its cluster must be re-checked), and
the stream size only grows, so the queue is a two-level timing wheel over blocks of ``W`` keys:
a fine level of 2W buckets, one per key of the current block of ``base`` (<= the stream size and
every key) and the next, each a doubly linked list of clusters; a coarse level of ``C`` buckets,
one per later block (its clusters move to the fine level when base enters the block before it);
and a far list for the keys beyond (INF_DEADLINE among them), moved in when the wheel reaches
them. Adding, removing and re-keying a cluster are O(1); the minimum is found by scanning the
fine buckets from a hint (a lower bound of their keys, moved back only when a smaller key
arrives), else the first non-empty coarse bucket, so the scans cost O(1) amortized per element.

Ties (clusters with the same key) come out in an order that depends on the insertion history,
except in :func:`bq_min` with ``canon`` (the early re-evaluations at a merge boundary, whose
outcome depends on the order): the smallest cluster id among the minimum key.

Layout: ``bq`` (int64) holds [base, hint, far minimum (-1: unknown), its cluster, far head, -,
-, -], the 2W fine heads, the C coarse heads; per cluster ``bnx``/``bpv`` (links; bpv -1, -3,
-2: head of its fine, coarse bucket, of the far list) and ``bky`` (its key, -1: not queued).
"""

from __future__ import annotations

import numba
import numpy as np

W_BITS = 12
W = 1 << W_BITS  # keys per block
FMASK = 2 * W - 1
C = 512  # coarse buckets (blocks)
CMASK = C - 1
B_BASE, B_HINT, B_FMIN, B_FMINC, B_FHEAD = range(5)
H0 = 8  # fine heads
C0 = H0 + 2 * W  # coarse heads
BQ_SIZE = C0 + C
NOKEY = np.int64(2**63 - 1)  # > every key (INF_DEADLINE = 2**62 among them): "none"


def new_bq(n: int) -> np.ndarray:
    bq = np.full(BQ_SIZE, -1, np.int64)
    bq[B_BASE] = bq[B_HINT] = n
    bq[B_FMIN] = NOKEY
    return bq


@numba.njit(cache=True, nogil=True, inline="always")
def _push(bq, bnx, bpv, c, head, tag):
    t = bq[head]
    bnx[c] = t
    bpv[c] = tag
    if t >= 0:
        bpv[t] = c
    bq[head] = c


@numba.njit(cache=True, nogil=True, inline="always")
def bq_add(bq, bnx, bpv, bky, c, key):
    """Queue cluster c with ``key`` (>= base)."""
    bky[c] = key
    bb = bq[B_BASE] >> W_BITS
    kb = key >> W_BITS
    if kb <= bb + 1:
        _push(bq, bnx, bpv, c, H0 + (key & FMASK), -1)
        if key < bq[B_HINT]:
            bq[B_HINT] = key
    elif kb < bb + 2 + C:
        _push(bq, bnx, bpv, c, C0 + (kb & CMASK), -3)
    else:
        _push(bq, bnx, bpv, c, B_FHEAD, -2)
        fm = bq[B_FMIN]
        if fm >= 0 and (key < fm or (key == fm and c < bq[B_FMINC])):
            bq[B_FMIN] = key
            bq[B_FMINC] = c


@numba.njit(cache=True, nogil=True, inline="always")
def bq_remove(bq, bnx, bpv, bky, c):
    """Unqueue cluster c (if queued)."""
    k = bky[c]
    if k < 0:
        return
    p = bpv[c]
    x = bnx[c]
    if p >= 0:
        bnx[p] = x
    elif p == -1:
        bq[H0 + (k & FMASK)] = x
    elif p == -3:
        bq[C0 + ((k >> W_BITS) & CMASK)] = x
    else:
        bq[B_FHEAD] = x
        if bq[B_FMINC] == c:
            bq[B_FMIN] = -1  # unknown: recomputed when needed
    if x >= 0:
        bpv[x] = p
    if p >= 0 and bq[B_FMINC] == c:  # (a far cluster)
        bq[B_FMIN] = -1
    bky[c] = -1


@numba.njit(cache=True, nogil=True, inline="always")
def bq_move(bq, bnx, bpv, bky, c, key):
    """Re-key cluster c."""
    bq_remove(bq, bnx, bpv, bky, c)
    bq_add(bq, bnx, bpv, bky, c, key)


@numba.njit(cache=True, nogil=True)
def _fmin(bq, bnx, bky):
    """The far list's minimum key (then smallest cluster id)."""
    if bq[B_FMIN] >= 0:
        return bq[B_FMIN]
    best = NOKEY
    bc = -1
    t = bq[B_FHEAD]
    while t >= 0:
        k = bky[t]
        if k < best or (k == best and t < bc):
            best = k
            bc = t
        t = bnx[t]
    bq[B_FMIN] = best
    bq[B_FMINC] = bc
    return best


@numba.njit(cache=True, nogil=True)
def _readd(bq, bnx, bpv, bky, t):
    while t >= 0:
        x = bnx[t]
        k = bky[t]
        bq_add(bq, bnx, bpv, bky, t, k)
        t = x


@numba.njit(cache=True, nogil=True)
def _advance(bq, bnx, bpv, bky, nb):
    """Move base to nb (>= base, <= every key): the coarse buckets of the blocks the fine level
    now covers, and the far clusters the coarse level now covers, move down."""
    ob = bq[B_BASE] >> W_BITS
    bq[B_BASE] = nb
    b = nb >> W_BITS
    if b == ob:
        return
    for j in range(ob + 2, min(b + 2, ob + 2 + C)):
        s = C0 + (j & CMASK)
        t = bq[s]
        bq[s] = -1
        _readd(bq, bnx, bpv, bky, t)
    if _fmin(bq, bnx, bky) >> W_BITS < b + 2 + C:
        t = bq[B_FHEAD]
        bq[B_FHEAD] = -1
        bq[B_FMIN] = NOKEY
        _readd(bq, bnx, bpv, bky, t)
        bq[B_FMIN] = -1


@numba.njit(cache=True, nogil=True)
def _bq_min_slow(bq, bnx, bpv, bky, n, canon):
    """:func:`bq_min` in full: the coarse level, the far list, base moving to another block."""
    while True:
        base = bq[B_BASE]
        bb = base >> W_BITS
        lim = (bb + 2) << W_BITS
        h = max(bq[B_HINT], base)
        while h < lim and bq[H0 + (h & FMASK)] < 0:
            h += 1
        bq[B_HINT] = h
        c = -1
        key = NOKEY
        if h < lim:
            key = h
            c = bq[H0 + (h & FMASK)]
            if canon:
                t = bnx[c]
                while t >= 0:
                    if t < c:
                        c = t
                    t = bnx[t]
        else:
            for j in range(bb + 2, bb + 2 + C):
                t = bq[C0 + (j & CMASK)]
                if t >= 0:
                    key = NOKEY
                    while t >= 0:
                        k = bky[t]
                        if k < key or (k == key and t < c):
                            key = k
                            c = t
                        t = bnx[t]
                    break
            if c < 0:
                key = _fmin(bq, bnx, bky)
                c = bq[B_FMINC]
                if c < 0:
                    return -1
        nb = min(n, key)
        if nb > base:
            if (nb >> W_BITS) != bb:
                _advance(bq, bnx, bpv, bky, nb)
                continue
            bq[B_BASE] = nb
        return c


@numba.njit(cache=True, nogil=True, inline="always")
def bq_min(bq, bnx, bpv, bky, n, canon):
    """The cluster with the smallest key (-1: none); ``canon``: the smallest id among ties. ``n``
    (the stream size, <= every future key) lets base advance. Inlined: the fine level, base
    staying in its block; the rest in :func:`_bq_min_slow`."""
    base = bq[B_BASE]
    bb = base >> W_BITS
    lim = (bb + 2) << W_BITS
    h = max(bq[B_HINT], base)
    while h < lim and bq[H0 + (h & FMASK)] < 0:
        h += 1
    bq[B_HINT] = h
    nb = min(n, h)
    if h < lim and (nb >> W_BITS) == bb:
        c = bq[H0 + (h & FMASK)]
        if canon:
            t = bnx[c]
            while t >= 0:
                if t < c:
                    c = t
                t = bnx[t]
        if nb > base:
            bq[B_BASE] = nb
        return c
    return _bq_min_slow(bq, bnx, bpv, bky, n, canon)


def bq_rebuild(clusters: np.ndarray, ckey: np.ndarray, n: int, ncap: int):
    """A queue holding ``clusters`` with their keys (a snapshot's restore)."""
    lo = min([n, *ckey[clusters].tolist()])
    bq = new_bq(int(lo))
    bnx = np.full(ncap, -1, np.int64)
    bpv = np.full(ncap, -1, np.int64)
    bky = np.full(ncap, -1, np.int64)
    for c in clusters.tolist():
        bq_add(bq, bnx, bpv, bky, c, ckey[c])
    return bq, bnx, bpv, bky
