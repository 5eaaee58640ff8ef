"""Select-join strategies of paper 003 §3.2 and §4.1: SJ-SSI (§3.2.2, Fig. 5, Theorem 3),
SJ-JoinFirst and SJ-SelectFirst (§3.2.1; SelectFirst in the improved form of §4.1), SJ-Vanilla
(§4.1) and SJ-Hotspot (§3.2.3: SJ-SSI on hotspots, SJ-SelectFirst on scattered queries).

A query: sigma_{A in rangeA} R join_{R.B = S.B} sigma_{C in rangeC} S. For tuples arriving on R
the "other" range is rangeC and the "mine" range rangeA; for tuples arriving on S the reverse
(symmetric: each arriving side has its own SSI, built on the other side's ranges).

Per arriving tuple (n queries, tau groups, m stored tuples, m' partners, n' queries whose
arriving-side range holds the tuple, g(n) an R-tree probe, k output pairs):

* SJ-SSI:         O(tau (log m + g(n)) + k); space O(n): per group the members sorted by the
  arriving-side range in blocks with a max/min tree (_sj_ssi_index), g(n) = its walk.
* SJ-JoinFirst:   O(log m + m' g(n) + k); one R-tree over all queries' rectangles.
* SJ-SelectFirst: O(log n + log m + n' log m' + k); a max-hi tournament tree over the
  arriving-side ranges sorted by left endpoint; the partner block located once.
* SJ-Vanilla:     O(log m + n log m' + k); no query index.

Query indexes are rebuilt lazily at the next insert after registrations/terminations (SJ-SSI:
only the groups its partition marked dirty are rewritten); the stabbing partitions are
maintained per update (App. A.1) / by the hotspot tracker (§2.2).
"""

from __future__ import annotations

import numpy as np

from . import _join_kernels_band as kb
from . import _join_kernels_select as ks
from . import hotspot
from ._join_kernels_band import run_fixed
from ._rtree import build_forest
from ._sj_ssi_index import SSIIndex
from .hotspot import HotspotTracker
from .partition import make_partition

# row = (alo, ahi, clo, chi, w); per arriving side: (other lo, other hi, mine lo, mine hi)
COLS = {"left": (2, 3, 0, 1), "right": (0, 1, 2, 3)}


def other_index(op, side):
    """The stored other side in (key, attr) order: K, X, S, T."""
    o = op.cur  # the part of the other side being probed (strategies._Strategy._probe)
    return o.k, o.kx, o.ks, o.kt


class _Queries:
    """Per arriving side: local query arrays (Qid, OLO, OHI, MLO, MHI, W) and the boxes."""

    def __init__(self, op, side, ids=None) -> None:
        if ids is None:
            qids, rows = op.query_arrays()
        else:
            qids = np.array(sorted(ids), np.int64)
            rows = np.array([op.q[i] for i in qids.tolist()], np.float64).reshape(len(qids), 5)
        ol, oh, ml, mh = COLS[side]
        self.qid = qids
        self.local = {int(q): j for j, q in enumerate(qids.tolist())}
        self.olo, self.ohi = np.ascontiguousarray(rows[:, ol]), np.ascontiguousarray(rows[:, oh])
        self.mlo, self.mhi = np.ascontiguousarray(rows[:, ml]), np.ascontiguousarray(rows[:, mh])
        # the window for tuples arriving on this side (asymmetric windows differ per side)
        self.w = np.ascontiguousarray(op.side_windows(side, qids)[0] if op.kind == "window" else rows[:, 4])
        self.boxes = np.stack([self.olo, self.ohi, self.mlo, self.mhi, self.w], 1) if len(qids) else np.empty((0, 5))
        self._tree: tuple | None = None

    def tree(self) -> tuple:
        """(NB, NC, IB, IQ, roots): one R-tree over all the boxes (built once, then shared)."""
        if self._tree is None:
            self._tree = build_forest(self.boxes, [np.arange(len(self.qid))])
        return self._tree

    def stab_index(self):
        """(MLO sorted, max-hi tree, size, and the arrays reordered alike) for SelectFirst."""
        o = np.lexsort((self.qid, self.mlo))
        size = 1
        while size < max(1, len(o)):
            size *= 2
        mx = kb.pst_build(self.mhi[o], size)
        return (np.ascontiguousarray(self.mlo[o]), mx, size, self.qid[o],
                np.ascontiguousarray(self.olo[o]), np.ascontiguousarray(self.ohi[o]), np.ascontiguousarray(self.w[o]))


def queries(op, side) -> _Queries:
    """``_Queries(op, side)`` over all alive queries, shared by the plans of an operator that keeps
    a ``_qcache`` (dynamic: emptied when its queries change), else built per call."""
    cache = op.__dict__.get("_qcache")
    if cache is None:
        return _Queries(op, side)
    q = cache.get(side)
    if q is None:
        q = cache[side] = _Queries(op, side)
    return q


class _PerSide:
    """Plans hold one structure per arriving side, built on first use after a change."""

    def __init__(self, op) -> None:
        self.op = op
        self.built: dict[str, object] = {}

    def add(self, qid, row):
        pass

    def remove(self, qid, row):
        pass

    def rebuild(self):
        self.built = {}

    def probe(self, side, seqs, key, x, t, mode):
        if side not in self.built:
            self.built[side] = self.build(side)
        return self.run(side, self.built[side], key, x, t, mode)


class SJJoinFirst(_PerSide):
    def build(self, side):
        q = queries(self.op, side)
        NB, NC, IB, IQ, roots = q.tree()
        return q, (int(roots[0]), NB, NC, IB, IQ)

    def run(self, side, b, key, x, t, mode):
        q, tree = b
        K, X, S, _ = other_index(self.op, side)
        return run_fixed(ks.sj_join_first, (K, X, S, key, x, *tree, q.qid), mode, self)


class SJSelectFirst(_PerSide):
    def build(self, side):
        return queries(self.op, side).stab_index()

    def run(self, side, b, key, x, t, mode):
        mlo, mx, size, qid, olo, ohi, _ = b
        K, X, S, _ = other_index(self.op, side)
        return run_fixed(ks.sj_select_first, (K, X, S, key, x, mlo, mx, size, qid, olo, ohi), mode, self)


class SJVanilla(_PerSide):
    def build(self, side):
        return queries(self.op, side)

    def run(self, side, q, key, x, t, mode):
        K, X, S, _ = other_index(self.op, side)
        return run_fixed(ks.sj_vanilla, (K, X, S, key, x, q.mlo, q.mhi, q.qid, q.olo, q.ohi), mode, self)


def _rows_of(op, side):
    """qids -> float64[k, 4] (other lo, other hi, mine lo, mine hi) of the alive queries."""
    ol, oh, ml, mh = COLS[side]

    def rows(qids):
        r = np.array([op.q[i] for i in qids.tolist()], np.float64).reshape(len(qids), 5)
        return r[:, [ol, oh, ml, mh]]

    return rows


def ssi_index(op, side, points: dict, groups: dict, rows_of=None) -> SSIIndex:
    """A fresh SJ-SSI index of ``groups`` (group -> member qids) stabbed at ``points``."""
    ix = SSIIndex()
    ix.update(points, groups, set(groups), rows_of or _rows_of(op, side))
    return ix


class _RowStore:
    """The alive queries' rows in one float64 array, so that an index rewrite gathers a group's
    rows with one fancy index instead of a Python row per member. Dense while the qids are
    small non-negative ints (row = qid: no lookup at all), else qid -> slot (freed slots
    reused)."""

    def __init__(self) -> None:
        self.slot: dict[int, int] = {}
        self.rows = np.empty((64, 5))
        self.dense = True
        self.free: list[int] = []
        self.n = 0

    def _room(self, s: int) -> None:
        if s >= len(self.rows):
            r = np.empty((max(s + 1, 2 * len(self.rows)), 5))
            r[: len(self.rows)] = self.rows
            self.rows = r

    def add(self, qid, row) -> None:
        if self.dense and not 0 <= qid < 8 * (len(self.slot) + 1024):
            self.dense = False  # dense slots stay valid; new ones go past them
            self.n = len(self.rows)
        if self.dense:
            s = qid
        elif self.free:
            s = self.free.pop()
        else:
            s = self.n
            self.n += 1
        self._room(s)
        self.rows[s] = row
        self.slot[qid] = s

    def remove(self, qid) -> None:
        s = self.slot.pop(qid)
        if not self.dense:
            self.free.append(s)

    def rows_of(self, side):
        cols = list(COLS[side][:4])
        get = self.slot.__getitem__

        def rows(qids):
            idx = qids if self.dense else np.fromiter(map(get, qids.tolist()), np.int64, len(qids))
            return self.rows[idx][:, cols]

        return rows


class SJSSI(_PerSide):
    """Two dynamic stabbing partitions: of rangeC (serves arriving R) and rangeA (arriving S).
    Each side's index (_sj_ssi_index) is built at its first probe and afterwards brought up to
    date at the next probe by rewriting only the groups the partition marked dirty."""

    def __init__(self, op, eps: float = 0.5, partition: str = "lazy") -> None:
        super().__init__(op)
        self.part = {"left": make_partition(partition, eps), "right": make_partition(partition, eps)}  # App. A.1 / A.2
        self.stale: set[str] = set()
        self.store = _RowStore()

    def add(self, qid, row):
        self.store.add(qid, row)
        for side, p in self.part.items():
            ol, oh = COLS[side][:2]
            p.insert(qid, row[ol], row[oh])

    def remove(self, qid, row):
        self.store.remove(qid)
        for p in self.part.values():
            p.delete(qid)

    def rebuild(self):
        """The queries changed: each built side refreshes its dirty groups at its next probe."""
        self.stale = set(self.built)

    def probe(self, side, seqs, key, x, t, mode):
        if side in self.stale and side in self.built:
            p = self.part[side]
            self.built[side].update(p.point, p.groups, p.drain_dirty(), self.store.rows_of(side))
        self.stale.discard(side)
        return super().probe(side, seqs, key, x, t, mode)

    def build(self, side):
        p = self.part[side]
        p.drain_dirty()
        return ssi_index(self.op, side, p.point, p.groups, self.store.rows_of(side))

    def run(self, side, ix, key, x, t, mode):
        K, X, S, _ = other_index(self.op, side)
        return run_fixed(ks.sj_ssi, (K, X, S, key, x, *ix.arrays()), mode, self)


class SJHotspot(_PerSide):
    """SJ-SSI on the hot groups, SJ-SelectFirst (§4.1) on the scattered queries."""

    def __init__(self, op, alpha: float | None = None, eps: float = 0.5, partition: str = "lazy") -> None:
        super().__init__(op)
        a = hotspot.ALPHA if alpha is None else alpha
        self.track = {"left": HotspotTracker(a, eps, partition), "right": HotspotTracker(a, eps, partition)}
        self.store = _RowStore()

    def add(self, qid, row):
        self.store.add(qid, row)
        for side, tr in self.track.items():
            ol, oh = COLS[side][:2]
            tr.insert(qid, row[ol], row[oh])

    def remove(self, qid, row):
        self.store.remove(qid)
        for tr in self.track.values():
            tr.delete(qid)

    def build(self, side):
        tr = self.track[side]
        ix = ssi_index(self.op, side, {h: tr.hot_point(h) for h in tr.hot}, tr.hot, self.store.rows_of(side))
        sq = _Queries(self.op, side, list(tr.scattered.iv))
        tr.drain_changes()
        return ix, sq.stab_index() if len(sq.qid) else None

    def run(self, side, b, key, x, t, mode):
        ix, sel = b
        K, X, S, _ = other_index(self.op, side)
        q1, i1, o1, c1 = run_fixed(ks.sj_ssi, (K, X, S, key, x, *ix.arrays()), mode, self)
        if sel is None:
            return q1, i1, o1, c1
        mlo, mx, size, qid, olo, ohi, _ = sel
        q2, i2, o2, c2 = run_fixed(ks.sj_select_first, (K, X, S, key, x, mlo, mx, size, qid, olo, ohi), mode, self)
        return np.concatenate([q1, q2]), np.concatenate([i1, i2]), np.concatenate([o1, o2]), c1 + c2
