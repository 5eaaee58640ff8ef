"""Whole-stream quantile queries registered at many stream positions, on one shared structure
(paper 004 §2.4's queries over "the elements after the registration", docs/contract.md; the
suffix counts of Lin et al.'s n-of-N model, ICDE 2004, §3, answered from a binary tree of
block summaries instead of one summary per registration position).

Structure. Every element is inserted once, into the open buffer (exact, sorted, at most ``BMAX``
elements), merged every ``BMAX`` elements into the open summary (pruned to gap 2*delta*c, c its
count). A registration at a new position closes the open part into a *segment* summary, so every
query's start is a segment boundary; segments are the leaves of a binary tree whose complete
aligned nodes (2^L consecutive segments) are built, when their last segment closes, as the
combination of their two children pruned to gap 2*delta*c. Since combining adds gaps and the
children's gaps are at most 2*delta times their counts, no pruning compounds: every summary of
the tree has gap <= 2*delta*(its count) and at most about 1/delta values, whatever its depth
(:mod:`._suffix_kernels`). delta = eps/8 (eps: the operator's summary epsilon).

Queries. A query registered when K_q segments were closed is answered over segments [K_q, K)
(<= 2 log2 K tree nodes), the open summary and the open buffer: its element count N is exact, its
rank uncertainty at most 2*delta*N = eps*N/4, and the best candidate (a value of these summaries,
hence an element after its registration) is within eps*N/8 + 1 of the target rank, so within
e*N + 1 for its served precision e = max(eps_q, eps) from its first element on. A lookup of a
plain query answers its previous answer while that still meets the bound (one check of its
counts, as a held notify value is checked), else searches: O(log K) bisection steps of
O(log K log(1/delta)) each. Notify queries hold a value with a
deadline (the contract's invariant holds until it: :mod:`._suffix_kernels`), in buckets by
deadline: per element O(1) amortized for the insertion plus the re-evaluations due; a query's
first ``Y`` elements are served exactly from its position's sorted window
(:mod:`._suffix_notify`).

Costs and space. Per element: one sorted insertion into a buffer of <= ``BMAX`` values and, every
``BMAX`` elements, one merge with the open summary (O(1/delta)). Per registration at a new
position: one segment and O(1) amortized tree nodes, O(1/delta) each. Space O(R/delta) for R
registration positions since the structure was last emptied (it is, when its last query ends).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _suffix_kernels as K
from . import _suffix_notify as N

_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
BMAX = 256
RATIO = 0.125  # delta = eps * RATIO (module doc)


def push_updates(n: int, step: Callable[[int], int], owner: Any, m_nout: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Python side of a notify kernel's push, shared by the notify structures
    (:class:`Suffix`; :class:`.sliding.Sliding` runs the same loop). ``step(p)`` runs the kernel
    on the elements from p on, writing its updates (slot, offset, value) to ``owner.out`` from
    index ``owner.meta[m_nout]`` (reset here), and returns the element it reached: it stops early
    when the update buffers could overflow, and they grow here (room for one update per live
    notify query, ``owner.nlive``, per element). Returns the updates (qids through
    ``owner.slot_qid``, offsets, values) in (offset, qid) order."""
    owner.meta[m_nout] = 0
    p = 0
    while p < n:
        p = step(p)
        k = int(owner.meta[m_nout])
        if p < n and k + owner.nlive + 1 > len(owner.out[0]):
            cap = 2 * (len(owner.out[0]) + owner.nlive + 1)
            owner.out = tuple(np.concatenate([a[:k], np.empty(cap - k, a.dtype)]) for a in owner.out)
    k = int(owner.meta[m_nout])
    if not k:
        return _EMPTY
    q = owner.slot_qid[owner.out[0][:k]]
    o, v = owner.out[1][:k].copy(), owner.out[2][:k].copy()
    order = np.lexsort((q, o))
    return q[order], o[order], v[order]


class Suffix:
    """Suffix counts over the segments closed at registrations (see the module doc)."""

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)
        self.delta = self.eps * RATIO
        self.meta = np.zeros(K.META_SIZE, np.int64)
        self.ob = np.empty(BMAX)
        self.oscap = int(4.0 / self.delta) + 4 * BMAX + 16
        self.osv, self.osa, self.osb = np.empty(self.oscap), np.zeros(self.oscap, np.int64), np.zeros(self.oscap, np.int64)
        tc = self.oscap + 2 * BMAX + 16
        self.tv, self.ta, self.tb = np.empty(tc), np.zeros(tc, np.int64), np.zeros(tc, np.int64)
        self.pv, self.pa, self.pb = np.empty(1024), np.zeros(1024, np.int64), np.zeros(1024, np.int64)
        self.sm = np.zeros((3, 64), np.int64)
        self.nodes = np.full((K.MAXL, 16), -1, np.int64)
        self.qf = np.zeros((4, 16))
        self.qi = np.zeros((4, 16), np.int64)
        self.qc = np.zeros((3, 16), np.int64)
        self.heap = np.zeros(16, np.int64)  # per slot: the next slot in its deadline bucket (:mod:`._suffix_notify`)
        self.bh = np.full(N.B, -1, np.int64)  # deadline buckets' first slots
        self.slot_qid = np.full(16, -1, np.int64)
        self.nslots = 0
        self.nlive = 0
        self.out = (np.empty(256, np.int64), np.empty(256, np.int64), np.empty(256))
        # young notify queries, served exactly from their positions' sorted windows (:mod:`._suffix_notify`)
        self.yq = np.zeros((4, 4), np.int64)
        self.yb = np.zeros((2, 4), np.int64)
        self.yv = np.empty((4, N.Y))
        # qid -> (phi, e, K_q, N at registration, slot, notify): every query has a slot (a plain
        # query's holds its last answer, :meth:`lookup`); -1 only in snapshots from before that
        self.q: dict[int, tuple[float, float, int, int, int, bool]] = {}
        self._table: tuple[np.ndarray, ...] | None = None  # lookup's query table (:meth:`lookup`)

    # ------------------------------------------------------------------ segments
    def _pool(self, need: int) -> None:
        pt = int(self.meta[K.M_PT])
        if pt + need > len(self.pv):
            cap = max(2 * len(self.pv), pt + need)
            for k in ("pv", "pa", "pb"):
                a = getattr(self, k)
                b = np.empty(cap, a.dtype)
                b[:pt] = a[:pt]
                setattr(self, k, b)

    def _close(self) -> None:
        """Close the open part into a segment (its start becomes a boundary) and build the tree
        nodes it completes."""
        m = self.meta
        if m[K.M_OC] == 0 and m[K.M_OSC] == 0:
            return
        kk = int(m[K.M_K])
        if kk + 1 >= self.nodes.shape[1]:
            self.nodes = np.concatenate([self.nodes, np.full_like(self.nodes, -1)], axis=1)
        if int(m[K.M_NS]) + K.MAXL + 1 > self.sm.shape[1]:
            self.sm = np.concatenate([self.sm, np.zeros_like(self.sm)], axis=1)
        self._pool(int(m[K.M_OSN]) + BMAX + 2 * int(1 / self.delta) + 8)
        lev = K.close_segment(m, self.ob, self.osv, self.osa, self.osb, self.tv, self.ta, self.tb, self.pv, self.pa,
                              self.pb, self.sm, self.nodes, self.delta)
        while lev:
            self._pool(len(self.pv))
            lev = K.build_levels(m, self.pv, self.pa, self.pb, self.sm, self.nodes, self.delta, lev)

    # ------------------------------------------------------------------ queries
    def register(self, qid: int, phi: float, e: float, notify: bool) -> None:
        """A query over the elements pushed from now on, served at precision e (>= eps)."""
        self._close()
        slot = self.nslots
        if slot >= self.qf.shape[1]:
            cap = 2 * slot
            self.qf = np.concatenate([self.qf, np.zeros((4, cap - slot))], axis=1)
            self.qi = np.concatenate([self.qi, np.zeros((4, cap - slot), np.int64)], axis=1)
            self.qc = np.concatenate([self.qc, np.zeros((3, cap - slot), np.int64)], axis=1)
            self.heap = np.concatenate([self.heap, np.zeros(cap - slot, np.int64)])
            self.slot_qid = np.concatenate([self.slot_qid, np.full(cap - slot, -1, np.int64)])
        self.nslots += 1
        ne = int(self.meta[K.M_NE])
        self.qf[:, slot] = (float(phi), float(e), np.nan, np.nan)
        self.qi[:, slot] = (int(self.meta[K.M_K]), ne, ne, 1 if notify else 0)
        self.slot_qid[slot] = qid
        if notify:
            self.nlive += 1
            m = self.meta
            if m[K.M_NYQ] >= self.yq.shape[1]:
                self.yq = np.concatenate([self.yq, np.zeros_like(self.yq)], axis=1)
            if m[K.M_NYB] >= self.yb.shape[1]:
                self.yb = np.concatenate([self.yb, np.zeros_like(self.yb)], axis=1)
                self.yv = np.concatenate([self.yv, np.empty_like(self.yv)])
            N.young_add(m, self.yq, self.yb, self.yv, slot, ne)
        self.q[int(qid)] = (float(phi), float(e), int(self.meta[K.M_K]), ne, slot, bool(notify))
        self._table = None

    def terminate(self, qid: int) -> None:
        e = self.q.pop(int(qid), None)
        self._table = None
        if e is not None and e[5]:
            self.qi[K.Q_ON, e[4]] = 0
            self.nlive -= 1
        if not self.q:  # no query left: start afresh (frees the segments)
            self.__init__(self.eps)

    def alive(self) -> int:
        return len(self.q)

    @property
    def evaluations(self) -> int:
        return int(self.meta[K.M_EVALS])

    def size(self) -> int:
        """Values held (tree summaries, open summary and buffer)."""
        return int(self.meta[K.M_PT] + self.meta[K.M_OSN] + self.meta[K.M_OC])

    # ------------------------------------------------------------------ elements
    def push(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Insert x (checked float64, no NaN); returns the notify updates (qids, offsets, values)
        in (offset, qid) order."""
        return push_updates(len(x), lambda p: self._step(x, p), self, K.M_NOUT)

    def _step(self, x: np.ndarray, p: int) -> int:
        if 2 * (int(self.meta[K.M_OSN]) + BMAX + 2) > self.oscap:  # (it stays near 1/delta values)
            self._grow_open()
        oslot, ooff, oval = self.out
        return int(N.push(x, p, self.meta, self.pv, self.pa, self.pb, self.sm, self.nodes, self.osv, self.osa,
                          self.osb, self.ob, self.tv, self.ta, self.tb, self.delta, self.qf, self.qi, self.qc, self.bh,
                          self.heap, self.nlive, oslot, ooff, oval, self.yq, self.yb, self.yv))

    def _grow_open(self) -> None:
        self.oscap *= 2
        for k in ("osv", "osa", "osb"):
            a = getattr(self, k)
            b = np.zeros(self.oscap, a.dtype)
            b[:len(a)] = a
            setattr(self, k, b)
        tc = self.oscap + 2 * BMAX + 16
        self.tv, self.ta, self.tb = np.empty(tc), np.zeros(tc, np.int64), np.zeros(tc, np.int64)

    def lookup(self, qids: np.ndarray) -> np.ndarray:
        qids = np.asarray(qids, np.int64)
        if self._table is None:  # qid -> (phi, K_q, N at registration, slot, notify), by qid
            ks = np.array(sorted(self.q), np.int64)
            rows = np.array([self.q[k] for k in ks.tolist()], np.float64).reshape(len(ks), 6)
            self._table = (ks, rows[:, 0].copy(), rows[:, 2].astype(np.int64), rows[:, 3].astype(np.int64),
                           rows[:, 4].astype(np.int64), rows[:, 5] != 0)
        ks, tphi, tk, ts0, tslot, tnotify = self._table
        pos = np.minimum(np.searchsorted(ks, qids), max(len(ks) - 1, 0))
        if len(qids) and (not len(ks) or (ks[pos] != qids).any()):
            raise KeyError(int(qids[np.flatnonzero(~np.isin(qids, ks))[0]]))
        out = np.full(len(qids), np.nan)
        slot = tslot[pos]
        held = tnotify[pos]
        out[held] = self.qf[K.F_LAST, slot[held]]
        kept = np.flatnonzero(~held & (slot >= 0))  # a plain query: its last answer while still valid
        if len(kept):
            res = np.empty(len(kept))
            K.lookup_kept(self.meta, self.pv, self.pa, self.pb, self.sm, self.nodes, self.osv, self.osa, self.osb,
                          self.ob, self.qf, self.qi, self.qc, slot[kept], res)
            out[kept] = res
        ask = np.flatnonzero(~held & (slot < 0))  # (a query restored from an older snapshot)
        if len(ask):
            p = pos[ask]
            res = np.empty(len(ask))
            K.lookup(self.meta, self.pv, self.pa, self.pb, self.sm, self.nodes, self.osv, self.osa, self.osb, self.ob,
                     tphi[p], tk[p], ts0[p], res)
            out[ask] = res
        return out

    def summary(self, qid: int) -> np.ndarray:
        """The query's window as one summary: float64 (m, 3) rows (v, r-, r+) (r- a lower bound
        of #<=v, r+ - 1 an upper bound of #<v; the last row's r+ is the count)."""
        kq = self.q[int(qid)][2]
        parts = np.empty(2 * K.MAXL + 2, np.int64)
        npt = int(K._parts(self.meta, self.nodes, kq, parts))
        m = self.meta
        pieces = [(self.pv[o:o + ln], self.pa[o:o + ln], self.pb[o:o + ln], c)
                  for o, ln, c in (self.sm[:, s].tolist() for s in parts[:npt].tolist())]
        n = int(m[K.M_OSN])
        pieces.append((self.osv[:n], self.osa[:n], self.osb[:n], int(m[K.M_OSC])))
        K.sort_open(m, self.ob)
        c = int(m[K.M_OC])
        ev, ea, eb = np.empty(c), np.zeros(c, np.int64), np.zeros(c, np.int64)
        ln = K.exact(self.ob, c, ev, ea, eb, 0)
        pieces.append((ev[:ln], ea[:ln], eb[:ln], c))
        v, a, b, cnt = np.empty(0), np.zeros(0, np.int64), np.zeros(0, np.int64), 0
        for pv, pa, pb, pc in pieces:
            size = len(v) + len(pv)
            ov, oa, ob_ = np.empty(size), np.zeros(size, np.int64), np.zeros(size, np.int64)
            k = K.combine(v, a, b, 0, len(v), cnt, pv, pa, pb, 0, len(pv), pc, ov, oa, ob_, 0, 0.0)
            v, a, b, cnt = ov[:k], oa[:k], ob_[:k], cnt + pc
        hi = (b + 1).astype(np.float64)
        if len(hi):
            hi[-1] = cnt
        return np.column_stack([v, a.astype(np.float64), hi])

    # ------------------------------------------------------------------ state
    _ARRAYS = ("meta", "ob", "osv", "osa", "osb", "sm", "nodes", "qf", "qi", "qc", "heap", "slot_qid", "yq", "yb", "yv", "bh")

    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        pt = int(self.meta[K.M_PT])
        s = {k: getattr(self, k).copy() for k in self._ARRAYS}
        s.update(eps=self.eps, oscap=self.oscap, pv=self.pv[:pt].copy(), pa=self.pa[:pt].copy(),
                 pb=self.pb[:pt].copy(), nslots=self.nslots, nlive=self.nlive,
                 qids=np.array(qs, np.int64), q=np.array([self.q[q] for q in qs], np.float64).reshape(len(qs), 6))
        return s

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> Suffix:
        op = cls(float(s["eps"]))
        for k in cls._ARRAYS:
            if k in s:  # (snapshots from before the young queries have none: their notify queries are on the heap)
                setattr(op, k, np.array(s[k]))
        if len(op.meta) < K.META_SIZE:
            op.meta = np.concatenate([op.meta, np.zeros(K.META_SIZE - len(op.meta), np.int64)])
        if "bh" not in s:  # (a snapshot whose notify queries are on a deadline heap: into buckets)
            slots = op.heap[:int(op.meta[K.M_HS])].copy()
            op.heap[:] = -1
            for sl in slots.tolist():
                N.enqueue(op.bh, op.heap, op.qi, sl, int(op.meta[K.M_NE]))
        op.oscap = int(s["oscap"])
        tc = op.oscap + 2 * BMAX + 16
        op.tv, op.ta, op.tb = np.empty(tc), np.zeros(tc, np.int64), np.zeros(tc, np.int64)
        pt = len(s["pv"])
        op.pv, op.pa, op.pb = np.empty(max(pt, 1024)), np.zeros(max(pt, 1024), np.int64), np.zeros(max(pt, 1024), np.int64)
        op.pv[:pt], op.pa[:pt], op.pb[:pt] = s["pv"], s["pa"], s["pb"]
        op.nslots, op.nlive = int(s["nslots"]), int(s["nlive"])
        for q, row in zip(s["qids"].tolist(), np.asarray(s["q"]).tolist(), strict=True):
            notify = bool(row[5]) if len(row) > 5 else row[4] >= 0  # (5 columns: slots were notify queries')
            op.q[q] = (float(row[0]), float(row[1]), int(row[2]), int(row[3]), int(row[4]), notify)
        return op
