"""The joins family's engine adapter: one JoinOperator per (kind, relations, join columns, range
columns, time column). A join group lives on without queries: the relations' rows are its state
(``keeps_history``), and a group created late starts from the engine's history (``bootstrap``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..group import Codes, Cols, Group, Segment, monotone


class JoinGroup(Group):
    family = "joins"
    keeps_history = True
    stream_columns = ("rel",)

    @staticmethod
    def params_of(spec) -> dict[str, Any]:
        kind = {"band_join": "band", "select_join": "select", "window_join": "window"}[spec.type]
        p = {"kind": kind, "left": spec.left, "right": spec.right, "left_on": spec.left_on, "right_on": spec.right_on}
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
        if params.get("max_window") is not None:
            self.op.retain(params["max_window"])
        self.codes = Codes()
        self.key_kind = "num" if params["kind"] == "band" else "key"

    def _refs(self, side: str) -> list[tuple[str, str]]:
        p = self.params
        refs = [(p[f"{side}_on"], self.key_kind)] + [(c, "num") for c in p.get(f"{side}_cols", [])]
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

    def checks(self, cols, idx):
        rel = cols.get("rel", "key")[0][idx]
        return [(rel == self.params[side], self._refs(side)) for side in ("left", "right")]

    def register(self, qid, spec, start):
        self.op.register(qid, spec)

    def feed(self, cols, rows, seqs, seg):
        if not len(rows):
            return
        rel = cols.get("rel", "key")[0][rows]
        side = np.where(rel == self.params["left"], 0, 1)
        cut = np.flatnonzero(np.diff(side)) + 1
        for a, b in zip(np.r_[0, cut], np.r_[cut, len(rows)], strict=True):
            sname = "left" if side[a] == 0 else "right"
            r = rows[a:b]
            p = self.params
            if self.key_kind == "num":
                key = cols.get(p[f"{sname}_on"], "num")[0][r]
            else:
                key = self.codes.encode(cols.get(p[f"{sname}_on"], "key")[0][r])
            names = p.get(f"{sname}_cols", [])
            attrs = np.empty((len(r), len(names)), np.float64)
            for j, c in enumerate(names):
                attrs[:, j] = cols.get(c, "num")[0][r]
            times = cols.get(p["time_column"], "time")[0][r] if p.get("time_column") else None
            if times is not None:
                self.t_last = float(times[-1])
            q, x, y = self.op.insert(sname, seqs[a:b], key, attrs, times)
            if len(q):
                if self.engine.join_output == "affected":
                    seg.add("affected", q, x)
                else:
                    seg.add("join", q, np.maximum(x, y), x, y)

    def bootstrap(self, history: list[pa.Table]) -> None:
        """Store the relations' earlier rows (no query is alive yet, so nothing is output)."""
        for t in history:
            cols = Cols(t)
            idx = np.arange(t.num_rows)
            seqs = np.asarray(t.column("seq").to_numpy(zero_copy_only=False), np.int64)
            ok = self._ok_rows(cols, idx)
            self.feed(cols, idx[ok], seqs[ok], Segment())

    def _ok_rows(self, cols: Cols, idx: np.ndarray) -> np.ndarray:
        ok = np.zeros(len(idx), bool)
        for mask, refs in self.checks(cols, idx):
            m = mask.copy()
            for col, kind in refs:
                for r in cols.get(col, kind)[1]:
                    pos = np.searchsorted(idx, r)
                    if pos < len(idx) and idx[pos] == r:
                        m[pos] = False
            ok |= m
        if self.time_column():
            t = cols.get(self.time_column(), "time")[0][idx]
            ok &= monotone(t, ok, self.t_last)
        return ok

    def state(self):
        return {**super().state(), "codes": self.codes.values}

    def load(self, s):
        super().load(s)
        self.codes = Codes(s["codes"])
