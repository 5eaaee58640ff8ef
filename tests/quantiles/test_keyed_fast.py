"""keyed_fast's push and lookup answer as the rows-window operator's own calls (the per-key path)."""

import numpy as np
import pytest

from vigil.quantiles import keyed_fast as fast
from vigil.quantiles.sliding import Sliding


@pytest.mark.timeout(120)
@pytest.mark.parametrize("rows", [7, 50, 400])
def test_fast_push_and_lookup_equal_the_operator(rows):
    rng = np.random.default_rng(rows)
    a, b = Sliding(0.01, rows), Sliding(0.01, rows)
    for op in (a, b):
        op.register(0, 0.5, 0.01, 0)
        op.register(1, 0.9, 0.01, 0, notify=True)
    n = 0
    for step in range(200):
        k = int(rng.integers(1, 12))
        x = np.round(rng.normal(100, 10, k), 1)
        seqs = np.arange(n + 1, n + k + 1, dtype=np.int64)
        n += k
        got, want = fast.push(a, x.copy(), seqs.copy()), b.push(x.copy(), seqs.copy())
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        if step == 60:  # a query registered mid-stream (its start a block boundary)
            for op in (a, b):
                op.register(2, 0.25, 0.01, n)
        for qid in ([0, 1, 2] if step >= 60 else [0, 1]):
            assert np.array_equal(fast.lookup(a, qid, n), b.lookup(np.array([qid]), n)[0], equal_nan=True)
            # beyond the last position pushed: the operator's own path (a copy expired to n)
            assert np.array_equal(fast.lookup(a, qid, n + 3), b.lookup(np.array([qid]), n + 3)[0], equal_nan=True)
