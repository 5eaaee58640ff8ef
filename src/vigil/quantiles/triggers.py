"""The continuous-query processing shared by SU, CSU, CASU and the naive baseline (paper 004 §3.5,
§2.4): one GK summary per *epoch*, the notify queries' clusters and triggers on it, and the
per-query updates.

Epochs. A query counts only the elements after its registration (docs/contract.md), so queries
registered at different stream positions have different windows; the operator keeps one GK
summary per distinct registration position that still has queries (queries registered at the
same position, or with no element in between, share it), and a base epoch (every element pushed
to the operator) that a query with ``start`` before the first element joins: that is the paper's
model, where a query issued later still asks about the whole stream. Per element the cost is
O(#epochs) summary insertions; the engine creates the operator at its first registration, and the
paper's workloads (predefined queries, or dynamic queries over the whole stream) use one epoch.

Notify queries (``register(..., notify=True)``) are clustered (OQC, Algorithm 2, seeded with QC_A,
Algorithm 1, when a batch of queries arrives before any cluster exists; SU: one cluster per
query) and each cluster carries a trigger (:mod:`._trigger_kernels`). Their maintained value is
the value of their cluster's result tuple, or (``lazy``, the default) a previous value the query
keeps while Theorem 4 on its own interval guarantees it, or its own best tuple (member
deadlines, see the kernels' doc); ``push`` returns an update (qid, offset, value) at the query's first element and whenever
that value changes, sorted by (offset, qid). By Theorem 4 the value stays a valid answer, with
rank within eps_q*N of phi*N over the query's window, until its deadline. A lookup of a notify query returns its maintained value in O(1); other queries are
answered on lookup from the summary (best tuple of their query interval, O(log m)).

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
from .clustering import qc_a, qc_b, query_interval
from .gk import compress_period
from .oqc import OQC


class Singletons:
    """No clustering (SU): every query is its own cluster (same interface as :class:`OQC`)."""

    def __init__(self) -> None:
        self.cluster_of: dict[int, int] = {}
        self.a: dict[int, float] = {}
        self.b: dict[int, float] = {}
        self.next_id = 0

    def __len__(self) -> int:
        return len(self.cluster_of)

    def register(self, qid: int, a: float, b: float) -> tuple[int, str, list[int]]:
        c = self.next_id
        self.next_id += 1
        self.cluster_of[qid], self.a[c], self.b[c] = c, a, b
        return c, "new", []

    def drop(self, qid: int) -> int:
        c = self.cluster_of.pop(qid)
        del self.a[c], self.b[c]
        return c

    def state(self) -> dict[str, Any]:
        qs = sorted(self.cluster_of)
        cs = [self.cluster_of[q] for q in qs]
        return {"qids": np.array(qs, np.int64), "cluster": np.array(cs, np.int64),
                "a": np.array([self.a[c] for c in cs]), "b": np.array([self.b[c] for c in cs]), "next_id": self.next_id}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> Singletons:
        o = cls()
        for q, c, a, b in zip(s["qids"].tolist(), s["cluster"].tolist(), s["a"].tolist(), s["b"].tolist(), strict=True):
            o.cluster_of[q], o.a[c], o.b[c] = c, a, b
        o.next_id = int(s["next_id"])
        return o


def _grow(a: np.ndarray, need: int, fill: Any) -> np.ndarray:
    if need <= len(a):
        return a
    out = np.full(max(need, 2 * len(a)), fill, a.dtype) if fill != 0 else np.zeros(max(need, 2 * len(a)), a.dtype)
    out[: len(a)] = a
    return out


def _grow_empty(a: np.ndarray, k: int, cap: int) -> np.ndarray:
    out = np.empty(cap, a.dtype)
    out[:k] = a[:k]
    return out


_CL = {"ca": (np.float64, 0.0), "cb": (np.float64, 0.0), "cval": (np.float64, np.nan),
       "cdead": (np.int64, 0), "cforce": (np.bool_, False), "cat": (np.int64, -1), "hpos": (np.int64, -1), "heap": (np.int64, -1),
       "head": (np.int64, -1), "tail": (np.int64, -1), "ckey": (np.int64, 0), "sdead": (np.int64, int(T.INF_DEADLINE))}
_SL = {"slot_qid": (np.int64, -1), "nxt": (np.int64, -1), "prv": (np.int64, -1), "qlast": (np.float64, np.nan),
       "qa": (np.float64, 0.0), "qb": (np.float64, 1.0), "qdead": (np.int64, -1)}


class Epoch:
    """One GK summary with its clusters, triggers and notify queries (see the module doc)."""

    def __init__(self, eps: float, mode: int, clustered: bool, offline: bool = True, keep: float = 0.5,
                 offline_algo: str = "qc_a", lazy: int = 1, mkeep: float = 0.5) -> None:
        self.eps = eps
        self.mkeep = mkeep
        self.lazy = int(lazy) if mode != 2 else 0
        self.keep = keep
        self.offline_algo = offline_algo
        self.mode = mode
        self.offline = offline and clustered
        self.clus: OQC | Singletons = OQC() if clustered else Singletons()
        period = compress_period(eps)
        self.meta = np.zeros(T.META_SIZE, np.int64)
        self.meta[T.M_NEXT] = self.meta[T.M_PERIOD] = period
        cap = 2 * period + 16
        self.v, self.ov = np.empty(cap), np.empty(cap)
        self.lo, self.olo = np.empty(cap, np.int64), np.empty(cap, np.int64)
        self.hi, self.ohi = np.empty(cap, np.int64), np.empty(cap, np.int64)
        self.pin, self.opin = np.zeros(cap, np.int32), np.zeros(cap, np.int32)
        for k, (dt, f) in _CL.items():
            setattr(self, k, np.full(16, f, dt))
        for k, (dt, f) in _SL.items():
            setattr(self, k, np.full(16, f, dt))
        self.free: list[int] = []
        self.nslots = 0
        self.pending: list[tuple[int, int, float, float]] = []
        self.nq = 0
        self.out = (np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64), np.empty(64))

    # ---------------------------------------------------------------- queries
    @property
    def n(self) -> int:
        return int(self.meta[T.M_N])

    @property
    def m(self) -> int:
        return int(self.meta[T.M_M])

    def add_notify(self, qid: int, a: float, b: float) -> int:
        if self.free:
            s = self.free.pop()
        else:
            s = self.nslots
            self.nslots += 1
            for k, (_, f) in _SL.items():
                setattr(self, k, _grow(getattr(self, k), s + 1, f))
        self.slot_qid[s] = qid
        self.nxt[s] = self.prv[s] = -1
        self.qlast[s] = np.nan
        self.qa[s], self.qb[s], self.qdead[s] = a, b, -1
        self.pending.append((qid, s, a, b))
        return s

    def add_notify_many(self, qids: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Vectorized :meth:`add_notify` (fresh slots)."""
        k = len(qids)
        s0 = self.nslots
        self.nslots += k
        for name, (_, f) in _SL.items():
            setattr(self, name, _grow(getattr(self, name), self.nslots, f))
        slots = np.arange(s0, s0 + k, dtype=np.int64)
        self.slot_qid[slots] = qids
        self.qa[slots], self.qb[slots], self.qdead[slots] = a, b, -1
        self.pending.extend(zip(qids.tolist(), slots.tolist(), np.asarray(a).tolist(), np.asarray(b).tolist(),
                                strict=True))
        return slots

    def _cl_room(self, c: int) -> None:
        if c >= len(self.ca):
            for k, (_, f) in _CL.items():
                setattr(self, k, _grow(getattr(self, k), c + 1, f))

    def _new_cluster(self, c: int) -> None:
        self._cl_room(c)
        self.ca[c], self.cb[c] = self.clus.a[c], self.clus.b[c]
        self.cval[c] = np.nan
        self.cforce[c] = False
        self.cdead[c] = self.ckey[c] = self.n
        self.sdead[c] = T.INF_DEADLINE
        self.head[c] = self.tail[c] = -1
        h = int(self.meta[T.M_HSIZE])
        self.meta[T.M_HSIZE] = T.heap_push(self.heap, self.hpos, self.ckey, h, c)

    def _link(self, c: int, s: int) -> None:
        t = self.tail[c]
        self.prv[s], self.nxt[s] = t, -1
        if t >= 0:
            self.nxt[t] = s
        else:
            self.head[c] = s
        self.tail[c] = s

    def _refire(self, c: int) -> None:
        """Force cluster c to be re-evaluated (and reported) at the next element."""
        self.cforce[c] = True
        self.cdead[c] = self.ckey[c] = self.n
        T.heap_update(self.heap, self.hpos, self.ckey, int(self.meta[T.M_HSIZE]), c)

    def _remove_cluster(self, c: int) -> None:
        if self.mode != 2:
            T.unpin(self.v, self.pin, self.m, self.cval[c])
        self.cval[c] = np.nan
        h = int(self.meta[T.M_HSIZE])
        self.meta[T.M_HSIZE] = T.heap_remove(self.heap, self.hpos, self.ckey, h, c)

    def flush(self) -> None:
        """Cluster the pending registrations: QC_A when no cluster exists yet, else OQC."""
        if not self.pending:
            return
        pend, self.pending = self.pending, []
        if self.offline and len(self.clus) == 0 and len(pend) > 1:
            qids = np.array([p[0] for p in pend], np.int64)
            slots = np.array([p[1] for p in pend], np.int64)
            a = np.array([p[2] for p in pend])
            b = np.array([p[3] for p in pend])
            cluster, ca, cb = qc_a(a, b, self.eps) if self.offline_algo == "qc_a" else qc_b(a, b)
            ids = self.clus.seed(qids, cluster, ca, cb)
            for c in ids.tolist():
                self._new_cluster(c)
            cl = ids[cluster]
            order = np.argsort(cl, kind="stable")
            ss, cs = slots[order], cl[order]
            last = np.r_[cs[1:] != cs[:-1], True]
            first = np.r_[True, cs[1:] != cs[:-1]]
            self.nxt[ss] = np.where(last, -1, np.r_[ss[1:], -1])
            self.prv[ss] = np.where(first, -1, np.r_[-1, ss[:-1]])
            self.head[cs[first]] = ss[first]
            self.tail[cs[last]] = ss[last]
            return
        for qid, s, a, b in pend:
            c, kind, absorbed = self.clus.register(qid, a, b)
            if kind == "new":
                self._new_cluster(c)
                self._link(c, s)
                continue
            for d in absorbed:
                self._remove_cluster(d)
                if self.head[d] >= 0:  # splice d's member list onto c's
                    t = self.tail[c]
                    if t >= 0:
                        self.nxt[t] = self.head[d]
                        self.prv[self.head[d]] = t
                    else:
                        self.head[c] = self.head[d]
                    self.tail[c] = self.tail[d]
                self.head[d] = self.tail[d] = -1
            if kind == "merge":
                self.ca[c], self.cb[c] = self.clus.a[c], self.clus.b[c]
            self._link(c, s)
            self._refire(c)

    def drop(self, qid: int, s: int) -> None:
        self.flush()
        c = self.clus.cluster_of[qid]
        p, nx = self.prv[s], self.nxt[s]
        if p >= 0:
            self.nxt[p] = nx
        else:
            self.head[c] = nx
        if nx >= 0:
            self.prv[nx] = p
        else:
            self.tail[c] = p
        gone = self.clus.drop(qid)
        if gone >= 0:
            self._remove_cluster(gone)
        self.slot_qid[s] = -1
        self.free.append(s)

    # ---------------------------------------------------------------- elements
    def push(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Insert x; returns the notify updates (qids, offsets, values) in (offset, qid) order."""
        self.flush()
        self.meta[T.M_NOUT] = 0
        p = 0
        period = int(self.meta[T.M_PERIOD])
        while p < len(x):
            need = self.m + period + 1
            if need > len(self.v):
                m = self.m
                for k in ("v", "lo", "hi", "pin", "ov", "olo", "ohi", "opin"):
                    a = getattr(self, k)
                    b = np.empty(2 * need, a.dtype)
                    b[:m] = a[:m]
                    setattr(self, k, b)
            k = int(self.meta[T.M_NOUT])
            nlive = self.nslots - len(self.free)
            if k + 2 * nlive + 2 > len(self.out[0]):  # grow the update buffers (no fill: only [:k] is used)
                cap = 2 * (k + 2 * nlive + 2)
                self.out = tuple(_grow_empty(o, k, cap) for o in self.out)
            oq, oo, ov_, op_ = self.out
            before = k
            used, swapped = T.process(x[p:], self.v, self.lo, self.hi, self.pin, self.ov, self.olo, self.ohi,
                                      self.opin, self.meta, self.eps, self.mode, self.keep, self.mkeep, self.lazy, nlive,
                                      self.ca, self.cb, self.cval, self.cdead, self.cforce, self.cat, self.ckey,
                                      self.sdead, self.heap, self.hpos, self.head, self.tail, self.nxt, self.prv,
                                      self.slot_qid, self.qa,
                                      self.qb, self.qlast, self.qdead, oq, oo, ov_, op_)
            if swapped:
                self.v, self.ov = self.ov, self.v
                self.lo, self.olo = self.olo, self.lo
                self.hi, self.ohi = self.ohi, self.hi
                self.pin, self.opin = self.opin, self.pin
            oo[before:int(self.meta[T.M_NOUT])] += p
            p += int(used)
        k = int(self.meta[T.M_NOUT])
        if k == 0:
            return _EMPTY
        return T.order_updates(*self.out, k)

    def lookup(self, phi: np.ndarray, eps_q: np.ndarray) -> np.ndarray:
        out = np.empty(len(phi))
        T.lookup_many(self.v, self.lo, self.hi, self.m, self.n, self.eps, phi, eps_q, out)
        return out

    def tuples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.m
        return self.v[:m].copy(), self.lo[:m].copy(), self.hi[:m].copy()

    def pins(self) -> np.ndarray:
        return self.pin[: self.m].copy()

    # ---------------------------------------------------------------- state
    def state(self) -> dict[str, Any]:
        self.flush()
        v, lo, hi = self.tuples()
        s = {"meta": self.meta.copy(), "v": v, "lo": lo, "hi": hi, "pin": self.pins(), "clus": self.clus.state(),
             "nslots": self.nslots, "free": np.array(self.free, np.int64), "nq": self.nq,
             "mode": self.mode, "offline": self.offline, "keep": self.keep, "lazy": self.lazy, "mkeep": self.mkeep, "offline_algo": self.offline_algo, "eps": self.eps, "clustered": isinstance(self.clus, OQC)}
        for k in (*_CL, *_SL):
            s[k] = getattr(self, k).copy()
        return s

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> Epoch:
        e = cls(float(s["eps"]), int(s["mode"]), bool(s["clustered"]), bool(s["offline"]), float(s["keep"]),
                str(s["offline_algo"]), int(s.get("lazy", 0)), float(s.get("mkeep", 0.5)))
        e.clus = (OQC if s["clustered"] else Singletons).from_state(s["clus"])
        e.meta = np.zeros(T.META_SIZE, np.int64)
        e.meta[: len(s["meta"])] = s["meta"]
        m = len(s["v"])
        cap = m + int(e.meta[T.M_PERIOD]) + 16
        e.v, e.ov = np.empty(cap), np.empty(cap)
        e.lo, e.olo = np.empty(cap, np.int64), np.empty(cap, np.int64)
        e.hi, e.ohi = np.empty(cap, np.int64), np.empty(cap, np.int64)
        e.pin, e.opin = np.zeros(cap, np.int32), np.zeros(cap, np.int32)
        e.v[:m], e.lo[:m], e.hi[:m], e.pin[:m] = s["v"], s["lo"], s["hi"], s["pin"]
        for k in (*_CL, *_SL):
            if k in s:
                setattr(e, k, np.array(s[k]))
        if "ckey" not in s:  # a snapshot from before member deadlines: members follow their cluster
            e.ckey, e.sdead = e.cdead.copy(), np.full(len(e.cdead), T.INF_DEADLINE, np.int64)
            e.qa, e.qb, e.qdead = np.zeros(len(e.nxt)), np.ones(len(e.nxt)), np.full(len(e.nxt), -1, np.int64)
            for c in np.flatnonzero(e.head >= 0).tolist():
                t = int(e.head[c])
                while t >= 0:
                    e.qa[t], e.qb[t] = e.ca[c], e.cb[c]
                    t = int(e.nxt[t])
        e.nslots = int(s["nslots"])
        e.free = [int(x) for x in s["free"]]
        e.nq = int(s["nq"])
        return e


_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
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
        self.epochs: dict[int, Epoch] = {0: self._epoch()}
        self.q: dict[int, tuple[float, float, int, int]] = {}  # qid -> (phi, eps_q, epoch key, slot or -1)
        self.npushed = 0
        self.first_seq = -1
        self.last_seq = -1
        self.stats = dict.fromkeys(_STATS, 0)

    offline_algo: ClassVar[str] = "qc_a"  # offline clustering of a batch of registrations (qc_a | qc_b)
    # member deadlines (module doc): 0 members take their cluster's value, 1 they keep a value still
    # valid for their own interval, 2 also take their own best tuple when theirs expires (2.1x fewer
    # updates on semisort, 1.5x the CPU of 1 at 100k queries: docs/experiments/quantiles.md)
    lazy: ClassVar[int] = 1
    mkeep: ClassVar[float] = 1.0  # ... if it stays valid >= mkeep times as long as the cluster's value
    summary_ratio: ClassVar[float] = 1.0  # the epochs' GK summaries run at eps * summary_ratio (module doc)

    def _epoch(self) -> Epoch:
        return Epoch(self._seps(), self.mode, self.clustered, keep=self.keep, offline_algo=self.offline_algo,
                     lazy=self.lazy, mkeep=self.mkeep)

    def _seps(self) -> float:
        """The epochs' summary precision: ``summary_ratio`` times the served eps (module doc)."""
        return self.eps * self.summary_ratio

    def register_many(self, qids: np.ndarray, phi: np.ndarray, eps: np.ndarray, start: int = 0,
                      notify: bool = False) -> None:
        """Register many queries with one start at once (vectorized; benchmarks)."""
        qids = np.asarray(qids, np.int64)
        phi = np.asarray(phi, np.float64)
        eps = np.asarray(eps, np.float64)
        if ((phi <= 0) | (phi > 1)).any():
            raise ValueError("phi must lie in (0, 1]")
        key = self._key(int(start))
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

    def _key(self, start: int) -> int:
        if self.npushed == 0 or start < self.first_seq:
            return 0
        if start >= self.last_seq:
            return self.npushed
        raise ValueError(f"start {start} falls inside the elements already pushed (no summary starts there)")

    def register(self, qid: int, phi: float, eps: float, start: int = 0, notify: bool = False) -> None:
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
        ep = self.epochs[e[2]]
        if e[3] >= 0:
            ep.drop(int(qid), e[3])
        ep.nq -= 1
        if ep.nq == 0 and e[2] != 0:
            del self.epochs[e[2]]

    def alive(self) -> int:
        return len(self.q)

    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        for ep in self.epochs.values():
            before = ep.meta.copy()
            r = ep.push(x)
            for k, slot in _STATS.items():
                self.stats[k] += int(ep.meta[slot] - before[slot])
            if len(r[0]):
                parts.append(r)
        if self.npushed == 0:
            self.first_seq = int(seqs[0])
        self.npushed += len(x)
        self.last_seq = int(seqs[-1])
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

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        qids = np.asarray(qids, np.int64)
        out = np.full(len(qids), np.nan)
        for i, q in enumerate(qids.tolist()):
            if q not in self.q:
                raise KeyError(f"qid {q} is not registered")
            phi, e, key, slot = self.q[q]
            ep = self.epochs[key]
            if slot >= 0:
                ep.flush()
                out[i] = ep.qlast[slot]
            else:
                out[i] = ep.lookup(np.array([phi]), np.array([max(e, self.eps)]))[0]
        return out

    def summary(self, qid: int, n: int) -> np.ndarray:
        """The query's epoch summary as weighted tuples: float64 (m, 3) rows (v, r-, r+)."""
        if int(qid) not in self.q:
            raise KeyError(f"qid {int(qid)} is not registered")
        v, lo, hi = self.epochs[self.q[int(qid)][2]].tuples()
        return np.column_stack([v, lo.astype(np.float64), hi.astype(np.float64)])

    def cluster_count(self) -> int:
        return sum(len(ep.clus) for ep in self.epochs.values())

    def summary_size(self) -> int:
        return sum(ep.m for ep in self.epochs.values())

    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        return {
            "eps": self.eps, "rows": self.rows, "npushed": self.npushed, "first_seq": self.first_seq,
            "last_seq": self.last_seq, "epochs": {str(k): ep.state() for k, ep in self.epochs.items()},
            "qids": np.array(qs, np.int64), "phi": np.array([self.q[q][0] for q in qs]),
            "eps_q": np.array([self.q[q][1] for q in qs]), "key": np.array([self.q[q][2] for q in qs], np.int64),
            "slot": np.array([self.q[q][3] for q in qs], np.int64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> TriggerQuantiles:
        op = cls(float(s["eps"]), s["rows"])
        op.npushed, op.first_seq, op.last_seq = int(s["npushed"]), int(s["first_seq"]), int(s["last_seq"])
        op.epochs = {int(k): Epoch.from_state(v) for k, v in s["epochs"].items()}
        for q, phi, e, k, sl in zip(s["qids"].tolist(), s["phi"].tolist(), s["eps_q"].tolist(), s["key"].tolist(),
                                    s["slot"].tolist(), strict=True):
            op.q[q] = (phi, e, k, sl)
        return op
