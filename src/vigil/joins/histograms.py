"""Runtime statistics of the data-sensitive join router (paper 003 §4.1, §4.2, §5.4).

* :class:`KeyHistogram` — equi-width histogram (100 buckets) on a relation's join column,
  estimating m', the number of stored tuples with S.B = b (§4.1: "a standard histogram for
  S(B)"). Integer keys (select/window joins: dictionary codes or integer values): the estimate
  is the bucket's count over the number of integers the bucket spans (uniformity inside a
  bucket); float keys: count / width x ``grain`` (unused by the band router, which needs only
  |S|). Tuples are absorbed lazily from the side's stored keys (so a restored or bootstrapped
  operator gets its statistics too): O(1) per tuple; a key outside the range rebuilds the
  histogram over all stored keys with a doubled span (amortized O(1) per tuple).
* :class:`IntervalHistogram` — the bucket histogram of query ranges of §4.1 (equi-width, 100
  buckets) approximating the step function f(a) = #ranges stabbed by a: registering a range
  raises every bucket by the fraction of it the range covers, terminating lowers it (O(buckets)
  per update, numba). Estimates n' (all queries' arriving-side ranges) and n'' (scattered
  queries only). Ranges with infinite ends are clipped to the bucket span; stabbing values left
  or right of the span are answered exactly by the counts of ranges unbounded on that side. A
  range whose finite end falls outside the span marks the histogram stale; the owner rebuilds
  it from the alive ranges (O(n + n x buckets touched)), with a 10% margin on each side.
* :func:`estimate_keys` / :func:`estimate_ranges` — numba lookups over a batch (the select
  router's own kernel is :mod:`vigil.joins._route_select`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

BUCKETS = 100


@numba.njit(cache=True, nogil=True)
def estimate_keys(lo, w, counts, keys, out):
    """m' estimates for integer-valued keys: counts[bucket] / w (w integers per bucket)."""
    nb = len(counts)
    for i in range(len(keys)):
        b = keys[i]
        if not (b >= lo):
            out[i] = 0.0
            continue
        j = int((b - lo) // w)
        out[i] = counts[j] / w if j < nb else 0.0
    return out


@numba.njit(cache=True, nogil=True)
def estimate_ranges(e0, w, h, n_left, n_right, x, out):
    """n' estimates: h[bucket of x]; left of the span n_left, right of it n_right; NaN -> 0."""
    nb = len(h)
    e1 = e0 + nb * w
    for i in range(len(x)):
        a = x[i]
        if a != a:
            out[i] = 0.0
        elif a < e0:
            out[i] = n_left
        elif a >= e1:
            out[i] = n_right
        else:
            out[i] = h[min(nb - 1, int((a - e0) / w))]
    return out


@numba.njit(cache=True, nogil=True)
def _iv_add(h, e0, w, lo, hi, sign):
    """Raise (sign=+1) or lower (-1) every bucket by the fraction of it each [lo, hi] covers."""
    nb = len(h)
    e1 = e0 + nb * w
    for i in range(len(lo)):
        a = max(lo[i], e0)
        b = min(hi[i], e1)
        if not a < b:
            continue
        ja = min(nb - 1, int((a - e0) / w))
        jb = min(nb - 1, int((b - e0) / w))
        if ja == jb:
            h[ja] += sign * (b - a) / w
            continue
        h[ja] += sign * (e0 + (ja + 1) * w - a) / w
        for j in range(ja + 1, jb):
            h[j] += sign
        h[jb] += sign * (b - (e0 + jb * w)) / w


@numba.njit(cache=True, nogil=True)
def _absorb(keys, seen, lo, w, counts):
    """Add keys[seen:] to the buckets; False (counts then partly updated) if one is outside."""
    nb = len(counts)
    for i in range(seen, len(keys)):
        v = float(keys[i])
        if not abs(v) < np.inf:
            continue
        if not v >= lo:
            return False
        j = int((v - lo) // w)
        if j >= nb:
            return False
        counts[j] += 1.0
    return True


class KeyHistogram:
    """Equi-width histogram of one side's stored join keys (integer keys)."""

    def __init__(self, buckets: int = BUCKETS) -> None:
        self.nb = buckets
        self.lo = 0.0
        self.w = 1.0
        self.counts = np.zeros(buckets)
        self.seen = 0  # stored keys absorbed so far
        self.empty = True

    def sync(self, keys: np.ndarray) -> None:
        """Absorb the stored keys past ``seen`` (``keys``: all of the side's keys, in order): one
        numba call; a key outside the span rebuilds the histogram."""
        if len(keys) <= self.seen:
            return
        if self.empty:
            fin = np.isfinite(np.asarray(keys[self.seen :], np.float64))
            if fin.any():
                self._rebuild(np.asarray(keys, np.float64))
        elif not _absorb(keys, self.seen, self.lo, self.w, self.counts):
            self._rebuild(np.asarray(keys, np.float64))
        self.seen = len(keys)

    def _rebuild(self, keys: np.ndarray) -> None:
        keys = keys[np.isfinite(keys)]
        lo, hi = float(keys.min()), float(keys.max())
        span = hi - lo + 1.0
        if not self.empty:  # the range grew: at least double the span (amortized O(1) per tuple)
            span = max(span, 2.0 * self.nb * self.w)
        self.empty = False
        self.lo = float(math.floor(lo))
        self.w = float(max(1, math.ceil(span / self.nb)))
        j = ((keys - self.lo) // self.w).astype(np.int64)
        self.counts[:] = np.bincount(j, minlength=self.nb)[: self.nb]  # in place: the router may hold a view

    def estimate(self, keys: np.ndarray) -> np.ndarray:
        out = np.zeros(len(keys))
        if self.empty:
            return out
        return estimate_keys(self.lo, self.w, self.counts, np.asarray(keys, np.float64), out)


class IntervalHistogram:
    """Bucket histogram of closed ranges [lo, hi] (estimates how many contain a value)."""

    def __init__(self, buckets: int = BUCKETS) -> None:
        self.nb = buckets
        self.e0, self.w = 0.0, 1.0
        self.h = np.zeros(buckets)
        self.n_left = 0  # ranges with lo = -inf (they hold every value left of the span)
        self.n_right = 0
        self.stale = True

    def _fits(self, lo: float, hi: float) -> bool:
        e1 = self.e0 + self.nb * self.w
        return all(not math.isfinite(v) or self.e0 <= v <= e1 for v in (lo, hi))

    def update(self, lo: float, hi: float, sign: int) -> None:
        """Register (+1) or terminate (-1) one range."""
        if self.stale or not self._fits(lo, hi):
            self.stale = True
            return
        self.n_left += sign * (lo == -math.inf)
        self.n_right += sign * (hi == math.inf)
        _iv_add(self.h, self.e0, self.w, np.array([lo]), np.array([hi]), float(sign))

    def rebuild(self, lo: np.ndarray, hi: np.ndarray) -> None:
        lo = np.asarray(lo, np.float64)
        hi = np.asarray(hi, np.float64)
        fin = np.concatenate([lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
        if len(fin):
            a, b = float(fin.min()), float(fin.max())
            pad = max(0.1 * (b - a), 1.0)
            self.e0, self.w = a - pad, (b - a + 2 * pad) / self.nb
        self.h = np.zeros(self.nb)
        _iv_add(self.h, self.e0, self.w, lo, hi, 1.0)
        self.n_left = int(np.sum(lo == -math.inf))
        self.n_right = int(np.sum(hi == math.inf))
        self.stale = False

    def estimate(self, x: np.ndarray) -> np.ndarray:
        return estimate_ranges(self.e0, self.w, self.h, float(self.n_left), float(self.n_right),
                               np.asarray(x, np.float64), np.zeros(len(x)))


