"""DT kernels: the per-node priority queues H(u) (array-embedded 4-ary tournament trees; paper
000 §4), their layout and build, key changes, and query removal / exact remaining weights.
A key change costs O(log_4 n); see :mod:`vigil.threshold._kernels` for the layout."""

from __future__ import annotations

import numba as nb
import numpy as np

from ._dt_build import _decompose
from ._dt_keys import _LO32, CHUNK_BITS, DIRECT, I64_MAX, SHARE

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
def _group_argmin(tt, c0, c1):
    """(key, slot) of the minimal slot in ``tt[c0:c1]`` (the first one on ties)."""
    mk = tt[c0, 0]
    m = c0
    for c in range(c0 + 1, c1):
        if tt[c, 0] < mk:
            mk = tt[c, 0]
            m = c
    return mk, m


@nb.njit(cache=True, inline="always")
def _participants(e, mm, tL, tH, tbase, pe, P0, out):
    """Rows of membership e's participants: its canonical nodes, then (bucketed trees,
    ``_dt_bucket``; ``pe`` empty otherwise) its private pieces. Returns the count."""
    g = mm[e, 2] >> 32
    n = _decompose(mm[e, 0], mm[e, 1], tL[g], tH[g], tbase[g], out)
    if pe.shape[0] > 0:
        for x in range(2):
            if pe[e, x] >= 0:
                out[n] = P0 + pe[e, x]
                n += 1
    return n


@nb.njit(cache=True, nogil=True)
def heap_layout(NR, moff, mm, tL, tH, tbase, sq, row0, pe, P0):
    """Last dimension: count the canonical nodes of every membership (query-major), give every
    query its query-major entry range ``[poff[q], poff[q+1])`` (membership e starts at
    ``mm[e, 3]``), and lay out the per-node priority queues H(u) in one pool:
    ``NR[u, 3] = offset << 32 | size`` (size = number of queries having u canonical).
    With ``sq`` non-empty (``sq[u - row0]`` = sqrt of the count of a sample of elements in the
    region of last-dimension node u, see ``dt.py``), also ``Z[q] = sum over q's canonical nodes u
    of sq(u)`` (the normaliser of the first round's split by rate, :func:`build_heaps`).
    Rows ``>= P0`` are the private pieces of bucketed trees (``pe``, see :func:`_participants`).
    Returns ``(poff, slots, Z)``."""
    R = NR.shape[0]
    k = moff.shape[0] - 1
    cnt = np.zeros(R, np.int64)
    sampled = sq.shape[0] > 0
    Z = np.zeros(k if sampled else 0, np.float64)
    out = np.empty(140, np.int64)
    for e in range(mm.shape[0]):  # query-major: mm is read in order (by tree: random, 5x slower)
        n = _participants(e, mm, tL, tH, tbase, pe, P0, out)
        mm[e, 3] = n
        for y in range(n):
            if out[y] < P0:  # (a private piece has its one entry in its row)
                cnt[out[y]] += 1
        if sampled:
            q = mm[e, 2] & _LO32
            for y in range(n):
                Z[q] += sq[out[y] - row0]
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
    for r in range(P0):  # private pieces (rows >= P0) hold their one entry in their row
        n = cnt[r]
        NR[r, 3] = (s << 32) | n
        if n > 0:
            s += _region(n)
    return poff, s, Z


@nb.njit(cache=True, nogil=True)
def build_heaps(NR, mm, tL, tH, tbase, poff, rem, tt, qn, qr, Z, sq, row0, pe, P0):
    """Fill the priority queues laid out by :func:`heap_layout` (``tt``, ``qn``, ``qr`` allocated
    by the caller: int64[slots, 2], int32[E, 2], zeroed int64[k+1, 4]) and start one
    distributed-tracking instance per query (§3.2/§7: if ``tau > DIRECT h``, slack unit
    ``floor(tau / (2 (1 + SHARE) h))`` and every participant's share SHARE (no rates known yet:
    the paper's equal split), direct mode otherwise); all counters are 0. If ``Z`` is given
    (:func:`heap_layout` with a sample's counts), the first round is already split by rate as
    later ones are (``_dt_push``): shares ~ SHARE h sq(u) / Z[q], the remainder to the busiest
    node. O(E) time (query-major: ``mm`` read and ``qn`` written in order; then bottom-up
    tournaments)."""
    R = NR.shape[0]
    k = rem.shape[0]
    for q in range(k):
        h = poff[q + 1] - poff[q]
        tau = rem[q]
        qr[q, 0] = tau
        qr[q, 3] = poff[q]
        if tau > DIRECT * h:
            qr[q, 1] = tau // (2 * (1 + SHARE) * h)
            qr[q, 2] = (1 + SHARE) * h
    qr[k, 3] = poff[k]
    cnt = np.zeros(R, np.int64)
    for r in range(P0):
        cnt[r] = NR[r, 3] >> 32
    out = np.empty(140, np.int64)
    sampled = Z.shape[0] > 0
    used = np.zeros(k if sampled else 0, np.int64)
    bslot = np.full(k if sampled else 0, -1, np.int64)
    bcnt = np.full(k if sampled else 0, -1.0, np.float32)
    for e in range(mm.shape[0]):  # query-major: mm read and qn written in order
        gq = mm[e, 2]
        q = gq & _LO32
        lam = qr[q, 1]
        key = (1 + SHARE) * lam if lam > 0 else 1  # no rates known: every share SHARE
        split = sampled and lam > 0 and Z[q] > 0.0
        f = SHARE * (poff[q + 1] - poff[q]) / Z[q] if split else 0.0
        n = _participants(e, mm, tL, tH, tbase, pe, P0, out)
        j = mm[e, 3]
        for y in range(n):
            r = out[y]
            mu = np.int64(SHARE)
            kk = key
            if split:
                c = sq[r - row0]
                mu = max(0, min(np.int64(f * c), SHARE * (poff[q + 1] - poff[q]) - used[q]))
                used[q] += mu
                if c > bcnt[q]:
                    bcnt[q] = c
                    bslot[q] = j + y
                kk = lam * (1 + mu)
            if r >= P0:  # a private piece: its one entry lives in its row
                NR[r, 2] = kk
                NR[r, 3] = (q << 32) | mu
                slot = 0
            else:
                slot = cnt[r]
                cnt[r] = slot + 1
                tt[slot, 0] = kk
                tt[slot, 1] = (q << 32) | mu
            qn[j + y, 0] = r
            qn[j + y, 1] = slot
    if sampled:
        for q in range(k):
            jb = bslot[q]
            if jb >= 0:  # the remainder of the shares to the busiest node
                r = qn[jb, 0]
                slot = qn[jb, 1]
                mu = ((NR[r, 3] if r >= P0 else tt[slot, 1]) & _LO32) + SHARE * (poff[q + 1] - poff[q]) - used[q]
                if r >= P0:
                    NR[r, 2] = qr[q, 1] * (1 + mu)
                    NR[r, 3] = (q << 32) | mu
                else:
                    tt[slot, 0] = qr[q, 1] * (1 + mu)
                    tt[slot, 1] = (q << 32) | mu
    for r in range(P0):
        n = NR[r, 3] & _LO32
        if n == 0:
            continue
        off = NR[r, 3] >> 32
        leaves = True
        while n > 1:
            nxt = off + n
            m = (n + _TM) >> _TB
            for p in range(m):
                c0 = off + (p << _TB)
                mk, mi = _group_argmin(tt, c0, min(c0 + _TF, off + n))
                tt[nxt + p, 0] = mk
                # a leaf's payload holds its weight share, an internal slot the leaf slot
                tt[nxt + p, 1] = ((tt[mi, 1] >> 32) << 32) | mi if leaves else tt[mi, 1]
            off = nxt
            n = m
            leaves = False
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


@nb.njit(cache=True, inline="always")
def _set_key(NR, tt, r, slot, newkey):
    """Set the key of leaf ``slot`` of H(r) and re-play its matches; keep NR[r, 2] = min."""
    info = NR[r, 3]
    off = info >> 32
    n = info & _LO32
    tt[slot, 0] = newkey
    i = slot - off
    leaves = True
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
        else:
            mk, m = _group_argmin(tt, c0, c1)
        # leaf payload = q << 32 | weight share; internal payload = q << 32 | leaf slot
        mv = ((tt[m, 1] >> 32) << 32) | m if leaves else tt[m, 1]
        leaves = False
        off += n
        n = (n + _TM) >> _TB
        pp = off + p
        if tt[pp, 0] == mk and tt[pp, 1] == mv:
            return
        tt[pp, 0] = mk
        tt[pp, 1] = mv
        i = p
    NR[r, 2] = tt[off, 0]


@nb.njit(cache=True, inline="always")
def _rekey(NR, tt, PH, P0, r, slot, newkey):
    """Set an entry's key: a private piece (row >= P0, ``_dt_bucket``) is its own one-entry queue
    (key in ``NR[r, 2]``, no slot), any other node's entry is leaf ``slot`` of H(r)."""
    if PH.ndim == 1 and r >= P0:  # (a 2-D PH: no pieces, the branch compiles away)
        NR[r, 2] = newkey
        # keep the chunk's minimum deficit a lower bound (``_dt_bucket``)
        cr = P0 + PH.shape[0] + ((r - P0) >> CHUNK_BITS)
        d = newkey - NR[r, 1]
        if d < NR[cr, 1]:
            NR[cr, 1] = d
    else:
        _set_key(NR, tt, r, slot, newkey)


@nb.njit(cache=True, inline="always")
def _cval(NR, PH, P0, u):
    """The exact counter of participant row u: a private piece's (row >= P0) is its row's base
    plus its chunk's tag (``_dt_bucket``)."""
    if PH.ndim == 1 and u >= P0:  # (a 2-D PH: no pieces, the branch compiles away)
        return NR[u, 1] + NR[P0 + PH.shape[0] + ((u - P0) >> CHUNK_BITS), 0]
    return NR[u, 1]


@nb.njit(cache=True, inline="always")
def _set_pay(NR, tt, PH, P0, r, slot, val):
    """Set an entry's payload (q << 32 | share): ``NR[r, 3]`` of a private piece, else its leaf."""
    if PH.ndim == 1 and r >= P0:  # (a 2-D PH: no pieces, the branch compiles away)
        NR[r, 3] = val
    else:
        tt[slot, 1] = val


@nb.njit(cache=True, inline="always")
def _remove_query(NR, tt, qn, qr, q, PH, P0):
    for j in range(qr[q, 3], qr[q + 1, 3]):
        _rekey(NR, tt, PH, P0, qn[j, 0], qn[j, 1], I64_MAX)


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
def remaining(NR, qn, qr, qalive, PH, P0):
    """For each local query, ``tgt - W`` where ``W = sum_{u in U_q} c(u)`` is its exact weight in
    this structure (the threshold reset of §4's global rebuilding and §5's merges)."""
    k = qalive.shape[0]
    out = np.zeros(k, np.int64)
    for q in range(k):
        if qalive[q]:
            S = np.int64(0)
            for j in range(qr[q, 3], qr[q + 1, 3]):
                S += _cval(NR, PH, P0, qn[j, 0])
            out[q] = qr[q, 0] - S
    return out
