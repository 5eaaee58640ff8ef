"""Quantiles family (massive continuous quantile queries; paper 004).

QuantileOperator protocol (one instance per (column, rows window or None)):

    op = Impl(eps, rows)               # eps: the engine's summary epsilon (--quantile-epsilon);
                                       # rows: sliding window length in seq units, or None
    op.register(qid, phi, eps, start, notify=False)
                                       # query (phi, eps_q); counts only elements with seq > start;
                                       # notify: its result is maintained and pushed as it changes;
                                       # notify="cluster" (operators with ``serves_clusters``: the
                                       # trigger-based ones): it shows its cluster's value (below)
    op.register(qid, phi, eps, start, rows=W)
                                       # operators with ``per_query_rows`` (constructed with rows
                                       # None: :class:`~.nofn.NofN`, the engine adapter's
                                       # ``ByWindow``): each query brings its own rows window W
                                       # (lookups only); the others take no ``rows`` argument
    op.terminate(qid)
    op.push(values, seqs) -> (qids, offsets, values)
                                       # float64[n], int64[n] strictly increasing; returns the notify
                                       # updates: int64 qids, int64 offsets into the batch, float64
                                       # values, sorted by (offset, qid); rows windows: a value NaN
                                       # is a position without element (a rejected row, which moves
                                       # the window; the engine adapter sends them while the
                                       # operator has notify queries)
    op.lookup(qids, n) -> float64[k]   # answers after element n; NaN when the window is empty
                                       # (a notify query: its maintained value)
    op.summary(qid, n) -> float64[m]   # the query's mergeable summary after element n (rank queries)
    op.cluster_events() -> ((qids, offsets, clusters), (clusters, offsets, values))
                                       # notify="cluster": the last push's membership events and
                                       # cluster updates (push then returns no per-query update)

Window after element n, for a query registered at start: the pushed elements with seq > start
(rows None) or those with seq in [max(start+1, n-rows+1), n] (rows: the operator's, or the
query's own W for a ``per_query_rows`` operator).
Mergeable summaries: when the elements are partitioned over several operators (e.g. by seq),
each one's ``summary(qid, n)`` covers its part of the query's window; :func:`merge_summaries`
combines the parts and :func:`answer_from_summary` answers (the rows-window structures combine
their blocks this way; rank queries read a summary). The oracle's summary is its sorted window values (exact);
the GK-based operators return weighted tuples, float64 (m, 3) rows (v, r-, r+), and
merge_summaries merges both kinds (bound: see its docstring).
Notify updates: a notify query gets an update at its first element (the first pushed element
with seq > start) and at every element where its maintained value changes, and only then; after
every element the latest update's value satisfies the contract below (the oracle maintains the
exact answer and reports every change of it).
Cluster notification (``notify="cluster"``, docs/contract.md; an operator serves either these
queries or per-query notify ones): a query's value is its cluster's (paper 004 §3: the queries of
a cluster share one result element); a membership event (qid, offset, cluster number) says the
query shows that cluster's value from that element on (its first element, a move when OQC merges
absorb its cluster); a cluster update (number, offset, value) that the cluster's value changed
there. Numbers are unique in a run, never reused. Operators without ``serves_clusters`` are served
by the engine adapter with one cluster per query (:mod:`.group`).
Contract: with N elements in the window, the answer is one of them and its rank r (any rank it
occupies among ties) satisfies |r - max(1, ceil(phi*N))| <= e*N + 1, where
e = max(eps_q, summary eps). The oracle answers exactly.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class QuantileOperator(ABC):
    name: ClassVar[str]

    def __init__(self, eps: float, rows: int | None) -> None:
        self.eps = float(eps)
        self.rows = rows

    @abstractmethod
    def register(self, qid: int, phi: float, eps: float, start: int, notify: bool = False) -> None: ...

    @abstractmethod
    def terminate(self, qid: int) -> None: ...

    @abstractmethod
    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    @abstractmethod
    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray: ...

    def summary(self, qid: int, n: int) -> np.ndarray:
        """The query's mergeable summary after element n: sorted float64 values (see module doc)."""
        raise NotImplementedError(f"{type(self).__name__} provides no mergeable summary (needed by sharded mode)")

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> QuantileOperator: ...


def as_tuples(part: np.ndarray) -> np.ndarray:
    """A summary as float64 (m, 3) rows (v, r-, r+): sorted values (1-D, exact) get their ranks."""
    a = np.asarray(part, np.float64)
    if a.ndim == 1:
        r = np.arange(1, len(a) + 1, dtype=np.float64)
        return np.column_stack([a, r, r])
    return a.reshape(-1, 3)


def merge_summaries(parts: list[np.ndarray], return_part: bool = False):
    """Merge summaries of disjoint parts of one window into a summary of the union, as float64
    (M, 3) rows (v, r-, r+) (GK-style weighted tuples; a 1-D sorted array is an exact summary).

    Order of the union: by value, then part, then position in the part. A tuple of part j at
    merged position k gets r- = its r- plus, for every other part, the r- of that part's last tuple
    before k; and r+ = its r+ plus, for every other part, the r+ of its first tuple after k minus
    one (that part's size if none). Each part must keep its maximum exactly (r- = r+ = its size:
    GK does, and so do sorted values). Bound: if every part has r+_i - r-_{i-1} <= 2 e_j n_j, the
    merge has gaps <= sum_j 2 e_j n_j <= 2 max(e_j) N: it is max(e_j)-approximate (Theorem 1).
    O(M log M), in array operations over the concatenated parts. With ``return_part``, also the index (into ``parts``) each merged tuple came from."""
    tup = [as_tuples(p) for p in parts]
    lens = np.fromiter(map(len, tup), np.int64, len(tup))
    keep = np.flatnonzero(lens)
    if not len(keep):
        empty = np.empty((0, 3), np.float64)
        return (empty, np.empty(0, np.int64)) if return_part else empty
    t = tup[keep[0]] if len(keep) == 1 else np.concatenate([tup[j] for j in keep.tolist()])
    ln = lens[keep]
    ends = np.cumsum(ln)
    starts = ends - ln
    part = np.repeat(np.arange(len(keep)), ln)
    v, lo, hi = t[:, 0], t[:, 1], t[:, 2]
    sizes = hi[ends - 1]
    dlo = np.empty(len(t))  # r- steps within each part
    dlo[1:] = lo[1:] - lo[:-1]
    dlo[starts] = lo[starts]
    dhi = np.empty(len(t))  # r+ steps to the next tuple of the part (-1 after its last)
    dhi[:-1] = hi[:-1] - hi[1:]
    dhi[ends - 1] = -1.0
    order = np.lexsort((part, v))
    r_lo = np.cumsum(dlo[order])
    r_hi = sizes.sum() + np.cumsum(dhi[order][::-1])[::-1] + 1
    out = np.column_stack([v[order], r_lo, r_hi])
    if return_part:
        return out, keep[part[order]]
    return out


def answer_from_summary(summary: np.ndarray, phi: float) -> float:
    """The phi-quantile from a (merged) summary: the element of rank max(1, ceil(phi*N)) for sorted
    values; for (v, r-, r+) tuples the value whose rank interval is closest to that rank
    (error <= max over tuples of the gap / 2: e*N for an e-approximate merge). NaN if empty."""
    from ..arrays import quantile_rank

    s = np.asarray(summary, np.float64)
    if s.ndim == 1:
        n = len(s)
        return float(s[quantile_rank(phi, n) - 1]) if n else math.nan
    if not len(s):
        return math.nan
    t = quantile_rank(phi, int(s[-1, 2]))
    err = np.maximum(np.maximum(t - s[:, 1], s[:, 2] - t), 0.0)
    return float(s[int(np.argmin(err)), 0])
