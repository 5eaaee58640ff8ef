"""One operator call for a batch holding tuples of both relations (``JoinBase.insert_both``).

The engine's batches interleave the relations (R and S rows alternate in a trade stream), so
inserting them run by run costs one Python round trip, probe and output assembly per run: ~150 us
per run of one tuple. Here a batch is one call, exact in stream order:

* every left tuple of the batch probes the right tuples stored before the batch, and every right
  tuple the left ones (one probe of the strategy per side: its kernels, routing and indexes as for
  any insert; the stored tuples are all older than the batch, as the strategies assume);
* the pairs of two tuples of the batch (the later one arriving, the earlier one its partner) come
  from one numba kernel walking the batch: per later tuple, the earlier tuples of the other side
  with its key (band joins: inside the widest band), within the largest window of its side,
  stabbing the R-tree of all queries (``_rtree``: box = left range x right range x window; band
  joins: the band on the key difference) with the pair;
* then both sides store their tuples (the time order of each side is the batch's).

Cost: the two probes, plus O(c log n + k) for the c candidate pairs inside the batch, plus the
query R-tree per arriving side (O(n log n), rebuilt when the queries changed).
"""

from __future__ import annotations

import numba
import numpy as np

from . import _delta
from ._rtree import build_forest, stab

INF = np.inf
SMALL = 64  # select/window joins with at most this many queries: intra_pairs lists them per tuple


@numba.njit(cache=True, nogil=True)
def intra_pairs(band, timed, Ak, As, Ax, At, Bk, Bs, Bx, Bt, a_is_left, zmax, klo, khi,
                NB, NC, IB, IQ, root, Qid, DLO, MLO, MHI, OLO, OHI, WQ, oq, oa, ob):
    """Pairs (query, arriving seq, partner seq) of tuples A (arriving: the later one) with the
    earlier tuples B of the other side, both of one batch. B sorted by (key, seq) (band: by key).
    Select/window: partners with A's key and a smaller seq, back from the newest while
    t - T < zmax; band: partners with key in [k + klo, k + khi] (widened: the stab decides).
    The probe point is (left x, right x, t - T) (band: (s.key - r.key, 0, 0)); a query's box
    holds it, and for windows with a lower bound, t - T >= DLO. Returns the records written
    (beyond the arrays' length: counted only, the caller reruns with room). Select/window with few
    queries (<= 64): the queries whose arriving-side range MLO..MHI holds the tuple are listed
    once per arriving tuple and each partner checks only those (OLO..OHI, WQ, DLO)."""
    n = 0
    m = len(Bk)
    nq = len(Qid)
    buf = np.empty(nq + 1, np.int64)
    mine = np.empty(nq + 1, np.int64)
    stack = np.empty(16 * 64, np.int64)
    small = nq <= SMALL
    for j in range(len(Ak)):
        k = Ak[j]
        sj = As[j]
        if band:
            lo_k = k + klo
            hi_k = k + khi
            pad = 1e-9 * (abs(k) + abs(klo) + abs(khi)) + 1e-300
            lo_k -= pad
            hi_k += pad
            lo, hi = 0, m
            while lo < hi:
                mid = (lo + hi) >> 1
                if Bk[mid] < lo_k:
                    lo = mid + 1
                else:
                    hi = mid
            for p in range(lo, m):
                if Bk[p] > hi_k:
                    break
                if Bs[p] >= sj:
                    continue
                d = (k - Bk[p]) if not a_is_left else (Bk[p] - k)
                f = stab(NB, NC, IB, IQ, root, d, 0.0, 0.0, buf, stack)
                for u in range(f):
                    if n < len(oq):
                        oq[n] = Qid[buf[u]]
                        oa[n] = sj
                        ob[n] = Bs[p]
                    n += 1
            continue
        nm = 0
        if small:  # the queries whose arriving-side range holds the tuple (none: no pair)
            a = Ax[j]
            for u in range(nq):
                if MLO[u] <= a and a <= MHI[u]:
                    mine[nm] = u
                    nm += 1
            if nm == 0:
                continue
        lo, hi = 0, m  # first index with (key, seq) >= (k, sj): the end of the earlier partners
        while lo < hi:
            mid = (lo + hi) >> 1
            if Bk[mid] < k or (Bk[mid] == k and Bs[mid] < sj):
                lo = mid + 1
            else:
                hi = mid
        p = lo - 1
        if small:
            while p >= 0 and Bk[p] == k:
                z = At[j] - Bt[p] if timed else 0.0
                if not (z < zmax):
                    break
                x = Bx[p]
                for v in range(nm):
                    u = mine[v]
                    if OLO[u] <= x and x <= OHI[u] and z < WQ[u] and z >= DLO[u]:
                        if n < len(oq):
                            oq[n] = Qid[u]
                            oa[n] = sj
                            ob[n] = Bs[p]
                        n += 1
                p -= 1
            continue
        while p >= 0 and Bk[p] == k:
            z = At[j] - Bt[p] if timed else 0.0
            if not (z < zmax):
                break
            if a_is_left:
                f = stab(NB, NC, IB, IQ, root, Ax[j], Bx[p], z, buf, stack)
            else:
                f = stab(NB, NC, IB, IQ, root, Bx[p], Ax[j], z, buf, stack)
            for u in range(f):
                if z >= DLO[buf[u]]:
                    if n < len(oq):
                        oq[n] = Qid[buf[u]]
                        oa[n] = sj
                        ob[n] = Bs[p]
                    n += 1
            p -= 1
    return n


def query_trees(op) -> dict:
    """Per arriving side: (tree, Qid, DLO, zmax, klo, khi, (MLO, MHI, OLO, OHI, W)) over every
    alive query (boxes as in the module docstring; the arriving side's range, the other side's, the
    window; an empty tree for select/window joins with <= SMALL queries, which intra_pairs lists
    per tuple instead); cached on the operator until the queries change."""
    ids, rows = op.query_arrays()
    out = {}
    for side in ("left", "right"):
        if op.kind == "band":
            boxes = np.column_stack([rows[:, 0], rows[:, 1], np.full(len(ids), -INF), np.full(len(ids), INF),
                                     np.full(len(ids), INF)]) if len(ids) else np.empty((0, 5))
            dlo = w = np.full(len(ids), -INF)
            zmax = INF
            lo = float(rows[:, 0].min()) if len(ids) else 0.0
            hi = float(rows[:, 1].max()) if len(ids) else 0.0
            klo, khi = (lo, hi) if side == "left" else (-hi, -lo)  # partners' key - mine
        else:
            w, dlo = op.side_windows(side, ids)
            boxes = np.column_stack([rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], w]) if len(ids) \
                else np.empty((0, 5))
            zmax = float(w.max()) if len(ids) else 0.0
            klo = khi = 0.0
        if op.kind != "band" and len(ids) <= SMALL:  # intra_pairs lists the queries, no tree
            NB, NC, IB, IQ, roots = np.empty((0, 5)), np.empty((0, 3), np.int64), np.empty((0, 5)), \
                np.empty(0, np.int64), np.full(1, -1, np.int64)
        else:
            NB, NC, IB, IQ, roots = build_forest(boxes, [np.arange(len(ids))])
        mine, other = ((0, 1), (2, 3)) if side == "left" or op.kind == "band" else ((2, 3), (0, 1))
        flat = tuple(np.ascontiguousarray(a, np.float64) for a in (
            rows[:, mine[0]], rows[:, mine[1]], rows[:, other[0]], rows[:, other[1]], w)) if op.kind != "band" \
            else tuple(np.empty(0) for _ in range(5))
        out[side] = ((NB, NC, IB, IQ, int(roots[0])), ids, np.ascontiguousarray(dlo, np.float64), zmax, klo, khi,
                     flat)
    return out


def _joinable(op, key, x, t) -> np.ndarray:
    """Tuples that can join at all (a finite band key; else a non-NaN attribute and time)."""
    if op.kind == "band":
        return np.isfinite(key)
    ok = ~np.isnan(x)
    if op.kind == "window":
        ok &= ~np.isnan(t)
    return ok


def intra(op, blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(qid, arriving seq, partner seq, arriving is left) of the pairs inside the batch."""
    trees = op.__dict__.get("_intra_trees")
    if trees is None:
        trees = op._intra_trees = query_trees(op)
    keep = {}
    for side, (seqs, key, x, t) in blocks.items():
        ok = _joinable(op, key, x, t)
        kf = np.asarray(key, np.float64)
        o = np.flatnonzero(ok)
        o = o[np.lexsort((seqs[o], kf[o]))]
        keep[side] = (np.ascontiguousarray(kf[o]), np.ascontiguousarray(seqs[o]), np.ascontiguousarray(x[o]),
                      np.ascontiguousarray(t[o]))
    outs = []
    for side in ("left", "right"):
        other = "right" if side == "left" else "left"
        tree, qid, dlo, zmax, klo, khi, flat = trees[side]
        A, B = keep[side], keep[other]
        if not len(A[0]) or not len(B[0]) or not len(qid):
            continue
        cap = op.__dict__.get("_intra_cap", 256)
        while True:
            oq, oa, ob = (np.empty(cap, np.int64) for _ in range(3))
            n = intra_pairs(op.kind == "band", op.kind == "window", *A, *B, side == "left", zmax, klo, khi, *tree, qid, dlo, *flat, oq, oa, ob)
            if n <= cap:
                op._intra_cap = max(256, min(cap, 2 * n))
                break
            cap = n
        outs.append((oq[:n], oa[:n], ob[:n], np.full(n, side == "left")))
    if not outs:
        e = np.empty(0, np.int64)
        return e, e, e, np.empty(0, bool)
    return tuple(np.concatenate([o[j] for o in outs]) for j in range(4))  # type: ignore[return-value]


def insert_both(op, blocks: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``JoinBase.insert_both`` with tuples on both sides (``blocks``: side -> (seqs, key, attrs,
    times)); output as ``insert``'s, sorted by (arriving seq, qid, r, s)."""
    cols = {}
    for side, (seqs, key, attrs, times) in blocks.items():
        seqs = np.ascontiguousarray(seqs, np.int64)
        cols[side] = (seqs, *op._columns(side, seqs, key, attrs, times, len(seqs)))
    seqs = np.concatenate([cols["left"][0], cols["right"][0]])
    order = np.argsort(seqs, kind="stable")
    s_sorted = seqs[order]
    if np.any(np.diff(s_sorted) <= 0) or (op._last_seq is not None and s_sorted[0] <= op._last_seq):
        raise ValueError("seqs must be strictly increasing and larger than every seq inserted before")
    t_new = op._t_last
    if op.kind == "window":
        t_new = op._check_order(np.concatenate([cols["left"][3], cols["right"][3]])[order])
    if op._held and (op.q or _delta.pending(op)):
        op._merge_held()
    res = []  # (q, arriving seq, partner seq, arriving is left, count)
    if op.q or _delta.pending(op):
        mode = 0 if op.mode == 1 else op.mode  # affected: pairs, deduplicated below
        for side in ("left", "right"):
            s, key, x, t = cols[side]
            if len(op.sides["right" if side == "left" else "left"].seqs):
                q, i, o, cnt = _delta.probe(op, side, s, key, x, t, mode)
                res.append((q, s[i], o, side == "left", cnt))
        if op.mode == 2:
            op.counted += sum(r[4] for r in res)
            res = []
        q, a, b, left = _delta.intra(op, {sd: cols[sd] for sd in ("left", "right")}, intra)
        if op.mode == 2:
            op.counted += len(q)
        else:
            res.append((q, a, b, left, 0))
    for side in ("left", "right"):
        s, key, x, t = cols[side]
        op.sides[side].add(s, key, x, t)
    op._last_seq = int(s_sorted[-1])
    op._t_last = t_new
    if op.horizon < INF:
        op._trim()
    e = np.empty(0, np.int64)
    if not res or op.mode == 2:
        return e, e, e.copy()
    q = np.concatenate([r[0] for r in res])
    a = np.concatenate([r[1] for r in res])
    b = np.concatenate([r[2] for r in res])
    left = np.concatenate([np.broadcast_to(r[3], len(r[0])) for r in res])
    if not len(q):
        return e, e, e.copy()
    if op.mode == 1:
        o = np.lexsort((q, a))
        a, q = a[o], q[o]
        keep = np.empty(len(q), bool)
        keep[0] = True
        keep[1:] = (a[1:] != a[:-1]) | (q[1:] != q[:-1])
        return q[keep], a[keep], np.full(int(keep.sum()), -1, np.int64)
    r = np.where(left, a, b)
    s = np.where(left, b, a)
    o = np.lexsort((s, r, q, a))
    return q[o], r[o], s[o]

