"""DT construction helper (paper 000 §4: the local query order of a structure): sort a
structure's queries by (lower key in dimension 0, qid) without a lexsort in the common cases."""

from __future__ import annotations

import numpy as np


def local_order(qids: np.ndarray, k0: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(perm, qperm): ``perm`` sorts the (distinct) ``qids`` by (``k0``, qid), i.e.
    ``np.lexsort((qids, k0))``, or None if they already are (a rebuild exports its queries in
    this order); ``qperm`` is the argsort of the permuted qids. Cheaper than lexsort when the
    qids (a fresh batch) or the whole input (a rebuild) are already sorted."""
    n = qids.shape[0]
    if n < 2:
        return None, np.arange(n)
    dq = qids[1:] > qids[:-1]
    up = k0[1:] >= k0[:-1]
    if up.all() and ((k0[1:] > k0[:-1]) | dq).all():
        return None, (np.arange(n) if dq.all() else np.argsort(qids))
    if dq.all():
        perm = np.argsort(k0, kind="stable")
        qperm = np.empty(n, dtype=np.int64)
        qperm[perm] = np.arange(n)  # sorted qids permuted by perm: the inverse sorts them back
        return perm, qperm
    p1 = np.argsort(qids)
    perm = p1[np.argsort(k0[p1], kind="stable")]
    return perm, np.argsort(qids[perm])
