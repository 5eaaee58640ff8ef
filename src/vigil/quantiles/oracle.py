"""Quantile oracle: exact, obviously right, slow. The reference every QuantileOperator is compared
with (paper 004's continuous (phi, eps) quantile queries, §2.2, whole stream and sliding window).

Every pushed element is stored (O(n) space); a lookup masks the window and sorts it:
O(n + W log W) per lookup. The answer is the *exact* phi-quantile, the element of 1-based rank
``max(1, ceil(phi*N))`` in ascending order (phi read as the decimal it is written as, see
:func:`vigil.windows.oracle.quantile_rank`), which satisfies every (phi, eps) query.

Window after element n, for a query registered at ``start``: every pushed element with
start < seq <= n (rows None), or those with seq in [max(start+1, n-rows+1), n]. NaN values are SQL NULLs: they are not elements of the window (N counts non-null
values). Empty window -> NaN.

:func:`rank_error_ok` checks an approximate answer against the family contract.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import GrowableArray, check_increasing, decimal_value, quantile_rank
from . import QuantileOperator


class QuantileOracle(QuantileOperator):
    """Exact quantiles by sorting the window at each lookup."""

    name = "oracle"

    def __init__(self, eps: float, rows: int | None) -> None:
        if rows is not None and int(rows) < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        super().__init__(eps, None if rows is None else int(rows))
        self._values = GrowableArray(np.float64)
        self._seqs = GrowableArray(np.int64)
        self._q: dict[int, tuple[float, float, int]] = {}  # qid -> (phi, eps_q, start)
        self._notify: dict[int, float] = {}  # notify qid -> last reported exact answer (NaN: none)

    def register(self, qid: int, phi: float, eps: float, start: int = 0, notify: bool = False) -> None:
        qid = int(qid)
        if qid in self._q:
            raise ValueError(f"qid {qid} is already registered")
        if not (0 < phi <= 1):
            raise ValueError(f"phi must lie in (0, 1], got {phi}")
        self._q[qid] = (float(phi), float(eps), int(start))
        if notify:
            self._notify[qid] = math.nan

    def terminate(self, qid: int) -> None:
        self._q.pop(int(qid), None)
        self._notify.pop(int(qid), None)

    def alive(self) -> int:
        return len(self._q)

    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Store the elements; returns the notify updates (qids, offsets, values): an update
        whenever a notify query's exact answer changes (O(k * W log W) per element)."""
        seqs = np.asarray(seqs, dtype=np.int64)
        if len(values) != len(seqs):
            raise ValueError("values and seqs differ in length")
        check_increasing(seqs, int(self._seqs.view[-1]) if len(self._seqs) else None)
        base = len(self._values)
        self._values.extend(values)
        self._seqs.extend(seqs)
        uq: list[int] = []
        uo: list[int] = []
        uv: list[float] = []
        if self._notify:
            ids = sorted(self._notify)
            for off in range(len(seqs)):
                n = int(seqs[off])
                for q in ids:
                    phi, _, start = self._q[q]
                    if n <= start:
                        continue
                    srt = np.sort(self._window(n, start, base + off + 1))
                    v = float(srt[quantile_rank(phi, len(srt)) - 1]) if len(srt) else math.nan
                    last = self._notify[q]
                    if not (v == last or (math.isnan(v) and math.isnan(last))):
                        self._notify[q] = v
                        uq.append(q)
                        uo.append(off)
                        uv.append(v)
        return np.array(uq, np.int64), np.array(uo, np.int64), np.array(uv, np.float64)

    def _window(self, n: int, start: int, upto: int) -> np.ndarray:
        seqs = self._seqs.view[:upto]
        mask = seqs > start
        if self.rows is not None:
            mask &= seqs >= n - self.rows + 1
        v = self._values.view[:upto][mask]
        return v[~np.isnan(v)]

    def window_values(self, n: int, start: int = 0) -> np.ndarray:
        """The non-null values of the window after element n, in arrival order, for a query that
        counts the elements with seq > start."""
        seqs = self._seqs.view
        mask = (seqs <= n) & (seqs > start)
        if self.rows is not None:
            mask &= seqs >= n - self.rows + 1
        v = self._values.view[mask]
        return v[~np.isnan(v)]

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        qids = np.asarray(qids, dtype=np.int64)
        for qid in qids:
            if int(qid) not in self._q:
                raise KeyError(f"qid {int(qid)} is not registered")
        out = np.full(len(qids), math.nan)
        for i, q in enumerate(qids):
            phi, _, start = self._q[int(q)]
            srt = np.sort(self.window_values(n, start))
            if len(srt):
                out[i] = srt[quantile_rank(phi, len(srt)) - 1]
        return out

    def summary(self, qid: int, n: int) -> np.ndarray:
        """Mergeable summary: the sorted non-null window values (exact; O(n + W log W))."""
        if int(qid) not in self._q:
            raise KeyError(f"qid {int(qid)} is not registered")
        return np.sort(self.window_values(n, self._q[int(qid)][2]))

    def state(self) -> dict[str, Any]:
        ids = sorted(self._q)
        return {
            "eps": self.eps,
            "rows": self.rows,
            "values": self._values.view.copy(),
            "seqs": self._seqs.view.copy(),
            "qids": np.array(ids, dtype=np.int64),
            "phi": np.array([self._q[i][0] for i in ids], dtype=np.float64),
            "eps_q": np.array([self._q[i][1] for i in ids], dtype=np.float64),
            "start": np.array([self._q[i][2] for i in ids], dtype=np.int64),
            "notify": np.array(sorted(self._notify), dtype=np.int64),
            "notify_last": np.array([self._notify[i] for i in sorted(self._notify)], dtype=np.float64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> QuantileOracle:
        op = cls(float(s["eps"]), s["rows"])
        op._values.extend(s["values"])
        op._seqs.extend(s["seqs"])
        for qid, phi, e, st in zip(s["qids"], s["phi"], s["eps_q"], s["start"], strict=True):
            op._q[int(qid)] = (float(phi), float(e), int(st))
        for qid, last in zip(s.get("notify", []), s.get("notify_last", []), strict=True):
            op._notify[int(qid)] = float(last)
        return op


def rank_error_ok(window_values: np.ndarray, answer: float, phi: float, eps: float) -> bool:
    """Does ``answer`` satisfy a (phi, eps) quantile query over ``window_values``?

    The family contract (``vigil.quantiles`` docstring): with N the number of non-null (non-NaN)
    window values, an empty window needs answer NaN; otherwise the answer must be one of the
    values, and *some* rank it occupies among ties, r in [#(< answer) + 1, #(<= answer)], must lie
    within eps*N + 1 of the target rank r* = max(1, ceil(phi*N)). ``eps`` is the effective
    precision max(eps_q, summary eps), chosen by the caller. eps*N and phi*N are computed exactly
    with eps and phi read as decimals (so 0.01 * 300 is exactly 3).
    """
    v = np.asarray(window_values, dtype=np.float64)
    v = v[~np.isnan(v)]
    n = len(v)
    answer = float(answer)
    if n == 0:
        return math.isnan(answer)
    if math.isnan(answer):
        return False
    lo_rank = int(np.count_nonzero(v < answer)) + 1
    hi_rank = int(np.count_nonzero(v <= answer))
    if hi_rank < lo_rank:  # not one of the values
        return False
    target = quantile_rank(phi, n)
    dist = max(0, lo_rank - target, target - hi_rank)
    return dist <= decimal_value(eps) * n + 1
