"""Per-key quantile queries: ``where`` and ``group_by`` (docs/contract.md, "Per-key quantiles").

The engine adapter of the quantile queries that read a substream. One group per (column, rows,
where, group_by): its rows are those matching ``where`` (equalities on key columns, closed ranges
on numeric columns, the threshold queries' language); with ``group_by`` they split into one
substream per key value (the key columns' values as text), else one substream.

Paper 004's structure per key: every substream has **one operator** (the run's quantile
implementation: a GK summary with the clustered, trigger-based queries of CASU/CSU/SU, or the
bucket summary of a rows window, or the oracle), created at the key's first element and shared
by every query of the group; a query is one *slot* in each key's operator (registered in the
existing keys' operators when it registers, in a new key's operator when the key appears). So
queries sharing a key share its summary, triggers and clusters, and a key costs what one
operator costs.

A substream's positions are its own elements, numbered 1, 2, ... (the operator's seq): a rows
window is the key's last ``rows`` matching elements ("p99 over the last 1,000 requests of each
endpoint"), and a query counts the key's elements after its registration. Rejected rows are in
no substream. Outputs: a query's pushed events (``update``, ``alert``, ``clear``) carry their key
in ``keys`` (one text per group_by column) and come, at one position, by query then key text; a
lookup answers one ``answer`` per key whose window holds an element (by key text), or one answer
with an empty key list when no key does (``group_by``), or one plain answer (``where`` alone).

Cost per batch: one push per key present in the batch (a stable sort of the rows by key, each
key's rows one contiguous slice), plus the operators' own costs; registration O(keys) slots; a
lookup O(keys) operator lookups. A rows-window operator is called through :mod:`.keyed_fast`
(its kernels without the argument checks the group makes redundant).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import Unsupported
from ..group import Codes, Group, PerKey
from . import keyed_fast as fast
from .alerts import ALERT, CLEAR, Alerts, spec_alert
from .rank import rank_from_summary

_SEP = "\x1f"  # joins the texts of several key columns into one code's text


class KeyedQuantileGroup(Group):
    family = "quantiles"
    independent = False  # queries share each key's clusters and triggers

    def __init__(self, engine, params):
        super().__init__(engine, params)
        self.impl = engine.impl("quantiles")
        self.eps = float(engine.quantile_epsilon)
        self.codes = Codes()  # key text -> code
        self.ops: list[Any] = []  # code -> operator
        self.count: list[int] = []  # code -> elements pushed (the substream's position)
        self.q: dict[int, dict[str, Any]] = {}  # qid -> {phi, eps, notify, alert, rank}
        self.slots: dict[int, dict[int, int]] = {}  # qid -> {code: slot}
        self.slot_q: list[int] = []  # slot -> qid
        self.slot_k: list[int] = []  # slot -> code
        self.alerts = Alerts()  # by slot
        self.rank: dict[int, float] = {}  # slot -> rank_of
        self.where = params.get("where") or {}
        self.by: list[str] = list(params.get("group_by") or [])
        self.eq = [(c, x) for c, x in sorted(self.where.items()) if not isinstance(x, list)]
        self.ranges = [(c, -math.inf if x[0] is None else float(x[0]), math.inf if x[1] is None else float(x[1]))
                       for c, x in sorted(self.where.items()) if isinstance(x, list)]

    def part_tag(self):
        return "seq"

    def checks(self, cols, idx):
        mask = None
        for col, value in self.eq:
            m = cols.equals(col, value)[idx]
            mask = m if mask is None else mask & m
        refs = [(self.params["column"], "num")] + [(c, "num") for c, _, _ in self.ranges if c != self.params["column"]]
        refs += [(c, "key") for c in self.by]
        return [(mask, refs)]

    # ------------------------------------------------------------------ queries
    def register(self, qid, spec, start):
        if self.engine.partial is not None:
            raise Unsupported("per-key quantile queries (where / group_by) are not served in sharded mode")
        if spec.rank_of is not None and spec.notify:
            raise Unsupported("rank_of with notify: pushed rank queries are served over the whole stream, "
                              "without where/group_by")
        q = {"phi": 0.5 if spec.phi is None else float(spec.phi), "eps": float(spec.epsilon),
             "notify": bool(spec.notify), "alert": spec_alert(spec), "rank": None if spec.rank_of is None else
             float(spec.rank_of)}
        if not self.ops:  # what the implementation cannot serve is rejected now, not at a key's first row
            self.impl(self.eps, self.params["rows"]).register(0, q["phi"], q["eps"], start,
                                                               notify=q["notify"] or q["alert"] is not None)
        self.q[qid] = q
        self.slots[qid] = {}
        for code in range(len(self.ops)):
            self._slot(qid, code, self.count[code])

    def _slot(self, qid: int, code: int, start: int) -> None:
        q = self.q[qid]
        slot = len(self.slot_q)
        self.ops[code].register(slot, q["phi"], q["eps"], start, notify=q["notify"] or q["alert"] is not None)
        self.slot_q.append(qid)
        self.slot_k.append(code)
        if q["alert"] is not None:
            self.alerts.set(slot, *q["alert"])
        if q["rank"] is not None:
            self.rank[slot] = q["rank"]
        self.slots[qid][code] = slot

    def _new_key(self, text: str) -> int:
        code = self.codes.encode(np.array([text], object))[0]
        self.ops.append(self.impl(self.eps, self.params["rows"]))
        self.count.append(0)
        for qid in self.q:
            self._slot(qid, code, 0)
        return code

    def terminate(self, qid):
        for code, slot in self.slots.pop(qid, {}).items():
            self.ops[code].terminate(slot)
            self.alerts.drop(slot)
            self.rank.pop(slot, None)
        self.q.pop(qid, None)

    # ------------------------------------------------------------------ elements
    def _key_texts(self, cols, rows) -> np.ndarray:
        if not self.by:
            return np.full(len(rows), "", object)
        parts = [np.asarray(cols.get(c, "key")[0][rows], object).astype(str) for c in self.by]
        if len(parts) == 1:
            return parts[0].astype(object)
        out = parts[0].astype(object)
        for p in parts[1:]:
            out = out + _SEP + p.astype(object)
        return out

    def key_list(self, code: int) -> list[str]:
        return self.codes.values[code].split(_SEP) if self.by else []

    def feed(self, cols, rows, seqs, seg):
        rows = np.asarray(rows, np.int64)
        seqs = np.asarray(seqs, np.int64)
        x = cols.get(self.params["column"], "num")[0][rows]
        if self.ranges:
            keep = np.ones(len(rows), bool)
            for c, lo, hi in self.ranges:
                v = x if c == self.params["column"] else cols.get(c, "num")[0][rows]
                keep &= (v >= lo) & (v <= hi)
            rows, seqs, x = rows[keep], seqs[keep], x[keep]
        if not len(rows):
            return
        uniq, inv = np.unique(self._key_texts(cols, rows).astype(str), return_inverse=True)
        ucode = np.array([self.codes.code[t] if t in self.codes.code else self._new_key(t) for t in uniq.tolist()],
                         np.int64)
        order = np.argsort(inv, kind="stable")
        size = np.bincount(inv, minlength=len(uniq))
        bounds = np.r_[0, np.cumsum(size)].tolist()
        # every key's values and positions as contiguous slices of two arrays (one pass, no copy per key)
        c0s = np.array([self.count[c] for c in ucode.tolist()], np.int64)
        xs = np.ascontiguousarray(x[order], np.float64)
        ks = inv[order]
        local = np.arange(1, len(order) + 1, dtype=np.int64) - np.asarray(bounds[:-1], np.int64)[ks] + c0s[ks]
        out_s, out_o, out_v, out_r = [], [], [], []
        ops, count = self.ops, self.count
        for u, code in enumerate(ucode.tolist()):
            b0, b1 = bounds[u], bounds[u + 1]
            s, o, v = fast.push(ops[code], xs[b0:b1], local[b0:b1])
            count[code] += b1 - b0
            if len(s):
                idx = order[b0:b1]
                out_s.append(s)
                out_o.append(idx[o])
                out_v.append(v)
                out_r.append(np.full(len(s), u, np.int64))  # u: rank of the key's text in the batch
        if not out_s:
            return
        slot, off, val, kr = (np.concatenate(a) for a in (out_s, out_o, out_v, out_r))
        qid = np.asarray(self.slot_q, np.int64)[slot]
        o = np.lexsort((kr, qid, off))  # by position, query, key text
        slot, off, val, kr, qid = slot[o], off[o], val[o], kr[o], qid[o]
        keys = np.empty(len(slot), object)
        klists = [self.key_list(int(c)) for c in ucode.tolist()]
        keys[:] = [klists[k] for k in kr.tolist()]
        if self.alerts.n:
            hit, pos, code = self.alerts.filter(slot, val)
            for ev, c in (("alert", ALERT), ("clear", CLEAR)):
                e = pos[code == c]
                seg.add(ev, qid[e], seqs[off[e]], value=val[e], keys=keys[e] if self.by else None)
            keep = ~hit
            slot, off, val, qid, keys = slot[keep], off[keep], val[keep], qid[keep], keys[keep]
        if len(slot):
            seg.add("update", qid, seqs[off], value=val, keys=keys if self.by else None)

    # ------------------------------------------------------------------ answers
    def _value(self, slot: int, code: int) -> float:
        op, n = self.ops[code], self.count[code]
        if slot in self.rank:
            return rank_from_summary(op.summary(slot, n), self.rank[slot]) if n else math.nan
        return fast.lookup(op, slot, n)

    def lookup_many(self, qids, n):
        out = []
        for qid in np.asarray(qids, np.int64).tolist():
            per = self.slots[qid]
            if not self.by:
                v = self._value(per[0], 0) if 0 in per else math.nan
                out.append((None if math.isnan(v) else v, None))
                continue
            ans = PerKey()
            for code in sorted(per, key=lambda c: self.codes.values[c]):
                v = self._value(per[code], code)
                if not math.isnan(v):
                    ans.append((self.key_list(code), v))
            out.append((ans, None))
        return out

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        return {
            "t_last": self.t_last, "keys": list(self.codes.values), "count": np.array(self.count, np.int64),
            "ops": [op.state() for op in self.ops], "slot_q": np.array(self.slot_q, np.int64),
            "slot_k": np.array(self.slot_k, np.int64), "alerts": self.alerts.state(),
            "rank_s": np.array(sorted(self.rank), np.int64),
            "rank_x": np.array([self.rank[s] for s in sorted(self.rank)], np.float64),
            "qids": np.array(qs, np.int64),
            "queries": [[self.q[q]["phi"], self.q[q]["eps"], self.q[q]["notify"],
                         None if self.q[q]["alert"] is None else list(self.q[q]["alert"]), self.q[q]["rank"]]
                        for q in qs],
            "slots": [[[c, s] for c, s in sorted(self.slots[q].items())] for q in qs],
        }

    def load(self, s: dict[str, Any]) -> None:
        self.t_last = s["t_last"]
        self.codes = Codes(list(s["keys"]))
        self.count = np.asarray(s["count"], np.int64).tolist()
        cls = type(self.impl(self.eps, self.params["rows"]))
        self.ops = [cls.from_state(o) for o in s["ops"]]
        self.slot_q = np.asarray(s["slot_q"], np.int64).tolist()
        self.slot_k = np.asarray(s["slot_k"], np.int64).tolist()
        self.alerts = Alerts.from_state(s["alerts"])
        self.rank = dict(zip(np.asarray(s["rank_s"], np.int64).tolist(), np.asarray(s["rank_x"]).tolist(), strict=True))
        self.q, self.slots = {}, {}
        for q, (phi, e, nt, al, rk), sl in zip(np.asarray(s["qids"], np.int64).tolist(), s["queries"], s["slots"],
                                               strict=True):
            self.q[q] = {"phi": phi, "eps": e, "notify": bool(nt), "alert": None if al is None else
                         (int(al[0]), float(al[1]), float(al[2])), "rank": rk}
            self.slots[q] = {int(c): int(sl_) for c, sl_ in sl}
