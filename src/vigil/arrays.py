"""Array helpers shared by every family (a neutral module: no family package imports another).

- :class:`GrowableArray`: append-only numpy array, amortized O(1) appends.
- :func:`quantile_rank`: the contract's rank max(1, ceil(phi*N)), exact with phi read as a decimal:
  THE quantile definition of the project (docs/contract.md); every oracle calls it, and compiled
  kernels use a twin fed by :func:`rank_fraction` that agrees with it exactly (tests).
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


# windows of up to RANK_EXACT_MAX elements get the exact rank from rank_fraction's (num, den)
RANK_EXACT_MAX = 2**47


def rank_fraction(phi: float) -> tuple[int, int]:
    """(num, den), 0 < num <= den < 2^61, with ceil(num*n/den) == ceil(phi*n) (phi read as a decimal)
    for every 1 <= n <= RANK_EXACT_MAX: what a compiled kernel needs to compute :func:`quantile_rank`
    exactly in 64-bit integers (``vigil.windows._window_kernels.quantile_rank``).

    phi's decimal num/den itself when den < 2^61 (every phi with at most 18 decimal places). Otherwise
    (0.0014285714285714286 = 7142857142857143 / (5*10^18), 1e-30, ...) phi lies strictly between two
    neighbours a/b < c/d of the Farey sequence of order C = RANK_EXACT_MAX (no fraction k/n with
    n <= C lies strictly between them) and is none of them (its denominator exceeds C); their mediant
    (a+c)/(b+d) (denominator <= 2C) lies in the same gap, so for every n <= C no integer k has
    k/n between phi and the mediant: phi*n and mediant*n have the same ceiling."""
    f = decimal_value(phi)
    if not 0 < f <= 1:
        raise ValueError(f"phi must lie in (0, 1], got {phi}")
    if f.denominator < 2**61:
        return f.numerator, f.denominator
    C = RANK_EXACT_MAX
    a, b, c, d = 0, 1, 1, 1  # a/b < f < c/d, Farey neighbours (b*c - a*d == 1); Stern-Brocot descent
    while b + d <= C:
        if f > Fraction(a + c, b + d):  # move the left end right: (a + k c)/(b + k d) < f
            k = min((C - b) // d, -(-(f * b - a) // (c - f * d)) - 1)
            a, b = a + k * c, b + k * d
        else:  # f < mediant (f == mediant would need f's denominator <= C)
            k = min((C - d) // b, -(-(c - f * d) // (f * b - a)) - 1)
            c, d = c + k * a, d + k * b
    return a + c, b + d


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
