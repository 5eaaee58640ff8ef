"""One quantile structure per column for every rows window: the n-of-N model (paper 004 §2.1, its
ref. [19], Lin et al., ICDE 2004: a query may ask about any of the last n <= N elements) served by
the dyadic level structure of Arasu & Manku (PODS 2004, paper 004's ref. [1]).

Every plain lookup query over a rows window of one column (no notify, no alert, no rank_of; the
engine adapter routes them here, :mod:`.group`) is answered from ONE structure, each with its own
window length W and start: its window after position n is [max(start+1, n-W+1), n].

Structure (kernels and layout: :mod:`._nofn_kernels`). The elements are cut into blocks of B of
them (B a power of two near 1/(2 eps), in [16, 256]; eps the summary epsilon); a closed block is a
*leaf*: its values sorted, with their seqs. Over the blocks, a dyadic tree: the level-l node j
covers blocks [j 2^l, (j+1) 2^l) and keeps the values of their union at the ranks 1, s_l, 2 s_l,
..., 2^l B, with s_l = max(1, floor(2 eps 2^l B)): O(1/eps) samples with *exact* ranks. A node is
built once, when its last block closes, from the exact sorted union of its two children (a binary
counter keeps the union of each level's left node until its sibling completes): O(1) amortized
merge steps per element and level. The leaves of the last Wmax positions (Wmax the largest W
registered; W <= :data:`MAX_ROWS`, larger windows stay on :class:`~.sliding.Sliding`) are kept, and
the nodes over them; the newest block is open (its values unsorted until a lookup sorts them).

A query's window is the in-window elements of the leaf its left end cuts (exact, from the leaf's
seqs), the greedy dyadic cover of the closed blocks after it (at most two nodes per level; a node
missing because its level did not exist when it completed, after a larger W arrived, is replaced
by its children) and the open block's elements inside the window. For a value x, the sum R(x) over
these lists of the rank of their last sample <= x bounds the true count #(<= x) within
[R(x), R(x) + D], D = sum of (largest rank step - 1) over the lists <= 2 eps N (exact lists add 0);
and #(< x) <= R(y) + D, y the sample before x. The answer is the smallest sample x with
R(x) >= max(1, t - floor(D/2)), t = max(1, ceil(phi N)) (a bisection over values, the pivot
halving the list with most samples in play): its rank is within ceil(D/2) <= eps N of t (every
list keeps its minimum, so the clamp at 1 answers the window's minimum), inside the contract's
e N + 1, e = max(eps_q, eps). Positions without element (NaN) move the window and add nothing.
An empty window answers NaN.

Costs: per element O(log B) (the block sort) plus O(L) amortized merge steps, L = log2(Wmax/B)
levels; per lookup O(B) (the cut leaf and open block) plus O(2 L) lists and a bisection of
O(log(L/eps)) probes, each O(L log(1/eps)) (measured: docs/experiments/quantiles_windows.md);
space O(Wmax) (leaves: value, seq, rank) plus O(Wmax) for the pending unions plus
O(Wmax / B * 1/eps) node samples. Sharded mode: ``summary`` merges the cover's lists
(:func:`~vigil.quantiles.merge_summaries`) and prunes the result to rank steps <= 2 eps n (bounded,
O(1/eps + L) tuples).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..arrays import check_increasing, rank_fraction
from ..errors import Unsupported
from . import QuantileOperator
from . import _nofn_kernels as K

MAX_ROWS = 2**20  # the largest window served by the shared structure (space O(Wmax) per column)
_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
_fraction = functools.lru_cache(maxsize=4096)(rank_fraction)  # phi -> (num, den): few distinct phis
_ARRAYS = ("V", "RK", "ls", "blo", "bhi", "nj", "nm", "ng", "acc", "aj", "ov", "os_", "oss")


def block_size(eps: float) -> int:
    """B: the power of two nearest 1/(2 eps), within [16, 256]."""
    return 1 << max(4, min(8, round(math.log2(1.0 / (2.0 * eps)))))


class NofN(QuantileOperator):
    """Rows-window quantile lookups of any window length W <= MAX_ROWS from one structure (module
    doc). ``rows`` is not used (each query brings its window: ``register(..., rows=W)``)."""

    name = "nofn"
    per_query_rows = True  # register takes each query's window

    def __init__(self, eps: float, rows: int | None = None, block: int | None = None) -> None:
        super().__init__(eps, None)
        self.B = int(block or block_size(self.eps))
        self.q: dict[int, tuple[float, float, int, int]] = {}  # qid -> (phi, eps_q, start, W)
        self.row: dict[int, int] = {}  # qid -> its row of the query table (phi, num, den, start, W)
        self.tf = np.empty(16)  # phi
        self.ti = np.empty((4, 16), np.int64)  # num, den (vigil.arrays.rank_fraction), start, W
        self._next = 0  # the table's next free row
        self.meta = np.zeros(K.META_SIZE, np.int64)
        self.meta[K.M_N] = K.NONE
        self.meta[K.M_B] = self.B
        self._alloc(3, 0)

    # ------------------------------------------------------------------ layout
    def _geometry(self, capb: int, L: int) -> tuple[np.ndarray, int, int, int]:
        B = self.B
        lev = np.zeros((K.LV_ROWS, L + 1), np.int64)
        lev[:, 0] = (1, B, capb, 0, 0, 0)
        off, noff, aoff = capb * B, 0, 0
        for lv in range(1, L + 1):
            size = B << lv
            s = max(1, int(2.0 * self.eps * size))
            m = min(size, size // s + 2)
            rg = (capb >> lv) + 2
            lev[:, lv] = (s, m, rg, off, noff, 0)
            off += rg * m
            noff += rg
        for lv in range(L + 1):  # the pending unions of levels < L, then the two carry buffers at L
            lev[K.LV_AOFF, lv] = aoff
            aoff += B << lv
        return lev, off, noff, aoff + (B << L)

    def _alloc(self, capb: int, L: int) -> None:
        B = self.B
        lev, off, noff, asize = self._geometry(capb, L)
        self.lev = lev
        self.V = np.zeros(off + 3 * B)
        self.RK = np.zeros(off + 3 * B, np.int64)
        self.ls = np.zeros(capb * B, np.int64)
        self.blo = np.zeros(capb, np.int64)
        self.bhi = np.zeros(capb, np.int64)
        self.nj = np.full(max(noff, 1), -1, np.int64)
        self.nm = np.zeros(max(noff, 1), np.int64)
        self.ng = np.zeros(max(noff, 1), np.int64)
        self.acc = np.zeros(asize)
        self.aj = np.full(L + 1, -1, np.int64)
        self.ov = np.zeros(B)
        self.os_ = np.zeros(B, np.int64)
        self.oss = np.zeros(B, np.int64)
        m = self.meta
        m[K.M_CAPB], m[K.M_L] = capb, L
        m[K.M_SO], m[K.M_S1], m[K.M_S2] = off, off + B, off + 2 * B
        m[K.M_OSORT] = 0

    def _grow(self, wmax: int) -> None:
        """Room for windows up to ``wmax``: Wmax/B + 3 leaves and the levels 2^l B <= Wmax; a larger
        layout copies the live leaves, nodes and pending unions to their new slots."""
        m, B = self.meta, self.B
        m[K.M_WMAX] = max(int(m[K.M_WMAX]), wmax)
        wmax = int(m[K.M_WMAX])
        capb, L = int(m[K.M_CAPB]), int(m[K.M_L])
        need_b = wmax // B + 3
        need_l = 0
        while (B << (need_l + 1)) <= wmax:
            need_l += 1
        if need_b <= capb and need_l <= L:
            return
        old = {k: getattr(self, k) for k in _ARRAYS}
        old_lev = self.lev
        ncapb, nL = max(capb, need_b + need_b // 4), max(L, need_l)
        self._alloc(ncapb, nL)
        klo, khi = int(m[K.M_KLO]), int(m[K.M_KHI])
        ks = np.arange(klo, khi, dtype=np.int64)
        os_, ns = ks % capb, ks % ncapb
        for a in ("V", "RK"):
            getattr(self, a)[:ncapb * B].reshape(ncapb, B)[ns] = old[a][:capb * B].reshape(capb, B)[os_]
        self.ls.reshape(ncapb, B)[ns] = old["ls"].reshape(capb, B)[os_]
        self.blo[ns], self.bhi[ns] = old["blo"][os_], old["bhi"][os_]
        for lv in range(1, L + 1):
            if khi <= klo:
                break
            j = np.arange(klo >> lv, ((khi - 1) >> lv) + 1, dtype=np.int64)
            s_old, m_, rg_o, po, no = (int(x) for x in old_lev[:5, lv])
            rg_n, pn, nn = (int(x) for x in self.lev[K.LV_RG:K.LV_NOFF + 1, lv])
            ro = j % rg_o
            ok = old["nj"][no + ro] == j
            j, ro = j[ok], ro[ok]
            rn = j % rg_n
            self.nj[nn + rn], self.nm[nn + rn], self.ng[nn + rn] = j, old["nm"][no + ro], old["ng"][no + ro]
            for a in ("V", "RK"):
                src = old[a][po:po + rg_o * m_].reshape(rg_o, m_)
                getattr(self, a)[pn:pn + rg_n * m_].reshape(rg_n, m_)[rn] = src[ro]
        for lv in range(L):
            ao, an, size = int(old_lev[K.LV_AOFF, lv]), int(self.lev[K.LV_AOFF, lv]), B << lv
            self.acc[an:an + size] = old["acc"][ao:ao + size]
            self.aj[lv] = old["aj"][lv]
        self.ov[:], self.os_[:] = old["ov"], old["os_"]

    # ------------------------------------------------------------------ queries
    def register(self, qid: int, phi: float, eps: float, start: int = 0, notify: bool = False,
                 rows: int | None = None) -> None:
        qid = int(qid)
        if notify:
            raise Unsupported("the shared rows-window structure answers lookups only (notify queries use sliding)")
        if rows is None or not 1 <= int(rows) <= MAX_ROWS:
            raise Unsupported(f"the shared rows-window structure serves windows of 1..{MAX_ROWS} rows, got {rows}")
        if qid in self.q:
            raise ValueError(f"qid {qid} is already registered")
        if not (0 < phi <= 1):
            raise ValueError(f"phi must lie in (0, 1], got {phi}")
        self._grow(int(rows))
        self.q[qid] = (float(phi), float(eps), int(start), int(rows))
        self._add_row(qid)

    def _add_row(self, qid: int) -> None:
        if self._next >= len(self.tf):
            self._compact()
        r = self._next
        phi, _, start, w = self.q[qid]
        self.tf[r] = phi
        self.ti[:, r] = (*_fraction(phi), start, w)
        self.row[qid] = r
        self._next = r + 1

    def _compact(self) -> None:
        """Room for one more row: the live rows moved to the front (and the table doubled when
        more than half of it is live)."""
        live = np.array(list(self.row.values()), np.int64)
        if 2 * len(live) >= len(self.tf):
            self.tf = np.concatenate([self.tf, np.empty(len(self.tf))])
            self.ti = np.concatenate([self.ti, np.empty(self.ti.shape, np.int64)], axis=1)
        self.tf[:len(live)], self.ti[:, :len(live)] = self.tf[live].copy(), self.ti[:, live].copy()
        self.row = dict(zip(self.row, range(len(live)), strict=True))
        self._next = len(live)

    def terminate(self, qid: int) -> None:
        # Wmax stays (space, not answers: the leaves of the largest window ever registered)
        if self.q.pop(int(qid), None) is not None:
            del self.row[int(qid)]

    def alive(self) -> int:
        return len(self.q)

    @property
    def last_seq(self) -> int:
        return int(self.meta[K.M_N])

    # ------------------------------------------------------------------ elements
    def push(self, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seqs = np.ascontiguousarray(seqs, np.int64)
        x = np.ascontiguousarray(values, np.float64)
        if len(x) != len(seqs):
            raise ValueError("values and seqs differ in length")
        if not len(x):
            return _EMPTY
        if (len(x) > 1 and not (seqs[1:] > seqs[:-1]).all()) or seqs[0] <= self.last_seq:
            check_increasing(seqs, None if self.last_seq == K.NONE else self.last_seq)  # raises
        K.push(x, seqs, self.meta, self.lev, self.V, self.RK, self.ls, self.blo, self.bhi, self.ov, self.os_,
               self.nj, self.nm, self.ng, self.acc, self.aj)
        return _EMPTY

    def _rows(self, qids: np.ndarray) -> np.ndarray:
        """The query table's rows of ``qids``."""
        try:
            return np.fromiter(map(self.row.__getitem__, qids.tolist()), np.int64, len(qids))
        except KeyError as e:
            raise KeyError(f"qid {e.args[0]} is not registered") from None

    def lookup(self, qids: np.ndarray, n: int) -> np.ndarray:
        """Answers after position n (a lookup before the last position pushed answers there)."""
        qids = np.asarray(qids, np.int64)
        if not len(qids):
            return np.empty(0)
        pos = self._rows(qids)
        ti = self.ti[:, pos]
        out = np.empty(len(qids))
        n = max(int(n), self.last_seq)
        K.lookup(self.meta, self.lev, self.V, self.RK, self.ls, self.blo, self.bhi, self.ov, self.os_, self.oss,
                 self.nj, self.nm, self.ng, self.tf[pos], ti[0], ti[1], ti[2], ti[3], n, out)
        return out

    def _cover(self, qid: int, n: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """The lists of the query's window after position n: (count, offsets, lengths, sizes)."""
        phi, _, start, w = self.q[int(qid)]
        n = max(int(n), self.last_seq)
        lq = max(start + 1, n - w + 1)
        K.sort_open(self.meta, self.V, self.RK, self.ov, self.os_, self.oss)
        cap = int(self.meta[K.M_CAPB]) + 8
        loff, llen, lgap, lsize = (np.empty(cap, np.int64) for _ in range(4))
        k = K.cover(self.meta, self.lev, self.V, self.RK, self.ls, self.blo, self.bhi, self.os_, self.oss,
                    self.nj, self.nm, self.ng, lq, loff, llen, lgap, lsize)
        return k, loff, llen, lsize

    def summary(self, qid: int, n: int, prune: bool = True) -> np.ndarray:
        """The query's window part as (m, 3) tuples (v, r-, r+): the cover's lists merged as
        :func:`~vigil.quantiles.merge_summaries` merges them, pruned to rank steps <= 2 eps n_part
        (``prune``)."""
        k, loff, llen, lsize = self._cover(qid, n)
        budget = 2.0 * self.eps * float(lsize[:k].sum()) if prune else -1.0
        return K.summary(self.V, self.RK, k, loff, llen, lsize, budget)

    def parts(self, qid: int, n: int) -> list[np.ndarray]:
        """The cover's lists of the query's window as (v, r, r) parts (what :meth:`summary` merges)."""
        k, loff, llen, _ = self._cover(qid, n)
        out = []
        for j in range(k):
            o, ln = int(loff[j]), int(llen[j])
            r = self.RK[o:o + ln].astype(np.float64)
            out.append(np.column_stack([self.V[o:o + ln], r, r]))
        return out

    # ------------------------------------------------------------------ state
    def state(self) -> dict[str, Any]:
        qs = sorted(self.q)
        return {
            "eps": self.eps, "B": self.B, "npushed": int(self.meta[K.M_NPUSH]),  # positions pushed
            "meta": self.meta.copy(), "lev": self.lev.copy(),
            **{k: getattr(self, k).copy() for k in _ARRAYS},
            "qids": np.array(qs, np.int64), "phi": np.array([self.q[q][0] for q in qs]),
            "eps_q": np.array([self.q[q][1] for q in qs]),
            "start": np.array([self.q[q][2] for q in qs], np.int64),
            "w": np.array([self.q[q][3] for q in qs], np.int64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> NofN:
        op = cls(float(s["eps"]), None, int(s["B"]))
        op.meta, op.lev = np.array(s["meta"], np.int64), np.array(s["lev"], np.int64)
        for k in _ARRAYS:
            setattr(op, k, np.array(s[k]))
        for q, phi, e, st, w in zip(s["qids"].tolist(), s["phi"].tolist(), s["eps_q"].tolist(),
                                    s["start"].tolist(), s["w"].tolist(), strict=True):
            op.q[q] = (phi, e, st, w)
            op._add_row(q)
        return op
