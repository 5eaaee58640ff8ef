"""DT (paper 000, Theorem 1) against the threshold oracle and a vectorized numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.state import pack, unpack
from vigil.threshold import _kernels as K
from vigil.threshold.dt import DT
from vigil.threshold.oracle import ThresholdOracle

pytestmark = pytest.mark.timeout(300)  # a kernel bug can loop forever: fail instead of hanging

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def _same(a, b):
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), (a, b)


def _roundtrip(op: DT) -> DT:
    return DT.from_state(unpack(pack(op.state())))


def reference(reg_at, term_at, lo, hi, tau, pts, w):
    """Global index of the element at which each query matures (-1: never), vectorized numpy:
    query i counts elements with index >= reg_at[i] and is terminated before element term_at[i]."""
    m, n = len(tau), len(w)
    out = np.full(m, -1, dtype=np.int64)
    idx = np.arange(n)
    for s in range(0, m, 128):
        sl = slice(s, s + 128)
        inside = np.all((pts[None, :, :] >= lo[sl, None, :]) & (pts[None, :, :] <= hi[sl, None, :]), axis=2)
        inside &= idx[None, :] >= reg_at[sl, None]
        cs = np.cumsum(np.where(inside, w[None, :], 0), axis=1)
        for j in range(cs.shape[0]):
            f = int(np.searchsorted(cs[j], tau[s + j]))
            if f < n and f < term_at[s + j]:
                out[s + j] = f
    return out


def drive(op, reg_at, term_at, lo, hi, tau, pts, w, cuts=(), snap_at=()):
    """Replay registrations / terminations / pushes on ``op``; returns the global maturity index of
    every query (-1: never). Registrations at cut a apply before terminations at a."""
    n, m = len(w), len(tau)
    bounds = np.unique(
        np.concatenate([[0, n], reg_at, np.minimum(term_at, n), np.asarray(cuts, dtype=np.int64)])
    )
    got = np.full(m, -1, dtype=np.int64)
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        r = np.nonzero(reg_at == a)[0]
        if len(r):
            op.register(r, lo[r], hi[r], tau[r])
        op.terminate(np.nonzero(term_at == a)[0])
        if a in snap_at:
            op = _roundtrip(op)
        q, o = op.push(pts[a:b], w[a:b])
        assert np.all(np.diff(o) >= 0)
        assert np.all(got[q] == -1), "a query matured twice"
        got[q] = o + a
    return got, op


# ------------------------------------------------------------------------------------------
# unit checks
# ------------------------------------------------------------------------------------------


def test_float_keys_order_and_inverse():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [rng.normal(0, 1e3, 1000), [0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, 1e308, -1e308]]
    )
    k = K.float_keys(x)
    o = np.argsort(x, kind="stable")
    assert np.all(np.diff(k[o]) >= 0)
    assert np.all((np.diff(k[o]) == 0) == (np.diff(x[o]) == 0))
    assert np.array_equal(K.keys_to_float(k), x + 0.0)
    # key(hi) + 1 is the successor key: closed [lo, hi] = half-open [key(lo), key(hi) + 1)
    f = x[np.isfinite(x) & (x != -5e-324)]
    assert np.all(K.float_keys(np.nextafter(f, np.inf)) == K.float_keys(f) + 1)
    p, h = x[:, None], x[None, :]
    assert np.array_equal(p <= h, k[:, None] < k[None, :] + 1)


def test_registry_entry():
    assert registry.resolve("threshold", "dt") is DT
    assert registry.DEFAULTS["threshold"] == "auto"  # dt is one of auto's choices


def test_validation():
    op = DT(2)
    with pytest.raises(ValueError):
        op.register([1], [[0, 0]], [[1, np.nan]], [3])
    with pytest.raises(ValueError):
        op.register([1], [[2, 0]], [[1, 1]], [3])
    with pytest.raises(ValueError):
        op.register([1], [[0, 0]], [[1, 1]], [0])
    with pytest.raises(ValueError):
        op.push([[0.5, 0.5]], [0])
    assert op.alive() == 0


def test_reregistration_replaces_like_the_oracle():
    op, ref = DT(1), ThresholdOracle(1)
    for o in (op, ref):
        o.register([1, 2], [[0.0], [0.0]], [[1.0], [1.0]], [3, 3])
        o.push(np.full((2, 1), 0.5), np.ones(2, dtype=np.int64))  # weight 2 of 3
        # 1 is replaced (weight restarts), 3 appears twice in one batch: the last one wins
        o.register([1, 3, 3], [[0.0], [5.0], [0.0]], [[1.0], [6.0], [1.0]], [3, 1, 2])
    assert op.alive() == ref.alive() == 3
    pts, w = np.full((3, 1), 0.5), np.ones(3, dtype=np.int64)
    _same(op.push(pts, w), ref.push(pts, w))


def test_threshold_one_endpoints_and_many_on_one_element():
    op = DT(1)
    # 50 queries that all contain 5.0, some exactly on an endpoint, one of zero width
    lo = np.array([[5.0]] * 10 + [[0.0]] * 10 + [[-np.inf]] * 10 + [[4.0]] * 10 + [[5.0]] * 10)
    hi = np.array([[9.0]] * 10 + [[5.0]] * 10 + [[np.inf]] * 10 + [[6.0]] * 10 + [[5.0]] * 10)
    op.register(np.arange(50), lo, hi, np.ones(50, dtype=np.int64))
    op.register([100], [[5.000000001]], [[6.0]], [1])  # just right of the element
    op.register([101], [[4.0]], [[4.999999999]], [1])  # just left of it
    q, o = op.push(np.array([[5.0], [5.0]]), np.array([1, 1]))
    assert np.array_equal(q, np.arange(50)) and np.all(o == 0)
    assert op.alive() == 2
    q, o = op.push(np.array([[np.nextafter(5.0, 9)], [4.999999999]]), np.array([1, 1]))
    assert list(q) == [101] and list(o) == [1]  # nextafter(5.0) < 5.000000001; hi is closed
    assert op.alive() == 1


def test_weights_sum_beyond_int32():
    op = DT(1)
    op.register([7, 8], [[0.0], [0.0]], [[1.0], [1.0]], [3 * 10**9, 6 * 10**9 + 1])
    pts = np.full((7, 1), 0.5)
    q, o = op.push(pts, np.full(7, 10**9))
    assert list(q) == [7, 8] and list(o) == [2, 6]


def test_infinite_points_ranges_and_huge_thresholds():
    op, ref = DT(2), ThresholdOracle(2)
    inf = np.inf
    lo = np.array([[inf, -inf], [-inf, -inf], [0.0, -inf], [-inf, 0.0], [0.0, 0.0]])
    hi = np.array([[inf, inf], [inf, -inf], [inf, 0.0], [0.0, inf], [1.0, 1.0]])
    tau = np.array([2, 1, 3, 2**63 - 1, 2**62 + 5])
    for o in (op, ref):
        o.register(np.arange(5), lo, hi, tau)
    pts = np.array([[inf, 0.0], [inf, -inf], [5.0, -inf], [-inf, inf], [inf, inf], [0.5, 0.5]])
    w = np.array([1, 1, 1, 10**9, 10**9, 10**9])
    _same(op.push(pts, w), ref.push(pts, w))
    assert op.alive() == ref.alive() == 2


def test_registration_counts_only_later_elements():
    op = DT(1)
    op.register([1], [[0.0]], [[1.0]], [2])
    assert op.push(np.array([[0.5]]), np.array([1]))[0].size == 0
    op.register([2], [[0.0]], [[1.0]], [2])
    q, o = op.push(np.array([[0.5], [0.5]]), np.array([1, 1]))
    assert list(q) == [1, 2] and list(o) == [0, 1]


def test_nan_point_matches_nothing():
    op = DT(2)
    op.register([1], [[-np.inf, -np.inf]], [[np.inf, np.inf]], [2])
    q, _ = op.push(np.array([[np.nan, 0.0], [0.0, 0.0]]), np.array([1, 1]))
    assert q.size == 0
    q, o = op.push(np.array([[np.inf, -np.inf]]), np.array([1]))
    assert list(q) == [1] and list(o) == [0]


def test_floor_only_never_matures():
    op = DT(1, floor_only=True)
    op.register([1, 2], [[0.0], [0.0]], [[1.0], [1.0]], [1, 1])
    q, _ = op.push(np.full((10, 1), 0.5), np.ones(10, dtype=np.int64))
    assert q.size == 0 and op.alive() == 2
    op2 = _roundtrip(op)
    assert op2.floor_only and op2.alive() == 2


# ------------------------------------------------------------------------------------------
# against the oracle (small random instances)
# ------------------------------------------------------------------------------------------


@st.composite
def scenarios(draw):
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    steps = draw(st.integers(1, 5))
    big_w = draw(st.booleans())
    return d, seed, steps, big_w


def _random_queries(rng, k, d, grid):
    lo = rng.integers(0, grid, (k, d)).astype(float)
    hi = lo + rng.integers(0, grid // 2 + 1, (k, d))
    zero = rng.random(k) < 0.15
    hi[zero] = lo[zero]
    lo[rng.random((k, d)) < 0.1] = -np.inf
    hi[rng.random((k, d)) < 0.1] = np.inf
    return lo, hi


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_agrees_with_oracle(sc):
    d, seed, steps, big_w = sc
    rng = np.random.default_rng(seed)
    op, ref = DT(d), ThresholdOracle(d)
    grid = 8
    nq = 0
    for _ in range(steps):
        k = int(rng.integers(0, 12))
        qids = np.arange(nq, nq + k) * 3 + 1
        if nq and k and rng.random() < 0.3:  # re-register existing qids (and duplicates in a batch)
            qids[rng.random(k) < 0.5] = rng.integers(0, nq + k, 1)[0] * 3 + 1
        nq += k
        lo, hi = _random_queries(rng, k, d, grid)
        if big_w:
            tau = rng.integers(1, 5 * 10**9, k)
        else:
            tau = np.where(rng.random(k) < 0.2, 1, rng.integers(1, 400, k))
        op.register(qids, lo, hi, tau)
        ref.register(qids, lo, hi, tau)
        n = int(rng.integers(0, 60))
        pts = rng.integers(-1, grid + 2, (n, d)).astype(float)
        w = rng.integers(1, 10**9, n) if big_w else rng.integers(1, 12, n)
        _same(op.push(pts, w), ref.push(pts, w))
        if nq and rng.random() < 0.5:
            dead = rng.integers(0, nq, 3) * 3 + 1
            op.terminate(dead)
            ref.terminate(dead)
        if rng.random() < 0.3:
            op = _roundtrip(op)
        assert op.alive() == ref.alive()


@pytest.mark.parametrize("d", [1, 2, 3])
def test_seeded_against_oracle_with_rounds(d):
    """Thresholds large enough (>> 6h) that several distributed-tracking rounds happen."""
    rng = np.random.default_rng(100 + d)
    m, n = 60, 1500
    lo, hi = _random_queries(rng, m, d, 10)
    tau = rng.integers(200, 3000, m)
    pts = rng.integers(-1, 12, (n, d)).astype(float)
    w = rng.integers(1, 30, n)
    reg_at = np.where(np.arange(m) < m // 2, 0, rng.integers(0, n, m))
    term_at = np.where(rng.random(m) < 0.2, rng.integers(0, n, m), 10**9)
    term_at = np.maximum(term_at, reg_at)
    ref = reference(reg_at, term_at, lo, hi, tau, pts, w)
    # same replay through the oracle, to validate the reference itself
    got_o, _ = drive(ThresholdOracle(d), reg_at, term_at, lo, hi, tau, pts, w)
    assert np.array_equal(got_o, ref)
    op = DT(d)
    got, op = drive(
        op, reg_at, term_at, lo, hi, tau, pts, w, cuts=rng.integers(0, n, 10), snap_at={int(reg_at[m - 1])}
    )
    assert np.array_equal(got, ref)
    assert op.stats["rounds"] > 0


# ------------------------------------------------------------------------------------------
# larger randomized runs against the numpy reference
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "m", "n"), [(1, 2000, 20000), (2, 1000, 10000)])
def test_large_randomized(d, m, n):
    rng = np.random.default_rng(7 + d)
    lo = rng.integers(0, 1000, (m, d)).astype(float)
    hi = lo + rng.integers(0, 300, (m, d))
    hi[: m // 20] = lo[: m // 20]  # zero width
    lo[m // 20 : m // 10, 0] = -np.inf
    hi[m // 10 : m // 7, -1] = np.inf
    pts = rng.integers(0, 1300, (n, d)).astype(float)
    w = rng.integers(1, 10**9, n) if d == 1 else rng.integers(1, 1000, n)
    frac = np.prod((np.minimum(hi, 1299) - np.maximum(lo, 0) + 1) / 1300, axis=1)
    expect = w.mean() * n * frac
    tau = np.maximum(1, expect * rng.uniform(0.01, 1.3, m)).astype(np.int64)
    tau[:20] = 1
    reg_at = np.sort(rng.integers(0, n // 2, m))
    reg_at[: m // 2] = 0
    term_at = np.where(rng.random(m) < 0.2, rng.integers(0, n, m), 10**9)
    term_at = np.maximum(term_at, reg_at)
    ref = reference(reg_at, term_at, lo, hi, tau, pts, w)
    assert (ref >= 0).sum() > m // 3
    op = DT(d)
    got, op = drive(
        op, reg_at, term_at, lo, hi, tau, pts, w, cuts=rng.integers(0, n, 40), snap_at={0, int(reg_at[-1])}
    )
    bad = np.nonzero(got != ref)[0]
    assert bad.size == 0, (bad[:5], got[bad[:5]], ref[bad[:5]])
    s = op.stats
    assert s["rounds"] > 1000 and s["merges"] > 10 and s["rebuilds"] > 5


def test_one_big_push_matches_small_pushes():
    """Block processing never blurs offsets: one push == the same elements pushed one by one."""
    rng = np.random.default_rng(3)
    m, n = 300, 3000
    lo, hi = _random_queries(rng, m, 2, 20)
    tau = rng.integers(1, 2000, m)
    pts = rng.integers(0, 22, (n, 2)).astype(float)
    w = rng.integers(1, 50, n)
    a, b = DT(2), DT(2)
    a.register(np.arange(m), lo, hi, tau)
    b.register(np.arange(m), lo, hi, tau)
    qa, oa = a.push(pts, w)
    qs, os_ = [], []
    for i in range(n):
        q, _ = b.push(pts[i : i + 1], w[i : i + 1])
        qs.append(q)
        os_.append(np.full(q.size, i))
    assert np.array_equal(qa, np.concatenate(qs)) and np.array_equal(oa, np.concatenate(os_))
    assert qa.size > m // 2


# ------------------------------------------------------------------------------------------
# logarithmic method, global rebuilding, space
# ------------------------------------------------------------------------------------------


def test_logarithmic_method_merges_like_a_binary_counter():
    op = DT(1)
    for i in range(8):
        op.register([i], [[float(i)]], [[float(i) + 1]], [5])
    s = op.stats
    # sizes 1,2,1,4,1,2,1,8: merges happen at registrations 2, 4, 6, 8
    assert s["builds"] == 8 and s["merges"] == 4 and s["structures"] == 1
    op.register([8], [[0.0]], [[1.0]], [5])
    assert op.stats["structures"] == 2
    # P3: structure i holds at most 2^i alive queries
    for i, t in enumerate(op._trees):
        assert t is None or t.n_alive <= 2**i


def test_batch_registration_respects_p3():
    op = DT(1)
    op.register(np.arange(5), np.zeros((5, 1)), np.ones((5, 1)), np.full(5, 3))
    op.register(np.arange(5, 8), np.zeros((3, 1)), np.ones((3, 1)), np.full(3, 3))
    op.register(np.arange(8, 9), np.zeros((1, 1)), np.ones((1, 1)), np.full(1, 3))
    for i, t in enumerate(op._trees):
        assert t is None or t.n_alive <= 2**i
    assert op.alive() == 9
    q, o = op.push(np.full((3, 1), 0.5), np.ones(3, dtype=np.int64))
    assert np.array_equal(q, np.arange(9)) and np.all(o == 2)


def test_global_rebuild_shrinks_space():
    rng = np.random.default_rng(11)
    m = 4000
    lo, hi = _random_queries(rng, m, 2, 1000)
    op = DT(2)
    op.register(np.arange(m), lo, hi, np.full(m, 10**6))
    big = op.nbytes()
    op.terminate(np.arange(m // 2 - 1))
    assert op.stats["rebuilds"] == 0  # more than half still alive
    op.terminate(np.arange(m // 2 - 1, 15 * m // 16))
    assert op.stats["rebuilds"] >= 1
    assert op.nbytes() < big / 4
    assert op.alive() == m - 15 * m // 16
    # maturity also triggers the rebuild
    op2 = DT(1)
    op2.register(np.arange(1000), rng.random((1000, 1)) * 0.5, 0.5 + rng.random((1000, 1)), np.full(1000, 1))
    op2.register([5000], [[10.0]], [[11.0]], [1])
    before = op2.nbytes()
    q, _ = op2.push(np.array([[0.5]]), np.array([1]))
    assert q.size == 1000 and op2.alive() == 1
    assert op2.stats["rebuilds"] >= 1 and op2.nbytes() < before / 10
    q, _ = op2.push(np.array([[10.5]]), np.array([1]))
    assert list(q) == [5000] and op2.alive() == 0 and op2.nbytes() == 0


def test_rebuild_keeps_remaining_thresholds():
    op = DT(1)
    op.register(np.arange(4), np.zeros((4, 1)), np.ones((4, 1)), np.array([10, 10, 1000, 1000]))
    op.push(np.full((3, 1), 0.5), np.full(3, 3))  # weight 9 so far
    op.terminate([2, 3])  # alive 2 of 4 -> rebuild with remaining 1
    assert op.stats["rebuilds"] == 1
    q, o = op.push(np.array([[2.0], [0.5]]), np.array([5, 1]))
    assert list(q) == [0, 1] and list(o) == [1, 1]


def test_state_is_pickle_free_and_resumes():
    rng = np.random.default_rng(5)
    lo, hi = _random_queries(rng, 200, 2, 50)
    tau = rng.integers(1, 3000, 200)
    pts = rng.integers(0, 60, (4000, 2)).astype(float)
    w = rng.integers(1, 40, 4000)
    a = DT(2)
    a.register(np.arange(100), lo[:100], hi[:100], tau[:100])
    a.push(pts[:1000], w[:1000])
    a.register(np.arange(100, 200), lo[100:], hi[100:], tau[100:])
    a.push(pts[1000:2000], w[1000:2000])
    s = a.state()
    for v in s.values():
        assert not isinstance(v, np.ndarray) or v.dtype != object
    b = DT.from_state(unpack(pack(s)))
    assert b.alive() == a.alive()
    _same(a.push(pts[2000:], w[2000:]), b.push(pts[2000:], w[2000:]))


class _Relabel:
    """Drive DT with sparse / negative qids (the dense qid index must fall back to search)."""

    def __init__(self, op, f):
        self.op, self.f = op, f
        self.inv: dict[int, int] = {}

    def register(self, q, lo, hi, tau):
        ids = self.f(np.asarray(q))
        self.inv.update(zip(ids.tolist(), np.asarray(q).tolist(), strict=True))
        self.op.register(ids, lo, hi, tau)

    def terminate(self, q):
        self.op.terminate(self.f(np.asarray(q, dtype=np.int64)))

    def push(self, p, w):
        q, o = self.op.push(p, w)
        return np.array([self.inv[int(x)] for x in q], dtype=np.int64), o


@pytest.mark.parametrize("f", [lambda q: q * 10**12 + 7, lambda q: -q - 1, lambda q: q + (q % 2) * (1 << 40)])
def test_sparse_and_negative_qids(f):
    rng = np.random.default_rng(7)
    m, n, d = 300, 4000, 1
    lo, hi = _random_queries(rng, m, d, 10)
    tau = rng.integers(200, 3000, m)
    pts = rng.integers(-1, 12, (n, d)).astype(float)
    w = rng.integers(1, 30, n)
    reg_at = rng.integers(0, n, m)
    term_at = np.where(rng.random(m) < 0.4, reg_at + rng.integers(0, 300, m), 10**9)
    ref = reference(reg_at, term_at, lo, hi, tau, pts, w)
    got, _ = drive(_Relabel(DT(d), f), reg_at, term_at, lo, hi, tau, pts, w)
    assert np.array_equal(got, ref)
    assert (ref >= 0).sum() > 20 and (ref < 0).sum() > 20
