"""The data-sensitive router (paper 003 §4): ``dynamic`` forced to each of its plans, and with
random cost parameters (several plans inside one batch), agrees with the oracle; ``optimum``
agrees too; the histograms of the router's statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.joins import dynamic
from vigil.joins.histograms import IntervalHistogram, KeyHistogram
from vigil.joins.oracle import JoinOracle

from .test_oracle import workload
from .test_strategies import drive, monotone

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FORCED = [(k, c) for k in ("band", "select", "window") for c in dynamic.PLANS[k]]


def _agree(cls, kind, w, outputs=("pairs", "affected")):
    for output in outputs:
        assert drive(cls, kind, output, *w)[0] == drive(JoinOracle, kind, output, *w, snapshot=False)[0]


@pytest.mark.parametrize(("kind", "choice"), FORCED, ids=[f"{k}-{c}" for k, c in FORCED])
def test_forced_choice_agrees_with_oracle(kind, choice):
    cls = type(f"Forced_{choice}", (dynamic.Dynamic,), {"force": choice})

    @SETTINGS
    @given(w=workload(kind))
    def check(w):
        w = monotone(w)
        _agree(cls, kind, w)
        _, op = drive(cls, kind, "pairs", *w, snapshot=False)
        assert op.decisions.sum() == op.decisions[op.choices.index(choice)]

    check()


@pytest.mark.parametrize("kind", ["band", "select", "window"])
def test_mixed_routing_agrees_with_oracle(kind):
    """Random cost parameters: the plans a batch is split between vary from batch to batch."""

    @SETTINGS
    @given(w=workload(kind), seed=st.integers(0, 2**31 - 1))
    def check(w, seed):
        rng = np.random.default_rng(seed)
        params = {c: {k: float(rng.uniform(0, 2)) for k in p} for c, p in dynamic.load_params()[kind].items()}

        class Mixed(dynamic.Dynamic):
            margin_abs = margin_rel = split_us = window_split_us = 0.0  # the paper's argmin: plans change within a batch

            def __init__(self, kind, output="pairs"):
                super().__init__(kind, output)
                self.params = params

        _agree(Mixed, kind, monotone(w))

    check()


@pytest.mark.parametrize("kind", ["band", "select", "window"])
def test_optimum_agrees_with_oracle(kind):
    @settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(w=workload(kind))
    def check(w):
        w = monotone(w)
        _agree(dynamic.Optimum, kind, w, ("pairs",))
        _, op = drive(dynamic.Optimum, kind, "pairs", *w, snapshot=False)
        assert len(op.best) == len(op.dyn) == len(op.times)

    check()


@given(iv=st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 40)), min_size=1, max_size=40),
       xs=st.lists(st.integers(-60, 100), min_size=1, max_size=20))
@settings(max_examples=50, deadline=None)
def test_interval_histogram_incremental_equals_rebuild(iv, xs):
    lo = np.array([a for a, _ in iv], np.float64)
    hi = lo + np.array([b for _, b in iv], np.float64)
    lo[::5] = -np.inf
    h = IntervalHistogram()
    h.rebuild(lo, hi)
    inc = IntervalHistogram()
    inc.rebuild(lo[:1], hi[:1])
    inc.e0, inc.w = h.e0, h.w
    inc.h[:] = 0
    inc.n_left = inc.n_right = 0
    for a, b in zip(lo, hi, strict=True):
        inc.update(a, b, +1)
    inc.update(0.0, 5.0, +1)
    inc.update(0.0, 5.0, -1)
    x = np.array(xs, np.float64)
    assert np.allclose(h.estimate(x), inc.estimate(x))
    # the total mass equals the summed covered length (over the span) / bucket width
    span = (np.clip(hi, h.e0, h.e0 + h.nb * h.w) - np.clip(lo, h.e0, h.e0 + h.nb * h.w)).sum()
    assert np.isclose(h.h.sum() * h.w, span)
    far = np.array([h.e0 - 1.0, h.e0 + h.nb * h.w + 1.0])
    assert h.estimate(far).tolist() == [float((lo == -np.inf).sum()), 0.0]


def test_key_histogram_grows_and_counts():
    h = KeyHistogram()
    keys = np.array([5, 5, 7, 9], np.int64)
    h.sync(keys)
    assert h.estimate(np.array([5, 100, -1])).tolist()[1:] == [0.0, 0.0]
    more = np.concatenate([keys, np.arange(0, 1000)])
    h.sync(more)
    assert h.counts.sum() == len(more) and h.lo <= 0 and h.lo + h.nb * h.w > 999
    assert np.isclose(h.estimate(np.arange(0, 1000)).sum(), len(more), rtol=0.05)


@pytest.mark.parametrize("kind", ["band", "select", "window"])
def test_larger_stream_with_hotspot_moves(monkeypatch, kind):
    """150 clustered queries (alpha 0.05: promotions and demotions move intervals in and out of
    the scattered set mid-stream), a small buffer part, random parameters per batch: dynamic's
    outputs equal the oracle's and its n'' histogram equals one rebuilt from scratch."""
    from vigil.joins import hotspot
    from vigil.joins._base import _Side

    from .test_oracle import band, select

    monkeypatch.setattr(_Side, "BUF_MIN", 8)
    monkeypatch.setattr(hotspot, "ALPHA", 0.05)
    rng = np.random.default_rng(11)
    qs = []
    for i in range(150):
        c = rng.choice([5.0, 20.0, 40.0]) if i % 3 else rng.uniform(0, 50)
        if kind == "band":
            qs.append(band(f"q{i}", c - 25 - rng.uniform(0, 3), c - 25 + rng.uniform(0, 3)))
        else:
            qs.append(select(f"q{i}", (c - rng.uniform(0, 8), c + rng.uniform(0, 8)),
                             (c - rng.uniform(0, 8), c + rng.uniform(0, 8)), 5.0 + i % 7 if kind == "window" else None))
    zero = type("Zero", (dynamic.Dynamic,), {"margin_abs": 0.0, "margin_rel": 0.0, "split_us": 0.0, "window_split_us": 0.0})
    op, ora = zero(kind), JoinOracle(kind)
    for i, s in enumerate(qs[:100]):
        op.register(i, s)
        ora.register(i, s)
    seq, t = 1, 0.0
    for step in range(24):
        op.params = {c: {k: float(rng.uniform(0, 2)) for k in p} for c, p in op.params.items()}
        side = "left" if step % 3 else "right"
        n = int(rng.integers(1, 20))
        key = rng.integers(0, 50, n).astype(np.float64 if kind == "band" else np.int64)
        attrs = None if kind == "band" else rng.uniform(0, 50, (n, 1)).round()
        times = None
        if kind == "window":
            times = t + np.cumsum(rng.integers(0, 2, n)).astype(float)
            t = float(times[-1])
        if step in (8, 16):
            for o in (op, ora):
                for i in range(step % 3, 100, 3):
                    o.terminate(i)
                for i in range(100 + (step - 8) // 8 * 25, 125 + (step - 8) // 8 * 25):
                    o.register(i, qs[i])
        got, exp = (o.insert(side, np.arange(seq, seq + n), key, attrs, times) for o in (op, ora))
        seq += n
        assert all(np.array_equal(a, b) for a, b in zip(got, exp, strict=True)), (kind, step)
        if kind == "window" and not op._dirty:  # m_b is exact: equal to the brute-force count
            nxt = np.arange(seq, seq + 4)
            k2, t2 = rng.integers(0, 50, 4), np.full(4, t + 1.0)
            for s in ("left", "right"):
                x2 = np.zeros(4)
                assert np.array_equal(op.stats(s, k2, x2, t2)["mb"], op._exact(s, k2, x2, t2)["mb"]), (step, nxt)
        if kind != "band":
            for s in ("left", "right"):
                if op.shist[s].stale or op._dirty:
                    continue
                ref = IntervalHistogram()
                ref.e0, ref.w = op.shist[s].e0, op.shist[s].w
                ids = list(op._trackers()[s].scattered.iv)
                from vigil.joins.histograms import _iv_add
                from vigil.joins.select import COLS

                rows = np.array([op.q[i] for i in ids]).reshape(-1, 5)
                _iv_add(ref.h, ref.e0, ref.w, rows[:, COLS[s][2]], rows[:, COLS[s][3]], 1.0)
                assert np.allclose(ref.h, op.shist[s].h), (kind, step, s)
    assert (op.decisions > 0).sum() >= 2


def test_numba_select_route_equals_cost_models():
    """route_select (one numba pass) picks the argmin of vigil.joins.costs' select formulas."""
    rng = np.random.default_rng(3)
    from .test_oracle import select

    op = type("Zero", (dynamic.Dynamic,), {"margin_abs": 0.0, "margin_rel": 0.0, "split_us": 0.0, "window_split_us": 0.0})("select", "count")
    for i in range(300):
        a, c = rng.uniform(0, 100, 2)
        op.register(i, select(f"q{i}", (a, a + rng.uniform(0, 30)), (c, c + rng.uniform(0, 30))))
    op.insert("right", np.arange(1, 2001), rng.integers(0, 40, 2000), rng.uniform(0, 130, (2000, 1)), None)
    key, x = rng.integers(-5, 45, 500), rng.uniform(-10, 140, 500)
    op.insert("left", np.array([5000]), key[:1], x[:1].reshape(1, 1), None)
    for _ in range(5):
        op.params = {c: {k: float(rng.uniform(0, 2)) for k in p} for c, p in op.params.items()}
        fast = op.choose("left", key, x, np.full(500, np.nan))
        slow = np.argmin(op.estimated_costs("left", key, x, np.full(500, np.nan)), axis=1)
        assert np.mean(fast == slow) > 0.99  # float ties aside


def test_numba_window_route_equals_cost_models():
    """The window router's numba kernel picks the argmin of vigil.joins.costs' window formulas
    (the numpy evaluation over the same statistics), with random parameters."""
    rng = np.random.default_rng(4)
    from .test_oracle import select

    op = type("Zero", (dynamic.Dynamic,), {"split_us": 0.0})("window", "count")
    for i in range(200):
        a, c = rng.uniform(0, 100, 2)
        op.register(i, select(f"q{i}", (a, a + rng.uniform(0, 30)), (c, c + rng.uniform(0, 30)), float(rng.uniform(5, 500))))
    op.insert("right", np.arange(1, 2001), rng.integers(0, 40, 2000), rng.uniform(0, 130, (2000, 1)),
              np.arange(2000, dtype=np.float64))
    key, x, t = rng.integers(-5, 45, 500), rng.uniform(-10, 140, 500), np.full(500, 2100.0)
    op.insert("left", np.array([5000]), key[:1], x[:1].reshape(1, 1), t[:1])
    for _ in range(5):
        op.params = {c: {k: float(rng.uniform(0, 2)) for k in p} for c, p in op.params.items()}
        fast = op.choose("left", key, x, t)
        slow = np.argmin(op.estimated_costs("left", key, x, t), axis=1)
        assert np.mean(fast == slow) > 0.99  # float ties aside
        assert len(set(fast.tolist())) >= 1


@given(iv=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 30)), min_size=1, max_size=30),
       k=st.integers(1, 12), total=st.booleans())
@settings(max_examples=40, deadline=None)
def test_hist_ssi_exact_with_enough_buckets_and_bounded_otherwise(iv, k, total):
    """HIST-SSI (App. B) equals f_I when every half has a bucket per break point; with fewer
    buckets its values stay within [0, |I|] and it has O(k + tau) pieces; HIST-EQW's mass is the
    intervals' total covered length."""
    from vigil.joins.hist_ssi import hist_eqw, hist_ssi, stab_counts
    from vigil.joins.partition import stabbing_number

    lo = np.array([a for a, _ in iv], np.float64)
    hi = lo + np.array([b for _, b in iv], np.float64)
    x = np.arange(-2, 95) + 0.5
    assert np.allclose(hist_ssi(lo, hi, 4 * len(lo) * len(lo), total_weights=total).estimate(x), stab_counts(lo, hi, x))
    h = hist_ssi(lo, hi, k, total_weights=total)
    est = h.estimate(x)
    assert est.min() >= -1e-9 and est.max() <= len(lo) + 1e-9
    assert h.pieces <= 2 * (k + 2 * stabbing_number(lo, hi))
    if hi.max() > lo.min():
        e = hist_eqw(lo, hi, k)
        w = (hi.max() - lo.min()) / k
        assert np.isclose(e.values[:-1].sum() * w, (hi - lo).sum())


@pytest.mark.parametrize("output", ["pairs", "affected", "count"])
def test_partnerless_one_tuple_calls_and_ordered_sub_batches(output):
    """One-tuple calls whose key has no stored partner are answered without a plan (counted in
    ``no_partner``), and routed sub-batches probed in R.A order (order_min=1), with several plans
    per batch: every output equals the oracle's (count mode: the running count)."""
    from .test_oracle import select

    rng = np.random.default_rng(5)
    cls = type("Ordered", (dynamic.Dynamic,), {"margin_abs": 0.0, "margin_rel": 0.0, "split_us": 0.0,
                                               "order_min": 1,
                                               "order_plans": tuple(dynamic.PLANS["select"])})
    op, ora = cls("select", output), JoinOracle("select", "pairs" if output == "count" else output)
    pairs = 0
    for i in range(60):
        c = rng.uniform(0, 50)
        s = select(f"q{i}", (c - rng.uniform(0, 10), c + rng.uniform(0, 10)),
                   (rng.uniform(0, 20), rng.uniform(20, 50)), None)
        op.register(i, s)
        ora.register(i, s)
    seq = 1
    prng = np.random.default_rng(6)  # the parameters' own stream: the tuples do not depend on their count
    for step in range(40):
        op.params = {c: {k: float(prng.uniform(0, 2)) for k in p} for c, p in op.params.items()}
        side = "right" if step % 5 == 0 else "left"
        n = 1 if step % 2 else int(rng.integers(2, 30))
        # stored right keys are even only: odd left keys have no partner
        key = (2 * rng.integers(0, 10, n) + (0 if side == "right" else rng.integers(0, 2, n))).astype(np.int64)
        attrs = rng.uniform(0, 50, (n, 1)).round()
        got, exp = (o.insert(side, np.arange(seq, seq + n), key, attrs) for o in (op, ora))
        seq += n
        pairs += len(exp[0])
        if output == "count":
            assert op.counted == pairs, step
        else:
            assert all(np.array_equal(a, b) for a, b in zip(got, exp, strict=True)), step
    assert op.no_partner > 0 and pairs > 0
