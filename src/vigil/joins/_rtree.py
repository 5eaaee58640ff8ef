"""Static packed R-trees (STR bulk loading: Leutenegger et al. 1997) over query boxes, as flat
arrays, for the point-stabbing probes of paper 003 §3.2-3.3: SJ-SSI's per-group 2D index, the
one index over all query rectangles of SJ-JoinFirst, and the 3D index D of WJ-JoinFirst/WJ-SSI.

A box is [xlo, xhi] x [ylo, yhi] x [-inf, zhi): x = the stored side's range, y = the arriving
side's range, z = the window (select joins: zhi = inf, probed at z = 0). A forest (one tree per
stabbing group) lives in the same arrays; ``roots[g]`` is the root node of tree g (-1: empty).

Layout: NB[node] = (xlo, xhi, ylo, yhi, zhi) bounding box; NC[node] = (first child, count,
leaf?): a leaf's children are items, an inner node's are nodes; IB[item] = the box, IQ[item] =
the query's local index. Fanout 16. Build O(n log n) (numpy sorts), space O(n); a stabbing
probe visits the nodes whose boxes contain the point (O(sqrt n + k) expected for rectangles in
the plane, as the paper's cost model assumes).
"""

from __future__ import annotations

import math

import numba
import numpy as np

FAN = 16
_ZERO = np.zeros(1, np.int64)


def _center(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(lo + hi) / 2 with infinite ends clipped to +-1e300 (np.clip's values, without its wrapper)."""
    return (np.minimum(np.maximum(lo, -1e300), 1e300) + np.minimum(np.maximum(hi, -1e300), 1e300)) / 2


def build_forest(boxes: np.ndarray, groups: list[np.ndarray], by_y: bool = False):
    """boxes float64[n, 5] indexed by local query index; groups: arrays of local indexes (one
    tree each). Returns (NB, NC, IB, IQ, roots). ``by_y``: pack by the y centre only (the
    stabbing groups of SJ-SSI: every box of a group holds the stabbing point in x, so x does not
    separate them and tiles sorted by y prune best)."""
    NB: list[np.ndarray] = []
    NC: list[np.ndarray] = []
    IB: list[np.ndarray] = []
    IQ: list[np.ndarray] = []
    roots = np.full(len(groups), -1, np.int64)
    n_nodes = 0
    n_items = 0
    for g, mem in enumerate(groups):
        mem = np.asarray(mem, np.int64)
        n = len(mem)
        if n == 0:
            continue
        b = boxes[mem]
        cx, cy = _center(b[:, 0], b[:, 1]), _center(b[:, 2], b[:, 3])
        if by_y or n <= FAN:  # one slab (a single leaf, or packing by y): order by (y, x) centre
            order = np.lexsort((cx, cy))
        else:  # STR: slabs by x centre, each slab sorted by y centre
            slabs = max(1, math.ceil(math.sqrt(math.ceil(n / FAN))))
            o = np.lexsort((cy, cx))
            slab = np.arange(n) // (slabs * FAN)
            order = o[np.lexsort((cy[o], slab))]
        items_b = b[order]
        IB.append(items_b)
        IQ.append(mem[order])
        if n <= FAN:  # the tree is one leaf
            NB.append(_reduce(items_b, _ZERO))
            NC.append(np.array([[n_items, n, 1]], np.int64))
            roots[g] = n_nodes
            n_nodes += 1
            n_items += n
            continue
        # leaf level: chunks of FAN items
        starts = np.arange(0, n, FAN)
        level_b = _reduce(items_b, starts)
        level_c = np.stack([starts + n_items, np.minimum(FAN, n - starts), np.ones(len(starts), np.int64)], 1)
        n_items += n
        while True:
            base = n_nodes
            NB.append(level_b)
            NC.append(level_c)
            n_nodes += len(level_b)
            if len(level_b) == 1:
                roots[g] = base
                break
            m = len(level_b)
            starts = np.arange(0, m, FAN)
            nb = _reduce(level_b, starts)
            level_c = np.stack([starts + base, np.minimum(FAN, m - starts), np.zeros(len(starts), np.int64)], 1)
            level_b = nb
    def cat(parts, shape, dt):
        return np.concatenate(parts).astype(dt) if parts else np.empty(shape, dt)

    return (np.ascontiguousarray(cat(NB, (0, 5), np.float64)), np.ascontiguousarray(cat(NC, (0, 3), np.int64)),
            np.ascontiguousarray(cat(IB, (0, 5), np.float64)), cat(IQ, (0,), np.int64), roots)


def _reduce(b: np.ndarray, starts: np.ndarray) -> np.ndarray:
    out = np.empty((len(starts), 5))
    out[:, 0] = np.minimum.reduceat(b[:, 0], starts)
    out[:, 1] = np.maximum.reduceat(b[:, 1], starts)
    out[:, 2] = np.minimum.reduceat(b[:, 2], starts)
    out[:, 3] = np.maximum.reduceat(b[:, 3], starts)
    out[:, 4] = np.maximum.reduceat(b[:, 4], starts)
    return out


@numba.njit(cache=True, nogil=True)
def stab(NB, NC, IB, IQ, root, x, y, z, buf, stack):
    """Local indexes of the boxes containing (x, y, z) written to buf; returns their count."""
    if root < 0:
        return 0
    n = 0
    top = 1
    stack[0] = root
    while top > 0:
        top -= 1
        v = stack[top]
        if not (NB[v, 0] <= x and x <= NB[v, 1] and NB[v, 2] <= y and y <= NB[v, 3] and z < NB[v, 4]):
            continue
        c0 = NC[v, 0]
        cc = NC[v, 1]
        if NC[v, 2] == 1:
            for it in range(c0, c0 + cc):
                if IB[it, 0] <= x and x <= IB[it, 1] and IB[it, 2] <= y and y <= IB[it, 3] and z < IB[it, 4]:
                    buf[n] = IQ[it]
                    n += 1
        else:
            for ch in range(c0, c0 + cc):
                stack[top] = ch
                top += 1
    return n
