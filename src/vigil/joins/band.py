"""Band-join strategies of paper 003 §3.1: BJ-SSI (§3.1.2, Fig. 4, Theorem 2), BJ-QOuter,
BJ-DOuter, BJ-MJ (§3.1.1) and BJ-Hotspot (§3.1.3). A query i: s.B - r.B in rangeB_i = [lo, hi].

Per arriving tuple (n queries, tau stabbing groups, m stored tuples of the other side, k output
pairs; Theorem 2):

* BJ-SSI:    O(tau log m + k). SSI over the band ranges (the dynamic stabbing partition of
  :mod:`vigil.joins.partition`); per group the ranges sorted by left endpoint and by right
  endpoint (decreasing); the ordered index on the other side's B.
* BJ-QOuter: O(n log m + k) — each query's window searched in the ordered index.
* BJ-DOuter: O(m log n + k log n) — each stored tuple probes a max-hi tournament tree over the
  windows sorted by left endpoint (a static priority search structure).
* BJ-MJ:     O(m + n + k) — merge of the windows sorted by left endpoint with the sorted keys.
* BJ-Hotspot: BJ-SSI on the hot groups of :class:`~vigil.joins.hotspot.HotspotTracker`, BJ-QOuter
  on the scattered queries.

Space O(n) for the query indexes (plus the stored tuples). BJ-SSI's index is maintained per query
update with its stabbing partition (App. A.1 / A.2; :mod:`vigil.joins._bj_ssi_index`: one group's
lists touched per update, a full rebuild only when the partition reconstructs); the other plans'
query indexes are rebuilt lazily at the next insert after registrations/terminations (O(n log n)).
"""

from __future__ import annotations

import numpy as np

from . import _join_kernels_band as kb
from . import hotspot
from ._bj_ssi_index import BandSSIIndex
from .hotspot import HotspotTracker
from .partition import make_partition


def _stored(op, side):
    """(K, KS, offsets c) for tuples arriving on ``side``: see _join_kernels_band."""
    other = op.cur  # the part of the other side being probed (strategies._Strategy._probe)
    if side == "left":
        return other.asc, other.asc_s, -1.0
    return other.neg, other.neg_s, 1.0


def _run(op, side, key, fn, *args):
    """``args`` end with the mode; outputs through kb.run_fixed (room remembered on the op)."""
    K, KS, sign = _stored(op, side)
    cs = np.ascontiguousarray(sign * key, np.float64)
    ok = np.isfinite(cs)
    *args, mode = args
    if not ok.all():  # non-finite keys never join
        idx = np.flatnonzero(ok)
        q, i, o, cnt = kb.run_fixed(fn, (K, KS, cs[idx], *args), mode, op)
        return q, idx[i], o, cnt
    return kb.run_fixed(fn, (K, KS, cs, *args), mode, op)


def _group_arrays(points: dict[int, float], group_of: dict[int, int], lohi: dict[int, tuple]) -> tuple:
    """Flat per-group arrays for bj_ssi (vectorised: two lexsorts over all queries): points in
    increasing order, group offsets and sizes, (lo ascending, ids), (hi descending, ids)."""
    gids = sorted(points, key=lambda g: points[g])
    rank = {g: r for r, g in enumerate(gids)}
    P = np.array([points[g] for g in gids], np.float64)
    ids = np.fromiter(group_of.keys(), np.int64, len(group_of))
    grp = np.fromiter((rank[g] for g in group_of.values()), np.int64, len(group_of))
    lh = np.array([lohi[i] for i in ids.tolist()], np.float64).reshape(-1, 2)
    lo, hi = lh[:, 0], lh[:, 1]
    off = np.zeros(len(P) + 1, np.int64)
    off[1:] = np.cumsum(np.bincount(grp, minlength=len(P)))
    o1 = np.lexsort((ids, lo, grp))
    o2 = np.lexsort((ids, -hi, grp))
    return (P, off[:-1].copy(), np.diff(off), np.ascontiguousarray(lo[o1]), ids[o1], np.ascontiguousarray(hi[o2]),
            ids[o2])


class BJSSI:
    """The partition and the per-group lists are updated per query update (_bj_ssi_index); the
    index is rebuilt only when the partition reconstructs."""

    def __init__(self, op, eps: float = 0.5, partition: str = "lazy") -> None:
        self.op = op
        self.part = make_partition(partition, eps)  # App. A.1 (lazy) or A.2 (refined)
        self.idx = BandSSIIndex()

    def _reconstructed(self):
        """The partition was reconstructed (every group changed): rebuild the index now from its
        flat arrays (App. A.1's partition keeps them), else at the next probe."""
        lb = getattr(self.part, "last_build", None)
        if lb is None:
            self.idx.stale = True
            return
        ids, lo, hi, grp, base, pts = lb
        self.idx.build_arrays(ids, lo, hi, grp, base + np.arange(len(pts)), pts)

    def add(self, qid, row):
        p, v = self.part, self.part.version
        g = p.insert(qid, row[0], row[1])
        if p.version != v:
            self._reconstructed()
        else:
            self.idx.insert(g, p.point[g], qid, float(row[0]), float(row[1]))

    def remove(self, qid, row):
        p, v = self.part, self.part.version
        p.delete(qid)
        if p.version != v:
            self._reconstructed()
        else:
            self.idx.delete(qid)

    def rebuild(self):
        self.idx.refresh(self.part)
        self.arrays = self.idx.arrays()
        self.part.drain_dirty()

    def probe(self, side, seqs, key, x, t, mode):
        return _run(self.op, side, key, kb.bj_ssi, *self.arrays, mode)


class _Flat:
    """The alive windows sorted by left endpoint (BJ-QOuter / BJ-MJ / BJ-DOuter)."""

    def __init__(self, op) -> None:
        self.op = op

    def add(self, qid, row):
        pass

    def remove(self, qid, row):
        pass

    def rebuild(self):
        ids, rows = self.op.query_arrays()
        o = np.lexsort((ids, rows[:, 0]))
        self.lo = np.ascontiguousarray(rows[o, 0])
        self.hi = np.ascontiguousarray(rows[o, 1])
        self.ids = ids[o]


class BJQOuter(_Flat):
    def probe(self, side, seqs, key, x, t, mode):
        return _run(self.op, side, key, kb.bj_qouter, self.lo, self.hi, self.ids, mode)


class BJMJ(_Flat):
    def probe(self, side, seqs, key, x, t, mode):
        return _run(self.op, side, key, kb.bj_mj, self.lo, self.hi, self.ids, mode)


class BJDOuter(_Flat):
    def rebuild(self):
        super().rebuild()
        self.size = 1
        while self.size < max(1, len(self.lo)):
            self.size *= 2
        self.mx = kb.pst_build(self.hi, self.size)

    def probe(self, side, seqs, key, x, t, mode):
        return _run(self.op, side, key, kb.bj_douter, self.lo, self.ids, self.mx, self.size, mode)


class BJHotspot:
    """BJ-SSI on the hotspots (alpha, eps), BJ-QOuter on the scattered queries."""

    def __init__(self, op, alpha: float | None = None, eps: float = 0.5, partition: str = "lazy") -> None:
        self.op = op
        self.track = HotspotTracker(hotspot.ALPHA if alpha is None else alpha, eps, partition)

    def add(self, qid, row):
        self.track.insert(qid, row[0], row[1])

    def remove(self, qid, row):
        self.track.delete(qid)

    def rebuild(self):
        tr = self.track
        self.arrays = _group_arrays({h: tr.hot_point(h) for h in tr.hot}, tr.hot_of, tr.iv)
        sc = np.array(sorted(tr.scattered.iv), np.int64)
        lh = np.array([tr.iv[i] for i in sc.tolist()], np.float64).reshape(-1, 2)
        o = np.lexsort((sc, lh[:, 0]))
        self.s_lo, self.s_hi, self.s_ids = np.ascontiguousarray(lh[o, 0]), np.ascontiguousarray(lh[o, 1]), sc[o]
        tr.drain_changes()

    def probe(self, side, seqs, key, x, t, mode):
        q1, i1, o1, c1 = _run(self.op, side, key, kb.bj_ssi, *self.arrays, mode)
        if not len(self.s_ids):
            return q1, i1, o1, c1
        q2, i2, o2, c2 = _run(self.op, side, key, kb.bj_qouter, self.s_lo, self.s_hi, self.s_ids, mode)
        return np.concatenate([q1, q2]), np.concatenate([i1, i2]), np.concatenate([o1, o2]), c1 + c2
