"""Numba kernels of the DT operator (``vigil.threshold.dt``): flat-array endpoint trees, per-node
priority queues and the distributed-tracking simulation. Everything here works on numpy arrays
only; the Python class in ``dt.py`` owns the arrays (allocated in numpy, so that large ones get
transparent huge pages) and calls these kernels once per batch.

Key space
---------
Coordinates are mapped to int64 by an order-preserving bijection (:func:`float_keys`), so that a
closed range ``[lo, hi]`` becomes the half-open key range ``[key(lo), key(hi) + 1)`` — the
paper's "infinitesimal trick" of §4 (``[x, y] = [x, y + eps)``), with ``eps`` one unit in the last
place. Every endpoint tree has the sentinel key ``INT64_MIN`` as its leftmost endpoint, so every
point falls in exactly one leaf.

Endpoint tree layout (one tree = one contiguous block of rows of ``NR``)
-----------------------------------------------------------------------
A tree on ``L`` sorted distinct endpoint keys ``K[0] < ... < K[L-1]`` is the perfect binary tree of
height ``H = ceil(log2 L)`` whose leaf ``i`` has jurisdiction ``[K[i], K[i+1])``; only nodes whose
leaf range starts before ``L`` exist. Level ``t`` (root = 0) holds ``((L-1) >> (H-t)) + 1`` nodes,
stored left to right after the levels above it (BFS order: the top levels are contiguous and stay
in cache; the path to leaf i is known by arithmetic, node ``i >> (H-t)`` of level t).
``NR`` is ``int64[rows, 4]``:

* col 0: split key of an internal node (first key of its right subtree; ``INT64_MAX`` if the
  right child does not exist), so an element descends with one comparison per level;
* col 1: in a tree of the last dimension, the node counter ``c(u)`` (sum of weights of the
  elements in the node's region since the tree was built); in a tree of an earlier dimension,
  the id of the node's secondary tree (§6) or -1;
* col 2: minimum key of the node's queue ``H(u)`` (``INT64_MAX`` if empty), so an element inspects
  one queue top per node with no extra memory access (§4, steps 1-2);
* col 3: ``offset << 32 | size``: where H(u) lives in the pool ``tt`` and how many entries it has.

Trees of all dimensions of one logarithmic-method structure share ``NR``; tree ``t`` is described by
``tbase[t], tL[t], tH[t], tdim[t]``; tree 0 is the primary (dimension-0) tree.

Participants, entries and the queues H(u)
-----------------------------------------
An *entry* is a pair (query q, node u in q's canonical node set U_q), with key sigma_q(u). The
min-heap H(u) of §4 is an array-embedded 4-ary tournament (winner) tree: the entries of u are
its leaves, which never move, and every internal node holds the minimum of its 4 children, so a
key change re-plays the matches on one leaf-to-root path (O(log_4 n), stopping when a winner is
unchanged) and needs no position index. Arrays (interleaved: one slot / one query = one miss):

* ``tt int64[slots, 2]``: the pool; H(u) occupies ``region(n)`` slots: its n leaves, then each
  internal level, root last; slot = (key, ``q << 32 | leaf slot``). Keys of removed entries are
  ``INT64_MAX``;
* ``qn int32[E, 2]``: query-major (node, leaf slot) pairs: the participants of local query q are
  ``qn[qr[q,3] : qr[q+1,3]]``;
* ``qr int64[k+1, 4]``: per local query (tgt, lam, acc, first entry). Tracking state, absolute in
  the structure's counters (which start at 0 at build): q matures when
  ``sum_{u in U_q} c(u) >= tgt``; ``lam`` is the slack of the current round (0 = direct mode,
  tau <= 6h; -1 = dead); ``acc`` counts the round's signals (round mode) or is the exact known
  sum ``sum (sigma_u - 1)`` (direct mode).
"""

from __future__ import annotations

import numba as nb
import numpy as np

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_LO32 = np.int64(0xFFFFFFFF)
#: key(+inf) + 1: the upper key of a range unbounded above; never stored in a tree
KINF1 = np.int64(0x7FF0000000000001)

# indices of the statistics vector filled by the kernels
ST_SIGNALS, ST_ROUNDS, ST_MATURED, ST_DIRECT, ST_PURGED = 0, 1, 2, 3, 4
N_STATS = 5


# --------------------------------------------------------------------------------------------
# key mapping (numpy, vectorized)
# --------------------------------------------------------------------------------------------


def float_keys(x: np.ndarray) -> np.ndarray:
    """Order-preserving bijection float64 -> int64 (``-0.0`` is first folded into ``+0.0``).
    Consecutive floats map to consecutive integers, so ``key(hi) + 1`` stands for ``hi + eps``."""
    x = np.ascontiguousarray(x, dtype=np.float64) + 0.0
    b = x.view(np.int64)
    return np.where(b < 0, b ^ _FLIP, b)


def keys_to_float(k: np.ndarray) -> np.ndarray:
    """Inverse of :func:`float_keys`."""
    k = np.ascontiguousarray(k, dtype=np.int64)
    return np.where(k < 0, k ^ _FLIP, k).view(np.float64)


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
    tL = np.empty(G, np.int64)
    tH = np.empty(G, np.int64)
    tbase = np.empty(G, np.int64)
    nrows = 0
    for g in range(G):
        w = fill[g] - boff[g]
        tL[g] = w
        H = _height(w)
        tH[g] = H
        tbase[g] = nrows
        for t in range(H + 1):
            nrows += ((w - 1) >> (H - t)) + 1
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


# fan-out of the tournament trees: _TF = 2**_TB children per internal node (4 measured best;
# _set_key's unrolled match assumes 4)
_TB = 2
_TF = 1 << _TB
_TM = _TF - 1


@nb.njit(cache=True, inline="always")
def _root(toff, n):
    """Slot of the root of the tournament tree with n leaves starting at slot toff."""
    off = toff
    while n > 1:
        off += n
        n = (n + _TM) >> _TB
    return off


@nb.njit(cache=True, nogil=True)
def _region(n):
    """Slots used by a tournament tree with n >= 1 leaves (leaves + every internal level)."""
    t = n
    while n > 1:
        n = (n + _TM) >> _TB
        t += n
    return t


@nb.njit(cache=True, inline="always")
def _group_min(tt, c0, c1):
    """(key, payload) of the minimal slot in ``tt[c0:c1]`` (the first one on ties)."""
    mk = tt[c0, 0]
    mv = tt[c0, 1]
    for c in range(c0 + 1, c1):
        if tt[c, 0] < mk:
            mk = tt[c, 0]
            mv = tt[c, 1]
    return mk, mv


@nb.njit(cache=True, nogil=True)
def heap_layout(NR, moff, mm, gorder, tL, tH, tbase):
    """Last dimension: count the canonical nodes of every membership (tree by tree), give every
    query its query-major entry range ``[poff[q], poff[q+1])`` (membership e starts at
    ``mm[e, 3]``), and lay out the per-node priority queues H(u) in one pool:
    ``NR[u, 3] = offset << 32 | size`` (size = number of queries having u canonical).
    Returns ``(poff, slots)``."""
    R = NR.shape[0]
    k = moff.shape[0] - 1
    cnt = np.zeros(R, np.int64)
    out = np.empty(140, np.int64)
    for x in range(gorder.shape[0]):
        e = gorder[x]
        g = mm[e, 2] >> 32
        n = _decompose(mm[e, 0], mm[e, 1], tL[g], tH[g], tbase[g], out)
        mm[e, 3] = n
        for y in range(n):
            cnt[out[y]] += 1
    poff = np.empty(k + 1, np.int64)
    tot = 0
    for q in range(k):
        poff[q] = tot
        for e in range(moff[q], moff[q + 1]):
            n = mm[e, 3]
            mm[e, 3] = tot
            tot += n
    poff[k] = tot
    s = 0
    for r in range(R):
        n = cnt[r]
        NR[r, 3] = (s << 32) | n
        if n > 0:
            s += _region(n)
    return poff, s


@nb.njit(cache=True, nogil=True)
def build_heaps(NR, mm, gorder, tL, tH, tbase, poff, rem, tt, qn, qr):
    """Fill the priority queues laid out by :func:`heap_layout` (``tt``, ``qn``, ``qr`` allocated
    by the caller: int64[slots, 2], int32[E, 2], zeroed int64[k+1, 4]) and start one
    distributed-tracking instance per query (§3.2/§7: slack ``floor(tau/(2h))`` if ``tau > 6h``,
    direct mode otherwise); all counters are 0. O(E) time (tree by tree, then bottom-up
    tournaments)."""
    R = NR.shape[0]
    k = rem.shape[0]
    for q in range(k):
        h = poff[q + 1] - poff[q]
        tau = rem[q]
        qr[q, 0] = tau
        qr[q, 3] = poff[q]
        if tau > 6 * h:
            qr[q, 1] = tau // (2 * h)
    qr[k, 3] = poff[k]
    cnt = np.empty(R, np.int64)
    for r in range(R):
        cnt[r] = NR[r, 3] >> 32
    out = np.empty(140, np.int64)
    for x in range(gorder.shape[0]):
        e = gorder[x]
        gq = mm[e, 2]
        g = gq >> 32
        q = gq & _LO32
        key = qr[q, 1] if qr[q, 1] > 0 else 1
        n = _decompose(mm[e, 0], mm[e, 1], tL[g], tH[g], tbase[g], out)
        j = mm[e, 3]
        for y in range(n):
            r = out[y]
            slot = cnt[r]
            cnt[r] = slot + 1
            tt[slot, 0] = key
            tt[slot, 1] = (q << 32) | slot
            qn[j + y, 0] = r
            qn[j + y, 1] = slot
    for r in range(R):
        n = NR[r, 3] & _LO32
        if n == 0:
            continue
        off = NR[r, 3] >> 32
        while n > 1:
            nxt = off + n
            m = (n + _TM) >> _TB
            for p in range(m):
                c0 = off + (p << _TB)
                mk, mv = _group_min(tt, c0, min(c0 + _TF, off + n))
                tt[nxt + p, 0] = mk
                tt[nxt + p, 1] = mv
            off = nxt
            n = m
        NR[r, 2] = tt[off, 0]


# --------------------------------------------------------------------------------------------
# the per-node priority queues H(u): array-embedded 4-ary tournament (winner) trees
# --------------------------------------------------------------------------------------------
#
# Node u's queue occupies the slots [toff, toff + region(n)) of ``tt``: its n leaves (one per
# entry, never moving), then each internal level (a node holds the minimum (sigma, payload) of its
# 4 children), the root last. Payload = q << 32 | leaf slot. Changing one key re-plays the matches
# on the leaf's path, stopping as soon as a winner is unchanged: O(log_4 n) with one 4-slot group
# read per level and no position index to maintain (the leaves are fixed).


@nb.njit(cache=True, nogil=True)
def _set_key(NR, tt, r, slot, newkey):
    """Set the key of leaf ``slot`` of H(r) and re-play its matches; keep NR[r, 2] = min."""
    info = NR[r, 3]
    off = info >> 32
    n = info & _LO32
    tt[slot, 0] = newkey
    i = slot - off
    while n > 1:
        p = i >> _TB
        c0 = off + (p << _TB)
        c1 = min(c0 + _TF, off + n)
        if c1 - c0 == 4:
            # full group: branch-free pairwise matches (first minimal child wins ties)
            k0 = tt[c0, 0]
            k1 = tt[c0 + 1, 0]
            k2 = tt[c0 + 2, 0]
            k3 = tt[c0 + 3, 0]
            a = c0 if k0 <= k1 else c0 + 1
            ka = k0 if k0 <= k1 else k1
            b = c0 + 2 if k2 <= k3 else c0 + 3
            kb = k2 if k2 <= k3 else k3
            m = a if ka <= kb else b
            mk = ka if ka <= kb else kb
            mv = tt[m, 1]
        else:
            mk, mv = _group_min(tt, c0, c1)
        off += n
        n = (n + _TM) >> _TB
        pp = off + p
        if tt[pp, 0] == mk and tt[pp, 1] == mv:
            return
        tt[pp, 0] = mk
        tt[pp, 1] = mv
        i = p
    NR[r, 2] = tt[off, 0]


@nb.njit(cache=True, nogil=True)
def _remove_query(NR, tt, qn, qr, q):
    for j in range(qr[q, 3], qr[q + 1, 3]):
        _set_key(NR, tt, qn[j, 0], qn[j, 1], I64_MAX)


# --------------------------------------------------------------------------------------------
# distributed tracking: a counter reached the top of its heap (§4 steps 1-3, §7 weighted rounds)
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def _mature(q, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st):
    """Query q matured at element i: report it and remove its entries eagerly (§4)."""
    out_q[nout] = q
    out_o[nout] = i
    st[ST_MATURED] += 1
    qalive[q] = 0
    qr[q, 1] = -1
    _remove_query(NR, tt, qn, qr, q)
    return nout + 1


@nb.njit(cache=True, nogil=True)
def _fire(r, c, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st):
    """Counter of node r is now c (>= the top sigma of H(r)): deliver every due signal."""
    while True:
        info = NR[r, 3]
        rp = _root(info >> 32, info & _LO32)
        s0 = tt[rp, 0]
        if s0 > c:
            break
        v = tt[rp, 1]
        q = v >> 32
        slot = v & _LO32
        lq = qr[q, 1]
        if lq < 0:
            # entry of a terminated query (lazy deletion): drop it now that it surfaced
            _set_key(NR, tt, r, slot, I64_MAX)
            st[ST_PURGED] += 1
            continue
        e0 = qr[q, 3]
        e1 = qr[q + 1, 3]
        h = e1 - e0
        if lq > 0:
            # weighted round (§7): one increment may carry several signals; they stop when the
            # coordinator has its h signals and announces the end of the round
            ksig = (c - s0) // lq + 1
            need = h - qr[q, 2]
            if ksig < need:
                qr[q, 2] += ksig
                st[ST_SIGNALS] += ksig
                _set_key(NR, tt, r, slot, s0 + ksig * lq)
                continue
            st[ST_SIGNALS] += need
            st[ST_ROUNDS] += 1
            S = np.int64(0)
            for j in range(e0, e1):
                S += NR[qn[j, 0], 1]
            if S >= qr[q, 0]:
                nout = _mature(q, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st)
                continue
            remq = qr[q, 0] - S
            if remq <= 6 * h:
                qr[q, 1] = 0
                qr[q, 2] = S
                st[ST_DIRECT] += 1
                for j in range(e0, e1):
                    u = qn[j, 0]
                    _set_key(NR, tt, u, qn[j, 1], NR[u, 1] + 1)
            else:
                nl = remq // (2 * h)
                qr[q, 1] = nl
                qr[q, 2] = 0
                for j in range(e0, e1):
                    u = qn[j, 0]
                    _set_key(NR, tt, u, qn[j, 1], NR[u, 1] + nl)
        else:
            # direct mode (tau <= 6h): every counter change is reported
            a = qr[q, 2] + c - (s0 - 1)
            qr[q, 2] = a
            st[ST_SIGNALS] += 1
            if a >= qr[q, 0]:
                nout = _mature(q, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st)
                continue
            _set_key(NR, tt, r, slot, c + 1)
    return nout


# --------------------------------------------------------------------------------------------
# element processing
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _locate(xk, w, i0, i1, tbase, tL, tH, tdim, NR, last, it_el, it_tree, it_leaf, cur, tmp):
    """Phase A of a group of elements ``i0..i1-1``: descend every tree an element must visit, level
    by level across all (element, tree) pairs at once (ordered by height, so each level is a prefix
    of the list), so that the cache misses of independent descents overlap (and phase B finds the
    rows in cache). Reads only split keys and child links, which never change after the build. Writes one item (element,
    last-dimension tree, leaf index) per visited last-dimension tree, grouped by element in
    increasing order; returns the number of items. ``cur``/``tmp``: int64[cap, 6] scratch."""
    # cur columns: 0 element, 1 tree, 2 j (index in level), 3 level offset, 4 x, 5 height
    ncur = 0
    for i in range(i0, i1):
        if w[i] > 0:
            cur[ncur, 0] = i
            cur[ncur, 1] = 0
            ncur += 1
    nit = 0
    hist = np.zeros(66, np.int64)
    while ncur > 0:
        kd = tdim[cur[0, 1]]
        # order by height, tallest first
        hist[:] = 0
        for p in range(ncur):
            hh = tH[cur[p, 1]]
            hist[64 - hh] += 1
        acc = 0
        for b in range(66):
            c = hist[b]
            hist[b] = acc
            acc += c
        for p in range(ncur):
            t = cur[p, 1]
            hh = tH[t]
            dst = hist[64 - hh]
            hist[64 - hh] = dst + 1
            tmp[dst, 0] = cur[p, 0]
            tmp[dst, 1] = t
            tmp[dst, 2] = 0
            tmp[dst, 3] = 0
            tmp[dst, 4] = xk[cur[p, 0], kd]
            tmp[dst, 5] = hh
        maxh = tmp[0, 5]
        nchild = 0
        active = ncur
        for lev in range(maxh + 1):
            while active > 0 and tmp[active - 1, 5] < lev:
                active -= 1
            for p in range(active):
                t = tmp[p, 1]
                H = tmp[p, 5]
                row = tbase[t] + tmp[p, 3] + tmp[p, 2]
                if kd != last:
                    ch = NR[row, 1]
                    if ch >= 0:
                        cur[nchild, 0] = tmp[p, 0]
                        cur[nchild, 1] = ch
                        nchild += 1
                if lev < H:
                    tmp[p, 3] += ((tL[t] - 1) >> (H - lev)) + 1
                    tmp[p, 2] = 2 * tmp[p, 2] + (1 if tmp[p, 4] >= NR[row, 0] else 0)
        if kd == last:
            for p in range(ncur):
                it_el[nit] = tmp[p, 0]
                it_tree[nit] = tmp[p, 1]
                it_leaf[nit] = tmp[p, 2]
                nit += 1
            break
        ncur = nchild
    # group items by element (stable counting sort over the small element range)
    if nit > 1:
        span = i1 - i0
        cnt = np.zeros(span + 1, np.int64)
        for p in range(nit):
            cnt[it_el[p] - i0 + 1] += 1
        for e in range(span):
            cnt[e + 1] += cnt[e]
        for p in range(nit):
            tmp[p, 0] = it_el[p]
            tmp[p, 1] = it_tree[p]
            tmp[p, 2] = it_leaf[p]
        for p in range(nit):
            k = tmp[p, 0] - i0
            dst = cnt[k]
            cnt[k] = dst + 1
            it_el[dst] = tmp[p, 0]
            it_tree[dst] = tmp[p, 1]
            it_leaf[dst] = tmp[p, 2]
    return nit


_GROUP = 16


@nb.njit(cache=True, nogil=True)
def push_dt(xk, w, NR, tbase, tL, tH, tdim, tt, qn, qr, qalive, out_q, out_o, st, floor):
    """Feed elements (keys ``xk[n, d]``, weights ``w[n]``; weight 0 = skip) through one structure.
    Each element visits the root-to-leaf path of the primary tree and, for d > 1, of the
    secondary trees of the nodes on it (§6); each visited node of the last dimension gets
    ``c(u) += w`` and, if its heap top is due, signals (§4).

    Elements are taken in groups of ``_GROUP``: phase A (:func:`_locate`) finds all their leaves,
    phase B then applies the elements strictly one after another, in order: counters along each
    path (addresses known, so the misses overlap) and heap inspection. Offsets are exact: an
    element touches at most one node of any query's canonical set, so the order of the counter
    updates *within* one element is immaterial, and nothing phase A reads ever changes.
    With ``floor`` only counters are maintained. Returns the number of maturities written to
    ``out_q`` (local query) / ``out_o`` (row), in row order. O(log^d m) per element plus O(log m)
    per signal."""
    n = xk.shape[0]
    last = xk.shape[1] - 1
    nout = 0
    # upper bound of items per element: product of (height + 1) over the dimensions
    per = 1
    hmax = 0
    for t in range(tH.shape[0]):
        if tH[t] > hmax:
            hmax = tH[t]
    for _ in range(last + 1):
        per *= hmax + 1
    G = _GROUP if per * _GROUP <= (1 << 20) else max(1, (1 << 20) // per)
    cap = per * G + 2
    it_el = np.empty(cap, np.int64)
    it_tree = np.empty(cap, np.int64)
    it_leaf = np.empty(cap, np.int64)
    cur = np.empty((cap, 6), np.int64)
    tmp = np.empty((cap, 6), np.int64)
    for i0 in range(0, n, G):
        i1 = min(n, i0 + G)
        nit = _locate(xk, w, i0, i1, tbase, tL, tH, tdim, NR, last, it_el, it_tree, it_leaf, cur, tmp)
        for p in range(nit):
            i = it_el[p]
            wi = w[i]
            t = it_tree[p]
            leaf = it_leaf[p]
            base = tbase[t]
            L = tL[t]
            H = tH[t]
            off = 0
            if floor:
                for lev in range(H + 1):
                    NR[base + off + (leaf >> (H - lev)), 1] += wi
                    off += ((L - 1) >> (H - lev)) + 1
                continue
            for lev in range(H + 1):
                row = base + off + (leaf >> (H - lev))
                c = NR[row, 1] + wi
                NR[row, 1] = c
                if c >= NR[row, 2]:
                    nout = _fire(row, c, i, NR, tt, qn, qr, qalive, out_q, out_o, nout, st)
                off += ((L - 1) >> (H - lev)) + 1
    return nout


# --------------------------------------------------------------------------------------------
# termination, exact weights (for rebuilds / snapshots)
# --------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def kill(locs, qr, qalive):
    """TERMINATE (§5) with lazy deletion: O(1) per query. The query is marked dead (``lam = -1``);
    each of its heap entries is removed when it reaches the top of its heap and its sigma is due
    (O(log m), at most once per entry) or disappears with the structure at the next global
    rebuild, which happens before dead entries outnumber alive ones, so space stays
    O(m_alive log^d m_alive). Returns the number of queries removed."""
    n = 0
    for t in range(locs.shape[0]):
        q = locs[t]
        if qalive[q]:
            qalive[q] = 0
            qr[q, 1] = -1
            n += 1
    return n


@nb.njit(cache=True, nogil=True)
def remaining(NR, qn, qr, qalive):
    """For each local query, ``tgt - W`` where ``W = sum_{u in U_q} c(u)`` is its exact weight in
    this structure (the threshold reset of §4's global rebuilding and §5's merges)."""
    k = qalive.shape[0]
    out = np.zeros(k, np.int64)
    for q in range(k):
        if qalive[q]:
            S = np.int64(0)
            for j in range(qr[q, 3], qr[q + 1, 3]):
                S += NR[qn[j, 0], 1]
            out[q] = qr[q, 0] - S
    return out
