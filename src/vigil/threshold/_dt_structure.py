"""One structure T_i of DT's logarithmic method (``vigil.threshold.dt``, paper 000 §4-§6): the
d-layered endpoint trees, the per-node queues and the tracking state of its queries, built from
numpy arrays by the kernels of ``_kernels``. Re-arming queries keep their re-arm threshold in
``rep`` (local order; 0 = one-shot), which ``push_dt`` reads when one matures."""

from __future__ import annotations

import numpy as np

from . import _kernels as K
from ._dt_order import local_order as _local_order
from ._dt_pool import _owner, _take

#: the tracking arrays of ``push_dt``, unused by its counter-only pass
_NO_TRACKING = (np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int32), np.zeros((2, 4), np.int64),
                np.zeros(1, np.uint8), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(8, np.int64))


class _Structure:
    """One structure T_i of the logarithmic method: the d-layered endpoint trees, heaps and
    tracking state of its queries. Local query order = order of the lower endpoint in dimension 0
    (so that building scatters entries with locality); ``qsorted``/``qperm`` map qids to local
    indices by binary search."""

    __slots__ = (
        "qids",
        "qsorted",
        "qperm",
        "klo",
        "khi",
        "NR",
        "tbase",
        "tL",
        "tH",
        "tdim",
        "tt",
        "qn",
        "qr",
        "qalive",
        "out_q",
        "out_o",
        "n_alive",
        "n_built",
        "wsum",
        "PH",
        "P0",
        "bk",
        "rep",
        "nrep",
    )

    def __init__(self, qids: np.ndarray, klo: np.ndarray, khi: np.ndarray, rem: np.ndarray,
                 pool: list[np.ndarray] | None = None,
                 sample: tuple[np.ndarray, np.ndarray] | None = None, rep: np.ndarray | None = None,
                 bucket: int = 0) -> None:
        k, d = klo.shape
        rep = np.zeros(k, np.int64) if rep is None else np.ascontiguousarray(rep, np.int64)
        perm, qperm = _local_order(qids, klo[:, 0])
        if perm is not None:
            qids, klo, khi, rem, rep = qids[perm], klo[perm], khi[perm], rem[perm], rep[perm]
        self.qids, self.klo, self.khi, self.rep = qids, klo, khi, rep
        self.nrep = int(np.count_nonzero(rep))
        self.qperm = qperm
        self.qsorted = qids[self.qperm]
        moff = np.arange(k + 1, dtype=np.int64)
        mgrp = np.zeros(k, dtype=np.int64)
        G, row0, ntrees = 1, 0, 0
        tb, tl, th, td = [], [], [], []
        NR = np.empty((0, 4), dtype=np.int64)
        # Big arrays are allocated here, in numpy (from the pool of a replaced structure when
        # possible; huge pages per HUGEPAGES, see DT._build), and filled by the kernels.
        bk = d > 1 and bucket > 0  # bucketed last-dimension trees (``_dt_bucket``)
        # PH: the pieces' upper keys; 2-D (empty) when not bucketed: kernels without bucket code
        pe, PH, P0 = np.empty((0, 2), np.int64), np.empty((0, 0), np.int64), 0
        for dim in range(d):
            kl = np.ascontiguousarray(klo[:, dim])
            kh = np.ascontiguousarray(khi[:, dim])
            if dim == 0:  # kl is sorted (local order): merge it with the sorted kh
                order = K.merge_order(kl, kh, np.argsort(kh, kind="stable"))
            else:
                order = np.argsort(np.concatenate([kl, kh]), kind="stable")
            last = dim == d - 1
            buf, boff, tL, tH, tbase, mm, nrows, _ = K.level_sizes(kl, kh, order, moff, mgrp, G)
            kl = kh = order = mgrp = None  # (temporaries: freed early, lower peak memory)
            if last and bk:
                buf, tL, tH, tbase, nrows, pe, PL, PH, pstart, gb0, nleft, nboth = K.bucketize(
                    buf, boff, tL, mm, G, min(bucket, K.MAX_BUCKET))
                boff = gb0
            P0 = row0 + nrows
            NP = PH.shape[0] if PH.ndim == 1 else 0
            nchunks = (NP + (1 << K.CHUNK_BITS) - 1) >> K.CHUNK_BITS  # tag rows after the pieces
            grown = _take(pool, (P0 + NP + nchunks, 4), np.int64)
            grown[:row0] = NR  # earlier levels are geometrically smaller
            NR = grown
            block = NR[row0:]
            K.level_fill(G, row0, last, buf, boff, tL, tH, tbase, block)
            if last and bk:
                K.link_buckets(NR, P0, tbase, tL, tH, pstart, gb0, PL, PH, nleft, nboth)
                PL = None
            tb.append(tbase)
            tl.append(tL)
            th.append(tH)
            td.append(np.full(G, dim, dtype=np.int64))
            ntrees += G
            if not last:
                poff, prow = K.level_canonical(moff, mm, tL, tH, tbase)
                mgrp, G = K.next_groups(prow, row0, nrows, block, ntrees)
                prow = None
                moff = poff
                row0 += nrows
        self.PH, self.P0, self.bk = PH, P0, bk
        self.NR = NR
        self.tbase = np.concatenate(tb)
        self.tL = np.concatenate(tl)
        self.tH = np.concatenate(th)
        self.tdim = np.concatenate(td)
        # rates for the first round's slack split: the counts of a sample of recent elements
        sq = np.empty(0, np.float32)
        if sample is not None and sample[1].shape[0] > 0:
            K.push_dt(sample[0], sample[1], NR, self.tbase, self.tL, self.tH, self.tdim, PH, P0, *_NO_TRACKING,
                      True, _NO_TRACKING[4], 0, 0)
            if bk:
                K.fold_tags(NR, P0, PH.shape[0])
            sq = np.sqrt(NR[row0:P0 + NP, 1], dtype=np.float32)  # sqrt(rate) of each last-dimension node
            NR[row0:, 1] = 0  # counters start at 0
        # the last dimension's entries are laid out and written tree by tree (locality)
        poff, slots, Z = K.heap_layout(NR, moff, mm, tL, tH, tbase, sq, row0, pe, P0)
        E = int(poff[-1])
        if NR.shape[0] >= 2**31 or slots >= 2**31:
            raise MemoryError("DT structure too large for 32-bit entry indices")
        self.tt = _take(pool, (slots, 2), np.int64)
        self.qn = _take(pool, (E, 2), np.int32)
        self.qr = _take(pool, (k + 1, 4), np.int64)
        self.qr.fill(0)
        K.build_heaps(NR, mm, tL, tH, tbase, poff, rem, self.tt, self.qn, self.qr, Z, sq, row0, pe, P0)
        if bk:
            K.chunk_mins(NR, P0, PH.shape[0])
        self.qalive = np.ones(k, dtype=np.uint8)
        # room for the maturities of a push: each one-shot query matures once; with re-arming
        # queries push_dt stops when the next element's might not fit (see DT.push)
        nout = k if self.nrep == 0 else 2 * k + 64
        self.out_q = np.empty(nout, dtype=np.int64)
        self.out_o = np.empty(nout, dtype=np.int64)
        self.n_alive = k
        self.n_built = k
        self.wsum = 0.0  # weight pushed through this structure since its build (counters' bound)

    def locate(self, qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mask over ``qids`` of those held here, their local indices)."""
        pos = np.minimum(np.searchsorted(self.qsorted, qids), self.qsorted.shape[0] - 1)
        hit = self.qsorted[pos] == qids
        return hit, self.qperm[pos[hit]]

    def remaining(self) -> np.ndarray:
        return K.remaining(self.NR, self.qn, self.qr, self.qalive, self.PH, self.P0)

    def export_alive(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(qids, klo, khi, remaining thresholds, re-arm thresholds) of the alive queries, local
        order."""
        m = self.qalive.astype(bool)
        rem = np.maximum(self.remaining()[m], 1)  # >= 1 always, except under floor_only
        return self.qids[m], self.klo[m], self.khi[m], rem, self.rep[m]

    def release(self, pool: list[np.ndarray]) -> None:
        """Hand the big arrays to ``pool`` for the next build (the structure is dead after this)."""
        for a in ("NR", "tt", "qn", "qr"):
            pool.append(_owner(getattr(self, a)).reshape(-1).view(np.uint8))
            setattr(self, a, None)

    def nbytes(self) -> int:
        """Bytes held (a reused buffer counts whole)."""
        return sum(_owner(getattr(self, a)).nbytes for a in self.__slots__ if a not in ("n_alive", "n_built", "wsum", "P0", "bk", "nrep"))
