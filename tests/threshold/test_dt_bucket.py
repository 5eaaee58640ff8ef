"""DT with bucketed last-dimension trees (``_dt_bucket``): the participants of every query still
partition its range, a bucket holds at most B private pieces, outputs equal the oracle's for tiny
and huge buckets, duplicate keys at bucket edges, and registrations / terminations between
elements; 1D is not bucketed."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.threshold import dt as dtmod
from vigil.threshold.dt import DT
from vigil.threshold.oracle import ThresholdOracle

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def bucket(monkeypatch):
    def set_(b):
        monkeypatch.setattr(dtmod, "BUCKET", b)

    return set_


def _queries(rng, k, d, dom, side):
    lo = rng.integers(0, dom, (k, d)).astype(float)
    return lo, lo + rng.integers(0, side, (k, d))


def _structure(op):
    ts = [t for t in op._trees if t is not None]
    assert len(ts) == 1
    return ts[0]


@pytest.mark.parametrize("B", [1, 2, 3, 8, 1 << 20])
@pytest.mark.parametrize("dom", [12, 1000])
def test_participants_partition_every_range(bucket, B, dom):
    """One unit-weight point at a time through the counters only: every query's exact weight is
    1 inside its box and 0 outside (each point hits exactly one participant of the queries that
    contain it: canonical nodes and private pieces are disjoint and cover the box)."""
    bucket(B)
    rng = np.random.default_rng(B + dom)
    k = 300
    lo, hi = _queries(rng, k, 2, dom, max(2, dom // 3))
    # unbounded and degenerate ranges too
    lo[:10, 1] = -np.inf
    hi[10:20, 1] = np.inf
    hi[20:30] = lo[20:30]
    op = DT(2, floor_only=True)
    op.register(np.arange(k), lo, hi, np.full(k, 1000))
    t = _structure(op)
    assert t.bk and (B == 1 or t.PH.shape[0] > 0)  # B = 1: every endpoint starts its bucket
    pts = np.concatenate([rng.integers(-1, dom + dom // 3 + 2, (60, 2)).astype(float),
                          lo[:30], hi[30:60], np.array([[-np.inf, -np.inf], [np.inf, np.inf]])])
    for p in pts:
        before = t.remaining().copy()
        op.push(p[None, :], np.ones(1, np.int64))
        got = np.empty(k, np.int64)
        got[t.qids] = before - t.remaining()  # remaining() is in the structure's local order
        inside = np.all((lo <= p) & (p <= hi), axis=1).astype(np.int64)
        assert np.array_equal(got, inside), p


@pytest.mark.parametrize("B", [1, 4, 16])
def test_at_most_B_private_pieces_per_bucket(bucket, B):
    bucket(B)
    rng = np.random.default_rng(3)
    k = 500
    lo, hi = _queries(rng, k, 2, 40, 15)  # many duplicate keys
    op = DT(2)
    op.register(np.arange(k), lo, hi, np.full(k, 50))
    t = _structure(op)
    last = t.tdim == 1
    for base, L, H in zip(t.tbase[last], t.tL[last], t.tH[last], strict=True):
        off = sum(((L - 1) >> (H - lev)) + 1 for lev in range(H))
        v = t.NR[base + off : base + off + L, 0]
        # left pieces, pieces with both ends in the bucket, right pieces
        n1, nb, n2 = (v >> 22) & 0x7FF, (v >> 11) & 0x7FF, v & 0x7FF
        assert (n1 + nb + n2 <= B).all()
        p0 = (v >> 33) & 0x7FFFFFFF
        assert (p0 + n1 + nb + n2 <= t.PH.shape[0]).all()
        for a, b, c, e in zip(p0, p0 + n1, p0 + n1 + nb, p0 + n1 + nb + n2, strict=True):
            # left pieces by lower key, all ending at the bucket's end; pieces with both ends
            # inside by lower key, ending before it; right pieces (starting at the bucket's first
            # key) by upper key descending
            lo_, hi_ = t.NR[t.P0 + a : t.P0 + b, 0], t.PH[a:b]
            assert (np.diff(lo_) >= 0).all() and (hi_ == hi_[:1]).all()
            lo2, hi2 = t.NR[t.P0 + b : t.P0 + c, 0], t.PH[b:c]
            assert (np.diff(lo2) >= 0).all()
            if b > a:
                assert (hi2 < hi_[0]).all()
            hi3 = t.PH[c:e]
            assert (np.diff(hi3) <= 0).all()
            if e > c:
                first = t.NR[t.P0 + c, 0]
                assert (t.NR[t.P0 + c : t.P0 + e, 0] == first).all()
                assert (lo_ > first).all() and (lo2 > first).all()
    NP = t.PH.shape[0]
    assert (t.NR[t.P0 : t.P0 + NP, 0] < t.PH).all()  # no empty piece
    assert t.P0 + NP + (NP + 31) // 32 == t.NR.shape[0]  # then one tag row per 32 pieces


def _run(op, ref, rng, dom, side, rounds, k0):
    nq = k0
    for _ in range(rounds):
        pts = rng.integers(0, dom, (int(rng.integers(1, 80)), 2)).astype(float)
        w = rng.integers(1, 30, pts.shape[0])
        got, exp = op.push(pts, w), ref.push(pts, w)
        assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1])
        if rng.random() < 0.5:  # registrations between elements (logarithmic-method merges)
            k = int(rng.integers(1, 40))
            lo, hi = _queries(rng, k, 2, dom, side)
            tau = rng.integers(1, 3000, k)
            for o in (op, ref):
                o.register(np.arange(nq, nq + k), lo, hi, tau)
            nq += k
        if rng.random() < 0.4:  # terminations (lazy deletion, global rebuilds)
            ids = rng.integers(0, nq, int(rng.integers(1, 60)))
            for o in (op, ref):
                o.terminate(ids)
        assert op.alive() == ref.alive()


@pytest.mark.parametrize("B", [1, 2, 5, 32, 1 << 20])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_oracle_with_registrations_and_terminations(bucket, B, seed):
    bucket(B)
    rng = np.random.default_rng(100 * B + seed)
    dom, side = (30, 12) if seed == 0 else (2000, 700)  # seed 0: duplicates at every bucket edge
    k = 400
    lo, hi = _queries(rng, k, 2, dom, side)
    tau = rng.integers(1, 3000, k)
    op, ref = DT(2), ThresholdOracle(2)
    for o in (op, ref):
        o.register(np.arange(k), lo, hi, tau)
    _run(op, ref, rng, dom, side, 60, k)
    assert op.stats["signals"] > 0


def test_ranges_inside_one_bucket(bucket):
    """Huge buckets: every secondary tree is one bucket and every membership one private piece."""
    bucket(1 << 20)
    rng = np.random.default_rng(9)
    k = 200
    lo, hi = _queries(rng, k, 2, 500, 50)
    tau = rng.integers(50, 500, k)
    op, ref = DT(2), ThresholdOracle(2)
    for o in (op, ref):
        o.register(np.arange(k), lo, hi, tau)
    t = _structure(op)
    last = t.tdim == 1
    assert (t.tL[last] == 1).all()
    for _ in range(30):
        pts = rng.integers(0, 560, (50, 2)).astype(float)
        w = rng.integers(1, 40, 50)
        got, exp = op.push(pts, w), ref.push(pts, w)
        assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1])


def test_one_dimension_is_not_bucketed(bucket):
    rng = np.random.default_rng(4)
    k = 300
    lo, hi = _queries(rng, k, 1, 1000, 200)
    tau = rng.integers(1, 2000, k)
    built = []
    for B in (0, 2):
        bucket(B)
        op = DT(1)
        op.register(np.arange(k), lo, hi, tau)
        built.append(_structure(op))
    a, b = built
    assert not a.bk and not b.bk and a.PH.shape[0] == b.PH.shape[0] == 0
    for name in ("NR", "tt", "qn", "qr"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_bucketing_cuts_entries(bucket):
    rng = np.random.default_rng(2)
    k = 2000
    lo, hi = _queries(rng, k, 2, 10_000, 3000)
    E = {}
    for B in (0, 32):
        bucket(B)
        op = DT(2)
        op.register(np.arange(k), lo, hi, np.full(k, 10**6))
        E[B] = _structure(op).qn.shape[0]
    assert E[32] < 0.8 * E[0]


@pytest.mark.parametrize("B", [2, 16, 1 << 20])
def test_three_dimensions_match_oracle(bucket, B):
    """d = 3: only the last dimension's trees are bucketed (the middle ones link secondary trees)."""
    bucket(B)
    rng = np.random.default_rng(30 + B)
    d, k = 3, 300
    lo, hi = _queries(rng, k, d, 40, 20)
    tau = rng.integers(1, 500, k)
    op, ref = DT(d), ThresholdOracle(d)
    for o in (op, ref):
        o.register(np.arange(k), lo, hi, tau)
    nq = k
    for it in range(30):
        pts = rng.integers(0, 60, (50, d)).astype(float)
        w = rng.integers(1, 20, 50)
        got, exp = op.push(pts, w), ref.push(pts, w)
        assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1])
        if it % 5 == 0:
            l2, h2 = _queries(rng, 20, d, 40, 20)
            t2 = rng.integers(1, 500, 20)
            ids = rng.integers(0, nq + 20, 30)
            for o in (op, ref):
                o.register(np.arange(nq, nq + 20), l2, h2, t2)
                o.terminate(ids)
            nq += 20
    assert op.stats["matured"] > 0


@pytest.mark.parametrize("B", [70, 300])
@pytest.mark.parametrize("seed", [0, 1])
def test_chunk_tags_match_oracle(bucket, B, seed):
    """Lists of >= 32 left / right pieces in a bucket take whole-chunk tags (chunks of 32
    consecutive pieces, which may straddle lists and buckets) with lazy minimum deficits: outputs
    still equal the oracle's, with registrations and terminations between pushes; unit points
    through the counters still count 1 inside every box."""
    bucket(B)
    rng = np.random.default_rng(70 + B + seed)
    dom, side = (400, 300) if seed == 0 else (5000, 4000)  # seed 0: many duplicate keys
    k = 1500
    lo, hi = _queries(rng, k, 2, dom, side)
    tau = rng.integers(1, 4000, k)
    op, ref = DT(2), ThresholdOracle(2)
    for o in (op, ref):
        o.register(np.arange(k), lo, hi, tau)
    t = _structure(op)
    pts = rng.integers(0, dom, (300, 2)).astype(float)
    w = rng.integers(1, 30, 300)
    got, exp = op.push(pts, w), ref.push(pts, w)
    assert np.array_equal(got[0], exp[0]) and np.array_equal(got[1], exp[1])
    assert (t.NR[t.P0 + t.PH.shape[0] :, 0] > 0).any()  # whole chunks were tagged
    _run(op, ref, rng, dom, side, 40, k)
    assert op.stats["signals"] > 0
    op = DT(2, floor_only=True)
    op.register(np.arange(k), lo, hi, np.full(k, 10**6))
    t = _structure(op)
    j = rng.integers(0, k, 40)  # also points inside a box and on / just beyond its ends in y
    edge = np.concatenate([np.c_[lo[j, 0], hi[j, 1]], np.c_[hi[j, 0], np.nextafter(hi[j, 1], np.inf)],
                           np.c_[lo[j, 0], lo[j, 1]], np.c_[hi[j, 0], np.nextafter(lo[j, 1], -np.inf)]])
    for p in np.concatenate([rng.integers(0, dom, (25, 2)).astype(float), edge]):
        before = t.remaining().copy()
        op.push(p[None, :], np.ones(1, np.int64))
        got = np.empty(k, np.int64)
        got[t.qids] = before - t.remaining()
        assert np.array_equal(got, np.all((lo <= p) & (p <= hi), axis=1).astype(np.int64)), p


def test_chunks_of_pieces_ending_at_two_keys(bucket):
    """Many ranges ending at the same two y (chunks whose pieces end at one or the other): a point
    just above the lower end is in the ranges ending at the upper one only."""
    bucket(300)
    rng = np.random.default_rng(5)
    k = 800
    lo = np.c_[rng.integers(0, 50, k), rng.integers(0, 100, k)].astype(float)
    hi = np.c_[rng.integers(50, 100, k), 100 + rng.integers(0, 2, k)].astype(float)
    op = DT(2, floor_only=True)
    op.register(np.arange(k), lo, hi, np.full(k, 10**6))
    t = _structure(op)
    pts = [[x, y] for x in (0, 30, 49, 60) for y in (np.nextafter(100.0, np.inf), 100.0, 50.0, 0.0)]
    for p in np.array(pts):
        before = t.remaining().copy()
        op.push(p[None, :], np.ones(1, np.int64))
        got = np.empty(k, np.int64)
        got[t.qids] = before - t.remaining()
        assert np.array_equal(got, np.all((lo <= p) & (p <= hi), axis=1).astype(np.int64)), p
