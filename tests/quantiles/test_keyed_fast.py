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


@pytest.mark.parametrize("seed", range(5))
def test_by_key_equals_a_stable_argsort(seed):
    """keyed_fast.by_key cuts the rows into each key's slice as a stable argsort of the codes does,
    with each row's position in its key after the key's count."""
    from vigil.quantiles.keyed_fast import by_key

    rng = np.random.default_rng(seed)
    nc = int(rng.integers(1, 9))
    count = rng.integers(0, 50, nc).astype(np.int64)
    kc = rng.integers(0, nc, int(rng.integers(0, 40))).astype(np.int64)
    x = rng.normal(size=len(kc))
    order, bounds, ucode, sizes, xs, local = by_key(kc, x, count)
    want = np.argsort(kc, kind="stable")
    ks = kc[want]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]]) if len(ks) else np.zeros(0, np.int64)
    np.testing.assert_array_equal(order, want)
    np.testing.assert_array_equal(bounds, np.r_[starts, len(kc)])
    np.testing.assert_array_equal(ucode, ks[starts])
    np.testing.assert_array_equal(sizes, np.diff(np.r_[starts, len(kc)]))
    np.testing.assert_array_equal(xs, x[want])
    sz = np.diff(np.r_[starts, len(kc)])
    np.testing.assert_array_equal(local, np.arange(1, len(kc) + 1) - np.repeat(starts - count[ks[starts]], sz))
