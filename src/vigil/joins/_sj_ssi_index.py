"""The per-group 2D stabbing index of SJ-SSI (paper 003 §3.2.2, Fig. 5, Theorem 3), flat and
maintained per dirty group.

A stabbing group g (point P[g], every member's other-side range [OLO, OHI] holds P[g]) is probed
for an arriving tuple (b, a) with the two partners around P[g] in the block S.B = b of the
S(B, C) index: q2 = the first with C >= P[g], q1 = the one before. A member j is affected iff
MLO[j] <= a <= MHI[j] and (OHI[j] >= q2 or OLO[j] <= q1) (both tests are one-sided because the
range holds P[g]). Per group the members are stored sorted by MLO in blocks of ``BLK`` items; an
implicit binary tree over the blocks keeps per node max MHI, max OHI and min OLO. A probe
binary-searches the prefix MLO <= a and descends the nodes of that prefix whose max MHI >= a and
which can hold a q2/q1 hit: one descent per group serves both partners (the paper's two probes).
Cost per group: O(log n_g) when the root rejects or for the prefix search, plus the nodes on the
paths to the affected members (the paper's g(n), output-sensitive in the stabbed members).

Layout (one side): items IMLO, IMHI, IOLO, IOHI (float64), IQ (qid); nodes NMHI, NOHI, NOLO;
per group (sorted by point) GP point, GOFF/GN item offset and count, GNOFF/GNS node offset and
leaf count (a power of two; node v of the group is GNOFF + v, root v = 1, leaves GNS + block).
A group's segment is rewritten in place when it still fits, else appended; the arrays are
compacted (rebuilt) when dead space exceeds the live size. Space O(n).
"""

from __future__ import annotations

import numba
import numpy as np

BLK = 8


@numba.njit(cache=True, nogil=True)
def build_nodes(IT, NA, FM, off, n, noff, ns):
    """One group's tree from its items IT[off : off + n] (rows (MLO, MHI, OLO, OHI), sorted by
    MLO): NA[node] = (max MHI, max OHI, min OLO, -), NA[leaf, 3] = the max MHI of the blocks up
    to this one (a walk leftwards stops when it is < a); FM[leaf node] = the block's first MLO."""
    pm = -np.inf
    for b in range(ns):
        v = noff + ns + b
        mh, oh, ol = -np.inf, -np.inf, np.inf
        k0 = off + b * BLK
        k1 = off + min(n, (b + 1) * BLK)
        for k in range(k0, k1):
            mh = max(mh, IT[k, 1])
            ol = min(ol, IT[k, 2])
            oh = max(oh, IT[k, 3])
        pm = max(pm, mh)
        NA[v, 0], NA[v, 1], NA[v, 2], NA[v, 3] = mh, oh, ol, pm
        FM[v] = IT[k0, 0] if k1 > k0 else np.inf
    for u in range(ns - 1, 0, -1):
        v = noff + u
        NA[v, 0] = max(NA[noff + 2 * u, 0], NA[noff + 2 * u + 1, 0])
        NA[v, 1] = max(NA[noff + 2 * u, 1], NA[noff + 2 * u + 1, 1])
        NA[v, 2] = min(NA[noff + 2 * u, 2], NA[noff + 2 * u + 1, 2])
    NA[noff, 0], NA[noff, 1], NA[noff, 2] = -np.inf, -np.inf, np.inf  # slot 0 unused


def _leaves(n: int) -> int:
    ns = 1
    while ns * BLK < n:
        ns *= 2
    return ns


class SSIIndex:
    """The index of one arriving side over the groups of a stabbing partition (``points``: group
    -> stabbing point, ``groups``: group -> member qids) with rows from ``rows_of(qids)`` ->
    float64[k, 4] = (OLO, OHI, MLO, MHI)."""

    SLACK = 4096  # dead items tolerated beyond the live size before compaction

    def __init__(self) -> None:
        self.compactions = 0
        self._reset()

    def _reset(self) -> None:
        self.seg: dict[int, tuple[int, int, int, int, int]] = {}  # g -> (off, cap, n, noff, ns)
        self.items = 0
        self.nodes = 0
        self.live = 0
        z = np.empty(0)
        self.IT = np.empty((0, 4))
        self.IQ = np.empty(0, np.int64)
        self.NA = np.empty((0, 4))
        self.FM = z.copy()
        self.order = (z.copy(), *(np.empty(0, np.int64) for _ in range(4)))

    # --------------------------------------------------------------- maintenance

    def _reserve(self, items: int, nodes: int) -> None:
        def grow(a, need):
            if need <= len(a):
                return a
            b = np.zeros((max(need, 2 * len(a), 64), *a.shape[1:]), a.dtype)
            b[: len(a)] = a
            return b

        self.IT, self.IQ = grow(self.IT, items), grow(self.IQ, items)
        self.NA, self.FM = grow(self.NA, nodes), grow(self.FM, nodes)

    def _write(self, g: int, qids: np.ndarray, rows: np.ndarray) -> None:
        n = len(qids)
        o = np.lexsort((qids, rows[:, 2]))
        ns = _leaves(n)
        old = self.seg.get(g)
        if old is not None and old[1] >= n and old[4] >= ns:  # fits: rewritten in place
            off, cap, _, noff, ns = old
            self.live -= old[2]
        else:
            if old is not None:
                self.live -= old[2]
            cap = n if old is None else n + n // 2  # slack for a group that grew
            ns = _leaves(cap)
            off, noff = self.items, self.nodes
            self.items += cap
            self.nodes += 2 * ns
            self._reserve(self.items, self.nodes)
        self.live += n
        sl = slice(off, off + n)
        self.IT[sl] = rows[o][:, [2, 3, 0, 1]]
        self.IQ[sl] = qids[o]
        build_nodes(self.IT, self.NA, self.FM, off, n, noff, ns)
        self.seg[g] = (off, cap, n, noff, ns)

    def update(self, points: dict, groups: dict, dirty, rows_of) -> None:
        """Rewrite the segments of the ``dirty`` groups (dropped ones are freed); compacts
        (rewrites every group) when the dead space exceeds the live size."""
        if self.items > 2 * self.live + self.SLACK:
            dirty = set(groups) | set(self.seg)
            self.compactions += 1
            self._reset()
        for g in dirty:
            mem = groups.get(g)
            if not mem:
                old = self.seg.pop(g, None)
                if old is not None:
                    self.live -= old[2]
                continue
            q = np.fromiter(mem, np.int64, len(mem))
            self._write(g, q, rows_of(q))
        gs = sorted(self.seg, key=lambda g: (points[g], g))
        s = np.array([self.seg[g] for g in gs], np.int64).reshape(len(gs), 5)
        self.order = (np.array([points[g] for g in gs], np.float64), np.ascontiguousarray(s[:, 0]),
                      np.ascontiguousarray(s[:, 2]), np.ascontiguousarray(s[:, 3]), np.ascontiguousarray(s[:, 4]))

    def arrays(self):
        """The probe kernel's arguments: GP, GOFF, GN, GNOFF, GNS, IT, IQ, NA, FM."""
        return (*self.order, self.IT, self.IQ, self.NA, self.FM)
