"""Window-join strategies of paper 003 §3.3: WJ-SSI (§3.3.2, Fig. 6, Theorem 4), WJ-JoinFirst
and WJ-SelectFirst (§3.3.1), WJ-Hotspot (§3.3.3: WJ-SSI on hotspots, WJ-SelectFirst on the
scattered queries). A query: the select join of select.py plus |R.T - S.T| < w.

Per arriving tuple (Theorem 4; m_b partners of key b inside w_max, m̄_b skyline points, g3 a
probe of the 3D box index D):

* WJ-SSI:         O(log m + m_b' + m̄_b g3(n) + k) with the skyline cache of
  :mod:`vigil.joins._skyline_cache` (per S.B value b, the union of the left/right skylines
  around every stabbing point): m_b' = the cached points of b (trimmed lazily to w_max in the
  same pass) when b's entry is fresh, or m' (one pass over b's whole block, all skylines of b
  together) when it is stale (stabbing points changed, w_max grew) or not cached yet; an insert
  of key b between probes is folded into b's entry in O(log m̄ + m̄) (§3.3.2's insert rule on a
  flat array instead of split/merge trees). Only skyline points inside the window probe D.
  ``skyline_cache = False`` recomputes the skylines per probe (O(log m + m' + m̄_b g3(n) + k)).
* WJ-JoinFirst:   O(log m + m_b g3(n) + k).
* WJ-SelectFirst: O(log n + n' (log m' + r) + k) (the (C, T) range search done as a C range
  search plus a T filter).

Space O(n) for the query indexes plus the stored tuples; the skyline cache O(stored tuples)
(entries only for stored keys, cleared when the stored side is trimmed to max_window).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import _join_kernels_band as kb
from . import _join_kernels_window as kw
from ._skyline_cache import SkylineCache
from .select import COLS, SJSSI, SJHotspot, _PerSide, _Queries, other_index, queries


def _qp(q: _Queries, groups) -> np.ndarray:
    qp = np.zeros(len(q.qid))
    for p, mem in groups:
        for i in mem:
            qp[q.local[i]] = p
    return qp


class WJJoinFirst(_PerSide):
    def build(self, side):
        q = queries(self.op, side)
        NB, NC, IB, IQ, roots = q.tree()
        return q, (int(roots[0]), NB, NC, IB, IQ), float(q.w.max()) if len(q.w) else 0.0

    def run(self, side, b, key, x, t, mode):
        q, tree, wmax = b
        o = self.op.cur
        return kb.run_fixed(kw.wj_join_first, (o.k2, o.x2, o.s2, o.t2, key, x, t, wmax, *tree, q.qid), mode, self)


class WJSelectFirst(_PerSide):
    def build(self, side):
        return queries(self.op, side).stab_index()

    def run(self, side, b, key, x, t, mode):
        mlo, mx, size, qid, olo, ohi, w = b
        K, X, S, T = other_index(self.op, side)
        return kb.run_fixed(kw.wj_select_first, (K, X, S, T, key, x, t, mlo, mx, size, qid, olo, ohi, w), mode, self)


def _wj_ssi_parts(q: _Queries, groups):
    P = np.array([p for p, _ in groups], np.float64)
    NB, NC, IB, IQ, roots = q.tree()
    wmax = float(q.w.max()) if len(q.w) else 0.0
    return wmax, P, int(roots[0]), NB, NC, IB, IQ


def _merge(outs):
    if len(outs) == 1:
        return outs[0]
    return (np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs]),
            np.concatenate([o[2] for o in outs]), sum(o[3] for o in outs))


def _part_arrays(parts):
    """(K, X, S, T) in (key, C) order and the same in (key, T) order, of the main part and of
    the buffer (empty arrays for a missing part)."""
    e, ei = np.empty(0), np.empty(0, np.int64)
    out = [(p.k, p.kx, p.ks, p.kt, p.k2, p.x2, p.s2, p.t2) for p in parts[:2]]
    while len(out) < 2:
        out.append((ei, e, ei, e, ei, e, ei, e))
    return (*out[0], *out[1])


class _Cached:
    """WJ-SSI over the skyline cache (:mod:`._skyline_cache`): one cache per arriving side,
    brought up to date (new stored tuples folded in, the batch's keys made fresh) before the
    kernel probes D with the cached points. ``skyline_cache = False`` probes each part with the
    per-probe recomputation instead (kernels ``wj_ssi``; kept to measure the cache against)."""

    skyline_cache: ClassVar[bool] = True

    def cache(self, side) -> SkylineCache:
        caches = self.__dict__.setdefault("caches", {})
        if side not in caches:
            caches[side] = SkylineCache()
        return caches[side]

    def probe_parts(self, side, seqs, key, x, t, mode, parts):
        if side not in self.built:
            self.built[side] = self.build(side)
        if not self.skyline_cache:
            outs = []
            for part in parts:
                self.op.cur = part
                outs.append(self.run(side, self.built[side], key, x, t, mode))
            return _merge(outs)
        return self.run_parts(side, self.built[side], key, x, t, mode, parts)

    def _ssi(self, side, q, wp, qp, qg, key, x, t, mode, parts):
        wmax, P = wp[0], wp[1]
        c = self.cache(side)
        if c.src is not P:  # a (re)built index: its stabbing points may differ
            c.set_points(P)
            c.src = P
        c.sync(self.op.sides["right" if side == "left" else "left"])
        key = np.ascontiguousarray(key, np.int64)
        pa = _part_arrays(parts)
        head = (*pa, key, x, t, wmax, *wp[2:], q.qid, q.olo, q.ohi, q.w, qp, qg)
        z = np.empty(0, np.int64)
        cap = self.__dict__.get("sky_cap", 256)  # its own (run_fixed's ``cap`` follows the per-part calls)
        scr = self.__dict__.setdefault("scratch", {}).get(side)
        if scr is None or len(scr[0]) != len(q.qid) + 1:  # seen stamps, D's output, the affected
            scr = self.scratch[side] = [np.zeros(len(q.qid) + 1, np.int64), np.empty(len(q.qid) + 1, np.int64),
                                        np.empty(len(q.qid) + 1, np.int64), 0]
        while True:  # run_fixed, plus growing the cache when its kernel asks for room
            oq, oi, oo = (z, z, z) if mode == 2 else (np.empty(cap, np.int64), np.empty(cap, np.int64),
                                                       np.empty(cap, np.int64))
            n, cnt = kw.wj_ssi_cached(*head, *c.arrays(), P, c.ver, *scr, mode, oq, oi, oo)
            scr[3] += len(key) + 1  # fresh stamps for the next call (a rerun too)
            if n < 0:
                c.room()
                continue
            if mode == 2:
                return z, z, z, cnt
            if n <= cap:
                self.sky_cap = max(256, min(cap, 2 * n))
                return oq[:n], oi[:n], oo[:n], cnt
            cap = n + n // 2  # rerun with room (and slack: the next batch may output a little more)

    def mbar(self, side, key, t) -> np.ndarray | None:
        """m̄_b per tuple from this side's cache (synced first): exact where the key's entry is
        fresh, -1 elsewhere; None before the side's index is built."""
        b = self.built.get(side)
        if b is None:
            return None
        c = self.cache(side)
        if c.src is not b[1][1]:  # rebuilt since the last probe: entries of other points are stale
            c.set_points(b[1][1])
            c.src = b[1][1]
        c.sync(self.op.sides["right" if side == "left" else "left"])
        return c.mbar(np.ascontiguousarray(key, np.int64), np.ascontiguousarray(t, np.float64), b[1][0])


class WJSSI(_Cached, SJSSI):
    """The SSI on the other side's ranges (dynamic partitions of SJSSI) + D over all queries
    (rebuilt in full at the first probe after the queries changed) + the skyline cache."""

    rebuild = _PerSide.rebuild
    probe = _PerSide.probe

    def build(self, side):
        p = self.part[side]
        q = queries(self.op, side)
        groups = sorted((p.point[g], sorted(m)) for g, m in p.groups.items())
        p.drain_dirty()
        wp = _wj_ssi_parts(q, groups)
        qp = _qp(q, groups)
        return q, wp, qp, np.searchsorted(wp[1], qp).astype(np.int64)

    def run(self, side, b, key, x, t, mode):
        q, parts, qp, _ = b
        K, X, S, T = other_index(self.op, side)
        return kb.run_fixed(kw.wj_ssi, (K, X, S, T, key, x, t, *parts, q.qid, q.olo, q.ohi, q.w, qp), mode, self)

    def run_parts(self, side, b, key, x, t, mode, parts):
        q, wp, qp, qg = b
        return self._ssi(side, q, wp, qp, qg, key, x, t, mode, parts)


class WJHotspot(_Cached, SJHotspot):
    def build(self, side):
        tr = self.track[side]
        hq = _Queries(self.op, side, [i for m in tr.hot.values() for i in m])
        groups = sorted((tr.hot_point(h), sorted(m)) for h, m in tr.hot.items())
        sq = _Queries(self.op, side, list(tr.scattered.iv))
        tr.drain_changes()
        wp = _wj_ssi_parts(hq, groups)
        qp = _qp(hq, groups)
        return (hq, wp, qp, sq.stab_index() if len(sq.qid) else None,
                np.searchsorted(wp[1], qp).astype(np.int64))

    def run(self, side, b, key, x, t, mode):
        hq, parts, qp, sel, _ = b
        K, X, S, T = other_index(self.op, side)
        q1, i1, o1, c1 = kb.run_fixed(kw.wj_ssi, (K, X, S, T, key, x, t, *parts, hq.qid, hq.olo, hq.ohi, hq.w, qp), mode, self)
        if sel is None:
            return q1, i1, o1, c1
        mlo, mx, size, qid, olo, ohi, w = sel
        q2, i2, o2, c2 = kb.run_fixed(kw.wj_select_first, (K, X, S, T, key, x, t, mlo, mx, size, qid, olo, ohi, w), mode, self)
        return np.concatenate([q1, q2]), np.concatenate([i1, i2]), np.concatenate([o1, o2]), c1 + c2

    def run_parts(self, side, b, key, x, t, mode, parts):
        hq, wp, qp, sel, qg = b
        outs = [self._ssi(side, hq, wp, qp, qg, key, x, t, mode, parts)]
        if sel is not None:
            mlo, mx, size, qid, olo, ohi, w = sel
            for p in parts:
                outs.append(kb.run_fixed(kw.wj_select_first, (p.k, p.kx, p.ks, p.kt, key, x, t, mlo, mx, size, qid,
                                                              olo, ohi, w), mode, self))
        return _merge(outs)


_ = COLS
