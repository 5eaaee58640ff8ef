"""DT: range thresholding on streams by distributed tracking (Qiao, Gan, Tao, SIGMOD 2016,
paper 000, Theorem 1).

A query q = (closed box R_q, threshold tau_q) matures at the first element at which the total
weight of the elements in R_q since its registration reaches tau_q. Instead of probing queries
per element, DT indexes the queries and lets each element touch only O(log^d m) shared counters;
a query is touched only when one of its O(log^d m) counters has moved by a large "slack".

How the paper maps onto this module (kernels in ``_kernels.py``):

* §4 endpoint tree. A balanced binary tree on the distinct endpoint keys of the queries, leaf i
  having jurisdiction ``[K[i], K[i+1])``; closed ranges use the infinitesimal trick
  ``[x, y] = [x, y + eps)`` with eps = one ulp (order-preserving float->int64 keys,
  :func:`_kernels.float_keys`). Every node u keeps a counter c(u) (int64 sum of weights);
  an element descends one root-to-leaf path and adds its weight to the counters on it.
  Canonical node set U_q: the minimal set of nodes with disjoint jurisdictions whose union is
  R_q (at most 2 per level). Build O(m log m); O(log m) per element.
* §3.2 / §7 distributed tracking, one instance per query, participants = U_q (h = |U_q|),
  coordinator = q. If tau <= DIRECT h (8h), direct mode (every counter change is reported).
  Otherwise a round whose slacks sum to at most tau/2, split by rate: the unit
  floor(tau / (2 (1 + SHARE) h)) (SHARE = 3), participant u's slack (1 + s_u) units with
  shares s_u ~ SHARE h sqrt(c(u)) / sum sqrt(c) summing to SHARE h (c(u) counts since the
  build: u's rate; sqrt(rate) minimises the expected number of signals; every slack is >= one
  unit, a quarter of the paper's floor(tau/(2h))). Node u signals whenever c(u) has grown by its
  slack since its last signal, several signals per weighted increment (§7), each reporting
  (1 + s_u) units; when the coordinator has (1 + SHARE) h units it announces the round's end
  (before that, W < reported + slacks <= tau: no maturity is missed), collects the exact sum W
  of its counters (maturity if W >= tau) and starts the next round with tau reduced by W (W >=
  the reported units, ~tau/2, so O(log tau) rounds; every signal reports >= 1 unit, so <=
  (1 + SHARE) h signals per round: O(h log tau) in all, as in the paper). The element at
  which W first reaches tau always ends a round or is seen in direct mode, so the maturity
  offset is exact. A new structure has no counts yet: its first round is split by the counts of
  the last ``SAMPLE`` elements pushed, run through its trees at build (``_Structure``); equal
  shares without a sample. (fig3 1D, m = 1M: 27.0M signals with the paper's equal slacks, 17.8M
  split by rate, 11.2M with the sampled first round.)
* §4 heaps. Each node u keeps a priority queue H(u) of sigma_q(u) = lambda_q + c-bar_q(u) over
  the queries having u in U_q, laid out at build time in one flat pool (canonical sets are
  fixed); its minimum is cached next to the counter, so a counter change inspects one key and
  pays O(log m) only per signal or round restart (§4 steps 1-3, bound (6)). H(u) is an
  array-embedded 4-ary tournament tree (a min-heap whose leaves never move, so no position index
  is needed to re-key or remove any entry: O(log_4 |H(u)|) per update).
  Maturity removes the query's h entries eagerly, O(h log m); TERMINATE is O(1) by lazy
  deletion (a dead entry is dropped when it surfaces at its queue top, at most once, or vanishes
  with the next global rebuild, which bounds the dead entries by the alive ones).
* Exact offsets with block processing. ``push`` runs inside numba over groups of 16 elements:
  phase A finds every element's leaves in all trees (descents of independent elements and trees
  interleaved so their cache misses overlap; split keys never change), phase B then applies the
  elements strictly in order (counters along the paths, queue tops, signals, rounds,
  maturities). An element touches at most one node of any query's canonical set (the regions
  are disjoint), so the order of updates within an element is immaterial and every maturity is
  reported at exactly the element where W(q) first reaches tau_q.
* §4 global rebuilding. When the alive queries of a structure fall to half of those it was built
  with, it is rebuilt on the alive ones with thresholds reduced by their exact weights
  (``stats["rebuilds"]``), so space stays O(m_alive log^d m_alive). Done per structure of the
  logarithmic method (each structure is the §4 structure on its own queries), and checked
  after TERMINATE and after every block of ``CHUNK`` elements of a push. The new structure is
  built in the memory of the old one (its arrays are released to a pool first; a buffer is
  reused only if at most ``REUSE_SLACK`` times too large, so the held space stays
  O(m_alive log^d m_alive)).
* Re-arming queries (``repeat``, not in the paper). A query registered with a re-arm threshold
  r keeps its entries when it matures: at the maturing element (found exactly, as above) its
  exact counter sum S is read (O(h), as at a round end), its target becomes S + r (weight 0
  from the next element on; the overshoot is dropped) and its next round starts at once, direct
  mode or slacks split by rate. This happens inside ``push_dt`` for every query maturing at
  that element (no Python call per maturity), and costs what a round end costs, O(h log m);
  a re-arming query is never removed by a maturity, only by TERMINATE. A push may hold many
  maturities of one query: the kernel stops before an element whose maturities might not fit
  in the output buffers, and is called again from there once they are read.
* Weights and thresholds up to 2**53 (the contract's range, ``_limits``) are exact however many
  elements arrive: a push is cut into chunks of total weight <= 2**60, and a structure whose
  counters (bounded by the weight pushed through it since its build) could pass 2**61 with the
  next chunk is first rebuilt on its queries' exact remaining thresholds, which restarts its
  counters at 0 (``stats["renormalised"]``; never with realistic weights).
* §5 logarithmic method. Structures T_1..T_g with m_alive(T_i) <= 2^(i-1) (P3), each alive
  query in exactly one (P2), g = O(log m) (P1). REGISTER of a batch of k queries (k = 1 is the
  paper's rule (8)) takes the smallest j with sum_{i<=j} m_alive(T_i) + k <= 2^(j-1), collects
  the alive queries of T_1..T_j (thresholds reduced by their weights) plus the batch, and builds
  T_j from scratch (``stats["merges"]`` counts the builds that absorbed older queries). Every
  element descends all structures: O(log^(d+1) m) per element, O(log^2 m) amortized per
  registration for rebuilding.
* §6 d dimensions. Layered endpoint trees: every node u of the dimension-i tree with a nonempty
  Q(u) (queries having u canonical) owns a dimension-(i+1) tree on the endpoints of Q(u); the
  participants of q are its canonical nodes in the last-dimension trees (their regions partition
  R_q, h = O(log^d m)). Built level by level, one bucket fill in global key order per dimension.
  For d >= 2 the last-dimension trees are *bucketed* (``_dt_bucket``, ``BUCKET`` = B endpoints
  per bucket; not in the paper): a tree stops at buckets of <= B endpoints, and the <= 2 partial
  buckets of a query's range become private participants with their own exact counters (an element
  checks the <= B pieces of the bucket it reaches, whole chunks of 32 at once by a lazy tag).
  This replaces the ~log2 B (up to 2 log2 B) canonical nodes below the bucket level of each
  secondary decomposition by <= 2 entries (49 bytes each, in their rows): fig3 2D at m = 100k,
  h 128.7 -> 88.2 (B = 32) / 56.7 (B = 256), index 0.534 -> 0.308 / 0.214 GiB.

Bounds (Theorem 1, d constant): total time O(n log^(d+1) m + m log^(d+1) m log tau_max) for n
elements and m registrations; space O(m_alive log^d m_alive) words. With bucketing (d >= 2) an
element also pays O(B log^(d-1) m) private checks per structure, and h = O(log^(d-1) m (log(m/B)
+ 2)) (the message bound O(h log tau) per query holds with this h: the private pieces are
participants with exact counters).

``DT(dim, floor_only=True)`` runs only the counter-maintenance pass on push (nothing matures):
the benchmark's cost floor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .. import jit
from . import ThresholdOperator, repeat_array
from . import _kernels as K
from ._dt_pool import REUSE_SLACK, _madvise_hugepage  # noqa: F401 (REUSE_SLACK: API)
from ._dt_structure import _Structure
from ._limits import weight_cuts

#: elements processed per kernel call inside one push; rebuild conditions are checked between
CHUNK = 1 << 16
#: thresholds above this are treated as this (see ``register``)
TAU_CAP = 1 << 62
#: a structure whose counters could exceed this with the next chunk is rebuilt first (counters
#: <= total weight since build; keys sigma = c + lambda < COUNTER_LIMIT + TAU_CAP < 2**63)
COUNTER_LIMIT = float(1 << 61)
#: a structure is rebuilt when its alive queries fall to 1/REBUILD of those it was built with
REBUILD = 2
#: endpoints per bucket of the last-dimension trees for d >= 2 (``_dt_bucket``; 0 = not bucketed)
BUCKET = 2048
#: transparent huge pages for the structures' arrays: off, faulting them in under the usual THP
#: defrag policy cost more than the TLB misses saved (fig3 1D m = 1M: register 1.46-1.71 ->
#: 0.67-0.86 s; 2D build m = 200k 5.4 -> 3.5 s CPU; docs/experiments/threshold_dt_speed.md)
HUGEPAGES = False

_STAT_KEYS = ("rebuilds", "merges", "builds", "renormalised")

_warm = False


def _warmup() -> None:
    """Load (or compile) every kernel once per process on a tiny 2-d instance, so that the first
    operator call of a run is not charged the ~0.5 s of loading numba's cache."""
    global _warm
    if _warm:
        return
    _warm = True
    op = DT(2, _warm=False)
    op.register(np.arange(4), np.zeros((4, 2)), np.ones((4, 2)), np.array([1, 2, 50, 50]))
    op.push(np.full((3, 2), 0.5), np.ones(3, dtype=np.int64))
    op.terminate([2])
    jit.mark_warm("threshold.dt", kernel_sources())


def kernel_sources() -> list[str]:
    here = Path(__file__).parent  # the files of DT's kernels (numba caches each by its file)
    return [str(p) for p in sorted(here.glob("_dt_*.py"))] + [str(here / "_kernels.py"), __file__]


def is_compiled() -> bool:  # loaded here or in the numba cache: no ~1 min compile (threshold.auto)
    return _warm or jit.is_warm("threshold.dt", kernel_sources())


#: elements remembered for the rate estimate of a new structure's first round
SAMPLE = 4096
class DT(ThresholdOperator):
    """Distributed-tracking RTS operator (see module docstring). Extra API: :meth:`nbytes` (bytes
    held by the index) and the ``stats`` dict: ``rebuilds`` (global rebuilds after halving),
    ``merges`` (logarithmic-method builds that absorbed older structures), ``builds`` (all
    constructions), ``signals``, ``rounds`` (completed rounds), ``matured``, ``direct`` (switches
    to direct mode), ``purged`` (dead entries dropped lazily), ``structures`` (non-empty T_i)."""

    name = "dt"

    def __init__(self, dim: int, *, floor_only: bool = False, _warm: bool = True) -> None:
        super().__init__(dim)
        if self.dim < 1:
            raise ValueError("dim must be >= 1")
        if _warm:
            _warmup()
        self.floor_only = bool(floor_only)
        self._trees: list[_Structure | None] = []
        # qid -> structure << 40 | local index, for small non-negative qids (the engine's are
        # dense); entries may be stale (checked against the structure's qids); None = sparse qids
        self._where: np.ndarray | None = np.full(0, -1, dtype=np.int64)
        self._st = np.zeros(K.N_STATS, dtype=np.int64)
        self._counts = dict.fromkeys(_STAT_KEYS, 0)
        # the last <= SAMPLE elements pushed (keys, weights): rates for a new structure's split
        self._sample = (np.empty((0, self.dim), dtype=np.int64), np.empty(0, dtype=np.int64))

    # ---------------------------------------------------------------- introspection
    @property
    def stats(self) -> dict[str, int]:
        s = dict(self._counts)
        s["signals"] = int(self._st[K.ST_SIGNALS])
        s["rounds"] = int(self._st[K.ST_ROUNDS])
        s["matured"] = int(self._st[K.ST_MATURED])
        s["direct"] = int(self._st[K.ST_DIRECT])
        s["purged"] = int(self._st[K.ST_PURGED])
        s["structures"] = sum(t is not None for t in self._trees)
        return s

    def nbytes(self) -> int:
        """Bytes held by the index (all structures)."""
        return sum(t.nbytes() for t in self._trees if t is not None)

    def alive(self) -> int:
        return sum(t.n_alive for t in self._trees if t is not None)

    # ---------------------------------------------------------------- register / terminate
    def _install(self, j: int, t: _Structure | None) -> None:
        """Put structure ``t`` at level j of the logarithmic method and index its qids."""
        while len(self._trees) <= j:
            self._trees.append(None)
        self._trees[j] = t
        if t is None or self._where is None or t.qids.shape[0] == 0:
            return
        lo, hi = int(t.qsorted[0]), int(t.qsorted[-1])
        if lo < 0 or hi >= max(1 << 20, 8 * (self.alive() + t.qids.shape[0])):
            self._where = None  # sparse or negative qids: binary search from now on
            return
        if hi >= self._where.shape[0]:
            grown = np.full(max(hi + 1, 2 * self._where.shape[0]), -1, dtype=np.int64)
            grown[: self._where.shape[0]] = self._where
            self._where = grown
        self._where[t.qids] = (np.int64(j) << 40) | np.arange(t.qids.shape[0], dtype=np.int64)

    def _find(self, qids: np.ndarray):
        """Yield (structure index, structure, local indices) of the alive queries among ``qids``."""
        if self._where is not None:
            ok = (qids >= 0) & (qids < self._where.shape[0])
            q = qids[ok] if not ok.all() else qids
            v = self._where[q]
            v, q = v[v >= 0], q[v >= 0]
            js, locs = v >> 40, v & ((1 << 40) - 1)
            for j in np.unique(js) if js.shape[0] else ():
                t = self._trees[int(j)] if j < len(self._trees) else None
                if t is None or t.n_alive == 0:
                    continue
                m = js == j
                lj, qj = locs[m], q[m]
                inb = lj < t.qids.shape[0]
                lj, qj = lj[inb], qj[inb]
                lj = lj[t.qids[lj] == qj]  # drop stale entries
                yield int(j), t, lj[t.qalive[lj] != 0]
            return
        for j, t in enumerate(self._trees):
            if t is None or t.n_alive == 0:
                continue
            locs = t.locate(qids)[1]
            yield j, t, locs[t.qalive[locs] != 0]

    def _alive_mask(self, qids: np.ndarray) -> np.ndarray:
        alive = np.concatenate([t.qids[locs] for _, t, locs in self._find(qids)] or [np.empty(0, np.int64)])
        return np.isin(qids, alive)

    def register(self, qids, lo, hi, tau, repeat=None) -> None:
        qids = np.asarray(qids, dtype=np.int64).ravel()
        k, d = qids.shape[0], self.dim
        if k == 0:
            return
        lo = np.asarray(lo, dtype=np.float64).reshape(k, d)
        hi = np.asarray(hi, dtype=np.float64).reshape(k, d)
        tau = np.asarray(tau, dtype=np.int64).ravel()
        if tau.shape[0] != k:
            raise ValueError("tau must have one threshold per query")
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise ValueError("range bounds must not be NaN")
        if (lo > hi).any():
            raise ValueError("inverted range: lo must be <= hi")
        if (tau < 1).any():
            raise ValueError("thresholds must be >= 1")
        # keys sigma = c + lambda stay below 2**63 (counters are renormalised below 2**61, see
        # push); the contract's thresholds (<= 2**53) are never clamped
        tau = np.minimum(tau, TAU_CAP)
        rep = np.minimum(repeat_array(repeat, k), TAU_CAP)
        # as in the oracle: registering an alive qid replaces it (its weight restarts at 0), and
        # within one batch the last occurrence of a qid wins
        uq, last = np.unique(qids[::-1], return_index=True)
        if uq.shape[0] < k:
            keep = np.sort(k - 1 - last)
            qids, lo, hi, tau, rep = qids[keep], lo[keep], hi[keep], tau[keep], rep[keep]
            k = qids.shape[0]
        if self._alive_mask(uq).any():
            self.terminate(uq)
        parts = [(qids, K.float_keys(lo), K.float_keys(hi) + 1, tau, rep)]
        # §5 logarithmic method, rule (8) generalized to a batch of k
        tot, j = 0, 0
        while True:
            if j < len(self._trees) and self._trees[j] is not None:
                tot += self._trees[j].n_alive
            if tot + k <= (1 << j):
                break
            j += 1
        merged = False
        pool: list[np.ndarray] = []
        for i in range(min(j + 1, len(self._trees))):
            t = self._trees[i]
            if t is not None and t.n_alive > 0:
                parts.append(t.export_alive())
                merged = True
            if t is not None:
                t.release(pool)
            self._trees[i] = None
        self._install(j, self._build(parts, pool))
        self._counts["merges"] += int(merged)

    def _rebuild(self, i: int) -> None:
        """Rebuild structure i on its alive queries and their exact remaining thresholds, in the
        memory of the old one (§4 global rebuilding)."""
        t = self._trees[i]
        part = t.export_alive() if t.n_alive > 0 else None
        pool: list[np.ndarray] = []
        t.release(pool)
        self._trees[i] = None
        self._install(i, self._build([part], pool) if part is not None else None)

    def _build(self, parts, pool: list[np.ndarray] | None = None) -> _Structure:
        if len(parts) == 1:
            qs, klo, khi, rem, rep = parts[0]
        else:
            qs, klo, khi, rem, rep = (np.concatenate([p[i] for p in parts]) for i in range(5))
        self._counts["builds"] += 1
        prev = _madvise_hugepage(HUGEPAGES)
        try:
            return _Structure(qs, np.ascontiguousarray(klo), np.ascontiguousarray(khi), np.ascontiguousarray(rem), pool,
                              self._sample, rep, BUCKET)
        finally:
            _madvise_hugepage(prev)

    def _maybe_rebuild(self, i: int) -> None:
        t = self._trees[i]
        if t is None or REBUILD * t.n_alive > t.n_built:
            return
        self._counts["rebuilds"] += 1
        self._rebuild(i)

    def terminate(self, qids) -> None:
        qids = np.asarray(qids, dtype=np.int64).ravel()
        if qids.shape[0] == 0:
            return
        for i, t, locs in list(self._find(qids)):
            if locs.shape[0] == 0:
                continue
            t.n_alive -= K.kill(locs, t.qr, t.qalive)  # duplicates are killed once
            self._maybe_rebuild(i)

    # ---------------------------------------------------------------- elements
    def push(self, points, weights) -> tuple[np.ndarray, np.ndarray]:
        w = np.asarray(weights, dtype=np.int64).ravel()
        n = w.shape[0]
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        if n == 0:
            return empty
        pts = np.asarray(points, dtype=np.float64).reshape(n, self.dim)
        if (w < 1).any():
            raise ValueError("weights must be >= 1")
        if not any(t is not None for t in self._trees):
            return empty
        xk = K.float_keys(pts)
        bad = np.isnan(pts).any(axis=1)
        if bad.any():  # a NaN coordinate lies in no range
            w = w.copy()
            w[bad] = 0
        sx, sw = self._sample  # weights clipped to 2**48: the sample's counts stay below 2**60
        if n >= SAMPLE:
            self._sample = (np.ascontiguousarray(xk[-SAMPLE:]), np.minimum(w[-SAMPLE:], 1 << 48))
        else:
            keep = min(SAMPLE - n, sw.shape[0])
            self._sample = (np.concatenate([sx[sx.shape[0] - keep :], xk]),
                            np.concatenate([sw[sw.shape[0] - keep :], np.minimum(w, 1 << 48)]))
        outq, outo = [], []
        st = self._st
        chunks = [(c0, min(b, c0 + CHUNK)) for a, b in weight_cuts(w) for c0 in range(a, b, CHUNK)]
        for c0, c1 in chunks:
            xc, wc = xk[c0:c1], w[c0:c1]
            cw = float(wc.sum(dtype=np.float64))
            for i in range(len(self._trees)):
                t = self._trees[i]
                if t is None:
                    continue
                if t.wsum + cw > COUNTER_LIMIT:
                    # node counters only grow: rebuild on the exact remaining thresholds (they
                    # restart at 0) before any could leave int64 (weights up to 2**53)
                    self._counts["renormalised"] += 1
                    self._rebuild(i)
                    t = self._trees[i]
                    if t is None:
                        continue
                t.wsum += cw
                pos, gone = 0, 0
                while pos < c1 - c0:
                    cnt, pos = K.push_dt(xc, wc, t.NR, t.tbase, t.tL, t.tH, t.tdim, t.PH, t.P0, t.tt, t.qn, t.qr,
                                         t.qalive, t.out_q, t.out_o, st, self.floor_only, t.rep, pos, t.nrep)
                    if cnt:
                        loc = t.out_q[:cnt]
                        outq.append(t.qids[loc])
                        outo.append(t.out_o[:cnt] + c0)
                        gone += cnt if t.nrep == 0 else int(np.count_nonzero(t.rep[loc] == 0))
                if gone:  # one-shot queries are removed, re-arming ones stay
                    t.n_alive -= gone
                    self._maybe_rebuild(i)
        if not outq:
            return empty
        q = np.concatenate(outq)
        o = np.concatenate(outo)
        order = np.lexsort((q, o))
        return q[order], o[order]

    def export(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(qids, lo[k,d], hi[k,d], remaining thresholds tau - W, re-arm thresholds) of the alive
        queries (exact weights read from the counters): registering them in any operator
        continues every query exactly (how ``auto`` switches algorithms)."""
        s = self.state()
        return s["qids"], s["lo"], s["hi"], s["tau"], s["repeat"]

    # ---------------------------------------------------------------- snapshots
    def state(self) -> dict[str, Any]:
        """Pickle-free state: the alive queries with their remaining thresholds (tau minus the
        weight already seen) and the structure holding each; restoring rebuilds the structures,
        which yields the same future outputs."""
        qs, los, his, rems, tix, reps = [], [], [], [], [], []
        for i, t in enumerate(self._trees):
            if t is None or t.n_alive == 0:
                continue
            q, klo, khi, rem, rp = t.export_alive()
            reps.append(rp)
            qs.append(q)
            los.append(K.keys_to_float(klo))
            his.append(K.keys_to_float(khi - 1))
            rems.append(rem)
            tix.append(np.full(q.shape[0], i, dtype=np.int64))
        d = self.dim

        def cat(xs, shape, dtype):
            return np.concatenate(xs) if xs else np.empty(shape, dtype=dtype)

        return {
            "dim": d,
            "floor_only": self.floor_only,
            "qids": cat(qs, (0,), np.int64),
            "lo": cat(los, (0, d), np.float64),
            "hi": cat(his, (0, d), np.float64),
            "tau": cat(rems, (0,), np.int64),
            "structure": cat(tix, (0,), np.int64),
            "repeat": cat(reps, (0,), np.int64),
            "counts": dict(self._counts),
            "kernel_stats": self._st.copy(),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> DT:
        op = cls(int(s["dim"]), floor_only=bool(s.get("floor_only", False)))
        d = op.dim
        qids = np.asarray(s["qids"], dtype=np.int64)
        lo = np.asarray(s["lo"], dtype=np.float64).reshape(-1, d)
        hi = np.asarray(s["hi"], dtype=np.float64).reshape(-1, d)
        tau = np.asarray(s["tau"], dtype=np.int64)
        tix = np.asarray(s["structure"], dtype=np.int64)
        rep = np.asarray(s.get("repeat", np.zeros(qids.shape[0], np.int64)), dtype=np.int64)
        for i in np.unique(tix):
            m = tix == i
            part = (qids[m], K.float_keys(lo[m]), K.float_keys(hi[m]) + 1, tau[m])
            op._install(int(i), _Structure(*part, rep=rep[m], bucket=BUCKET))
        op._counts.update({k: int(v) for k, v in dict(s.get("counts", {})).items() if k in op._counts})
        if "kernel_stats" in s:
            op._st[:] = np.asarray(s["kernel_stats"], dtype=np.int64)
        return op
