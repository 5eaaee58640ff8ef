"""Join oracle: exact, obviously right, slow. The reference every JoinOperator is compared with
(paper 003's band joins, select joins and window joins, §2).

Every inserted tuple of both sides is stored (O(n) space), whether or not a query is alive. For
each arriving tuple and each alive query the oracle evaluates the query's predicate against every
stored tuple of the other side with one numpy mask: O(m * |other side|) per arriving tuple for m
alive queries. No index, no sharing.

Semantics (docs/queries.md, ``vigil.joins`` docstring), made precise here. r is the left tuple
(relation ``spec.left``), s the right one:

* band:   lo <= s.key - r.key <= hi, the difference computed in float64.
* select: r.key == s.key (int64 dictionary codes), every left range column c of the query has
  lo_c <= r.c <= hi_c and every right range column has lo_c <= s.c <= hi_c (closed; +-inf for
  unbounded). A NaN (NULL) attribute is inside no range, not even an unbounded [null, null] one
  (as SQL's ``A >= -inf AND A <= inf`` is not true for a NULL A).
* window: select plus |r.T - s.T| < w (float64; NaN times never join); an interval window
  [lo, hi]: select plus lo <= s.T - r.T <= hi.
* A tuple inserted at seq t pairs only with stored tuples of the *other* side (all have seq < t),
  and only for queries alive at the moment of the insert (registered before it, not terminated):
  these are the new result pairs the arriving tuple creates. Tuples of one insert call are on the
  same side and never pair with each other. No initial result is replayed at registration.
* pairs mode returns (qid, r_seq, s_seq) sorted by (arriving seq, qid, r_seq, s_seq); affected
  mode returns (qid, arriving seq, -1), once per (qid, arriving tuple) with >= 1 new pair, sorted
  by (arriving seq, qid).
* ``attrs`` column order: the operator serves queries that share their range columns, so it
  learns the column order from the first registered select/window spec: sorted(left_range) for
  the left side, sorted(right_range) for the right side. A later spec with other range columns is
  rejected (ValueError); tuples inserted before any registration must already have that width.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import GrowableArray
from ..specs import parse_query
from . import JoinOperator

KINDS = {"band": "band_join", "select": "select_join", "window": "window_join"}
SIDES = ("left", "right")


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, dtype=np.int64)


class _Side:
    """The stored tuples of one relation."""

    def __init__(self, key_dtype: Any, width: int | None) -> None:
        self.key_dtype = key_dtype
        self.seqs = GrowableArray(np.int64)
        self.keys = GrowableArray(key_dtype)
        self.times = GrowableArray(np.float64)
        self.width = width  # None until the first insert or registration fixes it
        self.attrs: GrowableArray | None = None if width is None else GrowableArray(np.float64, width)

    def fix_width(self, width: int) -> None:
        if self.width is None:
            self.width = width
            self.attrs = GrowableArray(np.float64, width)
        elif self.width != width:
            raise ValueError(f"attrs have {width} column(s) but this operator's tuples have {self.width}")


class JoinOracle(JoinOperator):
    """Exact continuous band / select / window joins by scanning the other side per tuple."""

    name = "oracle"

    def __init__(self, kind: str, output: str = "pairs") -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown join kind {kind!r}; expected one of {sorted(KINDS)}")
        if output not in ("pairs", "affected"):
            raise ValueError(f"output must be 'pairs' or 'affected', not {output!r}")
        super().__init__(kind, output)
        key_dtype = np.float64 if kind == "band" else np.int64
        width = 0 if kind == "band" else None
        self.sides = {side: _Side(key_dtype, width) for side in SIDES}
        self.cols: dict[str, list[str] | None] = {
            side: ([] if kind == "band" else None) for side in SIDES
        }  # attrs column names per side, once learned
        self._specs: dict[int, Any] = {}
        self._last_seq: int | None = None

    # ------------------------------------------------------------------ queries

    def register(self, qid: int, spec: Any) -> None:
        qid = int(qid)
        if spec.type != KINDS[self.kind]:
            raise ValueError(f"query {spec.id!r} is a {spec.type}; this operator serves {KINDS[self.kind]}")
        if qid in self._specs:
            raise ValueError(f"qid {qid} is already registered")
        if self.kind != "band":
            cols = {"left": sorted(spec.left_range), "right": sorted(spec.right_range)}
            for side in SIDES:  # check both sides before changing anything
                known, width = self.cols[side], self.sides[side].width
                if (known is not None and known != cols[side]) or (known is None and width not in (None, len(cols[side]))):
                    raise ValueError(
                        f"query {spec.id!r}: {side} range columns {cols[side]} differ from this "
                        f"operator's ({known if known is not None else f'{width} column(s)'})"
                    )
            for side in SIDES:
                self.sides[side].fix_width(len(cols[side]))
                self.cols[side] = cols[side]
        self._specs[qid] = spec

    def terminate(self, qid: int) -> None:
        self._specs.pop(int(qid), None)

    def alive(self) -> int:
        return len(self._specs)

    # ------------------------------------------------------------------ predicate

    @staticmethod
    def _inside(attrs: np.ndarray, cols: list[str], ranges: dict[str, tuple[float, float]]) -> np.ndarray:
        """Rows of attrs (k, a) inside every closed range of ``ranges`` (column name -> (lo, hi))."""
        ok = np.ones(len(attrs), dtype=bool)
        for c, (lo, hi) in ranges.items():
            x = attrs[:, cols.index(c)]
            ok &= (lo <= x) & (x <= hi)
        return ok

    def _match(self, spec: Any, r: dict[str, np.ndarray], s: dict[str, np.ndarray]) -> np.ndarray:
        """Predicate of ``spec`` on tuples r and s: one of them holds a single tuple, the other k
        tuples; returns a bool mask of length k (broadcast)."""
        if self.kind == "band":
            lo, hi = spec.band
            d = s["key"] - r["key"]
            return (lo <= d) & (d <= hi)
        ok = r["key"] == s["key"]
        ok = ok & self._inside(r["attrs"], self.cols["left"], spec.range_bounds("left"))
        ok = ok & self._inside(s["attrs"], self.cols["right"], spec.range_bounds("right"))
        if self.kind == "window":
            if isinstance(spec.window, list):  # an interval join: lo <= s.T - r.T <= hi
                d = s["time"] - r["time"]
                ok = ok & (spec.window[0] <= d) & (d <= spec.window[1])
            else:
                ok = ok & (np.abs(r["time"] - s["time"]) < spec.window)
        return ok

    # ------------------------------------------------------------------ tuples

    def insert(
        self,
        side: str,
        seqs: np.ndarray,
        key: np.ndarray,
        attrs: np.ndarray | None = None,
        times: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if side not in SIDES:
            raise ValueError(f"side must be 'left' or 'right', not {side!r}")
        seqs = np.asarray(seqs, dtype=np.int64)
        n = len(seqs)
        me, other = self.sides[side], self.sides["right" if side == "left" else "left"]
        if n == 0:
            return _cat([]), _cat([]), _cat([])
        key = np.asarray(key, dtype=me.key_dtype)
        attrs = np.zeros((n, 0)) if attrs is None else np.asarray(attrs, dtype=np.float64).reshape(n, -1)
        if self.kind == "window":
            if times is None:
                raise ValueError("window joins need times")
            times = np.asarray(times, dtype=np.float64)
        else:
            times = np.full(n, math.nan)
        if not (len(key) == len(attrs) == len(times) == n):
            raise ValueError("seqs, key, attrs and times differ in length")
        if n and (np.any(np.diff(seqs) <= 0) or (self._last_seq is not None and seqs[0] <= self._last_seq)):
            raise ValueError("seqs must be strictly increasing and larger than every seq inserted before")
        me.fix_width(attrs.shape[1])

        o = {"key": other.keys.view, "attrs": other.attrs.view if other.attrs is not None else None,
             "time": other.times.view, "seq": other.seqs.view}
        out_q: list[int] = []
        out_r: list[np.ndarray] = []
        out_s: list[np.ndarray] = []
        qids = sorted(self._specs)
        for i in range(n):
            t = {"key": key[i : i + 1], "attrs": attrs[i : i + 1], "time": times[i : i + 1]}
            if len(o["seq"]) == 0:
                continue
            for qid in qids:
                r, s = (t, o) if side == "left" else (o, t)
                hit = o["seq"][self._match(self._specs[qid], r, s)]
                if len(hit) == 0:
                    continue
                if self.output == "affected":
                    out_q.append(qid)
                    out_r.append(seqs[i : i + 1])
                    out_s.append(np.array([-1], dtype=np.int64))
                else:
                    mine = np.full(len(hit), seqs[i], dtype=np.int64)
                    out_q.extend([qid] * len(hit))
                    out_r.append(mine if side == "left" else hit)
                    out_s.append(hit if side == "left" else mine)

        me.seqs.extend(seqs)
        me.keys.extend(key)
        me.attrs.extend(attrs)
        me.times.extend(times)
        if n:
            self._last_seq = int(seqs[-1])
        return np.array(out_q, dtype=np.int64), _cat(out_r), _cat(out_s)

    def preload(self, side, seqs, key, attrs=None, times=None) -> None:
        """Store tuples that arrived earlier (any order: the oracle scans every stored tuple)."""
        if side not in SIDES:
            raise ValueError(f"side must be 'left' or 'right', not {side!r}")
        seqs = np.asarray(seqs, dtype=np.int64)
        n = len(seqs)
        if n == 0:
            return
        me = self.sides[side]
        attrs = np.zeros((n, 0)) if attrs is None else np.asarray(attrs, dtype=np.float64).reshape(n, -1)
        if self.kind == "window" and times is None:
            raise ValueError("window joins need times")
        times = np.asarray(times, np.float64) if self.kind == "window" else np.full(n, math.nan)
        me.fix_width(attrs.shape[1])
        me.seqs.extend(seqs)
        me.keys.extend(np.asarray(key, dtype=me.key_dtype))
        me.attrs.extend(attrs)
        me.times.extend(times)
        self._last_seq = max(int(seqs.max()), self._last_seq if self._last_seq is not None else -1)

    # ------------------------------------------------------------------ snapshot

    def state(self) -> dict[str, Any]:
        ids = sorted(self._specs)
        st: dict[str, Any] = {
            "kind": self.kind,
            "output": self.output,
            "last_seq": self._last_seq,
            "qids": np.array(ids, dtype=np.int64),
            "specs": [self._specs[i].dump() for i in ids],
        }
        for side in SIDES:
            sd = self.sides[side]
            st[side] = {
                "cols": self.cols[side],
                "width": sd.width,
                "seqs": sd.seqs.view.copy(),
                "keys": sd.keys.view.copy(),
                "times": sd.times.view.copy(),
                "attrs": np.zeros((0, 0)) if sd.attrs is None else sd.attrs.view.copy(),
            }
        return st

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> JoinOracle:
        op = cls(s["kind"], s["output"])
        op._last_seq = None if s["last_seq"] is None else int(s["last_seq"])
        for side in SIDES:
            d = s[side]
            op.cols[side] = None if d["cols"] is None else list(d["cols"])
            sd = op.sides[side]
            if d["width"] is not None:
                sd.fix_width(int(d["width"]))
                sd.attrs.extend(np.asarray(d["attrs"]).reshape(len(d["seqs"]), int(d["width"])))
            sd.seqs.extend(d["seqs"])
            sd.keys.extend(d["keys"])
            sd.times.extend(d["times"])
        for qid, spec in zip(s["qids"], s["specs"], strict=True):
            op._specs[int(qid)] = parse_query(spec)
        return op
