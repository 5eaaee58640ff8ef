"""GK summary (paper 004 §2.3.1; Greenwald and Khanna, SIGMOD 2001) in the paper's (v, r-, r+) form.

An eps-approximate quantile summary of a whole stream: ordered tuples (v_i, r-_i, r+_i), each v_i
an element, r-_i <= rank(v_i) <= r+_i (Definition 1), kept so that Theorem 1's conditions hold
after every element:

1. r+_1 <= eps*N + 1 (here r-_1 = r+_1 = 1: the minimum is kept exactly),
2. r-_m >= (1 - eps)*N (here r-_m = r+_m = N: the maximum is kept exactly),
3. r+_i <= r-_{i-1} + 2*eps*N for 2 <= i <= m,

hence for every phi some tuple has phi*N - eps*N <= r- <= r+ <= phi*N + eps*N. While
2*eps*N < 1 no two distinct ranks can be that close, so condition 3 is read as
r+_i <= r-_{i-1} + max(1, 2*eps*N): the summary is then exact (every gap is 1, nothing is merged)
and the best tuple is within one rank of the target (the contract's +1).

Batch API: :meth:`GKSummary.insert` takes a whole batch; it is cut into chunks of at most
1/(2 eps) elements (the paper's merge period), each chunk sorted (O(c log c); the whole periods
of a batch by one vectorized numpy sort, :func:`presort`) and merged into the summary in one
pass (O(m + c), in place from the tail, :func:`._gk_kernels.insert_run`), then the merge/compress step
runs (O(m), :func:`._gk_kernels.compress`) every 1/(2 eps) elements. Time per element
O(log c + m/c) amortized with c = 1/(2 eps); space m tuples (measured: a few hundred to a few
thousand for eps = 0.005, see docs/experiments/quantiles.md).

:func:`theorem1_violations` checks Definition 1 and Theorem 1 against the true data (tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _gk_kernels as K


def compress_period(eps: float) -> int:
    """The paper's merge period: every 1/(2 eps) elements (at least 1)."""
    return max(1, int(1.0 / (2.0 * eps)))


def presort(x: np.ndarray, first: int, period: int, buf: np.ndarray | None = None) -> tuple[np.ndarray, int, int]:
    """The whole merge periods of batch x sorted with numpy's (vectorized) sort, one call for the
    batch: returns (pre, pf, pt), pre[pf:pt] holding x's blocks of ``period`` elements from
    offset ``first`` (the first merge boundary in x: (next boundary - n) mod period), each sorted; ``buf`` is reused when large enough.
    The kernels take a chunk that is one such block from ``pre`` instead of sorting it."""
    k = (len(x) - first) // period if first < len(x) else 0
    pf, pt = first, first + k * period
    if k == 0 or period < 2:
        return x, 0, 0
    pre = buf if buf is not None and len(buf) >= len(x) else np.empty(len(x))
    blk = pre[pf:pt]
    blk[:] = x[pf:pt]
    blk.reshape(k, period).sort(axis=1)
    return pre, pf, pt


class GKSummary:
    """An eps-approximate GK summary over a whole stream (see the module doc)."""

    def __init__(self, eps: float, capacity: int = 64) -> None:
        if not (0 < eps < 1):
            raise ValueError(f"eps must lie in (0, 1), got {eps}")
        self.eps = float(eps)
        self.period = compress_period(self.eps)
        self.n = 0
        self.m = 0
        self.next_compress = self.period
        self._alloc(capacity)

    def _alloc(self, cap: int) -> None:
        self.v = np.empty(cap, np.float64)
        self.lo = np.empty(cap, np.int64)
        self.hi = np.empty(cap, np.int64)
        self._ov = np.empty(cap, np.float64)
        self._olo = np.empty(cap, np.int64)
        self._ohi = np.empty(cap, np.int64)
        self.pin = np.zeros(cap, np.int32)
        self._opin = np.zeros(cap, np.int32)

    def _reserve(self, need: int) -> None:
        if need > len(self.v):
            m = self.m
            old = (self.v[:m].copy(), self.lo[:m].copy(), self.hi[:m].copy())
            self._alloc(max(need, 2 * len(self.v)))
            self.v[:m], self.lo[:m], self.hi[:m] = old

    def insert(self, values: np.ndarray) -> None:
        """Insert a batch of elements (float64, no NaN), in order."""
        x = np.ascontiguousarray(values, np.float64)
        pre, pf, pt = presort(x, (self.next_compress - self.n) % self.period, self.period)
        p = 0
        while p < len(x):
            self._reserve(self.m + min(len(x) - p, self.period) + 1)
            used, self.m, self.n, self.next_compress = K.insert_run(
                self.v, self.lo, self.hi, self.pin, self.m, self.n, self.next_compress, self.period, self.eps, x[p:],
                pre[p:], pf - p, pt - p)
            p += int(used)

    def insert_chunk(self, xs_sorted: np.ndarray) -> None:
        """Merge one sorted chunk (no compression)."""
        self._reserve(self.m + len(xs_sorted))
        self.m = K.merge_sorted(self.v, self.lo, self.hi, self.pin, self.m, self.n, xs_sorted,
                                self._ov, self._olo, self._ohi, self._opin)
        self.n += len(xs_sorted)
        self.v, self._ov = self._ov, self.v
        self.lo, self._olo = self._olo, self.lo
        self.hi, self._ohi = self._ohi, self.hi

    def compress(self) -> None:
        self.m = K.compress(self.v, self.lo, self.hi, self.pin, self.m, self.n, self.eps)
        while self.next_compress <= self.n:
            self.next_compress += self.period

    def tuples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(v, r-, r+) copies of the m tuples."""
        return self.v[: self.m].copy(), self.lo[: self.m].copy(), self.hi[: self.m].copy()

    def query(self, phi: float, eps_q: float | None = None) -> float:
        """A value answering (phi, max(eps_q, eps)) (the best tuple of its query interval); NaN if empty."""
        if self.m == 0:
            return float("nan")
        e = self.eps if eps_q is None else float(eps_q)
        i = K.answer_ranks(self.lo, self.hi, self.m, float(phi), e, self.eps, self.n)
        return float(self.v[i])

    def state(self) -> dict[str, Any]:
        v, lo, hi = self.tuples()
        return {"eps": self.eps, "n": self.n, "next_compress": self.next_compress, "v": v, "lo": lo, "hi": hi}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> GKSummary:
        g = cls(float(s["eps"]), max(64, len(s["v"])))
        g.n = int(s["n"])
        g.next_compress = int(s["next_compress"])
        g.m = len(s["v"])
        g.v[: g.m], g.lo[: g.m], g.hi[: g.m] = s["v"], s["lo"], s["hi"]
        return g


def theorem1_violations(v: np.ndarray, lo: np.ndarray, hi: np.ndarray, data: np.ndarray, eps: float) -> list[str]:
    """Every way (v, lo, hi) fails Definition 1 or Theorem 1 as a summary of ``data`` (empty = ok).
    A tuple's true rank is checked against the range of ranks its value occupies among ties."""
    out: list[str] = []
    n = len(data)
    m = len(v)
    if n == 0:
        return [] if m == 0 else ["tuples over no data"]
    srt = np.sort(np.asarray(data, np.float64))
    if m == 0:
        return ["no tuples"]
    first = np.searchsorted(srt, v, "left") + 1
    last = np.searchsorted(srt, v, "right")
    if (last < first).any():
        out.append("a value is not an element")
    if (np.diff(v) < 0).any():
        out.append("values not sorted")
    if (np.diff(lo) < 0).any() or (np.diff(hi) < 0).any():
        out.append("r- or r+ not monotone")
    if ((lo > last) | (hi < first)).any():
        bad = np.flatnonzero((lo > last) | (hi < first))[:3]
        out.append(f"rank bounds exclude every rank of the value at tuples {bad.tolist()}")
    if (lo > hi).any():
        out.append("r- > r+")
    if hi[0] > eps * n + 1:
        out.append(f"condition 1: r+_1 = {hi[0]} > eps*N + 1")
    if lo[-1] < (1 - eps) * n:
        out.append(f"condition 2: r-_m = {lo[-1]} < (1-eps)*N")
    if m > 1 and (hi[1:] - lo[:-1] > max(1.0, 2 * eps * n) + 1e-9).any():
        out.append("condition 3: r+_i > r-_{i-1} + max(1, 2*eps*N)")
    return out
