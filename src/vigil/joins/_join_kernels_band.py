"""numba kernels of the band-join strategies (paper 003 §3.1), over a batch of arriving tuples.

The stored side is an ascending key array K with seqs KS. An arriving tuple i has offset c[i]
such that the band difference with stored tuple k is d = K[k] + c[i] (arriving r with key b:
K = S.B ascending, c = -b, d = s.B - b; arriving s with key b': K = -R.B ascending, c = b',
d = b' - r.B); d is nondecreasing in k (float rounding is monotone), so every range search is a
binary search on d. A query j matches tuple k when lo_j <= d <= hi_j.

Output (modes 0 pairs / 1 affected / 2 count): arrays (qid, arriving index, stored seq or -1)
written in place (put_range; run_fixed reruns with room on overflow), and the number of result
pairs (mode 2 counts without materialising); the kernels return (records, count).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def lb(K, c, v, a, b):
    """First k in [a, b) with K[k] + c >= v (b if none)."""
    while a < b:
        m = (a + b) >> 1
        if K[m] + c < v:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, nogil=True, inline="always")
def ub(K, c, v, a, b):
    """First k in [a, b) with K[k] + c > v (b if none)."""
    while a < b:
        m = (a + b) >> 1
        if K[m] + c <= v:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, nogil=True)
def grow(a, n):
    if n < len(a):
        return a
    b = np.empty(max(2 * len(a), n + 1), a.dtype)
    b[: len(a)] = a
    return b


@numba.njit(cache=True, nogil=True)
def _emit_range(oq, oi, oo, n, qid, i, KS, a, b):
    """Append (qid, i, KS[k]) for k in [a, b)."""
    need = n + (b - a)
    if need > len(oq):
        oq = grow(oq, need)
        oi = grow(oi, need)
        oo = grow(oo, need)
    for k in range(a, b):
        oq[n] = qid
        oi[n] = i
        oo[n] = KS[k]
        n += 1
    return oq, oi, oo, n


@numba.njit(cache=True, nogil=True)
def _emit_one(oq, oi, oo, n, qid, i):
    if n >= len(oq):
        oq = grow(oq, n + 1)
        oi = grow(oi, n + 1)
        oo = grow(oo, n + 1)
    oq[n] = qid
    oi[n] = i
    oo[n] = -1
    return oq, oi, oo, n + 1


@numba.njit(cache=True, nogil=True, inline="always")
def put_range(oq, oi, oo, n, qid, i, KS, a, b):
    """Write (qid, i, KS[k]) for k in [a, b) at n while the arrays have room; returns n + b - a
    (records beyond the capacity are counted, not written: the caller reruns with room). No
    array is reassigned inside the kernels' loops (numba refcounts a reassigned array at every
    loop iteration, which cost SJ-SSI more than its whole probe)."""
    for k in range(a, b):
        if n < len(oq):
            oq[n] = qid
            oi[n] = i
            oo[n] = KS[k]
        n += 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def put_one(oq, oi, oo, n, qid, i):
    if n < len(oq):
        oq[n] = qid
        oi[n] = i
        oo[n] = -1
    return n + 1




def _out():
    return np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)


def run_fixed(kernel, args, mode, plan):
    """Call a kernel that writes into fixed output arrays (put_range) and returns (records,
    count); rerun once with exact room if they overflowed. ``plan.cap`` remembers the size."""
    if mode == 2:
        z = np.empty(0, np.int64)
        return z, z, z, kernel(*args, mode, z, z, z)[1]
    cap = getattr(plan, "cap", 256)
    while True:
        oq, oi, oo = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64)
        n, cnt = kernel(*args, mode, oq, oi, oo)
        if n <= cap:
            plan.cap = max(256, min(cap, 2 * n))
            return oq[:n], oi[:n], oo[:n], cnt
        cap = n


@numba.njit(cache=True, nogil=True)
def bj_ssi(K, KS, cs, P, GOFF, GN, L_lo, L_id, R_hi, R_id, mode, oq, oi, oo):
    """BJ-SSI (§3.1.2, Fig. 4): per group g, locate d >= P[g] (one binary search), scan the
    group's ranges by decreasing right endpoint while hi >= d(pos) (affected on the right) and
    by increasing left endpoint while lo <= d(pos-1) (affected on the left), then walk K outward
    from pos for each affected range. Group g's ranges are entries [GOFF[g], GOFF[g] + GN[g]) of
    L (by lo ascending) and R (by hi descending), groups in increasing point order.
    O(tau log m + k) per arriving tuple."""
    m = len(K)
    n = 0
    cnt = 0
    for i in range(len(cs)):
        c = cs[i]
        pos = 0
        for g in range(len(P)):
            pos = lb(K, c, P[g], pos, m)  # points ascending: positions move right
            if pos < m:
                d2 = K[pos] + c
                for j in range(GOFF[g], GOFF[g] + GN[g]):
                    hi = R_hi[j]
                    if hi < d2:
                        break
                    e = ub(K, c, hi, pos, m)
                    if mode == 2:
                        cnt += e - pos
                    elif mode == 1:
                        n = put_one(oq, oi, oo, n, R_id[j], i)
                    else:
                        n = put_range(oq, oi, oo, n, R_id[j], i, KS, pos, e)
            if pos > 0:
                d1 = K[pos - 1] + c
                for j in range(GOFF[g], GOFF[g] + GN[g]):
                    lo = L_lo[j]
                    if lo > d1:
                        break
                    s = lb(K, c, lo, 0, pos)
                    if mode == 2:
                        cnt += pos - s
                    elif mode == 1:
                        n = put_one(oq, oi, oo, n, L_id[j], i)
                    else:
                        n = put_range(oq, oi, oo, n, L_id[j], i, KS, s, pos)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def bj_qouter(K, KS, cs, Qlo, Qhi, Qid, mode, oq, oi, oo):
    """BJ-QOuter (§3.1.1): every query range + r.B searched in the ordered index.
    O(n log m + k) per arriving tuple."""
    m = len(K)
    n = 0
    cnt = 0
    for i in range(len(cs)):
        c = cs[i]
        for j in range(len(Qlo)):
            a = lb(K, c, Qlo[j], 0, m)
            b = ub(K, c, Qhi[j], a, m)
            if b > a:
                if mode == 2:
                    cnt += b - a
                elif mode == 1:
                    n = put_one(oq, oi, oo, n, Qid[j], i)
                else:
                    n = put_range(oq, oi, oo, n, Qid[j], i, KS, a, b)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def bj_mj(K, KS, cs, Qlo, Qhi, Qid, mode, oq, oi, oo):
    """BJ-MJ (§3.1.1): merge of the ranges sorted by left endpoint (+ r.B) with the sorted
    stored keys: one forward pointer per arriving tuple. O(m + n + k) per arriving tuple."""
    m = len(K)
    n = 0
    cnt = 0
    for i in range(len(cs)):
        c = cs[i]
        p = 0
        for j in range(len(Qlo)):
            lo = Qlo[j]
            while p < m and K[p] + c < lo:
                p += 1
            if p == m:
                break
            b = ub(K, c, Qhi[j], p, m)
            if b > p:
                if mode == 2:
                    cnt += b - p
                elif mode == 1:
                    n = put_one(oq, oi, oo, n, Qid[j], i)
                else:
                    n = put_range(oq, oi, oo, n, Qid[j], i, KS, p, b)
    return n, cnt


@numba.njit(cache=True, nogil=True)
def pst_build(lo_sorted_hi, size):
    """Max-hi tournament tree over the ranges sorted by left endpoint (implicit array, leaves at
    size + j): the static priority search structure of BJ-DOuter."""
    mx = np.full(2 * size, -np.inf)
    for j in range(len(lo_sorted_hi)):
        mx[size + j] = lo_sorted_hi[j]
    for v in range(size - 1, 0, -1):
        mx[v] = max(mx[2 * v], mx[2 * v + 1])
    return mx


@numba.njit(cache=True, nogil=True)
def bj_douter(K, KS, cs, Qlo, Qid, mx, size, mode, oq, oi, oo):
    """BJ-DOuter (§3.1.1): every stored tuple probes the index of all band windows for the
    ranges containing d (3-sided query: prefix lo <= d by binary search, then hi >= d by
    descending the max-hi tree). O(m log n + k log n) per arriving tuple."""
    m = len(K)
    nq = len(Qlo)
    n = 0
    cnt = 0
    stack = np.empty(128, np.int64)
    for i in range(len(cs)):
        c = cs[i]
        hit_any = np.zeros(nq if mode == 1 else 0, np.bool_)
        for k in range(m):
            d = K[k] + c
            u = ub(Qlo, 0.0, d, 0, nq)  # ranges with lo <= d are Qlo[:u]
            if u == 0:
                continue
            top = 0
            stack[0] = 1
            top = 1
            while top > 0:
                top -= 1
                v = stack[top]
                if mx[v] < d:
                    continue
                # node v covers leaves [l, r)
                t = v
                while t < size:  # leftmost leaf below v
                    t <<= 1
                if t - size >= u:
                    continue
                if v >= size:
                    j = v - size
                    if mode == 2:
                        cnt += 1
                    elif mode == 1:
                        if not hit_any[j]:
                            hit_any[j] = True
                            n = put_one(oq, oi, oo, n, Qid[j], i)
                    else:
                        n = put_range(oq, oi, oo, n, Qid[j], i, KS, k, k + 1)
                else:
                    stack[top] = 2 * v
                    stack[top + 1] = 2 * v + 1
                    top += 2
    return n, cnt
