"""The coverage statistics of the select cost models (vigil.joins.costs: cov, pbar): computed
exactly, read by the router, and what they change: SJ-JoinFirst's estimate falls when the
queries' rangeC's miss the stored S.C values (its R-tree rejects those partners at the root),
all else equal; the per-tuple oracle routing of the benchmark agrees with the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.joins import dynamic
from vigil.joins.costs import coverage
from vigil.joins.oracle import JoinOracle

from .test_oracle import select


def test_coverage_by_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n, v = int(rng.integers(1, 30)), int(rng.integers(1, 60))
        lo = rng.integers(0, 100, n).astype(float)
        hi = lo + rng.integers(0, 20, n)
        vals = rng.integers(-5, 125, v).astype(float)
        inside = (lo[None, :] <= vals[:, None]) & (vals[:, None] <= hi[None, :])
        cov, pbar = coverage(vals, lo, hi)
        assert cov == pytest.approx(inside.any(1).mean())
        assert pbar == pytest.approx(inside.mean())
    assert coverage(np.empty(0), np.zeros(1), np.ones(1)) == (1.0, 1.0)


def _op(c_lo, c_hi, nq=300, ns=3000, seed=0):
    rng = np.random.default_rng(seed)
    op = dynamic.Dynamic("select", "count")
    op.insert("right", np.arange(1, ns + 1), rng.integers(0, 20, ns), rng.uniform(0, 1000, (ns, 1)).round(), None)
    for i in range(nq):
        a = rng.uniform(0, 100)
        c = rng.uniform(c_lo, c_hi)
        op.register(i, select(f"q{i}", (a, a + 20), (c, c + (c_hi - c_lo) / 50)))
    op.insert("left", np.array([10**6]), np.array([3]), np.array([[50.0]]), None)
    return op


def test_router_reads_coverage_and_join_first_estimate_follows_it():
    """The same queries but for where their rangeC's lie: over S.C's values (cov ~1) or below
    them (cov 0). Before the coverage terms the estimates were equal."""
    spread, missing = _op(0, 1000), _op(-3000, -2000)
    for op in (spread, missing):  # every term priced alike: the mechanism, not the shipped values
        op.params = {c: dict.fromkeys(p, 1.0) for c, p in op.params.items()}
    assert spread._scal["left"]["cov"] > 0.5 and missing._scal["left"]["cov"] == 0.0
    assert missing._scal["left"]["pbar"] == 0.0 < spread._scal["left"]["pbar"]
    key, x, t = np.array([5, 8, 10]), np.array([40.0, 60.0, 50.0]), np.full(3, np.nan)
    j = list(spread.choices).index("join_first")
    c_spread = spread.estimated_costs("left", key, x, t)[:, j]
    c_missing = missing.estimated_costs("left", key, x, t)[:, j]
    assert (c_missing < 0.9 * c_spread).all(), (c_missing, c_spread)


def test_coverage_recomputed_when_the_stored_side_doubles():
    op = _op(-3000, -2000, ns=100)
    assert op._scal["left"]["cov"] == 0.0
    rng = np.random.default_rng(1)
    n = 400  # stored values now inside the rangeC's
    op.insert("right", np.arange(2 * 10**6, 2 * 10**6 + n), rng.integers(0, 20, n), rng.uniform(-3000, -2000, (n, 1)), None)
    op.insert("left", np.arange(3 * 10**6, 3 * 10**6 + 5), np.arange(5), np.full((5, 1), 50.0), None)
    assert op._scal["left"]["cov_n"] == 500 and op._scal["left"]["cov"] > 0.0


@pytest.mark.parametrize("output", ["pairs", "affected"])
def test_oracle_choice_routing_agrees_with_oracle(output):
    rng = np.random.default_rng(7)
    op, ora = dynamic.Dynamic("select", output), JoinOracle("select", output)
    for i in range(80):
        a, c = rng.uniform(0, 100, 2)
        s = select(f"q{i}", (a, a + rng.uniform(0, 30)), (c, c + rng.uniform(0, 30)))
        op.register(i, s)
        ora.register(i, s)
    keys, attrs = rng.integers(0, 10, 500), rng.uniform(0, 130, (500, 1)).round()
    for o in (op, ora):
        o.insert("right", np.arange(1, 501), keys, attrs)
    seq = 1000
    for _ in range(6):
        n = 40
        key, x = rng.integers(0, 12, n), rng.uniform(0, 130, (n, 1)).round()
        op.oracle_choice = rng.integers(0, len(op.choices), n)
        got, exp = (o.insert("left", np.arange(seq, seq + n), key, x) for o in (op, ora))
        seq += n
        assert len(op.oracle_choice) == 0
        assert all(np.array_equal(a, b) for a, b in zip(got, exp, strict=True))
