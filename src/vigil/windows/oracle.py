"""Windows oracles: exact, obviously right, slow. The reference every WindowOperator and every
SubstreamOperator is compared with (paper 002's ASW operators, §2, and substream filters, §4).

Both oracles store every pushed element forever (O(n) space) and answer a lookup by masking the
stored arrays with the window's definition, then aggregating what is left: O(n) per lookup
(plus O(W log W) for QUANTILE, O(W) Python-level work for exact SUM). No sharing, no cleverness.

Semantics (docs/contract.md, "Window aggregates"; ``vigil.windows`` docstring), made precise here:

* A query registered after element ``start`` counts only elements with seq > start (docs/contract.md:
  a registered query "counts only the elements after it"); its window is the intersection.
* Rows window [NL, NR] after element n: elements with seq in [n-NL+1, n-NR].
* Time window [TL, TR] after element n: elements with seq <= n and time in
  (t_now-TL, t_now-TR], the bounds computed in float64 exactly as written (``t_now - TL``);
  t_now is the caller's (the time of the last element with seq <= n); t_now NaN = no element yet
  = empty window.
* NaN values are SQL NULLs: ignored by every aggregate (``COUNT(column)`` counts non-null values;
  the engine passes ones for ``COUNT(*)``). A window with no non-null value is empty.
* Empty window -> NaN, except COUNT -> 0.
* SUM is the correctly rounded sum of the window (``math.fsum``), so it does not depend on the
  order of additions; AVG = SUM / COUNT. With an infinite value the plain float sum is used.
* QUANTILE(phi) = the element of 1-based rank ``max(1, ceil(phi*N))`` in ascending order, where
  phi is read as the *decimal number it is written as* (its shortest repr), not as its binary
  double: for phi = 0.07 and N = 100 the rank is 7 (as SQL's DECIMAL 0.07 * 100 = 7), whereas the
  float product 0.07*100 = 7.000000000000001 would give 8. :func:`quantile_rank`
  (``vigil.arrays``) is the one function for this rank (the contract's, docs/contract.md); compiled
  kernels use its twin ``_window_kernels.quantile_rank``, exact with ``arrays.rank_fraction``.

Substream filters: the keys with >= 1 element (null value or not) in (t_now-T, t_now] whose
COUNT(non-null values) or SUM(non-null values) over that window lies in the open range (v1, v2)
(a SUM over only nulls is NULL and never in range) -- exactly ``SELECT key FROM S WHERE t in
window GROUP BY key HAVING agg > v1 AND agg < v2``. The oracle ignores epsilon (the exact set is a
valid answer to an epsilon query); :func:`substream_ok` checks an approximate answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..arrays import GrowableArray, check_increasing, decimal_value, quantile_rank  # noqa: F401
from . import SubstreamOperator, WindowOperator

AGGS = ("sum", "count", "avg", "min", "max", "quantile")


def exact_sum(x: np.ndarray) -> float:
    """Correctly rounded sum (math.fsum); falls back to the float sum when inf/overflow occurs."""
    try:
        return math.fsum(x.tolist())
    except (ValueError, OverflowError):
        return float(np.sum(x))


def aggregate(agg: str, x: np.ndarray, phi: float | None = None) -> float:
    """SQL aggregate of the values x (NaN = NULL, ignored). Empty -> NaN (COUNT -> 0)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    n = len(x)
    if agg == "count":
        return float(n)
    if n == 0:
        return math.nan
    if agg == "sum":
        return exact_sum(x)
    if agg == "avg":
        return exact_sum(x) / n
    if agg == "min":
        return float(np.min(x))
    if agg == "max":
        return float(np.max(x))
    if agg == "quantile":
        if phi is None:
            raise ValueError("quantile needs phi")
        return float(np.sort(x)[quantile_rank(phi, n) - 1])
    raise ValueError(f"unknown aggregate {agg!r}; expected one of {AGGS}")


# ----------------------------------------------------------------------------- window aggregates


class WindowOracle(WindowOperator):
    """Exact sliding-window aggregates by masking every stored element per lookup."""

    name = "oracle"

    def __init__(self, agg: str, time_based: bool) -> None:
        if agg not in AGGS:
            raise ValueError(f"unknown aggregate {agg!r}; expected one of {AGGS}")
        super().__init__(agg, time_based)
        self._values = GrowableArray(np.float64)
        self._seqs = GrowableArray(np.int64)
        self._times = GrowableArray(np.float64)
        self._q: dict[int, tuple[float, float, float | None]] = {}  # qid -> (left, right, phi)
        self._start: dict[int, int] = {}  # qid -> registration position (counts seq > start)

    def register(self, qid: int, spec: Any, start: int = 0) -> None:
        qid = int(qid)
        if spec.agg != self.agg:
            raise ValueError(f"query {spec.id!r} has agg {spec.agg!r}; this operator serves {self.agg!r}")
        if (spec.time is not None) != self.time_based:
            raise ValueError(f"query {spec.id!r}: window kind does not match this operator's")
        if qid in self._q:
            raise ValueError(f"qid {qid} is already registered")
        left, right = spec.time if self.time_based else spec.rows
        self._q[qid] = (left, right, None if spec.phi is None else float(spec.phi))
        self._start[qid] = int(start)

    def terminate(self, qid: int) -> None:
        self._q.pop(int(qid), None)
        self._start.pop(int(qid), None)

    def alive(self) -> int:
        return len(self._q)

    def push(self, values: np.ndarray, seqs: np.ndarray, times: np.ndarray | None = None) -> None:
        values = np.asarray(values, dtype=np.float64)
        seqs = np.asarray(seqs, dtype=np.int64)
        if len(values) != len(seqs):
            raise ValueError("values and seqs differ in length")
        check_increasing(seqs, int(self._seqs.view[-1]) if len(self._seqs) else None)
        if self.time_based:
            if times is None or len(times) != len(seqs):
                raise ValueError("a time-based operator needs one time per element")
            self._times.extend(times)
        self._values.extend(values)
        self._seqs.extend(seqs)

    def window_values(self, qid: int, n: int, t_now: float) -> np.ndarray:
        """The values (NaN included) of the stored elements inside query qid's window."""
        left, right, _ = self._q[int(qid)]
        seqs = self._seqs.view
        if self.time_based:
            times = self._times.view
            mask = (seqs <= n) & (times > t_now - left) & (times <= t_now - right)
        else:
            # seqs are >= 1: bounds below 1 are clamped (a window longer than int64 is not an overflow)
            mask = (seqs >= max(n - left + 1, 0)) & (seqs <= max(n - right, 0))
        return self._values.view[mask & (seqs > self._start[int(qid)])]

    def lookup(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> np.ndarray:
        out = np.empty(len(qids), dtype=np.float64)
        for i, qid in enumerate(np.asarray(qids, dtype=np.int64)):
            if int(qid) not in self._q:
                raise KeyError(f"qid {int(qid)} is not registered")
            phi = self._q[int(qid)][2]
            out[i] = aggregate(self.agg, self.window_values(qid, n, t_now), phi)
        return out

    def state(self) -> dict[str, Any]:
        ids = sorted(self._q)
        return {
            "agg": self.agg,
            "time_based": self.time_based,
            "values": self._values.view.copy(),
            "seqs": self._seqs.view.copy(),
            "times": self._times.view.copy(),
            "qids": np.array(ids, dtype=np.int64),
            "left": np.array([self._q[i][0] for i in ids], dtype=np.float64),
            "right": np.array([self._q[i][1] for i in ids], dtype=np.float64),
            "phi": np.array([math.nan if self._q[i][2] is None else self._q[i][2] for i in ids]),
            "start": np.array([self._start[i] for i in ids], dtype=np.int64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> WindowOracle:
        op = cls(s["agg"], bool(s["time_based"]))
        op._values.extend(s["values"])
        op._seqs.extend(s["seqs"])
        op._times.extend(s["times"])
        conv = float if op.time_based else int
        for i, qid in enumerate(s["qids"]):
            phi = float(s["phi"][i])
            op._q[int(qid)] = (conv(s["left"][i]), conv(s["right"][i]), None if math.isnan(phi) else phi)
            op._start[int(qid)] = int(s["start"][i])
        return op


class KeyedOracle:
    """Exact keyed window aggregates (``where`` / ``group_by``; the protocol of
    :class:`vigil.windows.keyed.KeyedWindows`): every element kept with its key code; a query's
    window is computed from its key's elements alone. Rows window [NL, NR] after element n: the
    key's elements of rank in [c-NL+1, c-NR] among the key's c elements with seq <= n; time
    window: the key's elements with time in (t_now-TL, t_now-TR]; then only seq > start."""

    name = "oracle"

    def __init__(self, agg: str, time_based: bool) -> None:
        self.agg, self.time_based = agg, bool(time_based)
        self._rows = [GrowableArray(np.int64), GrowableArray(np.float64), GrowableArray(np.int64),
                      GrowableArray(np.float64)]  # code, value, seq, time
        self._q: dict[int, tuple] = {}  # qid -> (key, left, right, start, phi)

    def keys(self, n: int) -> None:
        pass

    def register(self, qid: int, spec: Any, start: int, key: int = -1) -> None:
        left, right = spec.time if self.time_based else spec.rows
        self._q[int(qid)] = (int(key), left, right, int(start), None if spec.phi is None else float(spec.phi))

    def terminate(self, qid: int) -> None:
        self._q.pop(int(qid), None)

    def push(self, values, seqs, times, codes) -> None:
        keep = np.asarray(codes) >= 0
        for arr, x in zip(self._rows, (codes, values, seqs, values if times is None else times), strict=True):
            arr.extend(np.asarray(x)[keep])

    def _value(self, qid: int, key: int, t_now: float) -> tuple[int, float]:
        """(elements in the window, the aggregate) of query qid over key ``key``."""
        _, left, right, start, phi = self._q[qid]
        code, vals, seqs, times = (a.view for a in self._rows)
        m = code == key
        vals, seqs, times = vals[m], seqs[m], times[m]
        if self.time_based:
            w = (times > t_now - left) & (times <= t_now - right)
        else:
            rank = np.arange(len(vals), 0, -1)  # 1 = the key's newest element
            w = (rank <= left) & (rank > right)
        x = vals[w & (seqs > start)]
        return len(x), aggregate(self.agg, x, phi)

    def lookup(self, qids: np.ndarray, n: int, t_now: float) -> np.ndarray:
        return np.array([self._value(int(q), self._q[int(q)][0], t_now)[1] for q in qids], np.float64)

    def lookup_group(self, qid: int, keys: np.ndarray, t_now: float) -> tuple[np.ndarray, np.ndarray]:
        got = [(int(k), *self._value(int(qid), int(k), t_now)) for k in keys]
        got = [(k, v) for k, c, v in got if c]
        return np.array([k for k, _ in got], np.int64), np.array([v for _, v in got], np.float64)

    def state(self) -> dict[str, Any]:
        return {"agg": self.agg, "time_based": self.time_based, "rows": [a.view.copy() for a in self._rows],
                "queries": [[q, *v] for q, v in self._q.items()]}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> KeyedOracle:
        op = cls(s["agg"], bool(s["time_based"]))
        for arr, x in zip(op._rows, s["rows"], strict=True):
            arr.extend(np.asarray(x))
        op._q = {int(q[0]): (int(q[1]), q[2], q[3], int(q[4]), q[5]) for q in s["queries"]}
        return op


# ----------------------------------------------------------------------------- substream filters


class SubstreamOracle(SubstreamOperator):
    """Exact substream filters: GROUP BY key over the masked window, then the open-range test."""

    name = "oracle"

    def __init__(self, agg: str) -> None:
        if agg not in ("count", "sum"):
            raise ValueError(f"substream filters aggregate with count or sum, not {agg!r}")
        super().__init__(agg)
        self._values = GrowableArray(np.float64)
        self._times = GrowableArray(np.float64)
        self._keys = GrowableArray(np.int64)
        self._seqs = GrowableArray(np.int64)
        self._q: dict[int, tuple[float, float, float, float | None]] = {}  # qid -> (T, v1, v2, eps)
        self._start: dict[int, int] = {}  # qid -> registration position (counts seq > start)

    def register(self, qid: int, spec: Any, start: int = 0) -> None:
        qid = int(qid)
        if spec.agg != self.agg:
            raise ValueError(f"query {spec.id!r} has agg {spec.agg!r}; this operator serves {self.agg!r}")
        if qid in self._q:
            raise ValueError(f"qid {qid} is already registered")
        lo, hi = spec.bounds()
        self._q[qid] = (float(spec.time), lo, hi, None if spec.epsilon is None else float(spec.epsilon))
        self._start[qid] = int(start)

    def terminate(self, qid: int) -> None:
        self._q.pop(int(qid), None)
        self._start.pop(int(qid), None)

    def alive(self) -> int:
        return len(self._q)

    def push(self, values: np.ndarray, times: np.ndarray, keys: np.ndarray, seqs: np.ndarray) -> None:
        seqs = np.asarray(seqs, dtype=np.int64)
        if not (len(values) == len(times) == len(keys) == len(seqs)):
            raise ValueError("values, times, keys and seqs differ in length")
        check_increasing(seqs, int(self._seqs.view[-1]) if len(self._seqs) else None)
        self._values.extend(values)
        self._times.extend(times)
        self._keys.extend(keys)
        self._seqs.extend(seqs)

    def aggregates(self, qid: int, n: int, t_now: float) -> dict[int, float]:
        """For every key with >= 1 element in query qid's window, its aggregate over the window
        (COUNT of non-null values, or SUM of them, NaN when all are null)."""
        T = self._q[int(qid)][0]
        times = self._times.view
        mask = (self._seqs.view <= n) & (self._seqs.view > self._start[int(qid)]) & (times > t_now - T) & (times <= t_now)
        keys, vals = self._keys.view[mask], self._values.view[mask]
        out: dict[int, float] = {}
        for k in np.unique(keys):
            v = vals[keys == k]
            out[int(k)] = aggregate(self.agg, v)
        return out

    def lookup(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> list[np.ndarray]:
        res = []
        for qid in np.asarray(qids, dtype=np.int64):
            if int(qid) not in self._q:
                raise KeyError(f"qid {int(qid)} is not registered")
            _, lo, hi, _ = self._q[int(qid)]
            aggs = self.aggregates(qid, n, t_now)
            res.append(np.array(sorted(k for k, a in aggs.items() if lo < a < hi), dtype=np.int64))
        return res

    def state(self) -> dict[str, Any]:
        ids = sorted(self._q)
        return {
            "agg": self.agg,
            "values": self._values.view.copy(),
            "times": self._times.view.copy(),
            "keys": self._keys.view.copy(),
            "seqs": self._seqs.view.copy(),
            "qids": np.array(ids, dtype=np.int64),
            "params": np.array(
                [[*self._q[i][:3], math.nan if self._q[i][3] is None else self._q[i][3]] for i in ids],
                dtype=np.float64,
            ).reshape(-1, 4),
            "start": np.array([self._start[i] for i in ids], dtype=np.int64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> SubstreamOracle:
        op = cls(s["agg"])
        op._values.extend(s["values"])
        op._times.extend(s["times"])
        op._keys.extend(s["keys"])
        op._seqs.extend(s["seqs"])
        for qid, (T, lo, hi, eps), st in zip(s["qids"], s["params"], s["start"], strict=True):
            op._q[int(qid)] = (float(T), float(lo), float(hi), None if math.isnan(eps) else float(eps))
            op._start[int(qid)] = int(st)
        return op


def substream_ok(
    exact_keys: Iterable[int],
    candidate_keys: Iterable[int],
    per_key_agg: Mapping[int, float],
    lo: float | None,
    hi: float | None,
    eps: float | None,
) -> bool:
    """Is ``candidate_keys`` a valid answer to a substream filter with open range (lo, hi)?

    ``exact_keys``: the exact answer; ``per_key_agg``: the aggregate over the window of every key
    with >= 1 element in it (:meth:`SubstreamOracle.aggregates`). Without epsilon (None or 0) the
    candidate must equal the exact set. With epsilon it must be a superset of the exact keys whose
    members all have >= 1 element in the window and an aggregate inside the range relaxed by
    epsilon: (lo - eps*|lo|, hi + eps*|hi|), i.e. v1*(1-eps) for (v1, inf) and v2*(1+eps) for
    (-inf, v2) when v1, v2 >= 0, as paper 002 §4.1 states it; with |.| a negative bound is
    relaxed too instead of tightened. Duplicated candidate keys are an error.
    """
    cand = [int(k) for k in candidate_keys]
    exact = {int(k) for k in exact_keys}
    if len(set(cand)) != len(cand) or not exact <= set(cand):
        return False
    if not eps:
        return set(cand) == exact
    flo = -math.inf if lo is None else float(lo)
    fhi = math.inf if hi is None else float(hi)
    rlo = flo - eps * abs(flo) if math.isfinite(flo) else flo
    rhi = fhi + eps * abs(fhi) if math.isfinite(fhi) else fhi
    for k in cand:
        if k not in per_key_agg:
            return False
        a = per_key_agg[k]
        if not (rlo < a < rhi):
            return False
    return True
