"""Stabbing partitions of intervals (paper 003 §2.1, Lemma 1; App. A.1 and A.2).

* :func:`canonical_partition` — the greedy algorithm of Lemma 1: scan the intervals by left
  endpoint keeping the common intersection [max lo, min hi] of the current group; an interval
  starting after min hi closes the group. The result has the smallest possible number of groups
  tau(I). Stabbing point of a group: the right end (min hi) of its common intersection.
  O(n log n) time (the sort), O(n) space; a numba kernel does the scan.
* :class:`StabbingPartition` — the dynamic partition of App. A.1 (lazy strategy) with the
  refinements of A.1 / A.2 that keep every update on ONE group: an inserted interval joins the
  group of the leftmost stabbing point it contains (footnote 6, found by binary search over the
  sorted stabbing points, O(log tau)), else it becomes a singleton group; a deletion removes it
  from its group (dropping the group when empty). After eps*tau0/(eps+2) updates since the last
  reconstruction (tau0 = tau at that reconstruction; A.1's trigger, ``relaxed=True`` uses the
  weaker trigger |P| >= (1+eps)(tau0 - m) of A.1's last paragraph) the canonical partition is
  rebuilt (Lemma 1). The relaxed trigger is the default: it keeps the same bound, and a
  stream of insertions that join existing groups never triggers a reconstruction. Lemma 3: size <= (1+eps) tau(I) at all times (property-tested).
  Update: O(log tau) (amortized O(n log n / (eps tau0)) including reconstructions).
  App. A.2's refined algorithm (O(tau0 log n) reconstruction emulating the greedy algorithm over
  groups with split/join trees, Fig. 21) is :mod:`vigil.joins.partition_refined`
  (:func:`make_partition` selects either: ``"lazy"`` = this class, ``"refined"`` = A.2).

Consumers (the SSI join operators) read ``groups``/``point`` and the ``dirty`` set of groups
changed since they last drained it (``drain_dirty``); ``version`` counts reconstructions; after one,
``last_build`` = (ids, lo, hi, group index, first group id, points) as flat arrays (an index
rebuilt at that moment needs no pass over the dicts).
"""

from __future__ import annotations

import bisect
import itertools
import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _greedy(lo: np.ndarray, hi: np.ndarray, order: np.ndarray, group: np.ndarray, points: np.ndarray) -> int:
    """Lemma 1's scan over intervals sorted by left endpoint; writes group[i] and the stabbing
    point of each group; returns tau."""
    n = len(order)
    tau = 0
    cur_hi = math.inf
    started = False
    for k in range(n):
        i = order[k]
        if started and lo[i] <= cur_hi:
            if hi[i] < cur_hi:
                cur_hi = hi[i]
        else:
            if started:
                points[tau] = cur_hi
                tau += 1
            started = True
            cur_hi = hi[i]
        group[i] = tau
    if started:
        points[tau] = cur_hi
        tau += 1
    return tau


def canonical_partition(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The canonical stabbing partition (Lemma 1) of closed intervals [lo[i], hi[i]].

    Returns ``(group, points)``: group[i] in [0, tau) (groups numbered left to right) and the
    stabbing point of each group (points strictly increasing)."""
    lo = np.ascontiguousarray(lo, np.float64)
    hi = np.ascontiguousarray(hi, np.float64)
    n = len(lo)
    group = np.empty(n, np.int64)
    points = np.empty(n, np.float64)
    if n == 0:
        return group, points[:0]
    order = np.lexsort((hi, lo)).astype(np.int64)
    tau = _greedy(lo, hi, order, group, points)
    return group, points[:tau].copy()


def stabbing_number(lo: np.ndarray, hi: np.ndarray) -> int:
    """tau(I), the size of the smallest stabbing partition."""
    return len(canonical_partition(lo, hi)[1])


class StabbingPartition:
    """Dynamic stabbing partition of intervals keyed by an int id (App. A.1 / A.2, see module
    docstring). Groups are ids (ints, never reused); ``point[g]`` stabs every interval of g."""

    def __init__(self, eps: float = 0.5, relaxed: bool = True) -> None:
        if not eps > 0:
            raise ValueError("eps must be > 0")
        self.eps = float(eps)
        self.relaxed = relaxed
        self.iv: dict[int, tuple[float, float]] = {}
        self.group_of: dict[int, int] = {}
        self.groups: dict[int, set[int]] = {}
        self.point: dict[int, float] = {}
        self._pts: list[tuple[float, int]] = []  # (stabbing point, group) sorted
        self._next = 0
        self.tau0 = 0
        self.updates = 0  # since the last reconstruction
        self.deleted_old = 0  # intervals of the last reconstruction deleted since (relaxed trigger)
        self._old: set[int] = set()
        self.version = 0
        self.reconstructions = 0
        self.dirty: set[int] = set()  # groups created/changed/removed since drain_dirty

    def __len__(self) -> int:
        return len(self.iv)

    def size(self) -> int:
        return len(self.groups)

    def group_size(self, g: int) -> int | None:
        m = self.groups.get(g)
        return None if m is None else len(m)

    def members(self, g: int) -> list[int]:
        return list(self.groups[g])

    def group_ids(self) -> list[int]:
        return list(self.groups)

    # ---------------------------------------------------------------- updates

    def _new_group(self, p: float, members: set[int]) -> int:
        g = self._next
        self._next += 1
        self.groups[g] = members
        self.point[g] = p
        bisect.insort(self._pts, (p, g))
        for i in members:
            self.group_of[i] = g
        self.dirty.add(g)
        return g

    def _drop_group(self, g: int) -> None:
        p = self.point.pop(g)
        del self.groups[g]
        k = bisect.bisect_left(self._pts, (p, g))
        del self._pts[k]
        self.dirty.add(g)

    def insert(self, i: int, lo: float, hi: float) -> int:
        """Add interval i = [lo, hi]; returns its group (the one group this update touched)."""
        if i in self.iv:
            raise ValueError(f"interval {i} is already present")
        if not lo <= hi:
            raise ValueError(f"empty interval [{lo}, {hi}]")
        self.iv[i] = (float(lo), float(hi))
        k = bisect.bisect_left(self._pts, (float(lo), -1))
        if k < len(self._pts) and self._pts[k][0] <= hi:  # leftmost stabbing point inside
            g = self._pts[k][1]
            self.groups[g].add(i)
            self.group_of[i] = g
            self.dirty.add(g)
        else:
            g = self._new_group(float(hi), {i})
        self._tick()
        return self.group_of[i]

    def delete(self, i: int) -> None:
        lo_hi = self.iv.pop(i, None)
        if lo_hi is None:
            raise KeyError(i)
        g = self.group_of.pop(i)
        self.groups[g].discard(i)
        self.dirty.add(g)
        if not self.groups[g]:
            self._drop_group(g)
        if i in self._old:
            self._old.discard(i)
            self.deleted_old += 1
        self._tick()

    def _tick(self) -> None:
        self.updates += 1
        if self.relaxed:
            # tau(I) >= tau0 - m (m old intervals deleted), so size < (1+eps)(tau0-m) is safe
            if self.size() > (1 + self.eps) * (self.tau0 - self.deleted_old):
                self.rebuild()
            return
        if self.updates >= max(1.0, self.eps * self.tau0 / (self.eps + 2)):
            self.rebuild()

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(self.iv)
        ids = np.fromiter(self.iv.keys(), np.int64, n)
        lh = np.fromiter(itertools.chain.from_iterable(self.iv.values()), np.float64, 2 * n).reshape(-1, 2)
        return ids, lh[:, 0].copy(), lh[:, 1].copy()

    def rebuild(self) -> None:
        """Reconstruction stage: the canonical partition of the current intervals (Lemma 1)."""
        ids, lo, hi = self._arrays()
        grp, pts = canonical_partition(lo, hi)
        self.dirty.update(self.groups)
        self.groups.clear()
        self.point.clear()
        self._pts = []
        self.group_of = {}
        order = np.argsort(grp, kind="stable")
        cuts = np.searchsorted(grp[order], np.arange(len(pts) + 1))
        base = self._next
        self._next += len(pts)
        ordered = ids[order].tolist()
        for j in range(len(pts)):
            g = base + j
            self.groups[g] = set(ordered[cuts[j] : cuts[j + 1]])
            self.point[g] = float(pts[j])
            self.dirty.add(g)
        self.group_of = dict(zip(ordered, (base + grp[order]).tolist(), strict=True))
        self._pts = [(float(pts[j]), base + j) for j in range(len(pts))]
        self.last_build = (ids, lo, hi, grp, base, pts)  # read by the BJ-SSI index (_bj_ssi_index)
        self.tau0 = len(pts)
        self.updates = 0
        self.deleted_old = 0
        self._old = set(self.iv)
        self.version += 1
        self.reconstructions += 1

    def drain_dirty(self) -> set[int]:
        d, self.dirty = self.dirty, set()
        return d

    # ---------------------------------------------------------------- checks

    def check(self) -> None:
        """Assert the partition is a stabbing partition of the current intervals."""
        seen = 0
        for g, mem in self.groups.items():
            assert mem, g
            p = self.point[g]
            for i in mem:
                lo, hi = self.iv[i]
                assert lo <= p <= hi, (i, lo, hi, p)
                assert self.group_of[i] == g
            seen += len(mem)
        assert seen == len(self.iv)
        assert [g for _, g in self._pts] == [g for _, g in sorted(self._pts)] and len(self._pts) == len(self.groups)

    def state(self) -> dict:
        ids, lo, hi = self._arrays()
        return {"eps": self.eps, "relaxed": self.relaxed, "ids": ids, "lo": lo, "hi": hi}

    @classmethod
    def from_state(cls, s: dict) -> StabbingPartition:
        p = cls(float(s["eps"]), bool(s["relaxed"]))
        for i, lo, hi in zip(np.asarray(s["ids"]).tolist(), np.asarray(s["lo"]).tolist(), np.asarray(s["hi"]).tolist(), strict=True):
            p.iv[int(i)] = (lo, hi)
        p.rebuild()
        return p


PARTITIONS = ("lazy", "refined")


def make_partition(kind: str = "lazy", eps: float = 0.5, relaxed: bool = True):
    """A dynamic stabbing partition: ``"lazy"`` (App. A.1, :class:`StabbingPartition`) or
    ``"refined"`` (App. A.2, :class:`~vigil.joins.partition_refined.RefinedStabbingPartition`)."""
    if kind == "lazy":
        return StabbingPartition(eps, relaxed)
    if kind == "refined":
        from .partition_refined import RefinedStabbingPartition

        return RefinedStabbingPartition(eps, relaxed)
    raise ValueError(f"unknown partition {kind!r}; expected one of {', '.join(PARTITIONS)}")
