"""A per-key quantile group's lookups at many positions inside a segment, in one compiled call
(:meth:`.keyed.KeyedQuantileGroup.push_lookup`, the engine's ``push_lookup`` contract).

The engine answers lookups that wait inside a segment by feeding a group its rows up to each
lookup position in turn and asking there. Fed one position after the other, a per-key group pays
its per-feed Python costs (the rows' key codes, new keys, the key sort, the push call, the
outputs' sort) once per position, for a few rows each. Here they are paid once: the rows' key
codes (new keys get their operators, in the order feeding them chunk by chunk gives), the
``where`` ranges and the sort by (chunk, key) over every row; then :func:`_walk` pushes each
chunk's key slices (:func:`.keyed_sliding._push_many`, as a feed does) and answers the lookups at
its position (:func:`.keyed_sliding._lookup_many` / ``_rank_many`` over every key of each query,
as ``lookup_many`` does), chunk after chunk. It returns to Python where a feed would: a key's
arrays need room (``_room`` with the chunk's count, as a feed asks), the output buffers are full,
a lookup the kernels do not answer (the operator's own lookup); then it resumes. A key's room is
reserved for its rows of every chunk left (capacity only: the same summary), so it stops once.

Outputs: the pushed events of every chunk, sorted and emitted as a feed emits them (by position,
query, key text); answers as ``lookup_many`` builds them. A key that first appears after a lookup
position has no element there: its answer is empty (NaN), so it is left out, as it was unknown.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..group import PerKey
from .keyed_sliding import _SLACK, _lookup_many, _push_many, _rank_many, _short
from .rank import rank_from_summary
from .sliding import Sliding


@numba.njit(cache=True, nogil=True)
def _walk(st, nlive, eps, codes, bounds, ucut, xs, loc, cnt, bcut, bflat, brank, lcode, lphi, lstart, lnslot, lx,
          ln, out, oslot, ooff, oval, nout, c0, u0, p0, j0):
    """Chunk c's key slices (segments ucut[c]..ucut[c+1] of codes / bounds over xs, positions loc)
    pushed, then the lookup blocks bcut[c]..bcut[c+1] answered (block b: entries
    bflat[b]..bflat[b+1] of the flat lookup arrays, rank queries if brank[b]; ln: each entry's key
    count there), for c from c0 (the chunk after the last cut: pushed only). Resumes at (u0, p0)
    within chunk c0's push, or at entry j0 >= 0 of its lookups (push done). Returns (status, c, u,
    p, nout, j): 0 done; 1 segment u of chunk c needs room; 2 output buffers full at (u, p);
    3 entry j needs the operator's lookup."""
    ncut = len(bcut) - 1
    for c in range(c0, ncut + 1):
        if j0 < 0:
            a = ucut[c]
            e = ucut[c + 1]
            if e > a:
                status, u, p, nout = _push_many(st, nlive, eps, codes[a:e], bounds[a:e + 1], xs, loc, u0, p0,
                                                oslot, ooff, oval, nout)
                if status != 0:
                    return status, c, u, p, nout, -1
                for s in range(a, e):
                    cnt[codes[s]] += bounds[s + 1] - bounds[s]
            j0 = bflat[bcut[c]] if c < ncut else 0
        if c < ncut:
            for b in range(bcut[c], bcut[c + 1]):
                fe = bflat[b + 1]
                s = max(bflat[b], j0)
                if s >= fe:
                    continue
                for j in range(s, fe):
                    ln[j] = cnt[lcode[j]]
                    if ln[j] == 0:  # a key without an element yet: no answer (left out)
                        out[j] = np.nan
                        continue
                    if brank[b]:
                        k = _rank_many(st, lcode[j:j + 1], lstart[j:j + 1], ln[j:j + 1], lx[j:j + 1], out[j:j + 1])
                    else:
                        k = _lookup_many(st, lcode[j:j + 1], lphi[j:j + 1], lstart[j:j + 1], lnslot[j:j + 1],
                                         ln[j:j + 1], out[j:j + 1])
                    if k >= 0:
                        return 3, c, 0, 0, nout, j
        j0 = -1
        u0 = 0
        p0 = 0
    return 0, ncut, 0, 0, nout, -1


@numba.njit(cache=True, nogil=True)
def _needs_room(st, codes, k):
    """Whether key codes[i]'s arrays need room (``_room``) before k[i] more elements."""
    out = np.zeros(len(codes), np.bool_)
    for i in range(len(codes)):
        meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq = st[codes[i]]
        out[i] = _short(meta, ob, blk, sv, mv, k[i])
    return out


def push_lookup(g, cols, rows, seqs, cuts, ns, starts, qids) -> list | None:
    """:meth:`.keyed.KeyedQuantileGroup.push_lookup` (see there and the module doc)."""
    sk = g.sk
    if sk is None:  # rows-window operators only (the group's first key decides, or its implementation)
        if g.ops or g.params["rows"] is None:
            return None
        kind = g.__dict__.get("_walk_kind")
        if kind is None:
            kind = g._walk_kind = type(g.impl(g.eps, g.params["rows"])) is Sliding
        if not kind:
            return None
    rows = np.asarray(rows, np.int64)
    seqs = np.asarray(seqs, np.int64)
    ns = np.asarray(ns, np.int64)
    x = cols.get(g.params["column"], "num")[0][rows]
    if g.ranges:
        keep = np.ones(len(rows), bool)
        for c, lo, hi in g.ranges:
            v = x if c == g.params["column"] else cols.get(c, "num")[0][rows]
            keep &= (v >= lo) & (v <= hi)
        rows, seqs, x = rows[keep], seqs[keep], x[keep]
    cuts = np.searchsorted(seqs, ns, side="right")
    n = len(rows)
    if n:
        kc = g._row_codes(cols, rows, cuts)
        sk = g.sk
        if sk is None:
            return None  # cannot happen after the check above (the first key makes sk): kept safe
    else:
        kc = np.empty(0, np.int64)
    ops = g.ops
    nk = len(ops)
    ncut = len(cuts)
    # each row's chunk (chunk c: rows up to cut c; chunk ncut: the rows after the last cut)
    chunk = np.searchsorted(cuts, np.arange(n), side="right")
    o1 = np.argsort(kc, kind="stable")
    ks = kc[o1]
    kb = np.concatenate(([0], np.flatnonzero(ks[1:] != ks[:-1]) + 1, [n])) if n else np.zeros(1, np.int64)
    c0s = g.count[ks[kb[:-1]]] if n else np.zeros(0, np.int64)
    local = np.empty(n, np.int64)
    local[o1] = np.arange(1, n + 1, dtype=np.int64) - np.repeat(kb[:-1] - c0s, np.diff(kb))
    o2 = np.argsort(chunk * max(nk, 1) + kc, kind="stable")
    k2, ch2 = kc[o2], chunk[o2]
    xs = np.ascontiguousarray(x[o2], np.float64)
    loc = local[o2]
    if n:
        brk = np.flatnonzero((k2[1:] != k2[:-1]) | (ch2[1:] != ch2[:-1])) + 1
        sb = np.concatenate(([0], brk)).astype(np.int64)
        bounds = np.concatenate((sb, [n])).astype(np.int64)
        scodes = k2[sb].astype(np.int64)
        seg_n = np.diff(bounds)
        ucut = np.searchsorted(ch2[sb], np.arange(ncut + 2), side="left").astype(np.int64)
        for c in np.unique(kc[g.count[kc] == 0]).tolist():
            if ops[c].first_seq < 0:
                ops[c].first_seq = 1  # a key's positions are 1, 2, ...
    else:
        bounds = np.zeros(1, np.int64)
        scodes = seg_n = np.zeros(0, np.int64)
        ucut = np.zeros(ncut + 2, np.int64)
    # the lookups: one block per lookup (its query's slots over every key, by key text), by cut
    qids = np.asarray(qids, np.int64)
    starts = np.asarray(starts, np.int64)
    nl = len(qids)
    arr: dict[int, tuple] = {}
    parts = []
    brank = np.zeros(nl, np.bool_)
    for i, q in enumerate(qids.tolist()):
        a = arr.get(q)
        if a is None:
            a = arr[q] = g._lookup_arrays(q)
        parts.append(a)
        brank[i] = a[6]
    sizes = np.fromiter((len(a[0]) for a in parts), np.int64, nl)
    bflat = np.zeros(nl + 1, np.int64)
    np.cumsum(sizes, out=bflat[1:])
    if nl:
        lcode = np.concatenate([a[0] for a in parts]).astype(np.int64)
        lslot = np.concatenate([a[1] for a in parts]).astype(np.int64)
        lphi = np.concatenate([a[2] for a in parts]).astype(np.float64)
        lstart = np.concatenate([a[3] for a in parts]).astype(np.int64)
        lnslot = np.concatenate([a[4] for a in parts]).astype(np.int64)
        lx = np.repeat(np.array([math.nan if g.q[q]["rank"] is None else g.q[q]["rank"] for q in qids.tolist()],
                                np.float64), sizes)
    else:
        lcode = lslot = lstart = lnslot = np.zeros(0, np.int64)
        lphi = lx = np.zeros(0)
    m = len(lcode)
    ln = np.zeros(m, np.int64)
    res = np.full(m, math.nan)
    cnt = g.count.copy()
    if sk is None:  # no key yet (no rows ever): every answer is empty
        return _answers(g, parts, bflat, res)
    if n:  # every key's room for its rows of the call, reserved at once (else the kernel stops at each key)
        uk = np.unique(scodes)
        tot = np.bincount(kc, minlength=len(ops))[uk] + _SLACK
        short = _needs_room(sk.st, uk, tot)
        for code, k in zip(uk[short].tolist(), tot[short].tolist(), strict=True):
            ops[code]._room(max(k, 128))
            sk.sync(code, ops[code])
    c, u, p, nout, j = 0, 0, 0, 0, -1
    while True:
        oslot, ooff, oval = sk.out
        status, c, u, p, nout, j = _walk(sk.st, sk.nlive, sk.eps, scodes, bounds, ucut, xs, loc, cnt, starts,
                                         bflat, brank, lcode, lphi, lstart, lnslot, lx, ln, res, oslot, ooff, oval,
                                         nout, c, u, p, j)
        if status == 0:
            break
        if status == 1:
            s = int(ucut[c]) + u
            code = int(scodes[s])
            # room for the key's rows of this chunk and the next ones: one stop per key, not per chunk
            left = int(seg_n[s:][scodes[s:] == code].sum())
            ops[code]._room(max(left + _SLACK, 128))
            sk.sync(code, ops[code])
            j = -1
        elif status == 2:
            s = int(ucut[c]) + u
            cap = 2 * (len(oslot) + int(sk.nlive[int(scodes[s])]) + 1)
            sk.out = tuple(np.concatenate([a[:nout], np.empty(cap - nout, a.dtype)]) for a in sk.out)
            j = -1
        else:  # the operator's own lookup of entry j, then on from j + 1
            code, nj = int(lcode[j]), int(ln[j])
            if not math.isnan(lx[j]):
                res[j] = rank_from_summary(ops[code].summary(int(lslot[j]), nj), float(lx[j]))
            else:
                res[j] = ops[code].lookup(np.array([lslot[j]], np.int64), nj)[0]
            j += 1
            u = p = 0
    g.count = cnt
    res[ln == 0] = math.nan  # keys without an element yet at that position: left out
    if nout:
        o = sk.out[1][:nout]
        g._emit(sk.out[0][:nout].copy(), o2[o], sk.out[2][:nout].copy(), seqs, g.engine._seg)
    return _answers(g, parts, bflat, res)


def _answers(g, parts, bflat, res) -> list:
    out = []
    vals = res.tolist()
    for i, a in enumerate(parts):
        v = vals[bflat[i]:bflat[i + 1]]
        if not g.by:
            x = v[0] if v else math.nan
            out.append((None if x != x else x, None))
            continue
        ans = PerKey()
        ans.extend([(k, y) for k, y in zip(a[5], v, strict=True) if y == y])
        out.append((ans, None))
    return out
