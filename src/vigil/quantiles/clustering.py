"""Query intervals and offline clustering of continuous quantile queries (paper 004 §3.1, §3.3).

A query q = (phi_q, eps_q) against an eps-approximate summary (eps <= eps_q; a query with
eps_q < eps is raised to eps_q = eps, §2.4) is transferred into its *query interval*

    I_q = [phi_q - (eps_q - eps), phi_q + (eps_q - eps)]  intersected with  (0, 1]     (2)

so that any answer of the summary to (phi, eps) for a phi in I_q answers q (Theorem 2). A set of
queries can share one answer iff the intersection of their intervals (the cluster interval) is
non-empty. In rank terms (Theorem 3), a summary tuple (u, r-, r+) over N elements answers every
query of a cluster with interval [a, b] iff (a - eps)N <= r- <= r+ <= (b + eps)N:
:func:`result_rank_range`. The left end is clipped at 0, where the paper's interval is open
(Remark after Theorem 3); like the paper we treat it as closed, which changes no answer.

Clustering predefined queries (§3.3), both O(G log G) for G queries plus the DP:

- :func:`remove_containment`: the skyline-like preprocessing: keep the *minimal* intervals (those
  containing no other); every other query is assigned to a minimal interval inside its own.
- :func:`qc_a`: Algorithm 1 (MWC): a dynamic program over the minimal intervals sorted by left end
  that minimizes sum_i 1 / ln(1 + |I_Qi| / (2(1 - eps))), Theorem 6's bound on re-evaluations;
  O(sum_i k_i) for k_i the earlier intervals overlapping interval i (Lemma 1). Zero-length
  intervals (point queries) form their own clusters, as in the paper.
- :func:`qc_b`: the minimum number of clusters: the greedy stabbing sweep (sort by right end, a new
  cluster whenever an interval starts after the current stabbing point), optimal (Theorem 7
  bounds it by 1/l_min).

Both return (cluster of each query, cluster intervals a, b). The online clustering (Algorithm 2)
is :mod:`vigil.quantiles.oqc`.
"""

from __future__ import annotations

import numba
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


def remove_containment(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(minimal, host): indices of the minimal intervals sorted by left end (then right end), and
    for every query the index (into ``minimal``) of a minimal interval contained in its own."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    g = len(a)
    if g == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.lexsort((-b, a))  # by a ascending, b descending: a container precedes what it contains
    bs = b[order]
    # minimal iff no later interval (in this order) ends at or before it
    suffix_min = np.minimum.accumulate(bs[::-1])[::-1]
    later_min = np.r_[suffix_min[1:], np.inf]
    keep = later_min > bs
    minimal = order[keep]
    ma, mb = a[minimal], b[minimal]
    # host: the first minimal interval starting at or after a_q has the smallest right end among them
    pos = np.searchsorted(ma, a, "left")
    pos = np.minimum(pos, len(minimal) - 1)
    assert (mb[pos] <= b + 1e-15).all()
    return minimal, pos.astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _mwc(ma, mb, eps):
    k = ma.shape[0]
    cost = np.zeros(k + 1)
    parent = np.zeros(k, np.int64)
    c2 = 2.0 * (1.0 - eps)
    for i in range(k):
        li = mb[i] - ma[i]
        cost[i + 1] = (cost[i] + 1.0 / np.log1p(li / c2)) if li > 0 else np.inf
        parent[i] = i
        j = i - 1
        while j >= 0 and ma[i] <= mb[j]:
            lj = mb[j] - ma[i]
            if lj > 0:
                c = cost[j] + 1.0 / np.log1p(lj / c2)
                if c < cost[i + 1]:
                    cost[i + 1] = c
                    parent[i] = j
            j -= 1
        if li <= 0 and parent[i] == i:  # a point query: its own cluster (cost outside the sum)
            cost[i + 1] = cost[i]
    # walk back the plan
    label = np.empty(k, np.int64)
    ncl = 0
    i = k - 1
    while i >= 0:
        j = parent[i]
        for t in range(j, i + 1):
            label[t] = ncl
        ncl += 1
        i = j - 1
    for t in range(k):
        label[t] = ncl - 1 - label[t]
    return label, ncl


def _finish(minimal, host, label, ncl, a, b):
    cl_of_min = label
    cluster = cl_of_min[host]
    ca = np.full(ncl, -np.inf)
    cb = np.full(ncl, np.inf)
    np.maximum.at(ca, cluster, a)
    np.minimum.at(cb, cluster, b)
    return cluster.astype(np.int64), ca, cb


def qc_a(a: np.ndarray, b: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 (MWC): (cluster of each query, cluster a, cluster b), clusters by left end."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if len(a) == 0:
        return np.empty(0, np.int64), np.empty(0), np.empty(0)
    minimal, host = remove_containment(a, b)
    label, ncl = _mwc(a[minimal], b[minimal], float(eps))
    return _finish(minimal, host, label, ncl, a, b)


def qc_b(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum number of clusters (greedy stabbing sweep): (cluster of each query, a, b)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if len(a) == 0:
        return np.empty(0, np.int64), np.empty(0), np.empty(0)
    order = np.argsort(b, kind="stable")
    cluster = np.empty(len(a), np.int64)
    _stab(a[order], b[order], cluster, order)
    ncl = int(cluster.max()) + 1
    ca = np.full(ncl, -np.inf)
    cb = np.full(ncl, np.inf)
    np.maximum.at(ca, cluster, a)
    np.minimum.at(cb, cluster, b)
    return cluster, ca, cb


@numba.njit(cache=True, nogil=True)
def _stab(sa, sb, cluster, order):
    p = -np.inf
    c = -1
    for i in range(sa.shape[0]):
        if sa[i] > p:
            p = sb[i]
            c += 1
        cluster[order[i]] = c


def mwc_cost(ca: np.ndarray, cb: np.ndarray, eps: float) -> float:
    """MWC's objective sum 1/ln(1 + |I|/(2(1-eps))) over clusters of positive length."""
    length = np.asarray(cb) - np.asarray(ca)
    pos = length > 0
    return float(np.sum(1.0 / np.log1p(length[pos] / (2.0 * (1.0 - eps)))))
