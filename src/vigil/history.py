"""The engine's join history: rows of relations kept for join groups created later (a join
registered at position n pairs with tuples that arrived before n, docs/contract.md).

By default the history is whole: O(stream) memory, which a long-running stream of window joins
cannot afford. A run may declare a *horizon* ``(column, H)`` (``vigil replay/run --join-history
COLUMN:H``): the history then keeps only the rows whose ``column`` value lies within H of the
newest such value seen (rows with t <= newest - H are dropped, as are rows without a valid value
in ``column``), so its memory is O(rows within H). Exactness is kept by refusing what the
dropped rows would have served: once a row was dropped, a join group can be created only if it
needs no more than the horizon -- a window join on ``column`` whose declared ``max_window`` is
<= H (its pairs satisfy |r.t - s.t| < window <= H, so no dropped row can pair with a row still to
come). Any other join registered after that, which would need a new group, is rejected with the
reason; joins joining an existing group are unaffected (the group holds its own relations).

Costs: ``keep`` O(rows) amortised (the history is compacted when it has doubled since the last
compaction, one filter over it); ``add`` (sharded mode) O(history) per call.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

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

    def _admit(self, t: pa.Table) -> pa.Table:
        """Rows of t within the horizon of the newest time (t included); the others are dropped."""
        times = self._times(t)
        finite = np.isfinite(times)
        if finite.any():
            self.newest = max(self.newest, float(times[finite].max()))
        keep = finite & (times > self.newest - self.horizon[1])  # type: ignore[index]
        if keep.all():
            return t
        self.dropped += int((~keep).sum())
        return t.filter(pa.array(keep))

    def _compact(self) -> None:
        if not self.tables:
            return
        t = pa.concat_tables(self.tables, promote_options="permissive") if len(self.tables) > 1 else self.tables[0]
        keep = self._times(t) > self.newest - self.horizon[1]  # type: ignore[index]
        if not keep.all():
            self.dropped += int((~keep).sum())
            t = t.filter(pa.array(keep))
        self.tables = [t] if t.num_rows else []
        self._rows = self._at_compaction = t.num_rows

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict:
        t = pa.concat_tables(self.tables, promote_options="permissive") if self.tables else None
        return {"rows": np.frombuffer(table_bytes(t) if t is not None else b"", np.uint8),
                "horizon": "" if self.horizon is None else f"{self.horizon[0]}:{self.horizon[1]!r}",
                "dropped": self.dropped, "newest": float(self.newest)}

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
        return h
