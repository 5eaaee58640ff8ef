"""Quantiles family (massive continuous quantile queries; paper 004).

QuantileOperator protocol (one instance per (column, rows window or None)):

    op = Impl(eps, rows)               # eps: the engine's summary epsilon (--quantile-epsilon);
                                       # rows: sliding window length in seq units, or None
    op.register(qid, phi, eps, start)  # query (phi, eps_q); counts only elements with seq > start
    op.terminate(qid)
    op.push(values, seqs)              # float64[n], int64[n] strictly increasing
    op.lookup(qids, n) -> float64[k]   # answers after element n; NaN when the window is empty

Window after element n, for a query registered at start: the pushed elements with seq > start
(rows None) or those with seq in [max(start+1, n-rows+1), n].
Contract: with N elements in the window, the answer is one of them and its rank r (any rank it
occupies among ties) satisfies |r - max(1, ceil(phi*N))| <= e*N + 1, where
e = max(eps_q, summary eps). The oracle answers exactly.
"""

from __future__ import annotations

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

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> QuantileOperator: ...
