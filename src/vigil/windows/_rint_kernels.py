"""Numba kernels of R-INT (paper 002, §3.2, Fig. 6; §5 circular array): running sums kept as
double-double (hi, lo) pairs so that a window sum P(b) - P(a-1) does not lose the digits the
running sum's magnitude would otherwise swallow (exact for integers while |P| < 2^106)."""

from __future__ import annotations

import numba
import numpy as np

from ._window_kernels import ring_write, window_bounds


@numba.njit(cache=True, nogil=True)
def rint_push(p_hi, p_lo, p_cnt, mask, pos0, vals):
    """UPDATE(a_{m+1}) for every value: f(1, m+1) from f(1, m) and a_{m+1} (Fig. 6, step 1).
    The slot of position p is overwritten, which discards f(1, p - cap) (step 2)."""
    i0 = pos0 & mask
    hi = p_hi[i0]
    lo = p_lo[i0]
    c = p_cnt[i0]
    for j in range(len(vals)):
        v = vals[j]
        if v == v:
            s = hi + v  # TwoSum(hi, v)
            bb = s - hi
            e = (hi - (s - bb)) + (v - bb)
            lo += e
            hi = s + lo  # FastTwoSum renormalization
            lo = lo - (hi - s)
            c += 1
        i = (pos0 + 1 + j) & mask
        p_hi[i] = hi
        p_lo[i] = lo
        p_cnt[i] = c


@numba.njit(cache=True, nogil=True)
def rint_lookup(qids, n, t_now, time_based, code, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq,
                p_hi, p_lo, p_cnt, out):
    """LOOKUP(l, r) = f(1, r) - f(1, l - 1) (Fig. 6) for every qid: O(1) each (plus the O(log N)
    bound search only when seqs have gaps or the window is time-based)."""
    for k in range(len(qids)):
        a, b = window_bounds(qids[k], n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m,
                             last_seq)
        if a > b:
            out[k] = 0.0 if code == 1 else np.nan
            continue
        ib = b & mask
        ia = (a - 1) & mask
        cnt = p_cnt[ib] - p_cnt[ia]
        if code == 1:
            out[k] = cnt
            continue
        if cnt == 0:
            out[k] = np.nan
            continue
        x = p_hi[ib]
        y = -p_hi[ia]
        s = x + y
        bb = s - x
        e = (x - (s - bb)) + (y - bb)
        e += p_lo[ib] - p_lo[ia]
        tot = s + e
        out[k] = tot / cnt if code == 2 else tot


@numba.njit(cache=True, nogil=True)
def rint_push_lookup(p_hi, p_lo, p_cnt, seqs, vals, mask, floor, m, last_seq, s_in, v_in, cuts, ns, starts, qids,
                     code, q_left, q_right, q_start, out):
    """Rows windows: elements ``s_in``/``v_in`` pushed in turn up to each lookup position ``c``
    (the first ``cuts[c]`` of them, ``ns[c]`` its seq) and the queries ``qids[starts[c]:starts[c+1]]``
    answered there, as ``push`` then ``rint_lookup`` per position would (the caller checks that no
    push would have resized the rings). Returns (m, last_seq) after the last element pushed."""
    half = (mask + 1) >> 1
    fed = 0
    for c in range(len(cuts)):
        e = cuts[c]
        if e > fed:
            ring_write(seqs, seqs, vals, mask, m, s_in[fed:e], s_in[fed:e], v_in[fed:e], False)
            rint_push(p_hi, p_lo, p_cnt, mask, m, v_in[fed:e])
            m += e - fed
            last_seq = s_in[e - 1]
            fed = e
        V = max(floor, m - half + 1, 1)
        ends = starts[c + 1]
        rint_lookup(qids[starts[c]:ends], ns[c], np.nan, False, code, q_left, q_right, q_start, seqs, seqs, mask,
                    V, m, last_seq, p_hi, p_lo, p_cnt, out[starts[c]:ends])
    if fed < len(v_in):
        e = len(v_in)
        ring_write(seqs, seqs, vals, mask, m, s_in[fed:e], s_in[fed:e], v_in[fed:e], False)
        rint_push(p_hi, p_lo, p_cnt, mask, m, v_in[fed:e])
        m += e - fed
        last_seq = s_in[e - 1]
    return m, last_seq
