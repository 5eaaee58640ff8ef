"""Window-join strategies of paper 003 §3.3: WJ-SSI (§3.3.2, Fig. 6, Theorem 4), WJ-JoinFirst
and WJ-SelectFirst (§3.3.1), WJ-Hotspot (§3.3.3: WJ-SSI on hotspots, WJ-SelectFirst on the
scattered queries). A query: the select join of select.py plus |R.T - S.T| < w.

Per arriving tuple (Theorem 4; m_b partners of key b inside w_max, m̄_b skyline points, g3 a
probe of the 3D box index D):

* WJ-SSI:         O(log m + m_b + m̄_b g3(n) + k) — the skylines are recomputed in one pass
  over the key's block at every probe (the paper's lazy recomputation in its stale case; the
  per-(b, stabbing point) skyline cache with split/merge trees is not implemented), trimmed to
  w_max at that pass; only skyline points probe D.
* WJ-JoinFirst:   O(log m + m_b g3(n) + k).
* WJ-SelectFirst: O(log n + n' (log m' + r) + k) (the (C, T) range search done as a C range
  search plus a T filter).

Space O(n) for the query indexes plus the stored tuples.
"""

from __future__ import annotations

import numpy as np

from . import _join_kernels_band as kb
from . import _join_kernels_window as kw
from ._rtree import build_forest
from .select import COLS, SJSSI, SJHotspot, _PerSide, _Queries, other_index


def _qp(q: _Queries, groups) -> np.ndarray:
    qp = np.zeros(len(q.qid))
    for p, mem in groups:
        for i in mem:
            qp[q.local[i]] = p
    return qp


class WJJoinFirst(_PerSide):
    def build(self, side):
        q = _Queries(self.op, side)
        NB, NC, IB, IQ, roots = build_forest(q.boxes, [np.arange(len(q.qid))])
        return q, (int(roots[0]), NB, NC, IB, IQ), float(q.w.max()) if len(q.w) else 0.0

    def run(self, side, b, key, x, t, mode):
        q, tree, wmax = b
        o = self.op.cur
        return kb.run_fixed(kw.wj_join_first, (o.k2, o.x2, o.s2, o.t2, key, x, t, wmax, *tree, q.qid), mode, self)


class WJSelectFirst(_PerSide):
    def build(self, side):
        return _Queries(self.op, side).stab_index()

    def run(self, side, b, key, x, t, mode):
        mlo, mx, size, qid, olo, ohi, w = b
        K, X, S, T = other_index(self.op, side)
        return kb.run_fixed(kw.wj_select_first, (K, X, S, T, key, x, t, mlo, mx, size, qid, olo, ohi, w), mode, self)


def _wj_ssi_parts(q: _Queries, groups):
    P = np.array([p for p, _ in groups], np.float64)
    NB, NC, IB, IQ, roots = build_forest(q.boxes, [np.arange(len(q.qid))])
    wmax = float(q.w.max()) if len(q.w) else 0.0
    return wmax, P, int(roots[0]), NB, NC, IB, IQ


class WJSSI(SJSSI):
    """The SSI on the other side's ranges (dynamic partitions of SJSSI) + D over all queries
    (rebuilt in full at the first probe after the queries changed)."""

    rebuild = _PerSide.rebuild
    probe = _PerSide.probe

    def build(self, side):
        p = self.part[side]
        q = _Queries(self.op, side)
        groups = sorted((p.point[g], sorted(m)) for g, m in p.groups.items())
        p.drain_dirty()
        return q, _wj_ssi_parts(q, groups), _qp(q, groups)

    def run(self, side, b, key, x, t, mode):
        q, parts, qp = b
        K, X, S, T = other_index(self.op, side)
        return kb.run_fixed(kw.wj_ssi, (K, X, S, T, key, x, t, *parts, q.qid, q.olo, q.ohi, q.w, qp), mode, self)


class WJHotspot(SJHotspot):
    def build(self, side):
        tr = self.track[side]
        hq = _Queries(self.op, side, [i for m in tr.hot.values() for i in m])
        groups = sorted((tr.hot_point(h), sorted(m)) for h, m in tr.hot.items())
        sq = _Queries(self.op, side, list(tr.scattered.iv))
        tr.drain_changes()
        return hq, _wj_ssi_parts(hq, groups), _qp(hq, groups), sq.stab_index() if len(sq.qid) else None

    def run(self, side, b, key, x, t, mode):
        hq, parts, qp, sel = b
        K, X, S, T = other_index(self.op, side)
        q1, i1, o1, c1 = kb.run_fixed(kw.wj_ssi, (K, X, S, T, key, x, t, *parts, hq.qid, hq.olo, hq.ohi, hq.w, qp), mode, self)
        if sel is None:
            return q1, i1, o1, c1
        mlo, mx, size, qid, olo, ohi, w = sel
        q2, i2, o2, c2 = kb.run_fixed(kw.wj_select_first, (K, X, S, T, key, x, t, mlo, mx, size, qid, olo, ohi, w), mode, self)
        return np.concatenate([q1, q2]), np.concatenate([i1, i2]), np.concatenate([o1, o2]), c1 + c2


_ = COLS
