"""DT construction shortcuts: the local query order without lexsort and the merged endpoint
order of dimension 0 agree with the numpy sorts they replace (ties included)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.threshold import _kernels as K
from vigil.threshold._dt_order import local_order as _local_order


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 300), span=st.sampled_from([3, 50, 10**6]),
       case=st.sampled_from(["fresh", "rebuild", "merge"]))
def test_local_order_is_lexsort(seed, n, span, case):
    rng = np.random.default_rng(seed)
    k0 = rng.integers(-span, span, n).astype(np.int64)
    if case == "fresh":
        qids = np.arange(n, dtype=np.int64) + 5
    else:
        qids = rng.permutation(3 * n)[:n].astype(np.int64)
    if case == "rebuild":  # already in (key, qid) order
        o = np.lexsort((qids, k0))
        qids, k0 = qids[o], k0[o]
    perm, qperm = _local_order(qids, k0)
    want = np.lexsort((qids, k0))
    got = np.arange(n) if perm is None else perm
    assert np.array_equal(qids[got], qids[want])
    assert np.array_equal(qperm, np.argsort(qids[got]))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 300), span=st.sampled_from([3, 50, 10**6]))
def test_merge_order_is_stable_argsort(seed, n, span):
    rng = np.random.default_rng(seed)
    kl = np.sort(rng.integers(-span, span, n)).astype(np.int64)
    kh = kl + rng.integers(0, span, n)
    rng.shuffle(kh)
    got = K.merge_order(kl, kh, np.argsort(kh, kind="stable"))
    assert np.array_equal(got, np.argsort(np.concatenate([kl, kh]), kind="stable"))
