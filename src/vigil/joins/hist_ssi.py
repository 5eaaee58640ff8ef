"""HIST-SSI: histograms for intervals from the stabbing partition (paper 003 App. B, Lemmas 4-5,
Figs. 24-25), and HIST-EQW, the equi-width histogram it is measured against.

Problem: estimate f_I(x), the number of intervals of I stabbed by x, with a step function of
few buckets, minimizing the mean-squared relative error E^2 = int |h - f|^2 / f^2 phi(x) dx.

HIST-SSI: the canonical stabbing partition (Lemma 1) splits I into groups I_1..I_tau with
stabbing points p_i; left of p_i, f_{I_i} is the increasing step function #(lo <= x), right of
p_i the decreasing #(hi >= x). Each half is approximated separately (Lemma 4: bucket boundaries
at break points suffice) by a weighted 1D k-means over its step values y_l with weights
w_l = phi([x_l, x_{l+1})) / y_l^2 (Lemma 5); buckets are given to the groups in proportion to
their cardinality (the paper's heuristic; at least one per half), and Lloyd's iteration (the
"simpler iterative k-means" the paper suggests; clusters of sorted values are contiguous)
runs on each half. The result is the sum of the per-group step functions: O(k) pieces, summed
into one step function with <= 2k break points. phi is uniform on [lo_min, hi_max] unless a
density over a grid is given.

Cost: O(n log n) for the partition's sort, then O(n + k iters) for the k-means over all groups
(O(n) per iteration); query O(log k) (binary search over the break points). Space O(k).
Measured (``vigil bench joins --preset appB``, docs/experiments/joins.md): on the paper's
interval workload and on our fig12 rangeA's, HIST-SSI is NOT better than HIST-EQW here (mean
relative error 0.41-0.79 with the group-relative weights of App. B, 0.14-0.27 with weights
relative to f_I (``total_weights``), against 0.02-0.14 for HIST-EQW at 20-100 buckets), so the
router keeps the equi-width histograms (which also update incrementally).

HIST-EQW: k equal buckets over the span, each holding the average of f over it (every interval
adds the fraction of the bucket it covers): O(n + k) build with a difference array.
"""

from __future__ import annotations

import numpy as np

from .partition import canonical_partition


def _kmeans_1d(y: np.ndarray, w: np.ndarray, k: int, iters: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Weighted k-means of sorted values y (contiguous clusters): (cluster start indices, centres)."""
    m = len(y)
    if k >= m:  # one bucket per break point: exact
        return np.arange(m), y.astype(np.float64)
    k = max(1, k)
    starts = np.unique((np.arange(k) * m) // k)  # k clusters of equal counts, refined by Lloyd
    for _ in range(iters):
        ends = np.r_[starts[1:], m]
        sw = np.add.reduceat(w, starts)
        swy = np.add.reduceat(w * y, starts)
        c = np.where(sw > 0, swy / np.where(sw > 0, sw, 1), (y[starts] + y[ends - 1]) / 2)
        c = np.sort(c)
        mids = (c[1:] + c[:-1]) / 2  # y sorted ascending: a point goes to the first centre past its midpoint
        new = np.unique(np.concatenate([[0], np.searchsorted(y, mids, "right")]))
        new = new[new < m]
        if len(new) == len(starts) and (new == starts).all():
            break
        starts = new
    ends = np.r_[starts[1:], m]
    sw = np.add.reduceat(w, starts)
    swy = np.add.reduceat(w * y, starts)
    c = np.where(sw > 0, swy / np.where(sw > 0, sw, 1), (y[starts] + y[ends - 1]) / 2)
    return starts, c


def _half(xs: np.ndarray, ys: np.ndarray, right_end: float, k: int, phi, f_all=None) -> list[tuple[float, float, float]]:
    """Pieces (start, end, value) approximating the step function equal to ys[l] on
    [xs[l], xs[l+1]) (xs[m] = right_end) with k buckets (weighted k-means, Lemma 5). Weights
    phi / y^2 (the group's own relative error, as App. B), or phi / f_I^2 with ``f_all`` (the
    error relative to the whole set's count, which is what an estimate of f_I is judged by)."""
    ends = np.r_[xs[1:], right_end]
    ref = ys if f_all is None else f_all((xs + ends) / 2)
    w = phi(xs, ends) / np.maximum(ref, 1.0) ** 2
    order = np.argsort(ys, kind="stable")  # k-means on the values; buckets are contiguous in x as f is monotone
    starts, c = _kmeans_1d(ys[order], w[order], k)
    lab = np.empty(len(ys), np.int64)
    lab[order] = np.searchsorted(starts, np.arange(len(ys)), "right") - 1
    out = []
    j = 0
    while j < len(xs):  # runs of equal label along x
        e = j
        while e + 1 < len(xs) and lab[e + 1] == lab[j]:
            e += 1
        out.append((float(xs[j]), float(ends[e]), float(c[lab[j]])))
        j = e + 1
    return out


def _uniform(lo: float, hi: float):
    span = max(hi - lo, 1e-300)
    return lambda a, b: (np.clip(b, lo, hi) - np.clip(a, lo, hi)) / span


class StepHistogram:
    """A step function: value[j] on [breaks[j], breaks[j+1]), 0 outside."""

    def __init__(self, breaks: np.ndarray, values: np.ndarray, pieces: int | None = None) -> None:
        self.breaks = np.asarray(breaks, np.float64)
        self.values = np.asarray(values, np.float64)
        self.pieces = len(self.values) - 1 if pieces is None else pieces  # buckets stored

    @classmethod
    def from_pieces(cls, pieces: list[tuple[float, float, float]]) -> StepHistogram:
        if not pieces:
            return cls(np.zeros(1), np.zeros(1))
        p = np.array(pieces, np.float64)
        xs = np.concatenate([p[:, 0], p[:, 1]])
        dv = np.concatenate([p[:, 2], -p[:, 2]])
        o = np.argsort(xs, kind="stable")
        ux, inv = np.unique(xs[o], return_inverse=True)
        d = np.zeros(len(ux))
        np.add.at(d, inv, dv[o])
        return cls(ux, np.cumsum(d), len(pieces))

    def estimate(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float64)
        j = np.searchsorted(self.breaks, x, "right") - 1
        ok = (j >= 0) & (j < len(self.values))
        return np.where(ok, self.values[np.clip(j, 0, len(self.values) - 1)], 0.0)

    @property
    def buckets(self) -> int:
        return len(self.breaks) - 1


def hist_ssi(lo: np.ndarray, hi: np.ndarray, k: int, phi=None, total_weights: bool = False) -> StepHistogram:
    """HIST-SSI with about k buckets (each group's two halves get >= 1 bucket each);
    ``total_weights``: k-means weights relative to f_I rather than to the group's f_{I_i}."""
    lo = np.asarray(lo, np.float64)
    hi = np.asarray(hi, np.float64)
    if not len(lo):
        return StepHistogram.from_pieces([])
    phi = phi or _uniform(float(lo.min()), float(hi.max()))
    f_all = None
    if total_weights:
        slo, shi = np.sort(lo), np.sort(hi)

        def f_all(x):
            return (np.searchsorted(slo, x, "right") - np.searchsorted(shi, x, "left")).astype(np.float64)
    grp, pts = canonical_partition(lo, hi)
    n = len(lo)
    order = np.argsort(grp, kind="stable")
    cuts = np.searchsorted(grp[order], np.arange(len(pts) + 1))
    pieces: list[tuple[float, float, float]] = []
    for g in range(len(pts)):
        idx = order[cuts[g] : cuts[g + 1]]
        kg = max(2, int(round(k * len(idx) / n)))
        p = float(pts[g])
        ul, cl = np.unique(lo[idx], return_counts=True)  # left half: #(lo <= x) on [ul_l, ul_{l+1}), up to p
        pieces += _half(ul, np.cumsum(cl).astype(np.float64), np.nextafter(p, np.inf), kg // 2, phi, f_all)
        uh, ch = np.unique(hi[idx], return_counts=True)  # right half: #(hi >= x) on (p, uh_l]
        ys = (len(idx) - np.r_[0, np.cumsum(ch)[:-1]]).astype(np.float64)
        starts = np.nextafter(np.r_[p, uh[:-1]], np.inf)
        pieces += _half(starts, ys, float(np.nextafter(uh[-1], np.inf)), kg - kg // 2, phi, f_all)
    return StepHistogram.from_pieces(pieces)


def hist_eqw(lo: np.ndarray, hi: np.ndarray, k: int, span: tuple[float, float] | None = None) -> StepHistogram:
    """HIST-EQW: k equal buckets over ``span`` (default [min lo, max hi]); each bucket holds the
    average of f_I over it."""
    lo = np.asarray(lo, np.float64)
    hi = np.asarray(hi, np.float64)
    a, b = span or (float(lo.min()), float(hi.max()))
    w = (b - a) / k
    e = a + w * np.arange(k + 1)
    # integral of f over [a, x] is sum of clipped lengths; per bucket by differences of that integral
    s_lo, s_hi = np.sort(np.clip(lo, a, b)), np.sort(np.clip(hi, a, b))
    cs_lo, cs_hi = np.r_[0, np.cumsum(s_lo)], np.r_[0, np.cumsum(s_hi)]

    def integral(x):  # sum_i |[lo_i, hi_i] ∩ [a, x]| = sum over lo_i < x of (min(hi_i, x) - lo_i)
        nl = np.searchsorted(s_lo, x, "right")
        nh = np.searchsorted(s_hi, x, "right")
        return (cs_hi[nh] + (len(s_hi) - nh) * x) - (cs_lo[nl] + (len(s_lo) - nl) * x)

    cover = np.diff(integral(e)) / w
    return StepHistogram(e, np.r_[cover, 0.0], k)


def stab_counts(lo: np.ndarray, hi: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Exact f_I(x) (closed intervals)."""
    return (np.searchsorted(np.sort(lo), x, "right") - np.searchsorted(np.sort(hi), x, "left")).astype(np.float64)


def mean_relative_error(h: StepHistogram, lo, hi, x) -> float:
    """The paper's measure (Fig. 25): mean |est - true| / true over stabbing queries x with true > 0."""
    t = stab_counts(lo, hi, x)
    ok = t > 0
    return float(np.mean(np.abs(h.estimate(x[ok]) - t[ok]) / t[ok]))
