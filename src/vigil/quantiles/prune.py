"""Pruning a mergeable quantile summary before it travels (sharded mode's quantile lookups).

A shard answers a quantile lookup with its part of the query's window as weighted tuples
(v, r-, r+) (:func:`vigil.quantiles.merge_summaries`). A GK summary kept at eps/4 holds
O((4/eps) log(eps n)) tuples; the merge only needs each part's rank gaps r+_i - r-_{i-1} to stay
within 2 e n (then the union is e-approximate, merge_summaries' bound). :func:`prune` keeps the
fewest tuples in one greedy pass that holds that gap (GK's COMPRESS idea): a tuple is dropped while
the gap from the last kept tuple to the next one stays within the budget; the first and last
(the part's maximum, exact) are always kept. O(m) time, at most ~ n / (e n) + 1 = 1/e + 1 tuples
out of any input whose own gaps are within the budget: a tuple is kept only when the gap from
the previous kept one to its successor exceeds 2 e n, so two consecutive kept gaps span more
than 2 e n of rank and the kept tuples number at most n / (e n) + 2."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _keep(lo, hi, budget):  # pragma: no cover - numba
    m = len(lo)
    keep = np.zeros(m, np.bool_)
    if m == 0:
        return keep
    keep[0] = True
    keep[m - 1] = True
    last = 0
    for i in range(1, m - 1):
        if hi[i + 1] - lo[last] > budget:
            keep[i] = True
            last = i
    return keep


def prune(t: np.ndarray, e: float) -> np.ndarray:
    """(m, 3) tuples (v, r-, r+) of a part of n elements (n = the last r+) -> the tuples kept with
    every rank gap within 2 e n (a gap already wider in the input is kept as it is)."""
    t = np.asarray(t, np.float64)
    if t.ndim != 2 or len(t) < 3:
        return t
    keep = _keep(np.ascontiguousarray(t[:, 1]), np.ascontiguousarray(t[:, 2]), 2.0 * float(e) * float(t[-1, 2]))
    return t[keep]
