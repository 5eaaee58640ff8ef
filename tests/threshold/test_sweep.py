"""Sweep (batch) threshold operator against the oracle: exact (qid, offset) on randomized instances
(hypothesis + seeded numpy), batch sizes from 1 to large (large ones against ``scan``, itself
checked against the oracle), ties on endpoints, many queries maturing at one element, weights
that force sub-batches, state round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.state import pack, unpack
from vigil.threshold import _sweep_kernels as SK
from vigil.threshold._limits import weight_cuts
from vigil.threshold.oracle import ThresholdOracle
from vigil.threshold.stabbing import Scan
from vigil.threshold.sweep import Sweep


def same(a, b, ctx=None):
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and np.array_equal(np.asarray(a[1]), np.asarray(b[1])), (
        ctx, a, b)


def test_registry_entry():
    assert registry.resolve("threshold", "sweep") is Sweep


@st.composite
def programs(draw):
    d = draw(st.integers(1, 3))
    grid = draw(st.sampled_from([3, 6, 20]))
    coord = st.integers(-1, grid).map(float)
    steps = []
    nq = 0
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["reg", "push", "push", "push", "term"]))
        if kind == "reg":
            k = draw(st.integers(0, 12))
            lo = np.array(draw(st.lists(st.lists(coord, min_size=d, max_size=d), min_size=k, max_size=k)),
                          float).reshape(k, d)
            ext = np.array(draw(st.lists(st.lists(st.integers(0, grid), min_size=d, max_size=d), min_size=k,
                                         max_size=k)), float).reshape(k, d)
            hi = lo + ext
            if k and draw(st.booleans()):
                lo[0, 0] = -np.inf
            if k and draw(st.booleans()):
                hi[-1, -1] = np.inf
            tau = np.array(draw(st.lists(st.sampled_from([1, 1, 2, 3, 7, 50, 400, 10**9, 2**53]), min_size=k,
                                         max_size=k)), np.int64)
            ids = np.arange(nq, nq + k, dtype=np.int64)
            if k and nq and draw(st.booleans()):
                ids[0] = draw(st.integers(0, nq - 1))  # re-register an id (alive or not)
            nq += k
            steps.append(("reg", ids, lo, hi, tau))
        elif kind == "term":
            steps.append(("term", np.array(draw(st.lists(st.integers(0, max(nq, 1)), max_size=5)), np.int64)))
        else:
            n = draw(st.sampled_from([0, 1, 2, 5, 33, 80, 200]))
            pts = np.array(draw(st.lists(st.lists(coord, min_size=d, max_size=d), min_size=n, max_size=n)),
                           float).reshape(n, d)
            w = np.array(draw(st.lists(st.sampled_from([1, 1, 2, 5, 100, 2**53]), min_size=n, max_size=n)),
                         np.int64)
            steps.append(("push", pts, w))
    return d, steps, draw(st.integers(0, len(steps)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prog=programs())
def test_hypothesis_vs_oracle(prog):
    d, steps, cut = prog
    o, s = ThresholdOracle(d), Sweep(d)
    for i, step in enumerate(steps):
        if i == cut:
            s = Sweep.from_state(unpack(pack(s.state())))
        if step[0] == "reg":
            o.register(*step[1:])
            s.register(*step[1:])
        elif step[0] == "term":
            o.terminate(step[1])
            s.terminate(step[1])
        else:
            same(s.push(step[1], step[2]), o.push(step[1], step[2]), (d, i))
        assert s.alive() == o.alive()


@pytest.mark.parametrize("d", [1, 2])
def test_many_queries_mature_at_one_element_and_endpoint_ties(d):
    k = 300
    lo = np.zeros((k, d))
    hi = np.full((k, d), 5.0)
    hi[::3] = 0.0  # ranges ending exactly where the elements are
    lo[1::3] = 5.0
    hi[1::3] = 5.0
    tau = np.full(k, 7, np.int64)
    pts = np.zeros((64, d))
    pts[30:] = 5.0
    w = np.ones(64, np.int64)
    o, s = ThresholdOracle(d), Sweep(d)
    o.register(np.arange(k), lo, hi, tau)
    s.register(np.arange(k), lo, hi, tau)
    out = s.push(pts, w)
    same(out, o.push(pts, w))
    assert np.unique(out[1]).shape[0] <= 3 and out[0].shape[0] == k


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("B", [1, 7, 1000, 20_000, 70_000])
def test_batch_sizes_against_scan(d, B):
    rng = np.random.default_rng(B + d)
    m = 3000
    lo = rng.integers(0, 200, (m, d)).astype(float)
    hi = lo + rng.integers(0, 100, (m, d))
    tau = rng.integers(1, 40_000 if B >= 1000 else 4000, m)
    a, b = Sweep(d), Scan(d)
    a.register(np.arange(m), lo, hi, tau)
    b.register(np.arange(m), lo, hi, tau)
    total = 0
    for step in range(max(1, 4000 // B) if B < 1000 else 6):
        pts = rng.integers(0, 300, (B, d)).astype(float)
        w = rng.integers(1, 200, B)
        same(a.push(pts, w), b.push(pts, w), (d, B, step))
        total += B
        if step % 3 == 2:
            ids = rng.integers(0, m + 50, 40)
            a.terminate(ids)
            b.terminate(ids)
            k = 50
            q = np.arange(m + 50 * step, m + 50 * step + k)
            lo2 = rng.integers(0, 200, (k, d)).astype(float)
            a.register(q, lo2, lo2 + 50, np.full(k, 3000))
            b.register(q, lo2, lo2 + 50, np.full(k, 3000))
        assert a.alive() == b.alive()
    assert a.state()["w"].tolist() == b.state()["w"].tolist()


def test_weights_beyond_int64_in_one_batch_are_split_exactly():
    # 2500 elements of weight 2**53 sum to ~2**64.3: one int64 prefix sum would overflow
    d = 1
    n = 2600
    pts = np.zeros((n, d))
    w = np.full(n, 2**53, np.int64)
    pts[2500::20] = 1.0
    w[2500::20] = 2**52
    lo = np.array([[1.0], [0.0], [-1.0], [2.0], [1.0]])
    hi = np.array([[1.0], [1.0], [0.5], [3.0], [np.inf]])
    tau = np.array([2**53, 2**53, 2**53 - 1, 1, 3 * 2**52], np.int64)
    s, o = Sweep(d), ThresholdOracle(d)
    s.register(np.arange(5), lo, hi, tau)
    o.register(np.arange(5), lo, hi, tau)
    out = s.push(pts, w)
    same(out, o.push(pts, w))
    assert out[0].tolist() == [1, 2, 0, 4] and out[1].tolist() == [0, 0, 2520, 2540]
    assert len(weight_cuts(w)) > 1


def test_weight_cuts_cover_and_bound():
    rng = np.random.default_rng(3)
    w = rng.integers(1, 2**53, 5000)
    cuts = weight_cuts(w)
    assert cuts[0][0] == 0 and cuts[-1][1] == w.shape[0]
    for (_a, b), (c, _) in zip(cuts, cuts[1:], strict=False):
        assert b == c
    for a, b in cuts:
        assert int(w[a:b].astype(object).sum()) < 2**62


def test_nan_points_and_infinite_bounds():
    for d in (1, 2):
        s, o = Sweep(d), ThresholdOracle(d)
        lo = np.full((3, d), -np.inf)
        hi = np.full((3, d), np.inf)
        lo[1] = 0.0
        for op in (s, o):
            op.register(np.arange(3), lo, hi, np.array([2, 2, 3]))
        pts = np.array([[np.nan] * d, [np.inf] * d, [0.0] * d, [-np.inf] * d, [1.0] * d])
        w = np.ones(5, np.int64)
        same(s.push(pts, w), o.push(pts, w))


def test_leaf_size_boundaries():
    # batches of exactly LEAF, LEAF + 1 and 2 * LEAF + 1 elements, maturing at every offset
    for d in (1, 2):
        for B in (SK.LEAF, SK.LEAF + 1, 2 * SK.LEAF + 1, 4 * SK.LEAF - 1):
            k = B
            s, o = Sweep(d), ThresholdOracle(d)
            lo = np.zeros((k, d))
            hi = np.ones((k, d))
            tau = np.arange(1, k + 1)
            for op in (s, o):
                op.register(np.arange(k), lo, hi, tau)
            pts = np.zeros((B, d))
            pts[::2] = 2.0  # every other element misses
            w = np.ones(B, np.int64)
            same(s.push(pts, w), o.push(pts, w), (d, B))
