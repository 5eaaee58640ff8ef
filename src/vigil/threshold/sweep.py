"""Sweep: range thresholding for large batches, exact (vigil's batch-aware algorithm, not in the paper).

Paper 000 (Qiao, Gan, Tao, SIGMOD 2016) processes elements one at a time: its DT (Theorem 1)
costs O(log^(d+1) m) per element and its §3.1 Baseline O(m). When elements arrive in batches of
B (Spark micro-batches), a batch can instead be treated offline, which escapes the quadratic
trap of §3.1 by batching alone: per push,

1. every alive query's weight inside the batch: sort the batch by x and take prefix sums of the
   weights; 1D: two binary searches per query; 2D: one offline sweep over x with a Fenwick tree
   over the elements' y-ranks, two Fenwick range sums per query;
2. for the queries whose weight in the batch reaches their remaining threshold, the exact element
   at which they mature, by halving the batch in time (a wavelet tree over time built only where
   candidates are; kernels in ``_sweep_kernels``);
3. every other alive query keeps its exact remaining threshold ``tau - W``.

Re-arming queries (``repeat``): 1D, the time halving of step 2 is built in full for the
sub-batch (O(B log B) time and space, sub-batches of ``SUB_MIN`` elements while such queries are
alive) and each maturity of a re-arming candidate is one O(log B) descent for an absolute target
(the weight up to its previous maturity plus its threshold: ``_sweep_rearm.rearm_1d``); 2D,
the elements inside a re-arming candidate's rectangle are walked in time order (O(E log E) for E
of them: ``rearm_walk``).

A push is processed in consecutive sub-batches of max(2**16, 8 m_alive) elements, so the
per-query term never dominates and a push whose queries have all matured stops early.

Bounds per push of B elements with m alive queries and k maturing ones:
1D O(B log B + m log B + k log B) time; 2D O((B + m) log B + (B + k) log^2 B); O(B + m) space
(queries are stored exactly as in ``scan``; no index: register O(1) amortised per query,
terminate O(1)). d >= 3 is handled by the ``scan`` kernels (O(B m), exact): this operator is
about d = 1, 2.

Exactness: all sums are int64 and exact while the batch's total weight is < 2**62; a push whose
weights sum beyond 2**60 is cut into consecutive sub-batches below that bound
(``_limits.weight_cuts``; each weight is at most 2**53 under the contract, so outputs are
unchanged).
Weights and thresholds up to 2**53 (the contract's range) are therefore exact however many
elements arrive. Output, state layout and registration semantics are those of ``scan`` (and so of
the oracle): closed ranges, +-inf bounds, NaN coordinates match nothing, (qid, offset) sorted by
(offset, qid), re-registering an alive qid restarts it.
"""

from __future__ import annotations

import numpy as np

from . import _sweep_kernels as K
from . import _sweep_rearm as R
from ._limits import weight_cuts
from .stabbing import Scan, _sorted_out

_EMPTY_I = np.zeros(0, np.int64)
#: smallest sub-batch (elements) a push is cut into
SUB_MIN = 1 << 16


class Sweep(Scan):
    """Batch sweep (see module docstring): exact, O((B + m) log B) per push in 1D."""

    name = "sweep"

    def push(self, points, weights):
        pts, w = self._prep_points(points, weights)
        n = w.shape[0]
        if n == 0 or self.n_alive == 0:
            return _EMPTY_I.copy(), _EMPTY_I.copy()
        if self.dim > 2:
            return super().push(pts, w)
        bad = np.isnan(pts).any(axis=1)
        if bad.any():  # a NaN coordinate lies in no range
            w = w.copy()
            w[bad] = 0
        slots, offs = [], []
        # re-arming queries alive: sub-batches of SUB_MIN (the 1D halving is kept in full)
        rearming = bool(self.rep[: self.n][self.live[: self.n]].any())
        for a, b in weight_cuts(w):
            c0 = a
            while c0 < b and self.n_alive > 0:
                # sub-batches of >= 8 x the alive queries: the per-query term stays below the
                # per-element one, and a batch whose queries all mature early stops early
                c1 = min(b, c0 + (SUB_MIN if rearming else max(SUB_MIN, 8 * self.n_alive)))
                p, o = self._push_part(pts[c0:c1], np.ascontiguousarray(w[c0:c1]))
                if p.shape[0]:
                    slots.append(p)
                    offs.append(o + c0)
                    once = p[self.rep[p] == 0]  # one-shot queries die, re-arming ones stay
                    self.live[once] = False
                    self.n_alive -= once.shape[0]
                c0 = c1
        if not slots:
            return _EMPTY_I.copy(), _EMPTY_I.copy()
        pos = np.concatenate(slots)
        qids = self.qid[pos]
        self.ids.pop(qids[self.rep[pos] == 0])
        q, o = _sorted_out([qids], [np.concatenate(offs)])
        self._maybe_compact()
        return q, o

    def _push_part(self, pts: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One sub-batch: (matured slots, offsets in the sub-batch); updates rem."""
        B = w.shape[0]
        x = np.ascontiguousarray(pts[:, 0])
        order = np.argsort(x, kind="stable")
        xs = x[order]
        ws = w[order]
        cap = self.n
        cand = np.empty(cap, np.int64)
        ca = np.empty(cap, np.int64)
        cb = np.empty(cap, np.int64)
        if self.dim == 1:
            P = np.zeros(B + 1, np.int64)
            np.cumsum(ws, out=P[1:])
            k = K.weights_1d(self.lo, self.hi, self.rem, self.n, xs, P, cand, ca, cb)
            cand, ca, cb = cand[:k], ca[:k], cb[:k]
            rq = self.rep[cand] > 0
            rp = ro = _EMPTY_I
            if rq.any():  # re-arming candidates: every maturity by a descent of the full halving
                r = np.flatnonzero(rq)
                rp, ro = R.rearm_1d(order, x, w, P, self.lo, self.hi, self.rem, self.rep, cand[r], ca[r], cb[r],
                                    r.shape[0])
                keep = ~rq
                cand, ca, cb = cand[keep], ca[keep], cb[keep]
            k = cand.shape[0]
            out = np.empty(k, np.int64)
            if k:
                K.locate_1d(order, x, w, self.lo, self.hi, self.rem, cand, ca, cb, k, out)
            return np.concatenate([cand, rp]), np.concatenate([out, ro])
        y = np.ascontiguousarray(pts[:, 1])
        yorder = np.argsort(y, kind="stable")
        yrank = np.empty(B, np.int64)
        yrank[yorder] = np.arange(B, dtype=np.int64)
        cya = np.empty(cap, np.int64)
        cyb = np.empty(cap, np.int64)
        k = K.weights_2d(self.lo, self.hi, self.rem, self.n, xs, yrank[order], ws, y[yorder],
                         cand, ca, cb, cya, cyb)
        cand, ca, cb, rp, ro, cya, cyb = self._rearm(order, yrank, w, cand[:k], ca[:k], cb[:k], cya[:k], cyb[:k],
                                                     True)
        k = cand.shape[0]
        out = np.empty(k, np.int64)
        if k:
            K.locate_2d(order, x, y, w, yrank, self.lo, self.hi, self.rem, cand, ca, cb, cya, cyb, k, out)
        return np.concatenate([cand, rp]), np.concatenate([out, ro])

    def _rearm(self, order, yrank, w, cand, ca, cb, cya, cyb, use_y):
        """2D: split the candidates: re-arming ones are walked through their elements in time
        order (``rearm_walk``: every crossing); returns the one-shot candidates (for
        ``locate_2d``) and the re-arming ones' maturities (slots, offsets)."""
        rq = self.rep[cand] > 0
        if not rq.any():
            rp = ro = _EMPTY_I
        else:
            r = np.flatnonzero(rq)
            rp, ro = R.rearm_walk(order, yrank, w, self.rem, self.rep, cand[r], ca[r], cb[r], cya[r], cyb[r],
                                  r.shape[0], use_y)
            keep = ~rq
            cand, ca, cb, cya, cyb = cand[keep], ca[keep], cb[keep], cya[keep], cyb[keep]
        cand, ca, cb = np.ascontiguousarray(cand), np.ascontiguousarray(ca), np.ascontiguousarray(cb)
        return cand, ca, cb, rp, ro, np.ascontiguousarray(cya), np.ascontiguousarray(cyb)
