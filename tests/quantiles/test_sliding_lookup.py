"""Sliding.lookup answers many queries of one window with one forward walk (_sliding_sweep):
the same answers, query by query, as the per-query bisection (K.lookup / K.best), over exact and
sampled blocks, seq gaps, positions without element, duplicates and queries registered inside
the window."""

import numpy as np
import pytest

from vigil.quantiles import _sliding_kernels as K
from vigil.quantiles.sliding import Sliding


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", [1, 2])
def test_lookup_many_equals_one_by_one(seed):
    rng = np.random.default_rng(seed)
    compared = 0
    for _ in range(30):
        W = int(rng.choice([5, 20, 100, 1000, 3000]))
        eps = float(rng.choice([0.01, 0.05, 0.1, 0.2]))
        op = Sliding(eps, W)
        nq = int(rng.integers(1, 40))
        n = int(rng.integers(1, 3 * W + 10))
        kind = rng.integers(3)
        x = rng.random(n) if kind == 0 else rng.integers(0, 5 if kind == 1 else 1000, n).astype(float)
        x[rng.random(n) < 0.05] = np.nan
        seqs = np.cumsum(rng.integers(1, 3, n))
        p = 0
        for qid, r in enumerate(sorted(rng.integers(0, n, nq).tolist()) + [n]):
            if r > p:
                op.push(x[p:r], seqs[p:r])
                p = r
            if r < n:
                op.register(qid, float(rng.choice([rng.random(), 1.0, 0.001])), eps, int(seqs[r - 1]) if r else 0)
            if op.q and p:
                ks = np.array(sorted(op.q), np.int64)
                got = op.lookup(ks, op.last_seq)
                phi = np.array([op.q[k][0] for k in ks.tolist()])
                start = np.array([op.q[k][2] for k in ks.tolist()], np.int64)
                ref = np.empty(len(ks))
                K.lookup(op.meta, op.ob, op.obs, op.blk, op.sv, op.si, op.mv, op.mi, op.mv2, phi, start, op.last_seq,
                         ref)
                np.testing.assert_array_equal(got, ref)
                compared += len(ks)
    assert compared > 1000
