"""Hotspot tracking (paper 003 §2.2, Theorem 1, Fig. 3).

A stabbing partition J of the intervals I split into hot groups J_H and scattered groups J_S
(whose intervals form S). Parameters alpha (hotness) and eps (Lemma 2 slack). Invariants,
property-tested in tests/joins/test_partition.py:

* (I1) J_H holds every alpha-hotspot (|g| >= alpha |I|) and only (alpha/2)-hotspots:
  |J_H| <= 2/alpha;
* (I2) |J| <= (1+eps) tau(I) + 2/alpha;
* (I3) amortized number of intervals moving into or out of S per update <= 5 (counted in
  ``moves``; Theorem 1's credit argument).

Insertion: join the first hot group whose common intersection meets the interval (brute force
over <= 2/alpha groups, O(1/alpha)); else insert into S's dynamic partition
(Lemma 2: App. A.1's :class:`~vigil.joins.partition.StabbingPartition`, or App. A.2's
refined partition with ``partition="refined"``), then promote S groups
that became alpha-hotspots, demote hot groups below (alpha/2)|I| (their intervals re-enter S one
by one) and promote again. Deletion: symmetric. Amortized O(1/alpha + eps^-1 log |I|) per
update plus the reconstructions of the S partition; space O(|I|).

Consumers read ``hot`` (group id -> member set), ``hot_point`` and ``scattered`` (the S
partition), and ``drain_changes()`` for the hot groups and intervals that changed.
"""

from __future__ import annotations

import heapq

from .partition import make_partition

# default alpha of the join strategies' hotspot trackers (paper 003 §5 uses 0.1% in Fig. 9)
ALPHA = 0.001


class HotspotTracker:
    def __init__(self, alpha: float = 0.01, eps: float = 0.5, partition: str = "lazy") -> None:
        if not 0 < alpha <= 1:
            raise ValueError("alpha must be in (0, 1]")
        self.alpha = float(alpha)
        self.eps = float(eps)
        self.iv: dict[int, tuple[float, float]] = {}
        self.scattered = make_partition(partition, eps, relaxed=True)  # App. A.1 (lazy) or A.2 (refined)
        self._heap: list[tuple[int, int]] = []  # (-size, S group) candidates for promotion, lazily validated
        self._sver = 0
        self.hot: dict[int, set[int]] = {}
        self.hot_cap: dict[int, tuple[float, float]] = {}  # common intersection of each hot group
        self.hot_of: dict[int, int] = {}
        self._next = 0
        self.moves = 0  # intervals moved into or out of S, over the whole history
        self.updates = 0
        self.changed_hot: set[int] = set()  # hot groups created / changed / dropped since drain
        self._lb = 0.0  # <= the smallest hot group's size (inf: none): _demote skips its scan above it

    def __len__(self) -> int:
        return len(self.iv)

    def size(self) -> int:
        return len(self.hot) + self.scattered.size()

    def hot_point(self, h: int) -> float:
        return self.hot_cap[h][1]

    # ---------------------------------------------------------------- updates

    def insert(self, i: int, lo: float, hi: float) -> None:
        if i in self.iv:
            raise ValueError(f"interval {i} is already present")
        lo, hi = float(lo), float(hi)
        self.iv[i] = (lo, hi)
        self.updates += 1
        for h, (clo, chi) in self.hot_cap.items():
            if lo <= chi and clo <= hi:
                self.hot[h].add(i)
                self.hot_of[i] = h
                self.hot_cap[h] = (max(clo, lo), min(chi, hi))
                self.changed_hot.add(h)
                break
        else:
            self._s_insert(i, lo, hi)
            self.moves += 1
        self._promote()
        self._demote()
        self._promote()

    def delete(self, i: int) -> None:
        if i not in self.iv:
            raise KeyError(i)
        del self.iv[i]
        self.updates += 1
        h = self.hot_of.pop(i, None)
        if h is not None:
            self.hot[h].discard(i)
            self.changed_hot.add(h)
            self._lb = min(self._lb, len(self.hot[h]))
        else:
            self.scattered.delete(i)
        self._demote()
        self._promote()

    def _s_insert(self, i: int, lo: float, hi: float) -> None:
        g = self.scattered.insert(i, lo, hi)
        self._sync()
        n = self.scattered.group_size(g)
        if n is not None:
            heapq.heappush(self._heap, (-n, g))

    def _sync(self) -> None:
        """After a reconstruction of the S partition every group is a candidate again."""
        if self.scattered.version != self._sver:
            self._sver = self.scattered.version
            sc = self.scattered
            self._heap = [(-sc.group_size(g), g) for g in sc.group_ids()]
            heapq.heapify(self._heap)

    def _promote(self) -> None:
        """Promote every S group with >= alpha |I| intervals (largest first, from the heap whose
        stale entries are re-pushed with the group's current size)."""
        self._sync()
        while self._heap:
            self._sync()
            if not self._heap:
                break
            neg, g = self._heap[0]
            size = self.scattered.group_size(g)
            if size is None:
                heapq.heappop(self._heap)
                continue
            if size != -neg:
                heapq.heapreplace(self._heap, (-size, g))
                continue
            if size < self.alpha * len(self.iv):
                break
            heapq.heappop(self._heap)
            mem = set(self.scattered.members(g))
            h = self._next
            self._next += 1
            clo = max(self.iv[i][0] for i in mem)
            chi = min(self.iv[i][1] for i in mem)
            for i in mem:
                self.scattered.delete(i)
                self.hot_of[i] = h
            self.moves += len(mem)
            self.hot[h] = mem
            self._lb = min(self._lb, len(mem))
            self.hot_cap[h] = (clo, chi)
            self.changed_hot.add(h)

    def _demote(self) -> None:
        """Demote the hot groups below (alpha/2)|I| (none when the lower bound of the smallest
        hot group's size is not below it: no scan)."""
        t = self.alpha / 2 * len(self.iv)
        if self._lb >= t:
            return
        for h in [h for h, mem in self.hot.items() if len(mem) < t]:
            mem = self.hot.pop(h)
            del self.hot_cap[h]
            self.changed_hot.add(h)
            for i in mem:
                del self.hot_of[i]
                self._s_insert(i, *self.iv[i])
            self.moves += len(mem)
        self._lb = float(min((len(m) for m in self.hot.values()), default=float("inf")))

    def drain_changes(self) -> set[int]:
        c, self.changed_hot = self.changed_hot, set()
        return c

    # ---------------------------------------------------------------- checks

    def check(self) -> None:
        """Assert (I1) and the partition's consistency; (I2)/(I3) are checked by the tests with
        tau(I) from :func:`~vigil.joins.partition.stabbing_number`."""
        n = len(self.iv)
        for h, mem in self.hot.items():
            assert len(mem) >= self.alpha / 2 * n, ("I1: hot group below alpha/2", len(mem), n)
            clo, chi = self.hot_cap[h]
            assert clo <= chi
            for i in mem:
                lo, hi = self.iv[i]
                assert lo <= chi and clo <= hi and lo <= clo and chi <= hi
        for g in self.scattered.group_ids():
            assert self.scattered.group_size(g) < self.alpha * n, ("I1: alpha-hotspot left in S", len(mem), n)
        assert len(self.hot) <= 2 / self.alpha + 1e-9
        self.scattered.check()
        assert len(self.scattered) + sum(len(m) for m in self.hot.values()) == n
