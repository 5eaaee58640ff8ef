"""Numba kernels shared by the windows family's ring-based operators (paper 002, §5: "all of our
algorithms permit an implementation that uses simple arrays").

Layout shared by every ring operator (:mod:`vigil.windows._window_base`):

* local positions 1, 2, ..., m count the elements pushed to the operator; position ``p`` lives in
  slot ``p & mask`` of every ring (``cap = mask + 1`` a power of two);
* ``seqs`` (int64) and ``times`` (float64, time windows only) rings give each position its stream
  seq and time; ``vals`` (float64) its value (NaN = SQL NULL);
* only positions ``V..m`` are valid (``V = max(floor, m - cap/2 + 1)``): a structure is always sized
  so that every window of every alive query lies in ``V..m``.

Window bounds of a query (:func:`window_bounds`): rows ``[NL, NR]`` after element n = seqs in
``[max(n-NL+1, start+1), n-NR]``; time ``[TL, TR]`` = times in ``(t_now-TL, t_now-TR]`` with
``start < seq <= n``. Each bound is found in O(1) when seqs have no gap (checked once per bound from the first and last
valid seqs, which stay in cache: the position is the seq distance; with gaps the position is
guessed from the seq distance and checked), otherwise by binary search over the ring: O(log N_max).
"""

from __future__ import annotations

import numba
import numpy as np

AGG_CODE = {"sum": 0, "count": 1, "avg": 2, "min": 3, "max": 4, "quantile": 5}


@numba.njit(cache=True, nogil=True)
def first_seq_ge(seqs, mask, V, m, last_seq, s):
    """First valid position whose seq >= s (m + 1 if none)."""
    if V > m or last_seq < s:
        return m + 1
    s_v = seqs[V & mask]
    if last_seq - s_v == m - V:  # no seq gap in V..m: position = V + seq distance, no random read
        return V if s <= s_v else V + (s - s_v)
    g = m - (last_seq - s)
    if g >= V and seqs[g & mask] == s:
        return g
    if seqs[V & mask] >= s:
        return V
    lo = V
    hi = m  # seqs[lo] < s <= seqs[hi]
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if seqs[mid & mask] >= s:
            hi = mid
        else:
            lo = mid
    return hi


@numba.njit(cache=True, nogil=True)
def first_time_gt(times, mask, V, m, t):
    """First valid position whose time > t (m + 1 if none); times are non-decreasing."""
    if V > m or not (times[m & mask] > t):
        return m + 1
    if times[V & mask] > t:
        return V
    lo = V
    hi = m
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if times[mid & mask] > t:
            hi = mid
        else:
            lo = mid
    return hi


@numba.njit(cache=True, nogil=True)
def window_bounds(q, n, t_now, time_based, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq):
    """(a, b): the valid positions of query q's window after element n (empty when a > b)."""
    st = q_start[q]
    if time_based:
        if t_now != t_now:
            return V, V - 1
        a = first_time_gt(times, mask, V, m, t_now - q_left[q])
        b = first_time_gt(times, mask, V, m, t_now - q_right[q]) - 1
        a2 = first_seq_ge(seqs, mask, V, m, last_seq, st + 1)
        if a2 > a:
            a = a2
        b2 = first_seq_ge(seqs, mask, V, m, last_seq, n + 1) - 1
        if b2 < b:
            b = b2
        return a, b
    lo = n - np.int64(q_left[q]) + 1
    if lo < st + 1:
        lo = st + 1
    a = first_seq_ge(seqs, mask, V, m, last_seq, lo)
    b = first_seq_ge(seqs, mask, V, m, last_seq, n - np.int64(q_right[q]) + 1) - 1
    return a, b


@numba.njit(cache=True, nogil=True)
def ring_write(seqs, times, vals, mask, pos0, s_in, t_in, v_in, time_based):
    """Write elements at positions pos0+1 .. pos0+k into the seq/time/value rings."""
    k = len(v_in)
    start = 0
    if k > mask + 1:  # only the last cap elements survive
        start = k - (mask + 1)
    for j in range(start, k):
        i = (pos0 + 1 + j) & mask
        seqs[i] = s_in[j]
        vals[i] = v_in[j]
        if time_based:
            times[i] = t_in[j]


@numba.njit(cache=True, nogil=True)
def time_need(times, mask, V, m, t_cut):
    """How many of the last valid positions have time > t_cut (what a time window can still use)."""
    return m + 1 - first_time_gt(times, mask, V, m, t_cut)


@numba.njit(cache=True, nogil=True)
def quantile_rank(phi, num, den, cnt):
    """The contract's rank max(1, ceil(phi*cnt)) (``vigil.arrays.quantile_rank``, phi read as a decimal),
    given (num, den) = ``vigil.arrays.rank_fraction(phi)``: exact for every cnt <= 2^47 (tests compare
    it with the helper); beyond, or without a fraction (den <= 0), ceil(phi*cnt) in float64."""
    if cnt <= 0:
        return 0
    if cnt == 1:
        return 1  # phi in (0, 1]
    if den > 0 and num <= 2147483648 and cnt < 4294967296:  # num*cnt < 2^63: one exact division
        p = num * cnt
        r = p // den
        if r * den < p:
            r += 1
    elif den > 0 and cnt <= 140737488355328:  # cnt <= 2^47, den < 2^61
        # q ~ floor(num*cnt/den) from the float product (off by at most 1 for cnt <= 2^47); the
        # remainder num*cnt - q*den lies in (-2 den, 3 den), inside int64, so computing it modulo
        # 2^64 (unsigned, wrapping) gives it exactly; then fix q until 0 <= rem < den
        q = np.int64(np.floor(phi * cnt))
        rem = np.int64(np.uint64(num) * np.uint64(cnt) - np.uint64(q) * np.uint64(den))
        while rem < 0:
            q -= 1
            rem += den
        while rem >= den:
            q += 1
            rem -= den
        r = q + 1 if rem > 0 else q
    else:
        r = np.int64(np.ceil(phi * cnt))
    if r < 1:
        r = 1
    if r > cnt:
        r = cnt
    return r


@numba.njit(cache=True, nogil=True)
def first_dead(qids, q_alive):
    """Index of the first qid that is not an alive query (-1 if all are)."""
    n = len(q_alive)
    for k in range(len(qids)):
        q = qids[k]
        if q < 0 or q >= n or not q_alive[q]:
            return k
    return -1


@numba.njit(cache=True, nogil=True)
def seqs_increasing(s, last):
    """Are the seqs strictly increasing and all > last?"""
    prev = last
    for k in range(len(s)):
        if s[k] <= prev:
            return False
        prev = s[k]
    return True
