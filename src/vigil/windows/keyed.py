"""Keyed window aggregates: one shared structure per key (paper 002 §3, "per substream").

Window queries with ``where`` equalities or ``group_by`` split the stream into substreams, one per
key value (the tuple of the key columns' texts; the engine adapter encodes keys to int64 codes).
Every query of one group (same aggregate, value column, window kind, key columns and ranges)
reads the same per-key structure, so 10,000 keys x 10 queries keep 10,000 substreams, not 100,000
windows:

* per key, a ring of its last elements (value, seq, time), sized by the largest window of the
  key's queries and grown only as elements arrive (``_keyed_kernels``: all keys in one flat
  arena with per-key offsets);
* per key, a ring of block aggregates over blocks of 32 consecutive elements (the two-level
  form of B-INT's base intervals, §3.1.1): SUM/AVG blocks for sum and avg, MIN or MAX blocks;
  COUNT needs only the window's index range, QUANTILE sorts the window's values at lookup.

A rows window [NL, NR] of a keyed query counts the key's rows: after element n it holds the
key's elements of per-key rank in [c-NL+1, c-NR] (c = the key's elements so far); a time window
holds the key's elements with time in (now-TL, now-TR], now = the time of the last row of the
group (the stream's clock). Only elements with seq > the query's registration count.

Bounds: push O(1) amortized per row (a ring doubling copies its elements once; a block is
aggregated once); lookup O(log W + W/32 + 64) per (query, key) (binary searches for time windows
and the registration point, O(W log W) for QUANTILE); space O(sum over keys of the key's held
elements) (at most 2x the key's largest window, plus the dead slots of moved rings, at most the
live ones before a compaction), independent of the number of queries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays import rank_fraction
from ..errors import Unsupported
from . import _keyed_kernels as K

MAX_ROWS = 2**53
CODES = {"sum": K.SUM, "count": K.COUNT, "avg": K.AVG, "min": K.MIN, "max": K.MAX, "quantile": K.QNT}
BLOCKS = {"sum": K.SUM, "avg": K.SUM, "min": K.MIN, "max": K.MAX}


def _grow(a: np.ndarray, n: int, fill) -> np.ndarray:
    if n <= len(a):
        return a
    out = np.full(max(n, 2 * len(a), 8), fill, a.dtype)
    out[:len(a)] = a
    return out


class KeyedWindows:
    """The shared keyed operator (see the module docstring). ``register(qid, spec, start, key)``:
    key = the query's key code (where equalities on every key column) or -1 (group_by: every
    key); ``push(values, seqs, times, codes)`` (codes -1: rows kept by no key); ``lookup(qids, n,
    t_now)`` for keyed queries; ``lookup_group(qid, keys, t_now) -> (codes, values)`` for group_by
    queries over the candidate key codes."""

    name = "keyed"

    def __init__(self, agg: str, time_based: bool) -> None:
        self.agg = agg
        self.time_based = bool(time_based)
        self.code = CODES[agg]
        self.bkind = BLOCKS.get(agg, -1)
        self.off = np.zeros(0, np.int64)
        self.cap = np.zeros(0, np.int64)
        self.cnt = np.zeros(0, np.int64)
        self.low = np.zeros(0, np.int64)
        self.boff = np.zeros(0, np.int64)
        self.need = np.zeros(0, np.int64)
        self.ev = np.zeros(64, np.float64)
        self.es = np.zeros(64, np.int64)
        self.et = np.zeros(64 if time_based else 1, np.float64)
        self.bv = np.zeros(8, np.float64)
        self.tops = np.zeros(4, np.int64)
        self.nkeys = 0
        self.q: dict[int, tuple] = {}  # qid -> (key, left, right, start, phi, num, den)
        self.need_all = 0  # largest rows window of the group_by queries
        self.span = 0.0  # largest time span

    # ------------------------------------------------------------------ queries
    def keys(self, n: int) -> None:
        """Make room for key codes < n."""
        if n > self.nkeys:
            for name in ("off", "cap", "cnt", "low", "boff"):
                setattr(self, name, _grow(getattr(self, name), n, 0))
            need = _grow(self.need, n, 0)
            need[self.nkeys:n] = self.need_all
            self.need = need
            self.nkeys = n

    def register(self, qid: int, spec: Any, start: int, key: int = -1) -> None:
        left, right = spec.time if self.time_based else spec.rows
        if not self.time_based and left > MAX_ROWS:
            raise Unsupported(f"rows window [{left}, {right}] is longer than 2^53 = {MAX_ROWS:,} elements, the "
                              "longest window vigil serves (the bound on every number of the contract)")
        phi = float(spec.phi) if spec.phi is not None else 1.0
        num, den = rank_fraction(phi) if spec.phi is not None else (1, 1)
        self.q[int(qid)] = (int(key), float(left), float(right), int(start), phi, num, den)
        self._needs(key, left)

    def _needs(self, key: int, left) -> None:
        if self.time_based:
            self.span = max(self.span, float(left))
        elif key < 0:
            self.need_all = max(self.need_all, int(left))
            self.need[:self.nkeys] = np.maximum(self.need[:self.nkeys], self.need_all)
        else:
            self.keys(key + 1)
            self.need[key] = max(self.need[key], int(left))

    def terminate(self, qid: int) -> None:
        self.q.pop(int(qid), None)
        # needs only shrink on a new registration's recount: memory, never answers, depends on it
        if not self.q:
            self.need_all, self.span = 0, 0.0
            self.need[:] = 0

    # ------------------------------------------------------------------ elements
    def push(self, values: np.ndarray, seqs: np.ndarray, times: np.ndarray | None, codes: np.ndarray) -> None:
        if not len(codes):
            return
        self.keys(int(codes.max()) + 1)
        t = times if self.time_based else values
        self.ev, self.es, self.et, self.bv = K.push(
            np.ascontiguousarray(codes, np.int64), np.ascontiguousarray(values, np.float64),
            np.ascontiguousarray(seqs, np.int64), np.ascontiguousarray(t, np.float64), self.time_based,
            self.span, self.bkind, self.need, self.off, self.cap, self.cnt, self.low, self.boff,
            self.ev, self.es, self.et, self.bv, self.tops)
        if self.tops[2] > 1024 and 2 * self.tops[2] > self.tops[0]:
            self._compact()

    def _compact(self) -> None:
        n = self.nkeys
        off, boff = self.off[:n], self.boff[:n]
        self.ev, self.es, self.et, self.bv, e, b = K.compact(
            off, self.cap[:n], self.cnt[:n], boff, self.ev, self.es, self.et, self.bv, self.time_based, self.bkind, 0, 0)
        self.tops[:] = (e, b, 0, 0)

    # ------------------------------------------------------------------ lookups
    def _args(self):
        return (self.off, self.cap, self.cnt, self.low, self.boff, self.ev, self.es, self.et, self.bv)

    def lookup(self, qids: np.ndarray, n: int, t_now: float) -> np.ndarray:
        rows = [self.q[int(q)] for q in qids.tolist()]
        cols = list(zip(*rows, strict=True)) if rows else [()] * 7
        key, left, right, start, phi, num, den = (np.array(c, dt) for c, dt in zip(
            cols, (np.int64, np.float64, np.float64, np.int64, np.float64, np.int64, np.int64), strict=True))
        key = np.where(key < self.nkeys, key, -1)
        return K.lookup_keys(key, left, right, start, phi, num, den, self.code, self.bkind, self.time_based,
                             float(t_now), *self._args())

    def lookup_group(self, qid: int, keys: np.ndarray, t_now: float) -> tuple[np.ndarray, np.ndarray]:
        _, left, right, start, phi, num, den = self.q[int(qid)]
        keys = np.ascontiguousarray(keys[keys < self.nkeys], np.int64)
        return K.lookup_group(keys, left, right, start, phi, num, den, self.code, self.bkind, self.time_based,
                              float(t_now), *self._args())

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.off, self.cap, self.cnt, self.low, self.boff, self.need, self.ev, self.es,
                                      self.et, self.bv))

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        self._compact()
        n = self.nkeys
        return {"name": self.name, "agg": self.agg, "time_based": self.time_based, "nkeys": n,
                "off": self.off[:n].copy(), "cap": self.cap[:n].copy(), "cnt": self.cnt[:n].copy(),
                "low": self.low[:n].copy(), "boff": self.boff[:n].copy(), "need": self.need[:n].copy(),
                "ev": self.ev[:self.tops[0]].copy(), "es": self.es[:self.tops[0]].copy(),
                "et": self.et[:self.tops[0] if self.time_based else 1].copy(), "bv": self.bv[:self.tops[1]].copy(),
                "queries": [[q, *v] for q, v in self.q.items()], "need_all": self.need_all, "span": self.span}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> KeyedWindows:
        op = cls(s["agg"], bool(s["time_based"]))
        op.nkeys = int(s["nkeys"])
        for name, dt in (("off", np.int64), ("cap", np.int64), ("cnt", np.int64), ("low", np.int64), ("boff", np.int64),
                         ("need", np.int64), ("ev", np.float64), ("es", np.int64), ("et", np.float64),
                         ("bv", np.float64)):
            a = np.array(s[name], dt)
            setattr(op, name, a if len(a) else np.zeros(1, dt))
        op.tops = np.array([len(s["ev"]), len(s["bv"]), 0, 0], np.int64)
        op.q = {int(q[0]): (int(q[1]), float(q[2]), float(q[3]), int(q[4]), float(q[5]), int(q[6]), int(q[7]))
                for q in s["queries"]}
        op.need_all, op.span = int(s["need_all"]), float(s["span"])
        return op
