"""OQC: online query clustering (paper 004 §3.4, Algorithm 2).

Clusters are kept sorted by the left end of their intervals (the paper's in-memory B+ tree; here
two parallel sorted lists searched by bisection). Cluster intervals never contain one another, so
they are sorted by right end too and the clusters meeting a new query's interval are consecutive.

Register q with interval I_q:
- no cluster meets I_q: q forms a new cluster with interval I_q;
- some cluster interval lies inside I_q: q joins it (interval unchanged);
- otherwise: take the cluster Q_i with the largest |I_Qi ∩ I_q|, the new interval is
  I_new = I_Qi ∩ I_q, and q plus every cluster whose interval contains I_new merge into one
  cluster. (No remaining interval contains or lies inside I_new, so the invariant holds.)
Drop q: remove it from its cluster; an empty cluster is dropped.

Costs (k clusters, s of them meeting I_q): register O(log k + s) searches plus O(k) list
insertion/deletion (memmove; small: k is in the thousands for millions of queries), plus
relabelling the members of merged clusters (the smaller clusters' members move); drop O(1), or
O(k) when the cluster disappears. Clusters can be seeded from an offline clustering (QC_A or
QC_B) with :meth:`OQC.seed`.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np


class OQC:
    """Online clustering state: clusters by id, sorted index by left end, members per cluster."""

    def __init__(self) -> None:
        self.left: list[float] = []  # sorted left ends of alive clusters
        self.right: list[float] = []  # their right ends (sorted too)
        self.ids: list[int] = []  # their cluster ids
        self.a: dict[int, float] = {}
        self.b: dict[int, float] = {}
        self.members: dict[int, set[int]] = {}
        self.cluster_of: dict[int, int] = {}
        self.next_id = 0

    def __len__(self) -> int:
        return len(self.ids)

    def _insert(self, cid: int, a: float, b: float) -> None:
        p = bisect.bisect_left(self.left, a)
        while p < len(self.left) and self.left[p] == a and self.right[p] < b:
            p += 1
        self.left.insert(p, a)
        self.right.insert(p, b)
        self.ids.insert(p, cid)
        self.a[cid], self.b[cid] = a, b

    def _remove(self, cid: int) -> None:
        a = self.a.pop(cid)
        self.b.pop(cid)
        p = bisect.bisect_left(self.left, a)
        while self.ids[p] != cid:
            p += 1
        del self.left[p], self.right[p], self.ids[p]

    def new_cluster(self, a: float, b: float) -> int:
        cid = self.next_id
        self.next_id += 1
        self._insert(cid, a, b)
        self.members[cid] = set()
        return cid

    def seed(self, qids: np.ndarray, cluster: np.ndarray, ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
        """Adopt an offline clustering (clusters must not contain one another): returns the ids."""
        ids = np.array([self.new_cluster(float(x), float(y)) for x, y in zip(ca, cb, strict=True)], np.int64)
        for q, c in zip(qids.tolist(), ids[cluster].tolist(), strict=True):
            self.members[c].add(q)
            self.cluster_of[q] = c
        return ids

    def register(self, qid: int, a: float, b: float) -> tuple[int, str, list[int]]:
        """Add query ``qid`` with interval [a, b]. Returns (cluster, kind, absorbed): kind is
        'new' (a new cluster), 'join' (joined an existing cluster, interval unchanged) or 'merge'
        (cluster ``cluster`` got a new interval and absorbed the clusters ``absorbed``, now gone)."""
        lo = bisect.bisect_left(self.right, a)  # first cluster with right end >= a
        hi = bisect.bisect_right(self.left, b)  # clusters [lo, hi) have left end <= b
        if lo >= hi:
            cid = self.new_cluster(a, b)
            self.members[cid].add(qid)
            self.cluster_of[qid] = cid
            return cid, "new", []
        best, best_len = -1, -1.0
        for p in range(lo, hi):
            ca, cb = self.left[p], self.right[p]
            if a <= ca and cb <= b:
                cid = self.ids[p]
                self.members[cid].add(qid)
                self.cluster_of[qid] = cid
                return cid, "join", []
            ov = min(cb, b) - max(ca, a)
            if ov > best_len:
                best, best_len = p, ov
        na, nb = max(self.left[best], a), min(self.right[best], b)
        merged = [self.ids[p] for p in range(lo, hi) if self.left[p] <= na and nb <= self.right[p]]
        keep = max(merged, key=lambda c: len(self.members[c]))
        absorbed = [c for c in merged if c != keep]
        for c in merged:
            self._remove(c)
        for c in absorbed:
            for q in self.members[c]:
                self.cluster_of[q] = keep
            self.members[keep] |= self.members.pop(c)
        self.members[keep].add(qid)
        self.cluster_of[qid] = keep
        self._insert(keep, na, nb)
        return keep, "merge", absorbed

    def drop(self, qid: int) -> int:
        """Remove query ``qid``; returns its cluster id if that cluster is now gone, else -1."""
        cid = self.cluster_of.pop(qid)
        mem = self.members[cid]
        mem.discard(qid)
        if mem:
            return -1
        del self.members[cid]
        self._remove(cid)
        return cid

    def state(self) -> dict[str, Any]:
        ids = list(self.ids)
        qs = np.array(sorted(self.cluster_of), np.int64)
        return {"ids": np.array(ids, np.int64), "a": np.array([self.a[c] for c in ids]),
                "b": np.array([self.b[c] for c in ids]), "qids": qs,
                "cluster": np.array([self.cluster_of[q] for q in qs.tolist()], np.int64), "next_id": self.next_id}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> OQC:
        o = cls()
        for c, a, b in zip(s["ids"].tolist(), s["a"].tolist(), s["b"].tolist(), strict=True):
            o._insert(c, a, b)
            o.members[c] = set()
        for q, c in zip(s["qids"].tolist(), s["cluster"].tolist(), strict=True):
            o.members[c].add(q)
            o.cluster_of[q] = c
        o.next_id = int(s["next_id"])
        return o
