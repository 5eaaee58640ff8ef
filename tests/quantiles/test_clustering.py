"""Query intervals, clusters and the trigger value L (paper 004 §3.1-§3.4): Theorems 3, 4 and 5
as property tests against summaries of real data; QC_A, QC_B and OQC produce valid clusterings
(each query's interval contains its cluster's interval, cluster intervals non-empty); QC_B is
minimal (as many clusters as the maximum number of pairwise disjoint intervals); QC_A's MWC cost
is no larger than QC_B's; OQC stays within 1.5x of QC_B's count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.quantiles import _gk_kernels as K
from vigil.quantiles.clustering import mwc_cost, qc_a, qc_b, query_interval, remove_containment
from vigil.quantiles.gk import GKSummary
from vigil.quantiles.oqc import OQC

SET = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rank_range(srt, u):
    return np.searchsorted(srt, u, "left") + 1, np.searchsorted(srt, u, "right")


def valid(srt, u, phi, eq):
    n = len(srt)
    lo, hi = rank_range(srt, u)
    # Definition 3 with the contract's rounding slack on the upper side: some rank r of u with
    # phi*N - eps_q*N <= r <= phi*N + eps_q*N + 1 (hence |r - ceil(phi*N)| <= eps_q*N + 1)
    return lo <= hi and max(0.0, lo - phi * n - eq * n - 1, phi * n - eq * n - hi) <= 1e-9


def summary(seed, n, eps):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 50, n).astype(np.float64) if seed % 2 else rng.random(n)
    g = GKSummary(eps)
    g.insert(x)
    return x, g


@SET
@given(seed=st.integers(0, 1000), n=st.integers(1, 3000), phi=st.floats(0.001, 1.0),
       eq=st.floats(0.01, 0.2), eps=st.sampled_from([0.01, 0.02]))
def test_theorem3_4_5(seed, n, phi, eq, eps):
    x, g = summary(seed, n, eps)
    a, b = query_interval(phi, eq, eps)
    v, lo, hi = g.tuples()
    srt = np.sort(x)
    for i in range(len(v)):
        L = K.lval(lo[i], hi[i], a, b, eps, n)
        in8 = (a - eps) * n - 1e-9 <= lo[i] and hi[i] <= (b + eps) * n + 1 + 1e-9  # + 1: see lval
        assert (L >= -1e-9) == in8  # Corollary 1
        if in8:  # Theorem 3: some phi' in [a, b] is answered with precision eps (+ 1 rank)
            assert max(a, (hi[i] - 1) / n - eps) <= min(b, lo[i] / n + eps) + 1e-9
            assert valid(srt, v[i], phi, max(eq, eps))
    best = K.best_tuple(lo, hi, len(v), a, b, eps, n, len(v) // 3)
    Lb = K.lval(lo[best], hi[best], a, b, eps, n)
    assert Lb >= max(K.lval(lo[i], hi[i], a, b, eps, n) for i in range(len(v))) - 1e-9
    mid = (a + b) / 2  # Theorem 5's premise: Theorem 1 gives a tuple answering (mid, eps)
    if ((lo >= (mid - eps) * n - 1e-9) & (hi <= (mid + eps) * n + 1e-9)).any():
        assert Lb >= (b - a) / (2 * (1 - eps)) * n - 1e-6  # Theorem 5
    if Lb < 0:
        return
    # Theorem 4: v[best] stays a valid answer for floor(L) more elements, whatever they are
    rng = np.random.default_rng(seed + 1)
    d = int(min(K.deadline(Lb, n) - n, 2000))
    for tail in (np.full(d, -1e9), np.full(d, 1e9), rng.random(d)):
        y = np.concatenate([x, tail])
        for k in sorted({0, d // 2, d}):
            assert valid(np.sort(y[: n + k]), v[best], phi, max(eq, eps)), (k, d, Lb)


def check_clustering(a, b, cluster, ca, cb):
    assert (ca <= cb + 1e-15).all()
    assert (a <= ca[cluster] + 1e-15).all() and (cb[cluster] <= b + 1e-15).all()


def max_disjoint(a, b):
    order = np.argsort(b)
    end, k = -np.inf, 0
    for i in order:
        if a[i] > end:
            k, end = k + 1, b[i]
    return k


@SET
@given(phis=st.lists(st.floats(0.001, 1.0), min_size=1, max_size=200), seed=st.integers(0, 99),
       eps=st.sampled_from([0.005, 0.01]))
def test_offline_and_online_clusterings(phis, seed, eps):
    rng = np.random.default_rng(seed)
    phi = np.asarray(phis)
    eq = rng.choice([eps, 0.01, 0.02, 0.05, 0.2], len(phi))
    a, b = query_interval(phi, eq, eps)
    minimal, host = remove_containment(a, b)
    ma, mb = a[minimal], b[minimal]
    assert (np.diff(ma) >= 0).all() and (np.diff(mb) >= 0).all()
    assert (a <= ma[host]).all() and (mb[host] <= b).all()
    ca_ = qc_a(a, b, eps)
    cb_ = qc_b(a, b)
    check_clustering(a, b, *ca_)
    check_clustering(a, b, *cb_)
    assert len(cb_[1]) == max_disjoint(a, b)  # QC_B is minimum (stabbing = max disjoint)
    assert len(ca_[1]) >= len(cb_[1])
    if (b - a > 0).all():
        assert mwc_cost(ca_[1], ca_[2], eps) <= mwc_cost(cb_[1], cb_[2], eps) * (1 + 1e-9)
    o = OQC()
    for q in rng.permutation(len(phi)).tolist():
        o.register(q, float(a[q]), float(b[q]))
    cl = np.array([o.cluster_of[q] for q in range(len(phi))])
    ca = np.array([o.a[c] for c in cl])
    cb = np.array([o.b[c] for c in cl])
    assert (a <= ca).all() and (cb <= b).all() and (ca <= cb).all()
    la, lb = np.array(o.left), np.array(o.right)
    assert (np.diff(la) >= 0).all() and (np.diff(lb) >= 0).all()  # no containment, sorted
    # drop half: clusters only lose members; survivors keep valid intervals
    for q in range(0, len(phi), 2):
        o.drop(q)
    assert sum(len(m) for m in o.members.values()) == len(phi) // 2


@pytest.mark.parametrize("dist", ["uniform", "zipf"])
def test_oqc_within_1_5x_of_qc_b(dist):
    rng = np.random.default_rng(3)
    g = 20000
    if dist == "uniform":
        phi = rng.random(g)
    else:
        phi = np.minimum(1.0, rng.zipf(2.0, g) / 50.0)
    eq = rng.uniform(0.005, 0.02, g)
    a, b = query_interval(phi, eq, 0.005)
    o = OQC()
    for q in range(g):
        o.register(q, float(a[q]), float(b[q]))
    assert len(o) <= 1.5 * len(qc_b(a, b)[1])
