"""Every key's rows-window summary of a per-key quantile group (:mod:`.keyed`) pushed, and looked
up, in one compiled call.

A per-key group with ``rows`` keeps one :class:`.sliding.Sliding` operator per key. Calling each
key's ``push`` and ``lookup`` from Python costs a few µs per key and call (argument passing,
capacity checks, the output's sort), most of the time when a key receives a few rows between two
operations. :class:`SlidingKeys` holds a reference to every key's state arrays (the operator's
own arrays, shared, not copied) in one typed list, so one call pushes a batch's rows into every
key (:func:`_push_many`: the operator's own push kernel on each key's slice) and one call answers
a lookup over every key (:func:`_lookup_many`: the operator's own lookup kernel). The operators
stay the owners of their state: their Python methods (registration, lookups beyond the last
position, summaries, snapshots) still apply on the operator :meth:`SlidingKeys.fresh` returns, and
:meth:`SlidingKeys.sync` re-reads a key's arrays after any of them may have replaced one.

Capacity: before a key's push, :func:`._sliding_room.short` tells whether the operator's arrays
could overflow with the next k elements (the conditions under which ``Sliding._room(k)`` grows or
compacts them, at k + 16: a conservative test); then the push makes room in compiled code
(:func:`._sliding_room.room`, what ``Sliding._room`` runs), puts the key's new arrays in the
typed list and marks the key stale: its operator takes them (:meth:`SlidingKeys.fresh`) before
it is next used from Python. The output buffers are shared by all keys and grow as the
operator's own do (the push kernel stops before they could overflow).

Outputs are the operator's updates with its notify slots mapped to the group's slots
(``slot_qid``), the offsets into the batch's key-sorted order, unsorted (the group sorts every
key's updates together).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.typed import List

from . import _sliding_kernels as K
from . import _sliding_room as R
from .rank import rank_from_summary
from .sliding import Sliding

try:  # the push loop with the mature-query sweep (its ``mat`` array and M_FIRST)
    from . import _sliding_notify as SN
except ImportError:  # the push loop of the summary's kernels
    SN = None
_M_FIRST = getattr(K, "M_FIRST", -1)
_NOMAT = np.zeros(1, np.int64)

if SN is not None:
    @numba.njit(cache=True, nogil=True, inline="always")
    def _kpush(x, seqs, p, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat, nlive, oslot, ooff,
               oval, hv, hq):
        meta[K.M_XACT] = 0  # no ring here: the mature queries' counts are searched (SN.push)
        return SN.push_x(x, seqs, p, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat, nlive,
                         oslot, ooff, oval, hv, hq)
else:
    @numba.njit(cache=True, nogil=True, inline="always")
    def _kpush(x, seqs, p, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat, nlive, oslot, ooff,
               oval, hv, hq):
        return K.push(x, seqs, p, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, nlive, oslot, ooff,
                      oval)

# a key's state: meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, slot_qid
_NAMES = ("meta", "ob", "obs", "blk", "sv", "si", "mv", "mi", "mv2", "mi2", "qf", "qi", "heap", "mat", "slot_qid")
_SLACK = 16  # the capacity test asks for room for k + _SLACK elements (module doc)


_INT = frozenset(("meta", "obs", "blk", "si", "mi", "mi2", "qi", "heap", "mat", "slot_qid"))


def _arrays(op: Sliding) -> tuple:
    a = (op.meta, op.ob, op.obs, op.blk, op.sv, op.si, op.mv, op.mi, op.mv2, op.mi2, op.qf, op.qi, op.heap,
         getattr(op, "mat", _NOMAT), op.slot_qid)
    for name, x in zip(_NAMES, a, strict=True):
        want = np.int64 if name in _INT else np.float64
        if x.dtype != want or not x.flags.c_contiguous:  # a restored snapshot's arrays: as the kernels take them
            setattr(op, name, np.ascontiguousarray(x, want))
            return _arrays(op)
    return a


# the typed list is built and changed by compiled functions (cached: from Python, each typed-list
# operation would compile at its first use in every process)
@numba.njit(cache=True, nogil=True)
def _new_list(meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq):
    st = List()
    st.append((meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq))
    return st


@numba.njit(cache=True, nogil=True)
def _append(st, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq):
    st.append((meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq))


@numba.njit(cache=True, nogil=True)
def _extend(st, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq):
    """Append row j of every block, for each j (the keys' arrays made by :func:`spawn`)."""
    for j in range(meta.shape[0]):
        st.append((meta[j], ob[j], obs[j], blk[j], sv[j], si[j], mv[j], mi[j], mv2[j], mi2[j], qf[j], qi[j], heap[j],
                   mat[j], sq[j]))


@numba.njit(cache=True, nogil=True)
def _set(st, i, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq):
    st[i] = (meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq)


@numba.njit(cache=True, nogil=True)
def _push_many(st, nlive, eps, codes, bounds, xs, seqs, u0, p0, oslot, ooff, oval, nout, grown):
    """Push xs[bounds[u]:bounds[u+1]] (positions seqs[...]) into key codes[u]'s operator, for u
    from u0 (resuming at p0 within key u0). A key whose arrays could overflow gets room first
    (:func:`._sliding_room.room`, as ``Sliding._room(max(k + _SLACK, 128))`` for its k elements):
    its new arrays replace its entry of ``st`` and grown[code] is set to 1 (its operator re-reads
    them: :meth:`SlidingKeys.fresh`). Returns (status, u, p, nout): status 0 done; 2 the output
    buffers are full at element p of key u."""
    hv = np.empty(1)  # the push loop's ring of elements: unused here (no kept counts, M_XACT 0)
    hq = np.zeros(1, np.int64)
    for u in range(u0, len(codes)):
        c = codes[u]
        b0 = bounds[u]
        b1 = bounds[u + 1]
        p = p0 if u == u0 else 0
        meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq = st[c]
        if p == 0 and R.short(meta, ob, blk, sv, mv, b1 - b0 + _SLACK):
            ob, obs, blk, sv, si, mv, mi, mv2, mi2 = R.room(meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2,
                                                            max(b1 - b0 + _SLACK, 128))
            st[c] = (meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq)
            grown[c] = 1
        if _M_FIRST >= 0 and meta[K.M_NPUSHED] == 0:
            meta[_M_FIRST] = seqs[b0]  # as the operator's push records its first position
        k0 = nout
        meta[K.M_NOUT] = nout
        q = _kpush(xs[b0:b1], seqs[b0:b1], p, meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, eps, qf, qi, heap, mat,
                   nlive[c], oslot, ooff, oval, hv, hq)
        nout = meta[K.M_NOUT]
        for k in range(k0, nout):
            oslot[k] = sq[oslot[k]]
            ooff[k] += b0
        meta[K.M_NOUT] = nout - k0
        if q < b1 - b0:
            return 2, u, q, nout
    return 0, len(codes), 0, nout


@numba.njit(cache=True, nogil=True)
def _get(st, i):
    return st[i]


@numba.njit(cache=True, nogil=True)
def _lookup_many(st, codes, phi, start, nslot, n, out):
    """out[j]: the lookup of (phi[j], start[j], notify slot nslot[j] or -1) in key codes[j]'s
    operator after its position n[j], where that is its last position pushed (Sliding.lookup's
    answer); returns the first j it cannot answer so (-1 if none)."""
    for j in range(len(codes)):
        meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq = st[codes[j]]
        if nslot[j] >= 0 and n[j] <= meta[K.M_N]:
            out[j] = qf[K.F_LAST, nslot[j]]
        elif n[j] == meta[K.M_N] and n[j] >= 0:
            K.lookup(meta, ob, obs, blk, sv, si, mv, mi, mv2, phi[j:j + 1], start[j:j + 1], n[j], out[j:j + 1])
        else:
            return j
    return -1


@numba.njit(cache=True, nogil=True)
def _rank_many(st, codes, start, n, x, out):
    """out[j]: ``rank_from_summary(op.summary(slot, n[j]), x[j])`` for key codes[j]'s operator (a
    rank query registered at start[j]) after its last position n[j], without building the merged
    summary: with i the merged summary's last tuple <= x, r-_i is the sum over its parts (the
    window's closed blocks, the open block, the front) of the r- of each part's last tuple <= x,
    and r+_{i+1} - 1 the sum of each part's first tuple > x's r+ minus one (its size if none), as
    :func:`vigil.quantiles.merge_summaries` computes them. Returns the first j whose n[j] is not
    its key's last position (-1 if none)."""
    for j in range(len(codes)):
        meta, ob, obs, blk, sv, si, mv, mi, mv2, mi2, qf, qi, heap, mat, sq = st[codes[j]]
        if n[j] != meta[K.M_N]:
            return j
        v = x[j]
        lq = max(start[j] + 1, n[j] - meta[K.M_W] + 1)
        je, open_in, front_in = K.window(meta, blk, lq)[:3]
        lo = 0
        hi = 0
        tot = 0
        m = 0
        above = False
        for b in range(je, meta[K.M_BT]):
            off = blk[K.B_OFF, b]
            ln = blk[K.B_LEN, b]
            if ln == 0:
                continue
            k = 0
            while k < ln and sv[off + k] <= v:  # samples <= x (sorted)
                k += 1
            size = si[0, off + ln - 1]
            tot += size
            m += ln
            if k > 0:
                lo += si[0, off + k - 1]
            if k < ln:
                hi += si[0, off + k] - 1
                above = True
            else:
                hi += size
        for row in range(2):
            if not (open_in if row == 0 else front_in):
                continue
            cnt = meta[K.M_OC] if row == 0 else meta[K.M_PC]
            k = 0
            while k < cnt and ob[row, k] <= v:
                k += 1
            tot += cnt
            m += cnt
            lo += k
            hi += k
            if k < cnt:
                above = True
        if m == 0 or tot <= 0:
            out[j] = np.nan
            continue
        if not above:
            hi = tot
        hi = max(hi, lo)
        out[j] = (float(lo) + float(hi)) / 2.0 / float(tot)
    return -1


def template(impl, eps: float, rows: int, queries: list[tuple[float, float, bool]]) -> Sliding:
    """A new key's operator before its first element, built once per set of queries: the group's
    live queries (phi, eps, notify) registered at position 0 as slots 0, 1, ..., in order, and room
    reserved for the first elements (what the first push of a key would reserve), without the
    ring of elements that the per-key push does not keep (M_XACT 0, as that push sets it). :func:`spawn`
    copies it for each new key."""
    op = impl(eps, rows)
    for i, (phi, e, notify) in enumerate(queries):
        op.register(i, phi, e, 0, notify=notify)
    if type(op) is Sliding:
        op.meta[K.M_XACT] = 0  # the per-key push keeps no ring of elements (its room is not reserved)
    op._room(32)
    return op


def spawn(tpl: Sliding, slots: list[list[int]]) -> tuple[list[Sliding], dict[str, np.ndarray]]:
    """New keys' operators, copies of :func:`template`'s operator: the j-th one's i-th query is the
    group's slot ``slots[j][i]``. The state registering each query in a new operator would give
    (its arrays copied, its query table renamed), without the registrations' cost; the copies'
    arrays are rows of one block per array (one copy for all the keys; an operator's array is
    replaced when it grows, as any other). Returns the operators and the blocks (array name ->
    block), for :meth:`SlidingKeys.add_many`."""
    n = len(slots)
    blocks: dict[str, np.ndarray] = {}
    plain: dict[str, Any] = {}  # shared by the copies (immutable)
    mutable: dict[str, Any] = {}  # copied for each
    for k, v in tpl.__dict__.items():
        if isinstance(v, np.ndarray):
            b = blocks[k] = np.empty((n, *v.shape), v.dtype)
            b[:] = v
        elif isinstance(v, (dict, list, set)):
            mutable[k] = v
        else:
            plain[k] = v
    plain["out"] = (np.empty(256, np.int64), np.empty(256, np.int64), np.empty(256))  # push's buffers (only read back)
    plain["_table"] = None
    sq = tpl.slot_qid
    live = np.flatnonzero(sq >= 0)
    if len(live):  # every copy's query table renamed at once
        blocks["slot_qid"][:, live] = np.asarray(slots, np.int64).reshape(n, -1)[:, sq[live]]
    rows = {k: list(b) for k, b in blocks.items()}  # the copies' arrays: row j of each block
    tq = list(tpl.q.items())
    ops = []
    for j in range(n):
        op = Sliding.__new__(Sliding)
        d = op.__dict__
        d.update(plain)
        for k, v in mutable.items():
            d[k] = type(v)(v)
        for k, r in rows.items():
            d[k] = r[j]
        s_ = slots[j]
        op.q = {s_[i]: e for i, e in tq}
        ops.append(op)
    return ops, blocks


class SlidingKeys:
    """The state arrays of every key's operator (code -> :class:`Sliding`), see the module doc."""

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)
        self.st = None  # typed list of every key's arrays (_NAMES), made at the first key
        self.n = 0
        self.nlive = np.zeros(16, np.int64)
        self.out = (np.empty(256, np.int64), np.empty(256, np.int64), np.empty(256))
        self.stale: set[int] = set()  # codes whose operators' arrays grew in a push (fresh)

    def __len__(self) -> int:
        return self.n

    def add(self, op: Sliding) -> None:
        """The next code's operator."""
        code = self.n
        if code >= len(self.nlive):
            self.nlive = np.concatenate([self.nlive, np.zeros(len(self.nlive), np.int64)])
        if self.st is None:
            self.st = _new_list(*_arrays(op))
        else:
            _append(self.st, *_arrays(op))
        self.n += 1
        self.nlive[code] = op.nlive
        op._budget = 0  # its own push (if ever called) reserves room again: this driver does not keep its budget

    def add_many(self, ops: list[Sliding], blocks: dict[str, np.ndarray]) -> None:
        """The next codes' operators, made by :func:`spawn` (``blocks``: their arrays, one row
        each): one compiled call for all."""
        b = [blocks.get(name) for name in _NAMES]
        if (self.st is None or any(x is None or x.dtype != (np.int64 if name in _INT else np.float64)
                                   for name, x in zip(_NAMES, b, strict=True))):
            for op in ops:
                self.add(op)
            return
        n0, k = self.n, len(ops)
        if n0 + k > len(self.nlive):
            self.nlive = np.concatenate([self.nlive, np.zeros(max(n0 + k, 2 * len(self.nlive)) - len(self.nlive),
                                                              np.int64)])
        _extend(self.st, *b)
        self.n += k
        self.nlive[n0:n0 + k] = [op.nlive for op in ops]
        for op in ops:
            op._budget = 0

    def fresh(self, ops: list, code: int) -> Sliding:
        """Key ``code``'s operator with its current arrays: those a push grew (in compiled code,
        :func:`_push_many`) are in the typed list only until the operator is used from Python
        (call this first: its registration, termination, lookups, summaries, snapshot)."""
        op = ops[code]
        if code in self.stale:
            self.stale.discard(code)
            (_m, op.ob, op.obs, op.blk, op.sv, op.si, op.mv, op.mi, op.mv2, op.mi2) = _get(self.st, code)[:10]
        return op

    def sync(self, code: int, op: Sliding) -> None:
        """Re-read key ``code``'s arrays and live notify count (after a registration, a
        termination, a capacity change, each on the operator :meth:`fresh` returned)."""
        if code in self.stale:
            raise RuntimeError(f"key {code}'s operator was changed before it re-read its grown arrays (fresh)")
        _set(self.st, code, *_arrays(op))
        self.nlive[code] = op.nlive
        op._budget = 0

    def push(self, ops: list, codes: np.ndarray, bounds: np.ndarray, xs: np.ndarray,
             seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Key codes[u]'s elements xs[bounds[u]:bounds[u+1]] at its positions seqs[...] (each key's
        positions increasing after its last one). Returns the updates (group slots, offsets into
        xs, values), unsorted."""
        u, p, nout = 0, 0, 0
        grown = np.zeros(self.n, np.int64)
        while True:
            oslot, ooff, oval = self.out
            status, u, p, nout = _push_many(self.st, self.nlive, self.eps, codes, bounds, xs, seqs, u, p,
                                            oslot, ooff, oval, nout, grown)
            if status == 0:
                break
            cap = 2 * (len(oslot) + int(self.nlive[int(codes[u])]) + 1)
            self.out = tuple(np.concatenate([a[:nout], np.empty(cap - nout, a.dtype)]) for a in self.out)
        self.stale.update(np.flatnonzero(grown).tolist())  # their operators re-read them when used (fresh)
        if not nout:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
        return self.out[0][:nout].copy(), self.out[1][:nout].copy(), self.out[2][:nout].copy()

    def rank(self, ops: list, codes: np.ndarray, start: np.ndarray, slots: np.ndarray, n: np.ndarray,
             x: np.ndarray) -> np.ndarray:
        """Each (code, slot) rank query's answer (of x) after its key's position n (NaN: empty)."""
        out = np.empty(len(codes))
        j = 0
        while j < len(codes):
            k = _rank_many(self.st, codes[j:], start[j:], n[j:], x[j:], out[j:])
            if k < 0:
                break
            j += k
            out[j] = rank_from_summary(self.fresh(ops, int(codes[j])).summary(int(slots[j]), int(n[j])), float(x[j]))
            j += 1
        return out

    def lookup(self, ops: list, codes: np.ndarray, phi: np.ndarray, start: np.ndarray, nslot: np.ndarray,
               slots: np.ndarray, n: np.ndarray) -> np.ndarray:
        """Each (code, slot)'s answer after its key's position n (NaN: empty window); what the
        kernel does not answer goes through the operator's lookup."""
        out = np.empty(len(codes))
        j = 0
        while j < len(codes):
            k = _lookup_many(self.st, codes[j:], phi[j:], start[j:], nslot[j:], n[j:], out[j:])
            if k < 0:
                break
            j += k
            out[j] = self.fresh(ops, int(codes[j])).lookup(np.array([slots[j]], np.int64), int(n[j]))[0]
            j += 1
        return out
