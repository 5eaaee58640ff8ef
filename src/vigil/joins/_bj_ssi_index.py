"""The query index of BJ-SSI (paper 003 §3.1.2, Fig. 4), maintained per query update.

Per stabbing group g (point P[g]) the band ranges [lo, hi] sorted by (lo, qid) ascending (L) and
by (hi descending, qid) (R): the two lists the probe scans. The paper keeps them in search trees
and updates them with the stabbing partition (§3.1: O(log n) per query insertion/deletion; the
partition is App. A.1 / A.2's, which touches ONE group per update). Here each group owns a
segment of four flat arrays (LLO, LID, RHI, RID) with spare capacity: an update inserts into /
deletes from its group's segment by shifting the entries after it (O(n_g) in one numba call, a
memmove; the paper's trees: O(log n)), a full segment moves to the end of the arrays with twice
the room. The probe reads the groups in point order (P, GOFF, GN); creating or dropping a group
re-sorts that order (O(tau log tau)) at the next probe. The whole index is rebuilt (O(n log n))
only when the partition reconstructs (its degradation rule, App. A.1 / A.2) or when the dead
space exceeds the live entries.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def seg_insert(LLO, LID, RHI, RID, off, n, lo, hi, q):
    """Insert (lo, hi, q) into the segment [off, off + n) (room for one more)."""
    k = off + n
    while k > off and (LLO[k - 1] > lo or (LLO[k - 1] == lo and LID[k - 1] > q)):
        LLO[k] = LLO[k - 1]
        LID[k] = LID[k - 1]
        k -= 1
    LLO[k] = lo
    LID[k] = q
    k = off + n
    while k > off and (RHI[k - 1] < hi or (RHI[k - 1] == hi and RID[k - 1] > q)):
        RHI[k] = RHI[k - 1]
        RID[k] = RID[k - 1]
        k -= 1
    RHI[k] = hi
    RID[k] = q


@numba.njit(cache=True, nogil=True)
def seg_delete(LLO, LID, RHI, RID, off, n, q) -> bool:
    """Remove query q from the segment [off, off + n); False if absent."""
    end = off + n
    a = off
    while a < end and LID[a] != q:
        a += 1
    b = off
    while b < end and RID[b] != q:
        b += 1
    if a == end or b == end:
        return False
    for k in range(a, end - 1):
        LLO[k] = LLO[k + 1]
        LID[k] = LID[k + 1]
    for k in range(b, end - 1):
        RHI[k] = RHI[k + 1]
        RID[k] = RID[k + 1]
    return True


class BandSSIIndex:
    """Segments per group; ``arrays()`` -> the probe kernel's (P, GOFF, GN, LLO, LID, RHI, RID)."""

    SLACK = 4096  # dead entries tolerated beyond the live ones before a compacting rebuild

    def __init__(self) -> None:
        self.full_builds = 0
        self.stale = True  # the next refresh rebuilds everything from the partition

    def build(self, points: dict[int, float], group_of: dict[int, int], iv: dict[int, tuple]) -> None:
        """Every group from the partition's dicts (``points`` g -> point, ``group_of`` qid -> g,
        ``iv`` qid -> (lo, hi))."""
        gids = np.fromiter(points.keys(), np.int64, len(points))
        slot = {g: s for s, g in enumerate(gids.tolist())}
        n = len(group_of)
        ids = np.fromiter(group_of.keys(), np.int64, n)
        grp = np.fromiter((slot[g] for g in group_of.values()), np.int64, n)
        lh = np.fromiter((v for i in ids.tolist() for v in iv[i]), np.float64, 2 * n).reshape(-1, 2)
        P = np.fromiter(points.values(), np.float64, len(points))
        self.build_arrays(ids, lh[:, 0], lh[:, 1], grp, gids, P)

    def build_arrays(self, ids, lo, hi, grp, gids, P) -> None:
        """Every group from flat arrays: query ids, lo, hi, grp (index into ``gids``, the group
        ids, whose points are ``P``); each segment with spare room n/2 + 4. O(n log n),
        vectorised (two lexsorts)."""
        self.full_builds += 1
        n = len(ids)
        cnt = np.bincount(grp, minlength=len(gids))
        cap = cnt + cnt // 2 + 4
        off = np.zeros(len(gids) + 1, np.int64)
        off[1:] = np.cumsum(cap)
        coff = np.zeros(len(gids) + 1, np.int64)
        coff[1:] = np.cumsum(cnt)
        size = max(int(off[-1]), 64)
        self.LLO, self.RHI = np.zeros(size), np.zeros(size)
        self.LID, self.RID = np.zeros(size, np.int64), np.zeros(size, np.int64)
        o1 = np.lexsort((ids, lo, grp))
        o2 = np.lexsort((ids, -hi, grp))
        g1 = grp[o1]  # == grp[o2]: both sorted by group first
        dst = off[g1] + (np.arange(n) - coff[g1])
        self.LLO[dst], self.LID[dst] = lo[o1], ids[o1]
        self.RHI[dst], self.RID[dst] = hi[o2], ids[o2]
        gl = gids.tolist()
        self.seg = {g: [o, c, k] for g, o, c, k in zip(gl, off[:-1].tolist(), cap.tolist(), cnt.tolist(), strict=True)}
        self.point = dict(zip(gl, P.tolist(), strict=True))
        self.group = dict(zip(ids.tolist(), gids[grp].tolist(), strict=True))
        self.end = int(off[-1])
        self.live = n
        self.stale = False
        self._order()

    def _order(self) -> None:
        gs = sorted(self.seg, key=lambda g: (self.point[g], g))
        self.pos = {g: k for k, g in enumerate(gs)}
        s = np.array([self.seg[g] for g in gs], np.int64).reshape(len(gs), 3)
        self.P = np.array([self.point[g] for g in gs], np.float64)
        self.GOFF, self.GN = np.ascontiguousarray(s[:, 0]), np.ascontiguousarray(s[:, 2])
        self.order_stale = False

    def _room(self, g: int, seg: list) -> None:
        """Move g's full segment to the end of the arrays with twice the room."""
        off, cap, n = seg
        ncap = 2 * cap + 4
        if self.end + ncap > len(self.LLO):
            size = max(2 * len(self.LLO), self.end + ncap)
            for name in ("LLO", "RHI", "LID", "RID"):
                a = getattr(self, name)
                b = np.zeros(size, a.dtype)
                b[: self.end] = a[: self.end]
                setattr(self, name, b)
        e = self.end
        for a in (self.LLO, self.RHI, self.LID, self.RID):
            a[e : e + n] = a[off : off + n]
        seg[0], seg[1] = e, ncap
        self.end += ncap

    def _patch(self, g: int, seg: list) -> None:
        if not self.order_stale:
            k = self.pos[g]
            self.GOFF[k], self.GN[k] = seg[0], seg[2]

    def insert(self, g: int, point: float, q: int, lo: float, hi: float) -> None:
        """Query q = [lo, hi] joined group g (created with stabbing point ``point`` if new)."""
        if self.stale:
            return
        seg = self.seg.get(g)
        if seg is None:
            seg = self.seg[g] = [self.end, 0, 0]
            self.point[g] = point
            self.order_stale = True
        if seg[2] == seg[1]:
            self._room(g, seg)
        seg_insert(self.LLO, self.LID, self.RHI, self.RID, seg[0], seg[2], lo, hi, q)
        seg[2] += 1
        self.group[q] = g
        self.live += 1
        self._patch(g, seg)

    def delete(self, q: int) -> None:
        if self.stale:
            return
        g = self.group.pop(q)
        seg = self.seg[g]
        if not seg_delete(self.LLO, self.LID, self.RHI, self.RID, seg[0], seg[2], q):
            raise KeyError(q)
        seg[2] -= 1
        self.live -= 1
        if seg[2] == 0:
            del self.seg[g], self.point[g]
            self.order_stale = True
        else:
            self._patch(g, seg)

    def refresh(self, part) -> None:
        """Before a probe: rebuild if stale or fragmented, re-sort the group order if groups
        were created or dropped."""
        if self.stale or self.end > 2 * self.live + self.SLACK:
            self.build(part.point, part.group_of, part.iv)
        elif self.order_stale:
            self._order()

    def arrays(self) -> tuple:
        return (self.P, self.GOFF, self.GN, self.LLO, self.LID, self.RHI, self.RID)
