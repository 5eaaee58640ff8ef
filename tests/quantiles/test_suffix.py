"""Whole-stream quantile queries registered at many positions share one suffix structure
(:mod:`vigil.quantiles.suffix`): each query's answer satisfies docs/contract.md's rank bound over
the elements after its own registration, at every position (notify) and at lookups, with
terminations, ties and snapshots."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from vigil.arrays import quantile_rank
from vigil.quantiles.casu import CASU
from vigil.quantiles.csu import CSU
from vigil.quantiles.oracle import rank_error_ok
from vigil.quantiles.su import SU
from vigil.state import pack, unpack

EPS = 0.005


def _workload(seed: int, n: int, nreg: int, ties: bool):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 40, n).astype(float) if ties else rng.normal(size=n)
    regs: dict[int, list] = {}
    for i, p in enumerate(sorted(rng.integers(1, n - 1, nreg).tolist())):
        e = float(rng.choice([EPS, 0.01, 0.05]))
        regs.setdefault(p, []).append((i + 1, float(rng.choice([0.001, 0.5, 1.0, rng.uniform(0.001, 1)])), e, i % 3 != 0))
    ends = {q: int(rng.integers(p + 1, n + 50)) for p, lst in regs.items() for q, *_ in lst if rng.random() < 0.3}
    return x, regs, ends


def _ok(win, v, phi, e):
    """rank_error_ok on a sorted window (a fast path; the oracle's check decides near the bound)."""
    n = len(win)
    if n == 0 or v != v:
        return n == 0 and v != v
    lo, hi = bisect.bisect_left(win, v) + 1, bisect.bisect_right(win, v)
    if hi < lo:
        return False
    t = quantile_rank(phi, n)
    d = max(0, lo - t, t - hi)
    return d <= e * n + 1 - 1e-9 or rank_error_ok(np.array(win), v, phi, e)


def _run(cls, x, regs, ends, snap_at=None, check_every=1, notify_every=1):
    """Push x one element at a time; check every notify query every ``notify_every`` positions
    (every position by default) and every lookup query every ``check_every`` positions; returns
    the update events."""
    op = cls(EPS, None)
    op.register(0, 0.5, 0.01, 0, notify=True)  # the base epoch (position 0): a GK summary
    qs = {0: (0.5, 0.01, 0, True)}
    win: dict[int, list] = {0: []}
    last: dict[int, float] = {}
    events = []
    for p in range(len(x)):
        for q, phi, e, nt in regs.get(p, []):
            op.register(q, phi, e, p, notify=nt)
            qs[q] = (phi, e, p, nt)
            win[q] = []
        for q in [q for q, end in ends.items() if end == p and q in qs]:
            op.terminate(q)
            del qs[q], win[q]
        for w in win.values():
            bisect.insort(w, float(x[p]))
        if snap_at == p:
            op = type(op).from_state(unpack(pack(op.state())))
        qq, oo, vv = op.push(x[p:p + 1], np.array([p + 1]))
        for q, v in zip(qq.tolist(), vv.tolist(), strict=True):
            assert q in qs and qs[q][3]
            assert last.get(q) != v  # an update only when the value changes
            last[q] = v
            events.append((p, q, v))
        for q, (phi, e, _st, nt) in qs.items():
            if nt and (p % notify_every == 0 or q not in last):
                assert q in last, f"query {q} got no update at its first element"
                assert _ok(win[q], last[q], phi, max(e, EPS)), (q, p)
        if p % check_every == 0 or p == len(x) - 1:
            ids = np.array(sorted(qs), np.int64)
            ans = op.lookup(ids, p + 1)
            for q, a in zip(ids.tolist(), ans.tolist(), strict=True):
                phi, e, st, nt = qs[q]
                if nt:
                    assert a == last[q]
                else:
                    assert _ok(win[q], a, phi, max(e, EPS)), (q, p, a)
    return op, events


@pytest.mark.timeout(600)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("cls", [CASU, SU, CSU])
def test_bound_at_every_position_from_each_registration(cls, ties):
    x, regs, ends = _workload(1 + ties, 4000, 80, ties)
    op, events = _run(cls, x, regs, ends, check_every=7)
    assert len(op.epochs) == 1  # later registrations share the suffix structure, no epoch each
    assert events


@pytest.mark.timeout(600)
def test_long_stream_many_positions():
    """Segments merged into tree nodes of many levels, queries with long suffixes."""
    x, regs, _ = _workload(7, 20_000, 150, False)
    _run(CASU, x, regs, {}, check_every=997, notify_every=31)


@pytest.mark.timeout(600)
def test_snapshot_restores_the_same_run():
    x, regs, ends = _workload(3, 5000, 80, True)
    _, ev = _run(CASU, x, regs, ends, check_every=50)
    _, ev2 = _run(CASU, x, regs, ends, snap_at=2500, check_every=50)
    assert ev == ev2


def test_terminating_every_suffix_query_frees_it():
    op = CASU(EPS, None)
    op.register(0, 0.5, 0.01, 0)
    op.push(np.arange(10.0), np.arange(1, 11))
    op.register(1, 0.5, 0.01, 10, notify=True)
    op.register(2, 0.9, 0.01, 10)
    op.push(np.arange(10.0), np.arange(11, 21))
    assert op.sfx is not None and op.sfx.alive() == 2
    op.terminate(1)
    op.terminate(2)
    assert op.sfx is None and op.alive() == 1


def test_cluster_notify_keeps_its_epochs():
    op = CASU(EPS, None)
    op.register(0, 0.5, 0.01, 0, notify="cluster")
    op.push(np.arange(10.0), np.arange(1, 11))
    op.register(1, 0.5, 0.01, 10, notify="cluster")
    assert op.sfx is None and len(op.epochs) == 2


def test_summary_of_a_suffix_query():
    rng = np.random.default_rng(0)
    x = rng.random(3000)
    op = CASU(EPS, None)
    op.register(0, 0.5, 0.01, 0)
    op.push(x[:1000], np.arange(1, 1001))
    op.register(1, 0.5, 0.01, 1000)
    for p in range(1000, 3000, 250):
        op.push(x[p:p + 250], np.arange(p + 1, p + 251))
        op.register(10 + p, 0.5, 0.01, p + 250)
    s = op.summary(1, 3000)
    w = np.sort(x[1000:])
    assert s[-1, 2] == len(w)
    for v, lo, hi in s:
        assert lo <= np.searchsorted(w, v, "right") and np.searchsorted(w, v, "left") <= hi - 1


def test_open_summary_grows_inside_a_push():
    """The open summary's arrays grow between kernel calls of one push (no overflow)."""
    from vigil.quantiles.suffix import BMAX, Suffix

    s = Suffix(EPS)
    s.oscap = 2 * (BMAX + 2) + 8
    s.osv, s.osa, s.osb = np.empty(s.oscap), np.zeros(s.oscap, np.int64), np.zeros(s.oscap, np.int64)
    tc = s.oscap + 2 * BMAX + 16
    s.tv, s.ta, s.tb = np.empty(tc), np.zeros(tc, np.int64), np.zeros(tc, np.int64)
    s.register(1, 0.3, EPS, True)
    s.register(2, 0.7, EPS, False)
    x = np.random.default_rng(5).random(50_000)
    q, _, v = s.push(x)
    assert s.oscap > 2 * (BMAX + 2) + 8
    assert rank_error_ok(x, v[q == 1][-1], 0.3, EPS)
    assert rank_error_ok(x, s.lookup(np.array([2]))[0], 0.7, EPS)
