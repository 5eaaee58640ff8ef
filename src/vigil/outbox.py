"""The engine's outputs between two ``take_outputs`` calls, put in the contract's order once.

Two kinds arrive out of order with each other:

* *element outputs* (``matured``, ``join``, ``update``, rejected rows, ...) in
  :class:`vigil.group.Segment` objects. A group is fed lazily (the engine defers a group's rows
  until an operation touches it or the batch ends), so a segment filled later may hold outputs at
  earlier positions than one filled before it;
* *operation outputs* (``answer``, rejected operations, ...) emitted one by one, each at the
  engine's position when it applied (an operation at position n applies after element n).

:meth:`Outbox.take` merges all element outputs into one segment, sorted as the contract orders
them (position, then event, query, pair), and places each operation output after the element
outputs at or before its position, keeping the operations' own order: the order a run that fed
every group eagerly and emitted everything at once would produce. O(k log k) for k outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .events import OUTPUT_SCHEMA
from .group import Segment


class Outbox:
    """Outputs waiting for :meth:`take` (see the module docstring)."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.rows: list[dict[str, Any] | pa.Table] = []  # operation outputs (contract columns; runs of answers: tables)
        self.pos: list[int] = []  # the engine position each was emitted at

    def __bool__(self) -> bool:
        return bool(self.rows) or any(s.parts or s.reasons for s in self.segments)

    def emit(self, row: dict[str, Any], pos: int) -> None:
        self.rows.append(row)
        self.pos.append(pos)

    def emit_answers(self, run: tuple[list, ...], out_counts: dict[str, int]) -> int:
        """Answer events gathered as columns (ids, at, value, keys, asked_at, and the engine
        position each was emitted at; the other columns null), emitted one after the other as one
        table (a run of lookups: no dict per answer); clears ``run``, counts them in
        ``out_counts``, returns how many."""
        ids, at, values, keys, asked, pos = run
        k = len(ids)
        if not k:
            return 0
        cols = {"event": _repeated("answer", k), "id": pa.array(ids, pa.string()),
                "at": pa.array(at, pa.int64()), "value": pa.array(values, pa.float64()),
                "keys": keys if isinstance(keys, pa.Array) else _nullable(keys, pa.list_(pa.string())),
                "asked_at": _nullable(asked, pa.int64())}
        self.rows.append(pa.table([cols[f.name] if f.name in cols else pa.nulls(k, f.type) for f in OUTPUT_SCHEMA],
                                  schema=OUTPUT_SCHEMA))
        self.pos.extend(pos)
        out_counts["answer"] = out_counts.get("answer", 0) + k
        for col in run:
            if type(col) is list:
                col.clear()
        return k

    def emit_answer_columns(self, ids: pa.Array, at: list[int], values: np.ndarray, keys: pa.Array | None,
                            pos: list[int], out_counts: dict[str, int]) -> int:
        """Answer events from columns (ids: Arrow strings; values: float64, NaN written as null;
        keys: an Arrow ``list<string>`` array or None; ``pos``: the engine position each was
        emitted at; the other columns null), emitted one after the other as one table; counts
        them in ``out_counts``, returns how many."""
        k = len(ids)
        if not k:
            return 0
        nan = np.isnan(values)
        cols = {"event": _repeated("answer", k), "id": ids, "at": pa.array(at, pa.int64()),
                "value": pa.array(values, pa.float64(), mask=nan) if nan.any() else pa.array(values, pa.float64())}
        if keys is not None:
            cols["keys"] = keys
        self.rows.append(pa.table([cols[f.name] if f.name in cols else pa.nulls(k, f.type) for f in OUTPUT_SCHEMA],
                                  schema=OUTPUT_SCHEMA))
        self.pos.extend(pos)
        out_counts["answer"] = out_counts.get("answer", 0) + k
        return k

    def _ops(self) -> pa.Table | None:
        """The operation outputs as one table (rows as dicts, runs of answers as tables)."""
        if not self.rows:
            return None
        parts, run = [], []
        for r in self.rows:
            if isinstance(r, dict):
                run.append(r)
                continue
            if run:
                parts.append(pa.Table.from_pylist(run, schema=OUTPUT_SCHEMA))
                run = []
            parts.append(r)
        if run:
            parts.append(pa.Table.from_pylist(run, schema=OUTPUT_SCHEMA))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def add(self, seg: Segment) -> None:
        if seg.parts or seg.reasons:
            self.segments.append(seg)

    def _merged(self) -> Segment | None:
        if not self.segments:
            return None
        if len(self.segments) == 1:
            return self.segments[0]
        m = Segment()
        keyed = hasattr(m, "keys")
        for s in self.segments:
            if keyed:
                off = len(m.parts)
                m.keys.update({off + i: k for i, k in s.keys.items()})
                m.sel.update({off + i: k for i, k in getattr(s, "sel", {}).items()})  # joins' selected values
            m.parts.extend(s.parts)
            m.reasons.extend(s.reasons)
        return m

    def take(self, ids: list[str], out_counts: dict[str, int]) -> pa.Table:
        seg = self._merged()
        elem = None if seg is None else seg.table(ids, out_counts)
        ops = self._ops()
        pos = np.asarray(self.pos, np.int64)
        self.segments, self.rows, self.pos = [], [], []
        if elem is None or ops is None:
            return elem if elem is not None else ops if ops is not None else OUTPUT_SCHEMA.empty_table()
        at = np.asarray(elem.column("at").to_numpy(zero_copy_only=False), np.int64)
        # each operation output goes after the element outputs at or before its position
        cut = np.searchsorted(at, pos, side="right")
        if not len(at) or cut[0] >= len(at):
            return pa.concat_tables([elem, ops])
        if cut[-1] == 0:
            return pa.concat_tables([ops, elem])
        order = np.argsort(np.concatenate([np.arange(len(at)) * 2, cut * 2 - 1]), kind="stable")
        return pa.concat_tables([elem, ops]).take(pa.array(order))


def _repeated(text: str, k: int) -> pa.Array:
    """An Arrow string array of ``k`` copies of ASCII ``text``, built from its buffers."""
    w = len(text)
    offs = np.arange(0, (k + 1) * w, w, dtype=np.int32) if k * w < 2**31 else None
    if offs is None:
        return pa.array([text] * k, pa.string())
    return pa.Array.from_buffers(pa.string(), k, [None, pa.py_buffer(offs), pa.py_buffer(text.encode() * k)])


def _nullable(values: list, typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)``; all nulls (the common case: keys, asked_at) without a pass over them."""
    return pa.nulls(len(values), typ) if values.count(None) == len(values) else pa.array(values, typ)
