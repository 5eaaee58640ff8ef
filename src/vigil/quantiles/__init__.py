"""Quantiles family (massive continuous quantile queries; paper 004).

QuantileOperator protocol (one instance per (column, rows window or None)):

    op = Impl(eps, rows)               # eps: the engine's summary epsilon (--quantile-epsilon);
                                       # rows: sliding window length in seq units, or None
    op.register(qid, phi, eps, start)  # query (phi, eps_q); counts only elements with seq > start
    op.terminate(qid)
    op.push(values, seqs)              # float64[n], int64[n] strictly increasing
    op.lookup(qids, n) -> float64[k]   # answers after element n; NaN when the window is empty
    op.summary(qid, n) -> float64[m]   # the query's mergeable summary after element n (sharded mode)

Window after element n, for a query registered at start: the pushed elements with seq > start
(rows None) or those with seq in [max(start+1, n-rows+1), n].
Mergeable summaries (sharded mode, :mod:`vigil.pipeline.sharded`): when the elements are
partitioned over several operators (one per shard, by seq), each shard's ``summary(qid, n)`` covers
its part of the query's window; :func:`merge_summaries` combines the parts on the driver and
:func:`answer_from_summary` answers. The oracle's summary is its sorted window values (merging is
exact). This is the hook a GK-style operator (paper 004) implements with a real mergeable
summary: it then returns its summary in the same form, sorted values that stand for the window
(there with weights/ranks, and merge_summaries would grow a weighted variant).
Contract: with N elements in the window, the answer is one of them and its rank r (any rank it
occupies among ties) satisfies |r - max(1, ceil(phi*N))| <= e*N + 1, where
e = max(eps_q, summary eps). The oracle answers exactly.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class QuantileOperator(ABC):
    name: ClassVar[str]

    def __init__(self, eps: float, rows: int | None) -> None:
        self.eps = float(eps)
        self.rows = rows

    @abstractmethod
    def register(self, qid: int, phi: float, eps: float, start: int) -> None: ...

    @abstractmethod
    def terminate(self, qid: int) -> None: ...

    @abstractmethod
    def push(self, values: np.ndarray, seqs: np.ndarray) -> None: ...

    @abstractmethod
    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray: ...

    def summary(self, qid: int, n: int) -> np.ndarray:
        """The query's mergeable summary after element n: sorted float64 values (see module doc)."""
        raise NotImplementedError(f"{type(self).__name__} provides no mergeable summary (needed by sharded mode)")

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> QuantileOperator: ...


def merge_summaries(parts: list[np.ndarray]) -> np.ndarray:
    """Merge the shards' summaries of one query (sorted arrays) into one sorted array. O(m log m)."""
    if not parts:
        return np.empty(0, np.float64)
    return np.sort(np.concatenate([np.asarray(p, np.float64) for p in parts]), kind="mergesort")


def answer_from_summary(summary: np.ndarray, phi: float) -> float:
    """The phi-quantile of a merged summary: the element of rank max(1, ceil(phi*N)); NaN if empty."""
    from ..windows.oracle import quantile_rank

    n = len(summary)
    return float(summary[quantile_rank(phi, n) - 1]) if n else math.nan
