"""SJ-JoinFirst visits only the partners whose x lies inside its R-tree root's box (one run of
the tuple's (key, x)-sorted block) and skips tuples whose a lies outside it: the output equals
SJ-Vanilla's in every mode, with partners and a's exactly on the root's bounds."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.joins import dynamic

from .test_oracle import select


def _loaded(output, rng, nq=120, ns=1500):
    op = dynamic.Dynamic("select", output)
    for i in range(nq):  # rangeC's inside [40, 60] (S.C spans [0, 130]), rangeA's inside [20, 70]
        a, c = rng.uniform(20, 50), rng.uniform(40, 50)
        op.register(i, select(f"q{i}", (a, a + rng.uniform(0, 20)), (c, c + rng.uniform(0, 10))))
    # the root's bounds and a few values beyond them among the stored S.C values
    edges = np.array([op.q[i][2] for i in op.q] + [op.q[i][3] for i in op.q])
    c = np.where(rng.random(ns) < 0.2, rng.choice(edges, ns), rng.uniform(0, 130, ns))
    op.insert("right", np.arange(1, ns + 1), rng.integers(0, 30, ns), c.reshape(-1, 1), None)
    return op


@pytest.mark.timeout(300)
@pytest.mark.parametrize("output", ["pairs", "affected", "count"])
def test_join_first_equals_vanilla_with_partners_outside_the_root(output):
    rng = np.random.default_rng(5)
    jf, ref = _loaded(output, np.random.default_rng(1)), _loaded(output, np.random.default_rng(1))
    jf.force, ref.force = "join_first", "vanilla"
    a_edges = np.array([jf.q[i][0] for i in jf.q] + [jf.q[i][1] for i in jf.q])
    seq = 10**6
    for n in (1, 300, 7, 900):
        key = rng.integers(-2, 32, n)
        x = np.where(rng.random(n) < 0.3, rng.choice(a_edges, n), rng.uniform(0, 100, n)).reshape(-1, 1)
        s = np.arange(seq, seq + n)
        seq += n
        got, want = jf.insert("left", s, key, x), ref.insert("left", s, key, x)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
    assert jf.counted == ref.counted
