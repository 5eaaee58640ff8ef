"""Array helpers shared by every family (a neutral module: no family package imports another).

- :class:`GrowableArray`: append-only numpy array, amortized O(1) appends.
- :func:`quantile_rank`: the contract's rank max(1, ceil(phi*N)), exact with phi read as a decimal.
- :func:`decimal_value`, :func:`check_increasing`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np


def decimal_value(x: float) -> Fraction:
    """The exact rational value of the decimal a float is written as (its shortest repr):
    ``decimal_value(0.1) == Fraction(1, 10)``, not the binary double 0.1000000000000000055..."""
    return Fraction(repr(float(x)))


def quantile_rank(phi: float, n: int) -> int:
    """1-based rank ``max(1, ceil(phi*n))`` of the phi-quantile among n elements (0 when n = 0),
    computed exactly with phi read as a decimal (see the module docstring)."""
    n = int(n)
    if n <= 0:
        return 0
    return min(n, max(1, math.ceil(decimal_value(phi) * n)))


class GrowableArray:
    """Append-only numpy array with amortized O(1) appends (capacity doubling). ``width`` None =
    1-D; an int = 2-D with that many columns."""

    def __init__(self, dtype: Any, width: int | None = None) -> None:
        self.dtype = np.dtype(dtype)
        self.width = width
        self._n = 0
        self._buf = np.empty(self._shape(16), dtype=self.dtype)

    def _shape(self, cap: int) -> tuple[int, ...]:
        return (cap,) if self.width is None else (cap, self.width)

    def __len__(self) -> int:
        return self._n

    def extend(self, a: np.ndarray) -> None:
        a = np.asarray(a, dtype=self.dtype)
        if a.shape[1:] != self._shape(0)[1:]:
            raise ValueError(f"expected rows of shape {self._shape(0)[1:]}, got {a.shape[1:]}")
        need = self._n + len(a)
        if need > len(self._buf):
            cap = max(need, 2 * len(self._buf))
            buf = np.empty(self._shape(cap), dtype=self.dtype)
            buf[: self._n] = self._buf[: self._n]
            self._buf = buf
        self._buf[self._n : need] = a
        self._n = need

    @property
    def view(self) -> np.ndarray:
        """The stored rows (a view: do not keep it across appends)."""
        return self._buf[: self._n]

    @classmethod
    def of(cls, a: np.ndarray, dtype: Any, width: int | None = None) -> GrowableArray:
        g = cls(dtype, width)
        g.extend(a)
        return g


def check_increasing(seqs: np.ndarray, last: int | None) -> None:
    if len(seqs) and (np.any(np.diff(seqs) <= 0) or (last is not None and seqs[0] <= last)):
        raise ValueError("seqs must be strictly increasing across pushes")
