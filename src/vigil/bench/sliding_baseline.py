"""The bucket summary that served rows-window quantiles before :mod:`vigil.quantiles.sliding`
(every evaluation merged every bucket of the window in numpy: O(W) per evaluation, re-run at
nearly every element with many notify queries), kept as the baseline of ``vigil bench quantiles
--preset sliding``. Not used by the engine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import check_increasing
from ..quantiles import QuantileOperator, merge_summaries
from ..quantiles import _gk_kernels as K

_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))


def _compress_bucket(values: np.ndarray, eps: float) -> np.ndarray:
    """Sorted bucket values -> (m, 3) tuples of an eps/2 summary of the bucket."""
    v = np.sort(values)
    n = len(v)
    r = np.arange(1, n + 1, dtype=np.int64)
    lo, hi = r.copy(), r.copy()
    m = K.compress(v, lo, hi, np.zeros(n, np.int32), n, n, eps / 2.0)
    return np.column_stack([v[:m], lo[:m].astype(np.float64), hi[:m].astype(np.float64)])


class OldSliding(QuantileOperator):
    """Sliding-window quantiles with notify support (see the module doc)."""

    name = "sliding"

    def __init__(self, eps: float, rows: int | None) -> None:
        super().__init__(eps, rows)
        self.B = 1 if rows is None else max(1, int(self.eps * int(rows) / 4))
        self.blo: list[int] = []  # closed buckets: first seq, last seq, count, tuples
        self.bhi: list[int] = []
        self.bcnt: list[int] = []
        self.btup: list[np.ndarray] = []
        self.open_v: list[float] = []
        self.open_s: list[int] = []
        self.open_lo = -1
        self.last_seq = -1
        self.first_seq = -1
        self.npushed = 0
        self.q: dict[int, tuple[float, float, int, bool]] = {}
        self.last: dict[int, float] = {}  # notify qid -> last value
        self.dead: dict[int, int] = {}  # notify qid -> last position its value is sure to hold
        self.evaluations = 0

    # ------------------------------------------------------------------ queries
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
            self._close()  # the query's start becomes a bucket boundary
        elif self.npushed and start >= self.first_seq and start + 1 not in self.blo:
            raise ValueError(f"start {start} falls inside a bucket already closed")
        self.q[qid] = (float(phi), float(eps), start, bool(notify))
        if notify:
            self.last[qid] = math.nan
            self.dead[qid] = -1

    def terminate(self, qid: int) -> None:
        self.q.pop(int(qid), None)
        self.last.pop(int(qid), None)
        self.dead.pop(int(qid), None)

    def alive(self) -> int:
        return len(self.q)

    # ------------------------------------------------------------------ buckets
    def _close(self) -> None:
        if self.open_v:
            vals = np.asarray(self.open_v, np.float64)
            self.blo.append(self.open_lo)
            self.bhi.append(self.open_s[-1])
            self.bcnt.append(len(vals))
            self.btup.append(_compress_bucket(vals, self.eps))
            self.open_v = []
            self.open_s = []

    def _expire(self, n: int) -> None:
        lo = n - int(self.rows) + 1
        k = 0
        while k < len(self.bhi) and self.bhi[k] < lo:
            k += 1
        if k:
            del self.blo[:k], self.bhi[:k], self.bcnt[:k], self.btup[:k]

    def _window(self, n: int, start: int, with_seq: bool = False):
        """(merged tuples of the buckets inside, x_min, x_max) for the window after element n;
        with_seq: also each tuple's earliest possible seq (its bucket's first seq)."""
        l0 = max(start + 1, n - int(self.rows) + 1)
        parts = []
        firsts = []
        xmin = xmax = 0
        for a, b, c, t in zip(self.blo, self.bhi, self.bcnt, self.btup, strict=True):
            if b < l0:
                continue
            if a >= l0:
                parts.append(t)
                firsts.append(a)
            else:  # partial: c elements over seqs [a, b], those >= l0 are in the window
                xmax = min(c, b - l0 + 1)
                xmin = max(0, c - (l0 - a))
        if self.open_v:  # the newest bucket's elements are kept: exact
            ov = np.asarray(self.open_v, np.float64)
            os_ = np.asarray(self.open_s, np.int64)
            keep = os_ >= l0
            ov = ov[keep]
            parts.append(np.sort(ov))
            firsts.append(int(os_[keep][0]) if keep.any() else n)
        if not with_seq:
            return merge_summaries(parts), xmin, xmax
        tup, part = merge_summaries(parts, return_part=True)
        return tup, xmin, xmax, np.asarray(firsts, np.int64)[part] if len(part) else np.empty(0, np.int64)

    @staticmethod
    def _answer(tup: np.ndarray, xmin: int, xmax: int, phi: np.ndarray, with_index: bool = False):
        """(values, err0) of queries phi against merged tuples with x in [xmin, xmax] unknown
        (with_index: also the chosen tuple indices)."""
        if not len(tup):  # empty window (or only unknown elements: never with B <= W)
            z = (np.full(len(phi), np.nan), np.zeros(len(phi)) if xmax == 0 else np.full(len(phi), np.inf))
            return (*z, np.zeros(len(phi), np.int64)) if with_index else z
        m = tup[-1, 2]
        tmin = np.maximum(1.0, np.ceil(phi * (m + xmin) - 1e-9))
        tmax = np.maximum(1.0, np.ceil(phi * (m + xmax) - 1e-9))
        lo, hi = tup[:, 1], tup[:, 2]
        key = lo + hi
        i = np.searchsorted(key, tmax + tmin - xmax)
        best = np.empty(len(phi), np.int64)
        err = np.full(len(phi), np.inf)
        for cand in (i - 1, i):
            c = np.clip(cand, 0, len(tup) - 1)
            e = np.maximum(np.maximum(tmax - lo[c], hi[c] + xmax - tmin), 0.0)
            better = e < err
            best[better], err[better] = c[better], e[better]
        if with_index:
            return tup[best, 0], err, best
        return tup[best, 0], err

    # ------------------------------------------------------------------ elements
    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seqs = np.asarray(seqs, np.int64)
        x = np.asarray(values, np.float64)
        if len(x) != len(seqs):
            raise ValueError("values and seqs differ in length")
        if not len(x):
            return _EMPTY
        check_increasing(seqs, self.last_seq if self.npushed else None)
        holes = bool(np.isnan(x).any())
        elem = np.flatnonzero(~np.isnan(x)) if holes else None
        notify = [q for q, e in self.q.items() if e[3]]
        uq: list[np.ndarray] = []
        uo: list[np.ndarray] = []
        uv: list[np.ndarray] = []
        p = 0
        while p < len(x):
            # elements up to the bucket's end (or the next due trigger, for notify queries); a
            # bucket closes when an element arrives past its seqs and starts at an element, so
            # positions without element (holes) change no bucket, whatever the batches
            past = self.open_v and seqs[p] - self.open_lo + 1 > self.B
            if past and not (holes and np.isnan(x[p])):
                self._close()
                past = False
            if holes:
                k = int(np.searchsorted(elem, p))
                nxt = int(elem[k]) if k < len(elem) else len(x)  # the next element (index)
                if not self.open_v:
                    self.open_lo = int(seqs[nxt]) if nxt < len(x) else int(seqs[-1]) + 1
            elif not self.open_v:
                self.open_lo = int(seqs[p])
            if past:  # holes after a full bucket: up to the next element
                end = nxt
            else:
                end = int(np.searchsorted(seqs, self.open_lo + self.B, "left"))  # first seq past the bucket
            if notify:
                due = min(self.dead[q] for q in notify)
                end = min(end, max(p + 1, int(np.searchsorted(seqs, due + 1, "right"))))
            end = max(end, p + 1)
            if holes:  # positions without element (rejected rows) move the window only
                keep = ~np.isnan(x[p:end])
                self.open_v.extend(x[p:end][keep].tolist())
                self.open_s.extend(seqs[p:end][keep].tolist())
            else:
                self.open_v.extend(x[p:end].tolist())
                self.open_s.extend(seqs[p:end].tolist())
            if not self.npushed:
                self.first_seq = int(seqs[0])
            self.last_seq = int(seqs[end - 1])
            self.npushed += end - p
            n = self.last_seq
            p = end
            if notify:
                self._expire(n)
                bucket_full = bool(self.open_v) and n == self.open_lo + self.B - 1  # its last seq
                todo = [q for q in notify if self.dead[q] < n or (bucket_full and self.dead[q] < n + self.B)]
                if todo:
                    q, v = self._evaluate(todo, n)
                    if len(q):
                        uq.append(q)
                        uo.append(np.full(len(q), p - 1, np.int64))
                        uv.append(v)
        self._expire(self.last_seq)
        if not uq:
            return _EMPTY
        q, o, v = np.concatenate(uq), np.concatenate(uo), np.concatenate(uv)
        order = np.lexsort((q, o))
        return q[order], o[order], v[order]

    def _evaluate(self, qids: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 3 on the window summary: re-evaluate qids (grouped by window start)."""
        out_q: list[int] = []
        out_v: list[float] = []
        groups: dict[int, list[int]] = {}
        lw = n - int(self.rows) + 1
        for q in qids:
            groups.setdefault(max(self.q[q][2] + 1, lw), []).append(q)
        for _, qs in groups.items():
            self.evaluations += len(qs)
            tup, xmin, xmax, first = self._window(n, self.q[qs[0]][2], with_seq=True)
            phi = np.array([self.q[q][0] for q in qs])
            e = np.maximum(np.array([self.q[q][1] for q in qs]), self.eps)
            vals, err, idx = self._answer(tup, xmin, xmax, phi, with_index=True)
            nw = (tup[-1, 2] if len(tup) else 0) + xmin
            d = np.floor((e * nw + 1 - err) / (2 + e))
            if len(tup):  # the value's element may leave the window: at the latest after seq first + W - 1
                d = np.minimum(d, first[idx] + int(self.rows) - 1 - n)
            for q, v, dd in zip(qs, vals.tolist(), d.tolist(), strict=True):
                self.dead[q] = n + max(0, int(dd)) if math.isfinite(dd) else n
                if v != self.last[q] and not (math.isnan(v) and math.isnan(self.last[q])):
                    self.last[q] = v
                    out_q.append(q)
                    out_v.append(v)
        return np.array(out_q, np.int64), np.array(out_v)

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        qids = np.asarray(qids, np.int64)
        out = np.full(len(qids), np.nan)
        for i, q in enumerate(qids.tolist()):
            if q not in self.q:
                raise KeyError(f"qid {q} is not registered")
            phi, _, start, notify = self.q[q]
            if notify and n <= self.last_seq:
                out[i] = self.last[q]
                continue
            # beyond the last position pushed (a seq gap, or past the end): the window at n, as
            # without notify (the positions up to n are pushed, as NaN, with the next elements)
            self._expire(max(n, self.last_seq))
            tup, xmin, xmax = self._window(n, start)
            out[i] = self._answer(tup, xmin, xmax, np.array([phi]))[0][0]
        return out

    def summary(self, qid: int, n: int) -> np.ndarray:
        """Merged tuples of the query's window (partial bucket left out): (m, 3) rows (v, r-, r+)."""
        return self._window(n, self.q[int(qid)][2])[0]

    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        return {
            "eps": self.eps, "rows": self.rows, "blo": np.array(self.blo, np.int64), "bhi": np.array(self.bhi, np.int64),
            "bcnt": np.array(self.bcnt, np.int64), "btup": list(self.btup), "open_v": np.array(self.open_v),
            "open_s": np.array(self.open_s, np.int64), "first_seq": self.first_seq,
            "open_lo": self.open_lo, "last_seq": self.last_seq, "npushed": self.npushed,
            "qids": np.array(qs, np.int64), "phi": np.array([self.q[q][0] for q in qs]),
            "eps_q": np.array([self.q[q][1] for q in qs]), "start": np.array([self.q[q][2] for q in qs], np.int64),
            "notify": np.array([self.q[q][3] for q in qs], bool),
            "last": np.array([self.last.get(q, math.nan) for q in qs]),
            "dead": np.array([self.dead.get(q, -1) for q in qs], np.int64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> OldSliding:
        op = cls(float(s["eps"]), s["rows"])
        op.blo, op.bhi, op.bcnt = s["blo"].tolist(), s["bhi"].tolist(), s["bcnt"].tolist()
        op.btup = [np.asarray(t, np.float64).reshape(-1, 3) for t in s["btup"]]
        op.open_v = s["open_v"].tolist()
        op.open_s = s["open_s"].tolist()
        op.first_seq = int(s["first_seq"])
        op.open_lo, op.last_seq, op.npushed = int(s["open_lo"]), int(s["last_seq"]), int(s["npushed"])
        for q, phi, e, st, nt, la, de in zip(s["qids"].tolist(), s["phi"].tolist(), s["eps_q"].tolist(),
                                             s["start"].tolist(), s["notify"].tolist(), s["last"].tolist(),
                                             s["dead"].tolist(), strict=True):
            op.q[q] = (phi, e, st, bool(nt))
            if nt:
                op.last[q], op.dead[q] = la, de
        return op
