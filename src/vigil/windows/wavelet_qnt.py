"""``wavelet_qnt``: QUANTILE over sliding windows by blocked wavelet matrices over the value ring,
beside B-INT-QNT (paper 002, §3.3), each lookup routed by its window's width W.

Beyond the paper. A window's quantile is a *range quantile* query (Gagie, Navarro, Puglisi, "New
algorithms on wavelet trees and applications to information retrieval", TCS 426-427, 2012, §3:
the k-th smallest of A[l..r] in O(log sigma) on a wavelet tree), here on wavelet matrices (Claude,
Navarro, Ordonez, "The wavelet matrix", SPIRE 2012) which are static; a stream is served by
*blocks*:

* scale S = 2^L (L in :data:`SCALES`, created when the first query of width W <= S/2 + 1 that no
  smaller scale serves registers; built then from the retained elements): blocks
  [i*S/2, i*S/2 + S) of positions, one every S/2 positions (each element is in two blocks), each
  a wavelet matrix over the block's local value ranks (NULLs last), built when its last element
  arrives: O(L) amortized per element (O(S log S) per block of S/2 new elements). A window of
  W <= S/2 + 1 elements starting at position a lies inside block floor(a / (S/2)), so its
  quantile is one range-quantile walk: O(L) = O(log W) reads, no selection over pieces;
* windows of W <= :attr:`direct` elements (16 unless set): a branch-free selection over the raw
  value ring (gather padded to 8 or 16 values with +inf, rank counting without early exits);
* wider windows (W > 16,385), windows whose block is not built yet (the newest < S positions,
  e.g. suffix windows) or lies before a capacity rebuild: B-INT-QNT's greedy selection over the
  window's sorted base-interval arrays (§3.3, :mod:`vigil.windows.bint_qnt`, kept in full).

Counts of non-null values per window come from a ring of non-null prefix counts (O(1)).

Bounds (N_max = the alive queries' reach, s = scales in use, s <= len(SCALES) = 11): UPDATE
O(log N_max + s L) amortized (B-INT-QNT's merges + the block builds); space O(N_max log N_max)
words for B-INT-QNT plus O(s N_max) words for the scales (per element of the ring: 2 L bits
of rank bitmaps + counts and 1 float64 sorted value per scale, L <= 15); LOOKUP O(1) for W <= 16, O(log W)
reads for 16 < W <= 16,385 when the block is built, else B-INT-QNT's O(p log q log W).
Serves QUANTILE only, rows and time windows, suffix and historical. Scales follow the rows
windows' widths; a time window's width in elements is known only at lookup, so time windows use
the <= 16-element selection and B-INT-QNT. A scale stays when its queries terminate (bounded:
at most len(SCALES) scales); the restore re-creates the scales of the alive queries.
"""

from __future__ import annotations

import numpy as np

from ._wavelet_kernels import SMALL_MAX, row_words, wm_push, wq_lookup
from ._window_base import _grow
from ._window_kernels import quantile_rank
from .bint_qnt import BIntQnt

# block sizes S = 2^L of the available scales (a scale serves widths <= S/2 + 1); every power of two:
# W = 100 walks 8 levels instead of 9 with every other one (fig11 workload, CPU per lookup, load ~8:
# 90 -> 76 ns); widths spread over all classes cost up to 11 scales of updates and space
SCALES = tuple(range(5, 16))


def scale_of(width: int) -> int:
    """The smallest scale exponent L with width <= 2^(L-1) + 1 (0 = none: B-INT-QNT)."""
    for L in SCALES:
        if width <= (1 << (L - 1)) + 1:
            return L
    return 0


class WaveletQnt(BIntQnt):
    name = "wavelet_qnt"
    aggs = ("quantile",)
    direct = SMALL_MAX

    def __init__(self, agg: str, time_based: bool) -> None:
        self.scales: list[int] = []  # exponents in use (ascending); before super() (it calls _alloc)
        super().__init__(agg, time_based)
        self.q_rw = np.zeros(0, np.int64)

    # ------------------------------------------------------------------ storage
    def _alloc(self, cap: int) -> None:
        super()._alloc(cap)
        self.nn = np.zeros(cap, np.int64)
        self._layout(cap)

    def _layout(self, cap: int) -> None:
        """(Re)allocate the block storage of every scale in use (all blocks unbuilt)."""
        ex, nb, zo, so, to = [], [], [], [], []
        z = s = t = 0
        for L in self.scales:
            S = 1 << L
            k = cap // (S // 2)
            if k < 8:  # too few block slots for this capacity: B-INT-QNT answers these widths
                continue
            ex.append(L); nb.append(k); zo.append(z); so.append(s); to.append(t)  # noqa: E702
            z += k * L * row_words(L)
            s += k * S
            t += k
        self.sc_exp = np.array(ex, np.int64)
        self.sc_nb = np.array(nb, np.int64)
        self.sc_zoff = np.array(zo, np.int64)
        self.sc_svoff = np.array(so, np.int64)
        self.sc_toff = np.array(to, np.int64)
        self.z = np.zeros(z, np.uint64)
        self.sv = np.zeros(s, np.float64)
        self.tag = np.full(t, -1, np.int64)

    def _struct_nbytes(self) -> int:
        return super()._struct_nbytes() + self.nn.nbytes + self.z.nbytes + self.sv.nbytes + self.tag.nbytes

    def _push_struct(self, vals: np.ndarray, pos0: int) -> None:
        super()._push_struct(vals, pos0)
        wm_push(vals, pos0, self.vals, self.mask, self.floor, self.sc_exp, self.sc_nb, self.sc_zoff, self.sc_svoff,
                self.sc_toff, self.z, self.sv, self.tag, self.nn)

    # ------------------------------------------------------------------ scales follow the queries
    def _registered(self, qid: int) -> None:
        # (width << 32 | rank of phi among width values): the rank of a full window without a division
        self.q_rw = _grow(self.q_rw, len(self.q_alive), -1)
        width = int(self.q_left[qid] - self.q_right[qid])
        self.q_rw[qid] = -1
        if self.time_based or not 0 < width < 2**31:
            return  # a time window's width in elements is known only at lookup: scales from the data
        self.q_rw[qid] = (width << 32) | int(quantile_rank(self.q_phi[qid], self.q_num[qid], self.q_den[qid], width))
        L = scale_of(width)
        if L and L not in self.scales:
            self._add_scale(L)

    def _add_scale(self, L: int) -> None:
        """A new scale: storage for it and its blocks built from the retained elements."""
        self.scales = sorted([*self.scales, L])
        self._layout(self.cap)
        V, m = self.V, self.m
        if V <= m:
            idx = np.arange(V, m + 1) & self.mask
            wm_push(self.vals[idx].copy(), V - 1, self.vals, self.mask, V, self.sc_exp, self.sc_nb, self.sc_zoff,
                    self.sc_svoff, self.sc_toff, self.z, self.sv, self.tag, self.nn)

    def _lookup_into(self, qids, n, t_now, out) -> None:
        wq_lookup(qids, n, t_now, self.time_based, self.q_left, self.q_right, self.q_start, self.q_phi, self.q_num,
                  self.q_den, self.q_rw, self.seqs, self.times, self.mask, self.V, self.m, self.last_seq, self.lq, self.cap,
                  self.vals, min(self.direct, SMALL_MAX), self.nn, self.sc_exp, self.sc_nb, self.sc_zoff, self.sc_svoff,
                  self.sc_toff, self.z, self.sv, self.tag, out)
