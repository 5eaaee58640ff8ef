"""The continuous-query processing shared by SU, CSU, CASU and the naive baseline (paper 004 §3.5,
§2.4): one GK summary per *epoch*, the notify queries' clusters and triggers on it, and the
per-query updates.

Epochs. A query counts only the elements after its registration (docs/contract.md), so queries
registered at different stream positions have different windows. A query with ``start`` before
the first element joins the base epoch (a GK summary of every element pushed to the operator):
that is the paper's model, where a query issued later still asks about the whole stream, and the
paper's workloads (predefined queries, or dynamic queries over the whole stream) use that one
epoch. Queries registered after the first element share one suffix structure
(:mod:`.suffix`: each element inserted once, a registration closes a segment, a query counts the
segments after its start within eps of its own element count), so registration positions do not
multiply the work per element. Notify "cluster" operators keep one GK epoch per distinct
registration position instead (their clusters and triggers live on an epoch; per element
O(#epochs) insertions there).

Notify queries (``register(..., notify=True)``) are clustered (OQC, Algorithm 2, seeded with QC_A,
Algorithm 1, when a batch of queries arrives before any cluster exists; SU: one cluster per
query) and each cluster carries a trigger (:mod:`._trigger_kernels`). Their maintained value is
the value of their cluster's result tuple, or (``lazy``, the default) a previous value the query
keeps while Theorem 4 on its own interval guarantees it, or its own best tuple (member
deadlines, see the kernels' doc); ``push`` returns an update (qid, offset, value) at the query's first element and whenever
that value changes, sorted by (offset, qid). By Theorem 4 the value stays a valid answer, with
rank within eps_q*N of phi*N over the query's window, until its deadline. A lookup of a notify query returns its maintained value in O(1); other queries are
answered on lookup from the summary (best tuple of their query interval, O(log m)).

Cluster notification (``notify="cluster"``, :mod:`.epoch`): the operator's epochs run with
``lazy`` = -1: every query shows its cluster's value, the kernel walks no member and writes one
record per cluster change; ``push`` returns no per-query update and :meth:`TriggerQuantiles.cluster_events`
gives the membership events and cluster updates. The work per element no longer depends on the
number of queries, only on the clusters' re-evaluations (the paper's message number).

Summary precision. Answers are served at max(eps_q, eps) (eps: ``--quantile-epsilon``), but an
epoch's GK summary may run finer, at eps * ``summary_ratio`` (CASU: 0.25). The query interval
(eq. (2)) is then [phi - e + eps_s, phi + e - eps_s] with e = max(eps_q, eps) and eps_s the
summary's precision: a query asking for exactly eps gets an interval of width 1.5 eps instead of
0 (by Theorem 6 a cluster with |I_Q| = 0 may fire at every element), so its result lasts longer;
the summary is larger (m grows about 1/ratio times) but merged as rarely per element (its period
1/(2 eps_s) grows alike). Measured in docs/experiments/quantiles.md.

Sliding-window operators (``rows`` set) are :class:`vigil.quantiles.sliding.Sliding` instances
(constructing any of these classes with ``rows`` returns one).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..arrays import check_increasing
from . import QuantileOperator
from . import _trigger_kernels as T
from .clustering import query_interval
from .epoch import _EMPTY, Epoch, Singletons
from .suffix import Suffix

__all__ = ["Epoch", "Singletons", "TriggerQuantiles"]


_EMPTY_CEV = ((np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)), _EMPTY)
# counters: cluster re-evaluations by a trigger (the paper's message number: "times to reprocess
# clusters"), re-evaluations, cluster value changes, member walks, inserted chunks
_STATS = {"fires": T.M_FIRES, "evaluations": T.M_EVALS, "changes": T.M_CHANGES, "walks": T.M_WALKS,
          "chunks": T.M_CHUNKS}


class TriggerQuantiles(QuantileOperator):
    """Base of :class:`~vigil.quantiles.su.SU`, ``CSU``, ``CASU`` and ``Naive`` (module doc)."""

    mode: ClassVar[int] = 0
    clustered: ClassVar[bool] = True
    keep: ClassVar[float] = 0.5  # keep a still-valid result with L >= keep * best L (0: the paper's rule)

    def __new__(cls, eps: float, rows: int | None):
        if rows is not None:  # sliding windows: the bucket summary processed by Algorithm 3
            from .sliding import Sliding

            return Sliding(eps, rows)
        return super().__new__(cls)

    def __init__(self, eps: float, rows: int | None) -> None:
        super().__init__(eps, rows)
        self.cmode: bool | None = None  # notify "cluster" operator (set by the first notify registration)
        self.epochs: dict[int, Epoch] = {0: self._epoch()}
        self.q: dict[int, tuple[float, float, int, int]] = {}  # qid -> (phi, eps_q, epoch key, slot or -1)
        self.npushed = 0
        self.first_seq = -1
        self.last_seq = -1
        self.stats = dict.fromkeys(_STATS, 0)
        self.stats.update(cluster_updates=0, memberships=0)
        self._cev = _EMPTY_CEV
        self.sfx: Suffix | None = None  # queries registered after the first element (module doc)

    offline_algo: ClassVar[str] = "qc_a"  # offline clustering of a batch of registrations (qc_a | qc_b)
    # member deadlines (module doc): 0 members take their cluster's value, 1 they keep a value still
    # valid for their own interval, 2 also take their own best tuple when theirs expires (2.1x fewer
    # updates on semisort, 1.5x the CPU of 1 at 100k queries: docs/experiments/quantiles.md)
    lazy: ClassVar[int] = 1
    mkeep: ClassVar[float] = 1.0  # ... if it stays valid >= mkeep times as long as the cluster's value
    summary_ratio: ClassVar[float] = 1.0  # the epochs' GK summaries run at eps * summary_ratio (module doc)

    def _epoch(self) -> Epoch:
        return Epoch(self._seps(), self.mode, self.clustered, keep=self.keep, offline_algo=self.offline_algo,
                     lazy=-1 if self.cmode else self.lazy, mkeep=self.mkeep)

    def _notify_mode(self, notify: bool | str) -> None:
        """The operator serves per-query notify queries or "cluster" ones, not both (the engine
        groups them apart); the first notify registration decides."""
        cluster = notify == "cluster"
        if self.cmode is None:
            if any(ep.nslots for ep in self.epochs.values()):
                raise ValueError("notify queries registered before the mode was known")
            self.cmode = cluster
            for ep in self.epochs.values():
                ep.lazy, ep.cmode = (-1, True) if cluster else (ep.lazy, False)
        elif self.cmode != cluster:
            raise ValueError('notify "cluster" and per-query notify queries need separate operators')

    def _seps(self) -> float:
        """The epochs' summary precision: ``summary_ratio`` times the served eps (module doc)."""
        return self.eps * self.summary_ratio

    def register_many(self, qids: np.ndarray, phi: np.ndarray, eps: np.ndarray, start: int = 0,
                      notify: bool | str = False) -> None:
        """Register many queries with one start at once (vectorized; benchmarks)."""
        qids = np.asarray(qids, np.int64)
        phi = np.asarray(phi, np.float64)
        eps = np.asarray(eps, np.float64)
        if ((phi <= 0) | (phi > 1)).any():
            raise ValueError("phi must lie in (0, 1]")
        key = self._key(int(start))
        if notify:
            self._notify_mode(notify)
        if self._suffix(key, notify):
            for q, f, e in zip(qids.tolist(), phi.tolist(), eps.tolist(), strict=True):
                self.register(q, f, e, start, notify)
            return
        ep = self.epochs.get(key)
        if ep is None:
            ep = self.epochs[key] = self._epoch()
        if notify:
            a, b = query_interval(phi, np.maximum(eps, self.eps), self._seps())
            slots = ep.add_notify_many(qids, a, b).tolist()
        else:
            slots = [-1] * len(qids)
        ep.nq += len(qids)
        for q, f, e, sl in zip(qids.tolist(), phi.tolist(), eps.tolist(), slots, strict=True):
            self.q[q] = (f, e, key, sl)

    def _suffix(self, key: int, notify: bool | str) -> bool:
        """Is a query registered at epoch key ``key`` served by the suffix structure (module doc)?"""
        return key != 0 and notify != "cluster" and not self.cmode

    def _key(self, start: int) -> int:
        if self.npushed == 0 or start < self.first_seq:
            return 0
        if start >= self.last_seq:
            return self.npushed
        raise ValueError(f"start {start} falls inside the elements already pushed (no summary starts there)")

    def register(self, qid: int, phi: float, eps: float, start: int = 0, notify: bool | str = False) -> None:
        qid = int(qid)
        if qid in self.q:
            raise ValueError(f"qid {qid} is already registered")
        if not (0 < phi <= 1):
            raise ValueError(f"phi must lie in (0, 1], got {phi}")
        start = int(start)
        if self.npushed == 0 or start < self.first_seq:
            key = 0
        elif start >= self.last_seq:
            key = self.npushed
        else:
            raise ValueError(f"start {start} falls inside the elements already pushed (no summary starts there)")
        if notify:
            self._notify_mode(notify)
        if self._suffix(key, notify):
            if self.sfx is None:
                self.sfx = Suffix(self.eps)
            self.sfx.register(qid, float(phi), max(float(eps), self.eps), bool(notify))
            self.q[qid] = (float(phi), float(eps), -1, -1)
            return
        ep = self.epochs.get(key)
        if ep is None:
            ep = self.epochs[key] = self._epoch()
        slot = -1
        if notify:
            a, b = query_interval(float(phi), max(float(eps), self.eps), self._seps())
            slot = ep.add_notify(qid, a, b)
        ep.nq += 1
        self.q[qid] = (float(phi), float(eps), key, slot)

    def terminate(self, qid: int) -> None:
        e = self.q.pop(int(qid), None)
        if e is None:
            return
        if e[2] < 0:
            self.sfx.terminate(int(qid))
            if not self.sfx.alive():
                self.sfx = None
            return
        ep = self.epochs[e[2]]
        if e[3] >= 0:
            ep.drop(int(qid), e[3])
        ep.nq -= 1
        if ep.nq == 0 and e[2] != 0:
            del self.epochs[e[2]]

    def alive(self) -> int:
        return len(self.q)

    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._cev = _EMPTY_CEV
        seqs = np.asarray(seqs, np.int64)
        x = np.ascontiguousarray(values, np.float64)
        if len(x) != len(seqs):
            raise ValueError("values and seqs differ in length")
        if not len(x):
            return _EMPTY
        check_increasing(seqs, self.last_seq if self.npushed else None)
        if np.isnan(x).any():
            raise ValueError("NaN values are not elements (the engine rejects them)")
        parts = []
        moves = []
        for ep in self.epochs.values():
            before = ep.meta.copy()
            r = ep.push(x)
            for k, slot in _STATS.items():
                self.stats[k] += int(ep.meta[slot] - before[slot])
            if len(r[0]):
                parts.append(r)
            if ep.cmode and len(ep.moves[0]):
                moves.append(ep.moves)
        if self.sfx is not None:
            ev0 = self.sfx.evaluations
            r = self.sfx.push(x)
            self.stats["evaluations"] += self.sfx.evaluations - ev0
            if len(r[0]):
                parts.append(r)
        if self.npushed == 0:
            self.first_seq = int(seqs[0])
        self.npushed += len(x)
        self.last_seq = int(seqs[-1])
        if self.cmode:
            return self._cluster_events(parts, moves)
        if not parts:
            return _EMPTY
        if len(parts) == 1:  # one epoch: already in (offset, qid) order
            return parts[0]
        q, o, v = (np.concatenate(c) for c in zip(*parts, strict=True))
        if len(q) > 1:
            span = int(q.max()) + 1
            order = np.argsort(o * span + q, kind="stable") if len(x) * span < 2**62 else np.lexsort((q, o))
            q, o, v = q[order], o[order], v[order]
        return q, o, v

    def _cluster_events(self, parts, moves) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cluster mode: keep the push's events for :meth:`cluster_events`; no per-query update."""
        if len(moves) == 1:  # one epoch's moves are by qid already
            mq, mc = moves[0]
        elif moves:
            mq, mc = (np.concatenate(c) for c in zip(*moves, strict=True))
            o = np.argsort(mq, kind="stable")
            mq, mc = mq[o], mc[o]
        else:
            mq = mc = np.empty(0, np.int64)
        if parts:
            cq, co, cv = (np.concatenate(c) for c in zip(*parts, strict=True))
            if len(parts) > 1:
                o = np.lexsort((cq, co))
                cq, co, cv = cq[o], co[o], cv[o]
        else:
            cq, co, cv = _EMPTY
        self.stats["cluster_updates"] += len(cq)
        self.stats["memberships"] += len(mq)
        self._cev = (mq, np.zeros(len(mq), np.int64), mc), (cq, co, cv)
        return _EMPTY

    def cluster_events(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Notify "cluster" queries: the last push's membership events (qids, offsets, cluster
        numbers), each "from this element on, the query shows this cluster's value", by qid, all at
        offset 0 (the first element after the registrations/merges that moved them); and its
        cluster updates (cluster numbers, offsets, values): "from this element on, the cluster's
        value is this", in (offset, number) order, one per cluster whose value changed (or got its
        first value)."""
        return self._cev

    serves_clusters: ClassVar[bool] = True  # notify "cluster" natively (clusters of queries)

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        qids = np.asarray(qids, np.int64)
        out = np.full(len(qids), np.nan)
        sfx = []
        for i, q in enumerate(qids.tolist()):
            if q not in self.q:
                raise KeyError(f"qid {q} is not registered")
            phi, e, key, slot = self.q[q]
            if key < 0:
                sfx.append(i)
                continue
            ep = self.epochs[key]
            if slot >= 0 and ep.cmode:
                out[i] = ep.cluster_value(slot)
            elif slot >= 0:
                ep.flush()
                out[i] = ep.qlast[slot]
            else:
                out[i] = ep.lookup(np.array([phi]), np.array([max(e, self.eps)]))[0]
        if sfx:
            out[sfx] = self.sfx.lookup(qids[sfx])
        return out

    def summary(self, qid: int, n: int) -> np.ndarray:
        """The query's epoch summary as weighted tuples: float64 (m, 3) rows (v, r-, r+)."""
        if int(qid) not in self.q:
            raise KeyError(f"qid {int(qid)} is not registered")
        if self.q[int(qid)][2] < 0:
            return self.sfx.summary(int(qid))
        v, lo, hi = self.epochs[self.q[int(qid)][2]].tuples()
        return np.column_stack([v, lo.astype(np.float64), hi.astype(np.float64)])

    def cluster_count(self) -> int:
        return sum(len(ep.clus) for ep in self.epochs.values())

    def summary_size(self) -> int:
        return sum(ep.m for ep in self.epochs.values()) + (self.sfx.size() if self.sfx is not None else 0)

    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        return {
            "eps": self.eps, "rows": self.rows, "npushed": self.npushed, "first_seq": self.first_seq,
            "last_seq": self.last_seq, "epochs": {str(k): ep.state() for k, ep in self.epochs.items()},
            "qids": np.array(qs, np.int64), "phi": np.array([self.q[q][0] for q in qs]),
            "eps_q": np.array([self.q[q][1] for q in qs]), "key": np.array([self.q[q][2] for q in qs], np.int64),
            "slot": np.array([self.q[q][3] for q in qs], np.int64), "cmode": -1 if self.cmode is None else int(self.cmode),
            "suffix": None if self.sfx is None else self.sfx.state(),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> TriggerQuantiles:
        op = cls(float(s["eps"]), s["rows"])
        op.npushed, op.first_seq, op.last_seq = int(s["npushed"]), int(s["first_seq"]), int(s["last_seq"])
        cm = int(s.get("cmode", -1))
        op.cmode = None if cm < 0 else bool(cm)
        op.epochs = {int(k): Epoch.from_state(v) for k, v in s["epochs"].items()}
        if s.get("suffix") is not None:
            op.sfx = Suffix.from_state(s["suffix"])
        for q, phi, e, k, sl in zip(s["qids"].tolist(), s["phi"].tolist(), s["eps_q"].tolist(), s["key"].tolist(),
                                    s["slot"].tolist(), strict=True):
            op.q[q] = (phi, e, k, sl)
        return op
