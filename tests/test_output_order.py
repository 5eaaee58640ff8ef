"""group._order sorts outputs by (at, event, qid, r, s) with ties in input order (a stable sort):
the same permutation as a 5-key lexsort, whichever key it packs."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.group import EV_NAMES, _order


def _cols(rng, n, at_hi, q_lo, q_hi, r_hi, s_hi, pairs=True):
    at = rng.integers(0, at_hi, n)
    ev = rng.integers(0, len(EV_NAMES), n)
    qid = rng.integers(q_lo, q_hi, n)
    r = rng.integers(-1, r_hi, n) if pairs else np.full(n, -1)
    s = rng.integers(-1, s_hi, n) if pairs else np.full(n, -1)
    return ev, qid, at, r, s


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("shape", [
    (5, 0, 3, 4, 4, True),  # many ties on every field
    (1000, 0, 10_000, 5000, 5000, True),  # one packed key
    (1000, -1, 50, 1, 1, False),  # no pairs, events of no query (qid -1)
    (2**30, 0, 2**20, 2**30, 2**30, True),  # two packed keys
    (2**62, -5, 2**40, 2**62, 2**61, True),  # no packed key
])
def test_order_equals_stable_lexsort(seed, shape):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    ev, qid, at, r, s = _cols(rng, n, *shape)
    want = np.lexsort((s, r, qid, ev, at))
    assert np.array_equal(_order(ev, qid, at, r, s), want)


def test_order_ties_keep_input_order():
    n = 2000
    z = np.zeros(n, np.int64)
    assert np.array_equal(_order(z, z, z, z - 1, z + 3), np.arange(n))
    at = np.repeat(np.arange(10)[::-1], n // 10)
    assert np.array_equal(_order(z, z, at, z, z), np.lexsort((at,)))
