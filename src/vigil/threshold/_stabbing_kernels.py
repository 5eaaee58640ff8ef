"""Numba kernels of the threshold baselines (``vigil.threshold.stabbing``).

Everything here works on flat numpy arrays; no jitclass, no Python call per element.

* an int64 -> int64 open-addressing hash map (qid -> handle), linear probing with tombstones;
* ``scan_push_*`` (in ``_scan_kernels``, re-exported): the Baseline of paper §3.1/§8;
* ``itree_build``: a forest of centred interval trees [de Berg et al., ch. 10.1] over flat arrays;
* ``itree_push``: 1D stabbing of a static interval tree whose counters are laid out in the order
  of the left-endpoint lists, so the queries stabbed on the left side of a node are a contiguous,
  vectorised range of counters;
* ``segtree_pairs`` / ``seg_intv_push``: the 2D Seg-Intv structure (segment tree on x, an interval
  tree on y in every segment-tree node);
* ``apply_hits``: counter updates for the (ids, counts) answer of a bulk R-tree query.

Counters hold the *remaining* weight ``rem = tau - W``; a query matures when ``rem <= 0``, and a
re-arming one (``rep[p] >= 1``) then restarts with ``rem = rep[p]`` (weight 0 from the next
element on). Maturities are appended to ``(out_pos, out_off)``, grown when full
(``_scan_kernels.emit``); the push kernels return ``(count, out_pos, out_off)``. Dead
entries (terminated or matured, not yet purged by a rebuild) hold ``DEAD = 2**62`` and so never
reach 0: the operators reset them to DEAD before 2**61 of weight has been pushed since the last
reset (``stabbing._Base.push``), so they stay above 2**61.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._scan_kernels import DEAD, SCAN_BLOCK, emit, scan_push_1d, scan_push_2d, scan_push_nd  # noqa: F401

EMPTY = -9223372036854775808  # int64 min: an empty hash slot
TOMB = -9223372036854775807  # a deleted hash slot


# --------------------------------------------------------------------------------------------
# int64 -> int64 hash map
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def _hslot(k, mask):
    x = np.uint64(k)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return np.int64(x & np.uint64(mask))


@nb.njit(cache=True, nogil=True)
def ht_put(keys, vals, ks, vs):
    """Insert or overwrite ``ks[i] -> vs[i]``. Returns (new keys, tombstones reused)."""
    mask = keys.shape[0] - 1
    new = 0
    reused = 0
    for i in range(ks.shape[0]):
        k = ks[i]
        h = _hslot(k, mask)
        tomb = -1
        while True:
            kk = keys[h]
            if kk == k:
                vals[h] = vs[i]
                break
            if kk == EMPTY:
                if tomb >= 0:
                    h = tomb
                    reused += 1
                keys[h] = k
                vals[h] = vs[i]
                new += 1
                break
            if kk == TOMB and tomb < 0:
                tomb = h
            h = (h + 1) & mask
    return new, reused


@nb.njit(cache=True, nogil=True)
def ht_get(keys, vals, ks, out):
    mask = keys.shape[0] - 1
    for i in range(ks.shape[0]):
        k = ks[i]
        h = _hslot(k, mask)
        out[i] = -1
        while True:
            kk = keys[h]
            if kk == k:
                out[i] = vals[h]
                break
            if kk == EMPTY:
                break
            h = (h + 1) & mask


@nb.njit(cache=True, nogil=True)
def ht_pop(keys, vals, ks, out):
    """Remove ``ks``; ``out[i]`` = the removed value or -1. Returns the number removed."""
    mask = keys.shape[0] - 1
    n = 0
    for i in range(ks.shape[0]):
        k = ks[i]
        h = _hslot(k, mask)
        out[i] = -1
        while True:
            kk = keys[h]
            if kk == k:
                out[i] = vals[h]
                keys[h] = TOMB
                n += 1
                break
            if kk == EMPTY:
                break
            h = (h + 1) & mask
    return n


# --------------------------------------------------------------------------------------------
# interval tree forest (centred interval trees over flat arrays)
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def itree_build(gstart, ilo, ihi):
    """Build one centred interval tree per group of items ``gstart[g]:gstart[g+1]``.

    Node k has centre ``center[k]`` (the median endpoint of its items, so every node keeps >= 1
    item and each child gets <= half: depth <= log2(n) + 1), children ``lch/rch`` (-1 = none)
    and the items containing the centre in ``[ms[k], ms[k+1])`` of two lists: ``Lval/Litem``
    sorted by left endpoint ascending, ``Hval/Hitem`` by right endpoint descending.
    Returns (root[G], center, lch, rch, ms[nodes+1], Lval, Litem, Hval, Hitem).
    O(n log^2 n) time, O(n) space.
    """
    G = gstart.shape[0] - 1
    P = ilo.shape[0]
    root = np.full(G, -1, np.int32)
    center = np.empty(P, np.float64)
    lch = np.full(P, -1, np.int32)
    rch = np.full(P, -1, np.int32)
    ms = np.empty(P + 1, np.int32)
    Lval = np.empty(P, np.float64)
    Litem = np.empty(P, np.int32)
    Hval = np.empty(P, np.float64)
    Hitem = np.empty(P, np.int32)
    work = np.arange(P).astype(np.int32)
    tmp = np.empty(P, np.int32)
    ep = np.empty(2 * P, np.float64)
    st_s = np.empty(P + 2, np.int64)
    st_e = np.empty(P + 2, np.int64)
    st_par = np.empty(P + 2, np.int64)
    st_side = np.empty(P + 2, np.int64)
    nn = 0
    ptr = 0
    for g in range(G):
        if gstart[g + 1] == gstart[g]:
            continue
        sp = 0
        st_s[0] = gstart[g]
        st_e[0] = gstart[g + 1]
        st_par[0] = -1
        st_side[0] = 0
        sp = 1
        while sp > 0:
            sp -= 1
            s = st_s[sp]
            e = st_e[sp]
            par = st_par[sp]
            side = st_side[sp]
            node = nn
            nn += 1
            if par < 0:
                root[g] = node
            elif side == 0:
                lch[par] = node
            else:
                rch[par] = node
            n = e - s
            for i in range(n):
                it = work[s + i]
                ep[2 * i] = ilo[it]
                ep[2 * i + 1] = ihi[it]
            srt = np.sort(ep[: 2 * n])
            c = srt[n]
            center[node] = c
            nl = 0
            nr = 0
            for i in range(s, e):
                it = work[i]
                if ihi[it] < c:
                    tmp[s + nl] = it
                    nl += 1
                elif ilo[it] > c:
                    nr += 1
                    tmp[e - nr] = it
            nm = n - nl - nr
            k = s + nl
            for i in range(s, e):
                it = work[i]
                if not (ihi[it] < c) and not (ilo[it] > c):
                    tmp[k] = it
                    k += 1
            for i in range(s, e):
                work[i] = tmp[i]
            mids = work[s + nl : s + nl + nm]
            lv = ilo[mids]
            order = np.argsort(lv, kind="mergesort")
            for i in range(nm):
                Lval[ptr + i] = lv[order[i]]
                Litem[ptr + i] = mids[order[i]]
            hv = ihi[mids]
            order = np.argsort(-hv, kind="mergesort")
            for i in range(nm):
                Hval[ptr + i] = hv[order[i]]
                Hitem[ptr + i] = mids[order[i]]
            ms[node] = ptr
            ptr += nm
            if nr > 0:
                st_s[sp] = e - nr
                st_e[sp] = e
                st_par[sp] = node
                st_side[sp] = 1
                sp += 1
            if nl > 0:
                st_s[sp] = s
                st_e[sp] = s + nl
                st_par[sp] = node
                st_side[sp] = 0
                sp += 1
    ms[nn] = ptr
    return (root, center[:nn].copy(), lch[:nn].copy(), rch[:nn].copy(), ms[: nn + 1].copy(),
            Lval, Litem, Hval, Hitem)


@nb.njit(cache=True, nogil=True)
def _report(rem, rep, p, off, out_pos, out_off, cnt):
    rem[p] = rep[p] if rep[p] > 0 else DEAD  # re-arm, or dead
    return emit(out_pos, out_off, cnt, p, off)


@nb.njit(cache=True, inline="always")
def _dec_range(seg, w):
    """seg -= w (vectorised); returns min(seg)."""
    mn = DEAD
    for i in range(seg.shape[0]):
        r = seg[i] - w
        seg[i] = r
        mn = min(mn, r)
    return mn


@nb.njit(cache=True, nogil=True)
def _report_range(rem, rep, s, e, off, out_pos, out_off, cnt):
    for i in range(s, e):
        if rem[i] <= 0:
            cnt, out_pos, out_off = _report(rem, rep, i, off, out_pos, out_off, cnt)
    return cnt, out_pos, out_off


@nb.njit(cache=True, nogil=True)
def itree_push(root, center, lch, rch, ms, Lval, Hval, Hpos, rem, rep, xs, ws, out_pos, out_off):
    """1D stabbing: for each element, walk the interval tree from the root and decrement the
    counters of the O(log m + k) stabbed queries. Counters are in left-list order, so the left
    side of a node is the contiguous range ``rem[ms[v] : ms[v] + #(lo <= x)]``."""
    cnt = 0
    for j in range(xs.shape[0]):
        x = xs[j]
        w = ws[j]
        v = root
        while v >= 0:
            c = center[v]
            s = ms[v]
            e = ms[v + 1]
            if x < c:
                k = s + np.searchsorted(Lval[s:e], x, side="right")
                if _dec_range(rem[s:k], w) <= 0:
                    cnt, out_pos, out_off = _report_range(rem, rep, s, k, j, out_pos, out_off, cnt)
                v = lch[v]
            elif x > c:
                mn = DEAD
                hv = Hval[s:e]
                hp = Hpos[s:e]
                k = 0
                for i in range(e - s):
                    if hv[i] < x:
                        break
                    p = hp[i]
                    r = rem[p] - w
                    rem[p] = r
                    mn = min(mn, r)
                    k += 1
                if mn <= 0:
                    for i in range(k):
                        p = hp[i]
                        if rem[p] <= 0:
                            cnt, out_pos, out_off = _report(rem, rep, p, j, out_pos, out_off, cnt)
                v = rch[v]
            else:
                if _dec_range(rem[s:e], w) <= 0:
                    cnt, out_pos, out_off = _report_range(rem, rep, s, e, j, out_pos, out_off, cnt)
                v = -1
    return cnt, out_pos, out_off


# --------------------------------------------------------------------------------------------
# Seg-Intv (2D): segment tree on x, interval tree on y per segment-tree node
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _xslot(E, x):
    i = np.searchsorted(E, x, side="left")
    if i < E.shape[0] and E[i] == x:
        return 2 * i + 1
    return 2 * i


@nb.njit(cache=True, nogil=True)
def segtree_pairs(E, xlo, xhi, size):
    """Canonical nodes of every query's x-range in a bottom-up segment tree over the 2K+1
    elementary slots of the sorted distinct endpoints E (slot 2i+1 = {E[i]}, slot 2i = the open
    gap below E[i]). Returns (gstart[2*size+1], pair_q) grouped by node; O(m log m)."""
    m = xlo.shape[0]
    cnt = np.zeros(2 * size + 1, np.int64)
    for p in range(2):
        if p == 1:
            total = 0
            for v in range(2 * size):
                c = cnt[v]
                cnt[v] = total
                total += c
            cnt[2 * size] = total
            gstart = cnt.copy()
            pair_q = np.empty(total, np.int32)
        for q in range(m):
            lo_ = _xslot(E, xlo[q]) + size
            hi_ = _xslot(E, xhi[q]) + size + 1
            while lo_ < hi_:
                if lo_ & 1:
                    if p == 0:
                        cnt[lo_] += 1
                    else:
                        pair_q[cnt[lo_]] = q
                        cnt[lo_] += 1
                    lo_ += 1
                if hi_ & 1:
                    hi_ -= 1
                    if p == 0:
                        cnt[hi_] += 1
                    else:
                        pair_q[cnt[hi_]] = q
                        cnt[hi_] += 1
                lo_ >>= 1
                hi_ >>= 1
    return gstart, pair_q


@nb.njit(cache=True, nogil=True)
def seg_intv_push(E, size, sroot, center, lch, rch, ms, Lval, Lq, Hval, Hq, rem, rep, xs, ys, ws,
                  out_pos, out_off):
    """2D stabbing: the O(log m) segment-tree nodes on the leaf-to-root path of x, and in each
    the interval tree on y; a query is stabbed in at most one node of the path."""
    cnt = 0
    for j in range(xs.shape[0]):
        w = ws[j]
        y = ys[j]
        node = _xslot(E, xs[j]) + size
        while node >= 1:
            v = sroot[node]
            node >>= 1
            while v >= 0:
                c = center[v]
                s = ms[v]
                e = ms[v + 1]
                if y < c:
                    mn = DEAD
                    for i in range(s, e):
                        if Lval[i] > y:
                            break
                        p = Lq[i]
                        r = rem[p] - w
                        rem[p] = r
                        mn = min(mn, r)
                    if mn <= 0:
                        for i in range(s, e):
                            if Lval[i] > y:
                                break
                            p = Lq[i]
                            if rem[p] <= 0:
                                cnt, out_pos, out_off = _report(rem, rep, p, j, out_pos, out_off, cnt)
                    v = lch[v]
                elif y > c:
                    mn = DEAD
                    for i in range(s, e):
                        if Hval[i] < y:
                            break
                        p = Hq[i]
                        r = rem[p] - w
                        rem[p] = r
                        mn = min(mn, r)
                    if mn <= 0:
                        for i in range(s, e):
                            if Hval[i] < y:
                                break
                            p = Hq[i]
                            if rem[p] <= 0:
                                cnt, out_pos, out_off = _report(rem, rep, p, j, out_pos, out_off, cnt)
                    v = rch[v]
                else:
                    mn = DEAD
                    for i in range(s, e):
                        p = Lq[i]
                        r = rem[p] - w
                        rem[p] = r
                        mn = min(mn, r)
                    if mn <= 0:
                        for i in range(s, e):
                            p = Lq[i]
                            if rem[p] <= 0:
                                cnt, out_pos, out_off = _report(rem, rep, p, j, out_pos, out_off, cnt)
                    v = -1
    return cnt, out_pos, out_off


# --------------------------------------------------------------------------------------------
# R-tree answers
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def apply_hits(ids, counts, rem, rep, ws, off0, out_pos, out_off, cnt, verify, lo, hi, pts):
    """``ids`` are the slots stabbed by elements off0.., ``counts[j]`` of them for element j.
    With ``verify`` each hit is re-checked against the exact ranges lo/hi[d, slot] (the index
    holds clamped coordinates then, so its answer is a superset)."""
    k = 0
    d = lo.shape[0]
    for j in range(counts.shape[0]):
        w = ws[j]
        for _ in range(counts[j]):
            p = ids[k]
            k += 1
            if verify:
                ok = True
                for t in range(d):
                    v = pts[off0 + j, t]
                    if v < lo[t, p] or v > hi[t, p]:
                        ok = False
                if not ok:
                    continue
            r = rem[p] - w
            rem[p] = r
            if r <= 0:
                cnt, out_pos, out_off = _report(rem, rep, p, off0 + j, out_pos, out_off, cnt)
    return cnt, out_pos, out_off
