"""Continuous quantile queries over a sliding window of the last W positions (paper 004 §2.3.2
and §4; the block summary of Lin et al., ICDE 2004), shared by every query of one (column, W).

Summary. The stream is cut into blocks of at most B consecutive seqs (and at every registration
position, so a query's start is a block boundary): B = max(1, floor(eps*W/4)), or
min(b, floor(W/8)) when larger, b the largest count below 4/eps (exact blocks, see below: each
merge of a block rewrites the merged array, so fewer merges per element). The newest (open)
block keeps its values, sorted; when it closes it is summarised once, by its values at every s-th
rank and its maximum with their exact ranks and seqs (s = max(1, floor(eps*count/2)): exact while
B < 4/eps, i.e. W < 16/eps^2), and merged into one sorted array of every block inside the window,
with the rank lower bounds of each value precomputed. A block leaves the merged array when the
window's left end passes its first seq (it is then the *partial* block: an exact one keeps its
in-window elements, dropped one by one as the window passes them, so the window is known exactly
whatever the seq gaps; of a sampled one, x elements are in the window, x in [x_min, x_max] from
its seq range and count) and is dropped when it is entirely before the window. Every query of the operator, whatever its phi, is answered from this one array: the
candidate value minimizing the worst distance to the target rank max(1, ceil(phi*N)) over the
uncertainties (partial block, sampled blocks) is found by bisection, O(log T * log B). A query
registered inside the window (its start after the window's left end) subtracts the blocks before
its start (O(1) each per probe) until the window passes its start. Kernels, bounds and the notify
deadlines: :mod:`._sliding_kernels`.

Notify queries (Algorithm 3, synchronous): each query holds a value with a deadline (the last
position it is sure to stay valid: the distance between its rank and the target moves by at most
1 per position); only the queries due are evaluated (those whose window is the summary's whole
window together, in one sweep; the others from a heap: :mod:`._sliding_notify`), which keep their value while it stays valid
long enough or take the best candidate; an update is reported only when the value changes. A
pushed value NaN is a position without element (a rejected row or a seq-gap position,
docs/contract.md): it moves the window (an expiry, no arrival) and the due queries are evaluated
there as at an element, so an update at that position keeps the value valid (null when the
window is empty there).

Costs: per element O(1) amortized plus O(T / B) for the merges (T <= W merged samples, one merge
or removal every B positions: O(4/eps) per element), and O(log T log B) per due query; space
O(W) while B < 4/eps (the blocks are kept whole), O(W/B * 2/eps) = O(8/eps^2) beyond.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import check_increasing
from . import QuantileOperator, merge_summaries
from . import _sliding_kernels as K
from . import _sliding_notify as SN
from . import _sliding_room as R
from . import _sliding_sweep as S

_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))


class Sliding(QuantileOperator):
    """Sliding-window quantiles with notify support (see the module doc)."""

    name = "sliding"

    def __init__(self, eps: float, rows: int | None) -> None:
        super().__init__(eps, rows)
        # blocks of eps*W/4 positions (the sampled partial block's uncertainty), or up to the largest
        # exact block (< 4/eps: one sample per element) and W/8: fewer merges per element (module doc)
        bx = int(4 / self.eps)
        while bx > 1 and int(self.eps * bx / 2.0) > 1:  # close_open's s = max(1, floor(eps*count/2))
            bx -= 1
        self.B = 1 if rows is None else max(1, int(self.eps * int(rows) / 4), min(bx, int(rows) // 8))
        self.meta = np.zeros(K.META_SIZE, np.int64)
        self.meta[K.M_OLO] = -1
        self.meta[K.M_N] = -1
        self.meta[K.M_W] = 0 if rows is None else int(rows)
        self.meta[K.M_B] = self.B
        self.meta[K.M_FX] = -1
        self.meta[K.M_GDEAD] = SN.BIG
        # exact blocks (one sample per element): the sweeps keep the held values' counts (:mod:`._sliding_notify`)
        self.meta[K.M_XACT] = int(rows is not None and int(self.eps * self.B / 2.0) <= 1)
        self.hv, self.hq = np.empty(64), np.zeros(64, np.int64)  # its ring of the window's elements
        cap = min(self.B + 1, 64)  # grows with the open block (a rows window may be 2^53 long)
        self.ob = np.empty((2, cap))
        self.obs = np.zeros((2, cap), np.int64)
        self.blk = np.zeros((6, 64), np.int64)
        self.sv, self.si = np.empty(256), np.zeros((2, 256), np.int64)
        self.mv, self.mi = np.empty(256), np.zeros((4, 256), np.int64)
        self.mv2, self.mi2 = np.empty(256), np.zeros((2, 256), np.int64)
        self.qf = np.zeros((3, 16))
        self.qi = np.zeros((6, 16), np.int64)
        self.heap = np.zeros(16, np.int64)
        self.mat = np.zeros(16, np.int64)  # the mature notify slots (:mod:`._sliding_notify`)
        self.slot_qid = np.full(16, -1, np.int64)
        self.nslots = 0
        self.nlive = 0
        self.out = (np.empty(256, np.int64), np.empty(256, np.int64), np.empty(256))
        self.first_seq = -1
        self._budget = 0  # elements that fit in the arrays without a capacity check (:meth:`_room`)
        self._table: tuple[np.ndarray, ...] | None = None  # lookup's query table (:meth:`lookup`)
        self.q: dict[int, tuple[float, float, int, bool, int]] = {}  # qid -> (phi, eps, start, notify, slot)

    @property
    def last_seq(self) -> int:
        return int(self.meta[K.M_N])

    @property
    def npushed(self) -> int:
        return int(self.meta[K.M_NPUSHED])

    @property
    def evaluations(self) -> int:
        return int(self.meta[K.M_EVALS])

    @property
    def bcnt(self) -> list[int]:
        """The live closed blocks' element counts."""
        return self.blk[K.B_CNT, int(self.meta[K.M_BH]):int(self.meta[K.M_BT])].tolist()

    @property
    def btup(self) -> list[np.ndarray]:
        """The live closed blocks' samples as (m, 3) tuples (v, r, r)."""
        out = []
        for b in range(int(self.meta[K.M_BH]), int(self.meta[K.M_BT])):
            off, ln = int(self.blk[K.B_OFF, b]), int(self.blk[K.B_LEN, b])
            r = self.si[0, off:off + ln].astype(np.float64)
            out.append(np.column_stack([self.sv[off:off + ln], r, r]))
        return out

    # ------------------------------------------------------------------ queries
    def _close(self) -> None:
        self._budget = 0  # a registration's block is not in the push budget: reserve again
        if not self.meta[K.M_OC]:  # nothing open (K.close_open would return): no room to make
            return
        self._room(1)
        K.close_open(self.meta, self.ob, self.obs, self.blk, self.sv, self.si, self.mv, self.mi, self.mv2, self.mi2, self.eps)

    def register(self, qid: int, phi: float, eps: float, start: int = 0, notify: bool = False) -> None:
        from ..errors import Unsupported

        if self.rows is None:
            raise Unsupported("whole-stream queries are served by the GK operators (casu, csu, su, naive)")
        qid = int(qid)
        if qid in self.q:
            raise ValueError(f"qid {qid} is already registered")
        if not (0 < phi <= 1):
            raise ValueError(f"phi must lie in (0, 1], got {phi}")
        start = int(start)
        if start >= self.last_seq:
            self._close()  # the query's start becomes a block boundary
        elif self.npushed and start >= self.first_seq:
            los = self.blk[K.B_LO, int(self.meta[K.M_BH]):int(self.meta[K.M_BT])]
            if start + 1 not in los.tolist() and not (self.meta[K.M_OC] and start + 1 == self.meta[K.M_OLO]):
                raise ValueError(f"start {start} falls inside a block already closed")
        slot = -1
        if notify:
            slot = self.nslots
            if slot >= self.qf.shape[1]:
                cap = 2 * slot
                self.qf = np.concatenate([self.qf, np.zeros((3, cap - slot))], axis=1)
                self.qi = np.concatenate([self.qi, np.zeros((6, cap - slot), np.int64)], axis=1)
                self.heap = np.concatenate([self.heap, np.zeros(cap - slot, np.int64)])
                self.mat = np.concatenate([self.mat, np.zeros(cap - slot, np.int64)])
                self.slot_qid = np.concatenate([self.slot_qid, np.full(cap - slot, -1, np.int64)])
            self.nslots += 1
            self.nlive += 1
            self.qf[:, slot] = (float(phi), max(float(eps), self.eps), math.nan)
            self.qi[:, slot] = (start, -1, -1, 1, -1, -1)
            self.slot_qid[slot] = qid
            self.meta[K.M_HS] = K.heap_push(self.heap, self.qi, int(self.meta[K.M_HS]), slot)
        self.q[qid] = (float(phi), float(eps), start, bool(notify), slot)
        self._table = None

    def terminate(self, qid: int) -> None:
        e = self.q.pop(int(qid), None)
        self._table = None
        if e is not None and e[4] >= 0:
            self.qi[K.Q_ON, e[4]] = 0
            self.nlive -= 1

    def alive(self) -> int:
        return len(self.q)

    # ------------------------------------------------------------------ capacity
    def _room(self, k: int) -> None:
        """Room for k more elements' blocks, samples and merged entries (compacting first)."""
        m = self.meta
        (self.ob, self.obs, self.blk, self.sv, self.si, self.mv, self.mi, self.mv2,
         self.mi2) = R.room(m, self.ob, self.obs, self.blk, self.sv, self.si, self.mv, self.mi, self.mv2, self.mi2, int(k))
        if m[K.M_XACT]:  # the ring: the elements from the window's left end at the last sweep on
            rp, rt = int(m[K.M_RP]), int(m[K.M_RT])
            need = rt - rp + k + 2
            if need > len(self.hv):
                cap = 1 << int(2 * need - 1).bit_length()
                idx = np.arange(rp, rt, dtype=np.int64)
                hv, hq = np.empty(cap), np.zeros(cap, np.int64)
                hv[idx & (cap - 1)] = self.hv[idx & (len(self.hv) - 1)]
                hq[idx & (cap - 1)] = self.hq[idx & (len(self.hv) - 1)]
                self.hv, self.hq = hv, hq

    # ------------------------------------------------------------------ elements
    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seqs = np.ascontiguousarray(seqs, np.int64)
        x = np.ascontiguousarray(values, np.float64)
        if len(x) != len(seqs):
            raise ValueError("values and seqs differ in length")
        if not len(x):
            return _EMPTY
        if len(x) > 1 and not (seqs[1:] > seqs[:-1]).all():
            check_increasing(seqs, None)  # raises
        if self.npushed and seqs[0] <= self.last_seq:
            check_increasing(seqs, self.last_seq)  # raises
        return self.push_checked(x, seqs)

    def push_checked(self, x: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`push` for arguments its caller has checked: non-empty contiguous float64 ``x``,
        contiguous int64 ``seqs`` increasing after the last position (a per-key group's own
        numbering, :mod:`.keyed`)."""
        if not self.npushed:
            self.first_seq = int(seqs[0])
            self.meta[K.M_FIRST] = self.first_seq
        if len(x) > self._budget:  # room for the blocks, samples and merged entries of the next elements
            self._budget = max(len(x), 128)
            self._room(self._budget)
        self._budget -= len(x)
        self.meta[K.M_NOUT] = 0
        p = 0
        while p < len(x):
            oslot, ooff, oval = self.out
            p = int(SN.push_x(x, seqs, p, self.meta, self.ob, self.obs, self.blk, self.sv, self.si, self.mv, self.mi,
                              self.mv2, self.mi2, self.eps, self.qf, self.qi, self.heap, self.mat, self.nlive, oslot,
                              ooff, oval, self.hv, self.hq))
            if p < len(x):
                k = int(self.meta[K.M_NOUT])
                cap = 2 * (len(oslot) + self.nlive + 1)
                self.out = tuple(np.concatenate([a[:k], np.empty(cap - k, a.dtype)]) for a in self.out)
        k = int(self.meta[K.M_NOUT])
        if not k:
            return _EMPTY
        q = self.slot_qid[self.out[0][:k]]
        o, v = self.out[1][:k].copy(), self.out[2][:k].copy()
        order = np.lexsort((q, o))
        return q[order], o[order], v[order]

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        qids = np.asarray(qids, np.int64)
        if not len(qids):
            return np.empty(0)
        if self._table is None or len(self._table[0]) != len(self.q):  # qid -> (phi, start, slot), sorted
            ks = np.array(sorted(self.q), np.int64)
            self._table = (ks, np.array([self.q[k][0] for k in ks.tolist()]),
                           np.array([self.q[k][2] for k in ks.tolist()], np.int64),
                           np.array([self.q[k][4] if self.q[k][3] else -1 for k in ks.tolist()], np.int64))
        ks, tphi, tstart, tslot = self._table
        pos = np.minimum(np.searchsorted(ks, qids), max(len(ks) - 1, 0))
        if not len(ks) or (ks[pos] != qids).any():
            missing = qids[np.flatnonzero(~np.isin(qids, ks))[0]]
            raise KeyError(f"qid {int(missing)} is not registered")
        out = np.full(len(qids), np.nan)
        slot = tslot[pos]
        # a notify query answers its maintained value; beyond the last position pushed (a seq gap,
        # or past the end) the window at n, as without notify (the positions up to n are pushed,
        # as NaN, with the next rows)
        held = (slot >= 0) & (n <= self.last_seq)
        out[held] = self.qf[K.F_LAST, slot[held]]
        ask = np.flatnonzero(~held)
        if len(ask):
            phi, start = tphi[pos[ask]], tstart[pos[ask]]
            res = np.empty(len(ask))
            n = max(int(n), self.last_seq)
            meta, ob, obs, blk, mv, mi = self.meta, self.ob, self.obs, self.blk, self.mv, self.mi
            if n > self.last_seq:  # the window at n, on a copy (the positions before n are pushed later)
                meta, ob, obs, blk, mv, mi = (a.copy() for a in (meta, ob, obs, blk, mv, mi))
                mv2 = self.mv2.copy()
                K.expire(meta, ob, obs, blk, self.sv, self.si, mv, mi, mv2, n - int(self.rows) + 1)
            else:
                mv2 = self.mv2
            lqs = np.maximum(start + 1, n - int(self.rows) + 1)
            if lqs.min() == lqs.max():  # one window: by phi (the sweep of S.lookup_sorted)
                order = np.argsort(phi, kind="stable")
            else:
                order = np.lexsort((phi, lqs))
            S.lookup_sorted(meta, ob, obs, blk, self.sv, self.si, mv, mi, mv2, phi, lqs, order, n, res)
            out[ask] = res
        return out

    def summary(self, qid: int, n: int) -> np.ndarray:
        """Merged tuples of the query's window (partial block left out): (m, 3) rows (v, r-, r+)."""
        start = self.q[int(qid)][2]
        lq = max(start + 1, int(n) - int(self.rows) + 1)
        je, open_in, front_in = K.window(self.meta, self.blk, lq)[:3]
        parts = self.btup[je - int(self.meta[K.M_BH]):]
        if open_in:
            parts.append(self.ob[0, :int(self.meta[K.M_OC])].copy())
        if front_in:
            parts.append(self.ob[1, :int(self.meta[K.M_PC])].copy())
        return merge_summaries(parts)

    # ------------------------------------------------------------------ state
    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        # the used prefixes only (the capacity reserved for the next elements is not state: a
        # snapshot of a per-key group holds one summary per key)
        bt, st, t = int(self.meta[K.M_BT]), int(self.meta[K.M_ST]), int(self.meta[K.M_T])
        return {
            "eps": self.eps, "rows": self.rows, "meta": self.meta.copy(), "ob": self.ob.copy(), "obs": self.obs.copy(),
            "blk": self.blk[:, :bt].copy(), "sv": self.sv[:st].copy(), "si": self.si[:, :st].copy(),
            "mv": self.mv[:t].copy(), "mi": self.mi[:, :t].copy(),
            "qf": self.qf.copy(), "qi": self.qi.copy(), "heap": self.heap.copy(), "mat": self.mat.copy(), "slot_qid": self.slot_qid.copy(),
            "nslots": self.nslots, "nlive": self.nlive, "first_seq": self.first_seq,
            "ring_v": self._ring()[0], "ring_q": self._ring()[1],
            "qids": np.array(qs, np.int64), "phi": np.array([self.q[q][0] for q in qs]),
            "eps_q": np.array([self.q[q][1] for q in qs]), "start": np.array([self.q[q][2] for q in qs], np.int64),
            "notify": np.array([self.q[q][3] for q in qs], bool), "slot": np.array([self.q[q][4] for q in qs], np.int64),
        }

    def _ring(self) -> tuple[np.ndarray, np.ndarray]:
        """The ring's live part (from the window's left end at the last sweep), in order."""
        idx = np.arange(int(self.meta[K.M_RP]), int(self.meta[K.M_RT]), dtype=np.int64) & (len(self.hv) - 1)
        return self.hv[idx], self.hq[idx]

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> Sliding:
        if "meta" not in s:
            raise ValueError("this snapshot holds the previous rows-window quantile summary (buckets), which this "
                             "version cannot restore: replay the stream from its start")
        op = cls(float(s["eps"]), s["rows"])
        for k in ("meta", "ob", "obs", "blk", "sv", "si", "mv", "mi", "qf", "qi", "heap", "slot_qid"):
            setattr(op, k, np.array(s[k]))
        old = len(op.meta)
        op.meta = np.concatenate([op.meta, np.zeros(K.META_SIZE - old, np.int64)])  # newer counters
        op.mat = np.array(s["mat"]) if "mat" in s else np.zeros(len(op.heap), np.int64)
        if old <= K.M_FIRST:  # a snapshot before the sweeps: its notify slots are all on the heap
            op.meta[K.M_FIRST], op.meta[K.M_GDEAD], op.meta[K.M_NMAT] = int(s["first_seq"]), SN.BIG, 0
        op.qi = np.vstack([op.qi, np.full((6 - op.qi.shape[0], op.qi.shape[1]), -1, np.int64)])
        op.mv2, op.mi2 = np.empty(len(op.mv)), np.zeros((2, len(op.mv)), np.int64)
        K._ranks(op.mv, op.mi, int(op.meta[K.M_T]), op.mv2)
        op.nslots, op.nlive, op.first_seq = int(s["nslots"]), int(s["nlive"]), int(s["first_seq"])
        if "ring_v" in s and op.meta[K.M_XACT]:  # its indices from 0 on
            hv, hq = np.asarray(s["ring_v"], np.float64), np.asarray(s["ring_q"], np.int64)
            cap = 1 << int(2 * len(hv) + 1).bit_length()
            op.hv, op.hq = np.empty(cap), np.zeros(cap, np.int64)
            op.hv[:len(hv)], op.hq[:len(hv)] = hv, hq
            op.meta[K.M_RT:K.M_RA + 1] -= op.meta[K.M_RP]
        else:  # a snapshot without the ring (or kept counts): the counts are searched at each evaluation
            op.meta[K.M_XACT] = 0
        for q, phi, e, st, nt, sl in zip(s["qids"].tolist(), s["phi"].tolist(), s["eps_q"].tolist(),
                                         s["start"].tolist(), s["notify"].tolist(), s["slot"].tolist(), strict=True):
            op.q[q] = (phi, e, st, bool(nt), sl)
        return op
