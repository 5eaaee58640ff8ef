"""The windows family's engine adapters: window aggregates (one WindowOperator per (column, agg,
time column)) and substream filters (one SubstreamOperator per (key column, value column, agg,
time column); keys dictionary-encoded to int64 codes)."""

from __future__ import annotations

import math
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

from ..group import Codes, Group
from ..keycodes import encode_rows
from ..lookups import KeyRanks
from ..specs import SubstreamFilterSpec, WindowAggregateSpec


class WindowGroup(Group):
    family = "windows"

    @staticmethod
    def params_of(spec: WindowAggregateSpec) -> dict[str, Any]:
        if spec.where is None and spec.group_by is None:
            return {"agg": spec.agg, "column": spec.column, "time_column": spec.tcol}
        # keyed queries (vigil.windows.keyed_group): one group per key columns and ranges
        return {"agg": spec.agg, "column": spec.column, "time_column": spec.tcol, "keys": spec.key_columns(),
                "ranges": [[c, x[0], x[1]] for c, x in sorted(spec.where.items()) if type(x) is list]
                if spec.where else []}

    def __new__(cls, engine: Any, params: dict[str, Any]):
        if cls is WindowGroup and "keys" in params:
            from .keyed_group import KeyedWindowGroup  # not a WindowGroup: __init__ is not called twice
            g = object.__new__(KeyedWindowGroup)
            g.__init__(engine, params)
            return g
        return super().__new__(cls)

    def __init__(self, engine: Any, params: dict[str, Any]) -> None:
        super().__init__(engine, params)
        self.op = engine.impl("windows")(params["agg"], params["time_column"] is not None)

    def time_column(self):
        return self.params["time_column"]

    def checks(self, cols, idx):
        refs = [(self.params["column"], "num")] if self.params["column"] else []
        if self.params["time_column"]:
            refs.append((self.params["time_column"], "time"))
        return [(None, refs)]

    def feed(self, cols, rows, seqs, seg):
        vals = self.values(cols, rows)
        times = None
        if self.params["time_column"]:
            times = cols.get(self.params["time_column"], "time")[0][rows]
            if len(times):
                self.t_last = float(times[-1])
        self.op.push(vals, seqs, times)

    def lookup_many(self, qids: np.ndarray, n: int) -> list[tuple[float | None, list[str] | None]]:
        return _answers(self.op.lookup(qids, n, self.t_last))

    def lookup_cols(self, qids: np.ndarray, n: int) -> tuple[np.ndarray, None]:
        """:meth:`lookup_many`'s answers as columns: (values, float64, NaN where there is no
        value; no keys)."""
        return self.op.lookup(qids, n, self.t_last), None

    def push_lookup(self, cols, rows, seqs, cuts, ns, starts, qids) -> np.ndarray | None:
        """Rows ``rows`` (seqs ``seqs``, visible ones) fed in turn up to each position ``ns[c]``
        (the first ``cuts[c]``) and ``qids[starts[c]:starts[c + 1]]`` answered there, in one
        operator call (``feed`` then ``lookup_cols`` per position): the values (NaN: none); None
        (nothing done) when the operator cannot (time windows, several structures, a resize on
        the way)."""
        push_lookup = getattr(self.op, "push_lookup", None)
        if push_lookup is None or self.params["time_column"]:
            return None
        return push_lookup(self.values(cols, rows), seqs, cuts, ns, starts, qids)


def ranked_lists(rank: np.ndarray, texts: pa.Array, codes: np.ndarray, offs: np.ndarray) -> pa.Array:
    """Answers' key codes (answer ``i``: ``codes[offs[i]:offs[i + 1]]``) as an Arrow
    ``list<string>`` array, each list sorted by text: ``rank`` is each code's rank in text order
    and ``texts`` the key texts in that order."""
    offs = np.asarray(offs, np.int64)
    r = np.asarray(rank, np.int64)[codes]
    if len(r):  # one sort of (answer, rank) pairs, answer first: each answer's ranks in order
        seg = np.repeat(np.arange(len(offs) - 1, dtype=np.int64), np.diff(offs)) * (int(r.max()) + 1)
        r += seg
        r.sort()
        r -= seg
    if len(r) >= 2**31:  # beyond list<string>'s offsets: one list per answer
        return pa.array([texts.take(pa.array(r[a:b])).to_pylist() for a, b in zip(offs[:-1], offs[1:], strict=True)],
                        pa.list_(pa.string()))
    return pa.ListArray.from_arrays(pa.array(np.asarray(offs, np.int32), pa.int32()), texts.take(pa.array(r)))


def _answers(v: np.ndarray) -> list[tuple[float | None, None]]:
    """Aggregates as answers (value, keys): NaN (no value) as None."""
    vals = v.tolist()
    if np.isnan(v).any():
        vals = [None if math.isnan(x) else x for x in vals]
    return list(zip(vals, repeat(None)))




class SubstreamGroup(Group):
    family = "substream"

    @staticmethod
    def params_of(spec: SubstreamFilterSpec) -> dict[str, Any]:
        return {"agg": spec.agg, "column": spec.column, "key": spec.key, "time_column": spec.time_column}

    def __init__(self, engine, params):
        super().__init__(engine, params)
        self.op = engine.impl("substream")(params["agg"])
        self.codes = Codes()

    def time_column(self):
        return self.params["time_column"]

    def part_tag(self):
        return "key:" + self.params["key"]

    def checks(self, cols, idx):
        refs = [(self.params["key"], "key"), (self.params["time_column"], "time")]
        if self.params["column"]:
            refs.append((self.params["column"], "num"))
        return [(None, refs)]

    def feed(self, cols, rows, seqs, seg):
        vals = self.values(cols, rows)
        times = cols.get(self.params["time_column"], "time")[0][rows]
        if len(times):
            self.t_last = float(times[-1])
        keys = encode_rows(self.codes, cols, self.params["key"], rows)
        self.op.push(vals, times, keys, seqs)

    def lookup_many(self, qids, n):
        t_now = self.engine._t_now(self.params["time_column"], n, self.t_last)
        got = self.op.lookup(qids, n, t_now)
        rank, texts = self._key_order()
        # each answer's keys sorted by text: their codes' ranks sorted (no per-key Python compare),
        # kept as numbers until the answers are written as one column (vigil.lookups.KeyRanks)
        return [(None, KeyRanks(np.sort(rank[codes]), texts)) for codes in got]

    def lookup_cols(self, qids, n) -> tuple[np.ndarray, pa.Array]:
        """:meth:`lookup_many`'s answers as columns: (values: all NaN, the key lists as an Arrow
        ``list<string>`` array, each sorted by text): the codes' ranks in text order sorted
        within each answer by one kernel call and taken from the key texts by one Arrow ``take``."""
        t_now = self.engine._t_now(self.params["time_column"], n, self.t_last)
        flat = getattr(self.op, "lookup_flat", None)
        if flat is not None:
            codes, offs = flat(qids, n, t_now)
        else:
            got = self.op.lookup(qids, n, t_now)
            offs = np.zeros(len(got) + 1, np.int64)
            np.cumsum([len(c) for c in got], out=offs[1:])
            codes = np.concatenate(got) if got else np.zeros(0, np.int64)
        rank, texts = self._key_order()
        return np.full(len(qids), np.nan), ranked_lists(rank, texts, codes, offs)

    def _key_order(self) -> tuple[np.ndarray, pa.Array]:
        """(rank of each key code in text order, the key texts in that order as an Arrow array),
        recomputed when keys were added."""
        vals = self.codes.values
        c = self.__dict__.get("_order")
        if c is None or c[0] != len(vals):
            order = sorted(range(len(vals)), key=vals.__getitem__)
            rank = np.empty(len(vals), np.int64)
            rank[order] = np.arange(len(vals))
            c = self._order = (len(vals), rank, pa.array([vals[i] for i in order], pa.string()))
        return c[1], c[2]

    def state(self):
        return {**super().state(), "codes": self.codes.values}

    def load(self, s):
        super().load(s)
        self.codes = Codes(s["codes"])
