"""numba kernels of the substream filters (paper 002, §4): per-key time rings (the exact per-key
ASW lookups, R-INT style running sums), the CI-COUNT / CI-SUM level heaps (§4.1, Fig. 7, §4.1.2,
§4.2) and the batch push. Lookups live in :mod:`._ci_lookup`.

Layout (flat arrays, every index int64):

* pool: one 32-byte record per ring element, ``pool[e] = (seq, time, value, cumb)``, a float64
  array whose column 0 is read and written only through its int64 view (``p_seq``: positions are
  exact int64 up to 2^63 - 1), ``p_time`` float64, ``p_val`` float64 = the element's weight,
  ``p_cumb`` float64 = the key's total weight *before* the element; it holds every key's ring. Key k owns the segment ``[k_off[k], k_off[k] + k_cap[k])`` (``k_cap`` a power of two);
  its elements have absolute numbers ``k_tail[k] <= a < k_head[k]`` (``k_head`` = number of non-null
  elements the key ever received) and element a sits at ``k_off[k] + (a & (k_cap[k] - 1))``. An
  element leaves its ring once its time is <= t - T_max (t: the time of a later element of that
  key, T_max: the longest registered window): no current query can count it again and a query
  registered later counts only later elements. A full ring moves to a segment twice as large at
  the end of the pool; when the pool is full the caller compacts it (:func:`compact`) into a pool
  twice the live size (so the element that found it full then fits: every ring is compacted to at
  least twice its live length), so space is O(elements inside the longest window + keys). The
  compaction moves keys ``0 .. nkeys-1``: the caller counts every key code of the batch in
  ``nkeys`` before it compacts (a key first seen in this batch already owns a ring).
* ``k_m[k]``: the key's total weight M_k (COUNT: its number of non-null elements).
* ``any_seq/any_time``: the key's last element (null value or not); ``nn_seq/nn_time``: its last
  non-null element.
* heaps (CI only): row 0 indexes ``any_seq`` (the keys with an element in a window); row 1 + lev
  indexes level lev. Each row is an array max-heap over all keys ordered by seq: ``H[r, i]`` =
  (seq, time, key) of slot i (one 24-byte record; seq and key are read and written only through
  the int64 view ``Hi`` of ``H``), ``hp[r, k]`` the slot of key k. Entries only ever
  increase (sift-up, O(log K)); "every key whose entry lies in the window" is a depth-first walk
  that stops below the first entry outside (the window is a suffix in seq order): O(output).

Levels (the parameterized CI-COUNT, §4.1.2, in weight space so that CI-SUM is the same code, §4.2):
an element of weight a counts as a copies; the copies of key k occupy the points [0, M_k) of a
line and x belongs to the element whose [cumb, cumb + a) contains x. Level lev = j*p + i (group j,
i < p) covers the distances d from the end in (lo_l, lo_l + 2^j], lo_l = p*(2^j - 1) + i*2^j
(p levels of size 1, p of size 2, ...); it stores the element owning the one multiple x* of 2^j in
[M_k - lo_l - 2^j, M_k - lo_l). With d_k = M_k - x* (known exactly at lookup time):
``entry in the window  <=>  window aggregate >= d_k`` (the window is a suffix of the line).
When M_k grows, group j's entries change only if ceil((M_k - lo_{j,0}) / 2^j) does, all p together
(x* of level (j, i) becomes the old x* of level (j, i-1)): COUNT updates 2p entries per element
amortized (Fig. 7's trailing-zeros rule), a weight a costs O(p log a) entries more (§4.2: a copies
at O(log a) overhead, not O(a)), each an O(log K) sift-up and, for SUM, an O(log W) search of the
owner in the ring. Only groups whose distances fit in the retained weight are kept (``G`` grows on
demand), so levels use O(|K| p log N_max) space as in Theorem 4.1.
"""

from __future__ import annotations

import numba
import numpy as np

NJ = {"cache": True, "nogil": True}

# push statuses
DONE, POOL_FULL, MORE_GROUPS, BAD_SEQ, BAD_KEY, NEED_KEYS = 0, 1, 2, 3, 4, 5


@numba.njit(**NJ)
def ring_first(p_seq, p_time, off, mask, tail, head, t0, start):
    """First absolute number in [tail, head) of an element inside the window (time > t0 and
    seq > start; both are non-decreasing along the ring); head when none. O(log ring)."""
    lo, hi = tail, head
    while lo < hi:
        mid = (lo + hi) >> 1
        s = off + (mid & mask)
        if p_time[s] > t0 and p_seq[s] > start:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(**NJ)
def ring_owner(p_cumb, off, mask, tail, head, x):
    """Absolute number of the element owning point x (the last one with cumb <= x); < tail when
    that element left the ring. O(log ring)."""
    lo, hi = tail, head
    while lo < hi:
        mid = (lo + hi) >> 1
        if p_cumb[off + (mid & mask)] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@numba.njit(**NJ)
def heap_raise(H, Hi, hp, r, k, seq, time):
    """Increase key k's entry in heap row r to (seq, time) (seq >= its old seq). O(log K)."""
    i = hp[r, k]
    while i > 0:
        par = (i - 1) >> 1
        if Hi[r, par, 0] >= seq:
            break
        pk = Hi[r, par, 2]
        Hi[r, i, 0] = Hi[r, par, 0]
        H[r, i, 1] = H[r, par, 1]
        Hi[r, i, 2] = pk
        hp[r, pk] = i
        i = par
    Hi[r, i, 0] = seq
    H[r, i, 1] = time
    Hi[r, i, 2] = k
    hp[r, k] = i


@numba.njit(**NJ)
def heapify_row(H, Hi, hp, r, size):
    """Bottom-up max-heap construction of row r over its first ``size`` slots. O(size)."""
    for start in range(size // 2 - 1, -1, -1):
        i = start
        s, t, k = Hi[r, i, 0], H[r, i, 1], Hi[r, i, 2]
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and Hi[r, c + 1, 0] > Hi[r, c, 0]:
                c += 1
            if Hi[r, c, 0] <= s:
                break
            Hi[r, i, 0] = Hi[r, c, 0]
            H[r, i, 1] = H[r, c, 1]
            Hi[r, i, 2] = Hi[r, c, 2]
            i = c
        Hi[r, i, 0] = s
        H[r, i, 1] = t
        Hi[r, i, 2] = k
    for i in range(size):
        hp[r, Hi[r, i, 2]] = i


@numba.njit(**NJ)
def heap_report(H, Hi, r, size, t0, start, stack, out):
    """Keys of heap row r whose entry lies in the window (time > t0 and seq > start) into
    ``out``; returns their number. Visits at most 2*output + 1 slots."""
    n = 0
    if size == 0:
        return 0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        if not (H[r, i, 1] > t0 and Hi[r, i, 0] > start):
            continue
        out[n] = Hi[r, i, 2]
        n += 1
        c = 2 * i + 1
        if c < size:
            stack[top] = c
            top += 1
            if c + 1 < size:
                stack[top] = c + 1
                top += 1
    return n


@numba.njit(**NJ)
def level_lo(lev, p):
    """lo_l: level lev covers the distances (lo_l, lo_l + 2^j] (j = lev // p)."""
    j = lev // p
    w = 2.0 ** j
    return p * (w - 1.0) + (lev - j * p) * w


@numba.njit(**NJ)
def level_x(m, lev, p):
    """x* of level lev for a key of total weight m (negative: the key is too short)."""
    j = lev // p
    w = 2.0 ** j
    return w * (np.ceil((m - level_lo(lev, p)) / w) - 1.0)


@numba.njit(**NJ)
def _set_level(k, lev, x, m_old, unit, tail, head, off, mask, p_seq, p_time, p_cumb, H, Hi, hp):
    if x < 0.0:
        return
    if x >= m_old:
        own = head - 1  # the element just appended
    elif unit:
        own = np.int64(x)  # COUNT: element a owns point a
    else:
        own = ring_owner(p_cumb, off, mask, tail, head, x)
    if own < tail:
        return  # its owner left the ring: the stale entry is outside every future window too
    s = off + (own & mask)
    r = lev + 1
    if Hi[r, hp[r, k], 0] < p_seq[s]:
        heap_raise(H, Hi, hp, r, k, p_seq[s], p_time[s])


@numba.njit(**NJ)
def push_kernel(vals, times, keys, seqs, i0, tmax, p, G, lmin, unit, levels, count,
                p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head, k_tail, k_m,
                any_seq, any_time, nn_seq, nn_time, meta, H, Hi, hp):
    """Push elements i0.. of the batch (vals NaN = null; ``count``: any other value weighs 1).
    Returns (status, i):
    DONE, or POOL_FULL / MORE_GROUPS at element i (nothing of element i applied yet except the
    idempotent expiry): the caller compacts the pool / adds groups and calls again from i.
    ``levels`` False = the naive operator (rings only, no heaps); levels below ``lmin`` (used by
    no registered query) are not maintained."""
    n = len(vals)
    psize = len(p_seq)
    for i in range(i0, n):
        k = keys[i]
        a = vals[i]
        if count and a == a:
            a = 1.0  # COUNT(column): every non-null value counts once
        t = times[i]
        sq = seqs[i]
        off = k_off[k]
        cap = k_cap[k]
        mask = cap - 1
        tail = k_tail[k]
        head = k_head[k]
        lim = t - tmax
        while tail < head and p_time[off + (tail & mask)] <= lim:
            tail += 1
        k_tail[k] = tail
        if a != a:  # null: only the "any" index moves
            any_seq[k] = sq
            any_time[k] = t
            if levels:
                heap_raise(H, Hi, hp, 0, k, sq, t)
            continue
        if head - tail >= cap:
            ncap = max(np.int64(4), 2 * cap)
            if meta[0] + ncap > psize:
                return POOL_FULL, i
            noff = meta[0]
            nmask = ncap - 1
            for e in range(tail, head):
                src = off + (e & mask)
                dst = noff + (e & nmask)
                p_seq[dst] = p_seq[src]
                p_time[dst] = p_time[src]
                p_val[dst] = p_val[src]
                p_cumb[dst] = p_cumb[src]
            meta[0] += ncap
            off, cap, mask = noff, ncap, nmask
            k_off[k] = off
            k_cap[k] = cap
        m_old = k_m[k]
        m_new = m_old + a
        if levels:
            base = p_cumb[off + (tail & mask)] if tail < head else m_old
            if p * (2.0 ** G - 1.0) < m_new - base:
                return MORE_GROUPS, i
        # apply
        s = off + (head & mask)
        p_seq[s] = sq
        p_time[s] = t
        p_val[s] = a
        p_cumb[s] = m_old
        head += 1
        k_head[k] = head
        k_m[k] = m_new
        any_seq[k] = sq
        any_time[k] = t
        nn_seq[k] = sq
        nn_time[k] = t
        if not levels:
            continue
        heap_raise(H, Hi, hp, 0, k, sq, t)
        if not a > 0.0:
            continue
        j0 = lmin // p
        w = 2.0 ** j0
        for j in range(j0, G):
            lo0 = p * (w - 1.0)
            c_new = np.ceil((m_new - lo0) / w)
            if c_new != np.ceil((m_old - lo0) / w):
                for ii in range(p - 1, -1, -1):  # from the deepest level: x grows with ii falling
                    if j * p + ii < lmin:
                        break
                    x = w * (c_new - 1.0 - ii)
                    if x >= 0.0:
                        _set_level(k, j * p + ii, x, m_old, unit, tail, head, off, mask, p_seq, p_time, p_cumb,
                                   H, Hi, hp)
            w *= 2.0
    return DONE, n


@numba.njit(**NJ)
def fill_levels(l0, l1, nkeys, p, unit, p_seq, p_time, p_cumb, k_off, k_cap, k_head, k_tail, k_m, H, hp):
    """Build heap rows of the new levels l0..l1-1 from every key's ring (levels added when a
    key's retained weight outgrows the groups kept). O((l1 - l0) * K log W)."""
    Hi = H.view(np.int64)
    for lev in range(l0, l1):
        r = lev + 1
        for k in range(nkeys):
            Hi[r, k, 0] = 0
            H[r, k, 1] = -np.inf
            Hi[r, k, 2] = k
            hp[r, k] = k
            head = k_head[k]
            tail = k_tail[k]
            if tail >= head:
                continue
            x = level_x(k_m[k], lev, p)
            if x < 0.0:
                continue
            off = k_off[k]
            mask = k_cap[k] - 1
            own = np.int64(x) if unit else ring_owner(p_cumb, off, mask, tail, head, x)
            if own < tail:
                continue
            s = off + (own & mask)
            Hi[r, k, 0] = p_seq[s]
            H[r, k, 1] = p_time[s]
        heapify_row(H, Hi, hp, r, nkeys)


@numba.njit(**NJ)
def compact(nkeys, lim, p_seq, p_time, p_val, p_cumb, k_off, k_cap, k_head, k_tail,
            q_seq, q_time, q_val, q_cumb):
    """Copy every key's live ring (elements with time > lim) into the new pool arrays q_*, each in
    a segment of twice its live size (power of two, >= 4). Returns the new pool's used length."""
    used = 0
    for k in range(nkeys):
        off = k_off[k]
        mask = k_cap[k] - 1
        tail = k_tail[k]
        head = k_head[k]
        while tail < head and p_time[off + (tail & mask)] <= lim:
            tail += 1
        live = head - tail
        ncap = 4
        while ncap < 2 * live:
            ncap *= 2
        nmask = ncap - 1
        for e in range(tail, head):
            src = off + (e & mask)
            dst = used + (e & nmask)
            q_seq[dst] = p_seq[src]
            q_time[dst] = p_time[src]
            q_val[dst] = p_val[src]
            q_cumb[dst] = p_cumb[src]
        k_off[k] = used
        k_cap[k] = ncap
        k_tail[k] = tail
        used += ncap
    return used


@numba.njit(**NJ)
def compact_size(nkeys, lim, p_time, k_off, k_cap, k_head, k_tail):
    """Pool length :func:`compact` will use."""
    used = 0
    for k in range(nkeys):
        off = k_off[k]
        mask = k_cap[k] - 1
        tail = k_tail[k]
        head = k_head[k]
        while tail < head and p_time[off + (tail & mask)] <= lim:
            tail += 1
        live = head - tail
        ncap = 4
        while ncap < 2 * live:
            ncap *= 2
        used += ncap
    return used


@numba.njit(**NJ)
def push_batch(vals, times, keys, seqs, i0, last_seq, tmax, ip, pool, krec, kf, meta, H, hp):
    """:func:`push_kernel` with fewer arguments (numba's dispatch costs ~0.15 us per argument) and
    the batch's validation: ``ip`` = (p, G, lmin, unit, levels, count), ``pool`` = the ring record
    (seq (int64 bits), time, value, cumb), ``krec`` = the key record (off, cap, head, tail, any_seq, nn_seq),
    ``kf`` = (M, any_time, nn_time). Returns (status, i, largest key code); with i0 = 0 the batch
    is first checked: BAD_SEQ (seqs not strictly increasing after last_seq), BAD_KEY (a negative
    code) or NEED_KEYS (a code beyond the arrays: the caller grows them and calls again)."""
    kmax = -1
    for i in range(len(keys)):
        kmax = max(kmax, keys[i])
    if i0 == 0:
        prev = last_seq
        for i in range(len(seqs)):
            if seqs[i] <= prev:
                return BAD_SEQ, i, kmax
            prev = seqs[i]
            if keys[i] < 0:
                return BAD_KEY, i, kmax
        if kmax >= krec.shape[0]:
            return NEED_KEYS, 0, kmax
    status, i = push_kernel(vals, times, keys, seqs, i0, tmax, ip[0], ip[1], ip[2], ip[3] != 0, ip[4] != 0,
                            ip[5] != 0, pool.view(np.int64)[:, 0], pool[:, 1], pool[:, 2], pool[:, 3], krec[:, 0],
                            krec[:, 1], krec[:, 2], krec[:, 3], kf[:, 0], krec[:, 4], kf[:, 1], krec[:, 5], kf[:, 2],
                            meta, H, H.view(np.int64), hp)
    return status, i, kmax


@numba.njit(**NJ)
def gather_rows(qmap, Q, qids):
    """(rows of Q of the qids, index of the first qid not in ``qmap``, -1 when none). The rows are
    bit copies through the int64 view (column 1, the start, is an int64)."""
    Qi = Q.view(np.int64)
    out = np.empty((len(qids), Q.shape[1]), np.float64)
    oi = out.view(np.int64)
    for i in range(len(qids)):
        q = qids[i]
        s = qmap[q] if 0 <= q < len(qmap) else -1
        if s < 0:
            return out, i
        oi[i] = Qi[s]
    return out, -1
