"""The refined dynamic stabbing partition of paper 003 App. A.2 (Fig. 21).

Each group of the last reconstruction keeps its intervals in a height-balanced (treap) tree
ordered by left endpoint whose nodes store the common intersection of their subtree (here: the
subtree's min right endpoint; its max left endpoint is the rightmost key). Between
reconstructions every update touches ONE group:

* insertion of gamma: footnote 6 — join the group of the leftmost stabbing point inside gamma
  (a tree insertion if that group is an old one, which keeps invariant (*) below), else a new
  singleton group {gamma} (gamma joins the set J of intervals inserted since the reconstruction);
* deletion: from J, or from the tree of its old group (found by binary search over the groups'
  smallest keys: by (*) old groups occupy disjoint, ordered ranges of left endpoints); a group
  that becomes empty is dropped.

Invariant (*): for gamma in I_i and xi in I_j, i < j (old groups in order), l(gamma) < l(xi).

Reconstruction (after eps*tau0/(eps+2) updates, or with ``relaxed=True`` A.1's weaker trigger
|P| > (1+eps)(tau0 - m), m = intervals of the last reconstruction deleted since): it emulates
the greedy scan of Lemma 1 over GROUPS, not intervals. The old groups are visited in order; a
group is cut only where an interval of J falls inside its range of left endpoints and where the
current output group's right end r(cap A) falls (Fig. 21's SPLIT(I_i, r(cap J))): a piece whose
left endpoints are <= r(cap A) joins the active set A (its tree JOINed to A's), the rest starts
the next output group whole (its intervals share a point). Hence it outputs exactly the
partition of the greedy algorithm run on the intervals sorted by (left endpoint, id) (tested
against :func:`~vigil.joins.partition.canonical_partition`'s size tau(I)), in
O((tau0 + |J|) log n) time: O(1) splits and joins per old group and per interval of J. An old
group that comes out whole keeps its id (consumers see it unchanged).

Bounds (Lemma 3 / App. A.2): size <= (1+eps) tau(I) at all times (property-tested); update
O(log n) (treap, expected) plus the reconstructions, amortized O(eps^-1 log n) per update with
the strict trigger. Space O(n).

The interface is :class:`~vigil.joins.partition.StabbingPartition`'s (``point``, ``groups``,
``group_of``, ``iv``, ``dirty``/``drain_dirty``, ``version``, ``group_size``, ``members``);
``groups`` and ``group_of`` are materialised on demand (O(n)), for index builds only.
"""

from __future__ import annotations

import bisect
import math
import random

import numpy as np

_INF_ID = 1 << 62


class _Node:
    __slots__ = ("key", "hi", "pri", "l", "r", "size", "minhi")

    def __init__(self, key: tuple[float, int], hi: float, pri: float) -> None:
        self.key = key
        self.hi = hi
        self.pri = pri
        self.l: _Node | None = None
        self.r: _Node | None = None
        self.size = 1
        self.minhi = hi


def _upd(n: _Node) -> _Node:
    s, m = 1, n.hi
    if n.l is not None:
        s += n.l.size
        m = min(m, n.l.minhi)
    if n.r is not None:
        s += n.r.size
        m = min(m, n.r.minhi)
    n.size, n.minhi = s, m
    return n


def _split(t: _Node | None, k: tuple) -> tuple[_Node | None, _Node | None]:
    """(keys < k, keys >= k)."""
    if t is None:
        return None, None
    if t.key < k:
        a, b = _split(t.r, k)
        t.r = a
        return _upd(t), b
    a, b = _split(t.l, k)
    t.l = b
    return a, _upd(t)


def _join(a: _Node | None, b: _Node | None) -> _Node | None:
    """Every key of a < every key of b."""
    if a is None:
        return b
    if b is None:
        return a
    if a.pri > b.pri:
        a.r = _join(a.r, b)
        return _upd(a)
    b.l = _join(a, b.l)
    return _upd(b)


def _first(t: _Node) -> tuple:
    while t.l is not None:
        t = t.l
    return t.key


def _last(t: _Node) -> tuple:
    while t.r is not None:
        t = t.r
    return t.key


def _keys(t: _Node | None, out: list) -> list:
    stack, n = [], t
    while stack or n is not None:
        while n is not None:
            stack.append(n)
            n = n.l
        n = stack.pop()
        out.append(n.key)
        n = n.r
    return out


def _build(nodes: list[_Node]) -> _Node | None:
    """Treap of nodes already sorted by key (Cartesian tree by priority, O(n))."""
    stack: list[_Node] = []
    for n in nodes:
        last = None
        while stack and stack[-1].pri < n.pri:
            last = stack.pop()
            _upd(last)
        n.l = last
        if stack:
            stack[-1].r = n
        stack.append(n)
    while len(stack) > 1:
        _upd(stack.pop())
    return _upd(stack[0]) if stack else None


class RefinedStabbingPartition:
    """Dynamic stabbing partition of intervals keyed by int id, App. A.2 (module docstring)."""

    def __init__(self, eps: float = 0.5, relaxed: bool = True, seed: int = 0) -> None:
        if not eps > 0:
            raise ValueError("eps must be > 0")
        self.eps = float(eps)
        self.relaxed = relaxed
        self._rng = random.Random(seed)
        self.iv: dict[int, tuple[float, float]] = {}
        self.point: dict[int, float] = {}
        self._tree: dict[int, _Node] = {}  # old groups: gid -> treap root
        self._seps: list[tuple[tuple, int]] = []  # (smallest key ever in the group, gid), old groups in order
        self._sep_of: dict[int, tuple] = {}
        self._new: dict[int, set[int]] = {}  # groups created since the reconstruction: gid -> J members
        self._jg: dict[int, int] = {}  # id in J -> its group
        self._pts: list[tuple[float, int]] = []
        self._inserted: set[int] = set()  # ids inserted since the reconstruction
        self._next = 0
        self.tau0 = 0
        self.updates = 0
        self.deleted_old = 0
        self.version = 0
        self.reconstructions = 0
        self.touched = 0  # groups created / changed / dropped, over the history (updates + reconstructions)
        self.dirty: set[int] = set()

    def __len__(self) -> int:
        return len(self.iv)

    def size(self) -> int:
        return len(self.point)

    # ------------------------------------------------------------ queries

    def group_size(self, g: int) -> int | None:
        t = self._tree.get(g)
        if t is not None:
            return t.size
        m = self._new.get(g)
        return None if m is None else len(m)

    def members(self, g: int) -> list[int]:
        t = self._tree.get(g)
        if t is not None:
            return [k[1] for k in _keys(t, [])]
        return sorted(self._new[g])

    def group_ids(self) -> list[int]:
        return list(self.point)

    @property
    def groups(self) -> dict[int, set[int]]:
        """gid -> member set, materialised (O(n)): for index builds and checks."""
        return {g: set(self.members(g)) for g in self.point}

    @property
    def group_of(self) -> dict[int, int]:
        return {i: g for g in self.point for i in self.members(g)}

    def _old_group(self, key: tuple) -> int:
        k = bisect.bisect_right(self._seps, (key, _INF_ID)) - 1
        return self._seps[k][1]

    # ------------------------------------------------------------ updates

    def _mark(self, g: int) -> None:
        self.dirty.add(g)
        self.touched += 1

    def insert(self, i: int, lo: float, hi: float) -> int:
        """Add interval i = [lo, hi]; returns its group (the one group this update touched)."""
        if i in self.iv:
            raise ValueError(f"interval {i} is already present")
        lo, hi = float(lo), float(hi)
        if not lo <= hi:
            raise ValueError(f"empty interval [{lo}, {hi}]")
        self.iv[i] = (lo, hi)
        self._inserted.add(i)
        k = bisect.bisect_left(self._pts, (lo, -1))
        if k < len(self._pts) and self._pts[k][0] <= hi:  # leftmost stabbing point inside (footnote 6)
            g = self._pts[k][1]
            if g in self._tree:
                key = (lo, i)
                a, b = _split(self._tree[g], key)
                self._tree[g] = _join(_join(a, _Node(key, hi, self._rng.random())), b)
                s = bisect.bisect_left(self._seps, (self._sep_of[g], g))
                if key < self._seps[s][0]:  # (*) keeps it between its neighbours
                    self._seps[s] = (key, g)
                    self._sep_of[g] = key
            else:
                self._new[g].add(i)
                self._jg[i] = g
        else:
            g = self._next
            self._next += 1
            self._new[g] = {i}
            self._jg[i] = g
            self.point[g] = hi
            bisect.insort(self._pts, (hi, g))
        self._mark(g)
        self._tick()
        return g

    def delete(self, i: int) -> None:
        lo_hi = self.iv.pop(i, None)
        if lo_hi is None:
            raise KeyError(i)
        g = self._jg.pop(i, None)
        if g is not None:
            m = self._new[g]
            m.discard(i)
            empty = not m
            if empty:
                del self._new[g]
        else:
            key = (lo_hi[0], i)
            g = self._old_group(key)
            a, b = _split(self._tree[g], key)
            _, c = _split(b, (key[0], i + 1))
            t = _join(a, c)
            empty = t is None
            if empty:
                del self._tree[g]
                s = bisect.bisect_left(self._seps, (self._sep_of.pop(g), g))
                del self._seps[s]
            else:
                self._tree[g] = t
        if empty:
            p = self.point.pop(g)
            del self._pts[bisect.bisect_left(self._pts, (p, g))]
        if i in self._inserted:
            self._inserted.discard(i)
        else:
            self.deleted_old += 1
        self._mark(g)
        self._tick()

    def _tick(self) -> None:
        self.updates += 1
        if self.relaxed:
            if self.size() > (1 + self.eps) * (self.tau0 - self.deleted_old):
                self.rebuild()
            return
        if self.updates >= max(1.0, self.eps * self.tau0 / (self.eps + 2)):
            self.rebuild()

    # ------------------------------------------------------------ reconstruction (Fig. 21)

    def rebuild(self) -> None:
        olds = [g for _, g in self._seps]  # in order of left endpoints (*)
        J = sorted(((self.iv[i][0], i), self.iv[i][1]) for i in self._jg)
        out: list[tuple[_Node, float, int | None]] = []  # (tree, stabbing point, reused gid)
        cur: _Node | None = None
        cur_hi = math.inf
        whole: int | None = None  # the old gid if cur is exactly that untouched old group

        def close() -> None:
            if cur is not None:
                out.append((cur, cur_hi, whole))

        j = 0
        for g in olds:
            t: _Node | None = self._tree[g]
            untouched = True
            while t is not None:
                if j < len(J) and J[j][0] < _last(t):
                    if J[j][0] < _first(t):
                        (lo, i), hi = J[j]
                        j += 1
                        node = _Node((lo, i), hi, self._rng.random())
                        if cur is not None and lo <= cur_hi:
                            cur, cur_hi, whole = _join(cur, node), min(cur_hi, hi), None
                        else:
                            close()
                            cur, cur_hi, whole = node, hi, None
                        continue
                    piece, t = _split(t, J[j][0])  # a singleton falls inside this group's range
                    untouched = False
                else:
                    piece, t = t, None
                # piece: intervals sharing a point, contiguous in the greedy order
                if cur is not None:
                    a, piece = _split(piece, (cur_hi, _INF_ID))  # SPLIT(L, r(cap A))
                    if a is not None:
                        cur, cur_hi, whole = _join(cur, a), min(cur_hi, a.minhi), None
                        untouched = False
                    if piece is None:
                        continue
                    close()
                cur, cur_hi = piece, piece.minhi
                whole = g if (untouched and t is None) else None
                untouched = False
        for (lo, i), hi in J[j:]:
            node = _Node((lo, i), hi, self._rng.random())
            if cur is not None and lo <= cur_hi:
                cur, cur_hi, whole = _join(cur, node), min(cur_hi, hi), None
            else:
                close()
                cur, cur_hi, whole = node, hi, None
        close()
        self._install(out)

    def _install(self, out: list) -> None:
        old = dict(self.point)
        self.point, self._tree, self._seps, self._sep_of, self._pts = {}, {}, [], {}, []
        for t, p, gid in out:
            if gid is None:
                gid = self._next
                self._next += 1
                self._mark(gid)
            elif old.pop(gid) != p:
                self._mark(gid)
            self.point[gid] = p
            self._tree[gid] = t
            k = _first(t)
            self._seps.append((k, gid))
            self._sep_of[gid] = k
            self._pts.append((p, gid))
        for g in old:
            self._mark(g)
        self._new, self._jg, self._inserted = {}, {}, set()
        self.tau0 = len(out)
        self.updates = 0
        self.deleted_old = 0
        self.version += 1
        self.reconstructions += 1

    def drain_dirty(self) -> set[int]:
        d, self.dirty = self.dirty, set()
        return d

    # ------------------------------------------------------------ checks / state

    def check(self) -> None:
        """Assert a stabbing partition of the current intervals, (*) and the trees' aggregates."""
        seen = 0
        prev_last = None
        for key, g in self._seps:
            t = self._tree[g]
            keys = _keys(t, [])
            assert keys == sorted(keys) and len(keys) == t.size
            assert key <= keys[0] and (prev_last is None or prev_last < key), "(*) violated"
            prev_last = keys[-1]
            assert t.minhi == min(self.iv[k[1]][1] for k in keys)
        for g, p in self.point.items():
            mem = self.members(g)
            assert mem, g
            for i in mem:
                lo, hi = self.iv[i]
                assert lo <= p <= hi, (i, lo, hi, p)
            seen += len(mem)
        assert seen == len(self.iv)
        assert sorted(self._pts) == self._pts and len(self._pts) == len(self.point)

    def state(self) -> dict:
        ids = np.fromiter(self.iv.keys(), np.int64, len(self.iv))
        lh = np.array(list(self.iv.values()), np.float64).reshape(-1, 2)
        return {"eps": self.eps, "relaxed": self.relaxed, "ids": ids, "lo": lh[:, 0].copy(), "hi": lh[:, 1].copy()}

    @classmethod
    def from_state(cls, s: dict) -> RefinedStabbingPartition:
        p = cls(float(s["eps"]), bool(s["relaxed"]))
        for i, lo, hi in zip(np.asarray(s["ids"]).tolist(), np.asarray(s["lo"]).tolist(),
                             np.asarray(s["hi"]).tolist(), strict=True):
            p.iv[int(i)] = (lo, hi)
        p._jg = {i: -1 for i in p.iv}
        p.rebuild()
        return p
