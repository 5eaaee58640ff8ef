"""The query R-trees (``_rtree.build_forest``: one-leaf trees, forests, packing by y) find exactly
the boxes holding a point; the stored tuples' merge (``_base._ins``) equals np.insert; the plans
of one dynamic operator share its query arrays until the queries change."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.joins._base import _ins
from vigil.joins._rtree import FAN, build_forest, stab
from vigil.joins.dynamic import Dynamic
from vigil.joins.select import queries


@pytest.mark.parametrize("by_y", [False, True])
def test_forest_stab_finds_exactly_the_boxes_holding_the_point(by_y):
    rng = np.random.default_rng(3)
    for n in (1, 5, FAN, FAN + 1, 40, 300):
        lo = rng.integers(0, 30, (n, 3)).astype(float)
        hi = lo + rng.integers(0, 8, (n, 3))
        lo[::4, 1] = -np.inf  # unbounded ranges clip in the packing, not in the boxes
        boxes = np.stack([lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1], hi[:, 2]], 1)
        groups = np.array_split(rng.permutation(n), 3 if n > 3 else 1)
        NB, NC, IB, IQ, roots = build_forest(boxes, groups, by_y)
        assert sorted(IQ.tolist()) == list(range(n))
        buf, stack = np.empty(n + 1, np.int64), np.empty(16 * 64, np.int64)
        for x, y, z in rng.integers(0, 36, (200, 3)).astype(float):
            for g, mem in enumerate(groups):
                f = stab(NB, NC, IB, IQ, int(roots[g]), x, y, z, buf, stack)
                b = boxes[mem]
                want = mem[(b[:, 0] <= x) & (x <= b[:, 1]) & (b[:, 2] <= y) & (y <= b[:, 3]) & (z < b[:, 4])]
                assert sorted(buf[:f].tolist()) == sorted(want.tolist())


def test_merge_insert_equals_np_insert():
    rng = np.random.default_rng(5)
    for _ in range(300):
        n, m = int(rng.integers(0, 40)), int(rng.integers(0, 15))
        for dt in (np.int64, np.float64):
            a = np.sort(rng.integers(0, 20, n)).astype(dt)
            p = np.sort(rng.integers(0, n + 1, m))
            v = rng.integers(0, 20, m)
            got, want = _ins(a, p, v), np.insert(a, p, v)
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_dynamic_plans_share_query_arrays_until_queries_change():
    from vigil.specs import parse_query

    def spec(i, lo):
        return parse_query({"type": "window_join", "id": f"q{i}", "left": "R", "right": "S", "left_on": "b",
                            "right_on": "b", "left_range": {"a": [lo, lo + 5]}, "right_range": {"c": [0, 9]},
                            "window": 2.0, "time_column": "t"})

    op = Dynamic("window")
    op.register(0, spec(0, 0))
    op.insert("right", np.array([1]), np.array([1]), np.array([[1.0]]), np.array([0.0]))
    op.insert("left", np.array([2]), np.array([1]), np.array([[2.0]]), np.array([0.5]))
    q = queries(op, "left")
    assert queries(op, "left") is q and len(q.qid) == 1
    assert op.route["join_first"].built["left"][0] is q  # the plans built from the shared arrays
    op.register(1, spec(1, 10))
    q2, i, _ = op.insert("left", np.array([3]), np.array([1]), np.array([[12.0]]), np.array([1.0]))
    assert q2.tolist() == [1] and queries(op, "left") is not q and len(queries(op, "left").qid) == 2


def test_hotspot_demotion_bound_keeps_the_full_scan_results():
    """HotspotTracker._demote skips its scan while a lower bound of the smallest hot group's size
    is not below (alpha/2)|I|: the same groups, moves and partition as scanning every update."""
    from vigil.joins.hotspot import HotspotTracker

    class Scan(HotspotTracker):
        def _demote(self):
            self._lb = 0.0  # no bound: every call scans
            super()._demote()

    rng = np.random.default_rng(11)
    for alpha in (0.05, 0.2):
        a, b = HotspotTracker(alpha), Scan(alpha)
        alive: list[int] = []
        for i in range(1500):
            if alive and rng.random() < 0.45:
                q = alive.pop(int(rng.integers(len(alive))))
                a.delete(q)
                b.delete(q)
            else:
                c = float(rng.choice([10.0, 50.0, 90.0])) if rng.random() < 0.7 else float(rng.uniform(0, 100))
                lo, hi = c - rng.uniform(0, 4), c + rng.uniform(0, 4)
                a.insert(i, lo, hi)
                b.insert(i, lo, hi)
                alive.append(i)
            assert a.hot == b.hot and a.hot_of == b.hot_of and a.moves == b.moves
        a.check()
        assert sorted(map(sorted, a.scattered.groups.values())) == sorted(map(sorted, b.scattered.groups.values()))
