"""WJ-Dynamic's per-tuple choice (paper 003 §4.2, Theorem 4) as one numba call over a batch.

The four window-join cost formulas of :mod:`vigil.joins.costs` (WJ-JoinFirst, WJ-SelectFirst,
WJ-SSI, WJ-Hotspot, with the fitted parameters) evaluated per arriving tuple and their argmin,
from the statistics the router keeps (:mod:`vigil.joins.histograms`):

* m' from the equi-width key histogram of the stored side (bucket count / integers per bucket);
* n', n'' from the bucket histograms of the arriving-side query ranges (all / scattered);
* m_b, exact (the caller counts it on the stored side's (key, time) order, two binary searches
  per part, :func:`window_partners`);
* m̄_b and m̄_b^H read from WJ-SSI's and WJ-Hotspot's skyline caches (exact: the unique skyline
  points of key b inside the tuple's window) where the key's entry is fresh; elsewhere (key not
  probed by that plan yet, entry stale after a change of the stabbing points or a w_max
  increase, no stored partner) the expected skyline size min(m_b, 2 tau (1 + ln(1 + m_b / 2
  tau))) (tau: the stabbing number, or the hotspot count for m̄_b^H).

Calibration (ours, on by default for window joins): the fitted models price each plan from
per-tuple timings taken one tuple at a time (warm caches); inside a batch of 1,000 the plans'
real costs differ by other factors (measured at 20k x 20k: WJ-JoinFirst ~1.3 us per tuple in a
batch against a mean estimate of several us, WJ-SSI ~2.5 us), so the argmin sent ~47% of the
tuples to WJ-SSI and dynamic ran at 0.62-0.71x forced WJ-JoinFirst. The operator divides each
plan's measured sub-batch time by its uncalibrated estimate (``est``) and keeps an exponential
average per plan as its factor ``cal``; a plan not measured yet gets the lowest measured factor.
A multiplicative factor cannot price a sub-batch's fixed cost (tuples estimated at ~0 us, e.g.
no partner inside the window, stayed on WJ-SSI whatever its factor), hence the split rule of
the select router: a plan other than the batch's incumbent keeps its tuples only if their summed
calibrated saving exceeds ``split`` (Dynamic.window_split_us).

Before this kernel the window router built these as numpy arrays and evaluated
:func:`vigil.joins.costs.costs` (about ten temporaries per batch); the choice is the same
(the argmin, first plan on ties; tests/joins/test_dynamic_route.py). Cost: O(1) per tuple plus
the m_b count; O(n) scratch (the batch's costs).
"""

from __future__ import annotations

import math

import numba
import numpy as np

SAMPLE, FULL_EVERY = 16, 8  # quiet batches (route_batch)
# layout of the scalar vector: log|S|, log|Q|, log|Q^S|, sqrt|Q|, sqrt|Q^H|, tau, hotspots
LS, LQ, LQS, SQ, SQH, TAU, HOT = range(7)
PLANS = 4


def scalars(S: float, Q: float, QS: float, QH: float, tau: float, hot: float) -> np.ndarray:
    return np.array([np.log2(2.0 + S), np.log2(2.0 + Q), np.log2(2.0 + QS), np.sqrt(Q), np.sqrt(QH),
                     tau, hot], np.float64)


@numba.njit(cache=True, nogil=True, inline="always")
def _hist(a, e0, w, h, n_left, n_right):
    nb = len(h)
    if a != a:
        return 0.0
    if a < e0:
        return n_left
    if a >= e0 + nb * w:
        return n_right
    return h[min(nb - 1, int((a - e0) / w))]


@numba.njit(cache=True, nogil=True, inline="always")
def _skyline(mb, tau, cached):
    """m̄_b: read from the plan's skyline cache when its entry is fresh (``cached`` >= 0), else the
    expected skyline size of m_b points over 2 tau slab sides."""
    if cached >= 0.0:
        return cached
    tt = 2.0 * max(tau, 1.0)
    return min(mb, tt * (1.0 + math.log1p(mb / tt)))


@numba.njit(cache=True, nogil=True)
def route(key, x, mb, mbs, mbh, klo, kw, kcounts, ne0, nw, nh, nl, nr, se0, sw, sh, sl, sr, sc, p, cal, split, est, out):
    """The plan of each tuple into ``out`` (0 join_first, 1 select_first, 2 ssi, 3 hotspot, the
    order of ``vigil.joins.costs.MODELS['window']``); ``p``: its 13 parameters in that order;
    ``kw`` 0: no key histogram (m' = 0); ``mbs`` / ``mbh``: m̄_b from WJ-SSI's / WJ-Hotspot's
    skyline cache (-1: no fresh entry, estimated); each plan's estimate is multiplied by ``cal[plan]`` (its
    calibration factor) before the argmin. The *incumbent* is the plan of lowest calibrated total
    over the batch; another plan keeps its tuples only if their summed calibrated saving exceeds
    ``split`` (us: the fixed cost of one more sub-batch; 0 gives the per-tuple argmin).
    ``est[plan]`` receives the uncalibrated estimates (us) of the tuples sent to it. Returns the
    plan if every tuple got the same, else -1."""
    n = len(key)
    nk = len(kcounts)
    cost = np.empty((n, PLANS))
    tot = np.zeros(PLANS)
    for i in range(n):
        mp = 0.0
        b = key[i]
        if kw > 0 and b >= klo:
            j = int((b - klo) // kw)
            if j < nk:
                mp = kcounts[j] / kw
        lmp = math.log2(1.0 + mp)
        n1 = _hist(x[i], ne0, nw, nh, nl, nr)
        n2 = _hist(x[i], se0, sw, sh, sl, sr)
        m = mb[i]
        cost[i, 0] = p[0] * sc[LS] + p[1] * m * sc[SQ]
        cost[i, 1] = p[2] * sc[LS] + p[3] * sc[LQ] + p[4] * n1 * lmp
        cost[i, 2] = p[5] * sc[LS] + p[6] * mp + p[7] * _skyline(m, sc[TAU], mbs[i]) * sc[SQ]
        cost[i, 3] = (p[8] * sc[LS] + p[9] * mp + p[10] * _skyline(m, sc[HOT], mbh[i]) * sc[SQH] + p[11] * sc[LQS]
                      + p[12] * n2 * lmp)
        for j in range(PLANS):
            tot[j] += cost[i, j] * cal[j]
    inc = 0
    for j in range(1, PLANS):
        if tot[j] < tot[inc]:
            inc = j
    gain = np.zeros(PLANS)
    for i in range(n):
        k = 0
        for j in range(1, PLANS):
            if cost[i, j] * cal[j] < cost[i, k] * cal[k]:
                k = j
        out[i] = k
        gain[k] += cost[i, inc] * cal[inc] - cost[i, k] * cal[k]
    for j in range(PLANS):
        est[j] = 0.0
    first = -2
    for i in range(n):
        k = out[i]
        if k != inc and gain[k] <= split:
            k = inc
            out[i] = k
        est[k] += cost[i, k]
        if first == -2:
            first = k
        elif first != k:
            first = -1
    return first


@numba.njit(cache=True, nogil=True)
def window_partners(k2, t2, key, t, wmax, out):
    """out[i] += the stored tuples with key == key[i] and t[i] - time < wmax, over one part of a
    side sorted by (key, time) (times are non-decreasing within a key): O(log N) per tuple."""
    n = len(k2)
    for i in range(len(key)):
        lo, hi = 0, n
        while lo < hi:  # first index with k2 >= key
            mid = (lo + hi) >> 1
            if k2[mid] < key[i]:
                lo = mid + 1
            else:
                hi = mid
        a = lo
        hi = n
        while lo < hi:  # first index with k2 > key
            mid = (lo + hi) >> 1
            if k2[mid] <= key[i]:
                lo = mid + 1
            else:
                hi = mid
        b = lo
        lo, hi = a, b
        while lo < hi:  # first index of the block with t - time < wmax
            mid = (lo + hi) >> 1
            if t[i] - t2[mid] >= wmax:
                lo = mid + 1
            else:
                hi = mid
        out[i] += b - lo


def _pass(op, side, o, key, x, t, out) -> int:
    """One routing pass over (key, x, t): exact m_b, then :func:`route`."""
    sd = op.sides[o]
    k = np.ascontiguousarray(key, np.int64)
    tt = np.ascontiguousarray(t, np.float64)
    mb = np.zeros(len(k))
    for part in sd.parts():
        window_partners(part.k2, part.t2, k, tt, float(op._scal["wmax"]), mb)
    mbs, mbh = op.cached_mbar(side, k, tt)
    sc = op._scal[side]
    sv = scalars(len(sd.seqs), op._scal["Q"], sc["QS"], sc["QH"], sc["tau"], sc["hot"])
    kh, nh, sh = op.keyhist[o], op.nhist[side], op.shist[side]
    cal = op._wcal.get(side)
    if cal is None:
        cal = op._wcal[side] = np.ones(PLANS)
    return route(k, np.ascontiguousarray(x, np.float64), mb, mbs, mbh, kh.lo, 0.0 if kh.empty else kh.w, kh.counts,
                 nh.e0, nh.w, nh.h, nh.n_left, nh.n_right, sh.e0, sh.w, sh.h, sh.n_left, sh.n_right,
                 sv, op._wparams, cal, op.window_split_us, op._est, out)


def route_batch(op, side, o, key, x, t, out) -> int:
    """The plans of a batch arriving on ``side`` (stored side ``o``) into ``out``. Quiet batches:
    after a full pass that kept a whole batch (>= 2 SAMPLE tuples) on one plan, the next batches
    go to that plan unrouted, and every FULL_EVERY-th batch is routed in full again (a sampled
    pass like the select router's costs ~25 us of fixed work, a third of WJ-JoinFirst's own time
    on 1,000 tuples at 20k x 20k). Quiet batches are not used for the calibration (``op._est``
    zeroed). Returns the plan if all tuples got the same, else -1."""
    n = len(key)
    st = op._wquiet.setdefault(side, [-1, 0])  # [plan of the last full pass if undivided, batches]
    st[1] += 1
    if st[0] >= 0 and n >= 2 * SAMPLE and st[1] % FULL_EVERY != 0:
        op._est[:] = 0.0
        out[:n] = st[0]
        return st[0]
    first = _pass(op, side, o, key, x, t, out)
    st[0] = first if n >= 2 * SAMPLE else -1
    return first
