"""The shared block summary of rows-window quantiles (vigil.quantiles.sliding): every notify value
and every lookup within the contract's bound at every position, for queries of many phi
registered at many positions (inside the window too), exact and sampled blocks, seq gaps, batch
splits and snapshots; work per element independent of the number of queries' positions."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.arrays import quantile_rank
from vigil.quantiles.sliding import Sliding


def _dist(window: np.ndarray, v: float, phi: float) -> int:
    """Distance of v's ranks (any it occupies) to the target rank; -1 if v is not in the window."""
    s = np.sort(window)
    lo = int(np.searchsorted(s, v, "left")) + 1
    hi = int(np.searchsorted(s, v, "right"))
    if hi < lo:
        return -1
    t = quantile_rank(phi, len(s))
    return max(0, lo - t, t - hi)


def _run(x, seqs, W, eps, queries, batches, lookups=True, snapshot_at=None):
    """Push in the given batch sizes; check every notify value and every lookup at every position."""
    op = Sliding(eps, W)
    regs = sorted(queries, key=lambda q: q[3])
    shown: dict[int, float] = {}
    pos = 0
    ri = 0
    events = []
    bsizes = iter(batches)
    while pos < len(x):
        while ri < len(regs) and regs[ri][3] < seqs[pos]:  # applied before the next element
            qid, phi, notify, start = regs[ri]
            op.register(qid, phi, eps, int(start), notify=notify)
            ri += 1
        nxt = regs[ri][3] if ri < len(regs) else None
        k = next(bsizes, 1)
        end = min(len(x), pos + k)
        if nxt is not None:  # the next registration applies after the elements with seq <= its start
            end = min(end, int(np.searchsorted(seqs, nxt, "right")))
        q, o, v = op.push(x[pos:end], seqs[pos:end])
        events += [(int(a), int(b) + pos, float(c)) for a, b, c in zip(q, o, v, strict=True)]
        ev = iter([e for e in events if e[1] >= pos])
        evs = sorted((e for e in ev), key=lambda e: e[1])
        j = 0
        for i in range(pos, end):
            while j < len(evs) and evs[j][1] == i:
                shown[evs[j][0]] = evs[j][2]
                j += 1
            n = int(seqs[i])
            for qid, phi, notify, start in regs[:ri]:
                lo = max(start + 1, n - W + 1)
                win = x[(seqs >= lo) & (seqs <= n)]
                win = win[~np.isnan(win)]
                if notify and qid in shown or (notify and len(win)):
                    v = shown.get(qid, np.nan)
                    if not len(win):
                        assert np.isnan(v), (qid, n, v)
                        continue
                    d = _dist(win, v, phi)
                    assert 0 <= d <= eps * len(win) + 1, (qid, n, v, d, len(win))
        if lookups:
            n = int(seqs[end - 1])
            for qid, phi, notify, start in regs[:ri]:
                if notify:
                    continue
                lo = max(start + 1, n - W + 1)
                win = x[(seqs >= lo) & (seqs <= n)]
                win = win[~np.isnan(win)]
                v = op.lookup(np.array([qid]), n)[0]
                if not len(win):
                    assert np.isnan(v)
                else:
                    d = _dist(win, v, phi)
                    assert 0 <= d <= eps * len(win) + 1, ("lookup", qid, n, v, d)
        pos = end
        if snapshot_at is not None and pos >= snapshot_at:
            op = Sliding.from_state(op.state())
            snapshot_at = None
    return op, events


def _queries(rng, k, n, notify_share=0.7, late=True):
    out = []
    for i in range(k):
        start = 0 if not late or i % 3 == 0 else int(rng.integers(0, n))
        out.append((i, float(rng.choice([0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0])), bool(rng.random() < notify_share),
                    start))
    return out


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("W", "eps", "dist"), [(200, 0.05, "uniform"), (300, 0.02, "ties"), (2000, 0.1, "uniform")],
                         ids=["exact", "ties", "sampled"])
def test_every_position_within_bound(W, eps, dist):
    rng = np.random.default_rng(W)
    n = 2500
    x = rng.random(n) if dist == "uniform" else rng.integers(0, 8, n).astype(float)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    queries = _queries(rng, 14, n)
    op, events = _run(x, seqs, W, eps, queries, batches=[1, 7, 300, 64] * 50)
    assert events
    if W == 2000:  # B = 50 > 4/eps = 40: the blocks are sampled
        assert sum(len(t) for t in op.btup) < sum(op.bcnt)


@pytest.mark.timeout(300)
def test_seq_gaps_and_positions_without_element():
    rng = np.random.default_rng(7)
    n = 2000
    seqs = np.cumsum(rng.choice([1, 1, 1, 2, 5, 40], n)).astype(np.int64)
    x = rng.integers(0, 30, n).astype(float)
    x[rng.random(n) < 0.2] = np.nan  # positions without element (rejected rows)
    _run(x, seqs, 500, 0.05, _queries(rng, 10, int(seqs[-1])), batches=[5, 1, 100])


@pytest.mark.timeout(300)
def test_batch_split_and_snapshot_do_not_change_updates():
    rng = np.random.default_rng(3)
    n = 3000
    x = rng.random(n)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    queries = [(i, f, True, s) for i, (f, s) in enumerate([(0.5, 0), (0.9, 0), (0.1, 700), (0.5, 1400), (0.99, 2100)])]
    want = _run(x, seqs, 400, 0.02, queries, batches=[1] * n, lookups=False)[1]
    for batches, snap in (([3000], None), ([17, 256], 1500), ([1000], 999)):
        got = _run(x, seqs, 400, 0.02, queries, batches=batches * 100, lookups=False, snapshot_at=snap)[1]
        assert sorted(got) == sorted(want), (batches, snap)


def test_registration_positions_share_the_summary():
    # 200 queries at 200 distinct positions use the one block summary: evaluations and blocks, not
    # summaries, grow with them
    rng = np.random.default_rng(0)
    n, W = 20_000, 2000
    x = rng.random(n)
    op = Sliding(0.01, W)
    for p in range(0, n, 100):
        op.register(p, 0.5, 0.01, p, notify=True)
        op.push(x[p:p + 100], np.arange(p + 1, p + 101, dtype=np.int64))
    assert len(op.btup) <= W // op.B + W // 100 + 2


def test_snapshot_holds_the_used_arrays_only_and_restores_to_grow_again():
    """The capacity reserved for coming elements is not in the state: a restored summary grows
    its arrays again and answers as the uninterrupted one."""
    from vigil.quantiles.sliding import Sliding
    from vigil.state import pack

    rng = np.random.default_rng(7)
    a, b = Sliding(0.01, 3000), Sliding(0.01, 3000)
    for op in (a, b):
        op.register(1, 0.5, 0.01, 0, notify=True)
        op.register(2, 0.9, 0.01, 0, notify=False)
    x = rng.random(9000)
    seqs = np.arange(1, 9001, dtype=np.int64)
    a.push(x[:50], seqs[:50])
    b.push(x[:50], seqs[:50])
    assert len(pack(b.state())) < 20_000  # 50 elements: no reserved capacity in the snapshot
    b = Sliding.from_state(b.state())
    for s in range(50, 9000, 700):
        ra, rb = a.push(x[s:s + 700], seqs[s:s + 700]), b.push(x[s:s + 700], seqs[s:s + 700])
        assert all(np.array_equal(u, v) for u, v in zip(ra, rb, strict=True))
        b = Sliding.from_state(b.state())
        n = int(seqs[min(s + 699, 8999)])
        assert np.array_equal(a.lookup(np.array([2]), n), b.lookup(np.array([2]), n))


@pytest.mark.timeout(600)
def test_exact_blocks_up_to_4_over_eps():
    """Blocks stay exact (one sample per element) up to 4/eps elements: a long window merges a block
    every ~4/eps elements, not every 1/eps (each merge rewrites the merged array, O(W))."""
    import vigil.quantiles._sliding_kernels as K

    op = Sliding(0.01, 20000)
    assert 200 <= op.B < 400
    x = np.random.default_rng(3).random(30000)
    op.register(1, 0.5, 0.01, -1, notify=False)
    op.push(x, np.arange(len(x), dtype=np.int64))
    assert op.meta[K.M_UTOT] == 0  # exact blocks
    w = np.sort(x[-20000:])
    assert op.lookup(np.array([1]), len(x) - 1)[0] == w[9999]
