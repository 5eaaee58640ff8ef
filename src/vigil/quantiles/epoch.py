"""One epoch of the trigger-based continuous quantile processing (paper 004 §3.5; see
:mod:`.triggers` for the model): a GK summary, its query clusters (OQC, Algorithm 2, seeded with
QC_A, Algorithm 1; or one cluster per query, :class:`Singletons`, for SU), their triggers and the
notify queries' member lists, driving :func:`._trigger_kernels.process`.

Cluster mode (``lazy`` < 0, notify "cluster" queries, docs/contract.md): a query always shows its
cluster's value; a cluster change is one event (cluster number, value) and a query's moves between
clusters (its first element, OQC merges absorbing its cluster) are membership events, both
reported at the next element. Cluster numbers are the qid of a query that founded the cluster, so
they are unique in a run and never reused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _trigger_kernels as T
from ._updates import take_moves
from .clustering import qc_a, qc_b
from .gk import compress_period, presort
from .oqc import OQC

_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))


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
       "head": (np.int64, -1), "tail": (np.int64, -1), "ckey": (np.int64, 0), "sdead": (np.int64, int(T.INF_DEADLINE)),
       "cnum": (np.int64, -1), "cqk": (np.bool_, False)}
_SL = {"slot_qid": (np.int64, -1), "nxt": (np.int64, -1), "prv": (np.int64, -1), "qlast": (np.float64, np.nan),
       "qa": (np.float64, 0.0), "qb": (np.float64, 1.0), "qdead": (np.int64, -1), "qclu": (np.int64, -1)}


class Epoch:
    """One GK summary with its clusters, triggers and notify queries (see the module doc)."""

    def __init__(self, eps: float, mode: int, clustered: bool, offline: bool = True, keep: float = 0.5,
                 offline_algo: str = "qc_a", lazy: int = 1, mkeep: float = 0.5) -> None:
        self.eps = eps
        self.mkeep = mkeep
        self.lazy = int(lazy) if mode != 2 or lazy < 0 else 0
        self.cmode = self.lazy < 0  # notify "cluster" (module doc)
        # membership changes not yet reported (slots, qids, cluster ids), reported at the next element
        self.pmv: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.moves = (np.empty(0, np.int64), np.empty(0, np.int64))
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
        self._pre: np.ndarray | None = None  # buffer of the presorted merge periods of a push (gk.presort)

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
        self.qclu[s] = -1
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
        self.qclu[slots] = -1
        self.pending.extend(zip(qids.tolist(), slots.tolist(), np.asarray(a).tolist(), np.asarray(b).tolist(),
                                strict=True))
        return slots

    def _cl_room(self, c: int) -> None:
        if c >= len(self.ca):
            for k, (_, f) in _CL.items():
                setattr(self, k, _grow(getattr(self, k), c + 1, f))

    def _new_cluster(self, c: int, num: int) -> None:
        """Cluster c (its number ``num`` in events: the qid of a query that founded it, so unique
        in a run and never reused)."""
        self._cl_room(c)
        self.cnum[c] = num
        self.ca[c], self.cb[c] = self.clus.a[c], self.clus.b[c]
        self.cval[c] = np.nan
        self.cforce[c] = self.cqk[c] = False
        self.cdead[c] = self.ckey[c] = self.n
        self.cat[c] = -1  # a registration's cluster: CSU/SU re-evaluate it alone (kernels' _any_expired)
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
        self.cat[c] = -1
        T.heap_update(self.heap, self.hpos, self.ckey, int(self.meta[T.M_HSIZE]), c)

    def _remove_cluster(self, c: int) -> None:
        if self.mode != 2:
            T.unpin(self.v, self.pin, self.m, self.cval[c])
        if not self.cmode:  # cluster mode: members see it until their move is reported (lookup)
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
            first = np.full(len(ids), np.iinfo(np.int64).max, np.int64)
            np.minimum.at(first, cluster, qids)
            for c, num in zip(ids.tolist(), first.tolist(), strict=True):
                self._new_cluster(c, num)
            cl = ids[cluster]
            if self.cmode:
                self.pmv.append((slots, qids, cl))
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
                self._new_cluster(c, qid)
                self._link(c, s)
                if self.cmode:
                    self.pmv.append((np.array([s]), np.array([qid]), np.array([c])))
                continue
            for d in absorbed:
                if self.cmode:  # d's members move to c
                    ms = self._member_slots(d)
                    self.pmv.append((ms, self.slot_qid[ms], np.full(len(ms), c, np.int64)))
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
            if not self.cmode:
                self._refire(c)
                continue
            self.pmv.append((np.array([s]), np.array([qid]), np.array([c])))
            if kind == "merge":  # a narrower interval: re-evaluated at the next element, reported if it changes
                self.cdead[c] = self.ckey[c] = self.n
                self.cat[c] = -1
                T.heap_update(self.heap, self.hpos, self.ckey, int(self.meta[T.M_HSIZE]), c)

    def _member_slots(self, c: int) -> np.ndarray:
        out = []
        s = int(self.head[c])
        while s >= 0:
            out.append(s)
            s = int(self.nxt[s])
        return np.array(out, np.int64)

    def _take_moves(self) -> tuple[np.ndarray, np.ndarray]:
        """The membership changes to report at the next element: (qids, cluster numbers), by qid;
        a query's last move wins, dropped queries and moves to the cluster it shows are skipped."""
        if not self.pmv:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if len(self.pmv) == 1:  # one batch of registrations (slots increasing, as registered): one kernel pass
            s, q, c = (np.asarray(a, np.int64) for a in self.pmv[0])
            q1, c1, srt, done = take_moves(s, q, c, self.slot_qid, self.qclu, self.cnum)
            if done:
                self.pmv = []
                if not srt:
                    o = np.argsort(q1, kind="stable")
                    q1, c1 = q1[o], c1[o]
                return q1, c1
        s, q, c = (np.concatenate(p).astype(np.int64) for p in zip(*self.pmv, strict=True))
        self.pmv = []
        ok = self.slot_qid[s] == q
        s, q, c = s[ok], q[ok], c[ok]
        if len(s) > 1 and not (s[1:] > s[:-1]).all():  # (slots increasing: each once, as registered)
            rs = s[::-1]
            _, last = np.unique(rs, return_index=True)  # the last entry of each slot
            idx = len(s) - 1 - last
            s, q, c = s[idx], q[idx], c[idx]
        ch = self.qclu[s] != c
        s, q, c = s[ch], q[ch], c[ch]
        self.qclu[s] = c
        if len(q) > 1 and not (q[1:] >= q[:-1]).all():
            o = np.argsort(q, kind="stable")
            q, c = q[o], c[o]
        return q, self.cnum[c]

    def drop(self, qid: int, s: int) -> None:
        self.flush()
        self.qclu[s] = -1
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
        """Insert x; returns the notify updates (qids, offsets, values) in (offset, qid) order; in
        cluster mode the cluster updates (cluster numbers, offsets, values) in (offset, number)
        order, and ``self.moves`` holds the membership changes at offset 0 (qids, cluster numbers)."""
        self.flush()
        if self.cmode:
            self.moves = self._take_moves()
        self.meta[T.M_NOUT] = 0
        p = 0
        period = int(self.meta[T.M_PERIOD])
        pre, pf, pt = presort(x, int(self.meta[T.M_NEXT] - self.meta[T.M_N]) % period, period, self._pre)
        if pt and pre is not self._pre:
            self._pre = pre
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
                                      self.qb, self.qlast, self.qdead, oq, oo, ov_, op_, pre[p:], pf - p, pt - p,
                                      self.cqk)
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
        q, o, v = T.order_updates(*self.out, k)
        if self.cmode:  # internal cluster ids -> cluster numbers
            q = self.cnum[q]
            srt = np.lexsort((q, o))
            q, o, v = q[srt], o[srt], v[srt]
        return q, o, v

    def cluster_value(self, s: int) -> float:
        """Cluster mode: the value slot s shows (its reported cluster's latest value; NaN before
        its first element)."""
        c = int(self.qclu[s])
        return float(self.cval[c]) if c >= 0 else np.nan

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
        if self.pmv:
            pm = [np.concatenate(p).astype(np.int64) for p in zip(*self.pmv, strict=True)]
        else:
            pm = [np.empty(0, np.int64)] * 3
        s = {"meta": self.meta.copy(), "v": v, "lo": lo, "hi": hi, "pin": self.pins(), "clus": self.clus.state(),
             "pmv_s": pm[0], "pmv_q": pm[1], "pmv_c": pm[2],
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
        for names, like in ((_CL, "ca"), (_SL, "nxt")):  # arrays newer than the snapshot
            for k, (dt, f) in names.items():
                if k not in s:
                    setattr(e, k, np.full(len(s[like]), f, dt))
        if len(s.get("pmv_s", ())):
            e.pmv = [(np.array(s["pmv_s"]), np.array(s["pmv_q"]), np.array(s["pmv_c"]))]
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
