"""DT's slack split by rate (paper 000 §3.2/§7 with uneven slacks): exactness on skewed streams
against the oracle, and the invariants that keep the paper's bounds (per query, the slack
shares sum to SHARE * h, so a round's slacks sum to at most tau'/2; at most (1 + SHARE) h signal
events per round)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.threshold._dt_keys import _LO32, SHARE
from vigil.threshold.dt import DT
from vigil.threshold.oracle import ThresholdOracle

pytestmark = pytest.mark.timeout(300)


def _skewed_points(rng, n, d, hot):
    """Most elements near ``hot`` (a few canonical nodes of every query are much busier than the
    others: uneven shares), the rest uniform."""
    pts = rng.integers(0, 400, (n, d)).astype(float)
    near = rng.random(n) < 0.8
    pts[near] = hot + np.minimum(rng.geometric(0.2, (int(near.sum()), d)), 60)
    return pts


def _run(seed, d, m=150, n=4000):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 300, (m, d)).astype(float)
    hi = lo + rng.integers(0, 200, (m, d))
    tau = rng.integers(500, 20000, m)
    pts = _skewed_points(rng, n, d, rng.integers(50, 250))
    w = rng.integers(1, 40, n)
    op, ref = DT(d), ThresholdOracle(d)
    qids = np.arange(m)
    op.register(qids[: m // 2], lo[: m // 2], hi[: m // 2], tau[: m // 2])
    ref.register(qids[: m // 2], lo[: m // 2], hi[: m // 2], tau[: m // 2])
    cuts = np.unique(np.r_[0, rng.integers(1, n, 12), n])
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        got, exp = op.push(pts[a:b], w[a:b]), ref.push(pts[a:b], w[a:b])
        assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1]), (k, got, exp)
        if k == 3:  # a second wave, merged into a new structure with weights already counted
            op.register(qids[m // 2 :], lo[m // 2 :], hi[m // 2 :], tau[m // 2 :])
            ref.register(qids[m // 2 :], lo[m // 2 :], hi[m // 2 :], tau[m // 2 :])
        _check_shares(op)
    return op


def _entries(t, e0: int, e1: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, payloads) of the entries e0..e1-1: a leaf of the queue pool ``tt``, or for a private
    piece of a bucketed tree (row >= P0, ``_dt_bucket``) columns 2 and 3 of its row."""
    rows = t.qn[e0:e1, 0].astype(np.int64)
    slots = t.qn[e0:e1, 1].astype(np.int64)
    priv = rows >= t.P0
    keys, pay = t.NR[rows, 2].copy(), t.NR[rows, 3].copy()
    keys[~priv] = t.tt[slots[~priv], 0]
    pay[~priv] = t.tt[slots[~priv], 1]
    return keys, pay


def _counters(t, rows) -> np.ndarray:
    """Exact counters of participant rows: a private piece's is its row's base plus the tag of its
    chunk of 32 pieces (rows after the pieces, ``_dt_bucket``)."""
    rows = rows.astype(np.int64)
    c = t.NR[rows, 1].copy()
    if t.bk:
        priv = rows >= t.P0
        c[priv] += t.NR[t.P0 + t.PH.shape[0] + ((rows[priv] - t.P0) >> 5), 0]
    return c


def _check_shares(op: DT) -> None:
    for t in op._trees:
        if t is None:
            continue
        for q in np.nonzero(t.qalive)[0]:
            e0, e1 = t.qr[q, 3], t.qr[q + 1, 3]
            h = e1 - e0
            lam = t.qr[q, 1]
            if lam <= 0:
                continue  # direct mode
            keys, pay = _entries(t, e0, e1)
            shares = pay & _LO32
            assert shares.sum() == SHARE * h
            assert (pay >> 32 == q).all()
            # no due signal is left undelivered: every key is above its node's counter
            assert (keys > _counters(t, t.qn[e0:e1, 0])).all()
            # units still missing in this round are within (0, (1 + SHARE) h]
            assert 0 < t.qr[q, 2] <= (1 + SHARE) * h


@pytest.mark.parametrize("d", [1, 2])
def test_skewed_rates_match_oracle(d):
    op = _run(11 + d, d)
    assert op.stats["rounds"] > 50


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), d=st.sampled_from([1, 2]))
def test_skewed_rates_match_oracle_random(seed, d):
    _run(seed, d, m=40, n=800)


def test_signal_events_per_round_bounded():
    """Unit weights (one signal per event): every round signal reports >= 1 unit and a round ends
    at (1 + SHARE) h units; a query in direct mode signals at most DIRECT h times. So signals <=
    (1 + SHARE) h_max (rounds + m) + DIRECT h_max direct: O(h) per round, as in the paper."""
    from vigil.threshold._dt_keys import DIRECT

    rng = np.random.default_rng(5)
    m, n = 200, 30000
    lo = rng.integers(0, 300, (m, 1)).astype(float)
    hi = lo + rng.integers(0, 200, (m, 1))
    op = DT(1)
    op.register(np.arange(m), lo, hi, rng.integers(2000, 50000, m))
    t = op._trees[-1]
    hmax = int(np.diff(t.qr[:, 3]).max())
    for _ in range(0, n, 5000):
        op.push(_skewed_points(rng, 5000, 1, 120), np.ones(5000, dtype=np.int64))
        _check_shares(op)
    s = op.stats
    assert s["rounds"] > 100 and s["matured"] > 10
    assert s["signals"] <= (1 + SHARE) * hmax * (s["rounds"] + m) + DIRECT * hmax * s["direct"]


def test_first_round_split_by_sample():
    """A structure built after elements were pushed splits its first round by the counts of the
    recent elements (uneven shares at once); one built before any push splits evenly."""
    rng = np.random.default_rng(9)
    m, n = 120, 1000
    lo = rng.integers(0, 300, (m, 1)).astype(float)
    hi = lo + rng.integers(50, 200, (m, 1))
    tau = np.full(m, 10**9)
    op, ref = DT(1), ThresholdOracle(1)
    for o in (op, ref):
        o.register(np.arange(m // 2), lo[: m // 2], hi[: m // 2], tau[: m // 2])
    t = op._trees[-1]
    assert ((t.tt[t.qn[:, 1], 1] & _LO32) == SHARE).all()
    pts = _skewed_points(rng, n, 1, 100)
    w = np.ones(n, dtype=np.int64)
    for o in (op, ref):
        o.push(pts, w)
        o.register(np.arange(m // 2, m), lo[m // 2 :], hi[m // 2 :], tau[m // 2 :])  # merges: a new build
    t = op._trees[-1]
    assert t.n_built == m
    assert ((t.tt[t.qn[:, 1], 1] & _LO32) != SHARE).any()
    _check_shares(op)
    pts = _skewed_points(rng, n, 1, 100)
    got, exp = op.push(pts, w), ref.push(pts, w)
    assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1])
    q1, _, _, r1 = op.remaining()
    q2, _, _, r2 = ref.remaining()
    o = np.argsort(q1)
    assert np.array_equal(q1[o], q2) and np.array_equal(r1[o], r2)
