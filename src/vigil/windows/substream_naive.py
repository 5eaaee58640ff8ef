"""The naive substream filter (paper 002, §4, first paragraph): an exact sliding-window aggregate
per key (R-INT style running counts/sums over a per-key time ring, §3.2 Fig. 6 with the window's
left end found by binary search over the key's timestamps), and a lookup that asks every key.

Per element: O(1) amortized (append to the key's ring, drop what left the longest window).
Per lookup: O(|K| log W) (one ASW lookup per key: a binary search and a difference of running
sums; non-integer sums: a correctly rounded sum of the key's window, O(W)).
Space: O(elements inside the longest registered window + |K|).

This module also holds the machinery CI (:mod:`vigil.windows.ci`) builds on: the query table,
the per-key rings in one pool (:mod:`._ci_kernels`), snapshot/restore.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import SubstreamOperator
from ._ci_kernels import (
    BAD_KEY,
    BAD_SEQ,
    DONE,
    MORE_GROUPS,
    NEED_KEYS,
    POOL_FULL,
    compact,
    compact_size,
    gather_rows,
    push_batch,
)
from ._ci_lookup import lookup_naive_batch

_KEY_ARRAYS = {"k_off": np.int64, "k_cap": np.int64, "k_head": np.int64, "k_tail": np.int64, "k_m": np.float64,
               "any_seq": np.int64, "any_time": np.float64, "nn_seq": np.int64, "nn_time": np.float64}
# the per-key arrays are columns of two records per key (a probe or an update reads few lines)
_REC = ("k_off", "k_cap", "k_head", "k_tail", "any_seq", "nn_seq")
_FREC = ("k_m", "any_time", "nn_time")
_POOL = ("p_seq", "p_time", "p_val", "p_cumb")  # columns of one 32-byte record per ring element


def _key_arrays(cap: int) -> dict[str, np.ndarray]:
    rec = np.zeros((cap, len(_REC)), np.int64)
    frec = np.zeros((cap, len(_FREC)), np.float64)
    frec[:, 1:] = -np.inf
    return {"krec": rec, "kf": frec, **{name: rec[:, i] for i, name in enumerate(_REC)},
            **{name: frec[:, i] for i, name in enumerate(_FREC)}}


def _pool(size: int) -> dict[str, np.ndarray]:
    rec = np.zeros((size, len(_POOL)), np.float64)  # p_seq: an int64 view of column 0 (exact int64 seqs)
    return {"pool": rec, "p_seq": rec.view(np.int64)[:, 0], **{name: rec[:, i] for i, name in enumerate(_POOL) if i}}


_QMAP_MAX = 1 << 24
_QUERY = {"q_T": np.float64, "q_start": np.int64, "q_lo": np.float64, "q_hi": np.float64, "q_eps": np.float64}
_START = 1  # the column of q_start: int64, read and written only through the int64 view of Q
_EMPTY_HEAP = (np.zeros((1, 1, 3), np.float64), np.zeros((1, 1), np.int32))


class SubstreamNaive(SubstreamOperator):
    """Exact per-key sliding-window COUNT/SUM; every lookup scans every key."""

    name = "naive"
    uses_levels = False

    def __init__(self, agg: str, probe: bool = False) -> None:
        if agg not in ("count", "sum"):
            raise ValueError(f"substream filters aggregate with count or sum, not {agg!r}")
        super().__init__(agg)
        # probe=True (benchmarks): decide "agg > v" per key by one threshold probe (the element owning
        # point M_k - v, as CI's post-filter) instead of computing the key's aggregate
        self.probe = bool(probe)
        self.a: dict[str, np.ndarray] = {**_key_arrays(16), **_pool(1024)}
        self.meta = np.zeros(1, np.int64)  # [pool used]
        self.nkeys = 0
        self.last_seq = 0
        self.integral = True  # every non-null value so far an integer, running totals < 2^53
        self.nonneg = True  # ... and none negative or infinite (CI-SUM needs both)
        # queries: qid -> slot, a row of Q = (T, start, lo, hi, eps) (q_* are its column views; start
        # is an int64 in the float64 record, as seqs are int64 and compared exactly)
        self.slot: dict[int, int] = {}
        self.qmap = np.full(16, -1, np.int64)  # the same map as an array, for qids < _QMAP_MAX
        self._set_q(np.zeros((0, len(_QUERY))))
        self.free: list[int] = []
        self._tmax = 0.0
        self._ips: dict[tuple, np.ndarray] = {}

    # ------------------------------------------------------------------------- queries
    def register(self, qid: int, spec: Any, start: int = 0) -> None:
        qid = int(qid)
        if spec.agg != self.agg:
            raise ValueError(f"query {spec.id!r} has agg {spec.agg!r}; this operator serves {self.agg!r}")
        if qid in self.slot:
            raise ValueError(f"qid {qid} is already registered")
        lo, hi = spec.bounds()
        if self.free:
            s = self.free.pop()
        else:
            s = len(self.Q)
            self._set_q(np.concatenate([self.Q, np.zeros((max(4, len(self.Q)), len(_QUERY)))]))
            self.free.extend(range(len(self.Q) - 1, s, -1))
        self.Q[s] = (float(spec.time), 0.0, lo, hi, math.nan if spec.epsilon is None else float(spec.epsilon))
        self.q["q_start"][s] = int(start)
        self.slot[qid] = s
        self._map(qid, s)
        self._tmax = max(self._tmax, float(spec.time))

    def _set_q(self, Q: np.ndarray) -> None:
        self.Q = Q
        self.q = {name: Q[:, i] for i, name in enumerate(_QUERY)}
        self.q["q_start"] = Q.view(np.int64)[:, _START]

    def _map(self, qid: int, s: int) -> None:
        if 0 <= qid < _QMAP_MAX:
            if qid >= len(self.qmap):
                self.qmap = np.concatenate([self.qmap, np.full(max(qid + 1, 2 * len(self.qmap)) - len(self.qmap), -1)])
            self.qmap[qid] = s

    def terminate(self, qid: int) -> None:
        s = self.slot.pop(int(qid), None)
        if s is not None:
            self.Q[s, 0] = 0.0
            self.free.append(s)
            self._map(int(qid), -1)
            self._tmax = self.tmax()

    def alive(self) -> int:
        return len(self.slot)

    def tmax(self) -> float:
        """The longest registered window (0 without queries: nothing needs to be kept)."""
        return float(self.q["q_T"].max()) if len(self.q["q_T"]) else 0.0

    # ------------------------------------------------------------------------- push
    def _ensure_keys(self, nkeys: int) -> None:
        cap = len(self.a["k_off"])
        if nkeys > cap:
            arrs = _key_arrays(max(nkeys, 2 * cap))
            for name in ("krec", "kf"):
                arrs[name][:cap] = self.a[name]
            self.a.update(arrs)
        self.nkeys = max(self.nkeys, nkeys)

    def _heaps(self) -> tuple[np.ndarray, ...]:
        return _EMPTY_HEAP

    def _levels_args(self) -> tuple[int, int, int, bool]:  # p, G, lmin, unit
        return 1, 0, 0, True

    def _more_groups(self) -> None:  # pragma: no cover - naive has no levels
        raise AssertionError

    def _compact(self, lim: float) -> None:
        a = self.a
        args = (a["k_off"], a["k_cap"], a["k_head"], a["k_tail"])
        need = int(compact_size(self.nkeys, lim, a["p_time"], *args))
        size = max(1024, 2 * need)
        new = _pool(size)
        used = compact(self.nkeys, lim, a["p_seq"], a["p_time"], a["p_val"], a["p_cumb"], *args,
                       new["p_seq"], new["p_time"], new["p_val"], new["p_cumb"])
        a.update(new)
        self.meta[0] = used

    def push(self, values: np.ndarray, times: np.ndarray, keys: np.ndarray, seqs: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        times = np.asarray(times, dtype=np.float64)
        keys = np.asarray(keys, dtype=np.int64)
        seqs = np.asarray(seqs, dtype=np.int64)
        if not (len(values) == len(times) == len(keys) == len(seqs)):
            raise ValueError("values, times, keys and seqs differ in length")
        if not len(seqs):
            return
        if self.agg == "sum":
            nn = values[~np.isnan(values)]
            if len(nn):
                if not (np.all(np.isfinite(nn)) and np.all(nn == np.floor(nn))):
                    self.integral = False
                if np.any(nn < 0) or not np.all(np.isfinite(nn)):
                    self.nonneg = False
                if self.integral:
                    total = float(self.a["k_m"][: self.nkeys].__abs__().max(initial=0.0)) + float(np.abs(nn).sum())
                    if total >= 2.0**53:
                        self.integral = False
        tmax = self._tmax
        i = 0
        while True:
            a = self.a
            p, G, lmin, unit = self._levels_args()
            ip = self._ip(p, G, lmin, unit, self.uses_levels, self.agg == "count")
            status, i, kmax = push_batch(values, times, keys, seqs, i, self.last_seq, tmax, ip, a["pool"], a["krec"],
                                         a["kf"], self.meta, *self._heaps())
            if status == BAD_SEQ:
                raise ValueError("seqs must be strictly increasing across pushes")
            if status == BAD_KEY:
                raise ValueError("key codes must be >= 0")
            if status != NEED_KEYS:
                # every key of the batch may own a ring by now: compaction and level rebuilds must
                # move / index it (keys first seen in this batch included)
                self.nkeys = max(self.nkeys, int(kmax) + 1)
            if status == DONE:
                break
            if status == NEED_KEYS:
                self._ensure_keys(int(kmax) + 1)
            elif status == POOL_FULL:
                self._compact(float(times[i]) - tmax)
            elif status == MORE_GROUPS:
                self._more_groups()
        self.last_seq = int(seqs[-1])

    # ------------------------------------------------------------------------- lookup
    def _query_rows(self, qids: np.ndarray) -> np.ndarray:
        """The rows (T, start, lo, hi, eps) of the queries ``qids`` (bit copies: start stays int64)."""
        rows, bad = gather_rows(self.qmap, self.Q, qids)
        if bad < 0:
            return rows
        try:  # qids beyond the array map
            return self.Q[np.array([self.slot[int(q)] for q in qids], dtype=np.int64)].reshape(-1, len(_QUERY))
        except KeyError as e:
            raise KeyError(f"qid {e.args[0]} is not registered") from None

    def _ip(self, *vals: int) -> np.ndarray:
        """The int parameter array of a kernel call (cached: building one costs ~1 us)."""
        ip = self._ips.get(vals)
        if ip is None:
            if len(self._ips) > 64:
                self._ips.clear()
            ip = self._ips[vals] = np.array(vals, np.int64)
        return ip

    def _check_position(self, n: int) -> None:
        if n < self.last_seq:
            raise ValueError(f"lookup at {n} but elements up to {self.last_seq} were pushed")

    def _split(self, out: np.ndarray, offs: np.ndarray) -> list[np.ndarray]:
        return [out[offs[i]: offs[i + 1]] for i in range(len(offs) - 1)]

    def lookup(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> list[np.ndarray]:
        return self._split(*self.lookup_flat(qids, n, t_now))

    def lookup_flat(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`lookup`'s key codes as one array and offsets: query ``i``'s codes are
        ``codes[offs[i]:offs[i + 1]]``."""
        self._check_position(n)
        Q = self._query_rows(np.asarray(qids, dtype=np.int64))
        a = self.a
        ci_ok = self.agg == "count" or (self.integral and self.nonneg)
        ip = self._ip(self.nkeys, self.agg == "sum", self.agg == "count" or self.integral, ci_ok, self.agg == "count",
                      self.probe)
        return lookup_naive_batch(Q, float(t_now), ip, a["pool"], a["krec"], a["kf"])

    # ------------------------------------------------------------------------- state
    def nbytes(self) -> int:
        """Bytes held by the operator's arrays (the space bound's subject)."""
        return int(sum(v.nbytes for v in self.a.values() if v.base is None) + sum(v.nbytes for v in self._heaps()))

    def _live(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(live counts per key, absolute numbers, pool slots) of every element still in a ring."""
        a, nk = self.a, self.nkeys
        tail, head = a["k_tail"][:nk], a["k_head"][:nk]
        live = head - tail
        first = np.cumsum(live) - live
        e = np.arange(int(live.sum()), dtype=np.int64) - np.repeat(first, live) + np.repeat(tail, live)
        slots = np.repeat(a["k_off"][:nk], live) + (e & np.repeat(a["k_cap"][:nk] - 1, live))
        return live, e, slots

    def state(self) -> dict[str, Any]:
        """Plain arrays: per-key scalars, the live ring elements of every key in key order
        (``seqs``, ``times``, ``values``, ``cumb``; ``live`` per key), the query table."""
        ids = sorted(self.slot)
        slots = [self.slot[i] for i in ids]
        live, _, where = self._live()
        s: dict[str, Any] = {"agg": self.agg, "nkeys": self.nkeys, "last_seq": self.last_seq,
                             "integral": self.integral, "nonneg": self.nonneg, "probe": self.probe, "live": live,
                             "seqs": self.a["p_seq"][where], "times": self.a["p_time"][where],
                             "values": self.a["p_val"][where], "cumb": self.a["p_cumb"][where],
                             "qids": np.array(ids, dtype=np.int64)}
        for name in _KEY_ARRAYS:
            if name not in ("k_off", "k_cap"):
                s[name] = self.a[name][: self.nkeys].copy()
        for name, arr in self.q.items():
            s[name] = arr[slots].astype(_QUERY[name])
        return s

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> SubstreamNaive:
        op = cls(s["agg"])
        op._load(s)
        return op

    def _load(self, s: dict[str, Any]) -> None:
        nk = int(s["nkeys"])
        self._ensure_keys(nk)
        a = self.a
        for name in _KEY_ARRAYS:
            if name not in ("k_off", "k_cap"):
                a[name][:nk] = s[name]
        live = np.asarray(s["live"], np.int64)
        cap = np.full(nk, 4, np.int64)
        while np.any(cap < 2 * live):
            cap = np.where(cap < 2 * live, 2 * cap, cap)
        a["k_cap"][:nk] = cap
        a["k_off"][:nk] = np.cumsum(cap) - cap
        used = int(cap.sum())
        a.update(_pool(max(1024, 2 * used)))
        _, _, where = self._live()
        for name, key in (("p_seq", "seqs"), ("p_time", "times"), ("p_val", "values"), ("p_cumb", "cumb")):
            a[name][where] = s[key]
        self.meta[0] = used
        self.last_seq = int(s["last_seq"])
        self.integral = bool(s["integral"])
        self.nonneg = bool(s["nonneg"])
        self.probe = bool(s.get("probe", False))
        self._set_q(np.zeros((len(s["qids"]), len(_QUERY))))
        for name in _QUERY:
            self.q[name][:] = s[name]
        self.slot = {int(q): i for i, q in enumerate(s["qids"])}
        for q, i in self.slot.items():
            self._map(q, i)
        self.free = []
        self._tmax = self.tmax()
