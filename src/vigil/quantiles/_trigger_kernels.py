"""Numba kernels of the trigger-based lazy updates (paper 004 §3.5, Algorithms 3 and 4) and of the
§2.4 baseline, over one GK summary (:mod:`._gk_kernels`) and a set of query clusters.

Clusters are ids 0..K-1 with interval (ca, cb), current result value ``cval`` (NaN: none yet; the
value is also the trigger's *link* to its summary tuple: the search restarts at the first tuple
with value >= cval, which is that tuple or, once it was merged away, the tuple it was merged into
— the paper's "triggers hanging on t are moved to t'", at no cost when tuples merge) and deadline
``cdead``: the result stays valid while the stream has at most cdead elements (Theorem 4:
cdead = N + floor(L) when chosen at size N). The trigger list is an indexed binary min-heap on
``ckey`` = cdead, or an earlier member deadline (below) (``heap``, ``hpos``). The paper stores in each heap node the difference to its parent so that
"reduce every trigger by 1" is one decrement of the root; storing the absolute deadline N + L
instead makes a new element cost one comparison of N with the root, the same O(1), and a fire
O(log K).

:func:`process` inserts a batch in chunks cut at the next fire (root deadline + 1) and at the
merge period, so every re-evaluation sees the summary exactly at the element that fired it (in
cluster mode the elements since the last merge may stay pending: a fire that provably keeps its
value, :func:`_quick_lval`, counts them instead, and the merge waits for a full re-evaluation or
the period's end). At
each merge-period boundary (n a multiple of the period: an absolute position, so how the stream
is split into batches never changes any result or update) the triggers that would fire inside the
coming period are re-evaluated early, which keeps chunks long:

- mode 0 (CASU, Algorithm 4): pop every fired trigger, re-evaluate only that cluster (search from
  its link, :func:`._gk_kernels.best_tuple`), push it back. O(log K + log m) per fire.
- mode 1 (CSU/SU, Algorithm 3): the root is the global trigger T_global = min over clusters; when
  it fires every cluster is re-evaluated and the heap rebuilt. O(K (log m)) per fire. A cluster a
  registration created or changed (``cat`` = -1, set by the epoch) is re-evaluated alone (§3.5.1:
  "Algorithm 3 is invoked with only Q' as the input"), O(log m).
- mode 2 (naive, §2.4): every element, every cluster, first-hit scan from the head. O(K m) per
  element.

Re-evaluation keeps the current value when it is still a result tuple whose L is at least
``keep`` times the best tuple's (vigil's refinement, fewer messages; keep = 0 is the paper's
"always take the maximum L"); its rank bounds come from its tuple or, once merged, from the
neighbours of where it was (:func:`kept_lval`). Theorem 6's count of re-evaluations grows by at
most the factor log(1 + x)/log(1 + keep*x).

Member deadlines (vigil's refinement, ``lazy``; the paper multicasts every cluster result to all
its members). A cluster's interval is the intersection of its members' intervals, so when the
cluster's value changes, a member's previous value is often still a valid answer for the
member's own (wider) interval. The member walk (:func:`_members`, at each change of the
cluster's value, in the kernel, with the summary exactly at that element) lets a member keep its
value while Theorem 4 applied to the member's own (a, b) guarantees it (its deadline ``qdead``),
and otherwise gives it the cluster's value (an update), or (``lazy`` = 2) its own best tuple
(the largest L for its own interval) when that lasts at least as long as the cluster's value. Such members sit at the front of the
member list (the rest hold the cluster's value, valid until the cluster's deadline), the heap
key of a cluster is min(its own deadline, its kept members' deadlines) (``ckey``), and a walk for
a member deadline visits only that front part. A member keeps a value only if it stays valid at
least ``mkeep`` (1) times as long as the cluster's value, so kept values do not expire one by one.
Update events measured in docs/experiments/quantiles.md.

Cluster notification (``lazy`` < 0, the paper's message model: "cluster"-mode notify queries,
docs/contract.md): members always hold their cluster's value, so no member is walked; a cluster
whose value changed writes one record (cluster id, offset, value, previous value) instead of one
per member, and the cost of a change is O(1) whatever the cluster's size.

The kernel writes per-query updates (qid, offset, value, previous value) in offset order;
:func:`._updates.order_updates` orders each offset's updates by qid (a radix sort per offset, no global
sort), so ``push`` returns them in (offset, qid) order.
"""

from __future__ import annotations

import numba
import numpy as np

from ._fire_kernels import _kept_lval_at, _last_equal_from, _quick_lval, _reeval, unpin
from ._gk_kernels import (
    INF_DEADLINE,
    best_tuple,
    compress,
    deadline,
    first_hit,
    lval,
    merge_inplace,
    period_chunk,
)
from ._updates import lookup_many, order_updates

# meta slots
M_M, M_N, M_NEXT, M_PERIOD, M_HSIZE, M_NOUT, M_EVALS, M_FIRES, M_CHANGES, M_WALKS, M_CHUNKS = range(11)
META_SIZE = 11
SMALL = 32  # chunks up to this size are insertion-sorted in a buffer


@numba.njit(cache=True, nogil=True)
def sift_up(heap, hpos, cdead, i):
    c = heap[i]
    while i > 0:
        p = (i - 1) >> 1
        if cdead[heap[p]] <= cdead[c]:
            break
        heap[i] = heap[p]
        hpos[heap[i]] = i
        i = p
    heap[i] = c
    hpos[c] = i


@numba.njit(cache=True, nogil=True)
def sift_down(heap, hpos, cdead, i, size):
    c = heap[i]
    while True:
        lc = 2 * i + 1
        if lc >= size:
            break
        r = lc + 1
        s = lc
        if r < size and cdead[heap[r]] < cdead[heap[lc]]:
            s = r
        if cdead[heap[s]] >= cdead[c]:
            break
        heap[i] = heap[s]
        hpos[heap[i]] = i
        i = s
    heap[i] = c
    hpos[c] = i


@numba.njit(cache=True, nogil=True)
def heap_push(heap, hpos, cdead, size, c):
    heap[size] = c
    hpos[c] = size
    sift_up(heap, hpos, cdead, size)
    return size + 1


@numba.njit(cache=True, nogil=True)
def heap_remove(heap, hpos, cdead, size, c):
    i = hpos[c]
    hpos[c] = -1
    size -= 1
    if i == size:
        return size
    moved = heap[size]
    heap[i] = moved
    hpos[moved] = i
    sift_up(heap, hpos, cdead, i)
    sift_down(heap, hpos, cdead, hpos[moved], size)
    return size


@numba.njit(cache=True, nogil=True)
def heap_update(heap, hpos, cdead, size, c):
    i = hpos[c]
    sift_up(heap, hpos, cdead, i)
    sift_down(heap, hpos, cdead, hpos[c], size)


@numba.njit(cache=True, nogil=True)
def kept_lval(v, lo, hi, m, n, a, b, eps, u):
    """L of the current result value u: from its tuple, or, once GK merged that tuple into its
    successor p, from the bounds its neighbours give it: r-(p-1) + 1 <= rank(u) <= r+(p) - 1."""
    return _kept_lval_at(v, lo, hi, m, n, a, b, eps, u, np.searchsorted(v[:m], u))


@numba.njit(cache=True, nogil=True)
def _evaluate(c, v, lo, hi, pin, m, n, eps, keep, ca, cb, cval, cdead, cforce, cat, first, meta):
    """Re-evaluate cluster c at size n (sets its value and deadline); True when its value changed
    (or a new member forced a report)."""
    meta[M_EVALS] += 1
    cat[c] = n
    has = False
    start = 0
    if first:
        i = first_hit(lo, hi, m, ca[c], cb[c], eps, n)
        L = lval(lo[i], hi[i], ca[c], cb[c], eps, n)
    else:
        start = m // 2
        has = cval[c] == cval[c]
        if has:
            start = np.searchsorted(v[:m], cval[c])
        i = best_tuple(lo, hi, m, ca[c], cb[c], eps, n, start)
        L = lval(lo[i], hi[i], ca[c], cb[c], eps, n)
        if has and not cforce[c]:
            # keep the current value while it is still a result with a comparable trigger value
            Lk = _kept_lval_at(v, lo, hi, m, n, ca[c], cb[c], eps, cval[c], start)
            if Lk >= 0.0 and Lk >= keep * L:
                cdead[c] = deadline(Lk, n)
                return False
    cdead[c] = deadline(L, n)
    nv = v[i]
    if nv != cval[c] or cforce[c]:
        if not first:
            u = cval[c]
            if has and start < m and v[start] == u:
                j = _last_equal_from(v, m, u, start)
                if pin[j] > 0:
                    pin[j] -= 1
            else:
                unpin(v, pin, m, u)
            pin[_last_equal_from(v, m, nv, i)] += 1
        meta[M_CHANGES] += 1
        cval[c] = nv
        cforce[c] = False
        return True
    return False


@numba.njit(cache=True, nogil=True)
def _members(c, v, lo, hi, m, n, eps, lazy, mkeep, horizon, full, cval, cdead, head, tail, nxt, prv, slot_qid, qa, qb,
             qlast, qdead, off, out_q, out_off, out_val, out_prev, meta):
    """Walk cluster c's members at size n: a member holding the cluster's value is valid until the
    cluster's deadline; with ``lazy`` a member holding another value keeps it while that value is
    provably valid for the member's own interval (its deadline, Theorem 4 on the member's
    (a, b)) until at least ``horizon`` and for at least ``mkeep`` times as long as the cluster's
    value (so that kept values do not expire one by one right away), else it takes its own best
    tuple (largest L for its interval) when that lasts as long, else the cluster's value (an
    update). Members holding another value are kept at the front of the
    member list, so a walk for their deadlines (``full`` False) stops at the first member holding
    the cluster's value; ``full`` (the value changed) walks every member. Returns the smallest
    deadline of the members that kept another value (INF_DEADLINE if none)."""
    meta[M_WALKS] += 1
    val = cval[c]
    need = max(horizon, n + np.int64(mkeep * (min(cdead[c], n + (np.int64(1) << 40)) - n)))
    sd = INF_DEADLINE
    pu = np.nan
    pp = -1
    sh = -1  # chain of members keeping another value
    st = -1
    fh = -1  # chain of members holding the cluster's value
    ft = -1
    pc = -1  # position of the cluster's value in the summary (searched once, when needed)
    s = head[c]
    while s >= 0 and (full or qlast[s] != val):
        nx = nxt[s]
        u = qlast[s]
        fresh = True
        if u != val:
            ok = False
            if lazy >= 1 and u == u:
                if u != pu:
                    pu = u
                    pp = np.searchsorted(v[:m], u)
                if pp < m and v[pp] == u:
                    L = lval(lo[pp], hi[pp], qa[s], qb[s], eps, n)
                elif 0 < pp < m:
                    L = lval(lo[pp - 1] + 1, hi[pp] - 1, qa[s], qb[s], eps, n)
                else:
                    L = -np.inf
                if L >= 0.0:
                    qdead[s] = max(qdead[s], deadline(L, n))
                ok = qdead[s] >= need
            if ok:
                sd = min(sd, qdead[s])
                fresh = False
            else:
                nv = val
                qdead[s] = -1  # a deadline belongs to the value it was computed for
                if lazy >= 2:  # the member's own best tuple (its interval), if it lasts long enough
                    if pc < 0:
                        pc = np.searchsorted(v[:m], val)
                    i = best_tuple(lo, hi, m, qa[s], qb[s], eps, n, pc)
                    Lo = lval(lo[i], hi[i], qa[s], qb[s], eps, n)
                    if v[i] != val and Lo >= 0.0 and deadline(Lo, n) >= need:
                        nv = v[i]
                        qdead[s] = deadline(Lo, n)
                        sd = min(sd, qdead[s])
                        fresh = False
                if nv != u:
                    k = meta[M_NOUT]
                    out_q[k] = slot_qid[s]
                    out_off[k] = off
                    out_val[k] = nv
                    out_prev[k] = u
                    meta[M_NOUT] = k + 1
                    qlast[s] = nv
        if fresh:
            if ft >= 0:
                nxt[ft] = s
            else:
                fh = s
            prv[s] = ft
            ft = s
        else:
            if st >= 0:
                nxt[st] = s
            else:
                sh = s
            prv[s] = st
            st = s
        s = nx
    # relink: kept members, then the members that took the value, then the unvisited rest
    rest = s
    if ft >= 0:
        nxt[ft] = rest
        if rest >= 0:
            prv[rest] = ft
        else:
            tail[c] = ft
        rest = fh
    if st >= 0:
        nxt[st] = rest
        if rest >= 0:
            prv[rest] = st
        else:
            tail[c] = st
        rest = sh
    head[c] = rest
    if rest >= 0:
        prv[rest] = -1
    else:
        tail[c] = -1
    return sd


@numba.njit(cache=True, nogil=True)
def _fire(c, v, lo, hi, pin, m, n, eps, keep, mkeep, mode, lazy, ca, cb, cval, cdead, cforce, cat, ckey, sdead, head, tail,
          nxt, prv, slot_qid, qa, qb, qlast, qdead, off, out_q, out_off, out_val, out_prev, meta, forced, horizon):
    """Process cluster c at size n: re-evaluate it when its own deadline is before ``horizon`` (n,
    or the next merge-period boundary when run early) or when ``forced`` (Algorithm 3's global
    trigger, the naive baseline); walk its members when its value changed or a member's deadline
    is before ``horizon``; its heap key becomes min(own deadline, members' deadlines)."""
    changed = False
    prev = cval[c]
    if forced or cdead[c] < horizon or cforce[c]:
        meta[M_FIRES] += 1
        changed = _evaluate(c, v, lo, hi, pin, m, n, eps, keep, ca, cb, cval, cdead, cforce, cat, mode == 2, meta)
    if lazy < 0:  # notify "cluster": one record (cluster id, offset, value, previous value), no member walk
        if changed:
            k = meta[M_NOUT]
            out_q[k] = c
            out_off[k] = off
            out_val[k] = cval[c]
            out_prev[k] = prev
            meta[M_NOUT] = k + 1
    elif changed or sdead[c] < horizon:
        sdead[c] = _members(c, v, lo, hi, m, n, eps, lazy, mkeep, horizon, changed, cval, cdead, head, tail, nxt, prv,
                            slot_qid, qa, qb, qlast, qdead, off, out_q, out_off, out_val, out_prev, meta)
    cat[c] = n
    ckey[c] = min(cdead[c], sdead[c])


@numba.njit(cache=True, nogil=True)
def _flush(xs, p0, p1, v, lo, hi, pin, m, n, sbuf, meta, pre, pf, pt):
    """Merge the pending elements xs[p0:p1] (the last p1 - p0 of the n) into the summary; returns
    its size. Up to SMALL of them are insertion-sorted in ``sbuf`` (no allocation)."""
    c = p1 - p0
    meta[M_CHUNKS] += 1
    if c <= SMALL:
        for t in range(c):
            x = xs[p0 + t]
            u = t - 1
            while u >= 0 and sbuf[u] > x:
                sbuf[u + 1] = sbuf[u]
                u -= 1
            sbuf[u + 1] = x
        chunk = sbuf[:c]
    else:
        chunk = period_chunk(xs, p0, c, meta[M_PERIOD], pre, pf, pt)
    return merge_inplace(v, lo, hi, pin, m, n - c, chunk)


@numba.njit(cache=True, nogil=True)
def _any_expired(heap, cdead, cat, size, n):
    """Algorithm 3's global trigger: an evaluated cluster's deadline expired (a cluster a
    registration created or changed, ``cat`` < 0, is re-evaluated on its own)."""
    for t in range(size):
        if cdead[heap[t]] < n and cat[heap[t]] >= 0:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def process(xs, v, lo, hi, pin, ov, olo, ohi, opin, meta, eps, mode, keep, mkeep, lazy, nlive, ca, cb, cval, cdead, cforce,
            cat, ckey, sdead, heap, hpos, head, tail, nxt, prv, slot_qid, qa, qb, qlast, qdead, out_q, out_off, out_val,
            out_prev, pre, pf, pt, cqk):
    """Insert ``xs`` (see module doc; a chunk that is one whole merge period is taken sorted from
    ``pre``, see :func:`._gk_kernels.period_chunk`; cluster mode tries :func:`_quick_lval` on a
    cluster when ``cqk`` says its last re-evaluation kept its value, as a fire that changed it
    usually is followed by another change). Returns (elements consumed, summary arrays swapped?).
    Stops early when the summary or the output arrays lack room (the caller grows them and calls
    again with the rest). The heap is keyed by ``ckey`` (a cluster's own deadline or its members')."""
    m = meta[M_M]
    n = meta[M_N]
    total = xs.shape[0]
    p = 0
    p0 = 0  # xs[p0:p]: elements counted in n but not merged yet (cluster mode defers the merge)
    swapped = False
    cap = v.shape[0]
    sbuf = np.empty(SMALL, np.float64)
    defer = mode == 0 and lazy < 0
    hint = np.zeros(cval.shape[0], np.int64)  # per cluster: index of its value's tuple at its last fire
    while p < total:
        size = meta[M_HSIZE]
        if meta[M_NOUT] + 2 * nlive + 2 > out_q.shape[0]:
            break
        c = min(total - p, meta[M_NEXT] - n)
        if m + (p - p0) + c > cap:
            break
        if mode == 2:
            c = 1
        elif size > 0 and ckey[heap[0]] < n + c:
            c = max(ckey[heap[0]] + 1 - n, 1)
        n += c
        p += c
        boundary = False
        if n >= meta[M_NEXT] or not defer or size == 0:
            m = _flush(xs, p0, p, v, lo, hi, pin, m, n, sbuf, meta, pre, pf, pt)
            p0 = p
        if n >= meta[M_NEXT]:
            m = compress(v, lo, hi, pin, m, n, eps)
            while meta[M_NEXT] <= n:
                meta[M_NEXT] += meta[M_PERIOD]
            boundary = True
        off = p - 1
        if size == 0:
            continue
        if defer:  # CASU, cluster mode: the fired triggers at n, then (at a boundary) the early ones
            hz = n
            while True:
                cl = heap[0]
                if ckey[cl] >= hz:
                    if boundary and hz == n:
                        hz = meta[M_NEXT]
                        continue
                    break
                if hz != n and cat[cl] == n:
                    break
                Lq = -1.0
                if cqk[cl] and cdead[cl] < hz and not cforce[cl]:
                    Lq, qi = _quick_lval(v, lo, hi, m, n, eps, keep, ca[cl], cb[cl], cval[cl], xs, p0, p, hint[cl])
                    if qi >= 0:
                        hint[cl] = qi
                meta[M_FIRES] += 1
                meta[M_EVALS] += 1
                if Lq >= 0.0:  # kept, no search, no merge
                    cdead[cl] = deadline(Lq, n)
                else:
                    if p0 < p:  # the full re-evaluation needs the summary at n
                        m = _flush(xs, p0, p, v, lo, hi, pin, m, n, sbuf, meta, pre, pf, pt)
                        p0 = p
                    u = cval[cl]
                    nv, cdead[cl], ch, hint[cl] = _reeval(v, lo, hi, pin, m, n, eps, keep, ca[cl], cb[cl], u, cforce[cl],
                                                          hint[cl])
                    cqk[cl] = not ch
                    if ch:
                        meta[M_CHANGES] += 1
                        cval[cl] = nv
                        cforce[cl] = False
                        k = meta[M_NOUT]
                        out_q[k] = cl
                        out_off[k] = off
                        out_val[k] = nv
                        out_prev[k] = u
                        meta[M_NOUT] = k + 1
                cat[cl] = n
                ckey[cl] = min(cdead[cl], sdead[cl])
                sift_down(heap, hpos, ckey, 0, size)
        elif mode == 0:
            while size > 0 and ckey[heap[0]] < n:
                cl = heap[0]
                _fire(cl, v, lo, hi, pin, m, n, eps, keep, mkeep, mode, lazy, ca, cb, cval, cdead, cforce, cat, ckey, sdead,
                      head, tail, nxt, prv, slot_qid, qa, qb, qlast, qdead, off, out_q, out_off, out_val, out_prev,
                      meta, False, n)
                sift_down(heap, hpos, ckey, 0, size)
        elif ckey[heap[0]] < n or mode == 2:
            # Algorithm 3: when the global trigger (the smallest cluster deadline) fires, every
            # cluster is re-evaluated; a member deadline only walks its own cluster, and a cluster
            # a registration created or changed is re-evaluated alone (§3.5.1: "invoked with only Q'")
            glob = mode == 2 or _any_expired(heap, cdead, cat, size, n)
            for t in range(size):
                _fire(heap[t], v, lo, hi, pin, m, n, eps, keep, mkeep, mode, lazy, ca, cb, cval, cdead, cforce, cat, ckey,
                      sdead, head, tail, nxt, prv, slot_qid, qa, qb, qlast, qdead, off, out_q, out_off, out_val,
                      out_prev, meta, glob, n)
            for t in range(size // 2 - 1, -1, -1):
                sift_down(heap, hpos, ckey, t, size)
        if boundary and mode != 2 and not defer:
            # at a merge-period boundary (an absolute stream position, so the batch split never
            # moves it), triggers that would fire inside the coming period are processed now, so
            # that the period's chunk is cut as rarely as possible
            nb = meta[M_NEXT]
            while ckey[heap[0]] < nb:
                cl = heap[0]
                if cat[cl] == n:
                    break
                glob = mode == 1 and cdead[cl] < nb and cat[cl] >= 0
                _fire(cl, v, lo, hi, pin, m, n, eps, keep, mkeep, mode, lazy, ca, cb, cval, cdead, cforce, cat, ckey, sdead,
                      head, tail, nxt, prv, slot_qid, qa, qb, qlast, qdead, off, out_q, out_off, out_val, out_prev,
                      meta, False, nb)
                sift_down(heap, hpos, ckey, 0, size)
                if glob:  # Algorithm 3: the global trigger re-evaluates every cluster
                    for t in range(size):
                        if cat[heap[t]] != n:
                            _fire(heap[t], v, lo, hi, pin, m, n, eps, keep, mkeep, mode, lazy, ca, cb, cval, cdead, cforce,
                                  cat, ckey, sdead, head, tail, nxt, prv, slot_qid, qa, qb, qlast, qdead, off, out_q,
                                  out_off, out_val, out_prev, meta, True, n)
                    for t in range(size // 2 - 1, -1, -1):
                        sift_down(heap, hpos, ckey, t, size)
    if p0 < p:
        m = _flush(xs, p0, p, v, lo, hi, pin, m, n, sbuf, meta, pre, pf, pt)
    meta[M_M] = m
    meta[M_N] = n
    return p, swapped


__all__ = ["INF_DEADLINE", "order_updates", "process", "heap_push", "heap_remove", "heap_update", "lookup_many"]
