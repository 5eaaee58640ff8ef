"""WJ-SSI's skyline cache (paper 003 §3.3.2) against brute force: the cached union of the
left/right skylines per key, after recomputation, inserts folded in (monotone and arbitrary
times, ties in x, points on stabbing points), lazy trimming and stabbing-point changes; m̄_b
exact; and WJ-SSI with the cache against the oracle with inserts and query changes between
probes (hit / stale / trim paths counted)."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.joins import _skyline_cache as sc
from vigil.joins.oracle import JoinOracle
from vigil.joins.strategies import SSI, Hotspot
from vigil.joins.window import WJSSI

from .test_oracle import select


class _Part:
    """A stored part sorted by (key, x) like _base._Index."""

    def __init__(self, k, x, t):
        o = np.lexsort((np.arange(len(k)), x, k))
        self.k, self.kx, self.kt = k[o].astype(np.int64), x[o].astype(float), t[o].astype(float)
        self.ks = np.arange(len(k), dtype=np.int64)[o]


def brute(xs, ts, P, t0=np.inf, w0=np.inf):
    """{(x, T): flags} of the union of the skylines (one point per distinct x, its newest)."""
    keep = [(x, t) for x, t in zip(xs, ts, strict=True) if not (t <= t0 and not (t0 - t < w0))]
    best: dict[float, float] = {}
    for x, t in keep:
        best[x] = max(best.get(x, -np.inf), t)
    pts = sorted(best.items())
    out: dict[tuple[float, float], int] = {}
    for x, t in pts:
        gr = int(np.searchsorted(P, x, "right")) - 1
        gl = int(np.searchsorted(P, x, "left"))
        f = 0
        if gr >= 0:
            hi = P[gr + 1] if gr + 1 < len(P) else np.inf
            assert x < hi
            if all(t2 < t for x2, t2 in pts if P[gr] <= x2 < x):
                f |= 1
        if gl < len(P):
            if all(t2 < t for x2, t2 in pts if x < x2 <= P[gl]):
                f |= 2
        if f:
            out[(x, t)] = f
    return out


def entry(c, key):
    e = sc.lookup(c.HK, c.HV, key)
    if e < 0:
        return None
    s, n = c.EM[e, 0], c.EM[e, 1]
    got = {(float(x), float(t)): int(f) for x, t, f in zip(c.AX[s:s + n], c.AT[s:s + n], c.AF[s:s + n], strict=True)}
    assert len(got) == n and list(c.AX[s:s + n]) == sorted(c.AX[s:s + n])
    return got


class _Side:
    """Just what SkylineCache.sync reads from a _base._Side."""

    def __init__(self):
        self.gen = 0
        self.k, self.x, self.t = [], [], []

    @property
    def seqs(self):
        return self.k

    def arr(self):
        class V:
            pass
        out = []
        for a, d in ((self.k, np.int64), (self.x, float), (self.t, float)):
            v = V()
            v.view = np.array(a, d)
            out.append(v)
        return out


def _sync(c, side):
    k, x, t = side.arr()

    class S:
        pass
    s = S()
    s.gen, s.seqs, s.keys, s.x, s.t = side.gen, side.k, k, x, t
    c.sync(s)


@pytest.mark.parametrize("monotone", [True, False])
@pytest.mark.parametrize("seed", range(16))
def test_recompute_inserts_and_trims_match_brute_force(seed, monotone):
    rng = np.random.default_rng(seed)
    P = np.unique(rng.integers(0, 20, rng.integers(1, 6)).astype(float))
    c = sc.SkylineCache()
    c.set_points(P)
    side = _Side()
    t = 0.0
    for step in range(60):
        if step % 2 == 1:  # a query update changes the stabbing points (stale entries)
            r = rng.random()
            if r < 0.4 and len(P) > 1:
                P = np.delete(P, rng.integers(0, len(P)))
            elif r < 0.9:
                P = np.unique(np.append(P, float(rng.integers(0, 20))))
            else:
                P = np.unique(rng.integers(0, 20, rng.integers(1, 6)).astype(float))
            c.set_points(P)
        n = int(rng.integers(1, 6))
        for _ in range(n):  # inserts of keys 0..2 (x on a grid: ties, points on P)
            t = t + float(rng.integers(0, 3)) if monotone else float(rng.integers(0, 40))
            side.k.append(int(rng.integers(0, 3)))
            side.x.append(float(rng.integers(-2, 22)))
            side.t.append(t)
        _sync(c, side)
        k = np.array(side.k)
        part = _Part(k, np.array(side.x), np.array(side.t))
        probe_t = t if monotone else 40.0
        w0 = 25.0
        probed = [key for key in range(3) if rng.random() < 0.5]  # the others lag behind
        keys = np.array([*probed, 7], np.int64)
        c.prepare([part], keys, probe_t, w0)
        for key in probed:
            m = k == key
            want = brute(np.array(side.x)[m], np.array(side.t)[m], P, probe_t, w0)
            assert (entry(c, key) or {}) == want, (step, key)
        assert entry(c, 7) is None  # no stored tuple: no entry
        ts = np.full(len(keys), probe_t)
        mb = c.mbar(keys, ts, w0)
        for j, key in enumerate(probed):
            m = k == key
            if not m.any():
                assert mb[j] == -1  # no entry: the router estimates (m_b = 0 there)
                continue
            want = brute(np.array(side.x)[m], np.array(side.t)[m], P, probe_t, w0)
            assert mb[j] == sum(1 for (_, tt) in want if abs(probe_t - tt) < w0)
        assert mb[-1] == -1
    st = c.ST
    assert st[sc.RECOMPUTED] >= 3 and (st[sc.UPDATED] > 0) and (st[sc.TRIMMED] > 0 or not monotone)


def test_stale_after_points_change_and_wider_window():
    rng = np.random.default_rng(3)
    k = rng.integers(0, 2, 300)
    x = rng.uniform(0, 100, 300).round()
    t = np.arange(300, dtype=float)
    part = _Part(k, x, t)
    c = sc.SkylineCache()
    c.set_points(np.array([10.0, 50.0]))
    keys = np.array([0, 1], np.int64)
    c.prepare([part], keys, 300.0, 100.0)
    r0 = c.ST[sc.RECOMPUTED]
    c.prepare([part], keys, 310.0, 100.0)  # hit (trimmed only)
    assert c.ST[sc.RECOMPUTED] == r0 and entry(c, 0) == brute(x[k == 0], t[k == 0], [10.0, 50.0], 310.0, 100.0)
    c.set_points(np.array([10.0, 50.0]))  # same points: still fresh
    c.prepare([part], keys, 310.0, 100.0)
    assert c.ST[sc.RECOMPUTED] == r0
    c.set_points(np.array([10.0, 30.0, 50.0]))  # a group appeared: stale
    c.prepare([part], keys, 310.0, 100.0)
    assert c.ST[sc.RECOMPUTED] == r0 + 2
    assert entry(c, 1) == brute(x[k == 1], t[k == 1], [10.0, 30.0, 50.0], 310.0, 100.0)
    c.prepare([part], keys, 310.0, 200.0)  # w_max grew: the trimmed entries are extended
    assert c.ST[sc.RECOMPUTED] == r0 + 4
    assert entry(c, 1) == brute(x[k == 1], t[k == 1], [10.0, 30.0, 50.0], 310.0, 200.0)


def test_two_parts_merge_and_growth():
    """Entries recomputed over a main part and a buffer, many keys (hash and arena growth)."""
    rng = np.random.default_rng(5)
    n = 4000
    k = rng.integers(0, 500, n)
    x = rng.uniform(0, 1000, n).round()
    t = np.arange(n, dtype=float)
    a, b = _Part(k[:3000], x[:3000], t[:3000]), _Part(k[3000:], x[3000:], t[3000:])
    P = np.array([100.0, 400.0, 401.0, 800.0])
    c = sc.SkylineCache()
    c.set_points(P)
    keys = np.arange(500, dtype=np.int64)
    c.prepare([a, b], keys, float(n), 1500.0)
    for key in range(0, 500, 7):
        assert entry(c, key) == brute(x[k == key], t[k == key], P, float(n), 1500.0)


def _window_ops(cls_list, rng, nq):
    ops = [cls("window") for cls in cls_list]
    qs = {}
    for i in range(nq):
        cc = rng.choice([5.0, 20.0, 40.0]) if i % 3 else rng.uniform(0, 50)
        qs[i] = select(f"q{i}", (cc - rng.uniform(0, 8), cc + rng.uniform(0, 8)),
                       (cc - rng.uniform(0, 8), cc + rng.uniform(0, 8)), float(5 + i % 30))
    return ops, qs


@pytest.mark.parametrize("output", ["pairs", "affected", "count"])
def test_wj_ssi_cached_vs_oracle_with_changes_between_probes(monkeypatch, output):
    """Inserts of the probed keys between probes (absorbed into fresh entries), registrations
    and terminations between probes (stale entries), time advancing (trims), merges of the
    buffer part; both cached plans agree with the oracle; the cache's paths all ran."""
    from vigil.joins._base import _Side as BaseSide

    monkeypatch.setattr(BaseSide, "BUF_MIN", 16)
    rng = np.random.default_rng(11)
    _, qs = _window_ops([], rng, 120)
    ops = [SSI("window", output), Hotspot("window", output),
           JoinOracle("window", "pairs" if output == "count" else output)]
    alive = set()
    for i in range(60):
        for op in ops:
            op.register(i, qs[i])
        alive.add(i)
    seq, t = 1, 0.0
    nxt = 60
    pairs = 0
    for step in range(120):
        if step % 9 == 4:  # query churn
            if rng.random() < 0.5 and nxt < 120:
                for op in ops:
                    op.register(nxt, qs[nxt])
                alive.add(nxt)
                nxt += 1
            elif alive:
                q = int(rng.choice(sorted(alive)))
                for op in ops:
                    op.terminate(q)
                alive.discard(q)
        side = "left" if step % 3 else "right"
        n = int(rng.integers(1, 12))
        key = rng.integers(0, 6, n).astype(np.int64)
        at = rng.uniform(0, 50, (n, 1)).round()
        tm = t + np.cumsum(rng.integers(0, 2, n)).astype(float)
        t = float(tm[-1])
        res = [op.insert(side, np.arange(seq, seq + n), key, at, tm) for op in ops]
        seq += n
        want = res[-1]
        pairs += len(want[0])
        if output == "count":
            continue
        for r in res[:-1]:
            for a, b in zip(r, want, strict=True):
                assert np.array_equal(a, b), step
    if output == "count":
        assert ops[0].counted == ops[1].counted == pairs
    st = ops[0].plan.cache("left").ST
    assert st[sc.RECOMPUTED] > 0 and st[sc.UPDATED] > 0 and st[sc.TRIMMED] > 0


def test_cache_off_is_the_same():
    """skyline_cache = False (per-probe recomputation) and the cache give the same pairs."""
    rng = np.random.default_rng(2)
    _, qs = _window_ops([], rng, 80)
    a, b = SSI("window"), SSI("window")
    b.plan.skyline_cache = False
    for i, q in qs.items():
        a.register(i, q)
        b.register(i, q)
    seq, t = 1, 0.0
    for step in range(40):
        side = "left" if step % 2 else "right"
        n = 30
        key = rng.integers(0, 4, n).astype(np.int64)
        at = rng.uniform(0, 50, (n, 1)).round()
        tm = t + np.arange(n, dtype=float)
        t = float(tm[-1])
        ra = a.insert(side, np.arange(seq, seq + n), key, at, tm)
        rb = b.insert(side, np.arange(seq, seq + n), key, at, tm)
        seq += n
        for u, v in zip(ra, rb, strict=True):
            assert np.array_equal(u, v)
    assert isinstance(a.plan, WJSSI)


def test_dynamic_reads_exact_mbar_from_the_cache():
    """Dynamic's m̄_b (stats and the router's input) is the brute-force count of unique skyline
    points of key b inside the window where WJ-SSI's entry is fresh, the estimate elsewhere."""
    from vigil.joins.dynamic import Dynamic

    rng = np.random.default_rng(4)
    _, qs = _window_ops([], rng, 90)
    op = Dynamic("window", "count")
    for i, q in qs.items():
        op.register(i, q)
    n = 400
    sk = rng.integers(0, 5, n).astype(np.int64)
    sx = rng.uniform(0, 50, n).round()
    st = np.arange(n, dtype=float) / 4
    op.insert("right", np.arange(1, n + 1), sk, sx.reshape(-1, 1), st)
    key = np.array([0, 1, 2, 3, 9], np.int64)
    x = np.full(5, 20.0)
    t = np.full(5, n / 4 + 1.0)
    op.force = "join_first"
    op.insert("left", np.array([n + 1]), key[4:], x[4:].reshape(-1, 1), t[4:])  # statistics, plans built
    before = op.stats("left", key, x, t)["mbar"]
    op.force = "ssi"
    op.insert("left", np.arange(n + 2, n + 7), key, x.reshape(-1, 1), t)  # fills the entries
    got = op.stats("left", key, x, t)
    wp = op.route["ssi"].built["left"][1]
    wmax, P = wp[0], wp[1]
    for j, k in enumerate(key.tolist()[:4]):
        m = sk == k
        want = brute(sx[m], st[m], P, t[j], wmax)
        assert got["mbar"][j] == sum(1 for (_, tt) in want if abs(t[j] - tt) < wmax)
    assert got["mbar"][4] == 0 and got["mb"][4] == 0
    assert not np.array_equal(before[:4], got["mbar"][:4])  # the estimate before, exact after
    op.cache_mbar = False
    assert np.array_equal(op.stats("left", key, x, t)["mbar"], before)


def test_cache_memory_flat_on_a_long_stream():
    """With max_window, the stored sides are trimmed and the caches over them cleared: the
    cache's arrays do not grow with the stream (issue 13, deliverable 5)."""
    rng = np.random.default_rng(9)
    _, qs = _window_ops([], rng, 60)
    op = SSI("window", "count")
    op.retain(40.0)
    for i, q in qs.items():
        op.register(i, q)
    seq, t = 1, 0.0
    sizes = []
    for step in range(400):
        side = "left" if step % 2 else "right"
        n = 50
        key = rng.integers(0, 20, n).astype(np.int64)
        at = rng.uniform(0, 50, (n, 1)).round()
        tm = t + np.arange(n, dtype=float) / 10
        t = float(tm[-1]) + 0.1
        op.insert(side, np.arange(seq, seq + n), key, at, tm)
        seq += n
        if step % 50 == 49:
            sizes.append(op.plan.cache("left").nbytes() + op.plan.cache("right").nbytes())
    assert max(sizes[3:]) <= 2 * max(sizes[:3]), sizes
    assert op.plan.cache("left").ST[sc.RECOMPUTED] > 0


def test_router_mbar_after_a_group_change_is_the_estimate_until_probed():
    """After a registration that changes WJ-SSI's stabbing points, the router reads no stale
    entry: the estimate until the plan probes the key again, then the exact count."""
    from vigil.joins.dynamic import Dynamic

    rng = np.random.default_rng(8)
    _, qs = _window_ops([], rng, 40)
    op = Dynamic("window", "count")
    for i, q in qs.items():
        op.register(i, q)
    n = 300
    sk = rng.integers(0, 3, n).astype(np.int64)
    sx = rng.uniform(0, 50, n).round()
    st = np.arange(n, dtype=float) / 4
    op.insert("right", np.arange(1, n + 1), sk, sx.reshape(-1, 1), st)
    key, x, t = np.array([0, 1], np.int64), np.full(2, 20.0), np.full(2, n / 4 + 1.0)
    op.force = "ssi"
    op.insert("left", np.arange(n + 1, n + 3), key, x.reshape(-1, 1), t)
    assert (op.stats("left", key, x, t)["mbar"] >= 0).all()
    P0 = op.route["ssi"].built["left"][1][1].copy()
    op.register(1000, select("new", (0.0, 50.0), (70.0, 70.5), 30.0))  # a new group far right
    op.force = "join_first"
    op.insert("left", np.array([n + 3]), key[:1], x[:1].reshape(-1, 1), t[:1])  # rebuilds, no WJ-SSI probe
    P1 = op.route["ssi"].built["left"][1][1]
    assert len(P1) != len(P0) or not np.array_equal(P0, P1)
    cached = op.cached_mbar("left", key, t)[0]
    assert (cached == -1).all()
    op.force = "ssi"
    op.insert("left", np.arange(n + 4, n + 6), key, x.reshape(-1, 1), t)
    got = op.stats("left", key, x, t)["mbar"]
    wmax = op.route["ssi"].built["left"][1][0]
    for j, k in enumerate(key.tolist()):
        m = sk == k
        want = brute(sx[m], st[m], P1, t[j], wmax)
        assert got[j] == sum(1 for (_, tt) in want if abs(t[j] - tt) < wmax)
