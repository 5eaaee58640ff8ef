"""Numba kernels of R-INT (paper 002, §3.2, Fig. 6; §5 circular array): running sums kept as
double-double (hi, lo) pairs so that a window sum P(b) - P(a-1) does not lose the digits the
running sum's magnitude would otherwise swallow (exact for integers while |P| < 2^106)."""

from __future__ import annotations

import numba
import numpy as np

from ._window_kernels import window_bounds


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
