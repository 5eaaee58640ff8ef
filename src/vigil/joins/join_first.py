"""JoinFirst: the join-first baseline of paper 003 (§5, "SJ-JoinFirst" / "WJ-JoinFirst"; for band
joins the same plan over the union of the alive bands).

Plan: for each arriving tuple, first compute its join partners among the stored tuples of the
other side through an index on the join attribute — a hash index on the equality key (select and
window joins; window joins then cut each key's time-ordered list to the last ``w`` time units by
binary search) or a sorted index on the band attribute (band joins: one range search for the
union of the alive bands) — then check every alive query's local selections on each partner.

Cost per arriving tuple: O(log N + P * Q) with P the partners found and Q the alive queries;
space O(N) stored tuples. It is input-insensitive in Q (every query is checked on every partner),
which is what the paper's SSI-based algorithms improve on.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from ..specs import parse_query
from ..windows.oracle import GrowableArray
from . import JoinOperator
from .oracle import SIDES


class _Side:
    def __init__(self) -> None:
        self.seqs = GrowableArray(np.int64)
        self.keys = GrowableArray(np.float64)
        self.times = GrowableArray(np.float64)
        self.attrs: GrowableArray | None = None  # 2-D, width fixed by the first tuple
        self.by_key: dict[Any, list[int]] = {}  # equality index: key -> positions (arrival order)
        self.key_times: dict[Any, list[float]] = {}  # key -> times of those positions (nondecreasing)
        self.sorted_keys: list[float] = []  # band index: keys sorted, with their positions
        self.sorted_pos: list[int] = []


class JoinFirst(JoinOperator):
    name = "join_first"

    def __init__(self, kind: str, output: str = "pairs") -> None:
        super().__init__(kind, output)
        self.sides = {s: _Side() for s in SIDES}
        self.q: dict[int, Any] = {}
        self.bounds: dict[int, tuple] = {}

    def register(self, qid: int, spec: Any) -> None:
        self.q[int(qid)] = spec
        if self.kind == "band":
            self.bounds[int(qid)] = (float(spec.band[0]), float(spec.band[1]))
        else:
            lb = spec.range_bounds("left")
            rb = spec.range_bounds("right")
            lo_l = np.array([lb[c][0] for c in sorted(lb)]), np.array([lb[c][1] for c in sorted(lb)])
            lo_r = np.array([rb[c][0] for c in sorted(rb)]), np.array([rb[c][1] for c in sorted(rb)])
            w = float(spec.window) if self.kind == "window" else np.inf
            self.bounds[int(qid)] = (lo_l, lo_r, w)

    def terminate(self, qid: int) -> None:
        self.q.pop(int(qid), None)
        self.bounds.pop(int(qid), None)

    def _store(self, me: _Side, seq: int, key, t: float, a: np.ndarray) -> None:
        pos = len(me.seqs)
        me.seqs.extend([seq])
        me.keys.extend([float(key)])
        me.times.extend([t])
        if me.attrs is None:
            me.attrs = GrowableArray(np.float64, len(a))
        me.attrs.extend(a.reshape(1, -1))
        if self.kind == "band":
            i = bisect.bisect_right(me.sorted_keys, key)
            me.sorted_keys.insert(i, key)
            me.sorted_pos.insert(i, pos)
        else:
            me.by_key.setdefault(key, []).append(pos)
            me.key_times.setdefault(key, []).append(t)

    def insert(self, side, seqs, key, attrs, times):
        me, other = self.sides[side], self.sides["right" if side == "left" else "left"]
        n = len(seqs)
        times = np.full(n, np.nan) if times is None else np.asarray(times, np.float64)
        attrs = np.asarray(attrs, np.float64).reshape(n, -1)
        out_q: list[int] = []
        out_r: list[int] = []
        out_s: list[int] = []
        qids = sorted(self.q)
        left = side == "left"
        for i in range(n):
            k = key[i].item()
            t = float(times[i])
            if qids and len(other.seqs):
                cand = self._partners(other, k, t, left, qids)
                if len(cand):
                    self._filter(qids, cand, other, k, attrs[i], t, left, int(seqs[i]), out_q, out_r, out_s)
            self._store(me, int(seqs[i]), k, t, attrs[i])
        q = np.array(out_q, np.int64)
        r = np.array(out_r, np.int64)
        s = np.array(out_s, np.int64)
        if self.output == "affected" and len(q):
            at = np.where(left, r, s) if n else r
            pairs = np.unique(np.stack([at, q], 1), axis=0)
            return pairs[:, 1].copy(), pairs[:, 0].copy(), np.full(len(pairs), -1, np.int64)
        return q, r, s

    def _partners(self, other: _Side, k, t: float, left: bool, qids: list[int]) -> np.ndarray:
        if self.kind == "band":
            lo = min(self.bounds[q][0] for q in qids)
            hi = max(self.bounds[q][1] for q in qids)
            # arriving r: s.key in [k+lo, k+hi]; arriving s: r.key in [k-hi, k-lo]
            a, b = (k + lo, k + hi) if left else (k - hi, k - lo)
            i = bisect.bisect_left(other.sorted_keys, a)
            j = bisect.bisect_right(other.sorted_keys, b)
            return np.array(other.sorted_pos[i:j], np.int64)
        pos = other.by_key.get(k)
        if not pos:
            return np.empty(0, np.int64)
        first = 0
        if self.kind == "window":  # stored times are <= t: keep T > t - w (binary search)
            w = max(self.bounds[q][2] for q in qids)
            first = bisect.bisect_right(other.key_times[k], t - w)
        return np.asarray(pos[first:], np.int64)

    def _filter(self, qids, cand, other, k, a, t, left, seq, out_q, out_r, out_s) -> None:
        oseq = other.seqs.view[cand]
        if self.kind == "band":
            ok_keys = other.keys.view[cand]
            diff = ok_keys - k if left else k - ok_keys  # s.key - r.key
            for q in qids:
                lo, hi = self.bounds[q]
                hit = oseq[(diff >= lo) & (diff <= hi)]
                self._emit(q, hit, seq, left, out_q, out_r, out_s)
            return
        # all alive queries at once: a (partners x queries) match matrix
        mlo, mhi, olo, ohi, w = self._stacked(qids, left)
        mine_ok = np.all((mlo <= a) & (a <= mhi), axis=1)  # [Q]
        if not mine_ok.any():
            return
        oattrs = other.attrs.view[cand]
        m = np.all((oattrs[:, None, :] >= olo[None]) & (oattrs[:, None, :] <= ohi[None]), axis=2) & mine_ok[None, :]
        if self.kind == "window":
            m &= np.abs(other.times.view[cand] - t)[:, None] < w[None, :]
        for j in np.flatnonzero(m.any(axis=0)).tolist():
            self._emit(qids[j], oseq[m[:, j]], seq, left, out_q, out_r, out_s)

    def _stacked(self, qids: list[int], left: bool):
        """Bounds of the alive queries as arrays, cached until the query set changes."""
        key = (tuple(qids), left)
        if getattr(self, "_stack_key", None) != key:
            rows = [self.bounds[q] for q in qids]
            (mi, ot) = (0, 1) if left else (1, 0)
            self._stack = (
                np.array([r[mi][0] for r in rows]).reshape(len(rows), -1),
                np.array([r[mi][1] for r in rows]).reshape(len(rows), -1),
                np.array([r[ot][0] for r in rows]).reshape(len(rows), -1),
                np.array([r[ot][1] for r in rows]).reshape(len(rows), -1),
                np.array([r[2] for r in rows], np.float64),
            )
            self._stack_key = key
        return self._stack

    @staticmethod
    def _emit(q, hit, seq, left, out_q, out_r, out_s) -> None:
        if len(hit):
            hit = np.sort(hit).tolist()
            out_q.extend([q] * len(hit))
            if left:
                out_r.extend([seq] * len(hit))
                out_s.extend(hit)
            else:
                out_r.extend(hit)
                out_s.extend([seq] * len(hit))

    def state(self) -> dict[str, Any]:
        st: dict[str, Any] = {"kind": self.kind, "output": self.output,
                              "qids": np.array(sorted(self.q), np.int64),
                              "specs": [self.q[i].dump() for i in sorted(self.q)]}
        for s in SIDES:
            sd = self.sides[s]
            width = 0 if sd.attrs is None else sd.attrs.width
            st[s] = {"seqs": sd.seqs.view.copy(), "keys": sd.keys.view.copy(), "times": sd.times.view.copy(),
                     "attrs": np.zeros((0, 0)) if sd.attrs is None else sd.attrs.view.copy(), "width": width}
        return st

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> JoinFirst:
        op = cls(s["kind"], s["output"])
        for qid, spec in zip(s["qids"].tolist(), s["specs"], strict=True):
            op.register(qid, parse_query(spec))
        for side in SIDES:
            d = s[side]
            me = op.sides[side]
            attrs = np.asarray(d["attrs"]).reshape(len(d["seqs"]), int(d["width"]))
            for i in range(len(d["seqs"])):
                k = float(d["keys"][i]) if op.kind == "band" else int(d["keys"][i])
                op._store(me, int(d["seqs"][i]), k, float(d["times"][i]), attrs[i])
        return op
