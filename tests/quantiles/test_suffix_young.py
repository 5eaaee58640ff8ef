"""Young notify queries of the suffix structure (:mod:`vigil.quantiles._suffix_notify`): served
exactly from their position's sorted window until it holds ``Y`` elements, then on the
summaries. Every notify query's latest update meets docs/contract.md's bound over the elements
after its registration at every position, whatever the chunking of the pushes, the ties, the
queries sharing a position, terminations and snapshots inside the young phase."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.quantiles import _suffix_kernels as K
from vigil.quantiles._suffix_notify import Y
from vigil.quantiles.oracle import rank_error_ok
from vigil.quantiles.suffix import Suffix
from vigil.state import pack, unpack

EPS = 0.005


def _check_run(x, regs, ends, chunks, snap_at=None):
    """regs: position -> [(qid, phi, e, notify)]; ends: qid -> position; pushes x in the given
    chunk sizes (cut at registrations, terminations and the snapshot) and checks every notify
    query at every position from its first element on."""
    s = Suffix(EPS)
    alive: dict[int, tuple[float, float, int, bool]] = {}
    last: dict[int, float] = {}
    cuts = sorted(set(regs) | set(ends.values()) | ({snap_at} if snap_at is not None else set()))
    p = 0
    ci = 0
    while p < len(x):
        for q, phi, e, nt in regs.get(p, []):
            s.register(q, phi, e, nt)
            alive[q] = (phi, e, p, nt)
        for q in [q for q, end in ends.items() if end == p and q in alive]:
            s.terminate(q)
            del alive[q]
            if not s.alive():
                s = Suffix(EPS)
        if snap_at == p:
            s = Suffix.from_state(unpack(pack(s.state())))
        step = chunks[ci % len(chunks)]
        ci += 1
        nxt = min([c for c in cuts if c > p] + [len(x), p + step])
        qq, oo, vv = s.push(x[p:nxt])
        ev: dict[int, list] = {}
        for q, o, v in zip(qq.tolist(), oo.tolist(), vv.tolist(), strict=True):
            ev.setdefault(o, []).append((q, v))
        for o in range(nxt - p):
            for q, v in ev.get(o, []):
                assert q in alive and alive[q][3]
                assert last.get(q) != v  # an update only when the value changes
                last[q] = v
            pos = p + o
            for q, (phi, e, st_, nt) in alive.items():
                if nt:
                    assert q in last, f"query {q} got no update at its first element"
                    assert rank_error_ok(x[st_:pos + 1], last[q], phi, max(e, EPS)), (q, pos)
        p = nxt
    return s


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 700),
    ties=st.sampled_from([0, 1, 3, 1000]),
    nreg=st.integers(1, 12),
    same=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    chunks=st.lists(st.integers(1, 300), min_size=1, max_size=4),
    snap=st.booleans(),
)
@pytest.mark.timeout(600)
def test_young_and_grown_queries_meet_the_bound(n, ties, nreg, same, seed, chunks, snap):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, ties, n).astype(float) if ties else rng.normal(size=n)
    pos = rng.integers(0, n, nreg)
    if same:  # several queries per position: they share its young buffer
        pos = np.sort(pos) // 50 * 50
    regs: dict[int, list] = {}
    for i, p in enumerate(pos.tolist()):
        phi = float(rng.choice([0.001, 0.5, 1.0, round(float(rng.uniform(0.001, 1)), 4), 0.1234567891234]))
        e = float(rng.choice([EPS, 0.01, 0.05, 0.3]))
        regs.setdefault(int(p), []).append((i + 1, phi, e, bool(rng.random() < 0.85)))
    ends = {q: int(p + rng.integers(1, 2 * Y)) for p, lst in regs.items() for q, *_ in lst if rng.random() < 0.3}
    _check_run(x, regs, ends, chunks, snap_at=int(rng.integers(0, n)) if snap else None)


@pytest.mark.timeout(600)
def test_young_buffers_are_freed():
    """A position's young buffer goes when its queries grow up or end; one buffer per position."""
    x = np.random.default_rng(1).random(3 * Y)
    s = Suffix(EPS)
    s.push(x[:10])
    for q in range(5):
        s.register(q, 0.2 * (q + 1), 0.01, True)
    assert s.meta[K.M_NYB] == 1 and s.meta[K.M_NYQ] == 5
    s.push(x[10:20])
    s.register(10, 0.5, 0.01, True)
    s.register(11, 0.5, 0.01, True)
    assert s.meta[K.M_NYB] == 2
    s.terminate(10)
    s.terminate(11)
    s.push(x[20:21])
    assert s.meta[K.M_NYB] == 1 and s.meta[K.M_NYQ] == 5
    s.push(x[21:10 + Y + 1])
    assert s.meta[K.M_NYB] == 0 and s.meta[K.M_NYQ] == 0 and s.meta[K.M_HS] == 5


@pytest.mark.timeout(600)
def test_snapshot_without_young_arrays_still_runs():
    """A snapshot from before the young path and the deadline buckets (no yq/yb/yv/bh, 12 meta
    slots, a deadline heap) keeps serving its notify queries."""
    x = np.random.default_rng(2).random(2000)
    s = Suffix(EPS)
    s.push(x[:500])
    s.register(1, 0.3, 0.01, True)
    s.push(x[500:1000])  # grown up: on the heap
    st_ = s.state()
    for k in ("yq", "yb", "yv", "bh"):
        del st_[k]
    st_["meta"] = st_["meta"][:12]
    st_["heap"] = np.array([s.q[1][4]] + [0] * (len(st_["heap"]) - 1), np.int64)  # (a heap of one slot)
    old = Suffix.from_state(unpack(pack(st_)))
    old.register(2, 0.7, 0.01, True)
    q, _, v = old.push(x[1000:])
    assert rank_error_ok(x[500:], v[q == 1][-1] if (q == 1).any() else old.lookup(np.array([1]))[0], 0.3, 0.01)
    assert rank_error_ok(x[1000:], v[q == 2][-1], 0.7, 0.01)


@pytest.mark.timeout(600)
def test_deadlines_beyond_the_buckets():
    """Lives longer than the deadline buckets (large e, long stream) are re-checked at the cap:
    the value still meets the bound, checked every 61 positions."""
    from vigil.quantiles._suffix_notify import B

    x = np.random.default_rng(6).random(12 * B)
    s = Suffix(EPS)
    s.push(x[:100])
    s.register(1, 0.5, 0.3, True)
    s.register(2, 0.9, 0.45, True)
    q, o, v = s.push(x[100:])
    for qid, phi, e in ((1, 0.5, 0.3), (2, 0.9, 0.45)):
        oo, vv = o[q == qid], v[q == qid]
        for pos in range(0, len(x) - 100, 61):
            k = np.searchsorted(oo, pos, "right") - 1
            assert rank_error_ok(x[100:100 + pos + 1], vv[k], phi, e), (qid, pos)
    assert s.evaluations >= 2 * (len(x) - 100 - Y) // B
