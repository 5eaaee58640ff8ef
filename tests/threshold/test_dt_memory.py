"""DT global rebuilding (paper 000 §4) in the memory of the structure it replaces: outputs stay
the oracle's, the buffers are reused, and the space held stays O(m_alive)."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.threshold import dt as dtmod
from vigil.threshold.dt import DT
from vigil.threshold.oracle import ThresholdOracle

pytestmark = pytest.mark.timeout(300)


def _queries(rng, k, d):
    lo = rng.integers(0, 900, (k, d)).astype(float)
    return lo, lo + rng.integers(0, 400, (k, d))


def _owner(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@pytest.mark.parametrize("d", [1, 2])
def test_rebuilds_reuse_memory_and_match_the_oracle(d):
    rng = np.random.default_rng(5 + d)
    m = 1200
    lo, hi = _queries(rng, m, d)
    tau = rng.integers(1, 4000, m)
    op, ref = DT(d), ThresholdOracle(d)
    for o in (op, ref):
        o.register(np.arange(m), lo, hi, tau)
    alive = np.ones(m, bool)
    reused = 0
    for _ in range(25):
        pts = rng.integers(0, 1300, (100, d)).astype(float)
        w = rng.integers(1, 60, 100)
        got, exp = op.push(pts, w), ref.push(pts, w)
        assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1])
        alive[got[0]] = False
        # terminate a third of the alive queries: halvings (global rebuilds) follow
        ids = np.nonzero(alive)[0]
        ids = ids[rng.random(ids.shape[0]) < 0.33]
        # the arrays holding the entries (with bucketed 2D trees, ``_dt_bucket``, a small structure
        # may have all of them in NR's private rows and an empty tt)
        held = {j: (t, [_owner(getattr(t, a)) for a in ("NR", "tt", "qn")]) for j, t in enumerate(op._trees)
                if t is not None}
        for o in (op, ref):
            o.terminate(ids)
        alive[ids] = False
        for j, t in enumerate(op._trees):
            if t is not None and j in held and t is not held[j][0]:
                # a new (rebuilt) structure in its predecessor's memory
                reused += any(np.shares_memory(_owner(getattr(t, a)), b) for a in ("NR", "tt", "qn")
                              for b in held[j][1] if b.nbytes)
        assert op.alive() == ref.alive() == alive.sum()
        if not alive.any():
            break
    assert op.stats["rebuilds"] >= 3
    assert reused >= 1


def test_space_held_stays_proportional_through_halvings():
    rng = np.random.default_rng(3)
    m = 20000
    lo, hi = _queries(rng, m, 1)
    op = DT(1)
    op.register(np.arange(m), lo, hi, np.full(m, 10**9))
    full = op.nbytes()
    alive = m
    ids = rng.permutation(m)
    while alive > 40:
        k = alive // 2 + 1
        op.terminate(ids[m - alive : m - alive + k])
        alive -= k
        assert op.alive() == alive
        fresh = DT(1)
        rest = ids[m - alive :]
        fresh.register(rest, lo[rest], hi[rest], np.full(alive, 10**9))
        # the held buffers are at most REUSE_SLACK times what a fresh build needs (plus small
        # per-array slack), so space stays O(m_alive) as in §4
        assert op.nbytes() <= dtmod.REUSE_SLACK * fresh.nbytes() + 8 * (1 << 16)
    assert op.nbytes() < full / 8


def test_builds_leave_numpys_huge_page_hint_as_they_found_it():
    prev = dtmod._madvise_hugepage(True)
    try:
        for hint in (True, False):
            dtmod._madvise_hugepage(hint)
            op = DT(2)
            op.register(np.arange(50), np.zeros((50, 2)), np.ones((50, 2)), np.full(50, 3))
            op.terminate(np.arange(40))  # a rebuild
            assert op.stats["rebuilds"] == 1
            assert dtmod._madvise_hugepage(hint) is hint
    finally:
        dtmod._madvise_hugepage(prev)
