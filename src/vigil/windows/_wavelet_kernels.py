"""Numba kernels of ``wavelet_qnt`` (:mod:`vigil.windows.wavelet_qnt`): blocked wavelet matrices
over the value ring, and a branch-free sorting-network selection for windows of <= 16 elements.

Wavelet matrix (Claude, Navarro, Ordonez, "The wavelet matrix", SPIRE 2012 / Inf. Syst. 2015) over
one block of S = 2^L positions whose symbols are the block's *local ranks* (code = rank of the
value in the block, ties by position, NULLs last: S distinct codes, L levels). Level l (MSB first)
keeps the bitmap of its 0 bits in 64-bit words, each word paired with the count of 0 bits before
it (rank0 = one count + one POPCNT, both in one cache line; 2 bits per position and level, so a
scale over N_max = 1e5 positions takes ~0.5 MB and stays in L2); the next level's sequence is the
stable partition zeros first. The k-th smallest code in positions [lo, hi) is the range-quantile walk of Gagie, Navarro
and Puglisi ("New algorithms on wavelet trees and applications to information retrieval", TCS
2012, §3 range quantile): per level, zeros = Z[l][hi] - Z[l][lo]; go left if k < zeros, else right
with k -= zeros: O(L) reads. The code is turned back into the value by the block's sorted values.

Block storage of one scale: ``nb`` block slots (a power of two), slot = block index & (nb - 1);
``z`` holds nb * L * row_words(L) uint64, ``sv`` nb * S float64 (sorted values), ``tag[slot]`` = the
block index i built in the slot as 2 i + (1 if the block holds a NULL) (-1 = none), so a lookup
knows whether its block is there and, when the block has no NULL, that its count is its width.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from ._bint_qnt_kernels import _nonnull, select_kth
from ._sort_networks import sort2, sort4, sort6, sort8, sort10, sort12, sort14, sort16
from ._window_kernels import quantile_rank, window_bounds

SMALL_MAX = 16  # the branch-free selection pads to 8 or 16 values


@intrinsic
def _popcount(typingctx, x):
    """LLVM ctpop on a uint64 (one POPCNT instruction)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


def row_words(L: int) -> int:
    """uint64 words of one level of a block of 2^L positions: (S/64 + 1) (count, bits) pairs."""
    return 2 * (((1 << L) >> 6) + 1)


@numba.njit(cache=True, nogil=True, inline="always")
def _rank0(z, base, x):
    """Zeros among the first x symbols of the level row at z[base:]: the count before x's word
    plus a popcount in that word (both in one 16-byte pair: one cache line)."""
    i = base + 2 * (x >> 6)
    msk = (np.uint64(1) << np.uint64(x & 63)) - np.uint64(1)
    return np.int64(z[i]) + np.int64(_popcount(z[i + 1] & msk))


@numba.njit(cache=True, nogil=True, inline="always")
def _rank(rw, phi, num, den, cnt):
    """quantile_rank(phi, cnt), from the query's precomputed (width << 32 | rank) when cnt is its
    full width (no 64-bit division on the common path)."""
    if (rw >> 32) == cnt:
        return rw & 0xFFFFFFFF
    return quantile_rank(phi, num, den, cnt)


@numba.njit(cache=True, nogil=True)
def small_select(vals, mask, a, b, phi, num, den, rw, buf):
    """The phi-quantile of the non-null values at ring positions a..b (b - a < 16; NaN if none):
    loaded into scalars, padded to an even count P (2 .. 16) with +inf and sorted by a fixed
    network (:mod:`vigil.windows._sort_networks`: straight-line min/max, no data-dependent
    branch), then slot rank-1 read. Measured faster here than quickselect and than rank counting (selection of
    10 values: ~20 ns by odd-even transposition, 100-190 ns by the others)."""
    n = b - a + 1
    if n == 1:
        return vals[a & mask]
    if n <= 8:
        if n <= 4:
            c = sort2(vals, mask, a, n, buf) if n == 2 else sort4(vals, mask, a, n, buf)
        else:
            c = sort6(vals, mask, a, n, buf) if n <= 6 else sort8(vals, mask, a, n, buf)
    elif n <= 12:
        c = sort10(vals, mask, a, n, buf) if n <= 10 else sort12(vals, mask, a, n, buf)
    else:
        c = sort14(vals, mask, a, n, buf) if n <= 14 else sort16(vals, mask, a, n, buf)
    if c == 0:
        return np.nan
    return buf[_rank(rw, phi, num, den, c) - 1]


@numba.njit(cache=True, nogil=True)
def wm_build(x, L, z, zoff, sv, svoff, cur, nxt):
    """Build one block's wavelet matrix over the S = 2^L values x (NaN = NULL, sorted last) into
    z[zoff : zoff + L * row_words(L)] (per level: for each 64 positions the zeros before them and
    the bitmap of zeros, then the total) and its sorted values into sv[svoff : svoff + S].
    O(S log S)."""
    S = 1 << L
    order = np.argsort(x, kind="mergesort")  # NaN last, ties by position
    for r in range(S):
        cur[order[r]] = r
        sv[svoff + r] = x[order[r]]
    R = 2 * ((S >> 6) + 1)
    for lev in range(L):
        sh = L - 1 - lev
        base = zoff + lev * R
        for w in range(R):
            z[base + w] = 0
        zc = 0
        for i in range(S):
            if i & 63 == 0:
                z[base + 2 * (i >> 6)] = zc
            if ((cur[i] >> sh) & 1) == 0:
                z[base + 2 * (i >> 6) + 1] |= np.uint64(1) << np.uint64(i & 63)
                zc += 1
        if S >= 64:  # the closing pair: the total (S < 64: the one pair holds all the bits)
            z[base + 2 * (S >> 6)] = zc
        o0 = 0
        o1 = zc
        for i in range(S):
            c = cur[i]
            if (c >> sh) & 1:
                nxt[o1] = c
                o1 += 1
            else:
                nxt[o0] = c
                o0 += 1
        for i in range(S):
            cur[i] = nxt[i]


@numba.njit(cache=True, nogil=True)
def wm_push(vals_in, pos0, ring, mask, floor, sc_exp, sc_nb, sc_zoff, sc_svoff, sc_toff, z, sv, tag, nn):
    """After ring positions pos0+1 .. pos0+k were written: extend the non-null prefix counts ``nn``
    and build, in every scale, each block [i*H, i*H + 2H) (H = S/2) whose last position arrived in
    this push and whose first position is >= floor and still readable. O(L) per element and scale."""
    k = len(vals_in)
    if pos0 < floor:
        nn[pos0 & mask] = 0
    c = nn[pos0 & mask]
    for j in range(k):
        y = vals_in[j]
        c += y == y
        nn[(pos0 + 1 + j) & mask] = c
    cap = mask + 1
    lo_ok = pos0 + k - cap + 1  # positions <= pos0 below this were overwritten by this push
    if lo_ok < floor:
        lo_ok = floor
    for s in range(len(sc_exp)):
        L = sc_exp[s]
        S = 1 << L
        h = L - 1
        H = 1 << h
        nb = sc_nb[s]
        x = np.empty(S, np.float64)
        cur = np.empty(S, np.int64)
        nxt = np.empty(S, np.int64)
        # blocks i with end e = i*H + S - 1 in (pos0, pos0 + k]
        i0 = (pos0 + 1 - S + 1 + H - 1) >> h
        if i0 < 0:
            i0 = 0
        i1 = (pos0 + k - S + 1) >> h
        for i in range(i0, i1 + 1):
            st = i << h
            if st < lo_ok or st + S - 1 > pos0 + k:
                continue
            for t in range(S):
                p = st + t
                x[t] = vals_in[p - pos0 - 1] if p > pos0 else ring[p & mask]
            slot = i & (nb - 1)
            wm_build(x, L, z, sc_zoff[s] + slot * L * (2 * ((S >> 6) + 1)), sv, sc_svoff[s] + slot * S, cur, nxt)
            top = sv[sc_svoff[s] + slot * S + S - 1]  # the largest value: NaN iff the block holds a NULL
            tag[sc_toff[s] + slot] = (i << 1) + (0 if top == top else 1)


@numba.njit(cache=True, nogil=True)
def _pieces_select(a, b, r, lq, cap, mask, lo, hi, less, leq, mv, mw, tmp):
    """B-INT-QNT: decompose positions (a, b) into base-intervals, bottom-up, and select the r-th
    smallest (1-based) over their sorted non-null pieces (§3.3)."""
    x0 = a - 1
    x1 = b
    lev = 0
    p = 0
    while x0 < x1:
        if x0 & 1:
            s0 = lev * cap + ((x0 << lev) & mask)
            e = _nonnull(lq, s0, s0 + (1 << lev))
            if e > s0:
                lo[p] = s0
                hi[p] = e
                p += 1
            x0 += 1
        if x1 & 1:
            x1 -= 1
            s0 = lev * cap + ((x1 << lev) & mask)
            e = _nonnull(lq, s0, s0 + (1 << lev))
            if e > s0:
                lo[p] = s0
                hi[p] = e
                p += 1
        x0 >>= 1
        x1 >>= 1
        lev += 1
    return select_kth(lq, lo, hi, p, r, mv, mw, less, leq, tmp)


G = 16  # wavelet walks processed together: their independent memory reads overlap


@numba.njit(cache=True, nogil=True)
def _small_pass(qids, n, t_now, time_based, q_left, q_right, q_start, q_phi, q_num, q_den, q_rw, seqs, times, mask,
                V, m, last_seq, vals, direct, out, dk, da, db):
    """First pass: every lookup's bounds; empty windows and windows of <= direct elements are
    answered here (a tight loop), the others are deferred to (dk, da, db). Returns their number."""
    buf = np.empty(16, np.float64)
    nd = 0
    for kq in range(len(qids)):
        q = qids[kq]
        a, b = window_bounds(q, n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq)
        if a > b:
            out[kq] = np.nan
        elif b - a < direct:
            out[kq] = small_select(vals, mask, a, b, q_phi[q], q_num[q], q_den[q], q_rw[q], buf)
        else:
            dk[nd] = kq
            da[nd] = a
            db[nd] = b
            nd += 1
    return nd


@numba.njit(cache=True, nogil=True)
def wq_lookup(qids, n, t_now, time_based, q_left, q_right, q_start, q_phi, q_num, q_den, q_rw, seqs, times, mask,
              V, m, last_seq, lq, cap, vals, direct, nn, sc_exp, sc_nb, sc_zoff, sc_svoff, sc_toff, z, sv, tag, out):
    """QUANTILE LOOKUP of every qid, routed per lookup by the window's width W:
    W <= direct: a sorting network over the raw ring values (:func:`small_select`); else the
    smallest scale with W <= S/2 + 1 whose block floor(a / (S/2)) is built: the wavelet-matrix
    range-quantile walk (O(L) reads); else B-INT-QNT's selection over sorted base-interval pieces.
    A first pass answers the small windows (specialized for rows / time windows); the others go
    in groups of G: route first, then the group's wavelet walks level by level in lockstep."""
    nq = len(qids)
    dk = np.empty(nq, np.int64)
    da = np.empty(nq, np.int64)
    db = np.empty(nq, np.int64)
    if time_based:
        nd = _small_pass(qids, n, t_now, True, q_left, q_right, q_start, q_phi, q_num, q_den, q_rw, seqs, times,
                         mask, V, m, last_seq, vals, direct, out, dk, da, db)
    else:
        nd = _small_pass(qids, n, t_now, False, q_left, q_right, q_start, q_phi, q_num, q_den, q_rw, seqs, times,
                         mask, V, m, last_seq, vals, direct, out, dk, da, db)
    if nd == 0:
        return
    lo = np.empty(128, np.int64)
    hi = np.empty(128, np.int64)
    less = np.empty(128, np.int64)
    leq = np.empty(128, np.int64)
    mv = np.empty(128, np.float64)
    mw = np.empty(128, np.int64)
    tmp = np.empty(520, np.float64)
    g_k = np.empty(G, np.int64)  # output index
    g_x0 = np.empty(G, np.int64)
    g_x1 = np.empty(G, np.int64)
    g_r = np.empty(G, np.int64)
    g_base = np.empty(G, np.int64)
    g_L = np.empty(G, np.int64)
    g_S = np.empty(G, np.int64)
    g_code = np.empty(G, np.int64)
    g_sv = np.empty(G, np.int64)
    ns = len(sc_exp)
    for c0 in range(0, nd, G):
        c1 = min(nd, c0 + G)
        ng = 0
        maxL = 0
        for j in range(c0, c1):
            kq = dk[j]
            q = qids[kq]
            a = da[j]
            b = db[j]
            w = b - a + 1
            routed = False
            for s in range(ns):
                L = sc_exp[s]
                h = L - 1
                if w > (1 << h) + 1:
                    continue
                i = a >> h
                slot = i & (sc_nb[s] - 1)
                t = tag[sc_toff[s] + slot]
                if (t >> 1) == i:
                    cnt = w if (t & 1) == 0 else nn[b & mask] - nn[(a - 1) & mask]  # no NULL in the block
                    if cnt == 0:
                        out[kq] = np.nan
                        routed = True
                        break
                    r = _rank(q_rw[q], q_phi[q], q_num[q], q_den[q], cnt) - 1
                    S = 1 << L
                    g_k[ng] = kq
                    g_x0[ng] = a - (i << h)
                    g_x1[ng] = b + 1 - (i << h)
                    g_r[ng] = r
                    g_base[ng] = sc_zoff[s] + slot * L * (2 * ((S >> 6) + 1))
                    g_L[ng] = L
                    g_S[ng] = S
                    g_code[ng] = 0
                    g_sv[ng] = sc_svoff[s] + slot * S
                    if L > maxL:
                        maxL = L
                    ng += 1
                    routed = True
                break
            if not routed:
                cnt = nn[b & mask] - nn[(a - 1) & mask]
                if cnt == 0:
                    out[kq] = np.nan
                    continue
                r = quantile_rank(q_phi[q], q_num[q], q_den[q], cnt)
                out[kq] = _pieces_select(a, b, r, lq, cap, mask, lo, hi, less, leq, mv, mw, tmp)
        for lev in range(maxL):
            for g in range(ng):
                L = g_L[g]
                if lev >= L:
                    continue
                S = g_S[g]
                base = g_base[g]
                x0 = g_x0[g]
                x1 = g_x1[g]
                zl = _rank0(z, base, x0)
                zr = _rank0(z, base, x1)
                tz = _rank0(z, base, S)
                zs = zr - zl
                kk = g_r[g]
                d = np.int64(kk >= zs)  # 1: the k-th code has this bit set (branch-free step)
                g_r[g] = kk - d * zs
                g_x0[g] = zl + d * (tz + x0 - zl - zl)
                g_x1[g] = zr + d * (tz + x1 - zr - zr)
                g_code[g] = (g_code[g] << 1) | d
                g_base[g] = base + 2 * ((S >> 6) + 1)
        for g in range(ng):
            out[g_k[g]] = sv[g_sv[g] + g_code[g]]
