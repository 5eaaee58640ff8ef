"""Pushed rank queries (``"rank_of": x, "notify": true``, whole stream): the fraction of values
<= x maintained lazily and pushed as ``update`` events when it changes (docs/contract.md, "Rank
queries").

Trigger rule (the idea of paper 004 §3.4's triggers, on a rank instead of a quantile): after an
evaluation at a position where the query's window holds N elements, its summary (:mod:`.rank`)
bounds the count of values <= x to [lo, hi], and the query shows f (the previous value while it
is still within the bound over all of [lo, hi], else the middle of the interval over N). k more
elements move the count to [lo, hi + k] and N to N + k, so f stays a valid answer,
|f (N + k) - c| <= e (N + k) + 1, for every k up to

    min((lo + 1 + e N - f N) / (f - e)  if f > e,   (e N + 1 + f N - hi) / (1 - f - e)  if f + e < 1)

and the query is evaluated again only at the first element beyond (one summary read per due
query there; the operator's push is cut at those elements). With a summary of precision e_s < e
(CASU's runs at e/4) the gaps grow geometrically with N: O(log N / (e - e_s)) evaluations per
query over a stream; with e_s = e they may shrink to every element. The oracle's summary is
exact (lo = hi). Rows windows are not served (their summary leaves the newest partial bucket
out, so N is not known exactly).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .rank import as_tuples


def _interval(summary: np.ndarray, x: float) -> tuple[float, float, float]:
    """(lo, hi, N): the summary's bounds on #(values <= x), and its element count."""
    t = as_tuples(summary)
    m = len(t)
    if not m:
        return 0.0, 0.0, 0.0
    n = float(t[-1, 2])
    i = int(np.searchsorted(t[:, 0], x, side="right")) - 1
    lo = 0.0 if i < 0 else float(t[i, 1])
    hi = n if i + 1 >= m else float(t[i + 1, 2]) - 1.0
    return lo, max(lo, hi), n


def _holds(f: float, lo: float, hi: float, n: float, e: float) -> bool:
    return n > 0 and f * n - lo <= e * n + 1 and hi - f * n <= e * n + 1


def _slack(f: float, lo: float, hi: float, n: float, e: float) -> int:
    """The number of further elements over which f stays valid (module doc)."""
    k = math.inf
    if f > e:
        k = min(k, (lo + 1 + e * n - f * n) / (f - e))
    if f + e < 1:
        k = min(k, (e * n + 1 + f * n - hi) / (1 - f - e))
    return 2**62 if k == math.inf else max(0, int(math.floor(k + 1e-9)))


class RankPush:
    """The pushed rank queries of one operator: qid -> (x, e, start count, value, due count)."""

    def __init__(self) -> None:
        self.q: dict[int, list[float]] = {}  # qid -> [x, e, base, value, due]
        self.pushed = 0  # elements pushed to the operator so far

    def add(self, qid: int, x: float, e: float) -> None:
        self.q[qid] = [x, e, self.pushed, math.nan, self.pushed + 1]

    def drop(self, qid: int) -> None:
        self.q.pop(qid, None)

    def value(self, qid: int) -> float:
        return self.q[qid][3]

    def push(self, op: Any, x: np.ndarray, seqs: np.ndarray):
        """Push (x, seqs) to ``op`` cut at the due elements; returns the operator's updates merged
        with the rank queries' (qids, offsets, values)."""
        parts = []
        a = 0
        while a < len(x):
            due = min(int(v[4]) for v in self.q.values()) if self.q else 2**62
            b = min(len(x), a + max(1, due - self.pushed))
            q, o, v = op.push(x[a:b], seqs[a:b])
            if len(q):
                parts.append((q, o + a, v))
            self.pushed += b - a
            now = [(qid, s) for qid, s in self.q.items() if s[4] <= self.pushed]
            rq, rv = [], []
            for qid, s in now:
                lo, hi, n = _interval(op.summary(qid, int(seqs[b - 1])), s[0])
                f = s[3]
                if not (f == f and _holds(f, lo, hi, n, s[1])):
                    f = (lo + hi) / 2.0 / n if n else math.nan
                    if not (f == s[3] or (f != f and s[3] != s[3])):
                        rq.append(qid)
                        rv.append(f)
                    s[3] = f
                s[4] = self.pushed + 1 + (_slack(f, lo, hi, n, s[1]) if n else 0)
            if rq:
                parts.append((np.array(rq, np.int64), np.full(len(rq), b - 1, np.int64), np.array(rv, np.float64)))
            a = b
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
        q, o, v = (np.concatenate(c) for c in zip(*parts, strict=True))
        order = np.lexsort((q, o))
        return q[order], o[order], v[order]

    def state(self) -> dict[str, Any]:
        ids = sorted(self.q)
        return {"pushed": self.pushed, "qids": np.array(ids, np.int64),
                "rows": np.array([self.q[i] for i in ids], np.float64).reshape(-1, 5)}

    @classmethod
    def from_state(cls, s: dict[str, Any] | None) -> RankPush:
        r = cls()
        if s:
            r.pushed = int(s["pushed"])
            for qid, row in zip(np.asarray(s["qids"], np.int64).tolist(), np.asarray(s["rows"]).tolist(), strict=True):
                r.q[qid] = list(row)
        return r
