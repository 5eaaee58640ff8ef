"""The engine's join history: rows of relations kept for join groups created later (a join
registered at position n pairs with tuples that arrived before n, docs/contract.md).

By default the history is whole: O(stream) memory, which a long-running stream of window joins
cannot afford. A run may declare a *horizon* ``(column, H)`` (``vigil replay/run --join-history
COLUMN:H``): the history then keeps only the rows whose ``column`` value lies within H of the
newest such value seen *in the same relation* (rows of relation rel with t <= newest(rel) - H are
dropped, as are rows without a valid value in ``column``), so its memory is O(rows within H).
The newest time is per relation because time order is enforced per join group, not across the
stream: a relation whose times lag another's keeps its rows. Exactness is kept by refusing what
the dropped rows would have served: once a row was dropped, a join group can be created only if
it needs no more than the horizon -- a window join on ``column`` whose declared ``max_window`` is
<= H. Its rows to come have times >= the newest time of its relations' kept rows it accepts,
>= newest(rel) for each of them, and the dropped rows of rel have times <= ``frontier(rel)`` <=
newest(rel) - H, so no pair |r.t - s.t| < window <= H can reach a dropped row; the group checks
this when it starts from the history (``frontier``) and is refused with the reason if a kept row
it rejects left the gap open. Any other join registered after a drop, which would need a new
group, is rejected with the reason; joins joining an existing group are unaffected (the group
holds its own relations).

Costs: ``keep`` O(rows) amortised (the history is compacted when it has doubled since the last
compaction, one filter over it); ``add`` (sharded mode) O(history) per call.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .events import ERROR_COLUMN, numeric_column
from .state import bytes_table, table_bytes


def parse_horizon(text: str | None) -> tuple[str, float] | None:
    """``"COLUMN:H"`` -> (column, H); None or "" -> None (keep everything). Raises ValueError."""
    if not text:
        return None
    col, sep, h = str(text).rpartition(":")
    try:
        horizon = float(h)
    except ValueError:
        horizon = float("nan")
    if not sep or not col or not (np.isfinite(horizon) and horizon > 0):
        raise ValueError(f"join history must be COLUMN:H with a finite H > 0 (e.g. ts:3600), got {text!r}")
    return col, horizon


class History:
    """Rows of relations (each with its ``seq``), sorted by seq, for join groups created later."""

    def __init__(self, horizon: tuple[str, float] | None = None) -> None:
        self.horizon = None if horizon is None else (str(horizon[0]), float(horizon[1]))
        self.tables: list[pa.Table] = []
        self.dropped = 0  # rows not kept (older than the horizon, or without a time)
        self.newest = -np.inf  # newest value of the horizon's column kept so far
        self.newest_rel: dict[str, float] = {}  # per relation
        self.dropped_rel: dict[str, float] = {}  # per relation: the newest time of a dropped row
        self.floor = -np.inf  # snapshots before per-relation horizons: every relation dropped up to it
        self._rows = 0
        self._at_compaction = 0

    def __bool__(self) -> bool:
        return bool(self.tables)

    def __iter__(self):
        return iter(self.tables)

    def refusal(self, need: tuple[str, float] | None) -> str | None:
        """Why a join group needing ``need`` (None: every earlier row; (column, w): rows within w
        of the newest in column) cannot be created now, or None if it can."""
        if not self.dropped:
            return None
        col, h = self.horizon  # type: ignore[misc]
        if need is not None and need[0] == col and need[1] <= h:
            return None
        return (f"join history: this run keeps relation rows only within {h:g} of the newest {col!r} "
                f"(--join-history {col}:{h:g}) and has dropped {self.dropped:,} older ones; a join "
                f"that needs a new group now must be a window_join on {col!r} declaring max_window <= {h:g}")

    def keep(self, batch: pa.Table, rows: np.ndarray, seqs: np.ndarray) -> None:
        """Keep ``rows`` of ``batch`` (relation rows, with their seqs)."""
        if not len(rows):
            return
        hist = batch.take(pa.array(rows)).drop_columns(
            [c for c in ("seq", ERROR_COLUMN) if c in batch.column_names])
        hist = hist.append_column("seq", pa.array(np.asarray(seqs, np.int64), pa.int64()))
        if self.horizon is not None:
            hist = self._admit(hist)
        if hist.num_rows:
            self.tables.append(hist)
            self._rows += hist.num_rows
            if self.horizon is not None and self._rows >= 2 * max(self._at_compaction, 1024):
                self._compact()

    def add(self, rows: pa.Table) -> None:
        """Sharded mode: rows applied by other engines (with their global seq); rows whose seq is
        kept already are skipped; the result stays sorted by seq."""
        if rows is None or not rows.num_rows:
            return
        seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
        if self.tables:
            have = np.concatenate([np.asarray(t.column("seq").to_numpy(zero_copy_only=False), np.int64)
                                   for t in self.tables])
            rows = rows.filter(pa.array(~np.isin(seqs, have)))
            if not rows.num_rows:
                return
        if self.horizon is not None:
            rows = self._admit(rows)
        t = pa.concat_tables([*self.tables, rows], promote_options="permissive")
        order = np.argsort(np.asarray(t.column("seq").to_numpy(zero_copy_only=False), np.int64), kind="stable")
        self.tables = [t.take(pa.array(order))]
        self._rows = t.num_rows
        if self.horizon is not None:
            self._compact()

    # ------------------------------------------------------------------ horizon
    def _times(self, t: pa.Table) -> np.ndarray:
        col = self.horizon[0]  # type: ignore[index]
        if col not in t.column_names:
            return np.full(t.num_rows, np.nan)
        vals, bad = numeric_column(t, col)
        vals = np.asarray(vals, np.float64).copy()
        if bad:
            vals[np.fromiter(bad, np.int64, len(bad))] = np.nan
        return vals

    def frontier(self, rel: str) -> float:
        """The newest time of a dropped row of relation ``rel`` (-inf: none dropped)."""
        return max(self.dropped_rel.get(rel, -np.inf), self.floor)

    def _rels(self, t: pa.Table) -> tuple[list[str], np.ndarray]:
        """(relation names, per-row index into them) of t's ``rel`` column."""
        if "rel" not in t.column_names:
            return [""], np.zeros(t.num_rows, np.int64)
        enc = pc.dictionary_encode(pc.cast(t.column("rel").combine_chunks(), pa.string()).fill_null(""))
        return enc.dictionary.to_pylist(), np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)

    def _filter(self, t: pa.Table, learn: bool) -> pa.Table:
        """Rows of t within the horizon of their relation's newest time (t's rows included when
        ``learn``); the others are dropped (counted, and their relation's frontier moved)."""
        times = self._times(t)
        names, code = self._rels(t)
        finite = np.isfinite(times)
        newest = np.array([self.newest_rel.get(r, -np.inf) for r in names])
        if learn and finite.any():
            np.maximum.at(newest, code[finite], times[finite])
            self.newest_rel.update(zip(names, newest.tolist(), strict=True))
            self.newest = max(self.newest, float(times[finite].max()))
        keep = finite & (times > newest[code] - self.horizon[1])  # type: ignore[index]
        if keep.all():
            return t
        gone = ~keep & finite
        if gone.any():
            front = np.full(len(names), -np.inf)
            np.maximum.at(front, code[gone], times[gone])
            for r, f in zip(names, front.tolist(), strict=True):
                if f > -np.inf:
                    self.dropped_rel[r] = max(self.dropped_rel.get(r, -np.inf), f)
        self.dropped += int((~keep).sum())
        return t.filter(pa.array(keep))

    def _admit(self, t: pa.Table) -> pa.Table:
        return self._filter(t, learn=True)

    def _compact(self) -> None:
        if not self.tables:
            return
        t = pa.concat_tables(self.tables, promote_options="permissive") if len(self.tables) > 1 else self.tables[0]
        t = self._filter(t, learn=False)
        self.tables = [t] if t.num_rows else []
        self._rows = self._at_compaction = t.num_rows

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict:
        t = pa.concat_tables(self.tables, promote_options="permissive") if self.tables else None
        return {"rows": np.frombuffer(table_bytes(t) if t is not None else b"", np.uint8),
                "horizon": "" if self.horizon is None else f"{self.horizon[0]}:{self.horizon[1]!r}",
                "dropped": self.dropped, "newest": float(self.newest),
                "newest_rel": dict(self.newest_rel), "dropped_rel": dict(self.dropped_rel), "floor": self.floor}

    @staticmethod
    def state_rows(s) -> np.ndarray:
        """The rows (Arrow IPC bytes as uint8) of a :meth:`state`, or of a snapshot's bare bytes
        (before horizons existed)."""
        return s["rows"] if isinstance(s, dict) else s

    @classmethod
    def load(cls, s) -> History:
        """From :meth:`state`, or from a snapshot's bare bytes (before horizons existed)."""
        if not isinstance(s, dict):
            s = {"rows": s}
        h = cls(parse_horizon(s.get("horizon") or None))
        if len(s["rows"]):
            t = bytes_table(np.asarray(s["rows"], np.uint8).tobytes())
            h.tables = [t]
            h._rows = h._at_compaction = t.num_rows
        h.dropped = int(s.get("dropped", 0))
        h.newest = float(s.get("newest", -np.inf))
        h.floor = float(s.get("floor", -np.inf))
        if "newest_rel" in s:
            h.newest_rel = {str(k): float(v) for k, v in s["newest_rel"].items()}
            h.dropped_rel = {str(k): float(v) for k, v in s["dropped_rel"].items()}
        elif h.horizon is not None and h.dropped:  # one newest time over every relation was kept
            h.floor = h.newest - h.horizon[1]
            if h.tables:  # the kept rows' newest per relation (rows older than the floor are gone)
                h.newest_rel = dict.fromkeys(h._rels(h.tables[0])[0], h.newest)
        return h
