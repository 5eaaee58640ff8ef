"""Threshold family (range thresholding on streams, RTS; paper 000).

Protocol every implementation follows (numpy in, numpy out; nothing of Spark or files)::

    op = Impl(dim)                                  # d >= 1 range dimensions
    op.register(qids, lo, hi, tau, repeat=None)     # int64[k], float64[k,d], float64[k,d], int64[k] (>= 1),
                                                    # repeat: None or int64[k] (0 or >= 1)
    op.terminate(qids)               # int64[k]; ids not alive are ignored
    qids, offsets = op.push(points, weights)        # float64[n,d], int64[n] (>= 1)
    op.alive() -> int                               # number of alive queries
    op.remaining() -> (qids, lo, hi, rem)           # alive queries, exact remaining thresholds
    op.export() -> (qids, lo, hi, rem, repeat)      # the same with each query's re-arm threshold
    op.state() -> dict ; Impl.from_state(dict) -> op   # see vigil.state (no pickle)

Ranges are closed: a point p is in query q iff lo[q, j] <= p[j] <= hi[q, j] for every j
(-inf / +inf for unbounded). A query registered before a push counts only the elements of that
push and later. ``push`` returns every query that matured during the batch, as (qid, 0-based
offset of the element at which its weight first reached tau), sorted by (offset, qid); matured
queries are removed (TERMINATE) and never reported twice.

Re-arming queries: ``repeat[i] = r >= 1`` makes query i re-arm after each maturity: at the element
at which it matures its weight restarts at 0 (the weight by which that element overshot is
dropped), it counts from the next element on with threshold r, and it matures again, as often as
the weight allows, until terminated; ``repeat[i] = 0`` (or ``repeat=None``) is the one-shot query.
A re-arming query may mature several times in one push (once per element at most): ``push``
reports every maturity, sorted by (offset, qid). ``tau`` is the threshold of the current round (a
fresh query: r itself; a query moved between operators: its remaining threshold), so
``register(*op.export())`` continues every query exactly. Every implementation re-arms inside
its kernels, for all queries maturing at one element at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


def repeat_array(repeat: Any, k: int) -> np.ndarray:
    """``repeat`` of :meth:`ThresholdOperator.register` as int64[k] (None: all zeros)."""
    if repeat is None:
        return np.zeros(k, np.int64)
    r = np.ascontiguousarray(repeat, dtype=np.int64).reshape(-1)
    if r.shape[0] != k:
        raise ValueError("repeat must have one entry per query")
    if (r < 0).any():
        raise ValueError("repeat thresholds must be >= 0")
    return r


class ThresholdOperator(ABC):
    name: ClassVar[str]

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)

    @abstractmethod
    def register(self, qids: np.ndarray, lo: np.ndarray, hi: np.ndarray, tau: np.ndarray,
                 repeat: np.ndarray | None = None) -> None: ...

    @abstractmethod
    def terminate(self, qids: np.ndarray) -> None: ...

    @abstractmethod
    def push(self, points: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    @abstractmethod
    def alive(self) -> int: ...

    def remaining(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(qids, lo[k,d], hi[k,d], remaining thresholds tau - W > 0) of the alive queries;
        registering them with these thresholds elsewhere continues them exactly (one-shot
        queries; :meth:`export` carries the re-arm thresholds too)."""
        return self.export()[:4]

    def export(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`remaining` plus each query's re-arm threshold (0 = one-shot):
        ``register(*export())`` elsewhere continues every query exactly."""
        raise NotImplementedError(f"{type(self).__name__}.export")

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> ThresholdOperator: ...
