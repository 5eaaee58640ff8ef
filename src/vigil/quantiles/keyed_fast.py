"""The per-key calls of :mod:`.keyed` on a rows-window operator (:class:`.sliding.Sliding`), without
the operator's argument checks.

A per-key group pushes each key's rows and looks up each key's summary with one call per key: the
call's fixed cost (argument checks, the query table's search) is most of it when a key receives a
few rows between lookups. The group builds the arguments itself (each key's positions are 1, 2, ...
in order, its slots registered), so the checks are redundant there; these functions do what
``Sliding.push`` and ``Sliding.lookup`` do for that case, and defer to them for any other operator
or case. The outputs are the operator's own. :func:`by_key` cuts a batch's rows into the keys'
slices in one compiled pass.
"""

from __future__ import annotations

import numba
import numpy as np

from . import _sliding_kernels as K
from .sliding import Sliding


def push(op, x: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``op.push(x, seqs)`` for contiguous float64 ``x`` and increasing int64 ``seqs`` after the
    operator's last position (the group's own numbering)."""
    if type(op) is not Sliding or not len(x):
        return op.push(x, seqs)
    return op.push_checked(x, seqs)


def lookup(op, qid: int, n: int) -> float:
    """``op.lookup([qid], n)[0]``: a lookup-only query at the operator's last position goes
    straight to the kernel."""
    if type(op) is Sliding:
        e = op.q[qid]
        if not e[3] and n == op.last_seq and n >= 0:
            res = np.empty(1)
            K.lookup(op.meta, op.ob, op.obs, op.blk, op.sv, op.si, op.mv, op.mi, op.mv2, np.array([e[0]]),
                     np.array([e[2]], np.int64), n, res)
            return float(res[0])
    return float(op.lookup(np.array([qid], np.int64), n)[0])


@numba.njit(cache=True, nogil=True)
def by_key(kc, x, count):
    """The rows of key codes kc (each in [0, len(count))) as contiguous slices per key, in code
    order and in their order within a key (what a stable argsort of kc gives), by one counting
    sort: (order: row of each slot, bounds: slice u is [bounds[u], bounds[u + 1]), ucode: the
    codes present, ascending, sizes, xs = x[order], local: each row's position in its key,
    count[code] + 1, + 2, ...)."""
    n = len(kc)
    nc = len(count)
    nxt = np.zeros(nc, np.int64)
    for i in range(n):
        nxt[kc[i]] += 1
    nu = 0
    for c in range(nc):
        nu += nxt[c] > 0
    ucode = np.empty(nu, np.int64)
    bounds = np.empty(nu + 1, np.int64)
    sizes = np.empty(nu, np.int64)
    run = np.empty(nc, np.int64)
    pos = 0
    u = 0
    for c in range(nc):
        k = nxt[c]
        if k > 0:
            ucode[u] = c
            bounds[u] = pos
            sizes[u] = k
            u += 1
        nxt[c] = pos  # the next slot of code c
        run[c] = count[c]
        pos += k
    bounds[nu] = n
    order = np.empty(n, np.int64)
    xs = np.empty(n)
    local = np.empty(n, np.int64)
    for i in range(n):
        c = kc[i]
        p = nxt[c]
        nxt[c] = p + 1
        run[c] += 1
        order[p] = i
        xs[p] = x[i]
        local[p] = run[c]
    return order, bounds, ucode, sizes, xs, local
