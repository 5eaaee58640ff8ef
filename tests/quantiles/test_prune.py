"""prune: a mergeable summary cut to rank gaps within 2 e n stays e-approximate after merging
(sharded mode's quantile lookups ship pruned summaries)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.quantiles import answer_from_summary, merge_summaries
from vigil.quantiles.gk import GKSummary
from vigil.quantiles.prune import prune


def _gk(values: np.ndarray, eps: float) -> np.ndarray:
    g = GKSummary(eps)
    g.insert(values)
    v, lo, hi = g.tuples()
    return np.column_stack([v, lo.astype(np.float64), hi.astype(np.float64)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4000), min_size=1, max_size=4), st.sampled_from([0.01, 0.02, 0.05]),
       st.integers(0, 2**31 - 1), st.sampled_from([3, 50, 10**6]))
def test_pruned_parts_merge_within_the_bound(sizes, e, seed, distinct):
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, distinct, n).astype(np.float64) for n in sizes]  # ties when distinct is small
    pruned = []
    for x in parts:
        t = _gk(x, e / 4)
        p = prune(t, e)
        n = len(x)
        assert p[0].tolist() == t[0].tolist() and p[-1].tolist() == t[-1].tolist()  # first and the exact maximum
        own = float(np.max(t[1:, 2] - t[:-1, 1], initial=0.0))  # a gap wider in the input stays
        assert np.all(p[1:, 2] - p[:-1, 1] <= max(2 * e * n, own) + 1e-9)
        assert len(p) <= 1 / e + 3
        pruned.append(p)
    allv = np.sort(np.concatenate(parts))
    N = len(allv)
    merged = merge_summaries(pruned)
    for phi in (0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0):
        a = answer_from_summary(merged, phi)
        target = max(1, math.ceil(phi * N))
        lo = np.searchsorted(allv, a, "left") + 1  # the ranks the answer occupies among ties
        hi = np.searchsorted(allv, a, "right")
        assert lo <= hi, "the answer is one of the elements"
        dist = 0 if lo <= target <= hi else min(abs(lo - target), abs(hi - target))
        assert dist <= e * N + 1, (phi, dist, e * N)


def test_prune_shrinks_a_large_summary():
    x = np.random.default_rng(1).random(200_000)
    t = _gk(x, 0.0025)
    p = prune(t, 0.01)
    assert len(t) > 200 and len(p) <= 103
