"""GK summary (paper 004 §2.3.1): Definition 1 and Theorem 1's conditions after every batch, on
sorted, reverse, semisorted, duplicate-heavy and random orders; batch size independence of the
bound; state round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.arrays import quantile_rank
from vigil.quantiles.gk import GKSummary, theorem1_violations

ORDERS = ["sorted", "reverse", "semisort", "duplicates", "random"]


def make(order: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if order == "sorted":
        return np.arange(n, dtype=np.float64)
    if order == "reverse":
        return np.arange(n, 0, -1, dtype=np.float64)
    if order == "semisort":
        return (np.arange(n) // 97) * 1000.0 + rng.random(n)
    if order == "duplicates":
        return rng.integers(0, 4, n).astype(np.float64)
    return rng.normal(size=n)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("eps", [0.005, 0.05])
def test_theorem1_after_every_batch(order, eps):
    rng = np.random.default_rng(7)
    data = make(order, 6000, rng)
    g = GKSummary(eps)
    p = 0
    while p < len(data):
        k = int(rng.integers(1, 700))
        g.insert(data[p:p + k])
        p = min(len(data), p + k)
        v, lo, hi = g.tuples()
        assert g.n == p
        assert theorem1_violations(v, lo, hi, data[:p], eps) == []
    # queries: every answer within eps*N of the target rank (plus the ceil rounding)
    srt = np.sort(data)
    for phi in (0.001, 0.1, 0.5, 0.77, 1.0):
        u = g.query(phi)
        lo_r = np.searchsorted(srt, u, "left") + 1
        hi_r = np.searchsorted(srt, u, "right")
        t = quantile_rank(phi, len(data))
        assert max(0, lo_r - t, t - hi_r) <= eps * len(data) + 1
    assert g.m < len(data) / 4  # it summarizes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.lists(st.integers(-3, 3) | st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=400),
       sizes=st.lists(st.integers(1, 50), min_size=1, max_size=20), eps=st.sampled_from([0.01, 0.1, 0.3]))
def test_theorem1_hypothesis(data, sizes, eps):
    x = np.asarray(data, np.float64)
    g = GKSummary(eps)
    p, i = 0, 0
    while p < len(x):
        k = sizes[i % len(sizes)]
        i += 1
        g.insert(x[p:p + k])
        p = min(len(x), p + k)
        assert theorem1_violations(*g.tuples(), x[:p], eps) == []


def test_state_round_trip():
    rng = np.random.default_rng(1)
    x = rng.random(3000)
    g = GKSummary(0.01)
    g.insert(x[:1500])
    h = GKSummary.from_state(g.state())
    g.insert(x[1500:])
    h.insert(x[1500:])
    assert [a.tolist() for a in g.tuples()] == [a.tolist() for a in h.tuples()]


def test_checker_catches_violations():
    x = np.arange(1.0, 11.0)
    assert theorem1_violations(np.array([1.0, 10.0]), np.array([1, 10]), np.array([1, 10]), x, 0.1) != []  # gap 9 > 2
    assert theorem1_violations(np.array([1.0, 5.0, 10.0]), np.array([1, 7, 10]), np.array([1, 7, 10]), x, 0.5) != []


@pytest.mark.parametrize("order", ORDERS)
def test_merge_inplace_equals_merge_sorted(order):
    """The trigger kernel's in-place backward merge gives the forward merge's summary exactly
    (chunks of 1..300 elements, with compress between, pins carried)."""
    from vigil.quantiles import _gk_kernels as K

    rng = np.random.default_rng(7)
    x = make(order, 6000, rng)
    cap = 8000
    v, lo, hi, pin = np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64), np.zeros(cap, np.int32)
    ov, olo, ohi, opin = np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64), np.zeros(cap, np.int32)
    w, wlo, whi, wpin = np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64), np.zeros(cap, np.int32)
    m = mi = n = p = 0
    while p < len(x):
        c = int(rng.choice([1, 2, 5, 31, 300]))
        xs = np.sort(x[p:p + c])
        m = K.merge_sorted(v, lo, hi, pin, m, n, xs, ov, olo, ohi, opin)
        v, ov, lo, olo, hi, ohi, pin, opin = ov, v, olo, lo, ohi, hi, opin, pin
        mi = K.merge_inplace(w, wlo, whi, wpin, mi, n, xs)
        n += len(xs)
        p += len(xs)
        assert m == mi
        for a, b in ((v, w), (lo, wlo), (hi, whi), (pin, wpin)):
            assert np.array_equal(a[:m], b[:m])
        if rng.random() < 0.3:
            k = int(rng.integers(0, m))
            pin[k] += 1
            wpin[k] += 1
        if rng.random() < 0.2:
            m = K.compress(v, lo, hi, pin, m, n, 0.01)
            mi = K.compress(w, wlo, whi, wpin, mi, n, 0.01)


@pytest.mark.parametrize("order", ORDERS)
def test_presorted_periods_give_the_chunked_summary(order):
    """GKSummary.insert (whole merge periods sorted by one numpy call, gk.presort, merged in one
    kernel) gives exactly the summary of inserting each period's chunk sorted on its own and
    compressing at every period end, whatever the batch sizes."""
    from vigil.quantiles import _gk_kernels as K

    rng = np.random.default_rng(11)
    x = make(order, 5000, rng)
    eps = 0.01
    g = GKSummary(eps)
    p = 0
    while p < len(x):
        c = int(rng.choice([1, 7, 49, 50, 51, 333, 1200]))
        g.insert(x[p:p + c])
        p += c
    ref = GKSummary(eps)
    for a in range(0, len(x), ref.period):
        ref.insert_chunk(np.sort(x[a:a + ref.period]))
        if ref.n % ref.period == 0:
            ref.m = K.compress(ref.v, ref.lo, ref.hi, ref.pin, ref.m, ref.n, eps)
    assert (g.n, g.m) == (ref.n, ref.m)
    for a, b in zip(g.tuples(), ref.tuples(), strict=True):
        assert np.array_equal(a, b)
