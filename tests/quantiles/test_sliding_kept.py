"""The rows-window summary's sweeps keep each mature notify query's held-value counts (exact
blocks: vigil.quantiles._sliding_notify, the ring of the window's elements) and bring them
forward by the arrivals and expiries since the last sweep: after every sweep they are the exact
counts of the window, and every shown value stays within the contract's bound, over ties,
positions without element, seq gaps, registrations inside the window, terminations and
snapshots."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.arrays import quantile_rank
from vigil.quantiles import _sliding_kernels as K
from vigil.quantiles.sliding import Sliding


def _kept_ok(op: Sliding, win: np.ndarray) -> int:
    """Asserts every kept count is the window's; returns how many were checked."""
    k = 0
    for s in op.mat[:int(op.meta[K.M_NMAT])].tolist():
        v = op.qf[K.F_LAST, s]
        if op.qi[K.Q_ON, s] and op.qi[K.Q_VER, s] >= 0 and v == v:
            assert op.qi[K.Q_HINT, s] == int((win < v).sum()), (s, v)
            assert op.qi[K.Q_VER, s] == int((win <= v).sum()), (s, v)
            k += 1
    return k


@pytest.mark.timeout(900)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kept_counts_are_the_windows_and_values_stay_valid(data):
    W = data.draw(st.integers(1, 80), label="W")
    eps = data.draw(st.sampled_from([0.05, 0.1, 0.2]), label="eps")
    n = data.draw(st.integers(1, 400), label="n")
    seed = data.draw(st.integers(0, 2**31), label="seed")
    ties = data.draw(st.booleans(), label="ties")
    pnan = data.draw(st.sampled_from([0.0, 0.1, 0.5]), label="pnan")
    gaps = data.draw(st.booleans(), label="gaps")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, n).astype(float) if ties else rng.random(n)
    x[rng.random(n) < pnan] = np.nan
    seqs = np.cumsum(rng.integers(1, 4 if gaps else 2, n)).astype(np.int64)
    nq = 12
    phis = {q: float(rng.choice([0.001, 0.5, 1.0])) if q % 3 == 0 else float(rng.uniform(0.001, 1)) for q in range(nq)}
    reg = {q: 0 if q % 2 == 0 else int(rng.integers(0, n)) for q in range(nq)}
    ends = {q: int(rng.integers(reg[q] + 1, n + 1)) for q in range(nq) if q % 5 == 1}
    snap = int(rng.integers(0, n + 1))
    op = Sliding(eps, W)
    assert op.meta[K.M_XACT] == 1
    shown: dict[int, float] = {}
    live: dict[int, int] = {}
    checked = 0
    for i in range(n):
        if i == snap:
            op = Sliding.from_state(op.state())
        for q in range(nq):
            if reg[q] == i:
                st_ = int(seqs[i - 1]) if i else 0
                op.register(q, phis[q], eps, st_, notify=True)
                live[q] = st_
            if ends.get(q) == i:
                op.terminate(q)
                live.pop(q)
                shown.pop(q, None)
        sw = int(op.meta[K.M_SWEEPS])
        qs, _, vals = op.push(x[i:i + 1], seqs[i:i + 1])
        shown.update(zip(qs.tolist(), vals.tolist(), strict=True))
        m = int(seqs[i])
        inwin = (seqs >= m - W + 1) & (seqs <= m)
        if int(op.meta[K.M_SWEEPS]) > sw:
            win = x[:i + 1][inwin[:i + 1]]
            checked += _kept_ok(op, win[~np.isnan(win)])
        for q, st_ in live.items():
            w = x[:i + 1][inwin[:i + 1] & (seqs[:i + 1] > st_)]
            w = np.sort(w[~np.isnan(w)])
            v = shown.get(q, np.nan)
            if not len(w):
                assert np.isnan(v), (q, m, v)
                continue
            a = int(np.searchsorted(w, v, "left")) + 1
            b = int(np.searchsorted(w, v, "right"))
            assert b >= a, (q, m, v, "not in the window")
            t = quantile_rank(phis[q], len(w))
            assert max(0, a - t, t - b) <= eps * len(w) + 1, (q, m, v, a, b, t, len(w))


@pytest.mark.timeout(900)
def test_kept_counts_serve_the_sweeps():
    """On a long stream the sweeps check the kept counts (no search for them), with the same
    updates as without the ring (the operator pushed through the kernel without it)."""
    rng = np.random.default_rng(3)
    x = rng.random(20_000)
    seqs = np.arange(1, len(x) + 1, dtype=np.int64)
    ops = [Sliding(0.01, 2000) for _ in range(2)]
    for op in ops:
        for q in range(50):
            op.register(q, (q + 1) / 51, 0.01, 0, notify=True)
    ops[1].meta[K.M_XACT] = 0  # counts searched at every evaluation, as without the ring
    outs = [op.push(x[:-200], seqs[:-200]) for op in ops]
    for a, b in zip(outs[0], outs[1], strict=True):
        np.testing.assert_array_equal(a, b)
    checked = 0
    for i in range(len(x) - 200, len(x)):
        sw = int(ops[0].meta[K.M_SWEEPS])
        outs = [op.push(x[i:i + 1], seqs[i:i + 1]) for op in ops]
        for a, b in zip(outs[0], outs[1], strict=True):
            np.testing.assert_array_equal(a, b)
        if int(ops[0].meta[K.M_SWEEPS]) > sw:
            checked += _kept_ok(ops[0], x[i + 1 - 2000:i + 1])
    assert checked > 100
