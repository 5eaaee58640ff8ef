"""The quantiles family's engine adapter: one QuantileOperator per (column, rows window, notify
mode), except that every plain rows-window lookup query of a column shares one group.

Shared rows windows: a query with ``rows`` <= :data:`~.nofn.MAX_ROWS` that is answered on lookup
only (no notify, no alert, no rank_of, no where / group_by) goes to the group ``{"column": c,
"rows": "shared"}``, whose operator serves every window length at once (:class:`~.nofn.NofN`, the
n-of-N structure; under ``--algo quantiles=oracle``, :class:`ByWindow`: one oracle per length,
exact). Its operator's ``register`` takes each query's window (``rows=``). Notify, alert, rank
and keyed rows-window queries, and windows beyond the cap, keep a group per window length (a
snapshot's groups keep the params they were saved with).

Notify queries (``"notify": true``) get ``update`` events ``{"event": "update", "id", "at",
"value"}`` from the operator's push (docs/contract.md); other queries answer on lookup. Queries
with ``"notify": "cluster"`` form groups of their own (the mode is part of the group's params)
and follow their cluster's value: ``cluster`` events (the query shows cluster c's value from this
element on; the cluster number travels in the output's ``r`` column) and ``cluster_update`` events
(id null: cluster c's value from this element on). Operators with clusters (``serves_clusters``:
casu, csu, su, naive) report both; the others (oracle, sliding) serve the mode with one cluster
per query, numbered by the query's qid (unique in a run, as every cluster number is).

Rejected rows keep their position (docs/contract.md): a rows window moves at a rejected row, so a
notify query's value may stop being valid there, or its window may become empty. The group
follows every position (``follows_positions``): while it has notify queries over a rows window it
pushes a rejected row to the operator as a position without element (value NaN), and the
operator re-evaluates there as at any element, so the events at that position keep the invariant.
Positions in a seq gap are positions without element too: after position a, the first min(gap, W)
of them are pushed as NaN (beyond, every window is empty and stays so: a gap of 2^60 costs W).
A lookup beyond the last position pushed (in a gap, or past the last row) answers the window
ending at its position (the operator's lookup); the next rows push the positions before them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import Unsupported
from ..group import Group
from ..specs import QuantileSpec
from . import QuantileOperator
from .alerts import ALERT, Alerts, spec_alert
from .nofn import MAX_ROWS, NofN
from .rank import rank_answers
from .rank_push import RankPush

SHARED = "shared"  # params["rows"] of the group of a column's plain rows-window lookups (module doc)
_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))


class ByWindow(QuantileOperator):
    """The shared group's operator for an implementation without an n-of-N structure (the oracle):
    one instance per window length, each fed every position; answers are that instance's."""

    name = "by_window"
    per_query_rows = True

    def __init__(self, impl: type, eps: float) -> None:
        super().__init__(eps, None)
        self.impl = impl
        self.ops: dict[int, QuantileOperator] = {}  # W -> operator
        self.w: dict[int, int] = {}  # qid -> W

    def register(self, qid, phi, eps, start, notify=False, rows=None):
        op = self.ops.get(int(rows))
        if op is None:
            op = self.ops[int(rows)] = self.impl(self.eps, int(rows))
        op.register(qid, phi, eps, start, notify=notify)
        self.w[int(qid)] = int(rows)

    def terminate(self, qid):
        w = self.w.pop(int(qid), None)
        if w is not None:
            self.ops[w].terminate(qid)
            if not any(v == w for v in self.w.values()):
                del self.ops[w]

    def push(self, values, seqs):
        for op in self.ops.values():
            op.push(values, seqs)
        return _EMPTY

    def lookup(self, qids, n):
        qids = np.asarray(qids, np.int64)
        out = np.empty(len(qids))
        ws = np.array([self.w[q] for q in qids.tolist()], np.int64)
        for w in np.unique(ws).tolist():
            i = np.flatnonzero(ws == w)
            out[i] = self.ops[w].lookup(qids[i], n)
        return out

    def summary(self, qid, n):
        return self.ops[self.w[int(qid)]].summary(qid, n)

    def state(self):
        t = type(next(iter(self.ops.values()))) if self.ops else self.impl
        return {"eps": self.eps, "impl": f"{t.__module__}:{t.__qualname__}", "w": list(self.ops),
                "ops": [op.state() for op in self.ops.values()],
                "qids": np.array(list(self.w), np.int64), "qw": np.array(list(self.w.values()), np.int64)}

    @classmethod
    def from_state(cls, s):
        import importlib

        mod, name = s["impl"].split(":")
        impl = getattr(importlib.import_module(mod), name)
        op = cls(impl, float(s["eps"]))
        op.ops = {int(w): impl.from_state(st) for w, st in zip(s["w"], s["ops"], strict=True)}
        op.w = dict(zip(np.asarray(s["qids"], np.int64).tolist(), np.asarray(s["qw"], np.int64).tolist(), strict=True))
        return op


def shared_operator(impl: type, eps: float) -> QuantileOperator:
    """The shared group's operator: :class:`NofN` when the implementation serves rows windows with
    the sliding summary (every one but the oracle), else one instance of it per window length."""
    from .sliding import Sliding

    return NofN(eps) if isinstance(impl(eps, 1), Sliding) else ByWindow(impl, eps)


class QuantileGroup(Group):
    family = "quantiles"
    independent = False  # queries share clusters and triggers (a termination changes when others update)
    follows_positions = True  # rejected rows move rows windows (module doc)

    @staticmethod
    def params_of(spec: QuantileSpec) -> dict[str, Any]:
        if (spec.rows is not None and spec.rows <= MAX_ROWS and not spec.notify and spec.rank_of is None
                and spec_alert(spec) is None and not spec.keyed()):
            return {"column": spec.column, "rows": SHARED}  # one structure for every window (module doc)
        p: dict[str, Any] = {"column": spec.column, "rows": spec.rows}
        if spec.notify == "cluster":
            p["notify"] = "cluster"
        if spec.keyed():  # per-key queries: vigil.quantiles.keyed
            p["where"] = spec.where
            p["group_by"] = spec.group_keys()
        return p

    def __new__(cls, engine, params):
        if "group_by" in params:  # where / group_by queries: one summary per key (keyed.py)
            from .keyed import KeyedQuantileGroup

            return KeyedQuantileGroup(engine, params)
        return super().__new__(cls)

    def __init__(self, engine, params):
        super().__init__(engine, params)
        self.shared = params["rows"] == SHARED
        if self.shared:
            self.op = shared_operator(engine.impl("quantiles"), engine.quantile_epsilon)
        else:
            self.op = engine.impl("quantiles")(engine.quantile_epsilon, params["rows"])
        self.cluster = params.get("notify") == "cluster"
        self.native = self.cluster and bool(getattr(self.op, "serves_clusters", False))
        self.fresh: set[int] = set()  # per-query clusters: queries whose cluster event is still due
        self.notify: set[int] = set()  # notify queries (of any mode)
        self.fed: int | None = None  # the last position pushed to the operator
        self.alerts = Alerts()  # alert queries (above/below), by qid: alerts.py
        self.rank: dict[int, float] = {}  # rank queries: qid -> rank_of (answered from summaries)
        self.rank_push = RankPush()  # pushed rank queries (rank_push.py)

    def checks(self, cols, idx):
        return [(None, [(self.params["column"], "num")])]

    def register(self, qid, spec, start):
        notify = spec.notify if self.native or not self.cluster else True
        alert = spec_alert(spec)
        if spec.rank_of is not None and spec.notify and spec.rows is not None:
            raise Unsupported("rank_of with notify: pushed rank queries are served over the whole stream (no rows)")
        if alert:  # a notify query whose updates feed its alert machine (alerts.py)
            notify = True
        phi = 0.5 if spec.phi is None else float(spec.phi)  # rank queries only read the summary
        if spec.rank_of is not None and spec.notify:  # maintained by rank_push, not by the operator
            self.op.register(qid, phi, float(spec.epsilon), start, notify=False)
            self.rank_push.add(qid, float(spec.rank_of), max(float(spec.epsilon), float(self.engine.quantile_epsilon)))
            self.rank[qid] = float(spec.rank_of)
            return
        self._add(qid, phi, float(spec.epsilon), start, notify, spec.rows, bool(spec.notify or alert))
        if alert:
            self.alerts.set(qid, *alert)
        if spec.rank_of is not None:
            self.rank[qid] = float(spec.rank_of)

    def register_many(self, qids: list[int], rows: list[tuple], start: int) -> None:
        """Plain queries as rows (:func:`vigil.specs.fast_spec`: (phi, epsilon, rows, notify); no
        alert, rank_of, where or group_by), each registered as :meth:`register` does."""
        forced = self.cluster and not self.native
        for qid, (phi, eps, nrows, notify) in zip(qids, rows, strict=True):
            self._add(qid, phi, eps, start, True if forced else notify, nrows, notify)

    def _add(self, qid: int, phi: float, eps: float, start: int, notify: bool, rows: int | None,
             pushed: bool) -> None:
        """The operator's registration and the records every query of the operator shares
        (``pushed``: it pushes updates or alerts)."""
        if self.shared:
            self.op.register(qid, phi, eps, start, notify=notify, rows=int(rows))
        else:
            self.op.register(qid, phi, eps, start, notify=notify)
        if pushed:
            self.notify.add(qid)
        if self.cluster and not self.native:
            self.fresh.add(qid)

    def terminate(self, qid):
        self.fresh.discard(qid)
        self.notify.discard(qid)
        self.alerts.drop(qid)
        self.rank.pop(qid, None)
        self.rank_push.drop(qid)
        self.op.terminate(qid)

    def feed_positions(self, cols, rows, seqs, vis, seg):
        """Every row of a run (``vis``: the applied ones): a rows window with notify queries gets
        the rejected rows and the positions of seq gaps as positions without element (NaN), others
        only the applied rows."""
        w = self.params["rows"]
        if w is None or w == SHARED or not self.notify or not len(rows):
            if vis.any():
                self.feed(cols, rows[vis], seqs[vis], seg)
            return
        seqs = np.asarray(seqs, np.int64)
        prev = np.empty(len(seqs), np.int64)
        prev[0] = seqs[0] - 1 if self.fed is None else min(self.fed, seqs[0] - 1)
        prev[1:] = seqs[:-1]
        # a gap of g positions after position a: a+1 .. a+min(g, W) (beyond, every window is empty)
        gaps = np.minimum(seqs - prev - 1, int(w))
        if vis.all() and not gaps.any():
            self.feed(cols, rows, seqs, seg)
            return
        x = np.full(len(rows), np.nan)
        x[vis] = cols.get(self.params["column"], "num")[0][rows[vis]]
        if gaps.any():
            cnt = gaps + 1
            ends = np.cumsum(cnt)
            off = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - cnt, cnt)
            pos = np.repeat(prev + 1, cnt) + off
            pos[ends - 1] = seqs
            xx = np.full(len(pos), np.nan)
            xx[ends - 1] = x
            x, seqs = xx, pos
        self._push(x, seqs, seg)

    def feed(self, cols, rows, seqs, seg):
        self._push(cols.get(self.params["column"], "num")[0][rows], seqs, seg)

    def _push(self, x, seqs, seg):
        if self.rank_push.q:  # pushed rank queries: the push is cut where one is due
            qids, offsets, values = self.rank_push.push(self.op, x, seqs)
        else:
            qids, offsets, values = self.op.push(x, seqs)
            self.rank_push.pushed += len(x)
        self.fed = int(seqs[-1])
        if not self.cluster:
            if len(qids) and self.alerts.n:  # alert queries: only their crossings (alerts.py)
                hit, pos, code = self.alerts.filter(qids, values)
                for ev, c in (("alert", ALERT), ("clear", 1 - ALERT)):
                    e = pos[code == c]
                    seg.add(ev, qids[e], seqs[offsets[e]], value=values[e])
                keep = ~hit
                qids, offsets, values = qids[keep], offsets[keep], values[keep]
            if len(qids):
                seg.add("update", qids, seqs[offsets], value=values)
            return
        if self.native:
            (mq, mo, mc), (cq, co, cv) = self.op.cluster_events()
            seg.add("cluster", mq, seqs[mo], r=mc)
            seg.add("cluster_update", np.full(len(cq), -1, np.int64), seqs[co], r=cq, value=cv)
            return
        if not len(qids):
            return
        # one cluster per query, numbered by its qid: its cluster event comes with its first update
        if self.fresh:
            f = np.fromiter(self.fresh, np.int64, len(self.fresh))
            hit = np.flatnonzero(np.isin(qids, f))
            _, first = np.unique(qids[hit], return_index=True)
            idx = hit[first]
            seg.add("cluster", qids[idx], seqs[offsets[idx]], r=qids[idx])
            self.fresh.difference_update(qids[idx].tolist())
        seg.add("cluster_update", np.full(len(qids), -1, np.int64), seqs[offsets], r=qids, value=values)

    def lookup_many(self, qids, n):
        out = self.op.lookup(qids, n)
        if self.rank:
            out = rank_answers(self.op, self.rank, np.asarray(qids, np.int64), n, out)
            for i, q in enumerate(np.asarray(qids, np.int64).tolist()):
                if q in self.rank_push.q:  # its maintained value
                    out[i] = self.rank_push.value(q)
        return [(None if math.isnan(x) else x, None) for x in out.tolist()]

    def state(self) -> dict[str, Any]:
        return {**super().state(), "fresh": np.array(sorted(self.fresh), np.int64),
                "notify": np.array(sorted(self.notify), np.int64), "fed": -2**63 if self.fed is None else self.fed,
                "alerts": self.alerts.state(), "rank_push": self.rank_push.state(), "rank_q": np.array(sorted(self.rank), np.int64),
                "rank_x": np.array([self.rank[q] for q in sorted(self.rank)], np.float64)}

    def load(self, s: dict[str, Any]) -> None:
        super().load(s)
        self.fresh = set(np.asarray(s.get("fresh", ()), np.int64).tolist())
        fed = int(s.get("fed", -2**63))
        self.fed = None if fed == -2**63 else fed
        # a snapshot without the notify set: follow every position (harmless without notify)
        self.notify = set(np.asarray(s["notify"], np.int64).tolist()) if "notify" in s else {-1}
        self.alerts = Alerts.from_state(s.get("alerts"))
        self.rank_push = RankPush.from_state(s.get("rank_push"))
        self.rank = dict(zip(np.asarray(s.get("rank_q", ()), np.int64).tolist(),
                             np.asarray(s.get("rank_x", ()), np.float64).tolist(), strict=True))
