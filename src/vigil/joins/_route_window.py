"""WJ-Dynamic's per-tuple choice (paper 003 §4.2, Theorem 4) as one numba call over a batch.

The four window-join cost formulas of :mod:`vigil.joins.costs` (WJ-JoinFirst, WJ-SelectFirst,
WJ-SSI, WJ-Hotspot, with the fitted parameters) evaluated per arriving tuple and their argmin,
from the statistics the router keeps (:mod:`vigil.joins.histograms`):

* m' from the equi-width key histogram of the stored side (bucket count / integers per bucket);
* n', n'' from the bucket histograms of the arriving-side query ranges (all / scattered);
* m_b, exact (the caller counts it on the stored side's (key, time) order, two binary searches
  per part, :func:`vigil.joins.dynamic._window_partners`);
* m̄_b = min(m_b, 2 tau (1 + ln(1 + m_b / 2 tau))) and m̄_b^H the same with the hotspot count
  (expected skyline sizes; no skyline cache to read them from).

Before this kernel the window router built these as numpy arrays and evaluated
:func:`vigil.joins.costs.costs` (about ten temporaries per batch); the choice is the same
(the argmin, first plan on ties; tests/joins/test_dynamic_route.py). Cost: O(1) per tuple plus
the m_b count; no allocation but ``out``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

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
def _skyline(mb, tau):
    tt = 2.0 * max(tau, 1.0)
    return min(mb, tt * (1.0 + math.log1p(mb / tt)))


@numba.njit(cache=True, nogil=True)
def route(key, x, mb, klo, kw, kcounts, ne0, nw, nh, nl, nr, se0, sw, sh, sl, sr, sc, p, out):
    """The plan of each tuple into ``out`` (0 join_first, 1 select_first, 2 ssi, 3 hotspot, the
    order of ``vigil.joins.costs.MODELS['window']``); ``p``: its 13 parameters in that order;
    ``kw`` 0: no key histogram (m' = 0). Returns the plan if every tuple got the same, else -1."""
    nk = len(kcounts)
    first = -2
    for i in range(len(key)):
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
        c0 = p[0] * sc[LS] + p[1] * m * sc[SQ]
        c1 = p[2] * sc[LS] + p[3] * sc[LQ] + p[4] * n1 * lmp
        c2 = p[5] * sc[LS] + p[6] * mp + p[7] * _skyline(m, sc[TAU]) * sc[SQ]
        c3 = (p[8] * sc[LS] + p[9] * mp + p[10] * _skyline(m, sc[HOT]) * sc[SQH] + p[11] * sc[LQS]
              + p[12] * n2 * lmp)
        k = 0
        best = c0
        if c1 < best:
            k, best = 1, c1
        if c2 < best:
            k, best = 2, c2
        if c3 < best:
            k = 3
        out[i] = k
        if first == -2:
            first = k
        elif first != k:
            first = -1
    return first
