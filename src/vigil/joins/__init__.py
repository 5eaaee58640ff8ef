"""Joins family (input-sensitive continuous joins; paper 003).

JoinOperator protocol (one instance per group of queries sharing kind, relations, join columns,
range columns and time column):

    op = Impl(kind, output)            # kind: band | select | window ; output: pairs | affected
    op.register(qid, spec)             # spec: BandJoinSpec | SelectJoinSpec | WindowJoinSpec
    op.terminate(qid)
    op.insert(side, seqs, key, attrs, times) -> (qids, r, s)
        side:  "left" (relation R of the spec) or "right" (S)
        seqs:  int64[n] strictly increasing, and larger than every seq inserted before
        key:   float64[n] join column (band) or int64[n] dictionary codes of the equality column
        attrs: float64[n, a] the side's range-selection columns, in sorted column-name order
               (a = 0 for band joins)
        times: float64[n] for window joins, else None; non-decreasing (NaN ignored) and >= every
               time stored before: an insert that goes back in time raises ValueError
    op.insert_both({side: (seqs, key, attrs, times), ...}) -> as insert
        both relations of a batch in one call, taken in the order of their seqs (the engine's
        path; JoinBase: one probe per side plus one kernel for the pairs inside the batch)
    op.preload(side, seqs, key, attrs, times)   # tuples that arrived earlier, in any order
        (seqs unique, not stored before; times in any order); nothing is output. The engine
        starts a join group created late from the history this way.
    op.retain(max_window)              # window joins only, optional: every query's window <= it
    op.state() / Impl.from_state(state)

Every inserted tuple is stored (even with no query alive: a query registered later joins with
it), except that after ``retain(W)`` a window join may drop the tuples whose time is at least W
below the newest time (times are then non-decreasing): no window <= W can pair them again. insert returns the *new* result pairs each arriving tuple creates with stored tuples of the
other side, for queries alive at that moment: pairs mode -> (qid, r_seq, s_seq) triples sorted by
(arriving seq, qid, r, s); affected mode -> (qid, arriving seq, -1), one per (qid, arriving tuple)
with at least one new pair. Semantics: band: s.key - r.key in [lo, hi]; select: r.key == s.key and
each side's attrs inside its closed ranges; window: select plus |r.T - s.T| < w, or for an
interval window [lo, hi] lo <= s.T - r.T <= hi.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class JoinOperator(ABC):
    name: ClassVar[str]

    def __init__(self, kind: str, output: str = "pairs") -> None:
        self.kind = kind
        self.output = output

    @abstractmethod
    def register(self, qid: int, spec: Any) -> None: ...

    @abstractmethod
    def terminate(self, qid: int) -> None: ...

    @abstractmethod
    def insert(
        self, side: str, seqs: np.ndarray, key: np.ndarray, attrs: np.ndarray, times: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def insert_both(self, blocks: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Tuples of both sides in one call: ``blocks`` maps side -> (seqs, key, attrs, times) (a
        side may be absent); the tuples are taken in the order of their seqs, as if inserted run by
        run, and the output is ``insert``'s (pairs mode: sorted by (arriving seq, qid, r, s)). This
        default inserts the runs one by one; strategies do it in one pass."""
        runs = []
        for side, b in blocks.items():
            if b is None or not len(b[0]):
                continue
            seqs = np.asarray(b[0], np.int64)
            runs += [(int(s), side, j) for j, s in enumerate(seqs.tolist())]
        runs.sort()
        outs = []
        a = 0
        while a < len(runs):
            side = runs[a][1]
            z = a
            while z < len(runs) and runs[z][1] == side:
                z += 1
            seqs, key, attrs, times = blocks[side]
            idx = np.array([r[2] for r in runs[a:z]], np.int64)
            attrs = None if attrs is None else np.asarray(attrs).reshape(len(seqs), -1)[idx]
            outs.append(self.insert(side, np.asarray(seqs)[idx], np.asarray(key)[idx], attrs,
                                    None if times is None else np.asarray(times)[idx]))
            a = z
        if not outs:
            e = np.empty(0, np.int64)
            return e, e, e.copy()
        return tuple(np.concatenate([o[j] for o in outs]) for j in range(3))  # type: ignore[return-value]

    def preload(
        self, side: str, seqs: np.ndarray, key: np.ndarray, attrs: np.ndarray, times: np.ndarray | None
    ) -> None:
        """Store tuples that arrived earlier (any order of seqs and times); nothing is output."""
        raise NotImplementedError(f"{type(self).__name__} does not implement preload")

    def retain(self, max_window: float) -> None:
        """Declare that every window of this (window-join) operator is <= ``max_window``; an
        implementation may then drop stored tuples no such window can pair (the oracle keeps all)."""
        self.max_window = float(max_window)

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> JoinOperator: ...
