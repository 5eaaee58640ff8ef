"""WJ-SSI's skyline cache (paper 003 §3.3.2, Fig. 6, Theorem 4): per S.B value b, the union
S̄_b of the left and right skylines L_b^i, R_b^i of the stored tuples of key b (points (S.C,
S.T)) around the stabbing points p_1 < ... < p_tau, kept across probes.

Layout (flat arrays, numba kernels, no Python per element): a hash table key -> entry
(open addressing); per entry (start, length, capacity, version) and the (t, w_max) it was
trimmed at; an arena of points (x, T, flags: 1 on a right skyline, 2 on a left one) sorted by x,
one point per distinct x (the group's newest: equal-x points stab the same rectangles). A point
at x lies on the right skyline of the last p_i <= x (slab [p_i, p_{i+1})) and on the left
skyline of the first p_i >= x (slab (p_{i-1}, p_i]); walking a slab away from its stabbing
point, a skyline keeps a point iff it is strictly newer than every point before it, so each
skyline's times increase away from its point.

Maintenance, as §3.3.2 describes it, all lazy:

* an insert s = (b, c, t) into S updates b's entry in place (:func:`absorb`, run over the
  stored side's new raw tuples at the next probe): in c's right slab the point is kept iff newer
  than the right-skyline points before it, and then removes the ones after it that are not
  newer (a consecutive run); the same mirrored in its left slab. O(log m̄ + m̄) per insert (the
  shift of the flat entry; the paper's split/merge trees make it O(log)). Keys not cached are
  not touched (O(1) hash miss).
* a change of the stabbing points (queries registering / terminating, reconstruction) bumps the
  cache's version: every entry is stale and is recomputed, all its skylines together, in one
  pass over S_b sorted by S.C (both sorted parts of the stored side merged) at the next probe
  of b (:func:`prepare`). A key not probed since costs nothing.
* trimming to w_max: an entry remembers the (t, w_max) it was trimmed at; a probe at (t', w')
  with t' >= t and w' <= w removes the points outside the window in one pass over the entry
  (trimmed skylines = skylines ∩ window: a dropped point is older than every kept one); an
  earlier t' or a larger w' (a query with a longer window registered) recomputes the entry.
* the stored side compacted (``_Side.trim``, its generation changes): the cache is cleared.

Space: entries only for keys with stored tuples in the window at their last computation;
arena <= 2 x live points + growth slack (compacted when half is waste): O(stored tuples), and
usually O(sum_b m̄_b). Times are assumed non-decreasing in arrival order (a stored T never
exceeds an arriving t; the paper's model and WJ-SSI's correctness condition).
"""

from __future__ import annotations

import numba
import numpy as np

from ._join_kernels_select import key_block

_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
START, LEN, CAP, VER = range(4)
TOP, NE, HUSED, WASTE, NEED, RECOMPUTED, TRIMMED, UPDATED = range(8)  # state vector (+ counters)


@numba.njit(cache=True, nogil=True, inline="always")
def _slot0(k, mask):
    z = np.uint64(k)
    z = (z ^ (z >> np.uint64(30))) * _C1
    z = (z ^ (z >> np.uint64(27))) * _C2
    z = z ^ (z >> np.uint64(31))
    return np.int64(z & np.uint64(mask))


@numba.njit(cache=True, nogil=True, inline="always")
def lookup(HK, HV, k):
    """The entry of key k, or -1."""
    mask = len(HK) - 1
    s = _slot0(k, mask)
    while True:
        v = HV[s]
        if v < 0:
            return -1
        if HK[s] == k:
            return v
        s = (s + 1) & mask


@numba.njit(cache=True, nogil=True)
def _put_key(HK, HV, k, e):
    mask = len(HK) - 1
    s = _slot0(k, mask)
    while HV[s] >= 0:
        s = (s + 1) & mask
    HK[s] = k
    HV[s] = e


@numba.njit(cache=True, nogil=True, inline="always")
def _dropped(T, t0, w0):
    """Outside the window of every probe at (t >= t0, w <= w0) (times monotone)."""
    return T <= t0 and not (t0 - T < w0)


@numba.njit(cache=True, nogil=True)
def _skylines(X1, T1, b0, b1, X2, T2, c0, c1, P, t0, w0, OX, OT, OF):
    """The union of all L_b^i, R_b^i of the merged blocks X1[b0:b1], X2[c0:c1] (each sorted by
    x), points dropped at (t0, w0) excluded, into OX/OT/OF (sorted by x); returns its length.
    One pass each way: O(m_b + tau)."""
    tau = len(P)
    m = (b1 - b0) + (c1 - c0)
    GX = np.empty(m)
    GT = np.empty(m)
    ng = 0
    i, j = b0, c0
    while i < b1 or j < c1:  # distinct x ascending, each with its newest time
        if j >= c1 or (i < b1 and X1[i] <= X2[j]):
            x = X1[i]
        else:
            x = X2[j]
        gm = -np.inf
        while i < b1 and X1[i] == x:
            if T1[i] > gm and not _dropped(T1[i], t0, w0):
                gm = T1[i]
            i += 1
        while j < c1 and X2[j] == x:
            if T2[j] > gm and not _dropped(T2[j], t0, w0):
                gm = T2[j]
            j += 1
        if gm > -np.inf:
            GX[ng] = x
            GT[ng] = gm
            ng += 1
    fl = np.zeros(ng, np.uint8)
    g = -1
    run = -np.inf
    for k in range(ng):  # right skylines: ascending from each p_i
        while g + 1 < tau and P[g + 1] <= GX[k]:
            g += 1
            run = -np.inf
        if g >= 0 and GT[k] > run:
            fl[k] |= 1
            run = GT[k]
    g = tau
    run = -np.inf
    for k in range(ng - 1, -1, -1):  # left skylines: descending towards each p_i
        while g - 1 >= 0 and P[g - 1] >= GX[k]:
            g -= 1
            run = -np.inf
        if g < tau and GT[k] > run:
            fl[k] |= 2
            run = GT[k]
    n = 0
    for k in range(ng):
        if fl[k]:
            OX[n] = GX[k]
            OT[n] = GT[k]
            OF[n] = fl[k]
            n += 1
    return n


@numba.njit(cache=True, nogil=True)
def prepare(HK, HV, EM, EC, AX, AT, AF, ST, P, ver, K1, X1, T1, K2, X2, T2, keys, t0, w0, i0):
    """Make the entries of ``keys[i0:]`` fresh (this version, trimmed at (t0, w0), t0 <= every
    probing time of the batch): trim a fresh entry in one pass over it, recompute a stale or
    missing one from its blocks (:func:`_skylines`). Returns the index where it stopped for room
    (ST[NEED] = points needed; len(keys) when done)."""
    for i in range(i0, len(keys)):
        k = keys[i]
        e = lookup(HK, HV, k)
        if e >= 0 and EM[e, VER] == ver and t0 >= EC[e, 0] and w0 <= EC[e, 1]:
            if t0 != EC[e, 0] or w0 != EC[e, 1]:  # lazy trim
                s = EM[e, START]
                n = 0
                for q in range(s, s + EM[e, LEN]):
                    if not _dropped(AT[q], t0, w0):
                        AX[s + n] = AX[q]
                        AT[s + n] = AT[q]
                        AF[s + n] = AF[q]
                        n += 1
                EM[e, LEN] = n
                EC[e, 0] = t0
                EC[e, 1] = w0
                ST[TRIMMED] += 1
            continue
        b0, b1 = key_block(K1, k)
        c0, c1 = key_block(K2, k)
        m = (b1 - b0) + (c1 - c0)
        if e < 0:
            if m == 0:
                continue  # no entry for a key without stored tuples
            if ST[NE] >= len(EM) or 2 * (ST[HUSED] + 1) > len(HK):
                ST[NEED] = 0
                return i
        OX = np.empty(m)
        OT = np.empty(m)
        OF = np.empty(m, np.uint8)
        n = _skylines(X1, T1, b0, b1, X2, T2, c0, c1, P, t0, w0, OX, OT, OF)
        if e >= 0 and EM[e, CAP] >= n:
            s = EM[e, START]
        else:
            cap = n + (n >> 1) + 2
            if ST[TOP] + cap > len(AX):
                ST[NEED] = cap
                return i
            if e < 0:
                e = ST[NE]
                ST[NE] += 1
                _put_key(HK, HV, k, e)
                ST[HUSED] += 1
            else:
                ST[WASTE] += EM[e, CAP]
            s = ST[TOP]
            ST[TOP] += cap
            EM[e, START] = s
            EM[e, CAP] = cap
        AX[s:s + n] = OX[:n]
        AT[s:s + n] = OT[:n]
        AF[s:s + n] = OF[:n]
        EM[e, LEN] = n
        EM[e, VER] = ver
        EC[e, 0] = t0
        EC[e, 1] = w0
        ST[RECOMPUTED] += 1
    return len(keys)


@numba.njit(cache=True, nogil=True, inline="always")
def _count_le(P, v, strict):
    """#(P <= v) (#(P < v) if strict), P sorted."""
    lo, hi = 0, len(P)
    while lo < hi:
        mid = (lo + hi) >> 1
        if P[mid] < v or (not strict and P[mid] == v):
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _insert_point(AX, AT, AF, s, ln, P, c, tn):
    """§3.3.2's insert of (c, tn) into the entry at AX[s:s+ln] (room for one more point): in
    its right slab (last p_i <= c) the point is kept iff newer than the right-skyline point
    before it (and than the one at c), and then unflags the right-skyline points after it that
    are not newer; mirrored in its left slab (first p_i >= c). Returns the new length."""
    tau = len(P)
    end = s + ln
    lo, hi = s, end  # first index with x >= c
    while lo < hi:
        mid = (lo + hi) >> 1
        if AX[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    pos = lo
    e = pos if pos < end and AX[pos] == c else -1
    gr = _count_le(P, c, False) - 1
    gl = _count_le(P, c, True)
    nf = 0
    if gr >= 0:
        run = -np.inf
        q = pos - 1
        while q >= s and AX[q] >= P[gr]:  # the right-skyline point just before c
            if AF[q] & 1:
                run = AT[q]
                break
            q -= 1
        if tn > run and (e < 0 or not (AF[e] & 1) or tn > AT[e]):
            nf |= 1
            right = P[gr + 1] if gr + 1 < tau else np.inf
            q = pos
            while q < end and AX[q] < right:  # the run it dominates
                if AF[q] & 1:
                    if AT[q] > tn:
                        break
                    AF[q] &= 2
                q += 1
    if gl < tau:
        run = -np.inf
        q = pos if e < 0 else pos + 1
        while q < end and AX[q] <= P[gl]:  # the left-skyline point just after c
            if AF[q] & 2:
                run = AT[q]
                break
            q += 1
        if tn > run and (e < 0 or not (AF[e] & 2) or tn > AT[e]):
            nf |= 2
            left = P[gl - 1] if gl > 0 else -np.inf
            q = pos if e >= 0 else pos - 1
            while q >= s and AX[q] > left:
                if AF[q] & 2:
                    if AT[q] > tn:
                        break
                    AF[q] &= 1
                q -= 1
    if nf == 0:
        return ln
    n2 = 0  # points after c still on a skyline, compacted to start at pos
    for q in range(pos, end):
        if AF[q]:
            AX[pos + n2] = AX[q]
            AT[pos + n2] = AT[q]
            AF[pos + n2] = AF[q]
            n2 += 1
    n1 = 0  # and before c, to start at s
    for q in range(s, pos):
        if AF[q]:
            AX[s + n1] = AX[q]
            AT[s + n1] = AT[q]
            AF[s + n1] = AF[q]
            n1 += 1
    d = s + n1 + 1
    if d > pos:  # shift the suffix right by one
        for q in range(n2 - 1, -1, -1):
            AX[d + q] = AX[pos + q]
            AT[d + q] = AT[pos + q]
            AF[d + q] = AF[pos + q]
    elif d < pos:
        for q in range(n2):
            AX[d + q] = AX[pos + q]
            AT[d + q] = AT[pos + q]
            AF[d + q] = AF[pos + q]
    AX[s + n1] = c
    AT[s + n1] = tn
    AF[s + n1] = nf
    return n1 + 1 + n2


@numba.njit(cache=True, nogil=True)
def absorb(HK, HV, EM, EC, AX, AT, AF, ST, P, ver, keys, xs, ts, i0):
    """Fold the stored side's new tuples keys/xs/ts[i0:] into their keys' fresh entries
    (:func:`_insert_point`); stale or missing entries are left to :func:`prepare`. Returns the
    index where it stopped for room (ST[NEED] set), or len(keys)."""
    for i in range(i0, len(keys)):
        x = xs[i]
        t = ts[i]
        if x != x or t != t:
            continue
        e = lookup(HK, HV, keys[i])
        if e < 0 or EM[e, VER] != ver or _dropped(t, EC[e, 0], EC[e, 1]):
            continue
        ln = EM[e, LEN]
        if ln + 1 > EM[e, CAP]:  # relocate with room
            cap = 2 * ln + 4
            if ST[TOP] + cap > len(AX):
                ST[NEED] = cap
                return i
            s0, s = EM[e, START], ST[TOP]
            AX[s:s + ln] = AX[s0:s0 + ln]
            AT[s:s + ln] = AT[s0:s0 + ln]
            AF[s:s + ln] = AF[s0:s0 + ln]
            ST[WASTE] += EM[e, CAP]
            ST[TOP] += cap
            EM[e, START] = s
            EM[e, CAP] = cap
        EM[e, LEN] = _insert_point(AX, AT, AF, EM[e, START], ln, P, x, t)
        ST[UPDATED] += 1
    return len(keys)


@numba.njit(cache=True, nogil=True)
def compact(EM, AX, AT, AF, NX, NT, NF):
    """Copy every entry densely into NX/NT/NF (capacities len + len/2 + 2); returns the top."""
    top = 0
    for e in range(len(EM)):
        s, ln = EM[e, START], EM[e, LEN]
        cap = ln + (ln >> 1) + 2
        if EM[e, CAP] == 0:
            continue
        NX[top:top + ln] = AX[s:s + ln]
        NT[top:top + ln] = AT[s:s + ln]
        NF[top:top + ln] = AF[s:s + ln]
        EM[e, START] = top
        EM[e, CAP] = cap
        top += cap
    return top


@numba.njit(cache=True, nogil=True)
def mbar(HK, HV, EM, EC, AT, ver, keys, ts, wmax, out):
    """out[i] = m̄_b (the unique skyline points of key b inside the window of time ts[i]) read
    from a fresh entry, -1 where b has no fresh entry (not computed yet, or stale)."""
    for i in range(len(keys)):
        t = ts[i]
        e = lookup(HK, HV, keys[i])
        if e < 0 or t != t or EM[e, VER] != ver or t < EC[e, 0] or wmax > EC[e, 1]:
            out[i] = -1.0
            continue
        c = 0
        s = EM[e, START]
        for q in range(s, s + EM[e, LEN]):
            if abs(t - AT[q]) < wmax:
                c += 1
        out[i] = c


class SkylineCache:
    """One cache per (WJ-SSI plan, arriving side): the skylines of the other side's stored
    tuples around this plan's stabbing points ``P``."""

    def __init__(self) -> None:
        self.P = np.empty(0)
        self.src: object = None  # the plan's array P was taken from (identity: set_points skipped)
        self.ver = 0
        self.gen = -1  # the stored side's generation it was filled from
        self.absorbed = 0  # raw stored tuples folded in
        self.clear()

    def clear(self) -> None:
        self.HK = np.zeros(64, np.int64)
        self.HV = np.full(64, -1, np.int64)
        self.EM = np.zeros((16, 4), np.int64)
        self.EC = np.zeros((16, 2))
        self.AX, self.AT, self.AF = np.empty(256), np.empty(256), np.empty(256, np.uint8)
        old = getattr(self, "ST", None)
        self.ST = np.zeros(8, np.int64)
        if old is not None:
            self.ST[RECOMPUTED:] = old[RECOMPUTED:]  # counters survive

    def arrays(self):
        return self.HK, self.HV, self.EM, self.EC, self.AX, self.AT, self.AF, self.ST

    def set_points(self, P: np.ndarray) -> None:
        """The plan's stabbing points (sorted); a change makes every entry stale."""
        if len(P) != len(self.P) or not np.array_equal(P, self.P):
            self.P = np.ascontiguousarray(P, np.float64).copy()
            self.ver += 1

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays())

    def room(self) -> None:
        """Grow what the last kernel call stopped for (entries, hash, or arena points)."""
        st = self.ST
        ne, need = int(st[NE]), int(st[NEED])
        if ne >= len(self.EM):
            self.EM = np.concatenate([self.EM, np.zeros_like(self.EM)])
            self.EC = np.concatenate([self.EC, np.zeros_like(self.EC)])
        if 2 * (st[HUSED] + 1) > len(self.HK):
            HK, HV = np.zeros(2 * len(self.HK), np.int64), np.full(2 * len(self.HK), -1, np.int64)
            old = self.HV >= 0
            for k, v in zip(self.HK[old].tolist(), self.HV[old].tolist(), strict=True):
                _put_key(HK, HV, k, v)
            self.HK, self.HV = HK, HV
        top = int(st[TOP])
        if top + need > len(self.AX):
            ln = self.EM[:ne, LEN]
            live = int((ln + (ln >> 1) + 2).sum())  # what compact() lays out
            size = max(2 * (live + need), 256)
            NX, NT, NF = np.empty(size), np.empty(size), np.empty(size, np.uint8)
            em = self.EM[:ne]
            st[TOP] = compact(em, self.AX, self.AT, self.AF, NX, NT, NF)
            st[WASTE] = 0
            self.AX, self.AT, self.AF = NX, NT, NF
        st[NEED] = 0

    def sync(self, side) -> None:
        """Fold the stored side's tuples added since the last call (``side``: its ``_Side``)."""
        n = len(side.seqs)
        if side.gen != self.gen or n < self.absorbed:
            self.clear()
            self.gen = side.gen
            self.absorbed = n
            return
        if n == self.absorbed:
            return
        if self.ST[NE] == 0:
            self.absorbed = n
            return
        a = self.absorbed
        keys, xs, ts = side.keys.view[a:n], side.x.view[a:n], side.t.view[a:n]
        i = 0
        while True:
            i = absorb(*self.arrays(), self.P, self.ver, keys, xs, ts, i)
            if i == len(keys):
                break
            self.room()
        self.absorbed = n

    def prepare(self, parts, keys: np.ndarray, t0: float, w0: float) -> None:
        """Make the entries of the batch's keys fresh for probes at times >= t0, window w0."""
        e = np.empty(0)
        ek = np.empty(0, np.int64)
        p1 = (parts[0].k, parts[0].kx, parts[0].kt) if parts else (ek, e, e)
        p2 = (parts[1].k, parts[1].kx, parts[1].kt) if len(parts) > 1 else (ek, e, e)
        i = 0
        while True:
            i = prepare(*self.arrays(), self.P, self.ver, *p1, *p2, keys, t0, w0, i)
            if i == len(keys):
                return
            self.room()

    def mbar(self, keys: np.ndarray, ts: np.ndarray, wmax: float) -> np.ndarray:
        out = np.empty(len(keys))
        mbar(self.HK, self.HV, self.EM, self.EC, self.AT, self.ver, keys, ts, wmax, out)
        return out
