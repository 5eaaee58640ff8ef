"""numba lookup kernels of the substream filters (paper 002, §4): the exact per-key window
aggregate (an ASW lookup on the key's ring: one binary search, then a difference of running sums,
or a correctly rounded sum when the weights are not integers), the naive lookup (every key) and
the CI lookup (candidates from one level heap, §4.1 Fig. 7 LOOKUP, then the exact post-filter of
the candidates whose level does not already decide them). Layout: see :mod:`._ci_kernels`.

Query arrays: ``q_T`` window length, ``q_start`` registration position (int64; counts
seq > start), ``q_lo``/``q_hi`` the open range (-inf/inf when unbounded), ``q_eps`` epsilon
(NaN = exact). Positions (``q_start``, ``p_seq``, heap seqs) are compared as int64, never as
float64.
Output: the reported key codes of query i are ``out[off[i]:off[i+1]]`` (unsorted).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._ci_kernels import NJ, heap_report, ring_first, ring_owner


@numba.njit(**NJ)
def fsum_ring(p_val, off, mask, a0, a1):
    """Correctly rounded sum of the ring elements a0..a1-1 (Shewchuk's partials, as math.fsum);
    non-finite inputs or an intermediate overflow give the plain sum (as the oracle's fallback)."""
    partials = np.empty(128, np.float64)
    n = 0
    for e in range(a0, a1):
        x = p_val[off + (e & mask)]
        if not math.isfinite(x) or n >= 120:
            s = 0.0
            for f in range(a0, a1):
                s += p_val[off + (f & mask)]
            return s
        i = 0
        for j in range(n):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        n = i
        if x != 0.0:
            if not math.isfinite(x):
                s = 0.0
                for f in range(a0, a1):
                    s += p_val[off + (f & mask)]
                return s
            partials[n] = x
            n += 1
    hi = 0.0
    if n > 0:
        n -= 1
        hi = partials[n]
        lo = 0.0
        while n > 0:
            x = hi
            n -= 1
            y = partials[n]
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            if y == x - hi:
                hi = x
    return hi


@numba.njit(**NJ)
def key_agg(k, t0, start, is_sum, integral, p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head, k_tail, k_m):
    """Exact aggregate of key k over the window (time > t0, seq > start): COUNT of its non-null
    elements, or their SUM (NaN when there is none). O(log W) (+ O(W) for non-integer sums)."""
    off = k_off[k]
    mask = k_cap[k] - 1
    head = k_head[k]
    first = ring_first(p_seq, p_time, off, mask, k_tail[k], head, t0, start)
    if first >= head:
        return np.nan if is_sum else 0.0
    if integral:
        return k_m[k] - p_cumb[off + (first & mask)]
    return fsum_ring(p_val, off, mask, first, head)


@numba.njit(**NJ)
def at_least(k, thr, t0, start, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head, k_tail, k_m):
    """Exact per-key threshold lookup for integer weights >= 0: is key k's aggregate over the
    window >= thr? The window is a suffix of the key's weight line, so this holds iff the element
    owning point M_k - thr lies in the window (§4.1.1: "the v-th element from the end has a
    timestamp greater than tau - T"). COUNT: one ring access; SUM: one O(log W) search."""
    if thr <= 0.0:
        return True
    x = (np.float64(k_head[k]) if unit else k_m[k]) - thr
    if x < 0.0:
        return False
    off = k_off[k]
    mask = k_cap[k] - 1
    tail = k_tail[k]
    own = np.int64(x) if unit else ring_owner(p_cumb, off, mask, tail, k_head[k], x)
    if own < tail:
        return False  # left the ring: outside every window
    s = off + (own & mask)
    return p_time[s] > t0 and p_seq[s] > start


@numba.njit(**NJ)
def _emit(out, n, k):
    if n >= len(out):
        big = np.empty(2 * len(out), np.int64)
        big[:n] = out[:n]
        out = big
    out[n] = k
    return out


@numba.njit(**NJ)
def lookup_naive(q_T, q_start, q_lo, q_hi, t_now, nkeys, is_sum, integral,
                 p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head, k_tail, k_m, any_seq, any_time):
    """The naive SSF lookup (§4): an exact ASW lookup for every key. O(|K| log W) per query."""
    nq = len(q_T)
    out = np.empty(max(16, nkeys), np.int64)
    offs = np.zeros(nq + 1, np.int64)
    n = 0
    for q in range(nq):
        t0 = t_now - q_T[q]
        start = q_start[q]
        lo = q_lo[q]
        hi = q_hi[q]
        for k in range(nkeys):
            if not (any_time[k] > t0 and any_seq[k] > start):
                continue
            v = key_agg(k, t0, start, is_sum, integral, p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head,
                        k_tail, k_m)
            if lo < v < hi:
                out = _emit(out, n, k)
                n += 1
        offs[q + 1] = n
    return out[:n], offs


@numba.njit(**NJ)
def lookup_naive_probe(q_T, q_start, q_lo, q_hi, t_now, nkeys, is_sum, integral, ci_ok, unit,
                       p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head, k_tail, k_m, any_seq, any_time,
                       nn_seq, nn_time):
    """The naive SSF lookup with the threshold probe of :func:`at_least` per key instead of the
    key's aggregate (a stronger per-key baseline: O(|K|) per query for COUNT)."""
    nq = len(q_T)
    out = np.empty(max(16, nkeys), np.int64)
    offs = np.zeros(nq + 1, np.int64)
    n = 0
    for q in range(nq):
        t0 = t_now - q_T[q]
        start = q_start[q]
        lo = q_lo[q]
        hi = q_hi[q]
        veff = np.floor(lo) + 1.0
        ueff = np.ceil(hi)
        for k in range(nkeys):
            if not (any_time[k] > t0 and any_seq[k] > start):
                continue
            if ci_ok:
                if is_sum and not (nn_time[k] > t0 and nn_seq[k] > start):
                    continue
                ok = lo < 0.0 or at_least(k, veff, t0, start, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head,
                                          k_tail, k_m)
                if ok and hi < np.inf:
                    ok = not at_least(k, ueff, t0, start, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head,
                                      k_tail, k_m)
            else:
                v = key_agg(k, t0, start, is_sum, integral, p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head,
                            k_tail, k_m)
                ok = lo < v < hi
            if ok:
                out = _emit(out, n, k)
                n += 1
        offs[q + 1] = n
    return out[:n], offs


@numba.njit(**NJ)
def lookup_ci(q_T, q_start, q_lo, q_hi, q_eps, t_now, nkeys, lmin, nlev, lo_tab, w_tab, is_sum, integral, ci_ok, unit,
              p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head, k_tail, k_m, nn_seq, nn_time,
              H, Hi, hp, stack, cand):
    """CI-COUNT / CI-SUM lookups with the exact post-filter (exact queries) or the relaxed range
    (epsilon queries). Returns (out, offs, verified): ``verified`` counts the per-key exact
    lookups done. O(K_ao + (checked keys) log W) per query; see the module docstring."""
    nq = len(q_T)
    out = np.empty(max(16, nkeys), np.int64)
    offs = np.zeros(nq + 1, np.int64)
    n = 0
    verified = 0
    for q in range(nq):
        t0 = t_now - q_T[q]
        start = q_start[q]
        lo = q_lo[q]
        hi = q_hi[q]
        eps = q_eps[q]
        approx = eps == eps
        lower = lo >= 0.0  # candidates from the level of v = lo (else: the keys with an element)
        lsel = -1
        veff = np.floor(lo) + 1.0  # integral aggregates: agg > lo <=> agg >= veff
        if ci_ok and lower:
            for lev in range(nlev):
                if lo_tab[lev] + w_tab[lev] <= veff:
                    lsel = lev
                else:
                    break
            if lsel < lmin:
                lsel = -1  # not maintained (no registered query uses it): every key is checked
        if lsel >= 0:
            nc = heap_report(H, Hi, lsel + 1, nkeys, t0, start, stack, cand)
        else:
            nc = heap_report(H, Hi, 0, nkeys, t0, start, stack, cand)
        usel = -1
        ueff = np.ceil(hi)  # integral aggregates: agg < hi <=> agg < ueff
        if ci_ok and not lower and hi < np.inf:
            for lev in range(nlev):
                if lo_tab[lev] + 1.0 >= ueff:
                    usel = lev
                    break
            if usel < lmin:
                usel = -1
        if ci_ok and unit and lsel >= 0 and hi == np.inf:
            # COUNT (v, inf), the §6.3 case, in two passes so that the cache misses of different
            # candidates overlap: (1) decide from the level or locate the probed element,
            # (2) read the probed elements. ``stack`` is free again after heap_report.
            w = w_tab[lsel]
            lo_l = lo_tab[lsel]
            for c in range(nc):
                k = cand[c]
                m = np.float64(k_head[k])
                d = m - w * (np.ceil((m - lo_l) / w) - 1.0)
                if d >= veff or (approx and d > lo * (1.0 - eps)):
                    stack[c] = -1  # decided: in
                else:
                    own = np.int64(m - veff)
                    stack[c] = -2 if own < k_tail[k] else k_off[k] + (own & (k_cap[k] - 1))
            for c in range(nc):
                sl = stack[c]
                if sl >= 0:
                    verified += 1
                    if not (p_time[sl] > t0 and p_seq[sl] > start):
                        continue
                elif sl == -2:
                    verified += 1
                    continue
                out = _emit(out, n, cand[c])
                n += 1
            offs[q + 1] = n
            continue
        for c in range(nc):
            k = cand[c]
            if not ci_ok:
                verified += 1
                v = key_agg(k, t0, start, is_sum, integral, p_seq, p_time, p_val, p_cumb, k_off, k_cap,
                            k_head, k_tail, k_m)
                ok = lo < v < hi
            else:
                # lower bound: agg > lo <=> agg >= veff
                if lsel >= 0:
                    w = w_tab[lsel]
                    m = np.float64(k_head[k]) if unit else k_m[k]
                    d = m - w * (np.ceil((m - lo_tab[lsel]) / w) - 1.0)  # entry in window: agg >= d
                    if d >= veff or (approx and d > lo * (1.0 - eps)):
                        ok = True
                    else:
                        verified += 1
                        ok = at_least(k, veff, t0, start, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head,
                                      k_tail, k_m)
                elif lower:
                    verified += 1
                    ok = at_least(k, veff, t0, start, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head, k_tail,
                                  k_m)
                elif is_sum:
                    ok = nn_time[k] > t0 and nn_seq[k] > start  # else only nulls in the window: NULL
                else:
                    ok = True  # lo < 0 <= agg
                # upper bound: agg < hi <=> not agg >= ueff
                if ok and hi < np.inf:
                    ok = False
                    done = False
                    if usel >= 0:
                        r = usel + 1
                        i = hp[r, k]
                        if H[r, i, 1] > t0 and Hi[r, i, 0] > start:
                            done = True  # agg >= d >= ueff
                        else:
                            w = w_tab[usel]
                            x = w * (np.ceil((k_m[k] - lo_tab[usel]) / w) - 1.0)
                            b = k_m[k]  # agg <= b
                            if x >= 0.0:
                                b = min(b, k_m[k] - x - 1.0)
                            if b < hi or (approx and b < hi * (1.0 + eps)):
                                done = True
                                ok = True
                    if not done:
                        verified += 1
                        ok = not at_least(k, ueff, t0, start, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head,
                                          k_tail, k_m)
            if ok:
                out = _emit(out, n, k)
                n += 1
        offs[q + 1] = n
    return out[:n], offs, verified


@numba.njit(**NJ)
def lookup_naive_batch(Q, t_now, ip, pool, krec, kf):
    """:func:`lookup_naive` / :func:`lookup_naive_probe` with fewer arguments: ``Q`` rows
    (T, start, lo, hi, eps), start an int64 read through the int64 view, ``ip`` = (nkeys, is_sum,
    integral, ci_ok, unit, probe); records as in :func:`._ci_kernels.push_batch`."""
    p_seq = pool.view(np.int64)[:, 0]
    S = Q.view(np.int64)[:, 1]
    if ip[5]:
        return lookup_naive_probe(Q[:, 0], S, Q[:, 2], Q[:, 3], t_now, ip[0], ip[1] != 0, ip[2] != 0,
                                  ip[3] != 0, ip[4] != 0, p_seq, pool[:, 1], pool[:, 2], pool[:, 3],
                                  krec[:, 0], krec[:, 1], krec[:, 2], krec[:, 3], kf[:, 0], krec[:, 4], kf[:, 1],
                                  krec[:, 5], kf[:, 2])
    return lookup_naive(Q[:, 0], S, Q[:, 2], Q[:, 3], t_now, ip[0], ip[1] != 0, ip[2] != 0,
                        p_seq, pool[:, 1], pool[:, 2], pool[:, 3], krec[:, 0], krec[:, 1], krec[:, 2],
                        krec[:, 3], kf[:, 0], krec[:, 4], kf[:, 1])


@numba.njit(**NJ)
def lookup_ci_batch(Q, t_now, ip, lo_tab, w_tab, pool, krec, kf, H, hp, stack, cand):
    """:func:`lookup_ci` with fewer arguments: ``Q`` rows as in :func:`lookup_naive_batch`,
    ``ip`` = (nkeys, lmin, nlev, is_sum, integral, ci_ok, unit)."""
    return lookup_ci(Q[:, 0], Q.view(np.int64)[:, 1], Q[:, 2], Q[:, 3], Q[:, 4], t_now, ip[0], ip[1], ip[2], lo_tab, w_tab,
                     ip[3] != 0, ip[4] != 0, ip[5] != 0, ip[6] != 0, pool.view(np.int64)[:, 0], pool[:, 1],
                     pool[:, 2], pool[:, 3], krec[:, 0], krec[:, 1], krec[:, 2], krec[:, 3], kf[:, 0], krec[:, 5],
                     kf[:, 2], H, H.view(np.int64), hp, stack, cand)
