"""A per-key group's new keys get copies of one template operator (keyed_sliding.template / spawn /
SlidingKeys.add_many) instead of one registration per query and key: the copies must behave as
operators whose queries were registered one by one (same updates, lookups and state)."""

import numpy as np
import pytest

from vigil.quantiles.casu import CASU
from vigil.quantiles.keyed_sliding import SlidingKeys, spawn, template
from vigil.quantiles.sliding import Sliding

from .test_keyed_sliding import _same_state

QUERIES = [(0.5, 0.01, False), (0.9, 0.02, True), (0.1, 0.01, True)]  # (phi, eps, notify)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("rows", [5, 60, 700])
def test_spawned_keys_equal_keys_registered_one_by_one(rows):
    rng = np.random.default_rng(rows)
    nk, nq = 6, len(QUERIES)
    tpl = template(CASU, 0.01, rows, QUERIES)
    slots = [list(range(c * nq, (c + 1) * nq)) for c in range(nk)]
    sk = SlidingKeys(0.01)
    first, _ = spawn(tpl, slots[:1])
    sk.add(first[0])  # the first key makes the typed list
    rest, blocks = spawn(tpl, slots[1:])
    sk.add_many(rest, blocks)
    mine = first + rest
    ref = []
    for c in range(nk):
        op = Sliding(0.01, rows)
        for slot, (phi, eps, notify) in zip(slots[c], QUERIES, strict=True):
            op.register(slot, phi, eps, 0, notify=notify)
        ref.append(op)
    for c in range(nk):
        assert mine[c].q == ref[c].q
    count = np.zeros(nk, np.int64)
    for step in range(80):
        m = int(rng.integers(1, 400 if step % 9 == 0 else 30))  # now and then a long batch: room
        keys = rng.integers(0, nk, m)
        x = np.round(rng.normal(100, 10, m), 1)
        order = np.argsort(keys, kind="stable")
        ks = keys[order]
        bounds = np.concatenate(([0], np.flatnonzero(ks[1:] != ks[:-1]) + 1, [m]))
        ucode = ks[bounds[:-1]]
        sizes = np.diff(bounds)
        local = np.arange(1, m + 1) - np.repeat(bounds[:-1] - count[ucode], sizes)
        for c in ucode.tolist():
            if mine[c].first_seq < 0:
                mine[c].first_seq = 1
        xs = np.ascontiguousarray(x[order])
        got = sk.push(mine, ucode, bounds, xs, local)
        want = [], [], []
        for u, c in enumerate(ucode.tolist()):
            b0, b1 = bounds[u], bounds[u + 1]
            s, o, v = ref[c].push(xs[b0:b1].copy(), local[b0:b1].copy())
            want[0].append(s)
            want[1].append(o + b0)
            want[2].append(v)
        want = [np.concatenate(w) for w in want]
        og, ow = np.lexsort((got[0], got[1])), np.lexsort((want[0], want[1]))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g[og], w[ow])
        count[ucode] += sizes
        live = [(c, q) for c in range(nk) for q in sorted(mine[c].q)]
        codes = np.array([c for c, _ in live], np.int64)
        qs = np.array([q for _, q in live], np.int64)
        e = [mine[c].q[q] for c, q in live]
        got = sk.lookup(mine, codes, np.array([x[0] for x in e]), np.array([x[2] for x in e], np.int64),
                        np.array([x[4] if x[3] else -1 for x in e], np.int64), qs, count[codes])
        want = np.array([ref[c].lookup(np.array([q]), int(count[c]))[0] for c, q in live])
        np.testing.assert_array_equal(got, want)
    for c, b in enumerate(ref):
        _same_state(sk.fresh(mine, c), b)  # fresh: the arrays the pushes grew
