"""Baselines of range thresholding on streams (paper 000, Qiao, Gan, Tao, SIGMOD 2016, §3.1 and
the competitors of §8): every one keeps the exact weight W(q) of every alive query and updates
it for each element that falls in R_q, so all of them are caught in the "quadratic trap" the
paper's DT algorithm escapes.

* ``scan`` (the paper's *Baseline*, §3.1): probe every alive query for every element.
  O(m_alive) per element, O(n*m) overall; O(m_alive) space. Implemented block at a time and
  query-major (``_stabbing_kernels.scan_push_*``): per query the weight of a block of 256
  elements is summed branch-free, and the exact offset of the first crossing is found by
  re-scanning only the block in which the query matures.
* ``interval_tree`` (§3.1 / §8 "Interval tree", d = 1 only): a static centred interval tree over
  flat arrays [de Berg et al. ch. 10.1]; each element stabs it and decrements the counters of
  the k queries containing it. O(log m + k) per element, i.e. still Theta(n*m*volume) overall
  when queries cover a constant fraction of the stream (10% in §8). O(m) space.
* ``seg_intv`` (§8 "Seg-Intv tree", d = 2 only): segment tree on x whose nodes each carry an
  interval tree on y. O(log^2 m + k) per element; O(m log m) space.
* ``rtree`` (§8 "R-tree", any d): stabbing through the ``rtree`` package (libspatialindex), the
  library a user would reach for. The R-tree has no worst-case bound: O(m) per element and per
  update in the worst case; per block of elements one ``intersection_v`` call (a Python call per
  block, the counter updates in numba), and one Python ``insert`` call per registered query when
  the registration batch is small (larger batches rebuild by bulk loading).

Dynamic queries. ``interval_tree`` and ``seg_intv`` are static structures made dynamic by the
logarithmic method [Bentley & Saxe]: every registration batch becomes a new structure, and the
two most recent structures are merged (rebuilt) while the older holds fewer than twice as many
alive queries, so a query takes part in O(log m) rebuilds. Terminations and maturities are lazy
(the counter is set to a dead value) and a global rebuild purges them when dead entries
outnumber alive ones. ``scan`` compacts its arrays on the same rule, ``rtree`` re-bulk-loads.

Re-arming queries (``repeat``): at a crossing the kernels reset the counter to the re-arm
threshold instead of the dead value (scan re-scans the rest of the block for further crossings);
maturities go to output buffers grown inside the kernels.

All four produce exactly the oracle's output (``vigil.threshold.oracle``): closed ranges,
infinite bounds, (qid, 0-based offset) sorted by (offset, qid). Registering an alive qid
replaces it (its weight restarts at 0), as in the oracle. Weights and thresholds are exact in the
contract's range [1, 2**53] however many elements arrive (``_limits``: pushes are cut into
sub-batches of total weight <= 2**60 and dead counters are reset before they could reach 0);
thresholds above 2**61 would be treated as 2**61. ``state()`` has the oracle's layout
(dim, qids, lo, hi, tau, w), so states move freely between implementations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import Unsupported
from . import ThresholdOperator, repeat_array
from . import _stabbing_kernels as K
from ._limits import weight_cuts

_CAP = 1 << 61  # thresholds are clamped here so that alive counters stay far below K.DEAD
_RENORM = float(1 << 61)  # dead counters (K.DEAD = 2**62) are reset before this much weight
_EMPTY_I = np.zeros(0, np.int64)


class IdMap:
    """qid (int64) -> handle (int64 >= 0) in a numba open-addressing hash table."""

    def __init__(self, cap: int = 64) -> None:
        cap = 1 << max(4, int(cap - 1).bit_length())
        self.keys = np.full(cap, K.EMPTY, np.int64)
        self.vals = np.empty(cap, np.int64)
        self.live = 0
        self.used = 0  # live + tombstones

    def __len__(self) -> int:
        return self.live

    def _reserve(self, extra: int) -> None:
        if 2 * (self.used + extra) <= self.keys.shape[0]:
            return
        ks, vs = self.items()
        cap = 1 << max(4, int(4 * (self.live + extra)).bit_length())
        self.keys = np.full(cap, K.EMPTY, np.int64)
        self.vals = np.empty(cap, np.int64)
        K.ht_put(self.keys, self.vals, ks, vs)
        self.used = self.live = ks.shape[0]

    def put(self, ks: np.ndarray, vs: np.ndarray) -> None:
        if ks.shape[0] == 0:
            return
        self._reserve(ks.shape[0])
        new, reused = K.ht_put(self.keys, self.vals, ks, vs)
        self.live += new
        self.used += new - reused

    def get(self, ks: np.ndarray) -> np.ndarray:
        out = np.empty(ks.shape[0], np.int64)
        K.ht_get(self.keys, self.vals, ks, out)
        return out

    def pop(self, ks: np.ndarray) -> np.ndarray:
        out = np.empty(ks.shape[0], np.int64)
        if ks.shape[0]:
            self.live -= K.ht_pop(self.keys, self.vals, ks, out)
        return out

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        m = (self.keys != K.EMPTY) & (self.keys != K.TOMB)
        return self.keys[m].copy(), self.vals[m].copy()


def _as_queries(qids, lo, hi, tau, dim, repeat=None):
    qids = np.ascontiguousarray(qids, dtype=np.int64).reshape(-1)
    k = qids.shape[0]
    lo = np.ascontiguousarray(lo, dtype=np.float64).reshape(k, dim)
    hi = np.ascontiguousarray(hi, dtype=np.float64).reshape(k, dim)
    tau = np.ascontiguousarray(tau, dtype=np.int64).reshape(k)
    rep = np.minimum(repeat_array(repeat, k), _CAP)
    if k > 1:  # a qid registered twice in one batch: the last one wins (as in the oracle)
        _, last = np.unique(qids[::-1], return_index=True)
        if last.shape[0] < k:
            keep = np.sort(k - 1 - last)
            qids, lo, hi, tau, rep = qids[keep], lo[keep], hi[keep], tau[keep], rep[keep]
    return qids, lo, hi, tau, rep


def _sorted_out(qs: list[np.ndarray], offs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if not qs:
        return _EMPTY_I.copy(), _EMPTY_I.copy()
    q = np.concatenate(qs)
    o = np.concatenate(offs)
    order = np.lexsort((q, o))
    return q[order], o[order]


class _Base(ThresholdOperator):
    """Shared protocol plumbing: register = (terminate alive duplicates) + _insert with
    rem = min(tau, 2**61); state() in the oracle's layout."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        if self.dim < 1:
            raise Unsupported(f"{self.name}: dimension must be >= 1, got {self.dim}")
        self._wsince = 0.0  # weight pushed since dead counters were last reset

    def register(self, qids, lo, hi, tau, repeat=None) -> None:
        qids, lo, hi, tau, rep = _as_queries(qids, lo, hi, tau, self.dim, repeat)
        if qids.shape[0] == 0:
            return
        self.terminate(qids)
        self._insert(qids, lo, hi, tau, np.minimum(tau, _CAP), rep)

    def _prep_points(self, points, weights):
        w = np.ascontiguousarray(weights, dtype=np.int64).reshape(-1)
        pts = np.asarray(points, dtype=np.float64).reshape(w.shape[0], self.dim)
        return pts, w

    def push(self, points, weights):
        """Exact for weights and thresholds up to 2**53 however many elements arrive: sub-batches
        of total weight <= 2**60 (``_limits.weight_cuts``), and the counters of dead entries
        (2**62, decremented by the stabbing structures until the next rebuild) are reset
        before their accumulated decrements could reach 2**61."""
        pts, w = self._prep_points(points, weights)
        tot = float(w.sum(dtype=np.float64))
        if self._wsince + tot <= _RENORM:
            self._wsince += tot
            return self._push_raw(pts, w)
        qs, offs = [], []
        for c0, c1 in weight_cuts(w):
            cw = float(w[c0:c1].sum(dtype=np.float64))
            if self._wsince + cw > _RENORM:
                self._renormalise()
                self._wsince = 0.0
            self._wsince += cw
            q, o = self._push_raw(pts[c0:c1], np.ascontiguousarray(w[c0:c1]))
            qs.append(q)
            offs.append(o + c0)
        return _sorted_out(qs, offs)

    def _push_raw(self, pts, w):
        raise NotImplementedError

    def _renormalise(self) -> None:
        """Reset the counters of dead entries to ``K.DEAD``."""
        raise NotImplementedError

    def _insert(self, qids, lo, hi, tau, rem, rep) -> None:
        raise NotImplementedError

    def _alive_arrays(self) -> tuple[np.ndarray, ...]:
        """(qid, lo[k,d], hi[k,d], tau, rem, rep) of the alive queries, any order."""
        raise NotImplementedError

    def export(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(qids, lo[k,d], hi[k,d], remaining thresholds tau - W, re-arm thresholds) of the alive
        queries: registering them in any operator continues every query exactly (how ``auto``
        switches algorithms)."""
        qid, lo, hi, _tau, rem, rep = self._alive_arrays()
        return qid.copy(), np.asarray(lo, float).reshape(-1, self.dim).copy(), \
            np.asarray(hi, float).reshape(-1, self.dim).copy(), rem.copy(), rep.copy()

    def state(self) -> dict[str, Any]:
        qid, lo, hi, tau, rem, rep = self._alive_arrays()
        order = np.argsort(qid, kind="stable")
        w = np.minimum(tau, _CAP) - rem
        # a re-armed query's round threshold is rep, not the tau it was registered with
        tau = np.where(w < 0, rem, tau)
        return {
            "dim": self.dim,
            "qids": qid[order],
            "lo": lo[order].reshape(-1, self.dim),
            "hi": hi[order].reshape(-1, self.dim),
            "tau": tau[order],
            "w": np.maximum(w, 0)[order],
            "repeat": rep[order],
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]):
        op = cls(int(s["dim"]))
        qids, lo, hi, tau, rep = _as_queries(s["qids"], s["lo"], s["hi"], s["tau"], op.dim, s.get("repeat"))
        w = np.asarray(s["w"], dtype=np.int64).reshape(-1)
        if qids.shape[0]:
            op._insert(qids, lo, hi, tau, np.minimum(tau, _CAP) - w, rep)
        return op


# --------------------------------------------------------------------------------------------
# scan
# --------------------------------------------------------------------------------------------


class Scan(_Base):
    """The paper's Baseline: every element probes every alive query. O(m_alive) per element."""

    name = "scan"

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.ids = IdMap()
        self.n = 0  # slots used
        self.n_alive = 0
        self._alloc(64)

    def _alloc(self, cap: int) -> None:
        d = self.dim
        self.qid = np.empty(cap, np.int64)
        self.lo = np.empty((d, cap), np.float64)
        self.hi = np.empty((d, cap), np.float64)
        self.tau = np.empty(cap, np.int64)
        self.rem = np.empty(cap, np.int64)
        self.rep = np.zeros(cap, np.int64)  # re-arm thresholds (0 = one-shot)
        self.live = np.zeros(cap, np.bool_)

    def _resize(self, need: int) -> None:
        cap = self.qid.shape[0]
        if need <= cap:
            return
        old = (self.qid, self.lo, self.hi, self.tau, self.rem, self.live, self.rep)
        self._alloc(max(need, 2 * cap))
        n = self.n
        self.qid[:n], self.tau[:n], self.rem[:n], self.live[:n] = old[0][:n], old[3][:n], old[4][:n], old[5][:n]
        self.rep[:n] = old[6][:n]
        self.lo[:, :n], self.hi[:, :n] = old[1][:, :n], old[2][:, :n]

    def _insert(self, qids, lo, hi, tau, rem, rep) -> None:
        k = qids.shape[0]
        self._resize(self.n + k)
        a, b = self.n, self.n + k
        self.qid[a:b], self.tau[a:b], self.rem[a:b], self.live[a:b] = qids, tau, rem, True
        self.rep[a:b] = rep
        self.lo[:, a:b], self.hi[:, a:b] = lo.T, hi.T
        self.ids.put(qids, np.arange(a, b, dtype=np.int64))
        self.n = b
        self.n_alive += k

    def _renormalise(self) -> None:
        dead = ~self.live[: self.n]
        self.rem[: self.n][dead] = K.DEAD

    def _kill(self, slots: np.ndarray) -> None:
        self.rem[slots] = K.DEAD
        self.live[slots] = False
        self.n_alive -= slots.shape[0]

    def terminate(self, qids) -> None:
        slots = self.ids.pop(np.ascontiguousarray(qids, dtype=np.int64).reshape(-1))
        self._kill(slots[slots >= 0])
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        if self.n - self.n_alive > max(self.n_alive, 1024):
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.live[: self.n])
        k = keep.shape[0]
        self.qid[:k], self.tau[:k], self.rem[:k] = self.qid[keep], self.tau[keep], self.rem[keep]
        self.rep[:k] = self.rep[keep]
        self.lo[:, :k], self.hi[:, :k] = self.lo[:, keep], self.hi[:, keep]
        self.live[:k] = True
        self.live[k:] = False
        self.n = k
        self.ids.put(self.qid[:k], np.arange(k, dtype=np.int64))

    def _push_raw(self, pts, w):
        if w.shape[0] == 0 or self.n_alive == 0:
            return _EMPTY_I.copy(), _EMPTY_I.copy()
        pt = np.ascontiguousarray(pts.T)
        out_pos = np.empty(self.n_alive, np.int64)
        out_off = np.empty(self.n_alive, np.int64)
        kern = {1: K.scan_push_1d, 2: K.scan_push_2d}.get(self.dim, K.scan_push_nd)
        cnt, out_pos, out_off = kern(self.lo, self.hi, self.rem, self.rep, self.n, pt, w, out_pos, out_off)
        return self._finish(out_pos[:cnt], out_off[:cnt].copy())

    def _finish(self, pos, off):
        """Maturities (slots, offsets) -> sorted (qids, offsets); one-shot slots die."""
        qids = self.qid[pos]
        once = self.rep[pos] == 0
        if not once.all():
            pos, gone = pos[once], qids[once]
        else:
            gone = qids
        if pos.shape[0]:
            self.live[pos] = False
            self.n_alive -= pos.shape[0]
            self.ids.pop(gone)
        q, o = _sorted_out([qids], [off])
        self._maybe_compact()
        return q, o

    def alive(self) -> int:
        return self.n_alive

    def _alive_arrays(self):
        m = np.flatnonzero(self.live[: self.n])
        return self.qid[m], self.lo[:, m].T, self.hi[:, m].T, self.tau[m], self.rem[m], self.rep[m]


# --------------------------------------------------------------------------------------------
# logarithmic method over static stabbing structures
# --------------------------------------------------------------------------------------------


class _Level:
    """One static structure: its queries (in the structure's position order) and counters."""

    uid: int

    def __init__(self, qid, lo, hi, tau, rem, rep) -> None:
        self.qid, self.lo, self.hi, self.tau, self.rem, self.rep = qid, lo, hi, tau, rem, rep
        self.live = np.ones(qid.shape[0], np.bool_)
        self.alive = qid.shape[0]

    @property
    def size(self) -> int:
        return self.qid.shape[0]

    def stab(self, pts, w, out_pos, out_off) -> int:
        raise NotImplementedError


class _ITLevel(_Level):
    """Static 1D centred interval tree; counters in left-list order (see itree_push)."""

    def __init__(self, qid, lo, hi, tau, rem, rep) -> None:
        k = qid.shape[0]
        root, center, lch, rch, ms, Lval, Litem, Hval, Hitem = K.itree_build(
            np.array([0, k], np.int64), np.ascontiguousarray(lo[:, 0]), np.ascontiguousarray(hi[:, 0])
        )
        perm = Litem.astype(np.int64)
        inv = np.empty(k, np.int32)
        inv[perm] = np.arange(k, dtype=np.int32)
        super().__init__(qid[perm], lo[perm], hi[perm], tau[perm], rem[perm].copy(), rep[perm].copy())
        self.root = int(root[0]) if k else -1
        self.center, self.lch, self.rch, self.ms = center, lch, rch, ms
        self.Lval, self.Hval, self.Hpos = Lval, Hval, inv[Hitem]

    def stab(self, pts, w, out_pos, out_off) -> int:
        return K.itree_push(self.root, self.center, self.lch, self.rch, self.ms, self.Lval, self.Hval,
                            self.Hpos, self.rem, self.rep, np.ascontiguousarray(pts[:, 0]), w, out_pos, out_off)


class _SILevel(_Level):
    """Static Seg-Intv structure: bottom-up segment tree on x over the elementary slots of the
    distinct x endpoints; node v holds an interval tree (root sroot[v]) on the y-ranges of the
    queries having v as a canonical node."""

    def __init__(self, qid, lo, hi, tau, rem, rep) -> None:
        # positions in (ylo, xlo) order: within a node the y-lists then touch counters in
        # increasing (left list) or mostly decreasing (right list) position order
        perm = np.lexsort((lo[:, 0], lo[:, 1]))
        super().__init__(qid[perm], lo[perm], hi[perm], tau[perm], rem[perm], rep[perm])
        lo, hi = self.lo, self.hi
        xlo, xhi = np.ascontiguousarray(lo[:, 0]), np.ascontiguousarray(hi[:, 0])
        self.E = np.unique(np.concatenate([xlo, xhi]))
        self.seg_size = 1 << int(2 * self.E.shape[0] + 1).bit_length()
        gstart, pair_q = K.segtree_pairs(self.E, xlo, xhi, self.seg_size)
        ylo, yhi = lo[:, 1][pair_q], hi[:, 1][pair_q]
        sroot, center, lch, rch, ms, Lval, Litem, Hval, Hitem = K.itree_build(gstart, ylo, yhi)
        self.sroot, self.center, self.lch, self.rch, self.ms = sroot, center, lch, rch, ms
        self.Lval, self.Lq, self.Hval, self.Hq = Lval, pair_q[Litem], Hval, pair_q[Hitem]

    def stab(self, pts, w, out_pos, out_off) -> int:
        return K.seg_intv_push(self.E, self.seg_size, self.sroot, self.center, self.lch, self.rch,
                               self.ms, self.Lval, self.Lq, self.Hval, self.Hq, self.rem, self.rep,
                               np.ascontiguousarray(pts[:, 0]), np.ascontiguousarray(pts[:, 1]), w,
                               out_pos, out_off)


class _LogMethod(_Base):
    """Logarithmic method over ``_level_cls`` (see the module docstring)."""

    _level_cls: type[_Level]
    _dims: tuple[int, ...] = ()

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        if self._dims and self.dim not in self._dims:
            raise Unsupported(f"{self.name} handles only d in {self._dims}, not d={self.dim}")
        self.ids = IdMap()
        self.levels: list[_Level] = []
        self.by_uid: dict[int, _Level] = {}
        self._next_uid = 0
        self.n_alive = 0

    def _add_level(self, qid, lo, hi, tau, rem, rep) -> None:
        lev = self._level_cls(qid, lo, hi, tau, rem, rep)
        lev.uid = self._next_uid
        self._next_uid += 1
        self.levels.append(lev)
        self.by_uid[lev.uid] = lev
        self.ids.put(lev.qid, (np.int64(lev.uid) << np.int64(32)) + np.arange(lev.size, dtype=np.int64))

    def _merge(self, levels: list[_Level]) -> None:
        parts = []
        for lev in levels:
            self.levels.remove(lev)
            del self.by_uid[lev.uid]
            m = np.flatnonzero(lev.live)
            parts.append((lev.qid[m], lev.lo[m], lev.hi[m], lev.tau[m], lev.rem[m], lev.rep[m]))
        cols = [np.concatenate([p[i] for p in parts]) for i in range(6)]
        if cols[0].shape[0]:
            self._add_level(*cols)

    def _maintain(self) -> None:
        for lev in [lv for lv in self.levels if lv.alive == 0]:
            self.levels.remove(lev)
            del self.by_uid[lev.uid]
        dead = sum(lv.size - lv.alive for lv in self.levels)
        if dead > max(self.n_alive, 1024):
            self._merge(list(self.levels))
            return
        while len(self.levels) >= 2 and self.levels[-2].alive < 2 * self.levels[-1].alive:
            self._merge(self.levels[-2:])

    def _renormalise(self) -> None:
        for lev in self.levels:
            lev.rem[~lev.live] = K.DEAD

    def _insert(self, qids, lo, hi, tau, rem, rep) -> None:
        self._add_level(qids, lo, hi, tau, rem, rep)
        self.n_alive += qids.shape[0]
        self._maintain()

    def terminate(self, qids) -> None:
        h = self.ids.pop(np.ascontiguousarray(qids, dtype=np.int64).reshape(-1))
        h = h[h >= 0]
        if h.shape[0] == 0:
            return
        uids, pos = h >> 32, h & 0xFFFFFFFF
        for u in np.unique(uids):
            lev = self.by_uid[int(u)]
            p = pos[uids == u]
            lev.rem[p] = K.DEAD
            lev.live[p] = False
            lev.alive -= p.shape[0]
        self.n_alive -= h.shape[0]
        self._maintain()

    def _push_raw(self, pts, w):
        if w.shape[0] == 0 or self.n_alive == 0:
            return _EMPTY_I.copy(), _EMPTY_I.copy()
        qs, offs, gone = [], [], []
        for lev in self.levels:
            out_pos = np.empty(lev.alive, np.int64)
            out_off = np.empty(lev.alive, np.int64)
            cnt, out_pos, out_off = lev.stab(pts, w, out_pos, out_off)
            if cnt:
                pos = out_pos[:cnt]
                qs.append(lev.qid[pos])
                offs.append(out_off[:cnt].copy())
                pos = pos[lev.rep[pos] == 0]  # one-shot queries die, re-arming ones stay
                if pos.shape[0]:
                    lev.live[pos] = False
                    lev.alive -= pos.shape[0]
                    gone.append(lev.qid[pos])
        q, o = _sorted_out(qs, offs)
        if gone:
            g = np.concatenate(gone)
            self.ids.pop(g)
            self.n_alive -= g.shape[0]
            self._maintain()
        return q, o

    def alive(self) -> int:
        return self.n_alive

    def _alive_arrays(self):
        parts = [(lv.qid[lv.live], lv.lo[lv.live], lv.hi[lv.live], lv.tau[lv.live], lv.rem[lv.live], lv.rep[lv.live])
                 for lv in self.levels]
        if not parts:
            d = self.dim
            return (_EMPTY_I, np.zeros((0, d)), np.zeros((0, d)), _EMPTY_I, _EMPTY_I, _EMPTY_I)
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(6))


class IntervalTreeStabbing(_LogMethod):
    """1D stabbing with a static interval tree + logarithmic method. O(log m + k) per element."""

    name = "interval_tree"
    _level_cls = _ITLevel
    _dims = (1,)


class SegIntvStabbing(_LogMethod):
    """2D stabbing with a segment tree of interval trees + logarithmic method.
    O(log^2 m + k) per element, O(m log m) space."""

    name = "seg_intv"
    _level_cls = _SILevel
    _dims = (2,)


# --------------------------------------------------------------------------------------------
# R-tree (rtree package)
# --------------------------------------------------------------------------------------------


class RTreeStabbing(Scan):
    """Stabbing through an ``rtree.index.Index`` (libspatialindex R*-tree, ids = our slots).
    Query arrays and counters live in Scan's slot arrays; the index only answers stabbing."""

    name = "rtree"
    _ids_budget = 1 << 22  # ids per intersection_v call (bounds its result buffer)

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        from rtree import index

        self._index_mod = index
        self.idx = None
        self._idim = max(2, self.dim)  # libspatialindex R-trees need >= 2 dimensions
        self._big = 0.25 * 10.0 ** (280 / self._idim)  # (2*big)**d stays finite
        self._verify = False

    def _boxes(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index boxes: libspatialindex crashes on infinite coordinates (and its R*-tree
        heuristics need finite areas), so coordinates are clamped to +-big; hits are then
        verified against the exact ranges (clamping is monotone: the answer is a superset)."""
        k = slots.shape[0]
        lo, hi = self.lo[:, slots].T, self.hi[:, slots].T
        if k and (np.abs(lo).max() > self._big or np.abs(hi).max() > self._big):
            self._verify = True
        mins = np.zeros((k, self._idim))
        maxs = np.zeros((k, self._idim))
        mins[:, : self.dim] = np.clip(lo, -self._big, self._big)
        maxs[:, : self.dim] = np.clip(hi, -self._big, self._big)
        return mins, maxs

    def _rebuild(self) -> None:
        self._compact()
        p = self._index_mod.Property()
        p.dimension = self._idim
        self._verify = False
        if self.n == 0:
            self.idx = self._index_mod.Index(properties=p)
            return
        slots = np.arange(self.n, dtype=np.int64)
        mins, maxs = self._boxes(slots)
        self.idx = self._index_mod.Index((slots, mins, maxs), properties=p)

    def _insert(self, qids, lo, hi, tau, rem, rep) -> None:
        a = self.n
        alive_before = self.n_alive
        super()._insert(qids, lo, hi, tau, rem, rep)
        if self.idx is None or qids.shape[0] >= max(64, alive_before):
            self._rebuild()
            return
        mins, maxs = self._boxes(np.arange(a, self.n, dtype=np.int64))
        for i, s in enumerate(range(a, self.n)):
            self.idx.insert(s, np.concatenate([mins[i], maxs[i]]))

    def _maybe_compact(self) -> None:
        if self.n - self.n_alive > max(self.n_alive, 1024):
            self._rebuild()

    def _push_raw(self, pts, w):
        n = w.shape[0]
        if n == 0 or self.n_alive == 0:
            return _EMPTY_I.copy(), _EMPTY_I.copy()
        box = np.zeros((n, self._idim))
        box[:, : self.dim] = np.clip(pts, -self._big, self._big)
        verify = self._verify or bool(np.abs(pts).max() > self._big)
        out_pos = np.empty(self.n_alive, np.int64)
        out_off = np.empty(self.n_alive, np.int64)
        step = max(1, self._ids_budget // max(1, self.n))
        cnt = 0
        for a in range(0, n, step):
            b = min(n, a + step)
            ids, counts = self.idx.intersection_v(box[a:b], box[a:b])
            cnt, out_pos, out_off = K.apply_hits(ids, counts.astype(np.int64), self.rem, self.rep, w[a:b], a,
                                                 out_pos, out_off, cnt, verify, self.lo, self.hi, pts)
        return self._finish(out_pos[:cnt], out_off[:cnt].copy())

