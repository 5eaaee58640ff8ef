"""The joins family's engine adapter: one JoinOperator per (kind, relations, join columns, range
columns, time column). A join group lives on without queries: the relations' rows are its state
(``keeps_history``), and a group created late starts from the engine's history (``bootstrap``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HistoryRefused
from ..group import Codes, Cols, Group, monotone
from ..keycodes import encode_rows
from .keyed_band import KeyedBand
from .selected import SelectedValues


class JoinGroup(Group):
    family = "joins"
    keeps_history = True
    stream_columns = ("rel",)

    @staticmethod
    def params_of(spec) -> dict[str, Any]:
        kind = {"band_join": "band", "select_join": "select", "window_join": "window"}[spec.type]
        p = {"kind": kind, "left": spec.left, "right": spec.right, "left_on": spec.left_on, "right_on": spec.right_on}
        if kind == "band" and spec.left_key is not None:  # keyed band: partitioned by key value
            p["left_key"], p["right_key"] = spec.left_key, spec.right_key
        if kind != "band":
            p["left_cols"] = sorted(spec.left_range)
            p["right_cols"] = sorted(spec.right_range)
        if kind == "window":
            p["time_column"] = spec.time_column
            if spec.max_window is not None:  # a declared bound: the group trims (its own group)
                p["max_window"] = float(spec.max_window)
        return p

    @staticmethod
    def history_need(params):
        """A window join group with a declared max_window pairs only tuples within it (retain)."""
        if params.get("max_window") is not None:
            return params["time_column"], float(params["max_window"])
        return None

    def __init__(self, engine, params):
        super().__init__(engine, params)
        self.op = engine.impl("joins")(params["kind"], engine.join_output)
        if params.get("left_key") is not None:
            self.op = KeyedBand(engine.impl("joins"), engine.join_output)
        if params.get("max_window") is not None:
            self.op.retain(params["max_window"])
        self.codes = Codes()
        self.key_kind = "num" if params["kind"] == "band" else "key"
        self.sel = SelectedValues()  # the selected columns of the stored rows (queries with select)
        self.selects: dict[int, dict[str, list[str]]] = {}

    def _refs(self, side: str) -> list[tuple[str, str]]:
        p = self.params
        refs = [(p[f"{side}_on"], self.key_kind)] + [(c, "num") for c in p.get(f"{side}_cols", [])]
        if p.get(f"{side}_key") is not None:
            refs.append((p[f"{side}_key"], "key"))
        if p.get("time_column"):
            refs.append((p["time_column"], "time"))
        return refs

    def time_column(self):
        return self.params.get("time_column")

    def part_tag(self):
        p = self.params
        if p["kind"] == "band":
            return "rel"
        return "join:" + "\x1f".join([p["left"], p["left_on"], p["right"], p["right_on"]])

    def _is_rel(self, cols, side: str) -> np.ndarray:
        """Rows of the batch whose ``rel`` is this side's relation (one Arrow comparison per batch
        and relation, cached on the batch's columns)."""
        k = ("rel", "is:" + self.params[side])
        if k not in cols.cache:
            col = cols.table.column("rel")
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                eq = pc.fill_null(pc.equal(col, self.params[side]), False)
                cols.cache[k] = np.asarray(eq.to_numpy(zero_copy_only=False), bool)
            else:  # other types: as key text (vigil.events.key_column)
                cols.cache[k] = np.asarray(cols.get("rel", "key")[0] == self.params[side], bool)
        return cols.cache[k]

    def checks(self, cols, idx):
        return [(self._is_rel(cols, side)[idx], self._refs(side)) for side in ("left", "right")]

    def register(self, qid, spec, start):
        self.op.register(qid, spec)
        if spec.select:
            self.selects[qid] = {k: list(v) for k, v in spec.select.items()}
            self._need()

    def terminate(self, qid):
        self.op.terminate(qid)
        if self.selects.pop(qid, None) is not None:
            self._need()

    def _need(self) -> None:
        """Keep the columns the alive queries select (new ones read from the engine's history,
        brought up to the current position first)."""
        wanted: dict[str, set[str]] = {"left": set(), "right": set()}
        for sel in self.selects.values():
            for side, cs in sel.items():
                wanted[side].update(cs)
        keep = getattr(self.engine, "_keep_history", None)
        if keep is not None:
            keep()
        self.sel.need({k: sorted(v) for k, v in wanted.items()}, getattr(self.engine, "history", None),
                      {"left": self.params["left"], "right": self.params["right"]})

    def _with_values(self, q, r, s):
        """(left, right) JSON texts of the pairs of queries with select (None elsewhere)."""
        out = np.full((len(q), 2), None, object)
        for qid in np.unique(q).tolist():
            sel = self.selects.get(qid)
            if not sel:
                continue
            m = np.flatnonzero(q == qid)
            for j, (side, seqs) in enumerate((("left", r), ("right", s))):
                if sel.get(side):
                    out[m, j] = self.sel.texts(side, seqs[m], sel[side])
        return out

    def _tuples(self, cols, r, sname):
        """(key, attrs, times) of rows ``r`` of side ``sname``."""
        p = self.params
        if self.key_kind == "num":
            key = cols.get(p[f"{sname}_on"], "num")[0][r]
        else:
            key = encode_rows(self.codes, cols, p[f"{sname}_on"], r)
        names = p.get(f"{sname}_cols", [])
        attrs = np.empty((len(r), len(names)), np.float64)
        for j, c in enumerate(names):
            attrs[:, j] = cols.get(c, "num")[0][r]
        if p.get(f"{sname}_key") is not None:  # keyed band: the key's code is the one attribute
            attrs = encode_rows(self.codes, cols, p[f"{sname}_key"], r).astype(np.float64).reshape(-1, 1)
        times = cols.get(p["time_column"], "time")[0][r] if p.get("time_column") else None
        return key, attrs, times

    def feed(self, cols, rows, seqs, seg):
        if not len(rows):
            return
        late = None
        if not self.qids and self.time_column():  # no query judges the times: a row may go back
            t = cols.get(self.time_column(), "time")[0][rows]
            late = ~monotone(t, np.ones(len(rows), bool), self.t_last)
            if late.any():  # rows in time order are inserted, the others preloaded after them
                rows, seqs, late = rows[~late], seqs[~late], (rows[late], seqs[late])
            else:
                late = None
        side = np.where(self._is_rel(cols, "left")[rows], 0, 1)
        blocks = {}
        for k, sname in enumerate(("left", "right")):
            m = side == k
            if m.any():  # both relations in one operator call, taken in seq order
                key, attrs, times = self._tuples(cols, rows[m], sname)
                if times is not None and len(times):
                    self.t_last = max(self.t_last, float(times[-1]))
                blocks[sname] = (seqs[m], key, attrs, times)
                if self.sel:
                    self.sel.add(sname, seqs[m], cols.table, rows[m])
        q, x, y = self.op.insert_both(blocks)
        if len(q):
            if self.engine.join_output == "affected":
                seg.add("affected", q, x)
            else:
                sel = self._with_values(q, x, y) if self.selects else None
                seg.add("join", q, np.maximum(x, y), x, y, sel=sel)
        if self.sel and getattr(self.op, "horizon", np.inf) < np.inf:
            for sname in ("left", "right"):  # the rows the operator dropped (max_window)
                kept = self.op.sides[sname].seqs.view
                if len(kept):
                    self.sel.trim(sname, int(kept.min()))
        if late is not None:
            self.preload(cols, *late)

    def preload(self, cols, rows, seqs) -> None:
        """Store rows that arrived earlier, in any time order (nothing is output)."""
        side = np.where(cols.get("rel", "key")[0][rows] == self.params["left"], 0, 1)
        for k, sname in enumerate(("left", "right")):
            r = rows[side == k]
            if len(r):
                key, attrs, times = self._tuples(cols, r, sname)
                if times is not None:
                    self.t_last = max(self.t_last, float(times.max()))
                self.op.preload(sname, seqs[side == k], key, attrs, times)
                if self.sel:
                    self.sel.add(sname, seqs[side == k], cols.table, r)

    def bootstrap(self, history) -> None:
        """Store the relations' earlier rows (no query is alive yet, so nothing is output): every
        row valid for the group's columns, whatever its time order (the group did not exist when
        they arrived; the times of the rows after it must not go below the newest). A bounded
        history (``--join-history``) that dropped rows a window of this group could pair with a
        row still to come refuses the group (HistoryRefused, with the reason)."""
        tables = list(history)
        if tables:
            t = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
            cols = Cols(t)
            idx = np.arange(t.num_rows)
            seqs = np.asarray(t.column("seq").to_numpy(zero_copy_only=False), np.int64)
            ok = self._ok_rows(cols, idx)
            if ok.any():
                self.preload(cols, idx[ok], seqs[ok])
        why = self._history_gap(history)
        if why:
            raise HistoryRefused(why)

    def _history_gap(self, history) -> str | None:
        """Why rows the history dropped could still pair with rows to come, or None. A row
        arriving later has time >= t_last; a dropped row of relation rel has time <= its
        frontier(rel); they pair only if the difference is below a window <= max_window."""
        frontier = getattr(history, "frontier", None)
        w = self.params.get("max_window")
        if frontier is None or w is None or not getattr(history, "dropped", 0):
            return None
        for rel in (self.params["left"], self.params["right"]):
            f = frontier(rel)
            if self.t_last - f < w:
                return (f"join history: this run dropped rows of {rel!r} up to {self.time_column()!r} = {f:g} "
                        f"(--join-history), and the rows this join keeps from the history end at "
                        f"{self.t_last:g}: a row arriving now could pair with a dropped one within max_window {w:g}")
        return None

    def _ok_rows(self, cols: Cols, idx: np.ndarray) -> np.ndarray:
        """Rows of ``idx`` this group stores: its relations' rows whose columns are valid (the
        rows of a group without queries, and its history; no time order is required of them)."""
        ok = np.zeros(len(idx), bool)
        for mask, refs in self.checks(cols, idx):
            m = mask.copy()
            for col, kind in refs:
                for r in cols.get(col, kind)[1]:
                    pos = np.searchsorted(idx, r)
                    if pos < len(idx) and idx[pos] == r:
                        m[pos] = False
            ok |= m
        return ok

    def state(self):
        st = {**super().state(), "codes": self.codes.values}
        if self.selects:
            st["selects"] = {str(q): v for q, v in self.selects.items()}
            st["selected"] = self.sel.state()
        return st

    def load(self, s):
        super().load(s)
        self.codes = Codes(s["codes"])
        self.selects = {int(q): v for q, v in (s.get("selects") or {}).items()}
        self.sel = SelectedValues.load(s.get("selected"))
