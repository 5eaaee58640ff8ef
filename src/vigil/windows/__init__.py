"""Windows family (shared sliding-window aggregates and substream filters; paper 002).

WindowOperator protocol (one instance per (column, agg, window kind, time column)):

    op = Impl(agg, time_based)         # agg in sum|count|avg|min|max|quantile
    op.register(qid, spec, start)      # spec: vigil.specs.WindowAggregateSpec; may raise
                                       #   vigil.errors.Unsupported(reason). The query counts
                                       #   only elements with seq > start (DESIGN: "exists from
                                       #   after element n").
    op.terminate(qid)
    op.push(values, seqs, times)       # float64[n], int64[n] strictly increasing, float64[n] or None
                                       # (times non-decreasing; given iff time_based)
    op.lookup(qids, n, t_now) -> float64[k]   # answers after element n; NaN = SQL null
    op.state() / Impl.from_state(state)

Rows window [NL, NR] after element n: the elements with seq in [n-NL+1, n-NR] and seq > start
(rejected rows leave gaps in seq and are simply absent); NL <= 2^53 (longer: ``Unsupported``), and
memory follows the elements held, not NL. Time window [TL, TR]: elements with time in
(t_now-TL, t_now-TR], t_now = time of the last pushed element with seq <= n (no element yet ->
empty window; no wall clock: an idle stream's window does not slide). Empty window -> NaN, except
COUNT -> 0. QUANTILE(phi) = the element of 1-based rank max(1, ceil(phi*N)) in sorted order
(``vigil.arrays.quantile_rank``, docs/contract.md "Window aggregates").

Lookups are for n >= the last pushed seq (the engine's order: an operation at n applies after
element n); implementations that keep only what windows can reach (all but the oracle) assume it.
Implementations (``vigil.registry.IMPLEMENTATIONS["windows"]``; ``auto`` is the default):
``rint`` (SUM/COUNT/AVG), ``bint`` (+ MIN/MAX), ``lint`` (rows windows only), ``bint_qnt``
(QUANTILE), ``slickdeque`` (MIN/MAX, suffix windows only), baselines ``psoup``,
``materialize_all`` (SUM/COUNT/AVG), ``materialize_none``; they also offer ``nbytes()`` (bytes of
element-side state). An aggregate or window an implementation cannot serve raises
``vigil.errors.Unsupported`` in ``register`` with the reason.

Keyed window aggregates (queries with ``where`` / ``group_by``) go to ``keyed_group.KeyedWindowGroup``
(one per (agg, column, time column, key columns, ranges)) and its operator ``keyed.KeyedWindows``
(one shared structure per key, whatever ``--algo windows=NAME`` except ``oracle``, which selects
the exact ``oracle.KeyedOracle``):

    op.register(qid, spec, start, key) # key: the query's key code, or -1 (group_by: every key)
    op.push(values, seqs, times, codes)   # codes: int64 key code per row, -1 = kept by no key
    op.lookup(qids, n, t_now) -> float64[k]               # keyed queries
    op.lookup_group(qid, keys, t_now) -> (codes, values)  # a group_by query over candidate keys

SubstreamOperator protocol (one instance per (key column, value column, agg, time column)):

    op = Impl(agg)                     # count | sum
    op.register(qid, spec, start)      # spec: vigil.specs.SubstreamFilterSpec; counts seq > start
    op.terminate(qid)
    op.push(values, times, keys, seqs) # float64[n] (ones for count), float64[n], int64[n] key codes
    op.lookup(qids, n, t_now) -> list[np.ndarray]   # per query, the int64 key codes reported
    op.state() / Impl.from_state(state)

Reported keys: those with >= 1 element in (t_now-T, t_now] whose aggregate lies in the open range
(v1, v2); with epsilon (one-sided ranges) any superset of those whose members all satisfy the range
relaxed by epsilon (v1*(1-eps) for (v1, inf); v2*(1+eps) for (-inf, v2)).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class WindowOperator(ABC):
    name: ClassVar[str]

    def __init__(self, agg: str, time_based: bool) -> None:
        self.agg = agg
        self.time_based = bool(time_based)

    @abstractmethod
    def register(self, qid: int, spec: Any, start: int) -> None: ...

    @abstractmethod
    def terminate(self, qid: int) -> None: ...

    @abstractmethod
    def push(self, values: np.ndarray, seqs: np.ndarray, times: np.ndarray | None) -> None: ...

    @abstractmethod
    def lookup(self, qids: np.ndarray, n: int, t_now: float) -> np.ndarray: ...

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> WindowOperator: ...


class SubstreamOperator(ABC):
    name: ClassVar[str]

    def __init__(self, agg: str) -> None:
        self.agg = agg

    @abstractmethod
    def register(self, qid: int, spec: Any, start: int) -> None: ...

    @abstractmethod
    def terminate(self, qid: int) -> None: ...

    @abstractmethod
    def push(self, values: np.ndarray, times: np.ndarray, keys: np.ndarray, seqs: np.ndarray) -> None: ...

    @abstractmethod
    def lookup(self, qids: np.ndarray, n: int, t_now: float) -> list[np.ndarray]: ...

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> SubstreamOperator: ...
