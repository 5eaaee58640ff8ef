"""SJ-SSI's flat per-group index (_sj_ssi_index) and its probe kernel against brute force, with
the index maintained per dirty group across query insertions and deletions (segments rewritten
in place, appended, dropped, compacted) and groups large enough for multi-level trees."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.joins import _join_kernels_select as ks
from vigil.joins._sj_ssi_index import SSIIndex
from vigil.joins.partition import make_partition
from vigil.joins.select import run_fixed


class Plan:
    cap = 1  # tiny: every probe with output overflows once and reruns


def brute(K, X, S, keys, av, rows):
    out = []
    for i, (b, a) in enumerate(zip(keys.tolist(), av.tolist(), strict=True)):
        if a != a:
            continue
        for q, (olo, ohi, mlo, mhi) in rows.items():
            if not (mlo <= a <= mhi):
                continue
            for k in range(len(K)):
                if K[k] == b and olo <= X[k] <= ohi:
                    out.append((q, i, int(S[k])))
    return sorted(out)


def probe(ix, K, X, S, keys, av, mode):
    q, i, o, c = run_fixed(ks.sj_ssi, (K, X, S, keys, av, *ix.arrays()), mode, Plan())
    if mode == 2:
        return c
    return sorted(zip(q.tolist(), i.tolist(), o.tolist(), strict=True))


@st.composite
def case(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    nq = draw(st.integers(1, 400))
    centres = rng.uniform(0, 100, draw(st.integers(1, 6)))
    mid = centres[rng.integers(0, len(centres), nq)] + rng.normal(0, 3, nq)
    olen = rng.choice([0.0, 2.0, 10.0, 40.0], nq)
    amid = rng.uniform(0, 100, nq)
    alen = rng.choice([0.0, 5.0, 30.0, 200.0], nq)
    rows = np.stack([mid - olen, mid + olen, amid - alen, amid + alen], 1).round()
    m = draw(st.integers(0, 300))
    K = np.sort(rng.integers(0, 4, m)).astype(np.int64)
    X = rng.uniform(-10, 110, m).round()
    o = np.lexsort((X, K))
    K, X = K[o], X[o]
    S = np.arange(m, dtype=np.int64) * 7 + 1
    nt = 40
    keys = rng.integers(0, 5, nt).astype(np.int64)
    av = rng.uniform(-10, 110, nt).round()
    av[rng.random(nt) < 0.05] = np.nan
    return rows, K, X, S, keys, av, seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=case())
def test_probe_matches_brute_force_under_updates(c):
    rows, K, X, S, keys, av, seed = c
    rng = np.random.default_rng(seed + 1)
    part = make_partition("lazy", 0.5)
    alive: dict[int, tuple] = {}
    ix = SSIIndex()
    ix.SLACK = 8  # compact often
    nxt = 0

    def rows_of(qids):
        return np.array([alive[q] for q in qids.tolist()], np.float64).reshape(len(qids), 4)

    for step in range(4):
        # a burst of registrations (the first builds everything), then deletions
        for _ in range(len(rows) if step == 0 else int(rng.integers(0, 60))):
            r = tuple(rows[nxt % len(rows)])
            alive[nxt] = r
            part.insert(nxt, r[0], r[1])
            nxt += 1
        for q in list(alive):
            if step and rng.random() < 0.3:
                del alive[q]
                part.delete(q)
        ix.update(part.point, part.groups, part.drain_dirty(), rows_of)
        want = brute(K, X, S, keys, av, alive)
        assert probe(ix, K, X, S, keys, av, 0) == want
        assert probe(ix, K, X, S, keys, av, 2) == len(want)
        aff = sorted({(q, i) for q, i, _ in probe(ix, K, X, S, keys, av, 1)})
        assert aff == sorted({(q, i) for q, i, _ in want})
    assert ix.live == len(alive)


def test_compaction_and_in_place_rewrites_happen():
    """Deterministic: a group that shrinks is rewritten in place, one that grows moves, a
    dropped group is freed, and the dead space triggers a compaction."""
    alive = {}
    ix = SSIIndex()
    ix.SLACK = 0

    def rows_of(qids):
        return np.array([alive[q] for q in qids.tolist()], np.float64).reshape(len(qids), 4)

    groups = {7: set(range(50)), 8: {1000}}
    points = {7: 5.0, 8: 50.0}
    for q in range(50):
        alive[q] = (0.0, 10.0, float(q), float(q) + 5)
    alive[1000] = (40.0, 60.0, 0.0, 100.0)
    ix.update(points, groups, {7, 8}, rows_of)
    off = ix.seg[7][0]
    for q in range(10):
        del alive[q]
        groups[7].discard(q)
    ix.update(points, groups, {7}, rows_of)
    assert ix.seg[7][0] == off and ix.seg[7][2] == 40  # in place
    for q in range(50, 200):
        alive[q] = (0.0, 10.0, float(q), float(q) + 5)
        groups[7].add(q)
    ix.update(points, groups, {7}, rows_of)
    assert ix.seg[7][2] == 190 and ix.seg[7][0] != off and ix.compactions == 0  # moved
    del alive[1000]
    del groups[8]
    ix.update(points, groups, {8}, rows_of)
    assert 8 not in ix.seg and ix.live == 190
    for q in range(100, 200):
        del alive[q]
        groups[7].discard(q)
    ix.update(points, groups, {7}, rows_of)  # in place: dead space 336 - 90 > live
    ix.update(points, groups, set(), rows_of)  # compacts
    assert ix.compactions == 1 and ix.items == ix.live == 90
    K = np.zeros(3, np.int64)
    X = np.array([1.0, 5.0, 20.0])
    S = np.array([1, 2, 3], np.int64)
    keys, av = np.zeros(3, np.int64), np.array([100.0, 3.0, 60.0])
    want = brute(K, X, S, keys, av, alive)
    assert len(want) == 2 * (5 + 6) and probe(ix, K, X, S, keys, av, 0) == want


def test_row_store_dense_then_sparse():
    from vigil.joins.select import _RowStore

    st_ = _RowStore()
    want = {}
    for q in [3, 0, 7, 10**9, 5, -4, 2**40]:  # 10**9 switches to slots
        want[q] = (q, q + 1.0, q + 2.0, q + 3.0, np.inf)
        st_.add(q, want[q])
    st_.remove(7)
    del want[7]
    st_.add(11, (11, 12.0, 13.0, 14.0, np.inf))
    want[11] = (11, 12.0, 13.0, 14.0, np.inf)
    assert not st_.dense
    q = np.array(sorted(want), np.int64)
    got = st_.rows_of("left")(q)  # (other lo, other hi, mine lo, mine hi) = cols 2, 3, 0, 1
    assert np.array_equal(got, np.array([[want[i][c] for c in (2, 3, 0, 1)] for i in q.tolist()]))
