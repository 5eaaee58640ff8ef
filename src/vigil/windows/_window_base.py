"""What the ring-based window operators share (rint, bint, bint_qnt, lint, psoup, materialize,
slickdeque): query arrays indexed by qid, the seq / time / value rings, capacity management
(space O(N_max): the rings hold what the alive queries' windows can still reach, no more), lookup
plumbing and state()/from_state().

A subclass sets ``name``, ``aggs`` (the aggregates it serves), ``time_ok`` / ``historical_ok``
(with the reason when not), and implements ``_alloc(cap)``, ``_push_struct(vals, pos0)`` (fold the
values at positions pos0+1.. into its structure, one numba call) and ``_lookup_into(qids, n,
t_now, out)`` (one numba call answering every qid).

Capacity follows the elements the alive windows actually hold, never a window's declared length:
rows windows need the last ``reach = max NL`` elements at most (seqs may have gaps), and only those
pushed since the earliest alive query's registration (``p0min``), so ``rows [1e6, 0]`` on an empty
stream holds a few KiB and grows by doubling with the stream up to its length; time windows need
the elements with time > t_last - max TL, a count only the data tells, so a time operator pushes in
chunks and doubles its capacity when the chunk would overwrite a needed element. Capacity shrinks
(a rebuild from the raw values) when it exceeds 8x what is needed, so memory stays flat over a
stream of any length. A rebuild re-pushes the retained raw values at their positions (``floor`` =
the first rebuilt position): O(N_max) structure work, amortized O(1) per element while growing.
A rows window longer than :data:`MAX_ROWS` = 2^53 (the contract's bound on every number) is rejected
at registration (``Unsupported``, with the reason).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ..arrays import rank_fraction
from ..errors import Unsupported
from . import WindowOperator
from ._window_kernels import AGG_CODE, first_dead, ring_write, seqs_increasing, time_need

MIN_CAP = 16
MAX_ROWS = 2**53  # rows windows [NL, NR] with NL <= MAX_ROWS (exact in float64; n - NL in int64)


def _pow2(x: int) -> int:
    return 1 << max(4, int(x - 1).bit_length())


def _grow(a: np.ndarray, n: int, fill: Any) -> np.ndarray:
    if n <= len(a):
        return a
    b = np.full(max(n, 2 * len(a), 16), fill, a.dtype)
    b[: len(a)] = a
    return b


class RingOperator(WindowOperator):
    name: ClassVar[str] = "ring"
    aggs: ClassVar[tuple[str, ...]] = ()
    time_ok: ClassVar[str | None] = None  # None = serves time windows, else the reason it cannot
    historical_ok: ClassVar[str | None] = None  # None = serves windows with NR/TR > 0, else why not
    headroom: ClassVar[int] = 2  # capacity >= headroom * (elements needed + 1)

    def __init__(self, agg: str, time_based: bool) -> None:
        if agg not in AGG_CODE:
            raise ValueError(f"unknown aggregate {agg!r}; expected one of {tuple(AGG_CODE)}")
        super().__init__(agg, time_based)
        self.code = AGG_CODE[agg]
        self.q_left = np.zeros(0, np.float64)
        self.q_right = np.zeros(0, np.float64)
        self.q_start = np.zeros(0, np.int64)
        self.q_alive = np.zeros(0, np.bool_)
        self.q_phi = np.zeros(0, np.float64)
        self.q_num = np.zeros(0, np.int64)
        self.q_den = np.zeros(0, np.int64)
        self.q_p0 = np.zeros(0, np.int64)  # local position of the last element before the query's
        self.n_alive = 0
        self.reach = 0.0  # max left bound (NL or TL) over alive queries
        self.p0min = 0  # min q_p0 over alive queries: rows windows need no element at or before it
        self._dirty = False
        self.m = 0  # elements pushed (local positions 1..m)
        self.floor = 1  # first position whose structure entries are valid
        self.last_seq = 0
        self.t_last = -math.inf
        self._set_cap(MIN_CAP)

    # ------------------------------------------------------------------ capacity
    def _set_cap(self, cap: int) -> None:
        self.cap = int(cap)
        self.mask = self.cap - 1
        self._room = self.cap // self.headroom - 1  # rows: the most elements held without growing
        self.seqs = np.zeros(self.cap, np.int64)
        self.times = np.zeros(self.cap if self.time_based else 1, np.float64)
        self.vals = np.zeros(self.cap, np.float64)
        self._alloc(self.cap)

    @property
    def V(self) -> int:
        return max(self.floor, self.m - self.cap // 2 + 1, 1)

    def _retained(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """(first position, seqs, times, vals) of the valid positions, oldest first."""
        V, m = self.V, self.m
        if V > m:
            return m + 1, np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
        idx = np.arange(V, m + 1) & self.mask
        t = self.times[idx] if self.time_based else np.zeros(0)
        return V, self.seqs[idx].copy(), t.copy(), self.vals[idx].copy()

    def _rebuild(self, cap: int, keep: int) -> None:
        """New capacity ``cap``; the last ``keep`` valid elements are re-pushed at their positions."""
        V, s, t, v = self._retained()
        k = min(keep, len(v), cap // 2)
        s, v = s[len(s) - k:], v[len(v) - k:]
        t = t[len(t) - k:] if self.time_based else t
        self._set_cap(cap)
        m = self.m
        self.floor = m - k + 1
        if k:
            self._write(s, t, v, m - k)

    def _write(self, s: np.ndarray, t: np.ndarray, v: np.ndarray, pos0: int) -> None:
        ring_write(self.seqs, self.times, self.vals, self.mask, pos0, s, t if self.time_based else self.times, v,
                   self.time_based)
        self._push_struct(v, pos0)

    def _need(self, extra: int = 0) -> int:
        """Valid elements the alive queries' windows can still reach (rows windows: after ``extra``
        more elements): at most the reach, and only elements pushed since the earliest alive query
        registered."""
        if self.n_alive == 0:
            return 0
        if not self.time_based:
            return max(0, min(int(self.reach), self.m + extra - self.p0min))
        return int(time_need(self.times, self.mask, self.V, self.m, self.t_last - self.reach))

    def _refresh_reach(self) -> None:
        if self._dirty:
            alive = self.q_alive
            self.reach = float(self.q_left[alive].max()) if alive.any() else 0.0
            self.p0min = int(self.q_p0[alive].min()) if alive.any() else self.m
            self._dirty = False

    def _fit(self, extra: int = 0) -> None:
        """Grow (by doubling at least) for what the rows windows hold after ``extra`` more elements;
        shrink when the capacity is 8x larger than needed."""
        self._refresh_reach()
        need = self._need()
        want = _pow2(self.headroom * (self._need(extra) + 1))
        if want > self.cap or (self.cap > MIN_CAP and self.cap >= 8 * want):
            self._rebuild(max(want, MIN_CAP), need)

    # ------------------------------------------------------------------ protocol
    def register(self, qid: int, spec: Any, start: int = 0) -> None:
        qid = int(qid)
        if spec.agg != self.agg:
            raise ValueError(f"query {spec.id!r} has agg {spec.agg!r}; this operator serves {self.agg!r}")
        if (spec.time is not None) != self.time_based:
            raise ValueError(f"query {spec.id!r}: window kind does not match this operator's")
        if self.agg not in self.aggs:
            raise Unsupported(f"{self.name} serves {'/'.join(a.upper() for a in self.aggs)}, not {self.agg.upper()}")
        if self.time_based and self.time_ok is not None:
            raise Unsupported(self.time_ok)
        left, right = spec.time if self.time_based else spec.rows
        if right > 0 and self.historical_ok is not None:
            raise Unsupported(self.historical_ok)
        if not self.time_based and left > MAX_ROWS:
            raise Unsupported(f"rows window [{left}, {right}] is longer than 2^53 = {MAX_ROWS:,} elements, the "
                              "longest window vigil serves (the bound on every number of the contract)")
        self._check_query(spec)
        if qid < len(self.q_alive) and self.q_alive[qid]:
            raise ValueError(f"qid {qid} is already registered")
        n = qid + 1
        self.q_left = _grow(self.q_left, n, 0.0)
        self.q_right = _grow(self.q_right, n, 0.0)
        self.q_start = _grow(self.q_start, n, 0)
        self.q_alive = _grow(self.q_alive, n, False)
        self.q_phi = _grow(self.q_phi, n, 0.0)
        self.q_num = _grow(self.q_num, n, 0)
        self.q_den = _grow(self.q_den, n, 0)
        self.q_p0 = _grow(self.q_p0, n, 0)
        self.q_left[qid], self.q_right[qid], self.q_start[qid] = float(left), float(right), int(start)
        if spec.phi is not None:
            self.q_phi[qid] = float(spec.phi)
            self.q_num[qid], self.q_den[qid] = rank_fraction(spec.phi)
        self._refresh_reach()
        self.q_p0[qid] = p0 = self._position_of(int(start))
        self.p0min = p0 if self.n_alive == 0 else min(self.p0min, p0)
        self.q_alive[qid] = True
        self.n_alive += 1
        self.reach = max(self.reach, float(left))
        self._registered(qid)
        if not self.time_based:
            self._fit()

    def _position_of(self, seq: int) -> int:
        """Local position of the last retained element with seq <= ``seq`` (V - 1 if none)."""
        if self.m == 0 or seq >= self.last_seq:
            return self.m
        V, s, _, _ = self._retained()
        return V - 1 + int(np.searchsorted(s, seq, side="right"))

    def _check_query(self, spec: Any) -> None:
        """Hook: raise Unsupported for a query this algorithm cannot serve."""

    def _registered(self, qid: int) -> None:
        """Hook: per-query state of the subclass (materialize_all, lint)."""

    def terminate(self, qid: int) -> None:
        qid = int(qid)
        if qid < len(self.q_alive) and self.q_alive[qid]:
            self.q_alive[qid] = False
            self.n_alive -= 1
            if self.q_left[qid] >= self.reach or self.q_p0[qid] <= self.p0min:
                self._dirty = True
            self._terminated(qid)

    def _terminated(self, qid: int) -> None:
        """Hook."""

    def alive(self) -> int:
        return self.n_alive

    def push(self, values: np.ndarray, seqs: np.ndarray, times: np.ndarray | None = None) -> None:
        v = values if type(values) is np.ndarray and values.dtype == np.float64 else np.asarray(values, np.float64)
        s = seqs if type(seqs) is np.ndarray and seqs.dtype == np.int64 else np.asarray(seqs, np.int64)
        if len(v) != len(s):
            raise ValueError("values and seqs differ in length")
        if not len(s):
            return
        if not seqs_increasing(s, self.last_seq if self.m else -(2**62)):
            raise ValueError("seqs must be strictly increasing across pushes")
        if self.time_based:
            if times is None or len(times) != len(s):
                raise ValueError("a time-based operator needs one time per element")
            t = np.ascontiguousarray(times, dtype=np.float64)
        else:
            t = self.times
        k, i = len(v), 0
        if self.time_based:
            self._fit()
        elif self._dirty or (self.m + k - self.p0min > self._room and self.reach > self._room):
            self._fit(k)  # rows: grow for what the windows hold once these are in (or shrink)
        while i < k:
            if self.time_based:
                need = self._need()
                room = self.cap // 2 - need
                if room < max(1, self.cap // 8):  # grow at once for the rest (at most 2^17 at a time)
                    self._rebuild(max(2 * self.cap, min(_pow2(self.headroom * (need + k - i + 1)), 1 << 17)), need)
                    continue
                j = min(k, i + room)
            else:
                j = k
            self._write(s[i:j], t[i:j] if self.time_based else t, v[i:j], self.m)
            self.m += j - i
            self.last_seq = int(s[j - 1])
            if self.time_based:
                self.t_last = float(t[j - 1])
            self._pushed(i, j)
            i = j
        if self.time_based:
            self._fit()

    def _pushed(self, i: int, j: int) -> None:
        """Hook: after positions m-(j-i)+1..m were written (materialize_all)."""

    def lookup(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> np.ndarray:
        q = qids if type(qids) is np.ndarray and qids.dtype == np.int64 else np.asarray(qids, np.int64)
        bad = first_dead(q, self.q_alive)
        if bad >= 0:
            raise KeyError(f"qid {int(q[bad])} is not registered")
        out = np.empty(len(q), np.float64)
        if len(q):
            self._lookup_into(q, int(n), float(t_now), out)
        return out

    def nbytes(self) -> int:
        """Bytes held by the element-side state (rings + structure), not the query arrays."""
        return int(self.seqs.nbytes + self.times.nbytes + self.vals.nbytes + self._struct_nbytes())

    # ------------------------------------------------------------------ subclass interface
    def _alloc(self, cap: int) -> None:
        raise NotImplementedError

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        raise NotImplementedError

    def _lookup_into(self, qids: np.ndarray, n: int, t_now: float, out: np.ndarray) -> None:
        raise NotImplementedError

    def _struct_nbytes(self) -> int:
        return 0

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        ids = np.flatnonzero(self.q_alive).astype(np.int64)
        V, s, t, v = self._retained()
        return {
            "name": self.name, "agg": self.agg, "time_based": self.time_based,
            "qids": ids, "left": self.q_left[ids], "right": self.q_right[ids], "start": self.q_start[ids],
            "phi": self.q_phi[ids], "num": self.q_num[ids], "den": self.q_den[ids],
            "m": int(self.m), "last_seq": int(self.last_seq), "t_last": float(self.t_last),
            "first": int(V), "seqs": s, "times": t, "vals": v,
        }

    @classmethod
    def from_state(cls, st: dict[str, Any]) -> RingOperator:
        op = cls(st["agg"], bool(st["time_based"]))
        ids = np.asarray(st["qids"], np.int64)
        n = int(ids.max()) + 1 if len(ids) else 0
        op.q_left = np.zeros(n); op.q_right = np.zeros(n); op.q_start = np.zeros(n, np.int64)  # noqa: E702
        op.q_p0 = np.zeros(n, np.int64)
        op.q_alive = np.zeros(n, np.bool_); op.q_phi = np.zeros(n)  # noqa: E702
        op.q_num = np.zeros(n, np.int64); op.q_den = np.zeros(n, np.int64)  # noqa: E702
        op.q_left[ids] = st["left"]; op.q_right[ids] = st["right"]; op.q_start[ids] = st["start"]  # noqa: E702
        op.q_phi[ids] = st["phi"]; op.q_num[ids] = st["num"]; op.q_den[ids] = st["den"]  # noqa: E702
        op.q_alive[ids] = True
        op.n_alive = len(ids)
        op.reach = float(op.q_left[ids].max()) if len(ids) else 0.0
        vals = np.asarray(st["vals"], np.float64)
        k = len(vals)
        op.m = int(st["first"]) - 1
        op.last_seq = int(st["last_seq"])
        op.t_last = float(st["t_last"])
        op._set_cap(_pow2(op.headroom * (k + 1)))
        op.floor = op.m + 1
        if k:
            op._write(np.asarray(st["seqs"], np.int64), np.asarray(st["times"], np.float64), vals, op.m)
            op.m += k
        op.m = int(st["m"])
        for qid in ids:  # what each query's window can hold: the retained elements after its start
            op.q_p0[qid] = op._position_of(int(op.q_start[qid]))
        op.p0min = int(op.q_p0[ids].min()) if len(ids) else op.m
        op._restored(st)
        return op

    def _restored(self, st: dict[str, Any]) -> None:
        """Hook: rebuild per-query state from the restored rings."""
        for qid in np.flatnonzero(self.q_alive):
            self._registered(int(qid))
