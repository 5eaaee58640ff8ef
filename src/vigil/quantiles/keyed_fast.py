"""The per-key calls of :mod:`.keyed` on a rows-window operator (:class:`.sliding.Sliding`), without
the operator's argument checks.

A per-key group pushes each key's rows and looks up each key's summary with one call per key: the
call's fixed cost (argument checks, the query table's search) is most of it when a key receives a
few rows between lookups. The group builds the arguments itself (each key's positions are 1, 2, ...
in order, its slots registered), so the checks are redundant there; these functions do what
``Sliding.push`` and ``Sliding.lookup`` do for that case, and defer to them for any other operator
or case. The outputs are the operator's own.
"""

from __future__ import annotations

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
