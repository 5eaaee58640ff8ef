"""The push kernel of the suffix structure (:mod:`.suffix`): elements in, notify updates out.

Mature notify queries (at least ``Y`` elements in their window) are re-evaluated on the suffix
summaries when their deadline comes (:func:`_evaluate`: the held value's counts, a search only
when it no longer lasts); the check of a held value is inlined in the push loop (a call passing
the structure's ~20 arrays cost more than the check: numba's reference counts). Deadlines are
positions: the due queries sit in ``B`` buckets by the element after their deadline (a linked
list per bucket), a deadline more than B - 2 elements ahead is checked at that cap instead (an
early check is still a valid one): O(1) per evaluation instead of a heap's O(log Q). The open
buffer is counted by a scan there, and sorted only before a search.

Young queries (fewer than ``Y`` elements since their registration) are served exactly instead:
their whole window is the last N elements, so every registration position with young queries
keeps a *young buffer*, the sorted values of its window (shared by the queries registered
there), and each young query the exact counts lo = #(< v), hi = #(<= v) of its held value v,
updated by one comparison per element. The value is kept while some rank it occupies,
[lo + 1, hi], lies within the contract's e*N + 1 of the target max(1, ceil(phi*N)) (docs/contract.md),
checked at every element; when it leaves, the new value is the window's element at the target
rank (the buffer's entry t - 1). On a summary a young query's rank bound e*N + 1 leaves no room
for the summaries' uncertainty (e*N < 1 below N = 1/e), so it was re-evaluated at nearly every
element with a search each time; here a check is one comparison and a change one array read.
When the window reaches Y elements the query is evaluated on the summaries once and joins the
buckets. Young buffers: at most one per registration position among the last Y elements, each of
Y values (space O(Y^2) at worst, whatever the number of queries).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._suffix_kernels import (
    F_E,
    F_LAST,
    F_PHI,
    M_EVALS,
    M_HS,
    M_NE,
    M_NOUT,
    M_NYB,
    M_NYQ,
    M_OC,
    M_OSN,
    M_SEARCHES,
    MAXL,
    Q_DEAD,
    Q_K,
    Q_ON,
    Q_S0,
    _closed,
    _life,
    _os_counts,
    _parts,
    _target,
    best,
    flush_open,
    sort_open,
)

_NJ = {"cache": True, "nogil": True}
_NI = {"cache": True, "nogil": True, "inline": "always"}

Y = 256  # young queries: windows of fewer than Y elements (module doc)
B = 4096  # deadline buckets (a power of two; module doc)
# young query rows (yq): slot, young buffer, lo = #(< v), hi = #(<= v) over the window
YQ_SLOT, YQ_BUF, YQ_LO, YQ_HI = range(4)
# young buffer rows (yb): element count at its registration position, queries referring to it
YB_S0, YB_REF = range(2)


@numba.njit(**_NI)
def _enqueue(bh, nextq, qi, s, ne):
    """Queue slot s, valid through qi[Q_DEAD, s] >= ne, in the bucket of the element after its
    deadline, capped at ne + B - 2 (an early check is only an early check): bucket k holds the
    slots due at the element whose count is k mod B (no two such elements in the queue at once)."""
    nb = len(bh)
    d = min(qi[Q_DEAD, s], ne + nb - 2)
    qi[Q_DEAD, s] = d
    k = (d + 1) & (nb - 1)
    nextq[s] = bh[k]
    bh[k] = s


@numba.njit(**_NJ)
def enqueue(bh, nextq, qi, s, ne):
    """:func:`_enqueue` from Python (a snapshot's heap into buckets), a due slot at the next element."""
    qi[Q_DEAD, s] = max(qi[Q_DEAD, s], ne)
    _enqueue(bh, nextq, qi, s, ne)


@numba.njit(**_NI)
def _held_counts(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, s, parts, y):
    """(upper bound of #<y, lower bound of #<=y) over slot s's window now. Inlined where it is
    called: on the hot path a call passing these arrays costs more than the check (numba's
    reference counts)."""
    ub, lb = _closed(meta, pv, pa, pb, sm, nodes, qf, qi, qc, s, parts, y)
    ub, lb = _os_counts(meta, osv, osa, osb, y, ub, lb)
    for k in range(meta[M_OC]):  # the open buffer by a scan (it need not be sorted)
        v = ob[k]
        ub += np.int64(v < y)
        lb += np.int64(v <= y)
    return ub, lb


@numba.njit(**_NI)
def keeps(dh, n, e):
    """Is a held value with life dh kept (rather than searching a new one)? While it lasts at
    least 1/8 of the longest life 2*e*n / (1 - 2e) (module doc of :mod:`._suffix_kernels`)."""
    full = np.int64(math.floor(2.0 * e * n / (1.0 - 2.0 * e))) if e < 0.5 else np.int64(0)
    return dh >= 0 and 8 * dh >= full


@numba.njit(**_NJ)
def _evaluate(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, s, parts, L, R, RI, cand):
    """Re-evaluate notify slot s: sets its deadline; returns (changed, value)."""
    meta[M_EVALS] += 1
    ne = meta[M_NE]
    n = ne - qi[Q_S0, s]
    last = qf[F_LAST, s]
    e = qf[F_E, s]
    phi = qf[F_PHI, s]
    t = _target(phi, n)
    top = e * n
    dh = np.int64(-1)
    if last == last:
        hu, hl = _held_counts(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, s, parts, last)
        dh = _life(hu, hl, t, top, phi, e)
        if keeps(dh, n, e):
            qi[Q_DEAD, s] = ne + dh
            return False, last
    meta[M_SEARCHES] += 1
    sort_open(meta, ob)
    np_ = _parts(meta, nodes, qi[Q_K, s], parts)
    # a new value: aim where both sides last equally long (the rank side that the elements can
    # push faster gets the larger slack), halfway, to leave room for the summaries' uncertainty
    shift = float(int(0.5 * top * (2.0 * phi - 1.0) / (1.0 - 2.0 * e))) if e < 0.5 else 0.0
    bv, bd, ub, lb = best(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, t + shift, L, R, RI, cand)
    db = np.int64(-1)
    if bv == bv:
        db = _life(ub, lb, t, top, phi, e)
    if db < 0 and shift != 0.0:
        bv, bd, ub, lb = best(meta, pv, pa, pb, sm, parts, np_, osv, osa, osb, ob, t, L, R, RI, cand)
        if bv == bv:
            db = _life(ub, lb, t, top, phi, e)
    if dh >= 0 and 2 * dh >= db:
        qi[Q_DEAD, s] = ne + dh
        return False, last
    qi[Q_DEAD, s] = ne + max(db, np.int64(0))
    return bv != last, bv


@numba.njit(**_NI)
def _targets(phi, n):
    """(lowest, highest) target rank max(1, ceil(phi*n)) can be given phi*n's rounding, in [1, n]."""
    f = phi * n
    t0 = min(n, max(1, np.int64(math.ceil(f - 1e-9))))
    t1 = min(n, max(1, np.int64(math.ceil(f + 1e-9))))
    return t0, t1


@numba.njit(**_NI)
def _young_ok(lo, hi, n, phi, e):
    """Does a value occupying ranks [lo + 1, hi] of n meet the contract's bound (rounding-safe)?"""
    if hi <= lo:
        return False
    t0, t1 = _targets(phi, n)
    d = max(0, lo + 1 - t0, t1 - hi)
    return d <= np.int64(math.floor(e * n - 1e-9)) + 1


@numba.njit(**_NJ)
def young_add(meta, yq, yb, yv, slot, ne):
    """A notify query registered now (ne elements pushed) starts young, on the young buffer of
    this position (created if none). The caller reserved a row in yq, yb and yv."""
    nb = meta[M_NYB]
    b = -1
    for k in range(nb):
        if yb[YB_S0, k] == ne:
            b = k
    if b < 0:
        b = nb
        yb[YB_S0, b] = ne
        yb[YB_REF, b] = 0
        meta[M_NYB] = nb + 1
    yb[YB_REF, b] += 1
    j = meta[M_NYQ]
    yq[YQ_SLOT, j] = slot
    yq[YQ_BUF, j] = b
    yq[YQ_LO, j] = 0
    yq[YQ_HI, j] = 0
    meta[M_NYQ] = j + 1


@numba.njit(**_NI)
def _young_drop(meta, yq, yb, yv, j):
    """Remove young query j (and its buffer when no query refers to it); returns the next j to visit."""
    b = yq[YQ_BUF, j]
    nq = meta[M_NYQ] - 1
    yq[:, j] = yq[:, nq]
    meta[M_NYQ] = nq
    yb[YB_REF, b] -= 1
    if yb[YB_REF, b] == 0:
        nb = meta[M_NYB] - 1
        if b != nb:
            yb[:, b] = yb[:, nb]
            yv[b, :] = yv[nb, :]
            for k in range(nq):
                if yq[YQ_BUF, k] == nb:
                    yq[YQ_BUF, k] = b
        meta[M_NYB] = nb
    return j


@numba.njit(**_NJ)
def push(x, p0, meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, tv, ta, tb, delta, qf, qi, qc, bh, nextq, nlive,
         oslot, ooff, oval, yq, yb, yv):
    """Insert x[p0:] and run the young queries and the due mature ones; stops early (returning
    the index reached) when the output buffers or the open summary could overflow."""
    bmax = len(ob)
    ycap = yv.shape[1]
    parts = np.empty(2 * MAXL + 2, np.int64)
    L, R, RI, cand = np.empty(2 * MAXL + 2, np.int64), np.empty(2 * MAXL + 2, np.int64), np.empty(2 * MAXL + 2, np.int64), np.empty(64)
    for i in range(p0, len(x)):
        if meta[M_NOUT] + nlive + 1 > len(oslot) or 2 * (meta[M_OSN] + bmax + 2) > len(osv):
            return i  # (the caller grows the output buffers or the open summary)
        if meta[M_OC] == bmax:
            flush_open(meta, ob, osv, osa, osb, tv, ta, tb, delta)
        y = x[i]
        oc = meta[M_OC]
        ob[oc] = y
        meta[M_OC] = oc + 1
        ne = meta[M_NE] + 1
        meta[M_NE] = ne
        # young buffers: insert the element (sorted)
        for b in range(meta[M_NYB]):
            c = ne - 1 - yb[YB_S0, b]
            if c >= ycap:
                continue
            k = c
            while k > 0 and yv[b, k - 1] > y:
                yv[b, k] = yv[b, k - 1]
                k -= 1
            yv[b, k] = y
        j = 0
        while j < meta[M_NYQ]:
            s = yq[YQ_SLOT, j]
            if qi[Q_ON, s] == 0:
                j = _young_drop(meta, yq, yb, yv, j)
                continue
            n = ne - qi[Q_S0, s]
            if n >= ycap:  # grown up: on the summaries from now on (its value was valid at n - 1)
                changed, val = _evaluate(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, s, parts, L,
                                         R, RI, cand)
                if changed:
                    w = meta[M_NOUT]
                    oslot[w], ooff[w], oval[w] = s, i, val
                    meta[M_NOUT] = w + 1
                    qf[F_LAST, s] = val
                _enqueue(bh, nextq, qi, s, ne)
                meta[M_HS] += 1
                j = _young_drop(meta, yq, yb, yv, j)
                continue
            b = yq[YQ_BUF, j]
            v = qf[F_LAST, s]
            lo = yq[YQ_LO, j]
            hi = yq[YQ_HI, j]
            if y < v:
                lo += 1
                hi += 1
            elif y == v:
                hi += 1
            phi = qf[F_PHI, s]
            e = qf[F_E, s]
            if not _young_ok(lo, hi, n, phi, e):
                t = min(n, max(1, np.int64(math.ceil(phi * n - 1e-9))))
                nv = yv[b, t - 1]
                lo = t - 1
                while lo > 0 and yv[b, lo - 1] == nv:
                    lo -= 1
                hi = t
                while hi < n and yv[b, hi] == nv:
                    hi += 1
                if nv != v:
                    w = meta[M_NOUT]
                    oslot[w], ooff[w], oval[w] = s, i, nv
                    meta[M_NOUT] = w + 1
                    qf[F_LAST, s] = nv
            yq[YQ_LO, j] = lo
            yq[YQ_HI, j] = hi
            j += 1
        k = ne & (len(bh) - 1)
        s = bh[k]
        bh[k] = -1
        while s >= 0:  # the queries due now: their held value is valid through ne - 1
            nxt = nextq[s]
            if qi[Q_ON, s] == 0:
                meta[M_HS] -= 1
                s = nxt
                continue
            last = qf[F_LAST, s]
            if last == last:  # the held value's check, inline (the common case: kept)
                hu, hl = _held_counts(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, s, parts, last)
                n = ne - qi[Q_S0, s]
                e = qf[F_E, s]
                phi = qf[F_PHI, s]
                dh = _life(hu, hl, _target(phi, n), e * n, phi, e)
                if keeps(dh, n, e):
                    meta[M_EVALS] += 1
                    qi[Q_DEAD, s] = ne + dh
                    _enqueue(bh, nextq, qi, s, ne)
                    s = nxt
                    continue
            changed, val = _evaluate(meta, pv, pa, pb, sm, nodes, osv, osa, osb, ob, qf, qi, qc, s, parts, L, R, RI,
                                     cand)
            if changed:
                w = meta[M_NOUT]
                oslot[w], ooff[w], oval[w] = s, i, val
                meta[M_NOUT] = w + 1
                qf[F_LAST, s] = val
            _enqueue(bh, nextq, qi, s, ne)
            s = nxt
    return len(x)
