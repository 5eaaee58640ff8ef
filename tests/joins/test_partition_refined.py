"""App. A.2 (paper 003): the refined dynamic stabbing partition. Valid after every update, size
<= (1+eps) tau(I) (Lemma 3's bound, which A.2 keeps), one group touched per update between
reconstructions, the reconstruction over groups (Fig. 21) outputs exactly the greedy partition
(Lemma 1), and hotspot tracking (§2.2, I1-I3) on top of it."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.joins import hotspot, strategies
from vigil.joins._base import _Side
from vigil.joins.hotspot import HotspotTracker
from vigil.joins.oracle import JoinOracle
from vigil.joins.partition import canonical_partition, make_partition, stabbing_number
from vigil.joins.partition_refined import RefinedStabbingPartition

from .test_oracle import band, select
from .test_partition import ops, replay

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _canonical(p, alive):
    lo = np.array([p.iv[i][0] for i in alive], float)
    hi = np.array([p.iv[i][1] for i in alive], float)
    g, pts = canonical_partition(lo, hi)
    return {(float(pts[k]), frozenset(np.asarray(alive)[g == k].tolist())) for k in range(len(pts))}


@SETTINGS
@given(ops=ops, eps=st.sampled_from([0.1, 0.5, 1.0, 3.0]), relaxed=st.booleans())
def test_refined_partition_valid_bounded_one_group_per_update(ops, eps, relaxed):
    p = RefinedStabbingPartition(eps, relaxed)
    r0 = p.reconstructions
    p.drain_dirty()
    alive: list[int] = []
    for alive, lo, hi in replay(p, ops):
        p.check()
        if p.reconstructions == r0:
            assert len(p.drain_dirty()) == 1  # A.2: each update touches one group
        else:  # the reconstruction (Fig. 21) outputs the greedy partition of Lemma 1
            assert {(p.point[g], frozenset(m)) for g, m in p.groups.items()} == _canonical(p, alive)
        assert p.size() <= (1 + eps) * stabbing_number(lo, hi) + 1e-9
        r0 = p.reconstructions
        p.drain_dirty()
    p.rebuild()
    p.check()
    assert {(p.point[g], frozenset(m)) for g, m in p.groups.items()} == _canonical(p, alive)


def test_reconstruction_with_many_singletons_inside_groups():
    """Inserted intervals (J) falling inside old groups' ranges: the groups are split at them."""
    rng = np.random.default_rng(5)
    p = RefinedStabbingPartition(50.0, relaxed=False)  # rare reconstructions: large J
    alive = []
    for i in range(400):
        a = float(rng.integers(0, 300))
        p.insert(i, a, a + float(rng.integers(0, 15)))
        alive.append(i)
        if i % 3 == 0 and len(alive) > 5:
            p.delete(alive.pop(int(rng.integers(len(alive)))))
    p.check()
    p.rebuild()
    p.check()
    assert {(p.point[g], frozenset(m)) for g, m in p.groups.items()} == _canonical(p, alive)
    s = RefinedStabbingPartition.from_state(p.state())
    s.check()
    assert {(s.point[g], frozenset(m)) for g, m in s.groups.items()} == _canonical(p, alive)


@SETTINGS
@given(ops=ops, alpha=st.sampled_from([0.05, 0.2, 0.5]), eps=st.sampled_from([0.2, 1.0]))
def test_hotspot_invariants_on_refined_partition(ops, alpha, eps):
    h = HotspotTracker(alpha, eps, partition="refined")
    for _alive, lo, hi in replay(h, ops):
        h.check()
        assert h.size() <= (1 + eps) * stabbing_number(lo, hi) + 2 / alpha + 1e-9  # I2
    assert h.moves <= 5 * h.updates  # I3


def test_make_partition_kinds():
    assert type(make_partition("lazy")).__name__ == "StabbingPartition"
    assert type(make_partition("refined")).__name__ == "RefinedStabbingPartition"


@pytest.mark.parametrize("alpha", [0.001, 0.05])
def test_ssi_and_hotspot_on_refined_partitions_agree_with_oracle(monkeypatch, alpha):
    """BJ/SJ/WJ-SSI and -Hotspot with App. A.2's partitions (eps 0.1: frequent reconstructions)
    on 150 clustered queries registered/terminated mid-stream, against the oracle."""
    monkeypatch.setattr(_Side, "BUF_MIN", 8)
    monkeypatch.setattr(hotspot, "ALPHA", alpha)
    rng = np.random.default_rng(11)
    for kind in ("band", "select", "window"):
        qs = []
        for i in range(150):
            c = rng.choice([5.0, 20.0, 40.0]) if i % 3 else rng.uniform(0, 50)
            if kind == "band":
                qs.append(band(f"q{i}", c - 25 - rng.uniform(0, 3), c - 25 + rng.uniform(0, 3)))
            else:
                qs.append(select(f"q{i}", (c - rng.uniform(0, 8), c + rng.uniform(0, 8)),
                                 (c - rng.uniform(0, 8), c + rng.uniform(0, 8)), 5.0 + i % 7 if kind == "window" else None))
        for base in (strategies.SSI, strategies.Hotspot):
            plan = base.plans[kind]

            class Refined(base):
                plans = {kind: functools.partial(plan, eps=0.1, partition="refined")}

            ops = [Refined(kind), JoinOracle(kind)]
            seq, t = 1, 0.0
            alive: set[int] = set()
            found = 0
            for step in range(16):
                new = list(range(step * 9, min(150, step * 9 + 9)))
                gone = sorted(i for i in alive if i % 5 == step % 5)
                alive = (alive | set(new)) - set(gone)
                for op in ops:
                    for i in new:
                        op.register(i, qs[i])
                    for i in gone:
                        op.terminate(i)
                side = "left" if step % 3 else "right"
                n = int(rng.integers(1, 20))
                key = rng.integers(0, 50, n).astype(np.float64 if kind == "band" else np.int64)
                attrs = None if kind == "band" else rng.uniform(0, 50, (n, 1)).round()
                times = None
                if kind == "window":
                    times = t + np.cumsum(rng.integers(0, 2, n)).astype(float)
                    t = float(times[-1])
                got, exp = (op.insert(side, np.arange(seq, seq + n), key, attrs, times) for op in ops)
                seq += n
                found += len(exp[0])
                assert all(np.array_equal(a, b) for a, b in zip(got, exp, strict=True)), (kind, base.name, step)
            p = ops[0].plan
            used = list(p.part.values()) if isinstance(getattr(p, "part", None), dict) else \
                [getattr(p, "part", None)] if hasattr(p, "part") else \
                [tr.scattered for tr in (p.track.values() if isinstance(p.track, dict) else [p.track])]
            assert all(type(u).__name__ == "RefinedStabbingPartition" for u in used)
            assert found > 0 and sum(u.reconstructions for u in used) > 1
