"""L-INT, landmark intervals (paper 002, §3.1.2, Definition 3.2, Fig. 5, Theorems 3.3-3.4, and
the general case: operators partitioned so that W_max/W_min <= c in each part, gamma parts).

Queries are partitioned by window width W = NL - NR into the classes [c^k, c^(k+1)) (c an integer
>= 2, the constructor's ``c``; 2 for ``--algo windows=lint``). A part is created when its first
query registers, so gamma <= log_c N_max + 1, and fewer when widths cluster (:attr:`LInt.gamma`).
Each part is the special-case algorithm of Fig. 5 with W_min = c^k, W_max = c^(k+1)-1 (so
W_max/W_min < c): landmarks every W_min positions, the aggregates of the intervals that end just
before a landmark (one per position) and of those that begin at a landmark (min(c*W_min, capacity) per
landmark);
every window of the part is the union of at most two of them (Theorem 3.3). A larger c means fewer
parts (less update work) but c*N_max slots per part. Kernels in ``_lint_kernels``.

Bounds (Theorem 3.4 and its extension): UPDATE O(c gamma) amortized, LOOKUP O(1) (+ the window's
position search, O(1) without seq gaps), space O(c gamma N_max). A window cut to fewer than W_min
elements (stream start, registration, rejected rows) may hold no landmark and is scanned: O(W_min).
The paper's O(N_max) space refinement for (approximately) suffix windows is not implemented.

Serves SUM, COUNT, AVG, MIN, MAX over rows windows, suffix and historical. Time windows are
rejected: landmarks are spaced by the narrowest window's width in tuples, and a time window has no
fixed width in tuples (the paper defers time windows to its full version).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._lint_kernels import lint_lookup, lint_push
from ._window_base import RingOperator, _grow, _pow2


class LInt(RingOperator):
    name = "lint"
    aggs = ("sum", "count", "avg", "min", "max")
    time_ok = ("lint serves rows windows only: its landmarks are spaced by the narrowest window's width "
               "in tuples, which a time window does not have")

    def __init__(self, agg: str, time_based: bool, c: int = 2) -> None:
        if int(c) != c or c < 2:
            raise ValueError(f"L-INT's width ratio c must be an integer >= 2, got {c!r}")
        self.c = int(c)  # W_max / W_min < c in every part
        self.part_w: list[int] = []  # W_min of each part
        self.q_part = np.zeros(0, np.int64)
        super().__init__(agg, time_based)

    def _layout(self, cap: int) -> None:
        self.pw = np.array(self.part_w, np.int64)
        self.pnl = np.array([_pow2(cap // w + self.c + 2) for w in self.part_w], np.int64)
        # a landmark's row: f(L .. L+d) for d < min(cw, cap): a window read lies in the last cap/2
        # positions, so d = b - L < cap/2 as well as < cw (a part wider than the elements held
        # needs no cw-slot rows: memory follows the capacity, not the declared width)
        self.prw = np.minimum(self.c * self.pw, cap)
        sizes = self.pnl * self.prw
        self.poff = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else np.zeros(0, np.int64)
        g = len(self.part_w)
        total = int(sizes.sum()) if len(sizes) else 0
        self.sufv = np.zeros(max(1, g * cap))
        self.sufc = np.zeros(max(1, g * cap))
        self.prev = np.zeros(max(1, total))
        self.prec = np.zeros(max(1, total))

    def _alloc(self, cap: int) -> None:
        self._layout(cap)

    def _struct_nbytes(self) -> int:
        return self.sufv.nbytes + self.sufc.nbytes + self.prev.nbytes + self.prec.nbytes

    def part_of(self, width: int) -> int:
        """W_min of the part that serves windows of ``width`` elements: the largest power of c
        <= width (the part serves widths [W_min, c W_min - 1])."""
        w = 1
        while w * self.c <= width:
            w *= self.c
        return w

    @property
    def gamma(self) -> int:
        """Number of parts (instances of the special-case algorithm, §3.1.2)."""
        return len(self.part_w)

    def _check_query(self, spec: Any) -> None:
        left, right = spec.rows
        w = self.part_of(int(left - right))
        if w not in self.part_w:  # a new part: fresh arrays for it, the others keep their content
            old = (self.sufv, self.sufc, self.prev, self.prec, self.poff, self.pnl, self.pw, len(self.part_w))
            self.part_w.append(w)
            self._layout(self.cap)
            sv, sc, pv, pc, poff, pnl, pw, g = old
            if g:
                self.sufv[: g * self.cap] = sv[: g * self.cap]
                self.sufc[: g * self.cap] = sc[: g * self.cap]
                end = int(poff[-1] + pnl[-1] * min(self.c * pw[-1], self.cap))
                self.prev[:end] = pv[:end]
                self.prec[:end] = pc[:end]
        self._pending_part = self.part_w.index(w)

    def _registered(self, qid: int) -> None:
        self.q_part = _grow(self.q_part, qid + 1, 0)
        if getattr(self, "_pending_part", None) is not None:
            self.q_part[qid] = self._pending_part
            self._pending_part = None

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        if self.part_w:
            lint_push(self.code, self.c, self.pw, self.pnl, self.prw, self.poff, len(self.part_w), self.sufv, self.sufc, self.prev,
                      self.prec, self.vals, self.mask, pos0, vals)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        lint_lookup(qids, n, self.q_part, self.code, self.c, self.pw, self.pnl, self.prw, self.poff, self.sufv, self.sufc, self.prev,
                    self.prec, self.q_left, self.q_right, self.q_start, self.seqs, self.times, self.vals, self.mask,
                    self.V, self.m, self.last_seq, out)

    def state(self) -> dict[str, Any]:
        st = super().state()
        st["part_w"] = np.array(self.part_w, np.int64)
        st["c"] = self.c
        st["q_part"] = self.q_part[st["qids"]] if len(st["qids"]) else np.zeros(0, np.int64)
        return st

    @classmethod
    def from_state(cls, st: dict[str, Any]) -> LInt:
        op = super().from_state(st)  # rings restored; no part yet, so nothing folded
        op.c = int(st.get("c", 2))
        op.part_w = [int(w) for w in st["part_w"]]
        ids = np.asarray(st["qids"], np.int64)
        op.q_part = np.zeros(int(ids.max()) + 1 if len(ids) else 0, np.int64)
        op.q_part[ids] = st["q_part"]
        op._rebuild(op.cap, op.m - op.V + 1)  # parts laid out and the retained elements folded in
        return op

    def _restored(self, st: dict[str, Any]) -> None:
        pass
