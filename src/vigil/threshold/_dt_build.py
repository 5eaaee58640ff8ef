"""DT kernels: construction of the endpoint trees and canonical node sets (paper 000 §4; §6
layering, one dimension per call). See :mod:`vigil.threshold._kernels` for the layout.
O(m log m) per dimension to build; O(log m) canonical nodes per query and dimension."""

from __future__ import annotations

import numba as nb
import numpy as np

from ._dt_keys import I64_MAX, I64_MIN, KINF1

# --------------------------------------------------------------------------------------------
# construction (§4 endpoint tree + canonical node sets; §6 layering, one dimension per call)
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _height(L):
    H = 0
    while (np.int64(1) << H) < L:
        H += 1
    return H


@nb.njit(cache=True, nogil=True)
def tree_layout(widths):
    """Per tree g of widths[g] leaves: (leaves, height, first row, total rows) of the implicit
    complete trees laid out one after another (level t of a tree of height H holds
    ((w - 1) >> (H - t)) + 1 rows). O(sum of heights)."""
    G = len(widths)
    tL = np.empty(G, np.int64)
    tH = np.empty(G, np.int64)
    tbase = np.empty(G, np.int64)
    nrows = 0
    for g in range(G):
        w = widths[g]
        tL[g] = w
        H = _height(w)
        tH[g] = H
        tbase[g] = nrows
        for t in range(H + 1):
            nrows += ((w - 1) >> (H - t)) + 1
    return tL, tH, tbase, nrows


@nb.njit(cache=True, nogil=True)
def merge_order(kl, kh, oh):
    """``np.argsort(concat(kl, kh), kind="stable")`` for a sorted ``kl``, given ``oh`` = the stable
    argsort of ``kh``: one merge, O(k) (dimension 0, where the local order sorts ``kl``)."""
    k = kl.shape[0]
    out = np.empty(2 * k, np.int64)
    i = 0
    j = 0
    t = 0
    while i < k and j < k:
        if kl[i] <= kh[oh[j]]:  # equal keys: the lower side (smaller index) first, as stable
            out[t] = i
            i += 1
        else:
            out[t] = k + oh[j]
            j += 1
        t += 1
    while i < k:
        out[t] = i
        i += 1
        t += 1
    while j < k:
        out[t] = k + oh[j]
        j += 1
        t += 1
    return out


@nb.njit(cache=True, nogil=True)
def level_sizes(kl, kh, order, moff, mgrp, G):
    """First half of building the endpoint trees of one dimension (§4, §6): their keys and sizes.

    ``kl``/``kh``: int64[k] lower / upper keys of the local queries in this dimension.
    ``order``: argsort of ``concat(kl, kh)``. Memberships (query-major): query ``q`` belongs to the
    groups ``mgrp[moff[q]:moff[q+1]]``; one tree is built per group on the endpoints of its queries
    (level 0: one group with every query; level i>0: one group per canonical node of level i-1,
    holding Q(u)). Returns ``(buf, boff, tL, tH, tbase, mm, nrows, gorder)``: the sorted distinct
    keys of group g in ``buf[boff[g]:boff[g]+tL[g]]``; tree heights and row offsets; per
    membership e the record ``mm[e] = (a, b, g << 32 | q, -)`` with [a, b) its leaf range; the
    number of rows (the caller allocates them, see :func:`level_fill`); and the memberships
    ordered by group, then by lower key (the order in which the last level is laid out, so that
    writes into the pool stay local). Time O(M log m) for M memberships (one bucket fill in global
    key order: no search); space O(M)."""
    k = kl.shape[0]
    M = moff[k]
    gsz = np.zeros(G, np.int64)
    for e in range(M):
        gsz[mgrp[e]] += 1
    boff = np.empty(G + 1, np.int64)
    boff[0] = 0
    for g in range(G):
        boff[g + 1] = boff[g] + 2 * gsz[g] + 1
    buf = np.empty(boff[G], np.int64)
    fill = np.empty(G, np.int64)
    for g in range(G):
        buf[boff[g]] = I64_MIN
        fill[g] = boff[g] + 1
    mm = np.empty((M, 4), np.int64)
    gorder = np.empty(M, np.int64)
    gfill = np.empty(G, np.int64)
    acc = 0
    for g in range(G):
        gfill[g] = acc
        acc += gsz[g]
    # bucket fill in global key order: every group receives its keys sorted; duplicates are
    # dropped on the fly and each membership learns the leaf index of its endpoints
    for t in range(2 * k):
        idx = order[t]
        hi_side = idx >= k
        q = idx - k if hi_side else idx
        key = kh[q] if hi_side else kl[q]
        if key == KINF1:
            for e in range(moff[q], moff[q + 1]):
                mm[e, 1] = -1
            continue
        for e in range(moff[q], moff[q + 1]):
            g = mgrp[e]
            f = fill[g]
            if buf[f - 1] != key:
                buf[f] = key
                f += 1
                fill[g] = f
            if hi_side:
                mm[e, 1] = f - 1 - boff[g]
            else:
                mm[e, 0] = f - 1 - boff[g]
                mm[e, 2] = (g << 32) | q
                gorder[gfill[g]] = e
                gfill[g] += 1
    tL, tH, tbase, nrows = tree_layout(fill[:G] - boff[:G])
    for e in range(M):
        if mm[e, 1] < 0:  # unbounded above: to the end of the (padded) leaf range
            mm[e, 1] = np.int64(1) << tH[mm[e, 2] >> 32]
    return buf, boff, tL, tH, tbase, mm, nrows, gorder


@nb.njit(cache=True, nogil=True)
def level_fill(G, row0, last, buf, boff, tL, tH, tbase, NR):
    """Second half of :func:`level_sizes`: fill the rows ``NR`` of this level's trees (this level's
    block; rows are numbered from ``row0``, and ``tbase`` is shifted by ``row0``): split keys, and
    counter 0 (last dimension) or no secondary tree yet (-1)."""
    for g in range(G):
        tbase[g] += row0
    c1 = 0 if last else -1
    for g in range(G):
        s = boff[g]
        L = tL[g]
        H = tH[g]
        r = tbase[g] - row0
        for t in range(H + 1):
            cnt = ((L - 1) >> (H - t)) + 1
            for j in range(cnt):
                sp = I64_MAX
                if t < H:
                    first = (2 * j + 1) << (H - t - 1)
                    if first < L:
                        sp = buf[s + first]
                NR[r, 0] = sp
                NR[r, 1] = c1
                NR[r, 2] = I64_MAX
                NR[r, 3] = 0
                r += 1


@nb.njit(cache=True, nogil=True)
def _decompose(a, b, L, H, base, out):
    """Canonical node set of the leaf range [a, b) (b = 2**H: to the end) in a tree on L leaves
    with rows from ``base``: the minimal set of nodes with disjoint jurisdictions covering it, at
    most 2 per level, bottom-up (§4 footnote 1). Writes the rows to ``out``; returns the count."""
    cnt = 0
    off = 0  # offset of level t (levels from the top: level t has ((L-1) >> (H-t)) + 1 nodes)
    for t in range(H):
        off += ((L - 1) >> (H - t)) + 1
    t = H
    lft = a
    rgt = b
    while lft < rgt:
        if lft & 1:
            if (lft << (H - t)) < L:
                out[cnt] = base + off + lft
                cnt += 1
            lft += 1
        if rgt & 1:
            rgt -= 1
            if (rgt << (H - t)) < L:
                out[cnt] = base + off + rgt
                cnt += 1
        lft >>= 1
        rgt >>= 1
        t -= 1
        if t >= 0:
            off -= ((L - 1) >> (H - t)) + 1
    return cnt


@nb.njit(cache=True, nogil=True)
def level_canonical(moff, mm, tL, tH, tbase):
    """Canonical nodes of every query over its groups (a level that is not the last), query-major:
    ``prow[poff[q]:poff[q+1]]``. Returns ``(poff, prow)``."""
    k = moff.shape[0] - 1
    out = np.empty(140, np.int64)
    poff = np.empty(k + 1, np.int64)
    poff[0] = 0
    for q in range(k):
        tot = poff[q]
        for e in range(moff[q], moff[q + 1]):
            g = mm[e, 2] >> 32
            mm[e, 3] = tot
            tot += _decompose(mm[e, 0], mm[e, 1], tL[g], tH[g], tbase[g], out)
        poff[q + 1] = tot
    prow = np.empty(poff[k], np.int64)
    for q in range(k):
        for e in range(moff[q], moff[q + 1]):
            g = mm[e, 2] >> 32
            n = _decompose(mm[e, 0], mm[e, 1], tL[g], tH[g], tbase[g], out)
            p = mm[e, 3]
            for x in range(n):
                prow[p + x] = out[x]
    return poff, prow


@nb.njit(cache=True, nogil=True)
def next_groups(prow, row0, nrows, NR, tree0):
    """Turn the canonical nodes of one level into the groups of the next level (§6: node u of a
    tree of dimension i gets a secondary tree on Q(u) in dimension i+1). Links ``NR[u, 1]`` to the
    id of u's secondary tree (``tree0 + group``). Returns ``(mgrp, G)``; memberships keep the
    query-major offsets of ``prow``."""
    gid = np.full(nrows, -1, np.int64)
    for e in range(prow.shape[0]):
        gid[prow[e] - row0] = 0
    G = 0
    for r in range(nrows):
        if gid[r] == 0:
            gid[r] = G
            NR[r, 1] = tree0 + G
            G += 1
    mgrp = np.empty(prow.shape[0], np.int64)
    for e in range(prow.shape[0]):
        mgrp[e] = gid[prow[e] - row0]
    return mgrp, G
