"""Threshold baselines (scan, interval_tree, seg_intv, rtree) against ThresholdOracle: exact
(qid, offset) outputs on randomized instances (seeded numpy + hypothesis), d = 1, 2, 3 where
supported; edge cases; state()/from_state(); the logarithmic method's rebuilds; the id map."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.errors import Unsupported
from vigil.state import pack, unpack
from vigil.threshold.oracle import ThresholdOracle
from vigil.threshold.stabbing import IdMap, IntervalTreeStabbing, RTreeStabbing, Scan, SegIntvStabbing

SUPPORTED = {"scan": (1, 2, 3), "interval_tree": (1,), "seg_intv": (2,), "rtree": (1, 2, 3)}
CASES = [(name, d) for name, dims in SUPPORTED.items() for d in dims]


def make(name, d):
    return registry.resolve("threshold", name)(d)


def rand_queries(rng, k, d, first_id, grid=12):
    lo = rng.integers(0, grid, (k, d)).astype(float)
    hi = lo + rng.integers(0, grid // 2, (k, d))
    lo[rng.random((k, d)) < 0.1] = -np.inf
    hi[rng.random((k, d)) < 0.1] = np.inf
    tau = rng.integers(1, 400, k)
    tau[rng.random(k) < 0.15] = 1
    tau[rng.random(k) < 0.05] = 3 * 10**9
    return np.arange(first_id, first_id + k, dtype=np.int64), lo, hi, tau


def rand_points(rng, n, d, grid=12):
    pts = rng.integers(-1, grid + 1, (n, d)).astype(float)
    w = rng.integers(1, 120, n)
    w[rng.random(n) < 0.03] = 10**9
    return pts, w


def assert_same(a, b, ctx):
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and np.array_equal(np.asarray(a[1]), np.asarray(b[1])), (
        ctx, a, b)


def assert_same_state(sa, sb, ctx):
    for key in ("dim", "qids", "lo", "hi", "tau", "w"):
        assert np.array_equal(np.asarray(sa[key]), np.asarray(sb[key])), (ctx, key, sa[key], sb[key])


def replay_random(name, d, seed, steps=40, restore_at=(13, 29)):
    rng = np.random.default_rng(seed)
    oracle, op = ThresholdOracle(d), make(name, d)
    nq = 0
    for step in range(steps):
        r = rng.random()
        if r < 0.3:
            q = rand_queries(rng, int(rng.integers(0, 40)), d, nq)
            nq += q[0].shape[0]
            if nq and rng.random() < 0.3:  # re-register some ids (alive or not)
                q[0][: q[0].shape[0] // 2] = rng.integers(0, nq, q[0].shape[0] // 2)
            oracle.register(*q)
            op.register(*q)
        elif r < 0.45:
            ids = rng.integers(0, max(nq, 1), int(rng.integers(0, 12)))
            oracle.terminate(ids)
            op.terminate(ids)
        else:
            pts, w = rand_points(rng, int(rng.integers(0, 40)), d)
            assert_same(op.push(pts, w), oracle.push(pts, w), (name, d, seed, step))
        assert op.alive() == oracle.alive(), (name, d, seed, step)
        if step in restore_at:
            s = op.state()
            assert_same_state(s, oracle.state(), (name, d, seed, step))
            op = type(op).from_state(unpack(pack(s)))
    return op, oracle


@pytest.mark.parametrize("name,d", CASES)
def test_random_vs_oracle(name, d):
    for seed in range(6):
        replay_random(name, d, seed)


@pytest.mark.parametrize("name,d", CASES)
def test_edge_cases(name, d):
    op, oracle = make(name, d), ThresholdOracle(d)
    inf = np.inf
    lo = np.array([[0.0] * d, [5.0] * d, [-inf] * d, [5.0] * d, [5.0] * d] + [[2.0] * d] * 20)
    hi = np.array([[5.0] * d, [5.0] * d, [inf] * d, [9.0] * d, [inf] * d] + [[7.0] * d] * 20)
    tau = np.array([1, 1, 10**18, 2 * 10**9, 3] + [50] * 20)
    qids = np.arange(25, dtype=np.int64) * 7 + 3
    for o in (op, oracle):
        o.register(qids, lo, hi, tau)
    pts = np.array([[5.0] * d, [4.0] * d, [6.0] * d, [6.0] * d, [9.0] * d, [9.0] * d, [1e300] * d])
    w = np.array([1, 49, 10**9, 10**9, 10**9, 10**9, 10**9])
    for a, b in ((0, 1), (1, 3), (3, 5), (5, 7)):
        out = op.push(pts[a:b], w[a:b])
        assert_same(out, oracle.push(pts[a:b], w[a:b]), (name, d, a))
        if a == 1:  # the 20 identical queries all mature on the same element
            assert np.sum(out[1] == 0) == 20
    assert op.alive() == oracle.alive() == 1  # only the (-inf, inf) query with tau 1e18 is left
    # terminate unknown / already matured ids: ignored; re-register resets the weight
    op.terminate(np.array([99999, qids[0]]))
    oracle.terminate(np.array([99999, qids[0]]))
    for o in (op, oracle):
        o.register(qids[2:3], lo[2:3], hi[2:3], np.array([2]))
    p1 = np.zeros((1, d))
    for o in (op, oracle):
        assert o.push(p1, np.array([1]))[0].shape[0] == 0
    assert_same(op.push(p1, np.array([1])), oracle.push(p1, np.array([1])), (name, d, "reregister"))
    assert op.alive() == 0
    assert_same(op.push(np.zeros((0, d)), np.zeros(0, np.int64)), (np.zeros(0), np.zeros(0)), "empty push")


def test_unsupported_dims():
    with pytest.raises(Unsupported):
        IntervalTreeStabbing(2)
    with pytest.raises(Unsupported):
        SegIntvStabbing(1)
    with pytest.raises(Unsupported):
        SegIntvStabbing(3)
    for cls in (Scan, RTreeStabbing):
        cls(4)  # any d


def test_state_moves_between_implementations():
    rng = np.random.default_rng(3)
    ops = {n: make(n, 2) for n in ("scan", "seg_intv", "rtree")}
    oracle = ThresholdOracle(2)
    q = rand_queries(rng, 200, 2, 0)
    for o in [*ops.values(), oracle]:
        o.register(*q)
    pts, w = rand_points(rng, 50, 2)
    for o in [*ops.values(), oracle]:
        o.push(pts, w)
    s = oracle.state()
    for n, o in ops.items():
        assert_same_state(o.state(), s, n)
    moved = {n: type(ops[nxt]).from_state(unpack(pack(ops[n].state())))
             for n, nxt in zip(ops, ["seg_intv", "rtree", "scan"], strict=True)}
    pts, w = rand_points(rng, 80, 2)
    ref = oracle.push(pts, w)
    for n, o in moved.items():
        assert_same(o.push(pts, w), ref, n)


@pytest.mark.parametrize("d", [1, 2])
def test_rebuilds_and_blocks_against_scan(d):
    """Many small registration batches (logarithmic-method merges), many terminations and
    maturities (global rebuilds), pushes longer than scan's 256-element block; scan itself is
    checked against the oracle on the first 60 steps."""
    rng = np.random.default_rng(100 + d)
    name = "interval_tree" if d == 1 else "seg_intv"
    ref, op, rt, oracle = Scan(d), make(name, d), RTreeStabbing(d), ThresholdOracle(d)
    nq = n_reg = 0
    for step in range(200):
        r = rng.random()
        if r < 0.4:
            n_reg += 1
            q = rand_queries(rng, int(rng.integers(1, 60)), d, nq, grid=60)
            q[3][:] = rng.integers(1, 3000, q[0].shape[0])
            nq += q[0].shape[0]
            for o in (ref, op, rt, oracle):
                o.register(*q)
        elif r < 0.6:
            ids = rng.integers(0, nq, int(rng.integers(0, 40)))
            for o in (ref, op, rt, oracle):
                o.terminate(ids)
        else:
            pts, w = rand_points(rng, int(rng.integers(1, 700)), d, grid=60)
            out = ref.push(pts, w)
            if step < 60:
                assert_same(out, oracle.push(pts, w), ("scan", step))
            assert_same(op.push(pts, w), out, (name, step))
            assert_same(rt.push(pts, w), out, ("rtree", step))
        assert ref.alive() == op.alive() == rt.alive()
        assert len(op.levels) <= 2 * np.log2(max(op.alive(), 1)) + 2  # merged, not one level per batch
        if step == 60:
            oracle = ThresholdOracle(d)  # stop paying for the oracle
    assert op._next_uid > n_reg + 10  # merges and global rebuilds built further structures
    assert_same_state(op.state(), ref.state(), name)


# hypothesis: arbitrary interleavings on a tiny grid (many ties), all implementations at once


@st.composite
def programs(draw):
    d = draw(st.sampled_from([1, 2, 3]))
    coord = st.integers(-2, 6).map(float) | st.sampled_from([-np.inf, np.inf])
    ops = []
    nq = 0
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["register", "register", "terminate", "push", "push", "push"]))
        if kind == "register":
            k = draw(st.integers(0, 6))
            lo = np.array(draw(st.lists(st.lists(coord, min_size=d, max_size=d), min_size=k, max_size=k)),
                          float).reshape(k, d)
            ext = np.array(draw(st.lists(st.lists(st.integers(0, 4), min_size=d, max_size=d), min_size=k,
                                         max_size=k)), float).reshape(k, d)
            hi = np.where(np.isneginf(lo), draw(st.sampled_from([-np.inf, 3.0, np.inf])), lo + ext)
            tau = np.array(draw(st.lists(st.integers(1, 12) | st.just(10**12), min_size=k, max_size=k)), np.int64)
            ids = np.array(draw(st.lists(st.integers(0, nq + k), min_size=k, max_size=k)), np.int64)
            nq += k
            ops.append(("register", ids, lo, hi, tau))
        elif kind == "terminate":
            ops.append(("terminate", np.array(draw(st.lists(st.integers(0, nq + 1), max_size=4)), np.int64)))
        else:
            n = draw(st.integers(0, 8))
            pts = np.array(draw(st.lists(st.lists(st.integers(-3, 7).map(float), min_size=d, max_size=d),
                                         min_size=n, max_size=n)), float).reshape(n, d)
            w = np.array(draw(st.lists(st.integers(1, 6) | st.just(10**9), min_size=n, max_size=n)), np.int64)
            ops.append(("push", pts, w))
    return d, ops


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_hypothesis_vs_oracle(prog):
    d, ops = prog
    impls = [make(n, d) for n, dims in SUPPORTED.items() if d in dims]
    oracle = ThresholdOracle(d)
    for i, step in enumerate(ops):
        if step[0] == "register":
            # the hi of a query must not be below its lo
            lo, hi = step[2], np.maximum(step[3], step[2])
            for o in [*impls, oracle]:
                o.register(step[1], lo, hi, step[4])
        elif step[0] == "terminate":
            for o in [*impls, oracle]:
                o.terminate(step[1])
        else:
            ref = oracle.push(step[1], step[2])
            for o in impls:
                assert_same(o.push(step[1], step[2]), ref, (o.name, i))
        for o in impls:
            assert o.alive() == oracle.alive(), (o.name, i)


def test_idmap_against_dict():
    rng = np.random.default_rng(7)
    m, ref = IdMap(4), {}
    for _ in range(300):
        ks = rng.integers(-50, 3000, int(rng.integers(0, 200))).astype(np.int64)
        if rng.random() < 0.5:
            vs = rng.integers(0, 10**12, ks.shape[0]).astype(np.int64)
            m.put(ks, vs)
            ref.update(zip(ks.tolist(), vs.tolist(), strict=True))
        else:
            got = m.pop(ks)
            want = [ref.pop(k, -1) for k in ks.tolist()]
            assert got.tolist() == want
        assert len(m) == len(ref)
    probe = np.arange(-60, 3010, dtype=np.int64)
    assert m.get(probe).tolist() == [ref.get(k, -1) for k in probe.tolist()]
    ks, vs = m.items()
    assert dict(zip(ks.tolist(), vs.tolist(), strict=True)) == ref
