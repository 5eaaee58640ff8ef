"""Shared machinery of the paper-003 join strategies (band.py, select.py, window.py): query
tables, the stored tuples of both relations with their ordered indexes, output assembly.

Model (paper 003 §3): relations R(A, B[, T]) and S(B, C[, T]); a select/window query has at most
ONE range column per side (rangeA on R, rangeC on S; no column = unbounded); more columns are
rejected with :class:`~vigil.errors.Unsupported`. Stored tuples per side (symmetric: either side
may arrive):

* band:   the finite keys in ascending order (``asc``) and their negations ascending (``neg``),
  with seqs: the B-tree on S(B) (and on R(B)); tuples with a non-finite key never join.
* select/window: the tuples with a non-NaN attribute sorted by (key, attr): the B-tree on
  S(B, C); window joins also keep the (key, storage) order, which is (key, T): inserts must come
  in time order (checked, ValueError otherwise) and preloaded tuples are merged in time order:
  the B-tree on S(B, T).

Arriving batches go to a small sorted buffer part (O(B + b log b) per batch of b tuples) merged
into the main part when it outgrows max(2048, N/8) (O(N)); probes run over both parts. Stored
tuples are indexed when the side is next probed (``_Side.parts``), not at their insert.
Operators run in one of three output modes: ``pairs`` and ``affected`` (the protocol) and
``count`` (benchmarks: the kernels count result pairs without materialising them; insert then
returns empty arrays and adds to ``self.counted``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numba
import numpy as np

from ..arrays import GrowableArray
from ..errors import Unsupported
from ..specs import parse_query
from . import JoinOperator, _delta

KINDS = {"band": "band_join", "select": "select_join", "window": "window_join"}
SIDES = ("left", "right")
MODES = {"pairs": 0, "affected": 1, "count": 2}
INF = math.inf


@numba.njit(cache=True, nogil=True)
def _kx_positions(k: np.ndarray, x: np.ndarray, nk: np.ndarray, nx: np.ndarray) -> np.ndarray:
    """Insertion positions (right side of ties) of (nk[i], nx[i]) into arrays sorted by (k, x)."""
    n = len(k)
    out = np.empty(len(nk), np.int64)
    for i in range(len(nk)):
        lo, hi = 0, n
        while lo < hi:  # first index with (k, x) > (nk, nx)
            mid = (lo + hi) >> 1
            if k[mid] < nk[i] or (k[mid] == nk[i] and x[mid] <= nx[i]):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out


@numba.njit(cache=True, nogil=True)
def _merge(a: np.ndarray, p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """np.insert(a, p, v) for nondecreasing positions p, as one pass."""
    out = np.empty(len(a) + len(v), a.dtype)
    i = 0
    for j in range(len(v)):
        while i < p[j]:
            out[i + j] = a[i]
            i += 1
        out[i + j] = v[j]
    out[i + len(v):] = a[i:]
    return out


def _ins(a: np.ndarray, p: np.ndarray, v: np.ndarray) -> np.ndarray:  # v cast to a's dtype, as np.insert
    return _merge(a, p, np.asarray(v, a.dtype))


def distinct_pairs(i: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (i, q) pairs (i >= 0), sorted by (i, q): one sort of the int64 key
    (i << b) | (q - min q), b the bits of max q - min q, split back by a shift and a mask (no
    division) (np.unique(axis=0) sorts row records, ~15x slower; numpy 2's 1-D np.unique as slow
    again), or a lexsort when that key could overflow. O(k log k) for k pairs, about 1.5x a sort
    of k int64."""
    q0 = int(q.min())
    bits = (int(q.max()) - q0).bit_length()  # q - q0 in the low bits: no division to split the key
    if (int(i.max()) + 1) << bits < 2**62:
        key = (i << bits) | (q - q0)
        key.sort()
        keep = np.empty(len(key), bool)
        keep[0] = True
        np.not_equal(key[1:], key[:-1], out=keep[1:])
        key = key[keep]
        return key >> bits, (key & ((1 << bits) - 1)) + q0
    o = np.lexsort((q, i))
    i, q = i[o], q[o]
    keep = np.empty(len(i), bool)
    keep[0] = True
    keep[1:] = (i[1:] != i[:-1]) | (q[1:] != q[:-1])
    return i[keep], q[keep]


def _by_tuple(i, q, o, r, s):
    """(q, r, s) sorted by (i, q, r, s), i.e. by (i, q, o) (r or s is a function of i): one stable
    argsort of the packed int64 key when it fits 63 bits, else a lexsort."""
    pack = len(q) and q.min() >= 0 and o.min() >= 0 and (int(i.max()) + 1) * (int(q.max()) + 1) * (int(o.max()) + 1) < 2**62
    order = np.argsort((i * (int(q.max()) + 1) + q) * (int(o.max()) + 1) + o, kind="stable") if pack else \
        np.lexsort((s, r, q, i))
    return q[order], r[order], s[order]


def window_bounds(spec) -> tuple[float, float, float, float]:
    """(w, dlo) for a left tuple arriving, then for a right one, of a window join: a stored
    partner with d = t_arriving - T_stored >= 0 qualifies iff dlo <= d < w. ``window: w`` is
    |r.T - s.T| < w: (w, -inf) both. ``window: [lo, hi]`` is lo <= s.T - r.T <= hi: a right tuple
    arriving needs d in [lo, hi], a left one d in [-hi, -lo]; the closed upper bound is the open
    one of the next float up."""
    win = spec.window
    if not isinstance(win, list | tuple):
        return float(win), -INF, float(win), -INF
    lo, hi = float(win[0]), float(win[1])
    return (float(np.nextafter(-lo, INF)), (-hi if -hi > 0 else -INF),
            float(np.nextafter(hi, INF)), (lo if lo > 0 else -INF))


class _Index:
    """One sorted part of a side's stored tuples (the layouts of the module docstring)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        kd = np.float64 if kind == "band" else np.int64
        e = np.empty(0)
        ei = np.empty(0, np.int64)
        self.n = 0
        # band: asc keys / neg keys with seqs
        self.asc, self.asc_s, self.neg, self.neg_s = e, ei, e.copy(), ei.copy()
        # select/window: (key, x) order
        self.k, self.kx, self.kt, self.ks = np.empty(0, kd), e.copy(), e.copy(), ei.copy()
        # window: (key, seq) order
        self.k2, self.x2, self.t2, self.s2 = np.empty(0, kd), e.copy(), e.copy(), ei.copy()

    def arrays(self) -> list[np.ndarray]:
        return [self.asc, self.asc_s, self.neg, self.neg_s, self.k, self.kx, self.kt, self.ks,
                self.k2, self.x2, self.t2, self.s2]

    def add(self, seqs, key, x, t) -> None:
        self.n += len(seqs)
        if self.kind == "band":
            ok = np.isfinite(key)
            kk, ss = key[ok], seqs[ok]
            o = np.argsort(kk, kind="stable")
            p = np.searchsorted(self.asc, kk[o], "right")
            self.asc = _ins(self.asc, p, kk[o])
            self.asc_s = _ins(self.asc_s, p, ss[o])
            o = np.argsort(-kk, kind="stable")
            p = np.searchsorted(self.neg, -kk[o], "right")
            self.neg = _ins(self.neg, p, -kk[o])
            self.neg_s = _ins(self.neg_s, p, ss[o])
            return
        ok = ~np.isnan(x)
        if self.kind == "window":
            ok &= ~np.isnan(t)
        kk, xx, tt, ss = key[ok], x[ok], t[ok], seqs[ok]
        if not len(kk):
            return
        o = np.lexsort((xx, kk))  # new tuples sorted, so their positions are nondecreasing
        p = _kx_positions(self.k, self.kx, kk[o], xx[o])
        self.k = _ins(self.k, p, kk[o])
        self.kx = _ins(self.kx, p, xx[o])
        self.kt = _ins(self.kt, p, tt[o])
        self.ks = _ins(self.ks, p, ss[o])
        if self.kind == "window":
            o = np.argsort(kk, kind="stable")  # equal positions keep the given order
            p = np.searchsorted(self.k2, kk[o], "right")
            self.k2 = _ins(self.k2, p, kk[o])
            self.x2 = _ins(self.x2, p, xx[o])
            self.t2 = _ins(self.t2, p, tt[o])
            self.s2 = _ins(self.s2, p, ss[o])


class _Side:
    """The stored tuples of one relation: the raw columns, and the ordered indexes in two parts:
    ``main`` and a small ``buf`` that takes arriving batches (O(B) per insert instead of O(N))
    and is merged into ``main`` when it exceeds max(BUF_MIN, sqrt-ish N / 8) tuples; probes run
    over both parts (amortized O(N / B) per stored tuple). The indexes are brought up to date
    lazily: :meth:`add` only appends the raw columns, and :meth:`parts` (what every probe of this
    side reads) first indexes the tuples added since, as one block; so a side that is never
    probed (a stream joined with a stored table) pays no index upkeep, and one probed after
    every batch pays what it paid per batch before."""

    BUF_MIN = 2048

    def __init__(self, kind: str) -> None:
        self.kind = kind
        kd = np.float64 if kind == "band" else np.int64
        self.seqs = GrowableArray(np.int64)
        self.keys = GrowableArray(kd)
        self.x = GrowableArray(np.float64)
        self.t = GrowableArray(np.float64)
        self.width: int | None = 0 if kind == "band" else None
        self.main = _Index(kind)
        self.buf = _Index(kind)
        self._buf_from = 0  # raw position where the buffer's tuples start
        self._indexed = 0  # raw rows held by main and buf (the rest: added, not indexed yet)
        self.gen = 0  # bumped when trim() replaces the raw columns (caches over them restart)

    def add(self, seqs: np.ndarray, key: np.ndarray, x: np.ndarray, t: np.ndarray) -> None:
        self.seqs.extend(seqs)
        self.keys.extend(key)
        self.x.extend(x)
        self.t.extend(t)

    def _index(self) -> None:
        """Index the raw rows added since the last call, as one block (into the buffer, or the
        buffer and the block merged into main when they outgrow it)."""
        a, n = self._indexed, len(self.seqs)
        m = n - a
        if self.buf.n == 0:
            self._buf_from = a  # the buffer holds the raw rows from here on
        if self.main.n == 0 or m >= self.BUF_MIN or self.buf.n + m > max(self.BUF_MIN, self.main.n // 8):
            b = self._buf_from  # merge the buffer and this block into main
            self.main.add(self.seqs.view[b:].copy(), self.keys.view[b:].copy(), self.x.view[b:].copy(),
                          self.t.view[b:].copy())
            self.buf = _Index(self.kind)
        else:
            self.buf.add(self.seqs.view[a:n].copy(), self.keys.view[a:n].copy(), self.x.view[a:n].copy(),
                         self.t.view[a:n].copy())
        self._indexed = n

    def parts(self) -> list[_Index]:
        if self._indexed < len(self.seqs):
            self._index()
        return [p for p in (self.main, self.buf) if p.n]

    def trim(self, cutoff: float) -> bool:
        """Drop the stored tuples with time <= ``cutoff`` once they are at least as many as the
        kept ones (and BUF_MIN): the kept suffix is re-indexed in O(N log N), so the amortized cost
        is O(log N) per tuple and the memory at most ~2x what the horizon can still use. Times
        are non-decreasing in storage order (checked by the operator). True if it compacted."""
        t = self.t.view
        gone = int(np.searchsorted(t, cutoff, side="right"))
        if gone < max(self.BUF_MIN, len(t) - gone):
            return False
        self.reset(*(g.view[gone:].copy() for g in (self.seqs, self.keys, self.x, self.t)))
        return True

    def raw(self) -> list[np.ndarray]:
        """The stored tuples (seqs, keys, x, t), in storage order."""
        return [g.view for g in (self.seqs, self.keys, self.x, self.t)]

    def reset(self, seqs, keys, x, t) -> None:
        """Replace the stored tuples (in storage order: time order for window joins) and re-index
        them, O(N log N); caches over the raw columns restart (``gen``)."""
        self.seqs, self.keys, self.x, self.t = (GrowableArray.of(a, a.dtype) for a in (seqs, keys, x, t))
        self.gen += 1
        self.main = _Index(self.kind)
        self.buf = _Index(self.kind)
        self._buf_from = 0
        self._indexed = len(seqs)
        if len(seqs):
            self.main.add(seqs, keys, x, t)

    def nbytes(self) -> int:
        return (sum(a.nbytes for p in (self.main, self.buf) for a in p.arrays())
                + sum(g.view.nbytes for g in (self.seqs, self.keys, self.x, self.t)))


class JoinBase(JoinOperator):
    """Base of every paper-003 strategy; subclasses set ``name`` and ``kinds`` and implement
    ``_probe(side, seqs, key, x, t, mode) -> (q, i, o, count)`` (query ids, index of the
    arriving tuple in the batch, seq of the stored partner or -1) and ``_queries_changed()``."""

    kinds: tuple[str, ...] = ("band", "select", "window")
    shadow_cls: ClassVar[type | None] = None  # the operator of queries between full builds (_delta)

    def __init__(self, kind: str, output: str = "pairs") -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown join kind {kind!r}; expected one of {sorted(KINDS)}")
        if output not in MODES:
            raise ValueError(f"output must be one of {sorted(MODES)}, not {output!r}")
        super().__init__(kind, output)
        self.mode = MODES[output]
        self.sides = {s: _Side(kind) for s in SIDES}
        self.specs: dict[int, Any] = {}
        # per query: band lo/hi; or left range (alo, ahi), right range (clo, chi), window w
        self.q: dict[int, tuple[float, ...]] = {}
        self.cols: dict[str, list[str] | None] = {s: ([] if kind == "band" else None) for s in SIDES}
        self._last_seq: int | None = None
        self.counted = 0
        self._dirty = True
        self.horizon = INF  # window joins: the declared max_window (retain); stored tuples older are dropped
        self._t_last = -INF  # window joins: the newest time stored (inserts must not go below it)
        self._held: dict[str, list[tuple[np.ndarray, ...]]] = {}  # preloaded tuples not merged yet
        self._n_held = 0
        self.qwin: dict[int, tuple[float, float, float, float]] = {}  # window joins: see side_windows
        self._lo: dict[str, dict[int, float]] = {s: {} for s in SIDES}  # qid -> dlo > 0, per arriving side

    def side_windows(self, side: str, qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(w, dlo) of ``qids`` for tuples arriving on ``side``: a pair with a stored partner d = t -
        T >= 0 older qualifies iff dlo <= d < w (window_bounds); select joins: w = inf, dlo = -inf."""
        j = 0 if side == "left" else 2
        wins = [self.qwin.get(i, (INF, -INF, INF, -INF)) for i in qids.tolist()]
        return (np.array([v[j] for v in wins], np.float64).reshape(len(qids)),
                np.array([v[j + 1] for v in wins], np.float64).reshape(len(qids)))

    def _probe_checked(self, side, seqs, key, x, t, mode):
        """``_probe``, and for window queries with a lower bound on d = t - T for this side
        (asymmetric windows not holding 0) the pairs with d below it removed: the strategies find
        the pairs with d < w, the lower bound filters them by the partner's time."""
        lo = self._lo[side]
        if not lo:
            return self._probe(side, seqs, key, x, t, mode)
        q, i, o, _ = self._probe(side, seqs, key, x, t, 0)
        if len(q):
            other = self.sides["right" if side == "left" else "left"]
            sv = other.seqs.view
            srt = np.argsort(sv, kind="stable")
            tt = other.t.view[srt[np.searchsorted(sv[srt], o)]]
            dl = np.array([lo.get(v, -INF) for v in q.tolist()], np.float64)
            keep = t[i] - tt >= dl
            q, i, o = q[keep], i[keep], o[keep]
        if mode == 2:
            e = np.empty(0, np.int64)
            return e, e, e, len(q)
        if mode == 1 and len(q):
            ui, uq = distinct_pairs(i, q)
            return uq, ui, np.full(len(ui), -1, np.int64), 0
        return q, i, o, 0

    def insert_both(self, blocks: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Tuples of both sides in one call (``blocks``: side -> (seqs, key, attrs, times)), exact in
        the order of their seqs (module ``_batch``)."""
        blocks = {s: b for s, b in blocks.items() if b is not None and len(b[0])}
        if len(blocks) < 2:
            return super().insert_both(blocks)
        from ._batch import insert_both

        return insert_both(self, blocks)

    def retain(self, max_window: float) -> None:
        """Window joins: every query of this operator has window <= ``max_window`` (a query with a
        larger one is rejected), so a stored tuple whose time is at least ``max_window`` below the
        newest time can never pair again and is dropped (``_Side.trim``): memory O(tuples within
        max_window), not O(stream). Times must then be non-decreasing (the engine guarantees it
        per group: a row whose time goes backwards is rejected)."""
        if self.kind != "window":
            raise ValueError("retain() applies to window joins only")
        if not (max_window > 0):
            raise ValueError(f"max_window must be > 0, got {max_window}")
        self.horizon = float(max_window)

    # ------------------------------------------------------------------ queries

    def register(self, qid: int, spec: Any) -> None:
        qid = int(qid)
        if spec.type != KINDS[self.kind]:
            raise ValueError(f"query {spec.id!r} is a {spec.type}; this operator serves {KINDS[self.kind]}")
        if self.kind not in self.kinds:
            raise Unsupported(f"{self.name} does not define {spec.type} processing (paper 003 defines it for "
                              f"{', '.join(KINDS[k] for k in self.kinds)})")
        if qid in self.specs:
            raise ValueError(f"qid {qid} is already registered")
        if self.kind == "band":
            row: tuple[float, ...] = (float(spec.band[0]), float(spec.band[1]))
        else:
            cols = {"left": sorted(spec.left_range), "right": sorted(spec.right_range)}
            for side in SIDES:
                if len(cols[side]) > 1:
                    raise Unsupported(f"{self.name} indexes one range column per side (paper 003 §3: "
                                      f"rangeA on R, rangeC on S); {side} has {cols[side]}")
                known, width = self.cols[side], self.sides[side].width
                if (known is not None and known != cols[side]) or (known is None and width not in (None, len(cols[side]))):
                    raise ValueError(f"query {spec.id!r}: {side} range columns {cols[side]} differ from this operator's")
            for side in SIDES:
                self.cols[side] = cols[side]
                self.sides[side].width = len(cols[side])
            lb, rb = spec.range_bounds("left"), spec.range_bounds("right")
            a = next(iter(lb.values()), (-INF, INF))
            c = next(iter(rb.values()), (-INF, INF))
            win = window_bounds(spec) if self.kind == "window" else (INF, -INF, INF, -INF)
            w = max(win[0], win[2])
            if w > self.horizon:
                raise Unsupported(f"window {w:g} exceeds this join group's max_window {self.horizon:g}")
            self.qwin[qid] = win
            for sd, j in (("left", 1), ("right", 3)):  # lower bounds on t - T, per arriving side
                if win[j] > 0:
                    self._lo[sd][qid] = win[j]
            row = (float(a[0]), float(a[1]), float(c[0]), float(c[1]), w)
        self.specs[qid] = spec
        if _delta.add(self, qid, spec, row):  # into the shadow: the built indexes stay
            return
        self.q[qid] = row
        self._on_register(qid, row)
        self._dirty = True
        self._intra_trees = None  # _batch's query trees

    def terminate(self, qid: int) -> None:
        qid = int(qid)
        if qid in self.specs:
            del self.specs[qid]
            self.qwin.pop(qid, None)
            for sd in SIDES:
                self._lo[sd].pop(qid, None)
            if _delta.drop(self, qid):
                return
            row = self.q.pop(qid)
            self._on_terminate(qid, row)
            if not _delta.dead(self, qid):  # else its pairs are filtered until the next build
                self._dirty = True
                self._intra_trees = None

    def _on_register(self, qid: int, row: tuple) -> None:  # dynamic index maintenance hooks
        pass

    def _compacted(self, side: str) -> None:
        """Hook: ``side``'s stored tuples were trimmed and re-indexed (statistics kept over them
        by position must be rebuilt)."""

    def _on_terminate(self, qid: int, row: tuple) -> None:
        pass

    def query_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(qids sorted, rows float64[n, 2 or 5]) of the alive queries."""
        ids = np.array(sorted(self.q), np.int64)
        width = 2 if self.kind == "band" else 5
        rows = np.array([self.q[i] for i in ids.tolist()], np.float64).reshape(len(ids), width)
        return ids, rows

    # ------------------------------------------------------------------ tuples

    def _columns(self, side, seqs, key, attrs, times, n):
        """(key, x, t) of ``n`` tuples of ``side``, checked (attrs width; window times, which
        must not be NaN under a max_window)."""
        me = self.sides[side]
        key = np.ascontiguousarray(key, np.float64 if self.kind == "band" else np.int64)
        attrs = np.zeros((n, 0)) if attrs is None else np.asarray(attrs, np.float64).reshape(n, -1)
        if me.width is None:
            me.width = attrs.shape[1]
        if attrs.shape[1] != me.width:
            raise ValueError(f"attrs have {attrs.shape[1]} column(s) but this operator's tuples have {me.width}")
        x = np.ascontiguousarray(attrs[:, 0]) if attrs.shape[1] else np.zeros(n)
        if self.kind != "window":
            return key, x, np.full(n, np.nan)
        if times is None:
            raise ValueError("window joins need times")
        t = np.ascontiguousarray(times, np.float64)
        if self.horizon < INF and np.isnan(t).any():
            raise ValueError("a window join with max_window needs non-NaN times")
        return key, x, t

    def _check_order(self, t: np.ndarray) -> float:
        """Window joins: the non-NaN times of an insert must be non-decreasing and >= every time
        stored before (the (key, T) index and the trims read arrival order as time order); one
        vectorised pass. Returns the newest time."""
        if len(t) == 1:  # the one-tuple path: no numpy call
            v = float(t[0])
            if v < self._t_last:
                raise ValueError(f"window join times must be non-decreasing: time {v:g} arrives after "
                                 f"{self._t_last:g} (insert tuples in time order; tuples that arrived "
                                 f"earlier go through preload())")
            return self._t_last if v != v else v
        tt = t[~np.isnan(t)] if np.isnan(t).any() else t
        if not len(tt):
            return self._t_last
        if tt[0] < self._t_last or (len(tt) > 1 and bool((tt[1:] < tt[:-1]).any())):
            prev = np.maximum.accumulate(np.r_[self._t_last, tt[:-1]])
            j = int(np.argmax(tt < prev))
            raise ValueError(f"window join times must be non-decreasing: time {tt[j]:g} arrives after {prev[j]:g} "
                             f"(insert tuples in time order; tuples that arrived earlier go through preload())")
        return float(tt[-1])

    def insert(self, side, seqs, key, attrs=None, times=None):
        if side not in SIDES:
            raise ValueError(f"side must be 'left' or 'right', not {side!r}")
        seqs = np.ascontiguousarray(seqs, np.int64)
        n = len(seqs)
        empty = np.empty(0, np.int64)
        if n == 0:
            return empty, empty, empty.copy()
        me = self.sides[side]
        key, x, t = self._columns(side, seqs, key, attrs, times, n)
        t_new = self._check_order(t) if self.kind == "window" else self._t_last
        if np.any(np.diff(seqs) <= 0) or (self._last_seq is not None and seqs[0] <= self._last_seq):
            raise ValueError("seqs must be strictly increasing and larger than every seq inserted before")
        if self._held and (self.q or _delta.pending(self)):
            self._merge_held()
        other = self.sides["right" if side == "left" else "left"]
        if (self.q or _delta.pending(self)) and len(other.seqs):
            q, i, o, cnt = _delta.probe(self, side, seqs, key, x, t, self.mode)
        else:
            q, i, o, cnt = empty, empty, empty, 0
        me.add(seqs, key, x, t)
        self._last_seq = int(seqs[-1])
        self._t_last = t_new
        if self.horizon < INF:
            self._trim()
        return self._assemble(side, seqs, q, i, o, cnt)

    def preload(self, side, seqs, key, attrs=None, times=None) -> None:
        """Store tuples that arrived earlier, outside :meth:`insert`'s order: nothing is output.
        ``seqs`` unique and not stored before, in any order; window ``times`` in any order (an
        insert afterwards continues with seqs above every stored one and times >= the newest).
        The tuples are held and merged into the stored side's time order (O(N log N), the side
        re-indexed) before the next probe with queries alive, or once the held tuples reach a
        quarter of the stored ones: amortized O(log N) per tuple."""
        if side not in SIDES:
            raise ValueError(f"side must be 'left' or 'right', not {side!r}")
        seqs = np.array(seqs, np.int64)
        n = len(seqs)
        if n == 0:
            return
        key, x, t = self._columns(side, seqs, key, attrs, times, n)
        if len(np.unique(seqs)) < n:
            raise ValueError("preload: seqs must be unique")
        self._held.setdefault(side, []).append((seqs, key.copy(), x.copy(), t.copy()))
        self._n_held += n
        self._last_seq = max(int(seqs.max()), self._last_seq if self._last_seq is not None else -1)
        if self.kind == "window" and not np.isnan(t).all():
            self._t_last = max(self._t_last, float(np.nanmax(t)))
        stored = sum(len(sd.seqs) for sd in self.sides.values())
        if self._n_held >= max(_Side.BUF_MIN, stored // 4):
            self._merge_held()

    def _merge_held(self) -> None:
        """Merge the preloaded tuples into their sides (window joins: stored in (time, seq) order)."""
        for side, parts in self._held.items():
            me = self.sides[side]
            cols = [np.concatenate([c, *(p[j] for p in parts)]) for j, c in enumerate(me.raw())]
            o = np.lexsort((cols[0], cols[3])) if self.kind == "window" else np.argsort(cols[0], kind="stable")
            me.reset(*(c[o] for c in cols))
            self._compacted(side)
        self._held, self._n_held = {}, 0
        self._dirty = True
        if self.horizon < INF:
            self._trim()

    def _trim(self) -> None:
        for s in SIDES:
            if self.sides[s].trim(self._t_last - self.horizon):
                self._compacted(s)

    def _assemble(self, side, seqs, q, i, o, cnt):
        empty = np.empty(0, np.int64)
        if self.mode == 2:
            self.counted += int(cnt)
            return empty, empty, empty.copy()
        if self.mode == 1:
            if not len(q):
                return empty, empty, empty.copy()
            ui, uq = distinct_pairs(i, q)
            return uq, seqs[ui], np.full(len(ui), -1, np.int64)
        mine = seqs[i]
        r, s = (mine, o) if side == "left" else (o, mine)
        return _by_tuple(i, q, o, r, s)

    # ------------------------------------------------------------------ snapshot

    def state(self) -> dict[str, Any]:
        if self._held:
            self._merge_held()
        ids = sorted(self.specs)
        st: dict[str, Any] = {"kind": self.kind, "output": self.output, "last_seq": self._last_seq,
                              "qids": np.array(ids, np.int64), "specs": [self.specs[i].dump() for i in ids],
                              "counted": self.counted, "horizon": self.horizon, "t_last": self._t_last}
        for side in SIDES:
            sd = self.sides[side]
            st[side] = {"cols": self.cols[side], "width": sd.width, "seqs": sd.seqs.view.copy(),
                        "keys": sd.keys.view.copy(), "x": sd.x.view.copy(), "t": sd.t.view.copy()}
        return st

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> JoinBase:
        op = cls(s["kind"], s["output"])
        if s.get("horizon", INF) < INF:
            op.retain(float(s["horizon"]))
        for qid, spec in zip(np.asarray(s["qids"]).tolist(), s["specs"], strict=True):
            op.register(int(qid), parse_query(spec))
        for side in SIDES:
            d = s[side]
            op.cols[side] = None if d["cols"] is None else list(d["cols"])
            sd = op.sides[side]
            sd.width = None if d["width"] is None else int(d["width"])
            sd.add(np.asarray(d["seqs"], np.int64), np.asarray(d["keys"], sd.keys.dtype),
                   np.asarray(d["x"], np.float64), np.asarray(d["t"], np.float64))
        op._last_seq = None if s["last_seq"] is None else int(s["last_seq"])
        op.counted = int(s.get("counted", 0))
        if op.kind == "window":  # snapshots before every window join kept it: the newest stored time
            t = np.concatenate([op.sides[side].t.view for side in SIDES])
            t = t[~np.isnan(t)]
            op._t_last = max(float(s.get("t_last", -INF)), float(t.max()) if len(t) else -INF)
        return op

    # ------------------------------------------------------------------ subclass API

    def _queries_changed(self) -> None:
        raise NotImplementedError

    def _probe(self, side, seqs, key, x, t, mode):
        raise NotImplementedError

    def nbytes(self) -> int:
        held = sum(a.nbytes for parts in self._held.values() for p in parts for a in p)
        return held + sum(sd.nbytes() for sd in self.sides.values())
