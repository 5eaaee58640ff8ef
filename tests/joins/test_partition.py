"""Stabbing partitions (paper 003 Lemma 1, Lemma 3 / App. A.1) and hotspot tracking (§2.2,
Theorem 1: invariants I1-I3) as property tests."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.joins.hotspot import HotspotTracker
from vigil.joins.partition import StabbingPartition, canonical_partition, stabbing_number

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def brute_tau(lo, hi):
    """Smallest stabbing set size by the textbook greedy on right endpoints (a different proof)."""
    tau, last = 0, -np.inf
    for a, b in sorted(zip(lo, hi, strict=True), key=lambda x: x[1]):
        if a > last:
            tau, last = tau + 1, b
    return tau


intervals = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=60)


@SETTINGS
@given(iv=intervals)
def test_canonical_partition_is_optimal_and_stabs(iv):
    lo = np.array([a for a, _ in iv], float)
    hi = np.array([a + b for a, b in iv], float)
    group, pts = canonical_partition(lo, hi)
    assert len(pts) == brute_tau(lo, hi)
    assert np.all(np.diff(pts) > 0)
    for i in range(len(lo)):
        assert lo[i] <= pts[group[i]] <= hi[i]


ops = st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(0, 10), st.integers(0, 10 ** 6)), max_size=120)


def replay(struct, ops):
    """Insert / delete intervals in ``struct`` as ``ops`` say; after every update yields the alive
    ids and their endpoints (lo, hi arrays)."""
    alive: list[int] = []
    nxt = 0
    for ins, a, b, pick in ops:
        if ins or not alive:
            struct.insert(nxt, a, a + b)
            alive.append(nxt)
            nxt += 1
        else:
            struct.delete(alive.pop(pick % len(alive)))
        yield alive, np.array([struct.iv[i][0] for i in alive]), np.array([struct.iv[i][1] for i in alive])


@SETTINGS
@given(ops=ops, eps=st.sampled_from([0.1, 0.5, 1.0]), relaxed=st.booleans())
def test_dynamic_partition_lemma3(ops, eps, relaxed):
    p = StabbingPartition(eps, relaxed)
    for _alive, lo, hi in replay(p, ops):
        p.check()
        assert p.size() <= (1 + eps) * stabbing_number(lo, hi) + 1e-9


@SETTINGS
@given(ops=ops, alpha=st.sampled_from([0.05, 0.2, 0.5]), eps=st.sampled_from([0.2, 1.0]))
def test_hotspot_invariants(ops, alpha, eps):
    h = HotspotTracker(alpha, eps)
    for _alive, lo, hi in replay(h, ops):
        h.check()  # I1 and consistency
        assert h.size() <= (1 + eps) * stabbing_number(lo, hi) + 2 / alpha + 1e-9  # I2
    assert h.moves <= 5 * h.updates  # I3 (amortized, Theorem 1)


def test_hotspot_moves_measured_on_a_long_clustered_run():
    """Theorem 1 (I3) on 20,000 updates of clustered intervals: the amortized number of moves in
    or out of S stays O(1) (at most 5)."""
    rng = np.random.default_rng(3)
    h = HotspotTracker(0.02, 0.5)
    alive: list[int] = []
    for i in range(20000):
        if alive and rng.random() < 0.4:
            h.delete(alive.pop(int(rng.integers(len(alive)))))
        else:
            c = rng.choice([100.0, 500.0, 900.0]) if rng.random() < 0.7 else rng.uniform(0, 1000)
            a = c + rng.normal(0, 5)
            h.insert(i, a, a + abs(rng.normal(10, 3)))
            alive.append(i)
    h.check()
    assert h.moves / h.updates <= 5
    assert len(h.hot) >= 3
