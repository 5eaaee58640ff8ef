"""What every family's engine adapter shares (a neutral module: the engine and the family
packages import it; it imports neither).

A family adapter (``vigil/<family>/group.py``) is a :class:`Group` subclass. The engine keeps one
instance per *signature* (``params_of(spec)``: the queries that can share one operator) and asks it:

- ``checks(cols, idx)``: which of the rows ``idx`` it sees and which columns it checks on them
  (``[(mask or None, [(column, kind), ...]), ...]``, kind one of ``num``, ``weight``, ``key``,
  ``time``); the engine validates rows against them and rejects a bad row once, with a reason;
- ``register(qid, spec, start)`` / ``terminate(qid)`` / ``terminate_many(qids)``;
- ``feed(cols, rows, seqs, seg)``: push the rows it sees to its operator and add the operator's
  element outputs to the :class:`Segment` (``seg.add(event, qids, at, r=, s=, value=)``);
  a group with ``follows_positions`` is called ``feed_positions(cols, rows, seqs, vis, seg)``
  instead, with every row of the run (``vis``: those it sees and that were applied), because a
  rejected row keeps its position and moves a rows window (quantile notify queries);
- optionally ``lookup_many(qids, n) -> [(value, keys), ...]`` (queries answered on request; the
  engine passes every lookup of a run at one position in one call), ``summary``
  (sharded quantiles), ``bootstrap(history)`` (``keeps_history`` groups: joins);
- ``state()`` / ``load(state)`` for snapshots.

Class attributes tell the engine what it must know without naming a family: ``keeps_history``
(the group lives on without queries and is fed the relations' rows: joins), ``ends_inside_segment``
(its queries can end by themselves inside a segment: threshold maturity), ``independent`` (a
query's outputs never depend on the group's other queries, so the engine may apply a termination
at the end of a segment instead of cutting the segment there; False for quantiles, whose queries
share clusters and triggers), ``part_tag()`` (sharded mode ownership, see
:class:`vigil.engine.Partial`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .events import OUTPUT_SCHEMA, key_column, key_equals, numeric_column, weight_column

# event codes used while a segment's outputs are sorted (at equal position, in this order);
# cluster / cluster_update: quantile queries with "notify": "cluster" (the cluster number in ``r``)
# alert / clear: quantile alert queries (above / below), their crossings
EV_NAMES = ["rejected", "matured", "join", "affected", "update", "cluster", "cluster_update", "alert", "clear"]
EV = {n: i for i, n in enumerate(EV_NAMES)}


class Cols:
    """Per-batch cache of column extractions: (column, kind) -> (values, {row: reason})."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.cache: dict[tuple[str, str], tuple[np.ndarray, dict[int, str]]] = {}

    def get(self, col: str, kind: str) -> tuple[np.ndarray, dict[int, str]]:
        k = (col, kind)
        if k not in self.cache:
            if kind == "weight":
                self.cache[k] = weight_column(self.table, col)
            elif kind == "key":
                self.cache[k] = key_column(self.table, col)
            else:
                self.cache[k] = numeric_column(self.table, col)
        return self.cache[k]

    def bad(self, col: str, kind: str) -> tuple[np.ndarray, list[str]]:
        """The rows of ``col`` that fail ``kind`` (ascending) and their reasons."""
        k = (col, "bad:" + kind)
        if k not in self.cache:
            reasons = self.get(col, kind)[1]
            rows = sorted(reasons)
            self.cache[k] = (np.array(rows, np.int64), [reasons[r] for r in rows])
        return self.cache[k]

    def equals(self, col: str, value: Any) -> np.ndarray:
        k = (col, "eq:" + json.dumps(value))
        if k not in self.cache:
            self.cache[k] = (key_equals(self.table, col, value), {})
        return self.cache[k][0]



_EV_ARROW = pa.array(EV_NAMES, pa.string())


def _names(ids: list[str], qid: np.ndarray) -> pa.Array:
    """ids[qid] as an Arrow string array (qid < 0: null, an event of no query, e.g. cluster_update):
    a vectorised take when the outputs are many compared with the queries (converting every id
    costs O(#queries)), else one lookup per output."""
    if 8 * len(qid) >= len(ids):
        neg = qid < 0
        return pc.take(pa.array(ids, pa.string()), pa.array(qid, mask=neg if neg.any() else None))
    return pa.array([ids[q] if q >= 0 else None for q in qid.tolist()], pa.string())


def _order(ev: np.ndarray, qid: np.ndarray, at: np.ndarray, r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The permutation sorting outputs by (at, event, qid, r, s), ties in input order: one stable
    argsort of a packed int64 key (each field minus its minimum, mixed radix) when the five fit in
    63 bits; else a stable lexsort of two packed keys, (at, event, qid) and (r, s), when each fits;
    else a 5-key lexsort."""
    if not len(at):
        return np.zeros(0, np.int64)
    fields = [at, ev, qid, r, s]
    lo = [int(f.min()) for f in fields]
    span = [int(f.max()) - m + 1 for f, m in zip(fields, lo, strict=True)]
    if math.prod(span) < 2**62:
        return np.argsort(_packed(fields, lo, span), kind="stable")
    if math.prod(span[:3]) < 2**62 and math.prod(span[3:]) < 2**62:
        return np.lexsort((_packed(fields[3:], lo[3:], span[3:]), _packed(fields[:3], lo[:3], span[:3])))
    return np.lexsort((s, r, qid, ev, at))


def _packed(fields: list[np.ndarray], lo: list[int], span: list[int]) -> np.ndarray:
    """sum of (field - lo) times the product of the later spans (the caller checks it fits in 63 bits)."""
    key = np.asarray(fields[0], np.int64) - lo[0]
    for f, m, w in zip(fields[1:], lo[1:], span[1:], strict=True):
        key = key * w + (np.asarray(f, np.int64) - m)
    return key


class Segment:
    """Element outputs of one segment, sorted before they are emitted."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.reasons: list[tuple[int, str]] = []  # (at, reason) of rejected rows
        self.keys: dict[int, np.ndarray] = {}  # part index -> the outputs' keys (per-key results)
        self.sel: dict[int, np.ndarray] = {}  # part index -> the join outputs' (left, right) JSON texts

    def add(self, ev: str, qids: np.ndarray, at: np.ndarray, r=None, s=None, value=None, keys=None,
            sel=None) -> None:
        """Outputs ``ev`` of queries ``qids`` at positions ``at`` (arrays of one length); ``r``,
        ``s``: join pairs; ``value``: float64 values (NaN = null), e.g. pushed quantile updates;
        ``keys``: per-key results' keys (an object array of lists of text, written to ``keys``);
        ``sel``: join pairs' selected values (object array [k, 2] of JSON texts or None, written to
        ``left`` / ``right``).
        Outputs tied on (at, event, query) keep the order they were added in."""
        if len(qids):
            k = len(qids)
            none = np.full(k, -1, np.int64)
            if keys is not None:
                self.keys[len(self.parts)] = np.asarray(keys, object)
            if sel is not None:
                self.sel[len(self.parts)] = sel
            self.parts.append(
                (EV[ev], np.asarray(qids, np.int64), np.asarray(at, np.int64),
                 none if r is None else np.asarray(r, np.int64), none if s is None else np.asarray(s, np.int64),
                 np.full(k, np.nan) if value is None else np.asarray(value, np.float64))
            )

    def drop_after(self, ends: dict[int, int]) -> None:
        """Drop the outputs of query q at positions after ``ends[q]`` (its termination)."""
        qs = np.fromiter(ends.keys(), np.int64, len(ends))
        ts = np.fromiter(ends.values(), np.int64, len(ends))
        order = np.argsort(qs)
        qs, ts = qs[order], ts[order]
        parts = []
        keys = {}
        sels = {}
        for i, (ev, qid, at, r, s, v) in enumerate(self.parts):
            pos = np.minimum(np.searchsorted(qs, qid), len(qs) - 1)
            keep = ~((qs[pos] == qid) & (at > ts[pos]))
            kk = self.keys.get(i)
            ss = self.sel.get(i)
            if not keep.all():
                qid, at, r, s, v = qid[keep], at[keep], r[keep], s[keep], v[keep]
                kk = None if kk is None else kk[keep]
                ss = None if ss is None else ss[keep]
            if len(qid):
                if kk is not None:
                    keys[len(parts)] = kk
                if ss is not None:
                    sels[len(parts)] = ss
                parts.append((ev, qid, at, r, s, v))
        self.parts = parts
        self.keys = keys
        self.sel = sels

    def table(self, ids: list[str], out_counts: dict[str, int]) -> pa.Table | None:
        """The segment's element outputs and rejected rows, as one table in position order
        (None if empty); ``ids``: qid -> query id; counts the events into ``out_counts``."""
        tables = []
        if self.parts:
            ev = np.concatenate([np.full(len(p[1]), p[0], np.int64) for p in self.parts])
            qid, at, r, s, v = (np.concatenate([p[k] for p in self.parts]) for k in (1, 2, 3, 4, 5))
            o = _order(ev, qid, at, r, s)
            for code, c in enumerate(np.bincount(ev, minlength=len(EV_NAMES)).tolist()):
                if c:
                    out_counts[EV_NAMES[code]] = out_counts.get(EV_NAMES[code], 0) + c
            ev, qid, at, r, s, v = ev[o], qid[o], at[o], r[o], s[o], v[o]
            if self.keys:
                kk = np.concatenate([self.keys.get(i, np.full(len(p[1]), None, object))
                                     for i, p in enumerate(self.parts)])[o]
                keys_col = pa.array(kk.tolist(), pa.list_(pa.string()))
            else:
                keys_col = pa.nulls(len(o), pa.list_(pa.string()))
            sel_cols = [pa.nulls(len(o), pa.string())] * 2
            if self.sel:
                ss = np.concatenate([self.sel.get(i, np.full((len(p[1]), 2), None, object))
                                     for i, p in enumerate(self.parts)])[o]
                sel_cols = [pa.array(ss[:, j].tolist(), pa.string()) for j in (0, 1)]
            tables.append(pa.table(
                {
                    "event": pc.take(_EV_ARROW, pa.array(ev)),
                    "id": _names(ids, qid),
                    "at": pa.array(at, pa.int64()),
                    "value": pa.array(v, pa.float64(), mask=np.isnan(v)),
                    "keys": keys_col,
                    "r": pa.array(np.where(r >= 0, r, 0), pa.int64(), mask=r < 0),
                    "s": pa.array(np.where(s >= 0, s, 0), pa.int64(), mask=s < 0),
                    "reason": pa.nulls(len(o), pa.string()),
                    "asked_at": pa.nulls(len(o), pa.int64()),
                    "left": sel_cols[0],
                    "right": sel_cols[1],
                },
                schema=OUTPUT_SCHEMA,
            ))
        if self.reasons:
            k = len(self.reasons)
            out_counts["rejected"] = out_counts.get("rejected", 0) + k
            tables.append(pa.table(
                {"event": pa.array(["rejected"] * k, pa.string()), "id": pa.nulls(k, pa.string()),
                 "at": pa.array([a for a, _ in self.reasons], pa.int64()), "value": pa.nulls(k, pa.float64()),
                 "keys": pa.nulls(k, pa.list_(pa.string())), "r": pa.nulls(k, pa.int64()),
                 "s": pa.nulls(k, pa.int64()), "reason": pa.array([r for _, r in self.reasons], pa.string()),
                 "asked_at": pa.nulls(k, pa.int64()), "left": pa.nulls(k, pa.string()),
                 "right": pa.nulls(k, pa.string())},
                schema=OUTPUT_SCHEMA,
            ))
        if len(tables) == 2:  # a rejected row has no outputs at its position: no ties
            t = pa.concat_tables(tables)
            tables = [t.take(pc.sort_indices(t, [("at", "ascending")]))]
        return tables[0] if tables else None


def monotone(t: np.ndarray, ok: np.ndarray, t_last: float) -> np.ndarray:
    """Rows (among ok) whose time is not below every earlier ok time (and t_last)."""
    tt = np.where(ok, t, -np.inf)
    prev = np.maximum.accumulate(np.r_[t_last, tt[:-1]]) if len(tt) else tt
    return ~ok | (t >= prev)


class PerKey(list):
    """A lookup's answer with one value per key (queries with ``group_by``): a list of (key texts,
    value); the engine emits one ``answer`` per item (``keys`` = its key texts), or one answer
    with an empty key list when it is empty."""


class Codes:
    """Dictionary encoding of key values (text) to int64 codes, shared by a group's operator."""

    def __init__(self, values: list[str] | None = None) -> None:
        self.values: list[str] = list(values or [])
        self.code = {v: i for i, v in enumerate(self.values)}

    def encode(self, keys: np.ndarray) -> np.ndarray:
        out = np.empty(len(keys), np.int64)
        for i, k in enumerate(keys.tolist()):
            c = self.code.get(k)
            if c is None:
                c = self.code[k] = len(self.values)
                self.values.append(k)
            out[i] = c
        return out


class Group:
    """Base of the family adapters (see the module docstring)."""

    family = ""
    keeps_history = False  # the group persists without queries (joins: the relations are its state)
    ends_inside_segment = False  # its queries may end by themselves inside a segment (maturity)
    independent = True  # no query's outputs depend on the other queries (terminations may be deferred)
    follows_positions = False  # fed every row of a run, rejected ones too (feed_positions)
    stream_columns: tuple[str, ...] = ()  # columns the stream must have for these queries

    @staticmethod
    def history_need(params: dict[str, Any]) -> tuple[str, float] | None:
        """``keeps_history`` groups: the part of the engine's history a group created now needs:
        None = every earlier row; (column, w) = the rows within w of the newest in column."""
        return None

    def __init__(self, engine: Any, params: dict[str, Any]) -> None:
        self.engine = engine
        self.params = params
        self.qids: set[int] = set()
        self.t_last = -math.inf

    # which rows this group sees, and which columns it checks on them
    def checks(self, cols: Cols, idx: np.ndarray) -> list[tuple[np.ndarray | None, list[tuple[str, str]]]]:
        raise NotImplementedError

    def time_column(self) -> str | None:
        return None

    def part_tag(self) -> str | None:
        """The ownership tag of :class:`Partial` that restricts the rows this group is fed."""
        return None

    def register(self, qid: int, spec: Any, start: int) -> None:
        self.op.register(qid, spec, start)

    def terminate(self, qid: int) -> None:
        self.op.terminate(qid)

    def values(self, cols: Cols, rows: np.ndarray) -> np.ndarray:
        """The group's value column at ``rows`` (ones when the spec names no column: COUNT)."""
        col = self.params["column"]
        return cols.get(col, "num")[0][rows] if col else np.ones(len(rows))

    def terminate_many(self, qids: list[int]) -> None:
        for q in qids:
            self.terminate(q)

    def visible(self, cols: Cols, idx: np.ndarray) -> np.ndarray:
        vis = np.zeros(len(idx), bool)
        for mask, _ in self.checks(cols, idx):
            vis |= True if mask is None else mask
        return vis

    def state(self) -> dict[str, Any]:
        return {"op": self.op.state(), "t_last": self.t_last}

    def load(self, s: dict[str, Any]) -> None:
        self.op = type(self.op).from_state(s["op"])
        self.t_last = s["t_last"]
