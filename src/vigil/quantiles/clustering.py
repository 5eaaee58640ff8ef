"""Query intervals for clustering continuous quantile queries (paper 004, §3.1: Observation 1,
equation (2), Theorem 2, Theorem 3).

This module holds only the query-interval functions; the clustering algorithms QC_A, QC_B and the
online clustering OQC (paper 004 §3.3) are to be built around them by a later engineer.

A query q = (phi_q, eps_q) against an eps-approximate summary (eps <= eps_q; a query with
eps_q < eps is raised to eps_q = eps, §2.4) is transferred into its *query interval*

    I_q = [phi_q - (eps_q - eps), phi_q + (eps_q - eps)]  intersected with  (0, 1]     (2)

so that any answer of the summary to (phi, eps) for a phi in I_q answers q (Theorem 2). A set of
queries can share one answer iff the intersection of their intervals (the cluster interval) is
non-empty. In rank terms (Theorem 3), a summary tuple (u, r-, r+) over N elements answers every
query of a cluster with interval [a, b] iff (a - eps)N <= r- <= r+ <= (b + eps)N:
:func:`result_rank_range`.

The left end is clipped at 0, where the paper's interval is open (Remark after Theorem 3); like
the paper we treat it as closed, which changes no answer (no phi is 0, and the rank bound
(0 - eps)N is below every rank). Arithmetic is float64, so an end may differ from its decimal
value by an ulp. Time O(1) per query, vectorized over arrays.
"""

from __future__ import annotations

import numpy as np


def query_interval(phi, eps_q, eps: float):
    """Query interval [a, b] of (phi, eps_q) against an eps-approximate summary (equation (2)).
    Scalars give floats, arrays give arrays (vectorized over any number of queries)."""
    phi = np.asarray(phi, dtype=np.float64)
    half = np.maximum(np.asarray(eps_q, dtype=np.float64) - float(eps), 0.0)
    a = np.maximum(phi - half, 0.0)
    b = np.minimum(phi + half, 1.0)
    if a.ndim == 0:
        return float(a), float(b)
    return a, b


def result_rank_range(a, b, eps: float, n: int):
    """Ranks allowed for a result tuple of a cluster with interval [a, b] over n elements
    (Theorem 3): (a - eps) * n <= r- <= r+ <= (b + eps) * n; returns ((a - eps) * n, (b + eps) * n)."""
    lo = (np.asarray(a, dtype=np.float64) - eps) * n
    hi = (np.asarray(b, dtype=np.float64) + eps) * n
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi
