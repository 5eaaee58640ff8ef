"""Routed select batches (vigil.joins._route_select.split / probe_routed): tuples without a stored
partner are set aside, the rest grouped by plan in one pass; the output equals a static plan's in
every mode. And the stored side's indexes are built lazily (vigil.joins._base._Side): nothing is
indexed at insert, a probe indexes what was added since, and the parts equal an eager build."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.joins import _route_select as rs
from vigil.joins import dynamic
from vigil.joins._base import _Index, _Side

from .test_oracle import select


class Zero(dynamic.Dynamic):
    margin_abs = margin_rel = split_us = 0.0


def _loaded(cls, output, rng, nq=150, ns=1200):
    op = cls("select", output)
    for i in range(nq):
        a, c = rng.uniform(0, 100, 2)
        op.register(i, select(f"q{i}", (a, a + rng.uniform(0, 30)), (c, c + rng.uniform(0, 30))))
    # stored keys 0..39 but only the even ones: odd keys (and keys outside) have no partner
    op.insert("right", np.arange(1, ns + 1), 2 * rng.integers(0, 20, ns), rng.uniform(0, 130, (ns, 1)), None)
    return op


@pytest.mark.timeout(300)
@pytest.mark.parametrize("output", ["pairs", "affected", "count"])
def test_routed_batches_set_partnerless_aside_and_equal_a_static_plan(output):
    rng = np.random.default_rng(3)
    dyn, ref = _loaded(Zero, output, np.random.default_rng(1)), _loaded(dynamic.Dynamic, output, np.random.default_rng(1))
    ref.force = "vanilla"
    dyn.params = {c: {k: float(rng.uniform(0, 2)) for k in p} for c, p in dyn.params.items()}
    seq, split = 10**6, 0
    for n in (1, 300, 5, 700, 64, 1000):
        key, x = rng.integers(-5, 45, n), rng.uniform(-10, 140, (n, 1))
        s = np.arange(seq, seq + n)
        seq += n
        before = dyn.no_partner
        got, want = dyn.insert("left", s, key, x), ref.insert("left", s, key, x)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
        if n >= 64:
            assert dyn.no_partner - before == np.count_nonzero((key % 2 == 1) | (key < 0) | (key > 38))
            split += len(np.unique(dyn.last_choice)) > 1
    assert dyn.counted == ref.counted
    assert split > 0  # the batches went to several plans
    assert dyn.decisions.sum() + dyn.no_partner == seq - 10**6


def test_split_groups_by_plan_and_keeps_a_single_plan_batch_whole():
    op = _loaded(dynamic.Dynamic, "count", np.random.default_rng(2))
    op.insert("left", np.array([10**6]), np.array([2]), np.array([[50.0]]))
    sv = op._fast["left"][2]
    key = np.array([2, 3, 4, 2, 5, 6, 8, 1])  # odd keys: no partner
    out = np.array([0, 3, 1, 1, 0, 3, 0, 2])
    order, counts = np.empty(8, np.int64), np.zeros(5, np.int64)
    assert rs.split(key, out.copy(), sv, -1, 0, order, counts) == 0  # one plan, no skipping: whole
    assert rs.split(key, out.copy(), sv, 4, 0, order, counts) == 0  # 3 partnerless < 4: whole
    o = out.copy()
    assert rs.split(key, o, sv, 3, -1, order, counts) == -1
    assert counts.tolist() == [2, 2, 0, 1, 3]
    assert order.tolist() == [0, 6, 2, 3, 5, 1, 4, 7]
    assert o.tolist() == [0, 4, 1, 1, 4, 3, 0, 4]


@pytest.mark.parametrize("kind", ["select", "window", "band"])
def test_side_indexes_lazily_and_equals_an_eager_build(kind):
    rng = np.random.default_rng(7)
    side = _Side(kind)
    eager = _Index(kind)
    seq = 0
    for n in (5, 3000, 1, 40, 700, 2500, 9):
        key = rng.uniform(0, 50, n) if kind == "band" else rng.integers(0, 20, n)
        x, t = rng.uniform(0, 10, n), np.arange(seq, seq + n, dtype=np.float64)
        s = np.arange(seq, seq + n)
        seq += n
        side.add(s, key, x, t)
        eager.add(s, key, x, t)
        assert side.main.n + side.buf.n < seq  # nothing indexed at insert
        parts = side.parts()
        assert side.main.n + side.buf.n == seq
        if len(parts) == 1:
            for a, b in zip(parts[0].arrays(), eager.arrays(), strict=True):
                assert np.array_equal(a, b)
        else:  # main + buffer: together the same tuples in the same order per key
            assert sum(p.n for p in parts) == eager.n


def test_a_forced_plan_probes_in_the_routed_batch_order():
    """The benchmarks' static plans are ``dynamic`` forced to one plan: SJ-JoinFirst then probes
    a batch in the R.A order its routed sub-batches get (_run_ordered), so that routing is not
    credited with the ordering (before, forced batches were probed in arrival order)."""
    op = _loaded(dynamic.Dynamic, "count", np.random.default_rng(4))
    op.force = "join_first"
    seen = []
    plan = op.route["join_first"]
    probe = plan.probe

    def spy(side, seqs, key, x, t, mode):
        seen.append(x.copy())
        return probe(side, seqs, key, x, t, mode)

    plan.probe = spy
    rng = np.random.default_rng(0)
    n = 2 * op.order_min
    op.insert("left", np.arange(10**6, 10**6 + n), rng.integers(0, 40, n), rng.uniform(0, 130, (n, 1)))
    assert len(seen[-1]) == n and (np.diff(seen[-1]) >= 0).all()  # (before it: the warm-up probe of one tuple)
