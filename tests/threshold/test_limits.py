"""Weights and thresholds at the contract's limits (2**53) for every implementation: thousands
of maximal weights in one push and across pushes (int64 sums would overflow many times over),
thresholds of 2**53, queries alive and dead while the heavy elements pass; every output equals
the oracle's (Python integers)."""

from __future__ import annotations

import numpy as np
import pytest

from vigil import registry
from vigil.errors import Unsupported
from vigil.threshold._limits import MAX_THRESHOLD, MAX_WEIGHT
from vigil.threshold.oracle import ThresholdOracle

NAMES = [n for n in registry.IMPLEMENTATIONS["threshold"] if n != "oracle"]


def same(a, b, ctx=None):
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and np.array_equal(np.asarray(a[1]), np.asarray(b[1])), (
        ctx, a, b)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_max_weights_and_thresholds(name, d):
    try:
        op = registry.resolve("threshold", name)(d)
    except Unsupported:
        pytest.skip(f"{name} does not handle d={d}")
    o = ThresholdOracle(d)
    rng = np.random.default_rng(d)
    k = 40
    lo = rng.integers(0, 4, (k, d)).astype(float)
    hi = lo + rng.integers(0, 3, (k, d))
    tau = np.full(k, MAX_THRESHOLD, np.int64)
    tau[::4] = MAX_THRESHOLD - 1
    tau[1::4] = 3
    lo[-5:] = 100.0  # never hit: alive all along
    hi[-5:] = 100.0
    lo[::7] = 0.0  # terminated below: their dead counters see every heavy element
    hi[::7] = 8.0
    for x in (o, op):
        x.register(np.arange(k), lo, hi, tau)
        x.terminate(np.arange(0, k, 7))  # dead entries while heavy elements pass
    nq = k
    for step in range(4):
        n = 3000
        pts = rng.integers(0, 8, (n, d)).astype(float)
        w = np.full(n, MAX_WEIGHT, np.int64)
        w[rng.random(n) < 0.5] = 1
        w[rng.random(n) < 0.1] = MAX_WEIGHT - 1
        same(op.push(pts, w), o.push(pts, w), (name, d, step))
        assert op.alive() == o.alive()
        # a few fresh queries per step (small thresholds too)
        q = np.arange(nq, nq + 6)
        nq += 6
        lo2 = rng.integers(0, 6, (6, d)).astype(float)
        t2 = np.array([1, 2, MAX_WEIGHT, MAX_THRESHOLD, 2 * MAX_WEIGHT - 1, 5], np.int64)
        for x in (o, op):
            x.register(q, lo2, lo2 + 1, t2)


def test_spec_accepts_thresholds_up_to_2_53_and_names_the_limit_beyond():
    from vigil.specs import SpecError, parse_query

    q = {"id": "a", "type": "threshold", "where": {"x": [0, 1]}}
    assert parse_query({**q, "threshold": MAX_THRESHOLD}).threshold == 2**53
    with pytest.raises(SpecError, match=r"2\*\*53"):
        parse_query({**q, "threshold": MAX_THRESHOLD + 1})
