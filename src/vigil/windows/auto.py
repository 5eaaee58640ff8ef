"""``auto``, the windows family's default: per group (one (column, aggregate, time column)) the
algorithm that serves its aggregate class best, as measured by ``vigil bench windows`` (see
docs/experiments/windows.md):

* SUM, COUNT, AVG (subtractable): R-INT (§3.2): O(1) update, O(1) lookup, O(N_max) space;
* MIN, MAX: suffix windows on :data:`MINMAX_SUFFIX` (B-INT or the SlickDeque-style deque,
  whichever the benchmark measured faster); historical rows windows on L-INT (§3.1.2: O(1) lookup,
  two reads) while their widths fall in at most :data:`LINT_GAMMA` of its parts (space
  O(gamma N_max), update O(gamma)), the others and historical time windows on B-INT (§3.1.1); a
  further structure is created only when the group's first query routed to it registers (it sees
  the elements from then on, which is all a query registered then may count);
* QUANTILE: ``wavelet_qnt`` (:mod:`vigil.windows.wavelet_qnt`), which keeps B-INT-QNT (§3.3) and
  routes every lookup by its window's width inside one batch kernel: <= :data:`QUANTILE_DIRECT`
  elements by a sorting network over the raw value ring, up to 16,385 elements by one
  range-quantile walk over the wavelet matrix of the block holding the window (O(log W) reads),
  wider windows (and windows in the newest, not yet built block) by B-INT-QNT's selection over
  sorted pieces; the same element is selected on every path.

Bounds: those of the chosen algorithm(s); at most three structures per group (MIN/MAX).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import WindowOperator
from .bint import BInt
from .bint_qnt import BIntQnt
from .lint import LInt
from .rint import RInt
from .slickdeque import SlickDeque
from .wavelet_qnt import WaveletQnt

# MIN/MAX over suffix windows: "slickdeque" or "bint" (set from the fig10/fig11 measurements)
MINMAX_SUFFIX = "slickdeque"
# historical MIN/MAX rows windows go to L-INT while they need at most this many L-INT parts
# (fig11 workload, N_max = 1e5, batch 10,000, load ~4.7: L-INT 6.5-7.2e7 lookups/s at W = 1..1000,
# B-INT 0.64-2.1e7); wider spreads of widths go to B-INT (O(N_max) space, O(1) update whatever
# the widths)
LINT_GAMMA = 2
# QUANTILE windows of <= this many elements: a sorting network over the raw value ring instead of
# the wavelet walk (fig11 workload, N_max = 1e5, batches of 10,000, CPU time per lookup, load ~5:
# W = 2: 52 vs 116 ns; W = 8: 47 vs 83; W = 10: 60 vs 80; W = 12: 64 vs 83; W = 16: 82 vs 78)
QUANTILE_DIRECT = 16
# the QUANTILE structure: "wavelet_qnt" (wavelet matrices + B-INT-QNT) or "bint_qnt" alone
QUANTILE_MAIN = "wavelet_qnt"

_CLASSES = {"rint": RInt, "bint": BInt, "bint_qnt": BIntQnt, "wavelet_qnt": WaveletQnt, "slickdeque": SlickDeque,
            "lint": LInt}
_SUBS = ("main", "hist", "lint")  # route code -> sub name


class Auto(WindowOperator):
    name = "auto"

    def __init__(self, agg: str, time_based: bool) -> None:
        super().__init__(agg, time_based)
        self.subs: dict[str, Any] = {}
        self.route = np.zeros(0, np.int8)  # qid -> 0 (main) / 1 (B-INT, historical) / 2 (L-INT, historical)
        self.minmax_suffix = MINMAX_SUFFIX

    def _main_name(self) -> str:
        if self.agg in ("sum", "count", "avg"):
            return "rint"
        if self.agg == "quantile":
            return QUANTILE_MAIN
        return self.minmax_suffix

    def _sub(self, which: str) -> Any:
        if which not in self.subs:
            name = self._main_name() if which == "main" else ("bint" if which == "hist" else "lint")
            self.subs[which] = _tuned(_CLASSES[name](self.agg, self.time_based))
        return self.subs[which]

    def _which(self, spec: Any) -> str:
        if self.agg in ("min", "max") and self._main_name() == "slickdeque":
            left, right = spec.time if self.time_based else spec.rows
            if right <= 0:
                return "main"
            if not self.time_based and LINT_GAMMA > 0:
                lint = self.subs.get("lint")
                if lint is None or lint.part_of(int(left - right)) in lint.part_w or len(lint.part_w) < LINT_GAMMA:
                    return "lint"
            return "hist"
        return "main"

    def register(self, qid: int, spec: Any, start: int = 0) -> None:
        which = self._which(spec)
        self._sub(which).register(qid, spec, start)
        if qid >= len(self.route):
            r = np.zeros(max(qid + 1, 2 * len(self.route), 16), np.int8)
            r[: len(self.route)] = self.route
            self.route = r
        self.route[qid] = _SUBS.index(which)

    def terminate(self, qid: int) -> None:
        qid = int(qid)
        if qid < len(self.route):
            self.subs.get(_SUBS[self.route[qid]], _NoOp).terminate(qid)

    def alive(self) -> int:
        return sum(s.alive() for s in self.subs.values())

    def push(self, values: np.ndarray, seqs: np.ndarray, times: np.ndarray | None = None) -> None:
        for s in self.subs.values():
            s.push(values, seqs, times)

    def lookup(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> np.ndarray:
        q = np.ascontiguousarray(qids, dtype=np.int64)
        if len(self.subs) == 1:
            return next(iter(self.subs.values())).lookup(q, n, t_now)
        if not self.subs or not len(q):
            if len(q):
                raise KeyError(f"qid {int(q[0])} is not registered")
            return np.empty(0)
        if q.min() < 0 or q.max() >= len(self.route):
            raise KeyError("qid is not registered")
        r = self.route[q]
        lo, hi = int(r.min()), int(r.max())
        if lo == hi:  # one structure serves the whole batch
            return self._sub(_SUBS[lo]).lookup(q, n, t_now)
        out = np.empty(len(q), np.float64)
        for code in range(lo, hi + 1):
            h = r == code
            if h.any():
                out[h] = self._sub(_SUBS[code]).lookup(q[h], n, t_now)
        return out

    def push_lookup(self, values, seqs, cuts, ns, starts, qids) -> np.ndarray | None:
        """Elements pushed up to each of several positions and queries answered there in one call
        (:meth:`vigil.windows.rint.RInt.push_lookup`), when one structure serves every query and
        can; else None."""
        if len(self.subs) != 1:
            return None
        sub = next(iter(self.subs.values()))
        return sub.push_lookup(values, seqs, cuts, ns, starts, qids) if hasattr(sub, "push_lookup") else None

    def nbytes(self) -> int:
        return sum(s.nbytes() for s in self.subs.values())

    def state(self) -> dict[str, Any]:
        return {"name": "auto", "agg": self.agg, "time_based": self.time_based, "minmax_suffix": self.minmax_suffix,
                "route": self.route.copy(), "subs": {k: s.state() for k, s in self.subs.items()}}

    @classmethod
    def from_state(cls, st: dict[str, Any]) -> Auto:
        op = cls(st["agg"], bool(st["time_based"]))
        op.minmax_suffix = st["minmax_suffix"]
        op.route = np.asarray(st["route"], np.int8).copy()
        for k, s in st["subs"].items():
            op.subs[k] = _tuned(_CLASSES[s["name"]].from_state(s))
        return op


def _tuned(sub: Any) -> Any:
    """auto's settings of a sub-operator (the same answers as the plain algorithm)."""
    if isinstance(sub, BIntQnt):
        sub.direct = QUANTILE_DIRECT
    return sub


class _NoOp:
    @staticmethod
    def terminate(qid: int) -> None:
        return None
