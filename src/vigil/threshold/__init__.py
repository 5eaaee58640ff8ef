"""Threshold family (range thresholding on streams, RTS; paper 000).

Protocol every implementation follows (numpy in, numpy out; nothing of Spark or files)::

    op = Impl(dim)                                  # d >= 1 range dimensions
    op.register(qids, lo, hi, tau)   # int64[k], float64[k,d], float64[k,d], int64[k] (>= 1)
    op.terminate(qids)               # int64[k]; ids not alive are ignored
    qids, offsets = op.push(points, weights)        # float64[n,d], int64[n] (>= 1)
    op.alive() -> int                               # number of alive queries
    op.remaining() -> (qids, lo, hi, rem)           # alive queries, exact remaining thresholds
    op.state() -> dict ; Impl.from_state(dict) -> op   # see vigil.state (no pickle)

Ranges are closed: a point p is in query q iff lo[q, j] <= p[j] <= hi[q, j] for every j
(-inf / +inf for unbounded). A query registered before a push counts only the elements of that
push and later. ``push`` returns every query that matured during the batch, as (qid, 0-based
offset of the element at which its weight first reached tau), sorted by (offset, qid); matured
queries are removed (TERMINATE) and never reported twice.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class ThresholdOperator(ABC):
    name: ClassVar[str]

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)

    @abstractmethod
    def register(self, qids: np.ndarray, lo: np.ndarray, hi: np.ndarray, tau: np.ndarray) -> None: ...

    @abstractmethod
    def terminate(self, qids: np.ndarray) -> None: ...

    @abstractmethod
    def push(self, points: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    @abstractmethod
    def alive(self) -> int: ...

    def remaining(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(qids, lo[k,d], hi[k,d], remaining thresholds tau - W > 0) of the alive queries;
        registering them with these thresholds elsewhere continues them exactly."""
        raise NotImplementedError(f"{type(self).__name__}.remaining")

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> ThresholdOperator: ...
