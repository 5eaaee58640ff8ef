"""DT kernels: bucketed leaves of the last-dimension trees (d >= 2; a variant of paper 000 §6's
layered endpoint trees, to cut the entries per query h; 1D is not bucketed).

A last-dimension tree on the distinct keys K[0] < ... < K[L-1] of its queries' endpoints is cut
into *buckets* of consecutive keys holding at most B endpoints each (greedy, left to right; a key
with more than B endpoints forms a bucket alone); the tree is then built on the buckets' first
keys only (its leaves are the buckets). A query's key range [K[a], K[b]) is split into

* the buckets it covers completely: their canonical nodes in the reduced tree, as before;
* at most two *private* pieces: [K[a], end of a's bucket) if K[a] does not start its bucket, and
  [start of b's bucket, K[b]) if K[b] does not start its bucket (one piece [K[a], K[b]) if both
  lie in one bucket). A private piece is a participant of its own: a row of ``NR`` with its own
  counter (the weight of the elements of the piece's region since the build) and a queue of one
  entry, tracked like any node (§3.2/§7: exact counter, same signals and rounds).

An element that reaches bucket j of a tree (its reduced leaf) also bumps the counters of the
private pieces of j that contain it. Every private piece of a bucket comes from an endpoint of
that bucket that does not start it, so a bucket has at most B of them, and the regions of a
query's participants still partition its range (an element touches at most one of them).

Lazy counting by chunks. A bucket's pieces form three lists: *left* pieces [K[a],
end of the bucket) by lower key, pieces with *both* ends inside the bucket by lower key, *right*
pieces [first key of the bucket, K[b]) by upper key descending. The left pieces containing an
element x are a prefix of their list (lower key <= x), and so are the right ones (upper key >
x). Pieces are grouped into fixed *chunks* of 32 consecutive pieces (``CHUNK_BITS``; a chunk may
straddle lists and buckets), each with a tag row after the pieces (see Layout): its tag and a lower bound of
its minimum deficit key - base. A piece's exact counter is its row's base plus its chunk's
tag. An element adds its weight to the tag of every chunk lying wholly inside such a prefix and
to the base of every other containing piece (the rest of the prefix, and the both-ends pieces,
scanned up to the first lower key above x; a whole chunk of both-ends pieces below x is tagged if
all its upper keys are above x and skipped if none is); a tagged chunk is visited piece by piece only when
its tag reaches its minimum deficit (some piece may be due: fire those, recompute the minimum
exactly). A bound that is too low only costs a visit; re-keying a piece lowers the bound if
needed, so no due signal is missed. fig3 2D at m = 100k: ~1,580 piece updates per element (B =
2048) become ~60 tags / skips and ~150 bumps.

What changes in the bounds (per membership = a query in a last-dimension tree): the canonical
nodes below the bucket level (about log2 B, up to 2 log2 B) become at most 2 private pieces, so
h = O(log m (log(m/B) + 2)) entries per query in 2D; tree rows shrink by ~B; an element costs
O(log^d m + B log^(d-1) m) in the worst case (both-ends pieces are scanned; left and right
pieces cost O(B/32 + 32) per bucket plus O(32) per due chunk); the message bound O(h log tau) of
distributed tracking holds with the new h (the private pieces are participants with exact
counters).

Layout: the leaf rows of a bucketed tree keep ``p0 << 33 | nleft << 22 | nboth << 11 | nright`` in
column 0 (their split key is unused; B <= ``MAX_BUCKET`` = 2047): the bucket's private pieces
are p0 .. p0 + nleft + nboth + nright - 1, in the three lists above. Piece p is row ``P0 + p`` of
``NR``: (lower key, counter base, key of its one entry, entry payload ``q << 32 | share``), no
slot in the queue pool; its upper key is ``PH[p]`` (``INT64_MAX``: unbounded); chunk c is row
``P0 + NP + c`` (NP = number of pieces): (tag, minimum deficit bound, min and max upper key of
its pieces). 49 bytes per piece
with its ``qn`` entry (a canonical node entry costs ~28 plus its share of the node's row).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._dt_build import tree_layout
from ._dt_keys import CHUNK_BITS, I64_MAX, I64_MIN

#: pieces of one kind in one bucket must fit the 11-bit counts of a leaf row
MAX_BUCKET = 2047


@nb.njit(cache=True, nogil=True)
def bucketize(buf, boff, tL, mm, G, B):
    """Cut the G trees of the last dimension (keys ``buf[boff[g]:boff[g]+tL[g]]``, memberships
    ``mm`` with leaf ranges [a, b), b >= tL: unbounded, see ``level_sizes``) into buckets of at most
    B endpoints; rewrite every membership's range in ``mm[:, 0:2]`` to the buckets it covers
    completely (empty: [0, 0); unbounded: 2**H) and list its private pieces.

    Returns ``(buf2, tL2, tH2, tbase2, nrows2, pe, PL, PH, pstart, gb0, nleft, nboth)``: the reduced
    trees' keys (``buf2[gb0[g]:gb0[g+1]]``), sizes, heights, row offsets (from 0) and row count;
    ``pe[e]`` = the private pieces of membership e (-1 = none); ``PL``/``PH`` their key ranges [lo,
    hi), grouped by bucket: bucket j of tree g (x = gb0[g] + j) holds pieces ``pstart[x] ..
    pstart[x+1] - 1``, first its ``nleft[x]`` left pieces ([K[a], end of the bucket)) by lower key,
    then its ``nboth[x]`` pieces with both ends inside it by lower key, then its right pieces
    ([first key of the bucket, K[b])) by upper key, descending."""
    M = mm.shape[0]
    nb_ = boff[G]
    ec = np.zeros(nb_, np.int64)
    for e in range(M):
        g = mm[e, 2] >> 32
        s = boff[g]
        ec[s + mm[e, 0]] += 1
        if mm[e, 1] < tL[g]:
            ec[s + mm[e, 1]] += 1
    bidx = np.empty(nb_, np.int64)  # bucket of each leaf (within its tree)
    gb0 = np.empty(G + 1, np.int64)
    tot = 0
    for g in range(G):
        s = boff[g]
        gb0[g] = tot
        j = 0
        acc = 0
        for x in range(tL[g]):
            c = ec[s + x]
            if x > 0 and acc + c > B:
                j += 1
                acc = c
            else:
                acc += c
            bidx[s + x] = j
        tot += j + 1
    gb0[G] = tot
    first = np.empty(tot, np.int64)  # first leaf of each bucket
    buf2 = np.empty(tot, np.int64)
    for g in range(G):
        s = boff[g]
        prev = -1
        for x in range(tL[g]):
            j = bidx[s + x]
            if j != prev:
                first[gb0[g] + j] = x
                buf2[gb0[g] + j] = buf[s + x]
                prev = j
    tL2, tH2, tbase2, nrows = tree_layout(gb0[1:G + 1] - gb0[:G])
    # two passes over the memberships: count the pieces per bucket and leaf, then place them by a
    # counting sort: a bucket's left pieces by lower key, then its right pieces by upper key
    # descending (an element stops scanning each list at the first piece that cannot contain it)
    pstart = np.zeros(tot + 1, np.int64)
    pe = np.full((M, 2), -1, np.int64)
    PL = np.empty(0, np.int64)
    PH = np.empty(0, np.int64)
    nleft = np.zeros(tot, np.int64)
    nboth = np.zeros(tot, np.int64)
    lc = ec  # per leaf: left pieces starting there, then the next slot for them
    lc[:] = 0
    lb = np.zeros(nb_, np.int64)  # per leaf: pieces with both ends in the bucket starting there
    rc = np.zeros(nb_, np.int64)  # per leaf: right pieces ending there, then the next slot
    for pas in range(2):
        if pas == 1:
            for x in range(tot):
                pstart[x + 1] += pstart[x]
            PL = np.empty(pstart[tot], np.int64)
            PH = np.empty(pstart[tot], np.int64)
            for g in range(G):
                s = boff[g]
                b0 = gb0[g]
                pos = np.int64(0)
                pos2 = np.int64(0)
                for x in range(tL[g]):
                    if first[b0 + bidx[s + x]] == x:
                        pos = pstart[b0 + bidx[s + x]]
                        pos2 = pos + nleft[b0 + bidx[s + x]]
                    c = lc[s + x]
                    lc[s + x] = pos
                    pos += c
                    c = lb[s + x]
                    lb[s + x] = pos2
                    pos2 += c
                prev = -1
                for x in range(tL[g] - 1, -1, -1):
                    j = bidx[s + x]
                    if j != prev:
                        pos = pstart[b0 + j] + nleft[b0 + j] + nboth[b0 + j]
                        prev = j
                    c = rc[s + x]
                    rc[s + x] = pos
                    pos += c
        for e in range(M):
            g = mm[e, 2] >> 32
            s = boff[g]
            L = tL[g]
            L2 = tL2[g]
            b0 = gb0[g]
            a = mm[e, 0]
            b = mm[e, 1]
            unb = b >= L
            ja = bidx[s + a]
            astart = first[b0 + ja] == a
            fa = ja if astart else ja + 1
            jb = L2 if unb else bidx[s + b]
            fb = jb
            left = not astart
            right = (not unb) and first[b0 + jb] != b and not (jb == ja and left)
            both = left and (not unb) and jb == ja
            if pas == 0:
                if both:
                    pstart[b0 + ja + 1] += 1
                    nboth[b0 + ja] += 1
                    lb[s + a] += 1
                elif left:
                    pstart[b0 + ja + 1] += 1
                    nleft[b0 + ja] += 1
                    lc[s + a] += 1
                if right:
                    pstart[b0 + jb + 1] += 1
                    rc[s + b] += 1
                continue
            if both:
                p = lb[s + a]
                lb[s + a] = p + 1
                PL[p] = buf[s + a]
                PH[p] = buf[s + b]
                pe[e, 0] = p
            elif left:
                p = lc[s + a]
                lc[s + a] = p + 1
                PL[p] = buf[s + a]
                PH[p] = buf2[b0 + ja + 1] if ja + 1 < L2 else I64_MAX
                pe[e, 0] = p
            if right:
                p = rc[s + b]
                rc[s + b] = p + 1
                PL[p] = buf2[b0 + jb]
                PH[p] = buf[s + b]
                pe[e, 1] = p
            if fa < fb:
                mm[e, 0] = fa
                mm[e, 1] = (np.int64(1) << tH2[g]) if unb else fb
            else:
                mm[e, 0] = 0
                mm[e, 1] = 0
    return buf2, tL2, tH2, tbase2, nrows, pe, PL, PH, pstart, gb0, nleft, nboth


@nb.njit(cache=True, nogil=True)
def link_buckets(NR, P0, tbase, tL, tH, pstart, gb0, PL, PH, nleft, nboth):
    """After ``level_fill`` of the reduced trees (``tbase`` absolute): write ``p0 << 33 | nleft <<
    22 | nboth << 11 | nright`` into column 0 of every leaf row (the bucket's private pieces, each
    count < 2**11), initialise the private rows ``NR[P0:P0 + NP]`` (lower key ``PL``, counter 0, no
    entry yet) and the chunk rows after them (tag 0, min and max upper key of the chunk's pieces;
    their minimum deficit is set by :func:`chunk_mins` once the keys are known)."""
    G = tL.shape[0]
    for g in range(G):
        L = tL[g]
        H = tH[g]
        off = 0
        for t in range(H):
            off += ((L - 1) >> (H - t)) + 1
        for j in range(L):
            x = gb0[g] + j
            nr = pstart[x + 1] - pstart[x] - nleft[x] - nboth[x]
            NR[tbase[g] + off + j, 0] = (pstart[x] << 33) | (nleft[x] << 22) | (nboth[x] << 11) | nr
    NP = PL.shape[0]
    for r in range(P0, P0 + NP):
        NR[r, 0] = PL[r - P0]
        NR[r, 1] = 0
        NR[r, 2] = I64_MAX
        NR[r, 3] = 0
    for r in range(P0 + NP, NR.shape[0]):
        NR[r, 0] = 0
        NR[r, 1] = I64_MIN
        NR[r, 2] = I64_MAX
        NR[r, 3] = I64_MIN
    for p in range(NP):
        r = P0 + NP + (p >> CHUNK_BITS)
        NR[r, 2] = min(NR[r, 2], PH[p])
        NR[r, 3] = max(NR[r, 3], PH[p])


@nb.njit(cache=True, nogil=True)
def fold_tags(NR, P0, NP):
    """Add every chunk's tag to its pieces' counters and clear it (the counters become plain)."""
    CR = P0 + NP
    for p in range(NP):
        NR[P0 + p, 1] += NR[CR + (p >> CHUNK_BITS), 0]
    for r in range(CR, NR.shape[0]):
        NR[r, 0] = 0


@nb.njit(cache=True, nogil=True)
def chunk_mins(NR, P0, NP):
    """Set every chunk's minimum deficit ``min (key - counter base)`` over its pieces (exact)."""
    CR = P0 + NP
    for r in range(CR, NR.shape[0]):
        NR[r, 1] = I64_MAX
    for p in range(NP):
        d = NR[P0 + p, 2] - NR[P0 + p, 1]
        cr = CR + (p >> CHUNK_BITS)
        if d < NR[cr, 1]:
            NR[cr, 1] = d
