"""Notify queries of the rows-window summary whose window is the summary's whole window are
evaluated together in sweeps (vigil.quantiles._sliding_notify): every value within the contract's
bound at every position, for many queries (registered before the stream, inside it and inside the
window, terminated on the way), positions without element, exact and sampled blocks, batch splits
and snapshots; and the sweeps serve the mature queries."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.arrays import quantile_rank
from vigil.quantiles import _sliding_kernels as K
from vigil.quantiles.sliding import Sliding


def _check_all(x, seqs, W, eps, shown_at, phis, starts, alive_at):
    """Every shown value (per position, per query) is within e*N + 1 of its target rank."""
    for i, n in enumerate(seqs.tolist()):
        for q, phi in phis.items():
            if not alive_at(q, i):
                continue
            lo = max(starts[q] + 1, n - W + 1)
            win = x[(seqs >= lo) & (seqs <= n)]
            win = np.sort(win[~np.isnan(win)])
            v = shown_at[i].get(q, np.nan)
            if not len(win):
                assert np.isnan(v), (q, n, v)
                continue
            assert not np.isnan(v), (q, n)
            a = int(np.searchsorted(win, v, "left")) + 1
            b = int(np.searchsorted(win, v, "right"))
            assert b >= a, (q, n, v, "not in the window")
            t = quantile_rank(phi, len(win))
            assert max(0, a - t, t - b) <= eps * len(win) + 1, (q, n, v, a, b, t, len(win))


def _run(x, seqs, W, eps, nq, batch, snapshot_at=None, seed=0):
    rng = np.random.default_rng(seed)
    n = len(x)
    phis = {q: float(rng.choice([0.001, 0.01, 0.3, 0.5, 0.77, 0.99, 1.0])) if q % 4 == 0 else float(rng.uniform(0.001, 1))
            for q in range(nq)}
    # registration index (before element i): a third before the stream, the others inside it
    reg = {q: 0 if q % 3 == 0 else int(rng.integers(1, n // 2)) for q in range(nq)}
    ends = {q: int(rng.integers(reg[q] + 1, n)) for q in range(nq) if q % 5 == 1}  # terminated before element i
    starts = {q: (int(seqs[reg[q] - 1]) if reg[q] else 0) for q in range(nq)}
    op = Sliding(eps, W)
    shown: dict[int, float] = {}
    shown_at = []
    i = 0
    while i < n:
        for q in range(nq):
            if reg[q] == i:
                op.register(q, phis[q], eps, starts[q], notify=True)
            if ends.get(q) == i:
                op.terminate(q)
        cut = [v for v in list(reg.values()) + list(ends.values()) if v > i]
        j = min([n, i + batch] + cut)
        qs, offs, vals = op.push(x[i:j], seqs[i:j])
        k = 0
        for p in range(i, j):
            while k < len(offs) and offs[k] == p - i:
                shown[int(qs[k])] = float(vals[k])
                k += 1
            shown_at.append(dict(shown))
        i = j
        if snapshot_at is not None and i >= snapshot_at:
            op = Sliding.from_state(op.state())
            snapshot_at = None

    def alive(q, i):
        return reg[q] <= i and (q not in ends or i < ends[q])

    _check_all(x, seqs, W, eps, shown_at, phis, starts, alive)
    return op


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("W", "eps", "ties", "batch"), [(300, 0.05, False, 97), (400, 0.02, True, 1000),
                                                         (1200, 0.1, False, 64)], ids=["exact", "ties", "sampled"])
def test_sweeps_keep_every_value_within_bound(W, eps, ties, batch):
    rng = np.random.default_rng(W)
    n = 2400
    x = rng.integers(0, 6, n).astype(float) if ties else rng.random(n)
    x[rng.random(n) < 0.1] = np.nan  # positions without element
    seqs = np.cumsum(rng.choice([1, 1, 1, 1, 3], n)).astype(np.int64)
    op = _run(x, seqs, W, eps, 60, batch, snapshot_at=n // 2, seed=W)
    assert op.meta[K.M_SWEEPS] > 0 and op.meta[K.M_NMAT] > 0


@pytest.mark.timeout(300)
def test_sweep_updates_do_not_depend_on_batches_or_snapshots():
    rng = np.random.default_rng(5)
    n, W = 3000, 500
    x = rng.random(n)
    seqs = np.arange(1, n + 1, dtype=np.int64)

    def events(batches, snap):
        op = Sliding(0.02, W)
        for q in range(40):
            op.register(q, (q + 1) / 40, 0.02, 0 if q % 2 else 100 * q, notify=True)
        out, i, bs = [], 0, iter(batches * n)
        while i < n:
            j = min(n, i + next(bs))
            q, o, v = op.push(x[i:j], seqs[i:j])
            out += list(zip(q.tolist(), (o + i).tolist(), v.tolist(), strict=True))
            i = j
            if snap is not None and i >= snap:
                op, snap = Sliding.from_state(op.state()), None
        return out

    want = events([1], None)
    assert want
    for batches, snap in (([3000], None), ([17, 256], 1500), ([999], 999)):
        assert events(batches, snap) == want, (batches, snap)


def test_mature_queries_leave_the_heap():
    """Queries whose window is the whole window are swept, not evaluated one by one: 1,000 of
    them over a 2,000-row window cost a few evaluations per element each sweep serves many."""
    rng = np.random.default_rng(1)
    n, W = 20_000, 2000
    op = Sliding(0.01, W)
    for q in range(1000):
        op.register(q, float(rng.uniform(0.001, 1)), 0.01, 0, notify=True)
    op.push(rng.random(n), np.arange(1, n + 1, dtype=np.int64))
    assert op.meta[K.M_NMAT] == 1000 and op.meta[K.M_HS] == 0
    assert op.meta[K.M_EVALS] / op.meta[K.M_SWEEPS] > 50
