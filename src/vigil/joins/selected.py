"""The values a join query's ``select`` carries in its ``join`` events (docs/contract.md): the
join group's adapter keeps, per relation, the selected columns of the rows it stores, as Arrow
columns by seq, and only the columns some alive query of the group selects.

* ``need(selects)``: the columns the alive queries select; a column not kept yet is filled for
  the rows stored before from the engine's history of the relation (every earlier row, unless a
  ``--join-history`` horizon dropped it: its values are then null), once, O(history); a column no
  query selects any more is dropped.
* ``add(side, seqs, table)``: the rows of a batch, O(rows) (one Arrow take per batch).
* ``lookup(side, seqs)``: the rows of ``seqs`` as dicts (one merge of the chunks when rows were
  added since the last lookup, then binary searches), O(k log n) for k outputs.
* ``trim(side, first)``: drop the rows below seq ``first`` (window joins with ``max_window``:
  the rows the operator dropped), so the memory follows the operator's.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..state import bytes_table, table_bytes

SIDES = ("left", "right")


class SelectedValues:
    def __init__(self) -> None:
        self.cols: dict[str, list[str]] = {s: [] for s in SIDES}
        self.seqs: dict[str, list[np.ndarray]] = {s: [] for s in SIDES}
        self.tabs: dict[str, list[pa.Table]] = {s: [] for s in SIDES}

    def __bool__(self) -> bool:
        return any(self.cols.values())

    def need(self, wanted: dict[str, list[str]], history, rel: dict[str, str]) -> None:
        """Keep exactly the columns ``wanted`` per side; new ones are read from ``history``."""
        for side in SIDES:
            want = sorted(wanted.get(side, []))
            have = self.cols[side]
            if want == have:
                continue
            if not want:
                self.cols[side], self.seqs[side], self.tabs[side] = [], [], []
                continue
            seqs, tab = self._merged(side)
            if set(want) <= set(have):
                self.cols[side] = want
                self.seqs[side], self.tabs[side] = [seqs], [tab.select(want)]
                continue
            hs, ht = _from_history(history, rel[side], want)
            if len(seqs):  # rows the history no longer holds keep their values (others null)
                miss = ~np.isin(seqs, hs)
                if miss.any():
                    old = tab.filter(pa.array(miss))
                    old = pa.table({c: old.column(c) if c in old.column_names else pa.nulls(old.num_rows)
                                    for c in want})
                    hs = np.concatenate([hs, seqs[miss]])
                    ht = pa.concat_tables([ht, old], promote_options="permissive")
            self.cols[side] = want
            self.seqs[side], self.tabs[side] = [hs], [ht]

    def add(self, side: str, seqs: np.ndarray, table: pa.Table, rows: np.ndarray) -> None:
        cols = self.cols[side]
        if not cols or not len(rows):
            return
        t = table.select([c for c in cols if c in table.column_names]).take(pa.array(rows))
        for c in cols:
            if c not in t.column_names:
                t = t.append_column(c, pa.nulls(t.num_rows))
        self.seqs[side].append(np.asarray(seqs, np.int64))
        self.tabs[side].append(t.select(cols))

    def _merged(self, side: str) -> tuple[np.ndarray, pa.Table]:
        """(seqs sorted, their rows) of ``side``, the chunks merged into one."""
        if not self.seqs[side]:
            return np.empty(0, np.int64), pa.table({c: pa.nulls(0) for c in self.cols[side]})
        if len(self.seqs[side]) > 1 or (len(self.seqs[side][0]) > 1 and np.any(np.diff(self.seqs[side][0]) < 0)):
            seqs = np.concatenate(self.seqs[side])
            tab = pa.concat_tables(self.tabs[side], promote_options="permissive")
            o = np.argsort(seqs, kind="stable")
            seqs, tab = seqs[o], tab.take(pa.array(o))
            self.seqs[side], self.tabs[side] = [seqs], [tab]
        return self.seqs[side][0], self.tabs[side][0]

    def lookup(self, side: str, seqs: np.ndarray) -> list[dict[str, Any]]:
        """The kept columns' values of the rows ``seqs`` (a seq not kept: nulls)."""
        have, tab = self._merged(side)
        pos = np.minimum(np.searchsorted(have, seqs), max(len(have) - 1, 0))
        found = (have[pos] == seqs) if len(have) else np.zeros(len(seqs), bool)
        rows = tab.take(pa.array(pos, mask=~found)).to_pylist() if len(have) else [{} for _ in seqs]
        return [r if f else dict.fromkeys(self.cols[side]) for r, f in zip(rows, found.tolist(), strict=True)]

    def trim(self, side: str, first: int) -> None:
        seqs, tab = self._merged(side)
        cut = int(np.searchsorted(seqs, first))
        if cut >= max(1024, len(seqs) - cut):  # amortized: at least half goes
            self.seqs[side], self.tabs[side] = [seqs[cut:]], [tab.slice(cut)]

    def texts(self, side: str, seqs: np.ndarray, cols: list[str]) -> list[str]:
        """JSON objects (text) of ``cols`` of the rows ``seqs``."""
        return [json.dumps({c: _plain(r.get(c)) for c in cols}) for r in self.lookup(side, seqs)]

    def state(self) -> dict[str, Any]:
        st: dict[str, Any] = {}
        for side in SIDES:
            seqs, tab = self._merged(side)
            st[side] = {"cols": list(self.cols[side]), "seqs": seqs.copy(),
                        "rows": np.frombuffer(table_bytes(tab), np.uint8) if self.cols[side] else np.empty(0, np.uint8)}
        return st

    @classmethod
    def load(cls, s: dict[str, Any] | None) -> SelectedValues:
        v = cls()
        for side in SIDES:
            d = (s or {}).get(side)
            if d and list(d["cols"]):
                v.cols[side] = list(d["cols"])
                v.seqs[side] = [np.asarray(d["seqs"], np.int64)]
                v.tabs[side] = [bytes_table(np.asarray(d["rows"], np.uint8).tobytes())]
        return v


def _plain(v):
    if isinstance(v, float) and v != v:
        return None
    return v


def _from_history(history, rel: str, cols: list[str]) -> tuple[np.ndarray, pa.Table]:
    seqs, tabs = [], []
    for t in history or ():
        if "rel" not in t.column_names:
            continue
        t = t.filter(pc.equal(t.column("rel"), rel))
        if not t.num_rows:
            continue
        seqs.append(np.asarray(t.column("seq").to_numpy(zero_copy_only=False), np.int64))
        tabs.append(pa.table({c: t.column(c) if c in t.column_names else pa.nulls(t.num_rows) for c in cols}))
    if not seqs:
        return np.empty(0, np.int64), pa.table({c: pa.nulls(0) for c in cols})
    seqs_a = np.concatenate(seqs)
    tab = pa.concat_tables(tabs, promote_options="permissive")
    o = np.argsort(seqs_a, kind="stable")
    return seqs_a[o], tab.take(pa.array(o))
