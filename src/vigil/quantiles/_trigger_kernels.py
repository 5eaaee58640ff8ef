"""Numba kernels of the trigger-based lazy updates (paper 004 §3.5, Algorithms 3 and 4) and of the
§2.4 baseline, over one GK summary (:mod:`._gk_kernels`) and a set of query clusters.

Clusters are ids 0..K-1 with interval (ca, cb), current result value ``cval`` (NaN: none yet; the
value is also the trigger's *link* to its summary tuple: the search restarts at the first tuple
with value >= cval, which is that tuple or, once it was merged away, the tuple it was merged into
— the paper's "triggers hanging on t are moved to t'", at no cost when tuples merge) and deadline
``cdead``: the result stays valid while the stream has at most cdead elements (Theorem 4:
cdead = N + floor(L) when chosen at size N). The trigger list is an indexed binary min-heap on
cdead (``heap``, ``hpos``). The paper stores in each heap node the difference to its parent so that
"reduce every trigger by 1" is one decrement of the root; storing the absolute deadline N + L
instead makes a new element cost one comparison of N with the root, the same O(1), and a fire
O(log K).

:func:`process` inserts a batch in chunks cut at the next fire (root deadline + 1) and at the
merge period, so every re-evaluation sees the summary exactly at the element that fired it. At
each merge-period boundary (n a multiple of the period: an absolute position, so how the stream
is split into batches never changes any result or update) the triggers that would fire inside the
coming period are re-evaluated early, which keeps chunks long:

- mode 0 (CASU, Algorithm 4): pop every fired trigger, re-evaluate only that cluster (search from
  its link, :func:`._gk_kernels.best_tuple`), push it back. O(log K + log m) per fire.
- mode 1 (CSU/SU, Algorithm 3): the root is the global trigger T_global = min over clusters; when
  it fires every cluster is re-evaluated and the heap rebuilt. O(K (log m)) per fire.
- mode 2 (naive, §2.4): every element, every cluster, first-hit scan from the head. O(K m) per
  element.

Re-evaluation keeps the current value when it is still a result tuple whose L is at least
``keep`` times the best tuple's (vigil's refinement, fewer messages; keep = 0 is the paper's
"always take the maximum L"); its rank bounds come from its tuple or, once merged, from the
neighbours of where it was (:func:`kept_lval`). Theorem 6's count of re-evaluations grows by at
most the factor log(1 + x)/log(1 + keep*x).

Each re-evaluation whose value differs from the cluster's previous value (or is forced: a query
just joined it) is reported as (cluster, offset in batch, value); :func:`expand` turns these
into per-query updates through the clusters' member lists (linked lists: merging two clusters
splices their lists, O(1)), dropping a query's update when its last value is unchanged.
"""

from __future__ import annotations

import numba
import numpy as np

from ._gk_kernels import INF_DEADLINE, best_tuple, compress, deadline, first_hit, lval, merge_sorted

# meta slots
M_M, M_N, M_NEXT, M_PERIOD, M_HSIZE, M_NOUT, M_EVALS, M_FIRES = range(8)


@numba.njit(cache=True, nogil=True)
def _less(cdead, x, y):
    return cdead[x] < cdead[y]


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
    p = np.searchsorted(v[:m], u)
    if p < m and v[p] == u:
        return lval(lo[p], hi[p], a, b, eps, n)
    if p == 0 or p >= m:
        return -np.inf
    return lval(lo[p - 1] + 1, hi[p] - 1, a, b, eps, n)


@numba.njit(cache=True, nogil=True)
def _last_equal(v, m, u):
    return np.searchsorted(v[:m], u, side="right") - 1


@numba.njit(cache=True, nogil=True)
def unpin(v, pin, m, u):
    """Release the pin of result value u (its tuple is the last one with value u)."""
    if u == u:
        j = _last_equal(v, m, u)
        if j >= 0 and v[j] == u and pin[j] > 0:
            pin[j] -= 1


@numba.njit(cache=True, nogil=True)
def _evaluate(c, v, lo, hi, pin, m, n, eps, keep, need, ca, cb, cval, cdead, cforce, cat, first, off,
              out_c, out_off, out_val, meta):
    meta[M_EVALS] += 1
    cat[c] = n
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
            Lk = kept_lval(v, lo, hi, m, n, ca[c], cb[c], eps, cval[c])
            if Lk >= 0.0 and Lk >= keep * L:
                cdead[c] = deadline(Lk, n)
                return
    cdead[c] = deadline(L, n)
    nv = v[i]
    if nv != cval[c] or cforce[c]:
        if not first:
            unpin(v, pin, m, cval[c])
            pin[_last_equal(v, m, nv)] += 1
        k = meta[M_NOUT]
        out_c[k] = c
        out_off[k] = off
        out_val[k] = nv
        meta[M_NOUT] = k + 1
        cval[c] = nv
        cforce[c] = False


@numba.njit(cache=True, nogil=True)
def process(xs, v, lo, hi, pin, ov, olo, ohi, opin, meta, eps, mode, keep, ca, cb, cval, cdead, cforce, cat,
            heap, hpos, out_c, out_off, out_val):
    """Insert ``xs`` (see module doc). Returns (elements consumed, summary arrays swapped?).
    Stops early when the summary or the output arrays lack room (the caller grows them and calls
    again with the rest)."""
    m = meta[M_M]
    n = meta[M_N]
    total = xs.shape[0]
    p = 0
    swapped = False
    cap = v.shape[0]
    while p < total:
        size = meta[M_HSIZE]
        if meta[M_NOUT] + 2 * size + 2 > out_c.shape[0]:
            break
        c = min(total - p, meta[M_NEXT] - n)
        if m + c > cap:
            break
        if mode == 2:
            c = 1
        elif size > 0 and cdead[heap[0]] < n + c:
            c = max(cdead[heap[0]] + 1 - n, 1)
        chunk = np.sort(xs[p:p + c])
        m = merge_sorted(v, lo, hi, pin, m, n, chunk, ov, olo, ohi, opin)
        v, ov = ov, v
        lo, olo = olo, lo
        hi, ohi = ohi, hi
        pin, opin = opin, pin
        swapped = not swapped
        n += c
        p += c
        boundary = False
        if n >= meta[M_NEXT]:
            m = compress(v, lo, hi, pin, m, n, eps)
            while meta[M_NEXT] <= n:
                meta[M_NEXT] += meta[M_PERIOD]
            boundary = True
        off = p - 1
        if size == 0:
            continue
        if mode == 0:
            while size > 0 and cdead[heap[0]] < n:
                cl = heap[0]
                meta[M_FIRES] += 1
                _evaluate(cl, v, lo, hi, pin, m, n, eps, keep, 0.0, ca, cb, cval, cdead, cforce, cat, False, off,
                          out_c, out_off, out_val, meta)
                sift_down(heap, hpos, cdead, 0, size)
        elif cdead[heap[0]] < n or mode == 2:
            meta[M_FIRES] += 1
            for t in range(size):
                _evaluate(heap[t], v, lo, hi, pin, m, n, eps, keep, 0.0, ca, cb, cval, cdead, cforce, cat,
                          mode == 2, off, out_c, out_off, out_val, meta)
            for t in range(size // 2 - 1, -1, -1):
                sift_down(heap, hpos, cdead, t, size)
        if boundary and mode != 2:
            # at a merge-period boundary (an absolute stream position, so the batch split never
            # moves it), triggers that would fire inside the coming period are re-evaluated now,
            # so that the period's chunk is cut as rarely as possible
            nxt = meta[M_NEXT]
            while cdead[heap[0]] < nxt:
                cl = heap[0]
                if cat[cl] == n:
                    break
                meta[M_FIRES] += 1
                _evaluate(cl, v, lo, hi, pin, m, n, eps, keep, 0.0, ca, cb, cval, cdead, cforce, cat, False, off,
                          out_c, out_off, out_val, meta)
                sift_down(heap, hpos, cdead, 0, size)
                if mode == 1:  # Algorithm 3: the global trigger re-evaluates every cluster
                    for t in range(size):
                        if cat[heap[t]] != n:
                            _evaluate(heap[t], v, lo, hi, pin, m, n, eps, keep, 0.0, ca, cb, cval, cdead, cforce,
                                      cat, False, off, out_c, out_off, out_val, meta)
                    for t in range(size // 2 - 1, -1, -1):
                        sift_down(heap, hpos, cdead, t, size)
    meta[M_M] = m
    meta[M_N] = n
    return p, swapped


@numba.njit(cache=True, nogil=True)
def expand(out_c, out_off, out_val, nout, head, nxt, slot_qid, qlast, res_q, res_off, res_val, count_only):
    """Per-query updates from cluster changes: each member whose last value differs gets one.
    With count_only, only counts (qlast untouched)."""
    k = 0
    for j in range(nout):
        c = out_c[j]
        val = out_val[j]
        s = head[c]
        while s >= 0:
            if count_only:
                k += 1
            elif qlast[s] != val:
                res_q[k] = slot_qid[s]
                res_off[k] = out_off[j]
                res_val[k] = val
                qlast[s] = val
                k += 1
            s = nxt[s]
    return k


@numba.njit(cache=True, nogil=True)
def lookup_many(v, lo, hi, m, n, eps, phi, eps_q, out):
    """Best-tuple answers of single queries (phi, eps_q) on the summary; NaN when empty."""
    for i in range(phi.shape[0]):
        if m == 0:
            out[i] = np.nan
            continue
        half = max(eps_q[i] - eps, 0.0)
        a = max(phi[i] - half, 0.0)
        b = min(phi[i] + half, 1.0)
        out[i] = v[best_tuple(lo, hi, m, a, b, eps, n, m // 2)]


__all__ = ["INF_DEADLINE", "expand", "heap_push", "heap_remove", "heap_update", "lookup_many", "process"]
