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

Cost per batch: a stable sort of the rows by key (each key's rows one contiguous slice; key
columns dictionary-encoded once per batch and column, shared by the groups), then one push per key
present in the batch, plus the operators' own costs; registration O(keys) slots; a lookup O(keys)
operator lookups. Rows-window operators are pushed and looked up for every key in one compiled
call (:mod:`.keyed_sliding`); other operators with one call per key (:mod:`.keyed_fast`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import Unsupported
from ..group import Codes, Group, PerKey
from . import keyed_fast as fast
from .alerts import ALERT, CLEAR, Alerts, spec_alert
from .keyed_sliding import SlidingKeys, spawn, template
from .rank import rank_from_summary
from .sliding import Sliding

_SEP = "\x1f"  # joins the texts of several key columns into one code's text


def _key_dict(cols, col: str) -> tuple[np.ndarray, list[str]]:
    """A key column of the batch dictionary-encoded (once per batch, shared by the groups):
    (index of each row's text in the texts, -1 if null; the texts). Texts as ``key_column`` reads
    them (numbers as their text)."""
    k = (col, "quantile-key-dict")
    if k not in cols.cache:
        t = cols.table
        if col not in t.column_names:
            cols.cache[k] = (np.full(t.num_rows, -1, np.int64), [])
        else:
            c = t.column(col)
            if not pa.types.is_string(c.type) and not pa.types.is_large_string(c.type):
                c = pc.cast(c, pa.string())
            d = c.combine_chunks().dictionary_encode() if t.num_rows else pa.array([], pa.string()).dictionary_encode()
            idx = np.asarray(pc.fill_null(d.indices, -1).to_numpy(zero_copy_only=False), np.int64)
            cols.cache[k] = (idx, d.dictionary.to_pylist())
    return cols.cache[k]


def _key_comb(cols, by: list[str], parts: list[tuple[np.ndarray, list[str]]]) -> tuple[np.ndarray, int]:
    """One number per row for the combination of its key columns' dictionary entries, in
    [-1, n) (-1: a null in a single key column), and n (once per batch and column list)."""
    if len(parts) == 1:
        return parts[0][0], len(parts[0][1])
    k = (tuple(by), "quantile-key-comb")
    if k not in cols.cache:
        comb = parts[0][0]
        for idx, texts in parts[1:]:
            comb = np.unique(comb * (len(texts) + 1) + (idx + 1), return_inverse=True)[1].reshape(-1).astype(np.int64)
        cols.cache[k] = (comb, int(comb.max()) + 1 if len(comb) else 0)
    return cols.cache[k]


class KeyedQuantileGroup(Group):
    family = "quantiles"
    independent = False  # queries share each key's clusters and triggers

    def __init__(self, engine, params):
        super().__init__(engine, params)
        self.impl = engine.impl("quantiles")
        self.eps = float(engine.quantile_epsilon)
        self.codes = Codes()  # key text -> code
        self.ops: list[Any] = []  # code -> operator
        self.count = np.zeros(0, np.int64)  # code -> elements pushed (the substream's position)
        self.sk: SlidingKeys | None = None  # every key's rows-window operator, pushed in one call
        self._trank = np.zeros(0, np.int64)  # code -> rank of its key text among the keys
        self._known: tuple[object, np.ndarray] = (None, np.zeros(0, np.int64))  # (batch token, its combination + 1 -> code or -1)
        self._cls: type | None = None  # the operators' class (the implementation's, or Sliding for rows)
        self._tpl: Any = None  # a new key's rows-window operator with the live queries' slots (keyed_sliding.template)
        self._klists: list[list[str]] = []  # code -> its key texts (one list per group_by column)
        self._look: dict[int, tuple] = {}  # qid -> its slots' lookup arrays by key text (lookup_many)
        self.q: dict[int, dict[str, Any]] = {}  # qid -> {phi, eps, notify, alert, rank}
        self.slots: dict[int, dict[int, int]] = {}  # qid -> {code: slot}
        self.slot_q: list[int] = []  # slot -> qid
        self.slot_k: list[int] = []  # slot -> code
        self.slot_l: list[tuple[float, int, int]] = []  # slot -> (phi, start, notify slot or -1) in its operator
        self.alerts = Alerts()  # by slot
        self.rank: dict[int, float] = {}  # slot -> rank_of
        self.where = params.get("where") or {}
        self.by: list[str] = list(params.get("group_by") or [])
        self.eq = [(c, x) for c, x in sorted(self.where.items()) if not isinstance(x, list)]
        self.ranges = [(c, -math.inf if x[0] is None else float(x[0]), math.inf if x[1] is None else float(x[1]))
                       for c, x in sorted(self.where.items()) if isinstance(x, list)]

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
        if spec.rank_of is not None and spec.notify:
            raise Unsupported("rank_of with notify: pushed rank queries are served over the whole stream, "
                              "without where/group_by")
        q = {"phi": 0.5 if spec.phi is None else float(spec.phi), "eps": float(spec.epsilon),
             "notify": bool(spec.notify), "alert": spec_alert(spec), "rank": None if spec.rank_of is None else
             float(spec.rank_of)}
        if not self.ops:  # what the implementation cannot serve is rejected now, not at a key's first row
            probe = self.impl(self.eps, self.params["rows"])
            self._cls = type(probe)  # the operators' class (a rows window's: Sliding)
            probe.register(0, q["phi"], q["eps"], start, notify=q["notify"] or q["alert"] is not None)
        self.q[qid] = q
        self._tpl = None
        self.slots[qid] = {}
        for code in range(len(self.ops)):
            self._slot(qid, code, self.count[code])

    def _slot(self, qid: int, code: int, start: int) -> None:
        """Query qid's slot in key code's operator."""
        q = self.q[qid]
        slot = len(self.slot_q)
        op = self._op(code)
        op.register(slot, q["phi"], q["eps"], start, notify=q["notify"] or q["alert"] is not None)
        if self.sk is not None and code < len(self.sk):
            self.sk.sync(code, op)  # the registration may have grown its arrays
        self._book(qid, code, slot, op, start)

    def _book(self, qid: int, code: int, slot: int, op, start: int) -> None:
        """The group's records of query qid's slot ``slot`` (registered at ``start`` in key code's
        operator ``op``)."""
        q = self.q[qid]
        self.slot_q.append(qid)
        self.slot_k.append(code)
        e = op.q[slot] if type(op) is Sliding else (q["phi"], 0, start, False, -1)
        self.slot_l.append((float(e[0]), int(e[2]), int(e[4]) if e[3] else -1))
        if q["alert"] is not None:
            self.alerts.set(slot, *q["alert"])
        if q["rank"] is not None:
            self.rank[slot] = q["rank"]
        self.slots[qid][code] = slot

    def _op(self, code: int) -> Any:
        """Key code's operator, its arrays current (a rows-window key's arrays may have grown in
        the compiled push: :meth:`.keyed_sliding.SlidingKeys.fresh`)."""
        return self.ops[code] if self.sk is None else self.sk.fresh(self.ops, code)

    def _new_keys(self, texts: list[str]) -> list[int]:
        """Codes and operators of keys seen for the first time (each query gets a slot in each)."""
        codes = self.codes.encode(np.array(texts, object)).tolist()
        self.count = np.concatenate([self.count, np.zeros(len(codes), np.int64)])
        if self._cls is None:
            self._cls = type(self.impl(self.eps, self.params["rows"]))
        if codes[0] == 0 and self._cls is Sliding:
            self.sk = SlidingKeys(self.eps)
        if self.sk is None:
            for code in codes:
                self.ops.append(self.impl(self.eps, self.params["rows"]))
                for qid in self.q:
                    self._slot(qid, code, 0)
            return codes
        if self._tpl is None:  # registering every query in each new key's operator: once, then copies
            self._tpl = template(self.impl, self.eps, self.params["rows"],
                                 [(q["phi"], q["eps"], q["notify"] or q["alert"] is not None) for q in self.q.values()])
        qids = list(self.q)
        s0, nq = len(self.slot_q), len(qids)
        slots = [list(range(s0 + j * nq, s0 + (j + 1) * nq)) for j in range(len(codes))]
        ops, blocks = spawn(self._tpl, slots)
        for code, op, sl in zip(codes, ops, slots, strict=True):
            self.ops.append(op)
            for qid, slot in zip(qids, sl, strict=True):
                self._book(qid, code, slot, op, 0)
        if self.sk.st is None:  # the first key makes the typed list
            self.sk.add(ops[0])
            ops, blocks = ops[1:], {k: b[1:] for k, b in blocks.items()}
        if ops:
            self.sk.add_many(ops, blocks)
        return codes

    def terminate(self, qid):
        self._look.pop(qid, None)
        for code, slot in self.slots.pop(qid, {}).items():
            self._op(code).terminate(slot)
            if self.sk is not None:
                self.sk.sync(code, self.ops[code])  # its live notify count
            self.alerts.drop(slot)
            self.rank.pop(slot, None)
        self.q.pop(qid, None)
        self._tpl = None

    # ------------------------------------------------------------------ elements
    def _row_codes(self, cols, rows) -> np.ndarray:
        """The key code of each row (keys seen for the first time get their operator)."""
        if not self.by:
            if not self.ops:
                self._new_keys([""])
            return np.zeros(len(rows), np.int64)
        parts = [_key_dict(cols, c) for c in self.by]
        comb, ncomb = _key_comb(cols, self.by, parts)
        comb = comb[rows] + 1
        batch = cols.cache.setdefault(("quantile-key-batch",), (object(), None))[0]  # this batch's token
        if self._known[0] is not batch:
            self._known = (batch, np.full(ncomb + 1, -1, np.int64))
        known = self._known[1]  # comb + 1 -> code (-1: not seen yet), for this batch's dictionaries
        kc = known[comb]
        miss = np.flatnonzero(kc < 0)
        if not len(miss):
            return kc
        u, first = np.unique(comb[miss], return_index=True)
        new: list[tuple[int, str]] = []
        for c, i in zip(u.tolist(), miss[first].tolist(), strict=True):
            if len(self.by) == 1:
                text = parts[0][1][c - 1]
            else:
                r = rows[i]
                text = _SEP.join(texts[idx[r]] for idx, texts in parts)
            code = self.codes.code.get(text)
            if code is None:
                new.append((c, text))
            else:
                known[c] = code
        if new:  # in the order of their combination numbers, as one by one
            texts = list(dict.fromkeys(t for _, t in new))
            code_of = dict(zip(texts, self._new_keys(texts), strict=True))
            for c, t in new:
                known[c] = code_of[t]
        return known[comb]

    def key_list(self, code: int) -> list[str]:
        return self.codes.values[code].split(_SEP) if self.by else []

    def _text_rank(self) -> np.ndarray:
        """code -> the rank of its key text among the group's keys."""
        if len(self._trank) != len(self.ops):
            vals = self.codes.values
            order = sorted(range(len(vals)), key=vals.__getitem__)
            self._trank = np.empty(len(vals), np.int64)
            self._trank[order] = np.arange(len(vals))
            self._klists = [self.key_list(c) for c in range(len(vals))]
        return self._trank

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
        kc = self._row_codes(cols, rows)
        n = len(kc)
        if not self.by:  # one substream: the rows as they come
            order = None
            ucode = np.zeros(1, np.int64)
            bounds = np.array([0, n], np.int64)
            sizes = bounds[1:]
            c0s = self.count[:1].copy()
            xs = np.ascontiguousarray(x, np.float64)
            local = np.arange(c0s[0] + 1, c0s[0] + n + 1, dtype=np.int64)
        else:
            # every key's values and positions as contiguous slices of two arrays (one pass, no copy per key)
            order, bounds, ucode, sizes, xs, local = fast.by_key(np.ascontiguousarray(kc, np.int64),
                                                                 np.ascontiguousarray(x, np.float64), self.count)
            c0s = self.count[ucode]
        ops = self.ops
        if self.sk is not None:
            for c in ucode[c0s == 0].tolist():
                if ops[c].first_seq < 0:
                    ops[c].first_seq = 1  # a key's positions are 1, 2, ...
            slot, o, val = self.sk.push(ops, ucode, bounds, xs, local)
            self.count[ucode] += sizes
        else:
            out_s, out_o, out_v = [], [], []
            bl = bounds.tolist()
            for u, code in enumerate(ucode.tolist()):
                b0, b1 = bl[u], bl[u + 1]
                s, oo, v = fast.push(ops[code], xs[b0:b1], local[b0:b1])
                self.count[code] += b1 - b0
                if len(s):
                    out_s.append(s)
                    out_o.append(oo + b0)
                    out_v.append(v)
            if not out_s:
                return
            slot, o, val = (np.concatenate(a) for a in (out_s, out_o, out_v))
        if not len(slot):
            return
        off = o if order is None else order[o]
        qid = np.asarray(self.slot_q, np.int64)[slot]
        code = np.asarray(self.slot_k, np.int64)[slot]
        kr = self._text_rank()[code]
        o = np.lexsort((kr, qid, off))  # by position, query, key text
        slot, off, val, code, qid = slot[o], off[o], val[o], code[o], qid[o]
        keys = None
        if self.by:
            keys = np.empty(len(slot), object)
            kl = self._klists
            keys[:] = [kl[k] for k in code.tolist()]
        if self.alerts.n:
            hit, pos, ev_code = self.alerts.filter(slot, val)
            for ev, c in (("alert", ALERT), ("clear", CLEAR)):
                e = pos[ev_code == c]
                seg.add(ev, qid[e], seqs[off[e]], value=val[e], keys=None if keys is None else keys[e])
            keep = ~hit
            slot, off, val, qid = slot[keep], off[keep], val[keep], qid[keep]
            keys = None if keys is None else keys[keep]
        if len(slot):
            seg.add("update", qid, seqs[off], value=val, keys=keys)

    # ------------------------------------------------------------------ answers
    def _value(self, slot: int, code: int) -> float:
        op, n = self._op(code), int(self.count[code])
        if slot in self.rank:
            if not n:
                return math.nan
            if self.sk is not None:
                return float(self.sk.rank(self.ops, np.array([code]), np.array([self.slot_l[slot][1]]),
                                          np.array([slot]), np.array([n]), np.array([self.rank[slot]]))[0])
            return rank_from_summary(op.summary(slot, n), self.rank[slot])
        return fast.lookup(op, slot, n)

    def _lookup_arrays(self, qid: int) -> tuple:
        """qid's slots by key text: (codes, slots, phi, start, notify slot, key lists, rank?)."""
        per = self.slots[qid]
        got = self._look.get(qid)
        if got is not None and len(got[0]) == len(per):
            return got
        tr = self._text_rank()
        codes = np.fromiter(per.keys(), np.int64, len(per))
        codes = codes[np.argsort(tr[codes], kind="stable")]
        slots = np.array([per[c] for c in codes.tolist()], np.int64)
        sl = self.slot_l
        got = (codes, slots, np.array([sl[s][0] for s in slots.tolist()]),
               np.array([sl[s][1] for s in slots.tolist()], np.int64),
               np.array([sl[s][2] for s in slots.tolist()], np.int64), [self._klists[c] for c in codes.tolist()],
               self.q[qid]["rank"] is not None)
        self._look[qid] = got
        return got

    def lookup_many(self, qids, n):
        out = []
        for qid in np.asarray(qids, np.int64).tolist():
            per = self.slots[qid]
            if not self.by:
                v = self._value(per[0], 0) if 0 in per else math.nan
                out.append((None if math.isnan(v) else v, None))
                continue
            ans = PerKey()
            codes, slots, phi, start, nslot, klists, rank = self._lookup_arrays(qid)
            if self.sk is not None and not rank:
                vals = self.sk.lookup(self.ops, codes, phi, start, nslot, slots, self.count[codes]).tolist()
            elif self.sk is not None and len(codes):  # rank queries: every key's estimate in one call
                vals = self.sk.rank(self.ops, codes, start, slots, self.count[codes],
                                    np.full(len(codes), self.q[qid]["rank"])).tolist()
            else:
                vals = [self._value(s, c) for s, c in zip(slots.tolist(), codes.tolist(), strict=True)]
            ans.extend([(k, v) for k, v in zip(klists, vals, strict=True) if v == v])
            out.append((ans, None))
        return out

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        return {
            "t_last": self.t_last, "keys": list(self.codes.values), "count": np.array(self.count, np.int64),
            "ops": [self._op(c).state() for c in range(len(self.ops))], "slot_q": np.array(self.slot_q, np.int64),
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
        self.count = np.array(s["count"], np.int64)
        cls = type(self.impl(self.eps, self.params["rows"]))
        self.ops = [cls.from_state(o) for o in s["ops"]]
        self.sk, self._look, self._trank, self._known = None, {}, np.zeros(0, np.int64), (None, np.zeros(0, np.int64))
        self._tpl = None
        if self.ops and type(self.ops[0]) is Sliding:
            self.sk = SlidingKeys(self.eps)
            for op in self.ops:
                self.sk.add(op)
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
        self.slot_l = []
        for slot, code in enumerate(self.slot_k):  # terminated slots: never looked up
            q = self.slot_q[slot]
            e = self.ops[code].q.get(slot) if type(self.ops[code]) is Sliding else None
            if e is None:
                e = (self.q[q]["phi"] if q in self.q else 0.5, 0, 0, False, -1)
            self.slot_l.append((float(e[0]), int(e[2]), int(e[4]) if e[3] else -1))
