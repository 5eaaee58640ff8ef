"""Kernels of the keyed windows (``vigil.windows.keyed``): per key a ring of its last elements and
a ring of block aggregates (blocks of B = 32 consecutive elements of the key), all keys' rings in
two flat arenas with per-key offsets.

A key's ring has a power-of-two capacity that doubles (the ring moves to the arena's end; the old
slots are dead until :func:`compact`) when it is full and its oldest element may still be in a
window: rows windows while the capacity is below the largest window of the key's queries, time
windows while the oldest element's time is within the largest span of the newest time. So memory
follows the elements held per key (keys x window), never the queries.

Element i of key k (0-based, in the key's order) lives at ``off[k] + (i & (cap[k] - 1))``; block
j (elements 32j .. 32j+31) at ``boff[k] + (j & (cap[k] / 32 - 1))`` once complete, when cap >= 32.
A lookup finds the window's index range [a, b] by arithmetic (rows) or binary search (time,
start) and combines O(W / 32 + 64) values: whole blocks inside [a, b], single elements at the ends.
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_kernels import quantile_rank

LOG_B = 5
B = 1 << LOG_B
# aggregate codes
SUM, COUNT, AVG, MIN, MAX, QNT = 0, 1, 2, 3, 4, 5


@numba.njit(cache=True, nogil=True)
def _blk(kind, ev, off, cap, first, k0):
    """Aggregate of elements first .. first+B-1 of a ring (kind: SUM / MIN / MAX)."""
    m = cap - 1
    acc = ev[off + (first & m)]
    for i in range(first + 1, first + B):
        v = ev[off + (i & m)]
        if kind == SUM:
            acc += v
        elif kind == MIN:
            if v < acc:
                acc = v
        elif v > acc:
            acc = v
    return acc


@numba.njit(cache=True, nogil=True)
def push(codes, vals, seqs, times, timed, span, bkind, need, off, cap, cnt, low, boff, ev, es, et, bv, tops):
    """Append the rows with codes[i] >= 0 to their keys' rings (codes: key codes, -1 = not kept);
    ``span``: the largest time span of the group's queries (time windows); ``need[k]``: the largest
    rows window of key k's queries; ``bkind``: SUM / MIN / MAX block aggregates, or -1 for none.
    ``low[k]``: the key's oldest held element (index); ``tops`` = [element arena top, block arena
    top, dead element slots, dead block slots].
    Returns the (possibly reallocated) arenas ev, es, et, bv."""
    for i in range(len(codes)):
        k = codes[i]
        if k < 0:
            continue
        c = cnt[k]
        cp = cap[k]
        if c >= cp:  # full (or never allocated): grow if its oldest element may still count
            grow = cp == 0
            if not grow:
                if timed:
                    grow = et[off[k] + ((c - cp) & (cp - 1))] > times[i] - span
                else:
                    grow = cp < need[k]
            if grow:
                nc = 4 if cp == 0 else 2 * cp
                nb = nc >> LOG_B if bkind >= 0 and nc >= B else 0
                if tops[0] + nc > len(ev) or tops[1] + nb > len(bv):  # full: compact into new arenas
                    ev, es, et, bv, e, b = compact(off, cap, cnt, boff, ev, es, et, bv, timed, bkind, nc, nb)
                    tops[0], tops[1], tops[2], tops[3] = e, b, 0, 0
                no = tops[0]
                for j in range(low[k], c):
                    src = off[k] + (j & (cp - 1))
                    dst = no + (j & (nc - 1))
                    ev[dst] = ev[src]
                    es[dst] = es[src]
                    if timed:
                        et[dst] = et[src]
                tops[0] = no + nc
                tops[2] += cp
                off[k] = no
                cap[k] = nc
                if nb:
                    bo = tops[1]
                    for j in range((low[k] + B - 1) >> LOG_B, c >> LOG_B):
                        bv[bo + (j & (nb - 1))] = _blk(bkind, ev, no, nc, j << LOG_B, 0)
                    tops[1] = bo + nb
                    tops[3] += cp >> LOG_B if cp >= B else 0
                    boff[k] = bo
                cp = nc
        p = off[k] + (c & (cp - 1))
        ev[p] = vals[i]
        es[p] = seqs[i]
        if timed:
            et[p] = times[i]
        cnt[k] = c + 1
        if c + 1 - cp > low[k]:
            low[k] = c + 1 - cp
        if bkind >= 0 and cp >= B and ((c + 1) & (B - 1)) == 0:
            j = c >> LOG_B
            bv[boff[k] + (j & ((cp >> LOG_B) - 1))] = _blk(bkind, ev, off[k], cp, j << LOG_B, 0)
    return ev, es, et, bv


@numba.njit(cache=True, nogil=True)
def compact(off, cap, cnt, boff, ev, es, et, bv, timed, bkind, room, broom):
    """The arenas without dead slots (keys in code order), with room for ``room`` more elements
    and ``broom`` more blocks (and a half of the live size more: amortized O(1) copies per
    element); updates off / boff in place. Returns (ev, es, et, bv, element top, block top)."""
    tot = 0
    btot = 0
    for k in range(len(off)):
        tot += cap[k]
        if bkind >= 0 and cap[k] >= B:
            btot += cap[k] >> LOG_B
    size = max(tot + room, tot + tot // 2, 64)
    bsize = max(btot + broom, btot + btot // 2, 8)
    nev = np.empty(size, np.float64)
    nes = np.empty(size, np.int64)
    net = np.empty(size if timed else 1, np.float64)
    nbv = np.empty(bsize, np.float64)
    o = 0
    bo = 0
    for k in range(len(off)):
        cp = cap[k]
        if cp == 0:
            continue
        nev[o:o + cp] = ev[off[k]:off[k] + cp]
        nes[o:o + cp] = es[off[k]:off[k] + cp]
        if timed:
            net[o:o + cp] = et[off[k]:off[k] + cp]
        off[k] = o
        o += cp
        if bkind >= 0 and cp >= B:
            nb = cp >> LOG_B
            nbv[bo:bo + nb] = bv[boff[k]:boff[k] + nb]
            boff[k] = bo
            bo += nb
    return nev, nes, net, nbv, o, bo


@numba.njit(cache=True, nogil=True)
def _range(k, left, right, start, timed, now, off, cap, cnt, low, es, et):
    """The window's index range [a, b] of key k (b < a: empty)."""
    c = cnt[k]
    cp = cap[k]
    if c == 0:
        return 0, -1
    m = cp - 1
    o = off[k]
    held = low[k]
    if timed:
        if not (now == now):  # no element yet
            return 0, -1
        lo_t = now - left
        hi_t = now - right
        a, e = held, c  # first index with time > lo_t
        while a < e:
            h = (a + e) >> 1
            if et[o + (h & m)] > lo_t:
                e = h
            else:
                a = h + 1
        b0, e = a, c  # first index with time > hi_t
        while b0 < e:
            h = (b0 + e) >> 1
            if et[o + (h & m)] > hi_t:
                e = h
            else:
                b0 = h + 1
        b = b0 - 1
    else:
        nl = np.int64(left)
        a = c - nl if nl < c else 0
        a = max(a, held)
        b = c - 1 - np.int64(right)
    if b < a:
        return 0, -1
    if es[o + (a & m)] <= start:  # first index with seq > start
        lo, e = a, b + 1
        while lo < e:
            h = (lo + e) >> 1
            if es[o + (h & m)] > start:
                e = h
            else:
                lo = h + 1
        a = lo
    return a, b


@numba.njit(cache=True, nogil=True)
def _agg(k, a, b, code, bkind, num, den, phi, off, cap, boff, ev, bv):
    n = b - a + 1
    if code == COUNT:
        return float(n)
    o = off[k]
    cp = cap[k]
    m = cp - 1
    if code == QNT:
        w = np.empty(n, np.float64)
        for i in range(n):
            w[i] = ev[o + ((a + i) & m)]
        w.sort()
        return w[quantile_rank(phi, num, den, n) - 1]
    bm = (cp >> LOG_B) - 1
    bo = boff[k]
    acc = ev[o + (a & m)]
    i = a + 1
    while i <= b:
        if cp >= B and (i & (B - 1)) == 0 and i + B - 1 <= b:
            v = bv[bo + ((i >> LOG_B) & bm)]
            i += B
        else:
            v = ev[o + (i & m)]
            i += 1
        if bkind == SUM:
            acc += v
        elif bkind == MIN:
            if v < acc:
                acc = v
        elif v > acc:
            acc = v
    if code == AVG:
        return acc / n
    return acc


@numba.njit(cache=True, nogil=True)
def lookup_keys(qkey, qleft, qright, qstart, qphi, qnum, qden, code, bkind, timed, now,
                off, cap, cnt, low, boff, ev, es, et, bv):
    """One value per query (query i over key qkey[i], -1 = a key never seen); NaN = empty window
    (COUNT: 0)."""
    out = np.empty(len(qkey), np.float64)
    for i in range(len(qkey)):
        k = qkey[i]
        a, b = (0, -1) if k < 0 else _range(k, qleft[i], qright[i], qstart[i], timed, now, off, cap, cnt, low, es, et)
        if b < a:
            out[i] = 0.0 if code == COUNT else np.nan
        else:
            out[i] = _agg(k, a, b, code, bkind, qnum[i], qden[i], qphi[i], off, cap, boff, ev, bv)
    return out


@numba.njit(cache=True, nogil=True)
def lookup_group(keys, left, right, start, phi, num, den, code, bkind, timed, now,
                 off, cap, cnt, low, boff, ev, es, et, bv):
    """One query over every key of ``keys``: the keys whose window holds an element and their
    values."""
    ko = np.empty(len(keys), np.int64)
    vo = np.empty(len(keys), np.float64)
    n = 0
    for i in range(len(keys)):
        k = keys[i]
        a, b = _range(k, left, right, start, timed, now, off, cap, cnt, low, es, et)
        if b >= a:
            ko[n] = k
            vo[n] = _agg(k, a, b, code, bkind, num, den, phi, off, cap, boff, ev, bv)
            n += 1
    return ko[:n], vo[:n]
