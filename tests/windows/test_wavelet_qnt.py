"""wavelet_qnt: the blocked wavelet-matrix range quantile, the <= 16-element sorting network and
the B-INT-QNT fallback answer exactly as materialize_none (ties, duplicates, NULLs, empty windows,
historical windows, seq gaps, capacity rebuilds, snapshot/restore), and the wavelet path is used."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.specs import parse_query
from vigil.windows._wavelet_kernels import row_words, wm_build
from vigil.windows.materialize import MaterializeNone
from vigil.windows.wavelet_qnt import SCALES, WaveletQnt, scale_of


def _spec(qid, nl, nr, phi, time_based=False):
    d = {"type": "window_aggregate", "id": f"q{qid}", "agg": "quantile", "column": "v", "phi": phi,
         "time" if time_based else "rows": [nl, nr]}
    return parse_query(d)


def _walk(z, L, x0, x1, k):
    """The range-quantile walk of the kernel, in Python (k-th smallest code in [x0, x1))."""
    S = 1 << L
    R = row_words(L)

    def rank0(base, x):
        i = base + 2 * (x >> 6)
        return int(z[i]) + bin(int(z[i + 1]) & ((1 << (x & 63)) - 1)).count("1")

    code = 0
    for lev in range(L):
        base = lev * R
        zl, zr = rank0(base, x0), rank0(base, x1)
        if k < zr - zl:
            x0, x1 = zl, zr
        else:
            k -= zr - zl
            tz = rank0(base, S)
            x0, x1 = tz + x0 - zl, tz + x1 - zr
            code |= 1 << (L - 1 - lev)
    return code


@settings(max_examples=40, deadline=None)
@given(L=st.sampled_from([5, 6, 7]), data=st.data())
def test_range_quantile_walk_equals_sorting(L, data):
    S = 1 << L
    x = np.array(data.draw(st.lists(st.one_of(st.integers(-3, 3).map(float), st.just(np.nan)), min_size=S,
                                    max_size=S)))
    z = np.zeros(L * row_words(L), np.uint64)
    sv = np.zeros(S)
    wm_build(x, L, z, 0, sv, 0, np.empty(S, np.int64), np.empty(S, np.int64))
    assert np.array_equal(sv, np.sort(x), equal_nan=True)  # NaN last
    for _ in range(10):
        a = data.draw(st.integers(0, S - 1))
        b = data.draw(st.integers(a + 1, S))
        k = data.draw(st.integers(0, b - a - 1))
        assert sv[_walk(z, L, a, b, k)] == np.sort(x[a:b])[k] or np.isnan(np.sort(x[a:b])[k])


def test_scale_of():
    assert scale_of(16) == SCALES[0] and scale_of(17) == 5 and scale_of(18) == 6 and scale_of(33) == 6
    assert scale_of(100) == 8 and scale_of(1000) == 11 and scale_of(16385) == 15 and scale_of(16386) == 0


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_agrees_with_materialize_none(seed):
    rng = np.random.default_rng(seed)
    ops = [WaveletQnt("quantile", False), MaterializeNone("quantile", False)]
    n_q = 0
    seq = 0
    used = 0
    for step in range(10):
        for _ in range(int(rng.integers(0, 12))):  # registrations between pushes, any start
            w = int(rng.choice([1, 2, 9, 16, 17, 18, 40, 65, 66, 100, 257, 258, 700, 1025, 3000, 20000]))
            nr = int(rng.integers(0, 4000)) if n_q % 3 else 0
            phi = float(rng.choice([0.01, 0.25, 0.5, 0.9, 1.0]))
            for op in ops:
                op.register(n_q, _spec(n_q, nr + w, nr, phi), seq)
            n_q += 1
        if step == 6:  # terminations: capacity shrinks (rebuild from the raw ring)
            for q in range(0, n_q, 2):
                for op in ops:
                    op.terminate(q)
        k = int(rng.integers(1, 6000))
        vals = np.round(rng.normal(size=k), 1)  # ties
        vals[rng.random(k) < 0.1] = np.nan  # NULLs
        if step == 3:
            vals[:] = np.nan  # windows of NULLs only
        seqs = seq + np.cumsum(rng.integers(1, 3, size=k) if seed % 2 else np.ones(k, np.int64))
        seq = int(seqs[-1])
        for op in ops:
            op.push(vals, seqs, None)
        alive = np.flatnonzero(ops[1].q_alive)
        if not len(alive):
            continue
        q = rng.choice(alive, size=2000)
        got, want = ops[0].lookup(q, seq), ops[1].lookup(q, seq)
        np.testing.assert_array_equal(got, want)
        used += int((ops[0].tag >= 0).sum())
        if step == 5:
            again = WaveletQnt.from_state(ops[0].state())
            np.testing.assert_array_equal(again.lookup(q, seq), want)
            ops[0] = again
    assert used > 0  # blocks were built and (with these widths) served lookups


def test_wavelet_path_serves_historical_windows():
    """A window inside a built block is answered by the wavelet walk (the B-INT-QNT pieces are
    poisoned to prove it), one in the newest, unbuilt block by the fallback."""
    op, ref = WaveletQnt("quantile", False), MaterializeNone("quantile", False)
    for o in (op, ref):
        o.register(0, _spec(0, 5100, 5000, 0.5), 0)  # W = 100, historical: scale 2^8
        o.register(1, _spec(1, 100, 0, 0.3), 0)  # W = 100, suffix: the newest block is not built
    rng = np.random.default_rng(7)
    vals = rng.integers(0, 20, 20000).astype(float)
    for o in (op, ref):
        o.push(vals, np.arange(1, 20001), None)
    assert op.sc_exp.tolist() == [8]
    want = ref.lookup(np.array([0, 1]), 20000)
    np.testing.assert_array_equal(op.lookup(np.array([0, 1]), 20000), want)
    op.lq[:] = -1.0  # B-INT-QNT's pieces poisoned: only the wavelet path can still be right
    got = op.lookup(np.array([0, 1]), 20000)
    assert got[0] == want[0] and got[1] != want[1]


def test_time_windows_and_empty_windows():
    rng = np.random.default_rng(3)
    ops = [WaveletQnt("quantile", True), MaterializeNone("quantile", True)]
    for i, (tl, tr) in enumerate([(5.0, 0.0), (30.0, 2.0), (400.0, 100.0), (0.5, 0.0)]):
        for op in ops:
            op.register(i, _spec(i, tl, tr, 0.5, time_based=True), 0)
    seq, t = 0, 0.0
    for _ in range(5):
        k = 3000
        vals = np.round(rng.normal(size=k), 1)
        vals[rng.random(k) < 0.2] = np.nan
        seqs = seq + np.arange(1, k + 1)
        times = t + np.cumsum(rng.integers(0, 3, k)).astype(float)
        seq, t = int(seqs[-1]), float(times[-1])
        for op in ops:
            op.push(vals, seqs, times)
        q = np.arange(4)
        np.testing.assert_array_equal(ops[0].lookup(q, seq, t + 0.25), ops[1].lookup(q, seq, t + 0.25))


@pytest.mark.parametrize("P", [2, 4, 6, 8, 10, 12, 14, 16])
def test_sorting_networks_sort_every_01_input(P):
    """0-1 principle: a comparator network sorts every input iff it sorts every 0-1 input; and
    NULLs / padding sort last as +inf and are not counted."""
    from vigil.windows import _sort_networks

    net = getattr(_sort_networks, f"sort{P}")
    bits = (np.arange(1 << P)[:, None] >> np.arange(P)[None, :]) & 1
    ring = np.zeros(32)
    buf = np.empty(16)
    for row in bits.astype(np.float64):
        ring[5:5 + P] = row
        assert net(ring, 31, 5, P, buf) == P
        assert np.all(np.diff(buf[:P]) >= 0)
    ring[5:5 + P] = np.arange(P, 0, -1)
    ring[5] = np.nan
    assert net(ring, 31, 5, P - 1, buf) == P - 2  # one NULL, one slot of padding
    assert buf[:P - 2].tolist() == list(range(2, P)) and np.all(np.isinf(buf[P - 2:P]))
