"""Capacity of the sliding-window quantile summary's arrays (:mod:`.sliding`), in compiled code.

:func:`room` makes room for k more elements: the open block and the front (``ob``/``obs``), the
block ring (``blk``, compacted to its live blocks when it grows), the samples (``sv``/``si``,
compacted to the live blocks' samples) and the merged array (``mv``/``mi`` and its scratch
``mv2``/``mi2``, the coarse index rebuilt). It returns the arrays, new ones where they grew; the
caller keeps them (:meth:`.sliding.Sliding._room`, and the per-key push of :mod:`.keyed_sliding`
without leaving compiled code). :func:`short` tells whether :func:`room` would change any array.
"""

from __future__ import annotations

import numba
import numpy as np

from ._sliding_kernels import (
    _NJ,
    B_OFF,
    I_B,
    M_B,
    M_BH,
    M_BT,
    M_FX,
    M_MH,
    M_OC,
    M_SH,
    M_ST,
    M_T,
    _ranks,
)


@numba.njit(**_NJ)
def short(meta, ob, blk, sv, mv, k):
    """Whether :func:`room` (k) would grow or compact any array (its four conditions)."""
    oc = meta[M_OC]
    if min(meta[M_B] + 1, oc + k + 1) > ob.shape[1]:
        return True
    if meta[M_BT] + 2 * k + 4 > blk.shape[1]:
        return True
    ko = k + oc + 2
    if meta[M_ST] + ko > len(sv):
        return True
    return meta[M_T] + ko > len(mv)


@numba.njit(**_NJ)
def room(meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, k):
    """Room for k more elements' blocks, samples and merged entries (compacting first); returns
    (ob, obs, blk, sv, si, mv, mi, mv2, mi2), new arrays where they grew."""
    need = min(meta[M_B] + 1, meta[M_OC] + k + 1)  # the open block (and the front, never larger)
    if need > ob.shape[1]:
        cap = min(meta[M_B] + 1, max(need, 2 * ob.shape[1]))
        nob = np.empty((2, cap))
        nobs = np.zeros((2, cap), np.int64)
        nob[:, :ob.shape[1]] = ob
        nobs[:, :ob.shape[1]] = obs
        ob = nob
        obs = nobs
    bh = meta[M_BH]
    bt = meta[M_BT]
    if bt + 2 * k + 4 > blk.shape[1]:
        nblk = np.zeros((6, max(blk.shape[1], 2 * (bt - bh + 2 * k + 4))), np.int64)
        nblk[:, :bt - bh] = blk[:, bh:bt]
        blk = nblk
        for i in range(meta[M_T]):
            mi[I_B, i] -= bh
        meta[M_MH] -= bh
        if meta[M_FX] >= 0:
            meta[M_FX] -= bh
        meta[M_BT] = bt - bh
        meta[M_BH] = 0
        bt = bt - bh
        bh = 0
    sh = meta[M_SH]
    st = meta[M_ST]
    ko = k + meta[M_OC] + 2  # new samples: at most the elements closed in this push
    if st + ko > len(sv):
        cap = max(len(sv), 2 * (st - sh + ko))
        nsv = np.empty(cap)
        nsi = np.zeros((2, cap), np.int64)
        nsv[:st - sh] = sv[sh:st]
        nsi[:, :st - sh] = si[:, sh:st]
        sv = nsv
        si = nsi
        for b in range(bh, bt):
            blk[B_OFF, b] -= sh
        meta[M_SH] = 0
        meta[M_ST] = st - sh
    t = meta[M_T]
    if t + ko > len(mv):
        cap = 2 * (t + ko)
        nmv = np.empty(cap)
        nmi = np.zeros((4, cap), np.int64)
        nmv[:t] = mv[:t]
        nmi[:, :t] = mi[:, :t]
        mv = nmv
        mi = nmi
        mv2 = np.empty(cap)
        mi2 = np.zeros((2, cap), np.int64)
        _ranks(mv, mi, t, mv2)  # mv2 holds the coarse index between merges
    return ob, obs, blk, sv, si, mv, mi, mv2, mi2
