"""The reorder buffer of ``vigil run``: stream rows that carry ``seq`` reach the engine in ``seq``
order even when their files arrive in a later micro-batch than rows with larger ``seq``.

State: ``position`` P (every seq <= P has been released to the engine, or its gap was accepted)
and the *held* rows (seq > P + 1, sorted by seq, at most ``max_rows`` of them). Per batch,
:meth:`ReorderBuffer.push` takes the batch's rows in arrival order and

1. rejects rows without a usable seq (the engine's reasons: null, not a positive integer), rows
   whose seq is <= P (``late: seq 17 arrived after the stream had passed position 1040 ...``:
   their place in the order is gone) and second copies of a seq (held, or earlier in the batch);
2. merges the other rows with the held ones (by seq; the arrival order of a batch's rows never
   matters) and releases the contiguous run P+1, P+2, ...;
3. if more than ``max_rows`` rows are still held, releases the smallest ones until ``max_rows``
   remain: the gaps before them are *accepted* (P jumps over them; a row of such a gap that
   arrives later is late).

:meth:`flush` releases everything held (gaps accepted): ``vigil run`` calls it at the end of an
``available-now`` run, before ``Engine.finish()``, so that no row is left behind. ``seq`` is
expected dense (1, 2, 3, ...): with a sparse seq every row waits until ``max_rows`` rows are
held (or the end of the run); ``max_rows = 0`` only sorts each batch by seq.

The buffer's state (:meth:`state`, :meth:`from_state`: P, the held rows as Arrow IPC bytes,
counters) is written with the engine snapshot of every batch, so a run killed at any moment and
restarted holds exactly the rows it held.

Cost per batch of n rows with h held: O(n) when the batch continues the stream in order and
nothing is held (the rows pass through untouched); otherwise one stable sort of the n + h seqs
and one Arrow ``take``, O((n + h) log(n + h)). Memory: the held rows, at most ``max_rows`` (their
Arrow size is :attr:`nbytes`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.events import seq_column
from vigil.state import bytes_table as _unipc
from vigil.state import table_bytes as _ipc

DEFAULT_MAX_REORDER_ROWS = 1_000_000


def concat_rows(a: pa.Table, b: pa.Table) -> pa.Table:
    """Rows of two batches as one table; a column whose type differs between them is carried as
    text (the engine parses numbers from text, and compares keys as text)."""
    try:
        return pa.concat_tables([a, b], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        pass
    parts = []
    for t, o in ((a, b), (b, a)):
        cols = {}
        for name in t.column_names:
            c = t.column(name)
            if name in o.column_names and o.column(name).type != c.type and name != "seq":
                c = pc.cast(c, pa.string()) if not pa.types.is_string(c.type) else c
            cols[name] = c
        parts.append(pa.table(cols))
    return pa.concat_tables(parts, promote_options="permissive")


def _with_seq(t: pa.Table, seqs: np.ndarray) -> pa.Table:
    arr = pa.array(seqs, pa.int64())
    if "seq" in t.column_names:
        return t.set_column(t.column_names.index("seq"), "seq", arr)
    return t.append_column("seq", arr)


class ReorderBuffer:
    """See the module doc."""

    def __init__(self, max_rows: int = DEFAULT_MAX_REORDER_ROWS) -> None:
        if max_rows < 0:
            raise ValueError(f"--max-reorder-rows must be >= 0, got {max_rows}")
        self.max_rows = int(max_rows)
        self.position = 0
        self.held: pa.Table | None = None  # seq ascending, > position + 1
        self.counts = {"late": 0, "duplicate": 0, "no_seq": 0, "gap_rows": 0, "released": 0}

    def __len__(self) -> int:
        return 0 if self.held is None else self.held.num_rows

    @property
    def nbytes(self) -> int:
        """Arrow bytes of the held rows."""
        return 0 if self.held is None else int(self.held.nbytes)

    def _held_seqs(self) -> np.ndarray:
        if self.held is None:
            return np.zeros(0, np.int64)
        return np.asarray(self.held.column("seq").to_numpy(zero_copy_only=False), np.int64)

    # ------------------------------------------------------------------ one batch
    def push(self, rows: pa.Table) -> tuple[pa.Table, list[tuple[int | None, str]]]:
        """Rows of one batch (arrival order, with a ``seq`` column) -> (rows released to the
        engine, seq ascending, with seq as int64; rejected rows as (at, reason) in arrival order,
        ``at`` = their seq, None when they have none)."""
        n = rows.num_rows
        P = self.position
        seqs, bad = seq_column(rows)
        if not bad and not len(self) and n:
            if seqs[0] == P + 1 and seqs[-1] == P + n and np.all(np.diff(seqs) == 1):  # in order: pass through
                self.position = P + n
                self.counts["released"] += n
                out = rows if rows.schema.field("seq").type == pa.int64() else _with_seq(rows, seqs)
                return out, []
        rejected: list[tuple[int | None, str]] = []
        ok = np.ones(n, bool)
        reasons: dict[int, tuple[int | None, str]] = {}
        for i, r in bad.items():
            reasons[i] = (None, r)
            self.counts["no_seq"] += 1
        ok[list(bad)] = False
        late = ok & (seqs <= P)
        for i in np.flatnonzero(late).tolist():
            reasons[i] = (int(seqs[i]), f"late: seq {seqs[i]} arrived after the stream had passed position {P} "
                                        f"(a gap in seq is held for at most {self.max_rows:,} rows, --max-reorder-rows)")
        self.counts["late"] += int(late.sum())
        ok &= ~late
        idx = np.flatnonzero(ok)
        held = self._held_seqs()
        if len(idx):  # second copies of a seq: the first arrival wins (held rows arrived earlier)
            s = seqs[idx]
            _, first = np.unique(s, return_index=True)
            dup = np.ones(len(idx), bool)
            dup[first] = False
            dup |= np.isin(s, held)
            for i in idx[dup].tolist():
                reasons[i] = (int(seqs[i]), f"seq {seqs[i]} is a duplicate (a row with seq {seqs[i]} arrived earlier)")
            self.counts["duplicate"] += int(dup.sum())
            idx = idx[~dup]
        rejected = [reasons[i] for i in sorted(reasons)]
        if len(idx) == 0 and not len(self):
            return rows.slice(0, 0) if "seq" in rows.column_names else rows, rejected
        cand = rows.take(pa.array(idx)) if len(idx) < n else rows
        cand = _with_seq(cand, seqs[idx])
        both = cand if self.held is None else concat_rows(self.held, cand)
        all_seqs = np.concatenate([held, seqs[idx]])
        order = np.argsort(all_seqs, kind="stable")
        if not np.array_equal(order, np.arange(len(order))):
            both = both.take(pa.array(order))
            all_seqs = all_seqs[order]
        released = self._release(all_seqs)
        self._keep(both, released)
        return both.slice(0, released), rejected

    def _release(self, s: np.ndarray) -> int:
        """How many of the sorted seqs ``s`` leave now; moves the position past them."""
        k = max(0, len(s) - self.max_rows)  # over the bound: the gaps before them are accepted
        P = self.position
        if k:
            self.counts["gap_rows"] += int(s[k - 1] - P - k)
            P = int(s[k - 1])
        d = s[k:] - np.arange(len(s) - k)  # nondecreasing: == P + 1 on the contiguous run
        run = int(np.searchsorted(d, P + 1, side="right")) if len(d) and d[0] == P + 1 else 0
        if k + run:
            self.position = int(s[k + run - 1])
        self.counts["released"] += k + run
        return k + run

    def _keep(self, both: pa.Table, released: int) -> None:
        rest = both.num_rows - released
        if rest == 0:
            self.held = None
        elif released == 0:
            self.held = both
        else:  # a compact copy: the released rows' buffers must not stay alive with the held ones
            self.held = both.slice(released).take(pa.array(np.arange(rest)))

    def flush(self) -> pa.Table | None:
        """Release every held row (the gaps before them are accepted); None if nothing is held."""
        if not len(self):
            return None
        s = self._held_seqs()
        self.counts["gap_rows"] += int(s[-1] - self.position - len(s))
        self.counts["released"] += len(s)
        self.position = int(s[-1])
        out, self.held = self.held, None
        return out

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict:
        held = b"" if self.held is None else _ipc(self.held)
        return {"max_rows": self.max_rows, "position": self.position, "counts": dict(self.counts),
                "held": np.frombuffer(held, np.uint8)}

    @classmethod
    def from_state(cls, s: dict, max_rows: int | None = None) -> ReorderBuffer:
        """``max_rows``: the bound of this run (the checkpoint's when None); a smaller bound
        releases the excess at the next batch."""
        b = cls(s["max_rows"] if max_rows is None else max_rows)
        b.position = int(s["position"])
        b.counts.update({k: int(v) for k, v in s["counts"].items()})
        held = s["held"]
        if len(held):
            b.held = _unipc(held.tobytes() if isinstance(held, np.ndarray) else bytes(held))
        return b
